from collections.abc import Iterator

from tapelint.analysis import FileModel
from tapelint.analysis.lifecycle import unreleased
from tapelint.diagnostics import Applicability, Severity
from tapelint.rule import Finding, FixIntent, NodeEdit, Rule, tape_label

_WHERE = {
    "module": "at module level while the statements after it run",
    "notebook": "in the notebook's kernel after the last cell ran",
    "loop": "in a loop body, so it lives on into the next iteration",
    "function": "while the rest of the function runs",
    "attribute": "on its object after the function returns",
}


class PersistentTapeNotReleased(Rule):
    """## What it does
    Checks for a persistent tape that is still referenced after its last use while more work
    runs: at module or notebook level, inside a loop body, or with statements other than
    `return` after its last use in a function. Released means `del tape` or `tape = None`
    after the last use.

    Not flagged: a function that only returns after the tape's last use (the tape is freed
    on return); a `tf.function` step or a Keras `train_step` / `test_step` override (Keras
    traces them into a graph, where the tape is a trace-time object); a tape that escapes the
    function; a tape that answers at most one gradient call (its persistence is the problem:
    TAP102 reports it).

    ## Why is this bad?
    A persistent tape holds every intermediate tensor of the forward pass until the tape
    object is freed. Kept alive past its last gradient call, it doubles peak memory while the
    optimizer update or the next batch's forward pass runs. Seed 004: "Release persistent
    tapes to avoid memory growth."

    ## Example
    ```python
    for x, y in dataset:
        with tf.GradientTape(persistent=True) as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        grad_x = tape.gradient(loss, x)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
    ```

    Use instead:
    ```python
    for x, y in dataset:
        with tf.GradientTape(persistent=True) as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        grad_x = tape.gradient(loss, x)
        del tape
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
    ```

    ## Fix safety
    The fix inserts `del tape` right after the statement holding the tape's last use, in the
    block where the tape was created. It is safe: nothing reads the name afterwards.
    """

    code = "TAP103"
    name = "persistent-tape-not-released"
    severity = Severity.WARNING

    def check(self, model: FileModel) -> Iterator[Finding]:
        for tape in model.tapes:
            found = unreleased(model, tape)
            if found is None:
                continue
            name = tape_label(tape, "tape")
            fix = None
            if found.release_after is not None:
                fix = FixIntent(
                    f"Insert `del {name}` after its last use",
                    Applicability.SAFE,
                    (NodeEdit("insert_after", found.release_after, f"del {name}"),),
                )
            report_at = next(iter(tape.blocks), tape.ctor)
            yield Finding(
                report_at,
                f"persistent tape `{name}` is never released after its last use and stays "
                f"alive {_WHERE[found.why]}; add `del {name}` after its last gradient call",
                fix,
            )
