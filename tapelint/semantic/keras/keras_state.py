"""Does a Keras model or layer certainly hold non-trainable variables?

`model.variables` equals `model.trainable_variables` unless some part holds non-trainable
state, so taking gradients with respect to `variables` only yields None gradients when one
does. Measured in Keras 3.15 (each layer built, then its `non_trainable_variables` listed):

- batch normalisation (`moving_mean`, `moving_variance`), `SpectralNormalization`
  (`vector_u`), `Normalization` (`mean`, `variance`, `count`);
- every layer that draws random numbers keeps a seed generator's state as a non-trainable
  variable: dropout and noise layers, random augmentation, recurrent and attention layers
  built with a nonzero `dropout=`. That state is listed in `variables` but not in
  `weights` (Keras 3's `Layer.weights` leaves seed generators and metrics out), and legacy
  Keras 2 (`tf_keras`) has no such variable, so these count only for `variables`, in files
  that do not use it;
- a layer built with `trainable=False`, a part frozen with `part.trainable = False`
  (a fine-tuning backbone, `for layer in base.layers[:k]: layer.trainable = False`), and a
  class of the file whose `__init__`/`build` creates such a part or calls
  `add_weight(..., trainable=False)`;
- every `keras.applications` model except `VGG16`, `VGG19` and the `ConvNeXt` family
  (batch normalisation);
- what a function of another module of the project builds, as its summary says
  (`summaries.Built`, computed there with this same search).

`Dense`, `Conv2D`, `Embedding`, `LayerNormalization`, `GroupNormalization`, `Reshape` and
the like hold trainable weights only. The walk over a model's composition is
`keras_composition`'s.
"""

from __future__ import annotations

import ast
import re

import libcst as cst

from tapelint.semantic.file_model.expressions import argument_value
from tapelint.semantic.keras.keras_composition import CompositionSearch, calls_in
from tapelint.semantic.keras.keras_objects import KerasObjects, Origin, uses_legacy_keras
from tapelint.semantic.keras.keras_training import INSENSITIVE_APPLICATIONS, random_part

_STATE_LAYERS = frozenset(
    {
        "BatchNormalization",
        "SyncBatchNormalization",
        "SpectralNormalization",
        "Normalization",
    }
)
FROZEN = "a part set to `trainable = False`"
# Words without which a module's text holds none of the evidence above: the layers with
# state (`..Normalization`), randomness (dropout, noise, `Random...` augmentation, a
# `dropout=` argument), `trainable=False` in any form, `keras.applications`. A superset,
# tested on the raw bytes before a module is parsed for what its builders build.
_EVIDENCE_WORDS = re.compile(
    rb"Normalization|trainable\s*=\s*False|applications|Dropout|dropout\s*=|Noise"
    rb"|Random[A-Z]|AugMix|CutMix|MixUp|RandAugment"
)


def may_show_state(data: bytes) -> bool:
    """Whether a module's text may show a part with non-trainable state (a superset)."""
    return _EVIDENCE_WORDS.search(data) is not None


class NonTrainableState(CompositionSearch):
    """Answers, with memory, for one file and one list: `listed` is the attribute that
    lists the variables, `"variables"` (seed generator state included) or `"weights"`."""

    def __init__(self, keras: KerasObjects, listed: str = "variables") -> None:
        super().__init__(keras)
        self._listed = listed
        self._seeded = listed == "variables" and not uses_legacy_keras(keras.model)
        self._frozen: frozenset[str] | None = None

    def of_seen(self, expr: cst.BaseExpression, seen: set[cst.CSTNode]) -> str | None:
        if self._frozen is None:
            self._frozen = _frozen_names(self.model.text_tree())
        if isinstance(expr, cst.Name) and expr.value in self._frozen:
            return FROZEN
        return super().of_seen(expr, seen)

    def built_in_layer(self, name: str, call: cst.Call) -> str | None:
        trainable = argument_value(call, -1, "trainable")
        if isinstance(trainable, cst.Name) and trainable.value == "False":
            return f"{name}(trainable=False)"
        if name in _STATE_LAYERS:
            return name
        return random_part(name, call) if self._seeded else None

    def built(self, origin: Origin) -> str | None:
        made = origin.built
        if made is None:
            return None
        part = made.in_variables if self._listed == "variables" else made.in_weights
        function = (origin.keras_class or "").rsplit(".", 1)[-1]
        kind = "model" if origin.is_model else "layer"
        if part is None:
            return None
        if made.of_class:
            return f"{part} in an instance of `{function}`"
        return f"{part} in the {kind} `{function}` returns"

    def application(self, name: str, call: cst.Call) -> str | None:
        return None if name.startswith(INSENSITIVE_APPLICATIONS) else name

    def class_answer(self, class_name: str, methods: dict[str, ast.FunctionDef]) -> str | None:
        for name in ("__init__", "build"):
            method = methods.get(name)
            if method is not None and _creates_non_trainable(method):
                return f"`{class_name}`'s non-trainable weights"
        return self.parts_created(class_name, methods)


def _creates_non_trainable(method: ast.FunctionDef) -> bool:
    """`self.add_weight(..., trainable=False)` or `self.part.trainable = False`."""
    for call in calls_in(method):
        if isinstance(call.func, ast.Attribute) and call.func.attr in ("add_weight", "Variable"):
            for keyword in call.keywords:
                if keyword.arg == "trainable" and _is_false(keyword.value):
                    return True
    return any(
        isinstance(node, ast.Assign)
        and _is_false(node.value)
        and any(isinstance(t, ast.Attribute) and t.attr == "trainable" for t in node.targets)
        for node in ast.walk(method)
    )


def _is_false(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is False


def _frozen_names(tree: ast.Module | None) -> frozenset[str]:
    """Names of the parts this module freezes: `X.trainable = False` freezes `X`; in
    `for layer in X.layers[...]: layer.trainable = False` it freezes part of `X`."""
    frozen: set[str] = set()
    loops: dict[str, str] = {}
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.For) and isinstance(node.target, ast.Name):
            owner = _layers_owner(node.iter)
            if owner is not None:
                loops[node.target.id] = owner
        if not (isinstance(node, ast.Assign) and _is_false(node.value)):
            continue
        for target in node.targets:
            if (
                isinstance(target, ast.Attribute)
                and target.attr == "trainable"
                and isinstance(target.value, ast.Name)
            ):
                frozen.add(target.value.id)
    return frozenset(loops.get(name, name) for name in frozen) | frozen


def _layers_owner(node: ast.expr) -> str | None:
    """`X` in `X.layers` or `X.layers[:k]`."""
    if isinstance(node, ast.Subscript):
        node = node.value
    if (
        isinstance(node, ast.Attribute)
        and node.attr == "layers"
        and isinstance(node.value, ast.Name)
    ):
        return node.value.id
    return None
