from collections.abc import Iterator

from tapelint.findings.diagnostics import Severity
from tapelint.findings.rule import Finding, Rule, source_of
from tapelint.semantic import FileModel
from tapelint.semantic.keras.keras_objects import KerasObjects, all_variables_in_sources
from tapelint.semantic.keras.keras_state import NonTrainableState


class GradientWrtAllVariables(Rule):
    """## What it does
    Checks for gradient sources written as `model.variables` / `model.weights` (or a layer's)
    where the model or layer is known to be a Keras one: built with a Keras constructor in
    this file (directly or by a function of the file that returns it, also in an earlier
    notebook cell), built by a function of another module of the project that returns it
    (`model = build_model()` with `build_model` imported from `models.py`), an instance of a
    Keras subclass defined here, `self` inside such a class, or a parameter annotated as a
    Keras model or layer. So is `self.encoder` when every assignment to it in the class
    gives one (`self.encoder = keras.Sequential(...)` in `__init__`). Only when the model or
    layer is known to hold non-trainable state in the list written: batch normalisation,
    `Normalization`, a layer built with `trainable=False`, a part frozen with
    `.trainable = False`, `add_weight(..., trainable=False)`, a `keras.applications` model
    with batch normalisation, or, for `variables` only (Keras 3), a dropout, noise or
    random-augmentation layer, whose seed generator state is a non-trainable variable that
    `weights` leaves out.

    Gradients taken for `model.variables` and zipped with `model.trainable_variables` are
    reported here, at the sources: they are what must change (the gradients of the
    non-trainable variables are None, and the pairing is out of step until the sources are
    the trainable list). The other way round, gradients of `trainable_variables` zipped with
    `variables`, is TAP402's: there the apply is what must change.

    ## Why is this bad?
    `variables` and `weights` include non-trainable state: BatchNormalization moving
    statistics, the weights of frozen layers, counters. The tape does not watch
    non-trainable variables, so their gradients are `None` (measured on TensorFlow 2.21:
    `moving_mean` and `moving_variance` come back `None`); an optimizer then warns, fails, or
    is given state it must never update. `trainable_variables` is what was meant.

    Not reported: `trainable_variables` / `trainable_weights`; `variables` of an object not
    known to be a Keras model or layer (`tf.Module.variables` and a hand-written
    `self.weights = [w, b]` list are common and hold what their author put there); a model
    made only of layers without non-trainable state (`Dense`, `Reshape`,
    `LayerNormalization`), or whose parts no module shows (loaded, passed in, returned by a
    function that hands back what it was given), where `variables` equals
    `trainable_variables` or may; `weights` of a model whose only such state is dropout's
    seed.

    ## Example
    ```python
    import tensorflow as tf
    from tensorflow import keras

    model = keras.Sequential([
        keras.layers.Dense(8),
        keras.layers.BatchNormalization(),
        keras.layers.Dense(1),
    ])
    loss_fn = keras.losses.MeanSquaredError()


    def compute_gradients(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        return tape.gradient(loss, model.variables)
    ```

    Use instead:
    ```python
    import tensorflow as tf
    from tensorflow import keras

    model = keras.Sequential([
        keras.layers.Dense(8),
        keras.layers.BatchNormalization(),
        keras.layers.Dense(1),
    ])
    loss_fn = keras.losses.MeanSquaredError()


    def compute_gradients(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        return tape.gradient(loss, model.trainable_variables)
    ```

    ## Fix safety
    No automatic fix. Replacing the sources alone changes how many gradients come back, and
    `model.variables` lists each layer's variables in turn, trainable and not, so code that
    still zips the gradients with `model.variables` would pair them with the wrong variables
    as soon as a non-trainable one comes before a trainable one (two BatchNormalization
    layers). The sources and every place that pairs them must change together.
    """

    code = "TAP203"
    name = "gradient-wrt-all-variables"
    severity = Severity.WARNING

    def check(self, model: FileModel) -> Iterator[Finding]:
        keras = KerasObjects(model)
        states = {listed: NonTrainableState(keras, listed) for listed in ("variables", "weights")}
        for call in model.gradient_calls:
            for node, attribute in all_variables_in_sources(model, keras, call):
                written = attribute.attr.value
                part = states[written].of(attribute.value)
                if part is None:
                    continue
                owner = source_of(model, attribute.value)
                yield Finding(
                    node,
                    f"`{owner}.{written}` includes non-trainable variables ({part}), whose "
                    f"gradients are None; differentiate with respect to "
                    f"`{owner}.trainable_{written}`",
                )
