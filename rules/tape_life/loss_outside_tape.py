from collections.abc import Iterator

from tapelint.findings.diagnostics import Severity
from tapelint.findings.rule import Finding, Rule, source_of, tape_label
from tapelint.semantic import FileModel, Tri
from tapelint.semantic.tape_life.inspection import only_inspected

from ._recording import target_recorded

_WHEN = {
    "after": "after the `with` block of `{tape}` ended",
    "handed": "after `{helper}` handed `{tape}` back, its recording over",
    "before": "before `{tape}` started recording",
    "stopped": "under `{tape}.stop_recording()`",
}


class LossOutsideTape(Rule):
    """## What it does
    Checks for a `tape.gradient` / `jacobian` / `batch_jacobian` call whose target was computed
    while the tape was not recording: after its `with` block ended, before it began, or under
    `tape.stop_recording()`. This includes a target written in the call itself outside the
    block, such as `tape.gradient(loss * 2, variables)`, and a target computed by the caller
    of a helper that recorded on the tape and handed it back (`pred, tape = forward(x)`,
    then `loss = loss_fn(y, pred)`): the helper's block ended when it returned. What the
    helper returned with the tape (`loss, tape = forward(x)`) is not judged: it was computed
    where the caller cannot see.

    ## Why is this bad?
    A tape only knows the operations it recorded. A loss computed outside the block has no
    recorded path back to the variables, so every gradient comes back `None` and the
    optimizer silently skips the step (https://www.tensorflow.org/guide/autodiff#getting_a_gradient_of_none).

    A target produced inside the block is fine however it is produced: directly, by a helper
    called inside the block, or by `+=` inside the block onto a value started before it. A
    plain alias after the block (`total = loss`) renames the recorded loss and is fine too.
    `tf.cast(loss, dtype)` of such a target after the block is not reported either: when the
    dtype already matches, `tf.cast` returns `loss` itself, and the dtype is rarely known
    statically (`tf.convert_to_tensor` likewise returns a tensor unchanged).

    What is reported is the operation that makes the target: a total combined after the block
    from losses computed inside it (`loss = l1 + w * l2`, or `total += w * l` in a loop after
    the `with`, also when `total` starts as a number such as `total = 0.0`) runs while the tape
    is not recording, so the gradient of the total is None (measured on TensorFlow 2.21). A
    number alone decides nothing: the target is reported when every other value that can
    reach it was computed while the tape did not record.

    In a notebook, a gradient that is only printed, displayed or asserted is not reported:
    the None is the cell's output, not a silent failure (guides print it on purpose).

    ## Example
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

    code = "TAP101"
    name = "loss-outside-tape"
    severity = Severity.ERROR

    def check(self, model: FileModel) -> Iterator[Finding]:
        for call in model.gradient_calls:
            answer = target_recorded(model, call)
            if answer.answer is not Tri.NO or answer.part is None:
                continue
            if only_inspected(model, call):
                continue  # printed, not used: the None is in plain sight
            tape = tape_label(call.tape)
            helper = model.module.code_for_node(call.tape.ctor.func)
            when = _WHEN[answer.when or "after"].format(tape=tape, helper=helper)
            where = f"`{helper}`'s" if answer.when == "handed" else "the tape's"
            yield Finding(
                call.node,
                f"`{source_of(model, answer.part)}` is computed {when}, so "
                f"`{tape}.{call.method}` returns None for it; compute it inside {where} "
                "`with` block",
            )
