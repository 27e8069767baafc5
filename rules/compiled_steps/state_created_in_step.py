from collections.abc import Iterator

from tapelint.findings.diagnostics import Severity
from tapelint.findings.rule import Finding, Rule, source_of
from tapelint.semantic import FileModel
from tapelint.semantic.calls.steps import StepIndex

from ._constructors import StateKind
from ._state_creation import (
    StateInStep,
    Where,
    state_created_per_step,
)

_LOST = {
    StateKind.OPTIMIZER: "its slots and step count start over",
    StateKind.MODEL: "its weights start again from a fresh initialisation",
    StateKind.LAYER: "its weights start again from a fresh initialisation",
    StateKind.VARIABLE: "its value starts over",
}
# What carries on meanwhile, which makes the restart a mistake rather than a fresh case.
_KEPT = {
    StateKind.OPTIMIZER: "the variables it trains carry on",
    StateKind.MODEL: "the optimizer that trains it carries on (Keras 3 refuses its new "
    "variables: `Unknown variable`)",
    StateKind.LAYER: "the optimizer that trains it carries on (Keras 3 refuses its new "
    "variables: `Unknown variable`)",
}


class StateCreatedInStep(Rule):
    """## What it does
    Checks for an optimizer, a Keras model or weighted layer, or a `tf.Variable` that a
    repeated training step builds again while the same variables go on training, and for
    variables created inside compiled code. Reported:

    - in a `tf.function` (or a Keras `train_step` override, which Keras compiles): a
      construction that really creates variables there: a `tf.Variable`, a Keras optimizer,
      a TF1 optimizer with slots that the function applies, a model or layer that the
      function calls or builds (or that builds itself: a `Sequential` starting with
      `keras.Input`, a functional model, an application);
    - in eager code, an optimizer rebuilt in each repetition while what it trains was
      created before the repetition (and persists), or a model or layer rebuilt while the
      optimizer that trains it persists. A repetition is one iteration of a training loop
      (a loop that opens a tape, applies gradients or calls a step), one pass of a loop
      around one, or one call of a function that a loop calls (a training step, or a
      function running a training loop of its own). For an optimizer, the loop around
      the training loop (or the loop calling such a function) must count passes (`for
      epoch in range(n)`, `while`) and keep the set of trained variables. What
      is trained is followed through `zip(grads, variables)`, names, the functions of the
      file the repetition calls (their parameters read at the call), `self.x` and the
      receiver of a method. A call of a function of the file that returns a construction
      (`def make_optimizer(lr): return keras.optimizers.Adam(lr)`) builds what it
      returns, each time; a decorated one (`functools.cache` hands back the same object)
      or one that may return something else is not followed.

    Not reported (correct code, or not shown to be wrong): a repetition that builds both
    what it trains and its optimizer (one model and optimizer per fold, trial, or test
    case per dtype); an optimizer rebuilt per pass of a loop around the training loop that
    goes through cases or stages rather than counting passes, or changes `.trainable`
    (Keras 3 needs a new optimizer for new variables); slot-less optimizers in eager
    code (TF1's `GradientDescentOptimizer`, a Keras `SGD` without momentum, EMA or
    gradient accumulation and without a learning-rate schedule: rebuilding one resets
    nothing); what is trained when it cannot be told (pairs from an unknown function,
    `models[i]`); state created once outside the loop, in `__init__` or `build`, or under a
    condition such as the lazy-initialisation guard `if self.v is None:`; in compiled code,
    an unbuilt model (it creates no variable) and an unapplied TF1 optimizer; anything
    under `with tf.init_scope():`; code that builds a graph once (`@tff.tf_computation`,
    `tf.compat.v1.wrap_function`, `with tf.Graph().as_default():`, a file that disables
    eager execution); in eager loops, a `tf.Variable` (often a deliberate fresh value, such
    as an adversarial perturbation) and a model that receives another's weights right away
    (`set_weights`: a copy, as in meta-learning); stateless layers, metrics, schedules.

    ## Why is this bad?
    State built per step starts over each step: an optimizer forgets its moments and step
    count while the model it trains carries on, so the update is the first step's every
    time (an optimizer rebuilt per epoch forgets them every epoch); a model or layer rebuilt
    per step loses its trained weights, so training makes no progress. Inside a
    `tf.function` TensorFlow refuses it on the first call: `ValueError: tf.function only
    supports singleton tf.Variables created on the first call`.

    ## Example
    ```python
    import tensorflow as tf
    from tensorflow import keras

    model = keras.Sequential([keras.layers.Dense(1)])
    loss_fn = keras.losses.MeanSquaredError()


    def fit(dataset, epochs):
        for epoch in range(epochs):
            optimizer = keras.optimizers.Adam(1e-3 * 0.9**epoch)
            for x, y in dataset:
                with tf.GradientTape() as tape:
                    loss = loss_fn(y, model(x, training=True))
                grads = tape.gradient(loss, model.trainable_variables)
                optimizer.apply_gradients(zip(grads, model.trainable_variables))
    ```

    Use instead:
    ```python
    import tensorflow as tf
    from tensorflow import keras

    model = keras.Sequential([keras.layers.Dense(1)])
    loss_fn = keras.losses.MeanSquaredError()


    def fit(dataset, epochs):
        optimizer = keras.optimizers.Adam(1e-3)
        for epoch in range(epochs):
            optimizer.learning_rate = 1e-3 * 0.9**epoch
            for x, y in dataset:
                with tf.GradientTape() as tape:
                    loss = loss_fn(y, model(x, training=True))
                grads = tape.gradient(loss, model.trainable_variables)
                optimizer.apply_gradients(
                    [(g, v) for g, v in zip(grads, model.trainable_variables) if g is not None]
                )
    ```
    """

    code = "TAP502"
    name = "state-created-in-step"
    severity = Severity.ERROR
    triggers = ("GradientTape", "tf.function", "tensorflow.function", "apply_gradients")

    def check(self, model: FileModel) -> Iterator[Finding]:
        index = StepIndex(model)
        for state in state_created_per_step(model, index):
            yield Finding(state.node, _message(model, state))


def _message(model: FileModel, state: StateInStep) -> str:
    created = f"`{source_of(model, state.node.func)}(...)` creates {state.kind.value}"
    if state.built is not state.node:
        created += f" (it returns a new `{source_of(model, state.built.func)}(...)`)"
    if state.where is Where.COMPILED:
        function = f"`{state.function}`" if state.function else "a compiled function"
        return (
            f"{created} inside the compiled step {function}, where TensorFlow allows "
            "variables only on the first call (`ValueError: tf.function only supports "
            "singleton tf.Variables`); create it once outside the step, or under an "
            "`if self.x is None:` guard"
        )
    lost, kept = _LOST[state.kind], _KEPT[state.kind]
    if state.where is Where.LOOP:
        return (
            f"{created} in every iteration of this training loop, so {lost} at each step "
            f"while {kept}; create it once, before the loop"
        )
    if state.where is Where.OUTER_LOOP and state.kind is StateKind.OPTIMIZER:
        return (
            f"{created} in every pass of this loop around the training loop, so {lost} at "
            f"each pass (every epoch) while {kept}; create it once, before the loop (to "
            "change the learning rate, assign `optimizer.learning_rate`)"
        )
    if state.where is Where.OUTER_LOOP:
        return (
            f"{created} in every pass of this loop around the training loop while {kept}; "
            "create the optimizer in the loop too (one per case), or the model once before it"
        )
    if state.where is Where.STEP:
        return (
            f"{created} each time the training step `{state.function}` runs (it is called "
            f"in a loop), so {lost} at each step while {kept}; create it once outside the "
            "step (before the loop, or in `__init__`) and reuse it"
        )
    return (
        f"{created} each time `{state.function}` runs (it is called in a loop), so {lost} "
        f"at each call while {kept}; create it once, outside `{state.function}`, and pass "
        "it in"
    )
