from collections.abc import Iterator

from tapelint.findings.diagnostics import Severity
from tapelint.findings.rule import Finding, Rule, tape_label
from tapelint.semantic import FileModel
from tapelint.semantic.keras.keras_training import USES_TRAINING

from ._keras_calls import calls_without_training


class MissingTrainingFlag(Rule):
    """## What it does
    Checks for a Keras model or layer with dropout, batch normalisation or another part that
    reads `training`, called inside a tape's recording block without `training=`.

    Reported only when the project shows both that the callee is a Keras model or layer and
    that it computes something different in training, so that the flag changes what runs
    (this file, or the module whose builder function or Keras subclass made it):

    - a built-in layer that reads `training`: `Dropout`, `SpatialDropout1D/2D/3D`,
      `GaussianDropout`, `GaussianNoise`, `AlphaDropout`, `BatchNormalization`,
      `SpectralNormalization`, random augmentation (`RandomFlip`, ...), and recurrent or
      attention layers built with a nonzero `dropout=` / `recurrent_dropout=`
      (`Bidirectional` and `TimeDistributed` as the layer they wrap);
    - a `keras.applications` model trained from scratch (`weights=None`; batch
      normalisation inside; not `VGG16`/`VGG19` or the `ConvNeXt` family, which have none);
    - a `keras.Sequential` of such layers (also grown with `.add()`), or a functional
      `keras.Model(inputs, outputs)` whose outputs are computed with one;
    - an instance of a class of this file (or `self` in one, or `self.encoder` assigned
      one) whose `__init__` or `build` creates such a part, or whose `call` takes
      `training` and decides something with it (`if training:`; handing it on as
      `layer(x, training=training)` counts through what `layer` is), also a class or a
    builder function that another module of the project defines and that module shows
    to hold such a part (`self.generator = Generator(128)` imported from
    `generator.py`); layer names bound by `from tensorflow.keras.layers import *` are
    Keras layers. Keras hands the
      outer call's `training` on to the layers `call` uses even when `call` takes no
      `training` parameter, so those count too.

    Only models the tape trains are checked: their variables (or those of the model they
    are stored on, for `self.encoder`) are the sources of one of its gradient calls. Dropout
    and noise layers, which have no variables, are checked in any tape that trains a model.
    The sources are followed through aliases of variable lists: a name
    (`w = self.student.trainable_weights`, `params = list(student.trainable_weights)`, a
    literal tuple unpacked), a slice, and an attribute that every assignment of the class
    binds to such a list (`self.student_weights = self.student.trainable_weights` in
    `__init__`): then the student is what is trained, not every model on `self`, and a
    teacher called in the same block stays in inference mode unreported.

    Not flagged: a model or layer that computes the same either way (`Dense`, `Conv2D`,
    `LayerNormalization`, an `LSTM` without dropout, a custom layer that only holds
    weights), however it is written; a class of this file that overrides `__call__`
    without a `training` parameter it uses (its own protocol, where `training=` may be a
    TypeError), and a call passing a flag of its own that says training
    (`net(x, is_training=True)`); a call
    that passes `training=` (also `training=False`), `**kwargs`, or a second positional
    argument; a model passed in as a parameter (unless every caller in the file passes one
    known model), loaded, or built from parts that no module it reaches shows; a
    sub-model called with an explicit `training=` when a functional model was built
    (`base(inputs, training=False)` stays in inference mode whatever the outer call says);
    a `keras.applications` model with pretrained weights (the default `weights="imagenet"`),
    whose batch normalisation Keras' transfer-learning guide recommends keeping in inference
    mode while fine-tuning; models the tape does not train (a target network, a
    distillation teacher, a frozen feature extractor, and every model in a tape that
    differentiates with respect to its inputs: saliency maps, integrated gradients,
    adversarial examples), which run in inference mode on purpose; calls under
    `tape.stop_recording()`.

    ## Why is this bad?
    Without `training=True`, a model called directly runs its dropout and batch
    normalisation layers in inference mode: no dropout, and batch statistics that are neither
    used nor updated. The step trains a different network than the one you meant, and nothing
    fails. The message names the part that runs in inference mode (`Dropout`,
    `BatchNormalization`, or a `call` that reads `training`).

    ## Example
    ```python
    import tensorflow as tf
    from tensorflow import keras

    model = keras.Sequential([
        keras.layers.Dense(256, activation="relu"),
        keras.layers.Dropout(0.5),
        keras.layers.Dense(10),
    ])
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)


    def compute_gradients(x, y):
        with tf.GradientTape() as tape:
            logits = model(x)
            loss = loss_fn(y, logits)
        return tape.gradient(loss, model.trainable_variables)
    ```

    Use instead:
    ```python
    import tensorflow as tf
    from tensorflow import keras

    model = keras.Sequential([
        keras.layers.Dense(256, activation="relu"),
        keras.layers.Dropout(0.5),
        keras.layers.Dense(10),
    ])
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)


    def compute_gradients(x, y):
        with tf.GradientTape() as tape:
            logits = model(x, training=True)
            loss = loss_fn(y, logits)
        return tape.gradient(loss, model.trainable_variables)
    ```
    """

    code = "TAP303"
    name = "missing-training-flag"
    severity = Severity.WARNING

    def check(self, model: FileModel) -> Iterator[Finding]:
        for found in calls_without_training(model):
            tape = tape_label(found.tape)
            part = found.sensitive if found.sensitive == USES_TRAINING else f"`{found.sensitive}`"
            yield Finding(
                found.node,
                f"Keras {found.kind} `{found.callee}` is called inside `{tape}`'s block without "
                f"`training=`, so {part} runs in inference mode; pass `training=True`",
            )
