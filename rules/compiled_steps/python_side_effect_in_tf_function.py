from collections.abc import Iterator

import libcst as cst

from tapelint.findings.diagnostics import Severity
from tapelint.findings.rule import Finding, Rule, source_of
from tapelint.semantic import FileModel

from ._trace_time import FrozenKind, FrozenValue, frozen_values


class PythonSideEffectInTfFunction(Rule):
    """## What it does
    Checks for a compiled step that reads a value Python computes while the step is traced
    and that is meant to change on every call. That is NumPy's or Python's randomness
    (`np.random.rand()`, `np.random.shuffle(idx)`, `random.random()`), in the step's body or
    in a function of the file it calls; a Python number that the loop calling the step
    changes between calls (`step += 1` at module level, `self.batch_idx += 1` in the method
    whose loop calls `self.train_step()`); or a list made outside the step that the step
    appends a computed value to (`epoch_losses.append(loss)`).

    A compiled step is a function decorated with `tf.function` (also with
    `jit_compile=True`), one compiled with `tf.function(f)`, or a Keras `train_step`,
    `test_step` or `predict_step` override, which `fit` compiles and calls on every batch. A
    `tf.function` is checked when a loop of eager code calls it, directly or through the
    name a factory of the file returns it to (`train_op = make_train_op(solver)` before the
    loop, `train_op()` in it).

    Not reported, as each is deliberate or harmless: TensorFlow's own randomness
    (`tf.random.*`, a `tf.random.Generator`), seeding (`np.random.seed`), a value that only
    goes to `print`, logging or `tf.print` (a trace-time message), randomness that makes an
    initial value (`tf.Variable(np.random.randn(3))`, under `tf.init_scope()` or an `if ...
    is None:` guard), values constant for the run (a hyperparameter set once in `__init__`,
    a module constant), a constant appended (`traces.append(1)`, how tests count traces) or
    an append under a condition (a lazy build on the first trace), code nested in the step
    (a lambda, a function run by `tf.py_function` or `tf.numpy_function`, which run on
    every call), and test code. Nor a step that is traced
    again on every call (TAP501 reports that: its Python then runs every time), nor any
    step in a file that calls `tf.config.run_functions_eagerly(...)` or passes
    `run_eagerly=`. A number changed through `global` in a function, draws of a NumPy
    `Generator` object (`rng.normal()`), a helper in another module, and a step defined in
    one module and called in a loop in another are not followed: nothing is reported
    there.

    This rule is in preview: select it with `--select TAP503` or `--preview`.

    ## Why is this bad?
    A `tf.function` runs its Python body once per trace, to build a graph; every later call
    runs the graph. Whatever Python computed during the trace is a constant in that graph:
    the random number drawn, the counter read, the list appended to. Measured on TensorFlow
    2.21: `@tf.function def f(x): return x + np.random.rand()` returns the same value on
    every call, a global counter the loop increments reads as its first value on every
    call, and `losses.append(loss)` inside the step leaves one symbolic tensor in the list
    however many steps ran. Training goes on without an error: the same "random" batch, the
    same augmentation, the same learning rate every step. See "Executing Python side
    effects" in TensorFlow's guide
    (https://www.tensorflow.org/guide/function#executing_python_side_effects).

    ## Example
    ```python
    import numpy as np
    import tensorflow as tf
    from tensorflow import keras

    BATCH_SIZE = 32
    model = keras.Sequential([keras.layers.Dense(1)])
    loss_fn = keras.losses.MeanSquaredError()
    optimizer = keras.optimizers.SGD()


    @tf.function
    def train_step(x, y):
        idx = np.random.permutation(BATCH_SIZE)  # drawn once, at trace time
        x, y = tf.gather(x, idx), tf.gather(y, idx)
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))


    def fit(dataset):
        for x, y in dataset:
            train_step(x, y)
    ```

    Use instead:
    ```python
    import tensorflow as tf
    from tensorflow import keras

    BATCH_SIZE = 32
    model = keras.Sequential([keras.layers.Dense(1)])
    loss_fn = keras.losses.MeanSquaredError()
    optimizer = keras.optimizers.SGD()
    rng = tf.random.Generator.from_seed(0)


    @tf.function
    def train_step(x, y):
        idx = tf.argsort(rng.uniform([BATCH_SIZE]))  # a new draw on every call
        x, y = tf.gather(x, idx), tf.gather(y, idx)
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(
            [(g, v) for g, v in zip(grads, model.trainable_variables) if g is not None]
        )


    def fit(dataset):
        for x, y in dataset:
            train_step(x, y)
    ```

    And for a value the loop changes, pass it in as a tensor
    (`train_step(x, y, tf.constant(step))`) or keep it in a `tf.Variable` that the loop
    `assign`s; for a list, return the value from the step and append it in the loop.
    """

    code = "TAP503"
    name = "python-side-effect-in-tf-function"
    severity = Severity.ERROR
    preview = True
    triggers = ("GradientTape", "tf.function", "tensorflow.function")

    def check(self, model: FileModel) -> Iterator[Finding]:
        for frozen in frozen_values(model):
            yield Finding(frozen.node, _message(model, frozen))


def _message(model: FileModel, frozen: FrozenValue) -> str:
    step = f"`{frozen.function}`"
    if frozen.kind is FrozenKind.RANDOM:
        drawn = f"`{source_of(model, frozen.value)}`"
        if frozen.helper is not None:
            drawn = f"`{source_of(model, frozen.node)}` calls {drawn} (in `{frozen.helper}`), which"
        return (
            f"{drawn} runs once, when {step} is traced, so every call reuses what it drew "
            "then; use `tf.random` ops with a `tf.random.Generator` inside the function, or pass "
            "the value in as a tensor"
        )
    if frozen.kind is FrozenKind.LOOP_STATE:
        changed = _change(model, frozen.changed_by)
        return (
            f"`{source_of(model, frozen.node)}` is a Python number that the loop calling {step} "
            f"changes (`{changed}`), but {step} read it once, when it was traced, so every "
            "call uses that value; pass it in as a tensor argument, or keep it in a "
            "`tf.Variable` and `assign` it"
        )
    return (
        f"`{source_of(model, frozen.node)}` runs once, when {step} is traced, not on every "
        "call, so the list gets one symbolic tensor per trace; return the value from the "
        "function and append it in the loop, or accumulate it in a `tf.Variable` or a Keras metric"
    )


def _change(model: FileModel, statement: cst.CSTNode | None) -> str:
    """How a message shows the statement that changes a value: a `for` by its header."""
    if isinstance(statement, cst.For):
        return f"for {source_of(model, statement.target)} in {source_of(model, statement.iter)}"
    return source_of(model, statement) if statement is not None else ""
