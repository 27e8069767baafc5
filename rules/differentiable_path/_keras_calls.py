"""Calls of known Keras models and layers made while a tape records, and their `training=`.

Which callees are Keras models or layers, and how they were made, is `keras_objects`'s
answer; whether one computes something different in training is `keras_training`'s. A call
is reported only when both are certain: the callee was made in this file (a Keras
constructor, a builder function of the file, an instance of a Keras subclass of the file,
`self` in one, `self.encoder` assigned one) and it is, or contains, a layer that reads
`training` (dropout, noise, batch normalisation, a recurrent layer with `dropout=`, a
`call` that reads its `training` parameter). Without such a layer the flag changes nothing,
and the advice would be noise. A model passed in as a parameter (even one annotated
`keras.Model`), a layer taken out of a model (`model.layers[0]`) or a loaded model could be
anything in these terms, and unknown is never reported.

Only calls that train are reported: of a model (or a layer or sub-model stored on one)
whose variables the tape's gradient calls differentiate (`trained`: followed through
aliases of the variable lists, `w = self.student.trainable_weights` or an attribute holding
one), or of a
built-in layer without
variables whose output depends on `training` (dropout, noise) in a tape that trains some
model. A target network, a distillation teacher or a frozen feature extractor runs in
inference mode on purpose, and so does every model in a tape that differentiates with
respect to inputs (saliency maps, adversarial examples).

A call that passes `training=`, or possibly does (`**kwargs`, a second positional
argument), or passes a flag of its own whose name says training (`is_training=True` to a
class of the file that overrides `__call__`) is left alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from tapelint.semantic.file_model.model import FileModel, Scope, TapeInstance, is_recording
from tapelint.semantic.keras.keras_objects import How, KerasObjects, Origins
from tapelint.semantic.keras.keras_training import TrainingSensitivity, is_stateless_training_layer
from tapelint.semantic.project_model.names import dotted_name

from ._trained import trained_by_tape


@dataclass(frozen=True)
class KerasCall:
    node: cst.Call
    callee: str  # how the callee is spelled: `model`, `self`, `self.encoder`
    kind: str  # "model" or "layer"
    tape: TapeInstance
    # What in the callee reads `training`: a layer class (`Dropout`), or USES_TRAINING.
    sensitive: str


def calls_without_training(model: FileModel) -> list[KerasCall]:
    """Calls of known training-sensitive Keras models/layers, made while a tape records,
    without `training=`."""
    found: dict[cst.Call, KerasCall] = {}
    keras = KerasObjects(model)
    sensitivity = TrainingSensitivity(keras)
    # A tape a helper handed back trains what the helper recorded, which is not seen here.
    trained = {
        tape: frozenset(trained_by_tape(model, keras, tape))
        for tape in model.tapes
        if tape.blocks and tape.handed_back is None
    }
    for tape, call in _recorded_calls(model, trained):
        if call in found or _passes_training(call):
            continue
        origins = keras.origins(call.func)
        if not origins:
            continue
        # A layer without variables (dropout, noise) is never among the sources, but it is
        # part of what the tape trains.
        if not (_is_stateless(origins) or _is_trained(call.func, trained[tape])):
            continue
        sensitive = sensitivity.of(call.func)
        if sensitive is None:
            continue
        kind = "model" if any(origin.is_model for origin in origins) else "layer"
        found[call] = KerasCall(call, dotted_name(call.func) or "", kind, tape, sensitive)
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
        if not tapes or not isinstance(use.node, cst.Name):
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


def _is_trained(func: cst.BaseExpression, trained: frozenset[str]) -> bool:
    """The callee is a trained model, or a layer or sub-model stored on one (`self.encoder`
    when `self.trainable_variables` are the sources)."""
    if dotted_name(func) in trained:
        return True
    return isinstance(func, cst.Attribute) and dotted_name(func.value) in trained


def _passes_training(call: cst.Call) -> bool:
    """`training=` given, or possibly given: `**kwargs`, `*args` or a second positional
    argument (which Keras may pass on to `call` as `training`); or a flag of the callee's
    own that says training (`is_training=True`)."""
    positional = 0
    for arg in call.args:
        if arg.star or (arg.keyword is not None and "train" in arg.keyword.value.lower()):
            return True
        if arg.keyword is None:
            positional += 1
    return positional > 1


def _root_name(func: cst.BaseExpression) -> cst.Name | None:
    while isinstance(func, cst.Attribute):
        func = func.value
    return func if isinstance(func, cst.Name) else None


def _is_stateless(origins: Origins) -> bool:
    """Every path made a built-in layer without variables that reads `training`."""
    if not origins:
        return False
    return all(
        origin.how is How.CONSTRUCTED
        and origin.keras_class is not None
        and origin.keras_class.startswith("keras.layers.")
        and is_stateless_training_layer(origin.keras_class)
        for origin in origins
    )
