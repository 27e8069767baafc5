from collections.abc import Iterator

from tapelint.findings.diagnostics import Severity
from tapelint.findings.rule import Finding, Rule, source_of, tape_label
from tapelint.semantic import FileModel

from ._losses_in_target import ignored_regularization


class RegularizationLossesIgnored(Rule):
    """## What it does
    Checks for a custom training step whose tape trains a Keras model or layer with
    regularization losses, while the loss it differentiates never adds `model.losses`.

    Reported at the gradient call, only when this file (or the project's module that
    builds the model) shows both:

    - that a model whose variables are the call's sources (`model.trainable_variables`,
      also through aliases of that list) has regularization losses: a layer built with
      `kernel_regularizer=`, `bias_regularizer=`, `activity_regularizer=` (or another
      `*_regularizer=`) given a certain regularizer (`regularizers.l2(1e-4)`, `"l2"`, a
      name bound to one; not `None`, a zero factor, or a value that may be `None`), an
      `ActivityRegularization` layer, a class whose code calls `self.add_loss(...)`, or
      a model the module calls `.add_loss(...)` on;
    - that the target certainly does not depend on `model.losses`: it is followed back
      through the names it is computed from, and everything on the way is the model's
      output, a Keras loss, a TensorFlow op, arithmetic, a parameter, or a function that
      cannot reach the model.

    Not flagged: a target that reads `losses` anywhere on the way (`sum(model.losses)`,
    `tf.add_n(model.losses)`, `self.losses` in a `train_step`, a name bound to them); a
    `train_step` that calls `self.compute_loss(...)` or `self.compiled_loss(...)` (Keras
    3 adds `self.losses` in both; Keras 2 in `compute_loss`, and in `compiled_loss` when
    given `regularization_losses=self.losses`: any method of the model is left alone);
    a penalty written by hand (`tf.nn.l2_loss` over the weights, any read of
    `trainable_variables` or `kernel`, a term named like `reg_loss` or `weight_decay`),
    which may be the same regularization; for a model whose only losses come from
    `add_loss`, any loss made of two terms (a VAE's KL term computed by hand); a loss from
    a method of an object, from a function passed in as a parameter, or from a helper
    handed the model, any of which may add them; a model whose composition is not known
    (passed in, loaded, built by code this file does not show), and a regularizer whose
    weight is frozen (`trainable=False`: Keras counts only trainable weights' penalties).

    This rule is in preview: select it with `--select TAP304` or `--preview`.

    ## Why is this bad?
    `model.fit` adds the model's regularization losses to the loss it minimises. A
    hand-written step with `tf.GradientTape` does not: the losses are only listed in
    `model.losses`, and nothing adds them unless the step does. The penalties the model
    was built with are silently ignored; the model trains without weight decay or
    activity regularization, and nothing fails.

    ## Example
    ```python
    import tensorflow as tf
    from tensorflow import keras

    model = keras.Sequential([
        keras.layers.Dense(64, activation="relu", kernel_regularizer=keras.regularizers.l2(1e-4)),
        keras.layers.Dense(10),
    ])
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)


    def compute_gradients(x, y):
        with tf.GradientTape() as tape:
            logits = model(x, training=True)
            loss = loss_fn(y, logits)
        return tape.gradient(loss, model.trainable_variables)
    ```

    Use instead:
    ```python
    import tensorflow as tf
    from tensorflow import keras

    model = keras.Sequential([
        keras.layers.Dense(64, activation="relu", kernel_regularizer=keras.regularizers.l2(1e-4)),
        keras.layers.Dense(10),
    ])
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)


    def compute_gradients(x, y):
        with tf.GradientTape() as tape:
            logits = model(x, training=True)
            loss = loss_fn(y, logits) + tf.add_n(model.losses)
        return tape.gradient(loss, model.trainable_variables)
    ```
    """

    code = "TAP304"
    name = "regularization-losses-ignored"
    severity = Severity.WARNING
    preview = True

    def check(self, model: FileModel) -> Iterator[Finding]:
        for found in ignored_regularization(model):
            tape = tape_label(found.call.tape, "tape")
            part = found.part if "`" in found.part else f"`{found.part}`"
            yield Finding(
                found.call.node,
                f"`{tape}.{found.call.method}` trains `{found.owner}`, whose {part} "
                f"adds regularization losses to `{found.owner}.losses`, but its target "
                f"`{source_of(model, found.target)}` never adds them, so the regularization "
                f"is silently ignored; add `tf.add_n({found.owner}.losses)` to the loss "
                "inside the tape's block",
            )
