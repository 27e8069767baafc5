from collections.abc import Iterator

from tapelint.analysis import FileModel
from tapelint.analysis.state_creation import StateKind, Where, state_created_per_step
from tapelint.analysis.steps import StepIndex
from tapelint.diagnostics import Severity
from tapelint.rule import Finding, Rule, source_of

_LOST = {
    StateKind.OPTIMIZER: "its slots and step count start over",
    StateKind.MODEL: "its weights start again from a fresh initialisation",
    StateKind.LAYER: "its weights start again from a fresh initialisation",
    StateKind.VARIABLE: "its value starts over",
}


class StateCreatedInStep(Rule):
    """## What it does
    Checks for an optimizer, a Keras model or weighted layer, or a `tf.Variable` created
    where it runs once per training step. That is:

    - inside a `tf.function` (or a Keras `train_step` override, which Keras compiles);
    - in the body of a training loop: a `for`/`while` whose iteration opens a gradient tape,
      calls `apply_gradients`, or calls a training-step function of the same file;
    - in a training-step function (one that opens a tape or applies gradients, not in a loop
      of its own) that is called in a loop.

    Not reported: state created once outside the loop or step, in `__init__` or `build`, or
    under a condition such as the lazy-initialisation guard `if self.v is None:` (the
    documented way to create variables in a `tf.function`); loops that build models rather
    than train them (a list of layers in model construction); an outer loop around the loop
    that runs the steps, since one model and optimizer per fold or trial is right (an
    optimizer rebuilt per epoch is a mistake this rule cannot tell apart from that, and it
    stays silent too); in eager loops, a `tf.Variable` (often a deliberate fresh value, such
    as an adversarial perturbation) and a model that receives another's weights right away
    (`set_weights`: a copy, as in meta-learning).

    ## Why is this bad?
    State built per step starts over each step: an optimizer forgets its moments and step
    count, a model or layer its trained weights, so training makes no progress. Inside a
    `tf.function` TensorFlow refuses it: `ValueError: tf.function only supports singleton
    tf.Variables created on the first call. Make sure the tf.Variable is only created once or
    created outside tf.function`.

    ## Example
    ```python
    for x, y in dataset:
        optimizer = tf.keras.optimizers.Adam(1e-3)
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
    ```

    Use instead:
    ```python
    optimizer = tf.keras.optimizers.Adam(1e-3)
    for x, y in dataset:
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
    ```
    """

    code = "TAP502"
    name = "state-created-in-step"
    severity = Severity.ERROR
    triggers = ("GradientTape", "tf.function", "tensorflow.function", "apply_gradients")

    def check(self, model: FileModel) -> Iterator[Finding]:
        index = StepIndex(model)
        for state in state_created_per_step(model, index):
            created = f"`{source_of(model, state.node.func)}(...)` creates {state.kind.value}"
            if state.where is Where.COMPILED:
                function = f"`{state.function}`" if state.function else "a compiled function"
                message = (
                    f"{created} inside the compiled step {function}, where TensorFlow "
                    "allows variables only on the first call (`ValueError: tf.function only "
                    "supports singleton tf.Variables`); create it once outside the step, or "
                    "under an `if self.x is None:` guard"
                )
            elif state.where is Where.LOOP:
                message = (
                    f"{created} in every iteration of this training loop, so "
                    f"{_LOST[state.kind]} at each step; create it once, before the loop"
                )
            else:
                message = (
                    f"{created} each time the training step `{state.function}` runs (it is "
                    f"called in a loop), so {_LOST[state.kind]} at each step; create it once "
                    "outside the step (before the loop, or in `__init__`) and reuse it"
                )
            yield Finding(state.node, message)
