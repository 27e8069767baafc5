from collections.abc import Iterator

from tapelint.analysis import FileModel, Tri
from tapelint.analysis.higher_order import gradient_inside_own_block
from tapelint.diagnostics import Severity
from tapelint.rule import Finding, Rule, tape_label


class GradientInsideTape(Rule):
    """## What it does
    Checks for `tape.gradient` / `jacobian` / `batch_jacobian` called inside the tape's own
    recording block (not under `tape.stop_recording()`) when no tape that records the call
    differentiates its result.

    Higher-order derivatives are the legitimate case and are not flagged: a gradient whose
    result an enclosing tape differentiates, or a persistent tape that differentiates its own
    first gradient. A gradient returned to the caller, stored, or passed to an unknown function
    is not flagged either, since a tape in the caller may differentiate it.

    ## Why is this bad?
    On a persistent tape the gradient computation is itself recorded, which costs CPU and
    memory for nothing; TensorFlow warns that calling `gradient` "inside the context is
    significantly less efficient than calling it outside the context". On a non-persistent
    tape the call stops the recording: whatever the block does after it is silently not
    recorded, although it reads as if it were. Either way the block no longer says what the
    tape records (seed 000: "Keep the tape scope as small as correctness allows").

    ## Example
    ```python
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
    ```

    Use instead:
    ```python
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    ```
    """

    code = "TAP104"
    name = "gradient-inside-tape"
    severity = Severity.WARNING

    def check(self, model: FileModel) -> Iterator[Finding]:
        for call in model.gradient_calls:
            if gradient_inside_own_block(model, call) is not Tri.YES:
                continue
            tape = tape_label(call.tape)
            if call.tape.persistent is Tri.YES:
                effect = "the persistent tape records the gradient computation too"
            elif call.tape.persistent is Tri.NO:
                effect = "it stops the tape, so the rest of the block is not recorded"
            else:
                effect = "the tape records it or stops recording there"
            yield Finding(
                call.node,
                f"`{tape}.{call.method}` is called inside `{tape}`'s recording block, where "
                f"{effect}; call it after the `with` block",
            )
