from collections.abc import Iterator

from tapelint.findings.diagnostics import Severity
from tapelint.findings.rule import Finding, Rule, source_of
from tapelint.semantic import FileModel

from ._optimizer_variables import NewVariables, new_variables


class OptimizerVariablesChanged(Rule):
    """## What it does
    Checks for a Keras 3 optimizer that has updated one set of variables and is then
    handed another: a second model trained with the same optimizer object (in a later
    notebook cell, after the first model's training, or in a loop over models), or a model
    whose frozen part is unfrozen (`base.trainable = True`) after the optimizer's first
    updates. Reported at the update that brings the new variables: the
    `apply_gradients` / `apply` call, or the call of your function that makes it
    (`train(model_b, optimizer)`).

    Reported only when each step is certain: the optimizer is a name bound once to a Keras
    3 optimizer's constructor (`keras.optimizers.Adam(...)`, `tf.keras.optimizers.SGD(...)`)
    that reaches both updates; the first update runs before the second whenever the code
    runs (not under an `if`, `while` or `try` of its own); the two models are built
    separately (each bound once to a Keras constructor or builder, neither construction
    naming the other, so neither is a part of the other, and a builder of the file that
    may hand out an existing model, decorated, with `global` or returning a module-level
    name, makes no second model); an unfrozen part was frozen at the optimizer's first
    update, by `part.trainable = False` or `trainable=False`, and is the
    model itself, `model.layers[i]`, `model.get_layer(...)` or a layer the model's
    construction uses. Unfreezing inside the epoch loop counts when it sits under
    `if epoch == K` (`>=`, `>`) with `K` above zero and the loop counts epochs from zero,
    so the first epochs update the frozen set.

    Not reported: a new optimizer for each model (made per cell, or inside the loop); an
    optimizer that the file builds (`optimizer.build(...)`) or hands to `compile(...)`;
    files using legacy Keras 2 (`tf_keras`, `TF_USE_LEGACY_KERAS`) and TensorFlow Addons'
    optimizers; a model made inside the loop around the update while the optimizer
    persists (TAP502 reports that); updates of fewer variables than before (Keras accepts
    a subset); anything the analysis cannot pin down (attributes, a model handed in as a
    parameter, `models[i]`).

    This rule is in preview: select it with `--select TAP404` or `--preview`.

    ## Why is this bad?
    A Keras 3 optimizer creates its slots for the variables of its first update and
    accepts no others afterwards: the second model's first step raises `ValueError:
    Unknown variable ... This optimizer can only be called for the variables it was
    originally built with` (measured on TensorFlow 2.21 with Keras 3.15). Calling
    `optimizer.build(...)` on an optimizer that has already updated does not help: it is
    built already, and the next update raises all the same. Unfreezing raises the same way
    at the first step after it, typically many epochs into a run.

    ## Example
    ```python
    import keras
    import tensorflow as tf

    base = keras.applications.MobileNetV2(include_top=False, pooling="avg")
    base.trainable = False
    model = keras.Sequential([base, keras.layers.Dense(10)])
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    images, labels = tf.random.normal((8, 224, 224, 3)), tf.zeros((8,), tf.int32)


    def train(model, optimizer, epochs):
        for _ in range(epochs):
            with tf.GradientTape() as tape:
                loss = loss_fn(labels, model(images, training=True))
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))


    optimizer = keras.optimizers.Adam(1e-3)
    train(model, optimizer, epochs=5)
    base.trainable = True
    train(model, optimizer, epochs=5)
    ```

    Use instead:
    ```python
    import keras
    import tensorflow as tf

    base = keras.applications.MobileNetV2(include_top=False, pooling="avg")
    base.trainable = False
    model = keras.Sequential([base, keras.layers.Dense(10)])
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    images, labels = tf.random.normal((8, 224, 224, 3)), tf.zeros((8,), tf.int32)


    def train(model, optimizer, epochs):
        for _ in range(epochs):
            with tf.GradientTape() as tape:
                loss = loss_fn(labels, model(images, training=True))
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(
                [(g, v) for g, v in zip(grads, model.trainable_variables) if g is not None]
            )


    train(model, keras.optimizers.Adam(1e-3), epochs=5)
    base.trainable = True
    train(model, keras.optimizers.Adam(1e-5), epochs=5)
    ```
    """

    code = "TAP404"
    name = "optimizer-variables-changed"
    severity = Severity.ERROR
    preview = True
    triggers = ("GradientTape", "apply_gradients")

    def check(self, model: FileModel) -> Iterator[Finding]:
        for found in new_variables(model):
            yield Finding(found.update.node, self._message(model, found))

    @staticmethod
    def _message(model: FileModel, found: NewVariables) -> str:
        optimizer = found.update.optimizer.name
        owner = found.update.owner.value
        if found.kind == "unfrozen":
            part = source_of(model, found.statement) if found.statement is not None else ""
            return (
                f"`{optimizer}` was built for the variables of `{owner}` while "
                f"`{found.earlier}` was frozen, and Keras 3 refuses the ones `{part}` adds "
                f"(`ValueError: Unknown variable`); make a new optimizer after unfreezing"
            )
        if found.kind == "loop":
            return (
                f"the loop hands `{optimizer}` the variables of one model after another, and "
                f"after `{found.earlier}` Keras 3 refuses the next model's (`ValueError: "
                f"Unknown variable`); make the optimizer inside the loop, one per model"
            )
        earlier = f"`{found.earlier}`"
        if found.earlier == owner:
            earlier = f"the model bound to `{owner}` before"
        return (
            f"`{optimizer}` already updated the variables of {earlier}, and Keras 3 refuses "
            f"those of `{owner}` (`ValueError: Unknown variable`); make a new optimizer for "
            f"`{owner}`"
        )
