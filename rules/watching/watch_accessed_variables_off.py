from collections.abc import Iterator

from tapelint.findings.diagnostics import Severity
from tapelint.findings.rule import Finding, Rule, tape_label
from tapelint.semantic import FileModel
from tapelint.semantic.file_model.expressions import call_argument
from tapelint.semantic.flow.watching import never_watched_call
from tapelint.semantic.tape_life.inspection import only_inspected


class WatchAccessedVariablesOff(Rule):
    """## What it does
    Checks for a tape created with `watch_accessed_variables=False` that is asked for the
    gradient of sources it never watches: it has no `tape.watch(...)` call at all, or the
    values it watches are shown not to be (or contain) any of the sources.

    ## Why is this bad?
    With `watch_accessed_variables=False` the tape records only what is passed to its
    `watch`; the variables the model reads are no longer watched. Every gradient of such a
    call is `None`, and the optimizer step does nothing: the option is for when you know
    exactly what should be watched
    (https://www.tensorflow.org/guide/autodiff#controlling_what_the_tape_watches).

    The common shape is a nested pair of tapes (gradient penalties, physics-informed
    networks): the outer tape is made with `watch_accessed_variables=False` and watches only
    the inputs that the inner tape differentiates, then is asked for the model's variables.
    A watched value shows it is not one of the model's variables when it is fed to that
    model as input (`net(tf.concat([x, t], 1))`, also through values computed from it) or
    is the result of arithmetic or a tensor op (`real + alpha * (fake - real)`): such an
    outer tape's gradients are all None (measured on TensorFlow 2.21).

    Not reported: a tape that watches one of the sources (or a list containing it, or
    something this analysis cannot see into, such as `[v.value for v in variables]`); a
    source computed inside the block (it may derive from a watched value); a tape passed to
    other code; a call whose sources are all plain tensors (TAP201 reports each of those; a
    plain tensor among variable sources is reported by both rules).

    In a notebook, a gradient that is only printed, displayed or asserted is not reported:
    the None is the cell's output, not a silent failure (guides print it on purpose).

    ## Example
    ```python
    import tensorflow as tf
    from tensorflow import keras

    model = keras.Sequential([keras.layers.Dense(1)])
    loss_fn = keras.losses.MeanSquaredError()


    def compute_gradients(x, y):
        with tf.GradientTape(watch_accessed_variables=False) as tape:
            pred = model(x, training=True)
            loss = loss_fn(y, pred)
        return tape.gradient(loss, model.trainable_variables)
    ```

    Use instead:
    ```python
    import tensorflow as tf
    from tensorflow import keras

    model = keras.Sequential([keras.layers.Dense(1)])
    loss_fn = keras.losses.MeanSquaredError()


    def compute_gradients(x, y):
        with tf.GradientTape() as tape:
            pred = model(x, training=True)
            loss = loss_fn(y, pred)
        return tape.gradient(loss, model.trainable_variables)
    ```
    """

    code = "TAP202"
    name = "watch-accessed-variables-off"
    severity = Severity.ERROR

    def check(self, model: FileModel) -> Iterator[Finding]:
        for tape in model.tapes:
            call = never_watched_call(model, tape)
            argument = call_argument(tape.ctor, 1, "watch_accessed_variables")
            if call is None or argument is None:
                continue
            if all(only_inspected(model, c) for c in model.calls_on(tape) if c.is_gradient):
                continue  # printed, not used: the Nones are in plain sight
            name = tape_label(tape)
            yield Finding(
                argument,
                f"`{name}` is created with `watch_accessed_variables=False` but never watches "
                f"the sources of `{name}.{call.method}`, so every gradient it returns is None; "
                f"drop the argument or `{name}.watch(...)` the sources at the start of the block",
            )
