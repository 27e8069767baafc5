from collections.abc import Iterator

import libcst as cst

from tapelint.findings.diagnostics import Severity
from tapelint.findings.rule import Finding, Rule, source_of
from tapelint.semantic import FileModel
from tapelint.semantic.calls.steps import StepIndex

from ._retracing import counter_arguments, creations_per_step


class TfFunctionRetracing(Rule):
    """## What it does
    Checks for a `tf.function` that is traced again at every step. That is one created
    inside a loop or inside a function that is called in a loop, and then called right
    there; or one called in a loop with a Python number, string or list that changes every
    iteration (the loop variable of `for epoch in range(...)`, the index of `enumerate`, a
    counter incremented in the loop, or arithmetic and f-strings of these).

    Not reported: a `tf.function` defined once and called with tensors or with
    `tf.constant(epoch)`; one with an `input_signature`; one created per model (or per trial)
    that compiles something that changes with the iteration and is then run many times;
    one created or called while an enclosing `tf.function` is traced. Nor where each trace
    is needed anyway: a loop over cases written out in the code (`for dtype, dim in
    itertools.product(dtypes, [1, 2, 3]):` in a test, `for lr in [0.1, 0.01]:`), a call
    that gives the new function such a case's value, a Python value that the function uses
    to set a shape (`draws[-num_draws // 2:]`, `range(n)`, `shape=[n, 3]`; as a tensor the
    shape would be unknown while tracing), and a function compiled once per call of a
    function that runs it over a whole dataset, unless it compiles a training step (a step
    rebuilt per epoch is reported). A loop counted by `range(...)` is never a sweep of
    cases: epochs are counted that way. `reduce_retracing=True` does *not* silence it: it
    relaxes tensor shapes, and Python values still trace once each (measured on
    TensorFlow 2.21).

    ## Why is this bad?
    A `tf.function` keeps its traces on the function object, keyed by the Python values of
    its arguments. A new function object has no traces, and a new Python value is a new key:
    either way the Python code runs again and a new graph is built, which usually costs more
    than the step it was meant to speed up, and the traced graphs pile up in memory. See
    "Controlling retracing" in TensorFlow's guide
    (https://www.tensorflow.org/guide/function#controlling_retracing).

    ## Example
    ```python
    import tensorflow as tf
    from tensorflow import keras

    model = keras.Sequential([keras.layers.Dense(1)])
    loss_fn = keras.losses.MeanSquaredError()
    optimizer = keras.optimizers.SGD()


    @tf.function
    def train_step(x, y, epoch):
        warmup = tf.minimum(1.0, (epoch + 1) / 5)
        with tf.GradientTape() as tape:
            loss = warmup * loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))


    def fit(dataset, epochs):
        for epoch in range(epochs):
            for x, y in dataset:
                train_step(x, y, epoch)  # traced again for every epoch
    ```

    and a function created in the loop:
    ```python
    import tensorflow as tf
    from tensorflow import keras

    model = keras.Sequential([keras.layers.Dense(1)])
    loss_fn = keras.losses.MeanSquaredError()
    optimizer = keras.optimizers.SGD()


    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))


    def fit(dataset, epochs):
        for epoch in range(epochs):
            step = tf.function(train_step)  # a new function object, traced again
            for x, y in dataset:
                step(x, y)
    ```

    Use instead: pass the value in as a tensor,
    ```python
    import tensorflow as tf
    from tensorflow import keras

    model = keras.Sequential([keras.layers.Dense(1)])
    loss_fn = keras.losses.MeanSquaredError()
    optimizer = keras.optimizers.SGD()


    @tf.function
    def train_step(x, y, epoch):
        warmup = tf.minimum(1.0, (epoch + 1) / 5)
        with tf.GradientTape() as tape:
            loss = warmup * loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(
            [(g, v) for g, v in zip(grads, model.trainable_variables) if g is not None]
        )


    def fit(dataset, epochs):
        for epoch in range(epochs):
            for x, y in dataset:
                train_step(x, y, tf.constant(epoch, tf.float32))
    ```

    and create the function once, before the loop:
    ```python
    import tensorflow as tf
    from tensorflow import keras

    model = keras.Sequential([keras.layers.Dense(1)])
    loss_fn = keras.losses.MeanSquaredError()
    optimizer = keras.optimizers.SGD()


    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(
            [(g, v) for g, v in zip(grads, model.trainable_variables) if g is not None]
        )


    def fit(dataset, epochs):
        step = tf.function(train_step)
        for epoch in range(epochs):
            for x, y in dataset:
                step(x, y)
    ```
    """

    code = "TAP501"
    name = "tf-function-retracing"
    severity = Severity.WARNING
    triggers = ("tf.function", "tensorflow.function")

    def check(self, model: FileModel) -> Iterator[Finding]:
        index = StepIndex(model)
        for creation in creations_per_step(model, index):
            what = f"`{creation.name}`" if creation.name else "this `tf.function`"
            if creation.per_call_of is None:
                where = "in every iteration of this loop"
                instead = "create it once, before the loop"
            else:
                where = f"every time `{creation.per_call_of}` runs (it is called in a loop)"
                instead = "create it once, at module level or in `__init__`"
            yield Finding(
                creation.node,
                f"{what} is created anew {where} and called there, so it is traced again "
                f"each time; {instead}",
            )
        for argument in counter_arguments(model, index):
            value = source_of(model, argument.argument)
            changes = (
                "changes every iteration"
                if value == argument.counter
                else f"changes with `{argument.counter}` every iteration"
            )
            tensor = (
                f"`tf.constant({value})`"
                if isinstance(argument.argument, cst.Name)
                else "wrap it in `tf.constant(...)`"
            )
            yield Finding(
                argument.call,
                f"`{source_of(model, argument.call.func)}` is a `tf.function` called with "
                f"`{value}`, a Python value that {changes}, so each new value traces it "
                f"again; pass a tensor ({tensor}) or give it an `input_signature`",
            )
