"""Does a Keras model or layer certainly compute something different in training?

`training=` only changes what runs when the callee is, or contains, a layer that reads it.
Checked in Keras 3 (3.15, by running each layer with `training=True` and `False`): dropout
and noise (`Dropout`, `SpatialDropout1D/2D/3D`, `GaussianDropout`, `GaussianNoise`,
`AlphaDropout`), `BatchNormalization`, `SpectralNormalization`, random augmentation
(`Random*`, `AugMix`, `CutMix`, `MixUp`, `RandAugment`), and recurrent and attention layers
built with a nonzero `dropout=` / `recurrent_dropout=`. `LayerNormalization`,
`GroupNormalization`, `UnitNormalization`, `Dense`, `Conv2D`, `Embedding`, an `LSTM` or a
`MultiHeadAttention` without dropout compute the same either way. A `training` given to an
outer layer reaches the layers it calls even when its `call` takes no `training` parameter
(Keras keeps it in the call context).

The answer is the name of one such part, or None when the callee is not certainly
training-sensitive: its composition is unknown (a parameter, a loaded model, a layer taken
out of a model) or known to be insensitive. The walk over a model's parts is
`keras_composition`'s; what is particular to this question:

- `keras.applications` models all contain batch normalisation except `VGG16`, `VGG19` and
  the `ConvNeXt` family (layer normalisation, no stochastic depth by default). One built
  with pretrained weights (`weights=` anything but `None`; the default is `"imagenet"`)
  does not count: Keras' transfer-learning guide recommends keeping a pretrained model's
  batch normalisation in inference mode while fine-tuning, which is what a call without
  `training=` does, so "pass `training=True`" would be the wrong advice there. (The dropout
  some families add, EfficientNet's stochastic depth and MobileNet's classification top,
  then does not run either; advice that turned it on would also unfreeze the batch
  statistics, so it is left alone too);
- a sub-model called in a functional model's graph with an explicit `training=` keeps that
  mode and does not count;
- an instance of a class of this file is training-sensitive when its `__init__` or `build`
  creates a training-sensitive part, or when its `call` takes `training` and decides
  something with it (`if training:`); forwarding it as `layer(x, training=training)` counts
  only through what `layer` is. A class that overrides `__call__` has its own protocol:
  Keras' training handling never runs, and it is reported only when that `__call__` takes
  `training` and uses it. A class whose `call` (or own `__call__`) defaults `training=True`
  trains when called without the flag, and does not count (first look: GANs and MixMatch
  written that way).
"""

from __future__ import annotations

import ast

import libcst as cst

from tapelint.semantic.file_model.expressions import argument_value, is_none
from tapelint.semantic.keras.keras_composition import CompositionSearch, is_zero
from tapelint.semantic.keras.keras_objects import Origin

STATELESS_TRAINING_LAYERS = frozenset(
    {
        "Dropout",
        "SpatialDropout1D",
        "SpatialDropout2D",
        "SpatialDropout3D",
        "GaussianDropout",
        "GaussianNoise",
        "AlphaDropout",
        "AugMix",
        "CutMix",
        "MixUp",
        "RandAugment",
    }
)
_STATEFUL_TRAINING_LAYERS = frozenset(
    {"BatchNormalization", "SyncBatchNormalization", "SpectralNormalization"}
)
# keras.applications models without batch normalisation or dropout by default.
INSENSITIVE_APPLICATIONS = ("VGG16", "VGG19", "ConvNeXt")
USES_TRAINING = "its `call` (which reads `training`)"


def is_stateless_training_layer(qualified: str) -> bool:
    """A built-in layer without variables whose output depends on `training`."""
    name = qualified.rsplit(".", 1)[-1]
    return name in STATELESS_TRAINING_LAYERS or name.startswith("Random")


def random_part(name: str, call: cst.Call) -> str | None:
    """The built-in layer `name`, built by `call`, draws random numbers in training: dropout,
    noise or augmentation with a nonzero rate, or a nonzero `dropout=` / `recurrent_dropout=`
    of a recurrent or attention layer. The part's name, or None."""
    if is_stateless_training_layer(name):
        rate = argument_value(call, 0, "stddev" if name == "GaussianNoise" else "rate")
        return None if rate is not None and is_zero(rate) else name
    for arg in call.args:
        keyword = arg.keyword.value if arg.keyword is not None else ""
        if keyword.endswith("dropout") and not is_zero(arg.value):
            return f"{name}({keyword}=...)"
    return None


class TrainingSensitivity(CompositionSearch):
    """Answers, with memory, for one file."""

    def built_in_layer(self, name: str, call: cst.Call) -> str | None:
        return name if name in _STATEFUL_TRAINING_LAYERS else random_part(name, call)

    def application(self, name: str, call: cst.Call) -> str | None:
        if name.startswith(INSENSITIVE_APPLICATIONS):
            return None
        return None if _pretrained(call) else name

    def built(self, origin: Origin) -> str | None:
        """What another module's summary says of the object it builds."""
        return origin.built.training_part if origin.built is not None else None

    def counts_call(self, call: cst.Call) -> bool:
        """A sub-model called with an explicit `training=` keeps that mode."""
        return not any(
            arg.keyword is not None and arg.keyword.value == "training" for arg in call.args
        )

    def class_answer(self, class_name: str, methods: dict[str, ast.FunctionDef]) -> str | None:
        own_call = methods.get("__call__")
        if own_call is not None and not _mentions_training(own_call):
            # Its own protocol: the layers it calls get `training` only from it.
            return None
        if _defaults_to_training(own_call or methods.get("call")):
            # Called without `training=`, Keras passes the signature's default: it trains.
            return None
        found = self.parts_created(class_name, methods)
        if found:
            return found
        forward = own_call or methods.get("call")
        if forward is not None and _reads_training(forward):
            return USES_TRAINING
        return None


def _pretrained(call: cst.Call) -> bool:
    """An application built with pretrained weights: `weights=` is not written `None` (its
    default is `"imagenet"`; a path or another name loads weights too)."""
    # By keyword only: the position of `weights` differs from family to family.
    weights = argument_value(call, -1, "weights")
    return weights is None or not is_none(weights)


def _defaults_to_training(function: ast.FunctionDef | None) -> bool:
    """`def call(self, inputs, training=True)`: a call that leaves `training` out runs the
    training branch (Keras 3 fills a missing `training` from the signature's default, as
    measured on TensorFlow 2.21: batch normalisation then updates its moving statistics)."""
    if function is None:
        return False
    arguments = function.args
    positional = [*arguments.posonlyargs, *arguments.args]
    defaults = dict(
        zip(
            positional[len(positional) - len(arguments.defaults) :], arguments.defaults, strict=True
        )
    )
    defaults.update(
        (a, d)
        for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True)
        if d is not None
    )
    return any(
        a.arg == "training" and isinstance(d, ast.Constant) and d.value is True
        for a, d in defaults.items()
    )


def _has_parameter(function: ast.FunctionDef, name: str) -> bool:
    arguments = function.args
    return any(
        a.arg == name for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)
    )


def _mentions_training(function: ast.FunctionDef) -> bool:
    """The function takes `training` and reads it in any way."""
    return _has_parameter(function, "training") and any(
        isinstance(node, ast.Name) and node.id == "training" and isinstance(node.ctx, ast.Load)
        for statement in function.body
        for node in ast.walk(statement)
    )


def _reads_training(function: ast.FunctionDef) -> bool:
    """The function takes `training` and decides something with it: branches on it, or
    hands it to a function positionally (`tf.cond`, `in_train_phase`). Handing it on as
    `layer(x, training=training)` does not count by itself: whether that layer reads it is
    what its construction says."""
    if not _has_parameter(function, "training"):
        return False
    forwarded = {
        id(node.value)
        for statement in function.body
        for node in ast.walk(statement)
        if isinstance(node, ast.keyword) and node.arg == "training"
    }
    return any(
        isinstance(node, ast.Name)
        and node.id == "training"
        and isinstance(node.ctx, ast.Load)
        and id(node) not in forwarded
        for statement in function.body
        for node in ast.walk(statement)
    )
