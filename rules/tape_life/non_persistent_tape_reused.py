from collections.abc import Iterator

import libcst as cst

from tapelint.findings.diagnostics import Severity
from tapelint.findings.rule import Finding, Rule, tape_label
from tapelint.semantic import FileModel
from tapelint.semantic.project_model.summaries import Site

from ._reuse import HelperReuse, reused_calls, reused_through_helpers

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
    it raises before the others run. Handing the tape to a helper that always asks it for
    gradients (`grads = compute_grads(tape, loss)`, in this module or another one of the
    project) counts as a call, when the two follow each other in one straight line, or when
    a loop around the hand-off (and not around the tape's creation) runs it again and
    nothing in the loop can end it after one iteration. A tape a helper creates and hands
    back (`out, tape = self._forward(x)`) has the helper's persistence, and each call of the
    helper hands back a fresh one: two calls on one hand-back are a repeat.

    ## Why is this bad?
    A non-persistent tape frees its recorded operations at its first gradient call. The
    second call raises `RuntimeError: A non-persistent GradientTape can only be used to
    compute one set of gradients (or jacobians)`.

    ## Example
    ```python
    import tensorflow as tf
    from tensorflow import keras

    gen = keras.Sequential([keras.layers.Dense(4)])
    disc = keras.Sequential([keras.layers.Dense(1)])


    def gan_gradients(noise, real):
        with tf.GradientTape() as tape:
            fake_score = disc(gen(noise, training=True), training=True)
            gen_loss = -tf.reduce_mean(fake_score)
            disc_loss = tf.reduce_mean(fake_score) - tf.reduce_mean(disc(real, training=True))
        gen_grads = tape.gradient(gen_loss, gen.trainable_variables)
        disc_grads = tape.gradient(disc_loss, disc.trainable_variables)
        return gen_grads, disc_grads
    ```

    Use instead, one tape per gradient (or `persistent=True` and `del tape` after the last
    call):
    ```python
    import tensorflow as tf
    from tensorflow import keras

    gen = keras.Sequential([keras.layers.Dense(4)])
    disc = keras.Sequential([keras.layers.Dense(1)])


    def gan_gradients(noise, real):
        with tf.GradientTape() as gen_tape, tf.GradientTape() as disc_tape:
            fake_score = disc(gen(noise, training=True), training=True)
            gen_loss = -tf.reduce_mean(fake_score)
            disc_loss = tf.reduce_mean(fake_score) - tf.reduce_mean(disc(real, training=True))
        gen_grads = gen_tape.gradient(gen_loss, gen.trainable_variables)
        disc_grads = disc_tape.gradient(disc_loss, disc.trainable_variables)
        return gen_grads, disc_grads
    ```
    """

    code = "TAP105"
    name = "non-persistent-tape-reused"
    severity = Severity.ERROR

    def check(self, model: FileModel) -> Iterator[Finding]:
        for tape in model.tapes:
            name = tape_label(tape)
            reuses = reused_calls(model, tape)
            for reuse in reuses:
                yield Finding(
                    reuse.call.node,
                    f"`{name}.{reuse.call.method}` asks the non-persistent `{name}` for "
                    f"gradients {_HOW[reuse.how]}, which raises RuntimeError; {_instead(name)}",
                )
            through = None if reuses else reused_through_helpers(model, tape)
            if through is not None:
                yield _through_helper(model, name, through)


def _through_helper(model: FileModel, name: str, reuse: HelperReuse) -> Finding:
    """A repeat where a helper that always asks the tape for gradients is one of the two."""

    def spelled(call: cst.Call) -> str:
        return model.module.code_for_node(call.func)

    def place(site: Site) -> str:
        return f"({site.label}, {site.where(model.path)})"

    if reuse.how != "sequence":
        assert reuse.spent_at is not None  # only hand-offs are judged in loops here
        return Finding(
            reuse.node,
            f"`{spelled(reuse.node)}(...)` hands the non-persistent `{name}` to a helper that "
            f"asks it for gradients {place(reuse.spent_at)} {_HOW[reuse.how]}, which raises "
            f"RuntimeError; {_instead(name)}",
            related=(reuse.spent_at,),
        )
    if reuse.spent_at is None:
        what = f"`{spelled(reuse.node)}` asks the non-persistent `{name}` for gradients"
    else:
        what = (
            f"`{spelled(reuse.node)}(...)` hands the non-persistent `{name}` to a helper that "
            f"asks it for gradients {place(reuse.spent_at)}"
        )
    if reuse.earlier_spent_at is None:
        earlier = f"`{spelled(reuse.earlier)}`"
    elif reuse.earlier_spent_at == reuse.spent_at:
        earlier = f"an earlier `{spelled(reuse.earlier)}(...)`"
    else:
        earlier = f"`{spelled(reuse.earlier)}(...)` {place(reuse.earlier_spent_at)}"
    related = tuple(dict.fromkeys(s for s in (reuse.spent_at, reuse.earlier_spent_at) if s))
    return Finding(
        reuse.node,
        f"{what} after {earlier} already did, which raises RuntimeError; {_instead(name)}",
        related=related,
    )


def _instead(name: str) -> str:
    return f"use one tape per gradient, or `persistent=True` and `del {name}` after the last call"
