from collections.abc import Iterator

import libcst as cst

from tapelint.findings.diagnostics import Severity
from tapelint.findings.rule import Finding, Rule, source_of, tape_label
from tapelint.semantic import FileModel

from ._unrelated import unrelated_work


class UnrelatedWorkInTape(Rule):
    """## What it does
    Checks for work inside a tape's `with` block that does not depend on anything the tape
    watches: input preprocessing, data loading, noise or label encoding done with TensorFlow
    ops on the batch. The first such statement of each block is reported.

    It is conservative about what "depends" means: a model or layer call, a variable, an
    attribute such as `self.w`, a call of any function other than TensorFlow and NumPy ops,
    and any name it cannot resolve count as dependent. What counts as data: literals,
    module-level constants and arrays, `next(iterator)`, and the function's parameters that
    are not gradient sources (the batch a step receives). A block that watches tensors
    explicitly (`tape.watch(x)`) is not checked, nor one whose tape does not watch the
    variables it reads, nor a tape passed elsewhere. Shapes, constants, assertions,
    `print`, logging and `tf.print` are not counted as work.

    This rule is in preview: select it with `--select TAP106` or `--preview`.

    ## Why is this bad?
    Keep the tape's block as small as correctness allows. Work in the block reads as
    part of what is differentiated, and every op run there is checked against the tape (and
    recorded, once something in it is watched). Preprocessing belongs before the block, where
    it is visibly data. TensorFlow records an op only when one of its inputs is watched, so
    the cost is usually small: the rule is about a tape scope that says what it records.

    ## Example
    ```python
    import tensorflow as tf
    from tensorflow import keras

    model = keras.Sequential([keras.layers.Flatten(), keras.layers.Dense(10)])
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)


    def compute_gradients(images, labels):
        with tf.GradientTape() as tape:
            images = tf.image.random_flip_left_right(images)
            loss = loss_fn(labels, model(images, training=True))
        return tape.gradient(loss, model.trainable_variables)
    ```

    Use instead:
    ```python
    import tensorflow as tf
    from tensorflow import keras

    model = keras.Sequential([keras.layers.Flatten(), keras.layers.Dense(10)])
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)


    def compute_gradients(images, labels):
        images = tf.image.random_flip_left_right(images)
        with tf.GradientTape() as tape:
            loss = loss_fn(labels, model(images, training=True))
        return tape.gradient(loss, model.trainable_variables)
    ```
    """

    code = "TAP106"
    name = "unrelated-work-in-tape"
    severity = Severity.WARNING
    preview = True

    def check(self, model: FileModel) -> Iterator[Finding]:
        names: dict[cst.With, list[str]] = {}
        for tape in model.tapes:
            for block in tape.blocks:
                names.setdefault(block, []).append(f"`{tape_label(tape, 'tape')}`")
        for block, entered in names.items():
            statement = unrelated_work(model, block)
            if statement is None:
                continue
            yield Finding(
                statement,
                f"`{source_of(model, statement)}` inside the block of {', '.join(entered)} does "
                "not depend on anything the tape watches; move it before the `with` block",
            )
