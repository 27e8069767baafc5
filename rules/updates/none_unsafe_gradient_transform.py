from collections.abc import Iterator

from tapelint.findings.diagnostics import Severity
from tapelint.findings.rule import Finding, Rule, source_of, tape_label
from tapelint.semantic import FileModel
from tapelint.semantic.gradient_routes.transforms import unguarded_transforms

from ._helper_transforms import helper_transforms


class NoneUnsafeGradientTransform(Rule):
    """## What it does
    Checks for an op applied to each gradient of a list that comes straight from
    `tape.gradient`, with no guard against `None`: in a comprehension (`[tf.clip_by_norm(g, 5.0)
    for g in grads]`, `[g * scale for g in grads]`, `[(tf.math.l2_normalize(g), v) for g, v in
    zip(grads, variables)]`), in a `for` loop over the gradients (also through their index: `for
    i in range(len(grads)): grads[i] = tf.clip_by_norm(grads[i], c)`), or in a lambda mapped
    over them (`tf.nest.map_structure(lambda g: g / n, grads)`, `map(...)`). The report is at
    the op. Also behind your own functions, in this file, another module of the project or an
    earlier notebook cell: the raw gradients handed to a helper or method that runs such an op
    on each of them (`scale_all(grads, 0.5)`, `self.accumulate(grads)`), or a function mapped
    over them that runs one on its parameter (`tf.nest.map_structure(add_noise, grads)`). The
    report is then at that call, naming the function's op (a related location in JSON and
    SARIF). The gradients are followed through `tf.cond` with lambda branches (`chosen =
    tf.cond(p, lambda: clipped, lambda: grads)` is the raw list on one branch).

    Not flagged: a guarded transform (`if g is not None` in the comprehension,
    `None if g is None else ...`, `if g is None: continue`, a check before it that raises or
    logs), `tf.clip_by_global_norm` (it passes `None` through), gradients requested with
    `unconnected_gradients=tf.UnconnectedGradients.ZERO` (never `None`), your own functions
    that test what they are handed (`None if g is None else g + noise`, `isinstance(g,
    tf.IndexedSlices)`, which leaves `None` as it is) or that are not known, and the
    gradient of a single tensor or variable (iterating over it walks its rows, which are
    never `None`). Once the list has gone
    through such a transform, TAP401 no longer follows it to `apply_gradients`; this rule
    covers that step.

    ## Why is this bad?
    `tape.gradient` returns `None` for every source the target does not depend on: a frozen
    branch, an unused head, a variable created but not yet used. `tf.clip_by_norm(None, c)`
    raises `ValueError` and `None * scale` raises `TypeError`, so the step crashes as soon as
    one variable gets no gradient, often far from the code that disconnected it.

    ## Example
    ```python
    import tensorflow as tf
    from tensorflow import keras

    model = keras.Sequential([keras.layers.Dense(1)])
    loss_fn = keras.losses.MeanSquaredError()


    def compute_gradients(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        return [tf.clip_by_norm(g, 5.0) for g in grads]
    ```

    Use instead:
    ```python
    import tensorflow as tf
    from tensorflow import keras

    model = keras.Sequential([keras.layers.Dense(1)])
    loss_fn = keras.losses.MeanSquaredError()


    def compute_gradients(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        return [None if g is None else tf.clip_by_norm(g, 5.0) for g in grads]
    ```

    or clip by the global norm, which skips `None`:
    ```python
    import tensorflow as tf
    from tensorflow import keras

    model = keras.Sequential([keras.layers.Dense(1)])
    loss_fn = keras.losses.MeanSquaredError()


    def compute_gradients(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        grads, _ = tf.clip_by_global_norm(grads, 5.0)
        return grads
    ```
    """

    code = "TAP403"
    name = "none-unsafe-gradient-transform"
    severity = Severity.ERROR
    # A helper module that is handed the tape (`return tape.gradient(loss, vs)`) never
    # names `GradientTape`: its summary is what the caller's check needs.
    triggers = ("GradientTape", ".gradient(")

    def check(self, model: FileModel) -> Iterator[Finding]:
        for transform in unguarded_transforms(model):
            tape = tape_label(transform.origin.tape, "tape")
            g = transform.variable
            yield Finding(
                transform.node,
                f"`{source_of(model, transform.node)}` runs on each gradient from "
                f"`{tape}.gradient` and raises when one is None; guard it "
                f"(`None if {g} is None else ...`) or filter out None gradients first",
            )
        for handed in helper_transforms(model):
            tape = tape_label(handed.origin.tape, "tape")
            helper = source_of(model, handed.helper)
            op = handed.site
            yield Finding(
                handed.node,
                f"`{helper}` runs {op.label} ({op.where(model.path)}) on each gradient from "
                f"`{tape}.gradient` and raises when one is None; guard it there "
                f"(`None if g is None else ...`) or filter out None gradients first",
                related=(op,),
            )
