from collections.abc import Iterator

import libcst as cst

from tapelint.findings.diagnostics import Applicability, Severity
from tapelint.findings.rule import Finding, FixIntent, NodeEdit, Rule, tape_label
from tapelint.semantic import FileModel
from tapelint.semantic.tape_life.significant_work import SignificantWork

from ._lifecycle import unreleased

_WHERE = {
    "notebook": "stays alive in the notebook's kernel after the last cell ran",
    "attribute": "stays alive on its object after the function returns",
}


class PersistentTapeNotReleased(Rule):
    """## What it does
    Checks for a persistent tape that is still referenced while significant work runs after
    the place where `del tape` would go: after its last use, in the block that created it.
    Significant work runs a model or layer again (a known Keras object, a call with
    `training=`, or the model whose variables the function differentiates; `fit`,
    `evaluate`, `predict`), calls a function of the same file that does, or suspends a
    generator at `yield`. Also flagged: a persistent tape still bound when a notebook's last
    cell ran (the kernel keeps it), and one stored on an object and never deleted from it.
    Released means `del tape`, `tape = None`, or a rebinding of the name. A persistent tape
    a helper creates and hands back (`out, tape = self._forward(x)`) is the caller's to
    release: it is judged in the caller, and reported at the call that hands it back.

    Not flagged: a training step that ends `grads = tape.gradient(...)`,
    `opt.apply_gradients(...)`, `return loss`: updates, metrics, arithmetic on the results,
    printing, logging, summaries and assertions allocate less than the backward pass did
    while the tape was alive, and the function's return frees the tape. Work still inside
    the tape's own `with` block (where `del` cannot go) does not count either. In a loop
    body the next iteration's `with ... as tape` rebinds (and so frees) the tape: only the
    rest of the body, the statements before the tape's creation and what follows the loop
    count. Calls of functions defined elsewhere are not counted (what they do cannot be
    seen). Also not flagged: a `tf.function` step or a Keras `train_step` / `test_step`
    override (Keras traces them into a graph, where the tape is a trace-time object); a tape
    that escapes the function; a tape that answers at most one gradient call (its
    persistence is the problem: TAP102 reports it); a tape that records only toy values
    written out in the code (`tf.Variable(3.0)`, `tf.random.normal([7, 5])`, at most 1,000
    elements each), as guides and unit tests do.

    ## Why is this bad?
    A persistent tape holds every intermediate tensor of the forward pass it recorded until
    the tape object is freed. Kept alive while another forward pass runs (a validation
    batch, the generator's step, the next batch's teacher, `model.fit`), those activations
    add to the new ones and raise peak memory: a persistent tape's resources are released
    only when the tape object is garbage collected, so drop the reference to it once you are
    done with it (https://www.tensorflow.org/api_docs/python/tf/GradientTape).

    ## Example
    ```python
    import tensorflow as tf
    from tensorflow import keras

    model = keras.Sequential([keras.layers.Dense(1)])
    optimizer = keras.optimizers.Adam()


    def train_step(x, y, x_val):
        with tf.GradientTape(persistent=True) as tape:
            pred = model(x, training=True)
            mse = tf.reduce_mean(tf.square(pred - y))
            mae = tf.reduce_mean(tf.abs(pred - y))
        mse_grads = tape.gradient(mse, model.trainable_variables)
        mae_grads = tape.gradient(mae, model.trainable_variables)
        grads = [a + 0.5 * b for a, b in zip(mse_grads, mae_grads)]
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return model(x_val, training=False)
    ```

    Use instead:
    ```python
    import tensorflow as tf
    from tensorflow import keras

    model = keras.Sequential([keras.layers.Dense(1)])
    optimizer = keras.optimizers.Adam()


    def train_step(x, y, x_val):
        with tf.GradientTape(persistent=True) as tape:
            pred = model(x, training=True)
            mse = tf.reduce_mean(tf.square(pred - y))
            mae = tf.reduce_mean(tf.abs(pred - y))
        # A variable that misses a loss gets a zero gradient, never None.
        mse_grads = tape.gradient(
            mse, model.trainable_variables, unconnected_gradients=tf.UnconnectedGradients.ZERO
        )
        mae_grads = tape.gradient(
            mae, model.trainable_variables, unconnected_gradients=tf.UnconnectedGradients.ZERO
        )
        del tape
        grads = [a + 0.5 * b for a, b in zip(mse_grads, mae_grads)]
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return model(x_val, training=False)
    ```

    ## Fix safety
    The fix inserts `del tape` right after the statement holding the tape's last use, in the
    block where the tape was created. It is safe: nothing reads the name afterwards.
    """

    code = "TAP103"
    name = "persistent-tape-not-released"
    severity = Severity.WARNING
    fixable = True

    def check(self, model: FileModel) -> Iterator[Finding]:
        work = SignificantWork(model)
        for tape in model.tapes:
            found = unreleased(model, tape, work)
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
            where = _WHERE[found.why] if found.work is None else _describe(model, found.work)
            handed = tape.handed_back
            source = f" (from `{model.module.code_for_node(tape.ctor.func)}`)" if handed else ""
            yield Finding(
                tape.ctor if handed else next(iter(tape.blocks), tape.ctor),
                f"persistent tape `{name}`{source} is not released after its last use and "
                f"{where}; add `del {name}` after its last gradient call",
                fix,
                related=(handed.fact.site,) if handed else (),
            )


def _describe(model: FileModel, work: cst.CSTNode) -> str:
    """The significant work the tape is held during: `model(...)`, `evaluate(...)`, `yield`."""
    if isinstance(work, cst.Call):
        return f"is still alive while `{model.module.code_for_node(work.func)}(...)` runs"
    return "is still alive while the generator is suspended at `yield`"
