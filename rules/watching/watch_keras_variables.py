from collections.abc import Iterator

from tapelint.findings.diagnostics import Severity
from tapelint.findings.rule import Finding, Rule, source_of
from tapelint.semantic import FileModel, Tri
from tapelint.semantic.flow.watching import watched_argument
from tapelint.semantic.keras.keras_objects import KerasObjects, uses_legacy_keras


class WatchKerasVariables(Rule):
    """## What it does
    Checks for `tape.watch(...)` given Keras variables: `model.trainable_variables` (or
    `variables`, `weights`, ...) of a known Keras model or layer, a built-in layer's `kernel`
    or `bias`, `keras.Variable(...)`, `layer.add_weight(...)`, or a list, slice or element of
    any of them. Known Keras models and layers are those of TAP203 (gradient-wrt-all-variables):
    made by a Keras constructor or a Keras subclass of this file, `self` in such a class,
    `self.encoder` assigned one, a parameter annotated as one.

    ## Why is this bad?
    Since TensorFlow 2.16 `tf.keras` is Keras 3, whose `keras.Variable` is not a
    `tf.Variable`. `watch` accepts only tensors and `tf.Variable`s and raises
    `ValueError: Passed in object <Variable ...> of type 'Variable', not tf.Tensor or
    tf.Variable or ExtensionType.` (measured on TensorFlow 2.21 with Keras 3.15, for
    `model.trainable_variables`, `layer.kernel`, a list and a tuple of them). Examples of
    `watch_accessed_variables=False` written for Keras 2 do exactly this. (Before a model is built
    its variable list is empty, so `watch` raises nothing and watches nothing; with
    `watch_accessed_variables=False` every gradient is then None. Both are this mistake.)

    Not reported: watching tensors or `tf.Variable(...)`s; objects not known to be Keras
    models or layers; files that use legacy Keras 2 (`tf_keras`, `TF_USE_LEGACY_KERAS`),
    whose variables are `tf.Variable`s.

    ## Example
    ```python
    import tensorflow as tf
    from tensorflow import keras

    model = keras.Sequential([keras.layers.Dense(1)])
    loss_fn = keras.losses.MeanSquaredError()


    def compute_gradients(x, y):
        with tf.GradientTape(watch_accessed_variables=False) as tape:
            tape.watch(model.trainable_variables)
            loss = loss_fn(y, model(x, training=True))
        return tape.gradient(loss, model.trainable_variables)
    ```

    Use instead (a tape watches the trainable variables it accesses by default):
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

    or, to keep watching only these variables, watch their backing `tf.Variable`s (the model
    must be built by then: an unbuilt model has no variables yet, and the list is empty):
    ```python
    import tensorflow as tf
    from tensorflow import keras

    model = keras.Sequential([keras.layers.Dense(1)])
    loss_fn = keras.losses.MeanSquaredError()


    def compute_gradients(x, y):
        model.build(x.shape)
        with tf.GradientTape(watch_accessed_variables=False) as tape:
            tape.watch([v.value for v in model.trainable_variables])
            loss = loss_fn(y, model(x, training=True))
        return tape.gradient(loss, model.trainable_variables)
    ```
    """

    code = "TAP204"
    name = "watch-keras-variables"
    severity = Severity.ERROR

    def check(self, model: FileModel) -> Iterator[Finding]:
        if uses_legacy_keras(model):
            return
        keras = KerasObjects(model)
        for call in model.tape_calls:
            if call.method != "watch":
                continue
            argument = watched_argument(call)
            if argument is None or keras.holds_keras_variables(argument) is not Tri.YES:
                continue
            shown = source_of(model, argument, 40)
            yield Finding(
                call.node,
                f"`{shown}` is or holds Keras variables, which are not `tf.Variable`s: `watch` "
                "raises ValueError; let the tape watch the variables it accesses, or watch "
                "`[v.value for v in ...]` of the built model",
            )
