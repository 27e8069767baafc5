from collections.abc import Iterator

from tapelint.analysis import FileModel
from tapelint.analysis.reuse import reused_calls
from tapelint.diagnostics import Severity
from tapelint.rule import Finding, Rule, tape_label

_HOW = {
    "sequence": "a second time, after an earlier call",
    "loop": "again on the loop's next iteration",
    "comprehension": "again for each element of the comprehension",
}


class NonPersistentTapeReused(Rule):
    """## What it does
    Checks for a non-persistent `tf.GradientTape` asked for gradients twice on one path: a
    second `gradient` / `jacobian` / `batch_jacobian` call after a first one, or one call
    inside a loop or comprehension over a tape created outside it. Calls on exclusive
    branches count once; a tape created (or entered with `with tape:`) again inside the loop
    is a fresh tape each time. Of several calls in a row, the first repeat is reported, since
    it raises before the others run.

    ## Why is this bad?
    A non-persistent tape frees its recorded operations at its first gradient call. The
    second call raises `RuntimeError: A non-persistent GradientTape can only be used to
    compute one set of gradients (or jacobians)`.

    ## Example
    ```python
    with tf.GradientTape() as tape:
        gen_loss, disc_loss = losses(gen, disc, x)
    gen_grads = tape.gradient(gen_loss, gen.trainable_variables)
    disc_grads = tape.gradient(disc_loss, disc.trainable_variables)
    ```

    Use instead, one tape per gradient (or `persistent=True` and `del tape` after the last
    call):
    ```python
    with tf.GradientTape() as gen_tape, tf.GradientTape() as disc_tape:
        gen_loss, disc_loss = losses(gen, disc, x)
    gen_grads = gen_tape.gradient(gen_loss, gen.trainable_variables)
    disc_grads = disc_tape.gradient(disc_loss, disc.trainable_variables)
    ```
    """

    code = "TAP105"
    name = "non-persistent-tape-reused"
    severity = Severity.ERROR

    def check(self, model: FileModel) -> Iterator[Finding]:
        for tape in model.tapes:
            for reuse in reused_calls(model, tape):
                name = tape_label(tape)
                yield Finding(
                    reuse.call.node,
                    f"`{name}.{reuse.call.method}` asks the non-persistent `{name}` for "
                    f"gradients {_HOW[reuse.how]}, which raises RuntimeError; use one tape per "
                    f"gradient, or `persistent=True` and `del {name}` after the last call",
                )
