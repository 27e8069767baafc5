from collections.abc import Iterator

from tapelint.analysis import FileModel
from tapelint.analysis.keras_calls import calls_without_training
from tapelint.analysis.keras_training import USES_TRAINING
from tapelint.diagnostics import Severity
from tapelint.rule import Finding, Rule, tape_label


class MissingTrainingFlag(Rule):
    """## What it does
    Checks for a Keras model or layer called inside a tape's recording block without
    `training=`. Only callees this file shows to be Keras models or layers are checked: a
    name bound to `keras.Sequential(...)`, `keras.Model(...)`, a `keras.layers` or
    `keras.applications` class, an instance of a class of this file that subclasses
    `keras.Model` or `keras.layers.Layer`, or the result of a function of this file that
    returns one; `self` inside such a class, and `self.encoder` when every assignment to it
    in the class is one of those.

    Only models the tape trains are checked: their variables (or those of the model they
    are stored on, for `self.encoder`) are the sources of one of its gradient calls. Dropout
    and noise layers, which have no variables, are checked in any tape that trains a model.

    Not flagged: a call that passes `training=` (also `training=False`), `**kwargs`, or a
    second positional argument; a model passed in as a parameter or built somewhere this file
    does not show; models the tape does not train (a target network, a distillation teacher,
    a frozen feature extractor, and every model in a tape that differentiates with respect to
    its inputs: saliency maps, integrated gradients, adversarial examples), which run in
    inference mode on purpose; built-in layers that compute the same in training and
    inference (`Dense`, `Conv2D`); calls under `tape.stop_recording()`.

    ## Why is this bad?
    Without `training=True`, a model called directly runs its dropout and batch
    normalisation layers in inference mode: no dropout, and batch statistics that are neither
    used nor updated. The step trains a different network than the one you meant, and nothing
    fails. A model without such layers behaves the same either way today, but stops doing so
    the day one is added.

    ## Example
    ```python
    with tf.GradientTape() as tape:
        logits = model(x)
        loss = loss_fn(y, logits)
    ```

    Use instead:
    ```python
    with tf.GradientTape() as tape:
        logits = model(x, training=True)
        loss = loss_fn(y, logits)
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
