from collections.abc import Iterator

import libcst as cst

from tapelint.findings.diagnostics import Applicability, Severity
from tapelint.findings.rule import Finding, FixIntent, NodeEdit, Rule, tape_label
from tapelint.semantic import FileModel, TapeInstance, Tri
from tapelint.semantic.file_model.model import is_recording

from ._lifecycle import (
    escapes,
    persistence_costs_nothing,
    serves_at_most_one_call,
)


class UnnecessaryPersistentTape(Rule):
    """## What it does
    Checks for `tf.GradientTape(persistent=True)` when the tape answers at most one
    `gradient` / `jacobian` / `batch_jacobian` call over its life. A call inside a loop or a
    comprehension counts as many; calls on exclusive branches count once.

    Not flagged: `jacobian`/`batch_jacobian` with `experimental_use_pfor=False` (TensorFlow
    requires a persistent tape there), and a tape that escapes the function (returned,
    stored, passed to another function, used from a nested function). A tape a helper
    returns (`return out, tape`) counts the calls of its callers too, and is flagged when
    only this file can call the helper (a script's or notebook's function, a `_private`
    one), every call of it binds the tape in a caller that does not pass it on, and the
    helper and each caller ask it at most once between them. Nor where persistence
    costs nothing: a tape created in a `tf.function` or a Keras `train_step` override lives
    only while the function is traced (the graph it builds holds no tape; TAP103 leaves
    these alone too); the inner tape of a second-order pair, whose one call runs while an
    enclosing tape records (the outer tape keeps the same tensors alive for its own calls);
    and a test's tape that records only toy values
    (`tf.constant([1., 2., 3., 4.])` in a unit test of a jacobian) holds a few bytes for one
    assertion. Guides and scripts over toy or random stand-in data are still reported: they
    are copied into training code that runs on real data.

    ## Why is this bad?
    A persistent tape keeps every recorded operation and its intermediate tensors alive until
    the tape object is deleted; a non-persistent one frees them as soon as its one gradient is
    computed (https://www.tensorflow.org/api_docs/python/tf/GradientTape). A tape that
    answers one gradient call gains nothing from persistence, a common waste in example code
    copied into real training loops.

    ## Example
    ```python
    import tensorflow as tf
    from tensorflow import keras

    model = keras.Sequential([keras.layers.Dense(1)])
    loss_fn = keras.losses.MeanSquaredError()


    def compute_gradients(x, y):
        with tf.GradientTape(persistent=True) as tape:
            loss = loss_fn(y, model(x, training=True))
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
            loss = loss_fn(y, model(x, training=True))
        return tape.gradient(loss, model.trainable_variables)
    ```

    ## Fix safety
    Removing `persistent=True` is safe when the one gradient call comes after the tape's
    block. When the call is made inside the block it is marked unsafe: a non-persistent tape
    stops recording at its first gradient call, so later operations in the block would no
    longer be recorded by it.
    """

    code = "TAP102"
    name = "unnecessary-persistent-tape"
    severity = Severity.WARNING
    fixable = True

    def check(self, model: FileModel) -> Iterator[Finding]:
        for tape in model.tapes:
            if tape.persistent is not Tri.YES or tape.persistent_arg is None:
                continue
            if serves_at_most_one_call(model, tape) is not Tri.YES:
                continue
            if persistence_costs_nothing(model, tape):
                continue
            name = tape_label(tape)
            callers = (
                " (counting the calls of the callers it is returned to)"
                if escapes(model, tape)
                else ""
            )
            yield Finding(
                tape.persistent_arg,
                f"`{name}` is persistent but answers at most one gradient call{callers}; drop "
                "`persistent=True` so the tape frees its recorded operations after that call",
                _fix(model, tape),
            )


def _fix(model: FileModel, tape: TapeInstance) -> FixIntent | None:
    removed = tape.persistent_arg
    if removed is None or removed.keyword is None:
        return None  # positional: removing it would shift the arguments after it
    args = [arg for arg in tape.ctor.args if arg is not removed]
    if args:
        args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    new_call = tape.ctor.with_changes(args=args)
    inside = any(is_recording(call.ctx, tape) for call in model.calls_on(tape) if call.is_gradient)
    return FixIntent(
        "Remove `persistent=True`",
        Applicability.UNSAFE if inside else Applicability.SAFE,
        (NodeEdit("replace", tape.ctor, model.module.code_for_node(new_call)),),
    )
