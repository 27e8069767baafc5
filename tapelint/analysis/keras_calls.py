"""Calls of known Keras models and layers made while a tape records, and their `training=`.

Which callees are Keras models or layers, and how they were made, is `keras_objects`'s
answer; this module adds its own question: does the callee behave differently in training?
Only callees made in this file count (`Origin` CONSTRUCTED or SUBCLASS: a Keras constructor,
a builder function of the file, an instance of a Keras subclass of the file, `self` in one,
`self.encoder` assigned one). A model passed in as a parameter (even one annotated
`keras.Model`), a layer taken out of a model (`model.layers[0]`), or a subclass of a
built-in layer could be anything in these terms, and unknown is never reported.

Only calls that train are reported: of a model (or a layer or sub-model stored on one)
whose variables the tape's gradient calls differentiate, or of a built-in layer without
variables whose output depends on `training` (dropout, noise) in a tape that trains some
model. A target network, a distillation teacher or a frozen feature extractor runs in
inference mode on purpose, and so does every model in a tape that differentiates with
respect to inputs (saliency maps, adversarial examples). Built-in layers that compute the
same thing in training and inference (`Dense`, `Conv2D`) are never reported; batch
normalisation and layers built with a nonzero `dropout=` are.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from tapelint.analysis.dataflow import Watched
from tapelint.analysis.keras_objects import (
    LAYER_BASES,
    MODEL_CLASSES,
    How,
    KerasObjects,
    Origin,
    Origins,
)
from tapelint.analysis.model import FileModel, Scope, TapeInstance, is_recording
from tapelint.analysis.names import dotted_name

_STATELESS_TRAINING_LAYERS = frozenset(
    {
        "Dropout",
        "SpatialDropout1D",
        "SpatialDropout2D",
        "SpatialDropout3D",
        "GaussianDropout",
        "GaussianNoise",
        "AlphaDropout",
    }
)
_NORMALIZATION_LAYERS = frozenset({"BatchNormalization", "SyncBatchNormalization"})


@dataclass(frozen=True)
class KerasCall:
    node: cst.Call
    callee: str  # how the callee is spelled: `model`, `self`, `self.encoder`
    kind: str  # "model" or "layer"
    tape: TapeInstance


def calls_without_training(model: FileModel) -> list[KerasCall]:
    """Calls of known Keras models/layers, made while a tape records, without `training=`."""
    found: dict[cst.Call, KerasCall] = {}
    keras = KerasObjects(model)
    trained = {tape: _trained_owners(model, tape) for tape in model.tapes if tape.blocks}
    for tape, call in _recorded_calls(model, trained):
        if call in found or _passes_training(call):
            continue
        kind = _training_kind(keras.origins(call.func))
        # A layer without variables (dropout, noise) is never among the sources, but it is
        # part of what the tape trains.
        if kind == "stateless" or (
            kind in ("model", "layer") and _is_trained(call.func, trained[tape])
        ):
            kind = "layer" if kind == "stateless" else kind
            found[call] = KerasCall(call, dotted_name(call.func) or "", kind, tape)
    return list(found.values())


def _recorded_calls(
    model: FileModel, trained: dict[TapeInstance, frozenset[str]]
) -> Iterator[tuple[TapeInstance, cst.Call]]:
    """Calls of a name or `name.attribute` made while a tape that trains a model records.

    Only statements that read such a name while recording are searched, not whole blocks:
    walking libcst nodes is what costs here."""
    tapes_by_scope: dict[Scope, list[TapeInstance]] = {}
    for tape, owners in trained.items():
        if owners:
            tapes_by_scope.setdefault(tape.scope, []).append(tape)
    if not tapes_by_scope:
        return
    searched: set[tuple[int, int]] = set()
    for use in list(model.uses_by_node.values()):
        tapes = tapes_by_scope.get(use.scope)
        if not tapes or not isinstance(use.node, cst.Name) or use.stmt is None:
            continue
        for tape in tapes:
            if not is_recording(use.ctx, tape) or (id(tape), id(use.stmt)) in searched:
                continue
            searched.add((id(tape), id(use.stmt)))
            for site in model.calls_in(use.stmt):
                call = site.node
                root = _root_name(call.func)
                caller = model.uses_by_node.get(root) if root is not None else None
                if caller is not None and is_recording(caller.ctx, tape):
                    yield tape, call


def _trained_owners(model: FileModel, tape: TapeInstance) -> frozenset[str]:
    """The models and layers whose variables the tape's gradient calls differentiate
    (`model` for `tape.gradient(loss, model.trainable_variables)`)."""
    owners: set[str] = set()
    for call in model.calls_on(tape):
        if call.is_gradient:
            owners |= Watched(model, call).source_callables
    return frozenset(owners)


def _is_trained(func: cst.BaseExpression, trained: frozenset[str]) -> bool:
    """The callee is a trained model, or a layer or sub-model stored on one (`self.encoder`
    when `self.trainable_variables` are the sources)."""
    if dotted_name(func) in trained:
        return True
    return isinstance(func, cst.Attribute) and dotted_name(func.value) in trained


def _passes_training(call: cst.Call) -> bool:
    """`training=` given, or possibly given: `**kwargs`, `*args` or a second positional
    argument (which Keras may pass on to `call` as `training`)."""
    positional = 0
    for arg in call.args:
        if arg.star or (arg.keyword is not None and arg.keyword.value == "training"):
            return True
        if arg.keyword is None:
            positional += 1
    return positional > 1


def _root_name(func: cst.BaseExpression) -> cst.Name | None:
    while isinstance(func, cst.Attribute):
        func = func.value
    return func if isinstance(func, cst.Name) else None


def _training_kind(origins: Origins) -> str | None:
    """What the callee does in training, when every path that made it says so: "model",
    "layer" (behaves differently in training), "stateless" (a built-in layer without
    variables that does) or "inert" (a built-in layer that does not)."""
    if origins is None:
        return None
    return _combined({_origin_kind(origin) for origin in origins})


def _origin_kind(origin: Origin) -> str | None:
    if origin.how is How.CONSTRUCTED and origin.keras_class is not None:
        if origin.is_model:
            return "model"
        if origin.call is not None:
            return _built_in_layer_kind(origin.keras_class, origin.call)
    if origin.how is How.SUBCLASS:
        if origin.keras_class in MODEL_CLASSES:
            return "model"
        if origin.keras_class in LAYER_BASES:
            return "layer"
    return None


def _combined(kinds: set[str | None]) -> str | None:
    """One answer for a name bound on several paths: known only if known on every path, and
    "inert" only if inert on every path."""
    if not kinds or None in kinds:
        return None
    if "inert" in kinds:
        return "inert" if len(kinds) == 1 else None
    if kinds == {"stateless"}:
        return "stateless"
    return "model" if "model" in kinds else "layer"


def _built_in_layer_kind(qualified: str, constructor: cst.Call) -> str:
    """ "stateless" for layers without variables whose output depends on `training` (dropout,
    noise, random augmentation), "layer" for batch normalisation and layers constructed with
    a nonzero dropout rate (`LSTM(64, dropout=0.2)`), "inert" for the rest (`Dense`)."""
    name = qualified.rsplit(".", 1)[-1]
    if name in _STATELESS_TRAINING_LAYERS or name.startswith("Random"):
        return "stateless"
    if name in _NORMALIZATION_LAYERS:
        return "layer"
    for arg in constructor.args:
        keyword = arg.keyword.value if arg.keyword is not None else ""
        if keyword.endswith("dropout") and not _is_zero(arg.value):
            return "layer"
    return "inert"


def _is_zero(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, (cst.Integer, cst.Float)) and float(expr.value) == 0
