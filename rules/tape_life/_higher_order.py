"""Is a gradient taken while its own tape records, and is its result differentiated again?

A gradient computed inside a recording block is legitimate exactly when a tape that records
that computation differentiates the result (a higher-order derivative): an enclosing tape
recording at the call, or the tape itself when it is persistent (a non-persistent tape stops
recording at its gradient call). The result is followed forward through assignments; when
it goes somewhere this analysis cannot see (returned to a caller that may hold a tape,
stored in a container or attribute, passed to an unknown function), the answer is unknown.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from weakref import WeakKeyDictionary

import libcst as cst

from tapelint.semantic.file_model.expressions import argument_value, computes, contains
from tapelint.semantic.file_model.model import (
    Def,
    DefKind,
    FileModel,
    FrameKind,
    TapeCall,
    TapeInstance,
    Tri,
    Use,
    is_recording,
)
from tapelint.semantic.flow.dataflow import target_definitions

from ._lifecycle import escapes
from ._reuse import precedes

# Calls that take the gradients and leave nothing a tape could differentiate later:
# applying them, accumulating them into variables (an assignment has no gradient), logging
# them, summaries and metric updates.
_SINK_METHODS = frozenset(
    {
        "apply_gradients",
        "apply",
        "assign",
        "assign_add",
        "assign_sub",
        "update_state",
        "debug",
        "info",
        "warning",
        "warn",
        "error",
        "exception",
    }
)
_SINK_FUNCTIONS = frozenset({"print"})


def gradient_inside_own_block(model: FileModel, call: TapeCall) -> Tri:
    """YES when `call` runs while its own tape records and no tape that records the call
    differentiates its result; NO when the tape is not recording there or a recording tape
    differentiates the result; UNKNOWN when that cannot be told."""
    tape = call.tape
    if not call.is_gradient or call.scope is not tape.scope or not is_recording(call.ctx, tape):
        return Tri.NO
    if tape.handed_back is not None:
        return Tri.UNKNOWN  # what the helper recorded on it, and what needs it, is not seen
    recorders = _recording_tapes(model, call)
    # With no other tape recording and a tape that stops at this call, nothing the result is
    # handed to can be differentiated in this scope: a discarded `x.apply_*(...)` ends it.
    result = _ResultFlow(model, call, own_appliers=not recorders and tape.persistent is Tri.NO)
    if tape.persistent is not Tri.NO:
        recorders.append(tape)
    answers = [_differentiates(model, recorder, call, result) for recorder in recorders]
    if Tri.YES in answers:
        return Tri.NO
    if result.opaque or Tri.UNKNOWN in answers:
        return Tri.UNKNOWN
    return Tri.YES


@dataclass(frozen=True)
class InBlockCost:
    """What a gradient taken inside its own recording block costs when nothing
    differentiates its result.

    - "persistent": the persistent tape records the gradient computation too;
    - "recorded": another tape that records at the call (`recorder`) records it (not in a
      `tf.function` or a Keras `train_step`, where tapes record only while tracing);
    - "unrecorded": the non-persistent tape stops at the call, so `needed`, computed after
      it in the block, is not recorded for `later`, a later gradient call of the same tape
      (which raises on a spent tape, TAP105, or, after `with tape:` enters it again,
      silently misses what `needed` contributed). `later` is the call itself when a loop
      inside the block runs it again.
    """

    kind: str
    recorder: TapeInstance | None = None
    later: TapeCall | None = None
    needed: Def | None = None


def in_block_cost(model: FileModel, call: TapeCall) -> InBlockCost | None:
    """For a gradient taken inside its own block that no recording tape differentiates
    again: what that costs, or None when it costs nothing. A non-persistent tape stops
    recording at the call, so when no other tape records there and nothing the block
    computes after the call feeds a later gradient of the tape (only `apply_gradients`,
    logging or nothing follows), the call costs nothing."""
    if gradient_inside_own_block(model, call) is not Tri.YES:
        return None
    tape = call.tape
    if tape.persistent is Tri.YES:
        return InBlockCost("persistent")
    target = _target_definitions(model, call)
    # In a traced function another tape records only while the graph is traced: the graph
    # that runs holds no tape.
    recorders = [] if call.scope.is_compiled else _recording_tapes(model, call)
    for recorder in recorders:
        # It watches every variable the forward pass read while it recorded, so it records
        # the backward pass through them.
        if recorder.watch_accessed_variables is Tri.NO:
            continue
        if not target or any(is_recording(d.ctx, recorder) for d in target):
            return InBlockCost("recorded", recorder=recorder)
    return _unrecorded_need(model, call)


def _unrecorded_need(model: FileModel, call: TapeCall) -> InBlockCost | None:
    """A value computed in the call's block after the call (in later iterations too, when a
    loop inside the block repeats the call) that a later gradient call of the tape needs."""
    tape = call.tape
    frames = list(call.ctx)
    position = max(i for i, f in enumerate(frames) if f.tape is tape and f.kind is FrameKind.TAPE)
    block = frames[position].node
    loops = [f.node for f in frames[position + 1 :] if f.kind is FrameKind.LOOP]
    later = [
        other
        for other in model.calls_on(tape)
        if other.is_gradient and other.scope is call.scope and other.order > call.order
    ]
    if loops:
        later.insert(0, call)
    for other in later:
        needed = [
            d
            for d in _target_definitions(model, other)
            if any(f.node is block for f in d.ctx)
            and _computes(model, d)
            and (d.order > call.order or (loops and any(f.node is loops[0] for f in d.ctx)))
        ]
        if needed:
            # Name a value computed after the call rather than the call's own result.
            needed.sort(key=lambda d: (d.stmt is call.stmt, d.order))
            return InBlockCost("unrecorded", later=other, needed=needed[0])
    return None


def _computes(model: FileModel, d: Def) -> bool:
    if d.kind is DefKind.AUG:
        return True
    return d.value is not None and computes(d.value, model.imports)


def _recording_tapes(model: FileModel, call: TapeCall) -> list[TapeInstance]:
    """The other tapes recording at the call (enclosing blocks, not stopped): a
    non-persistent tape stops at its own gradient call, so one whose call certainly ran
    before this one (`g1 = gen_tape.gradient(...)` earlier in the block) records no more."""
    tapes: list[TapeInstance] = []
    for frame in call.ctx:
        other = frame.tape
        if frame.kind is not FrameKind.TAPE or other is None or other is call.tape:
            continue
        if other in tapes or not is_recording(call.ctx, other):
            continue
        if not _stopped(model, other, call):
            tapes.append(other)
    return tapes


def _stopped(model: FileModel, tape: TapeInstance, call: TapeCall) -> bool:
    if tape.persistent is not Tri.NO:
        return False
    return any(
        other.is_gradient and other.order < call.order and precedes(model, other, call)
        for other in model.calls_on(tape)
    )


def _differentiates(
    model: FileModel, recorder: TapeInstance, call: TapeCall, result: _ResultFlow
) -> Tri:
    if recorder.scope is not call.scope or escapes(model, recorder):
        return Tri.UNKNOWN
    for other in model.calls_on(recorder):
        if not other.is_gradient:
            continue  # the call itself counts: in a loop it differentiates its last result
        target = argument_value(other.node, 0, "target")
        if target is None:
            return Tri.UNKNOWN
        if other.stmt is call.stmt and contains(target, call.node):
            return Tri.YES  # `outer.gradient(inner.gradient(y, x), x)`
        if _target_definitions(model, other) & result.defs:
            return Tri.YES
    return Tri.NO


class _ResultFlow:
    """The definitions the call's result flows into within its scope, and whether it also
    flows somewhere that is not followed (`opaque`)."""

    def __init__(self, model: FileModel, call: TapeCall, *, own_appliers: bool = False) -> None:
        self.model = model
        self.own_appliers = own_appliers
        self.scope = call.scope
        self.defs: set[Def] = set()
        self.opaque = False
        pending = self._flow_from_statement(call.stmt)
        if not pending:
            return
        uses_by_def = _indexes(model).uses_by_def
        while pending and not self.opaque:
            d = pending.pop()
            for use in uses_by_def.get(d, ()):
                if use.scope is not self.scope:
                    self.opaque = True
                    break
                pending.extend(self._flow_from_statement(use.stmt))

    def _flow_from_statement(self, stmt: cst.CSTNode | None) -> list[Def]:
        """The new definitions a statement that reads the value binds; marks the flow opaque
        when the statement hands the value to something not followed."""
        if isinstance(stmt, (cst.If, cst.While)):
            return []  # a test reads the value and keeps nothing
        if isinstance(stmt, cst.SimpleStatementLine):
            bound = self.model.defs_by_stmt.get(stmt, [])
            if not all(self._harmless(small) for small in stmt.body if not _binds(small)):
                self.opaque = True
            return self._new(bound)
        if isinstance(stmt, cst.For):
            return self._new(self.model.defs_by_stmt.get(stmt, []))
        self.opaque = True
        return []

    def _harmless(self, small: cst.BaseSmallStatement) -> bool:
        if isinstance(small, (cst.Del, cst.Pass, cst.Assert)):
            return True
        if not isinstance(small, cst.Expr) or not isinstance(small.value, cst.Call):
            return False
        func = small.value.func
        if isinstance(func, cst.Attribute) and func.attr.value in _SINK_METHODS:
            return True
        if (
            self.own_appliers
            and isinstance(func, cst.Attribute)
            and func.attr.value.startswith("apply_")
        ):
            return True  # a framework's own `opt.apply_grads(...)`, result discarded
        if isinstance(func, cst.Name) and func.value in _SINK_FUNCTIONS:
            return True
        qualified = self.model.imports.qualify(func) or ""
        return qualified == "tensorflow.print" or qualified.startswith("tensorflow.summary.")

    def _new(self, bound: Iterable[Def]) -> list[Def]:
        fresh = [d for d in bound if d not in self.defs]
        self.defs.update(fresh)
        return fresh


class _Indexes:
    """Built once per model: a file may take many gradients inside their blocks, and each
    asks about the same uses and gradient targets."""

    def __init__(self, model: FileModel) -> None:
        self.uses_by_def: dict[Def, list[Use]] = {}
        for use in model.uses_by_node.values():
            for d in use.defs:
                self.uses_by_def.setdefault(d, []).append(use)
        self.targets: dict[TapeCall, set[Def]] = {}


_INDEXES: WeakKeyDictionary[FileModel, _Indexes] = WeakKeyDictionary()


def _indexes(model: FileModel) -> _Indexes:
    found = _INDEXES.get(model)
    if found is None:
        found = _INDEXES[model] = _Indexes(model)
    return found


def _target_definitions(model: FileModel, call: TapeCall) -> set[Def]:
    targets = _indexes(model).targets
    if call not in targets:
        targets[call] = target_definitions(model, call)
    return targets[call]


def _binds(small: cst.BaseSmallStatement) -> bool:
    if isinstance(small, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
        targets = (
            [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
        )
        return all(_is_name_target(t) for t in targets)
    return False


def _is_name_target(target: cst.BaseExpression) -> bool:
    if isinstance(target, cst.Name):
        return True
    if isinstance(target, (cst.Tuple, cst.List)):
        return all(_is_name_target(e.value) for e in target.elements)
    if isinstance(target, cst.StarredElement):
        return _is_name_target(target.value)
    return False
