"""A tape's life: how it is used, whether it escapes, and whether it outlives its last use.

A tape a helper hands back (`tape_life.handing_back`) lives on in its callers: the calls it
answers are the helper's and each caller's. Where every caller is in the same file and
seen, that is counted too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import libcst as cst

from tapelint.semantic.calls.callees import calls_of, only_called_here
from tapelint.semantic.file_model.expressions import argument_value, in_execution_order
from tapelint.semantic.file_model.model import (
    DefKind,
    FileModel,
    FrameKind,
    Scope,
    TapeInstance,
    Tri,
    Use,
    is_recording,
)
from tapelint.semantic.file_model.test_code import is_test_code
from tapelint.semantic.tape_life.handing_back import tapes_handed_back
from tapelint.semantic.tape_life.significant_work import SignificantWork
from tapelint.semantic.tape_life.toy_values import records_only_toy_values

# A jacobian computed without pfor re-reads the tape once per output element, which
# TensorFlow only allows on a persistent tape.
_NEEDS_PERSISTENCE = frozenset({"jacobian", "batch_jacobian"})


def escapes(model: FileModel, tape: TapeInstance) -> bool:
    """Whether the tape may be used where this analysis cannot see: returned, passed to a
    call, stored, referenced from a nested function, or never bound to a local name."""
    if tape.name is None or "." in tape.name:  # stored on an object: outlives the scope
        return True
    for use in model.uses_of_tape(tape):
        if use.tape_role is None or use.scope is not tape.scope:
            return True
    return False


def needs_persistence(model: FileModel, tape: TapeInstance) -> bool:
    """Some call on the tape requires `persistent=True` whatever the call count."""
    for call in model.calls_on(tape):
        if call.method in _NEEDS_PERSISTENCE:
            pfor = argument_value(call.node, 3, "experimental_use_pfor")
            if not (isinstance(pfor, cst.Name) and pfor.value == "True") and pfor is not None:
                return True
    return False


def serves_at_most_one_call(model: FileModel, tape: TapeInstance) -> Tri:
    """YES when on every path the tape answers at most one gradient-like call: here, in
    the helper that handed it back, and in the callers it is handed back to."""
    if needs_persistence(model, tape):
        return Tri.UNKNOWN
    if escapes(model, tape):
        return _served_through_callers(model, tape)
    asked = tape.max_calls + (tape.handed_back.fact.asked if tape.handed_back else 0)
    return Tri.YES if asked <= 1 else Tri.NO


def _served_through_callers(model: FileModel, tape: TapeInstance) -> Tri:
    """For a tape its function hands back, and that only this file can call: the calls it
    answers there and in each caller, when every mention of the function in the file is
    its definition or a call that binds the tape in a caller, where it escapes no further
    and is not a trace-time object; else UNKNOWN."""
    function = tape.scope.node
    if not isinstance(function, cst.FunctionDef) or not only_called_here(model, function):
        return Tri.UNKNOWN
    if not any(handed.tape is tape for handed in tapes_handed_back(model, tape.scope)):
        return Tri.UNKNOWN
    calls = {call for call, _ in calls_of(model, function)}
    mentions = re.findall(rf"\b{re.escape(function.name.value)}\b", model.source_text)
    if not calls or len(mentions) != len(calls) + 1:
        return Tri.UNKNOWN
    bound = [t for t in model.tapes if t.handed_back is not None and t.ctor in calls]
    if {t.ctor for t in bound} != calls:
        return Tri.UNKNOWN
    for caller in bound:
        if escapes(model, caller) or needs_persistence(model, caller):
            return Tri.UNKNOWN
        if lives_only_while_tracing(caller):
            return Tri.UNKNOWN
    asked = tape.max_calls + max(caller.max_calls for caller in bound)
    return Tri.YES if asked <= 1 else Tri.NO


def lives_only_while_tracing(tape: TapeInstance) -> bool:
    """Whether the tape is created in a compiled body (a `tf.function`, a Keras `train_step`
    override, or a function nested in one): a trace-time object, gone once the graph is
    built, so what it holds never outlives a trace."""
    scope: Scope | None = tape.scope
    while scope is not None:
        if scope.is_compiled:
            return True
        scope = scope.parent
    return False


def persistence_costs_nothing(model: FileModel, tape: TapeInstance) -> bool:
    """Whether `persistent=True` on this tape costs nothing worth a finding: it lives only
    while tracing, an enclosing tape records all it does, or it is a test's tape over toy
    values (see `toy_values`: a unit test of a 4-element jacobian). Outside tests a toy tape
    is still worth it: guides and scripts written over random stand-in data are copied into
    training code with real data."""
    if lives_only_while_tracing(tape) or recorded_by_an_enclosing_tape(model, tape):
        return True
    return is_test_code(model, tape.scope) and records_only_toy_values(model, tape)


def recorded_by_an_enclosing_tape(model: FileModel, tape: TapeInstance) -> bool:
    """Whether the tape is opened inside another tape's recording block and answers every
    gradient call there too (the inner tape of a second-order pair: `u_x = inner.gradient(u,
    x)` inside `outer`'s block). The outer tape records the same operations, the inner
    tape's backward pass among them, and keeps their tensors alive for its own calls, so the
    inner tape's persistence frees nothing sooner."""
    calls = [call for call in model.calls_on(tape) if call.is_gradient]
    enclosing = {
        frame.tape
        for frame in tape.ctx
        if frame.tape is not None and frame.tape is not tape and is_recording(tape.ctx, frame.tape)
    }
    return bool(calls and enclosing) and all(
        any(is_recording(call.ctx, outer) for outer in enclosing) for call in calls
    )


@dataclass(frozen=True)
class Unreleased:
    """A persistent tape kept alive after its last use while significant work runs (see
    `significant_work`), in a notebook's kernel, or on an object."""

    last_use: cst.CSTNode  # the statement of the last use
    why: str  # "work", "notebook" or "attribute"
    # The statement after which `del <tape>` can go, in the block that created the tape.
    release_after: cst.CSTNode | None
    # For "work": the first significant call (or `yield`) that runs while the tape is held.
    work: cst.CSTNode | None = None


def unreleased(
    model: FileModel, tape: TapeInstance, work: SignificantWork | None = None
) -> Unreleased | None:
    """A persistent tape that needs its persistence (more than one call) and is still bound
    while significant work runs after the place where `del` would go: after its last use,
    in the block that created it (a statement later in the tape's own `with` block cannot
    release it). In a loop body the next iteration's creation rebinds the name, so what
    counts is the rest of the body, the statements before the creation in the next
    iteration, and what follows the loop. A tape that serves at most one call has a
    simpler problem: its persistence (TAP102); one that records only toy values (see
    `toy_values`) holds nothing worth releasing."""
    if tape.persistent is not Tri.YES or tape.scope.is_compiled:
        return None
    if tape.name is not None and "." in tape.name:
        return _unreleased_attribute(model, tape)
    if escapes(model, tape) or serves_at_most_one_call(model, tape) is Tri.YES:
        return None
    uses = model.uses_of_tape(tape)
    working = [u for u in uses if u.tape_role != "del"]
    last_stmt = working[-1].stmt if working else tape.stmt
    last_order = working[-1].order if working else tape.order
    if _released_after(model, tape, uses, last_order, _innermost_loop(tape)):
        return None
    release = _release_point(model, tape, last_stmt)
    held = _Holding(model, tape, work or SignificantWork(model)).after(release or last_stmt)
    found = None
    if held.work is not None:
        found = Unreleased(last_stmt, "work", release, held.work)
    elif held.to_end and tape.scope.is_module and model.is_notebook:
        found = Unreleased(last_stmt, "notebook", release)
    if found is None or records_only_toy_values(model, tape):
        return None
    return found


def _unreleased_attribute(model: FileModel, tape: TapeInstance) -> Unreleased | None:
    """A persistent tape stored on an object (`self.tape = tf.GradientTape(...)`) and never
    deleted from it: it lives as long as the object. Only judged when the whole file
    mentions the attribute in this function alone."""
    uses = model.uses_of_tape(tape)
    if any(u.scope is not tape.scope or u.tape_role is None for u in uses):
        return None
    attribute = "." + (tape.name or "").rsplit(".", 1)[-1]
    inside = model.module.code_for_node(tape.scope.node).count(attribute)
    if model.source_text.count(attribute) != inside:
        return None
    working = [u for u in uses if u.tape_role != "del"]
    last_stmt = working[-1].stmt if working else tape.stmt
    last_order = working[-1].order if working else tape.order
    if _released_after(model, tape, uses, last_order, None):
        return None
    return Unreleased(last_stmt, "attribute", _release_point(model, tape, last_stmt))


def _innermost_loop(tape: TapeInstance) -> cst.CSTNode | None:
    loops = [f.node for f in tape.ctx if f.kind is FrameKind.LOOP]
    return loops[-1] if loops else None


def _released_after(
    model: FileModel,
    tape: TapeInstance,
    uses: list[Use],
    last_order: int,
    loop: cst.CSTNode | None,
) -> bool:
    """`del tape` or `tape = None` after the last use (inside the creating loop, if any)."""
    candidates = [(u.order, u.ctx) for u in uses if u.tape_role == "del"]
    for d in model.scope_defs[tape.scope].get(tape.name or "", []):
        if d.kind is DefKind.ASSIGN and isinstance(d.value, cst.Name) and d.value.value == "None":
            candidates.append((d.order, d.ctx))
    for order, ctx in candidates:
        if order > last_order and (loop is None or any(f.node is loop for f in ctx)):
            return True
    return False


@dataclass(frozen=True)
class _Held:
    work: cst.CSTNode | None  # the first significant work while the name holds the tape
    to_end: bool  # the name still holds the tape where its scope's code ends


class _Holding:
    """Walks what runs after the release point while the tape's name still holds it."""

    def __init__(self, model: FileModel, tape: TapeInstance, work: SignificantWork) -> None:
        self.model = model
        self.name = tape.name or ""
        self.creation_path = model.statement_path(tape.stmt) or [tape.stmt]
        self.work = work

    def after(self, release: cst.CSTNode) -> _Held:
        current = release
        while current in self.model.stmt_parent:
            owner, block, index = self.model.stmt_parent[current]
            for later in block[index + 1 :]:
                event = self._event(later)
                if event is not None:
                    return event
            if isinstance(owner, (cst.Module, cst.FunctionDef, cst.ClassDef)):
                break
            if isinstance(owner, (cst.For, cst.While)):
                found = self._next_iteration(owner)
                if found is not None:
                    return _Held(found, False)
            current = owner
        return _Held(None, True)

    def _next_iteration(self, loop: cst.For | cst.While) -> cst.CSTNode | None:
        """Significant work the loop's next iteration runs before the tape's creation
        rebinds the name: the `while` test, then at each level from the loop body down to
        the creation, the statements before it and the headers (an `if` test) on the way."""
        if isinstance(loop, cst.While):
            found = self.work.in_statement(loop)
            if found is not None:
                return found
        path = self.creation_path
        for child in path[path.index(loop) + 1 :] if loop in path else ():
            _, block, index = self.model.stmt_parent[child]
            for earlier in block[:index]:
                event = self._event(earlier)
                if event is not None:
                    return event.work
            if child is path[-1]:
                break
            found = self.work.in_statement(child)
            if found is not None:
                return found
        return None

    def _event(self, stmt: cst.CSTNode) -> _Held | None:
        """What running `stmt` means for the held tape, in execution order: the name is
        rebound or deleted (released), significant work runs, or the function returns."""
        for executed in in_execution_order((stmt,)):
            if self._rebinds(executed):
                return _Held(None, False)
            found = self.work.in_statement(executed)
            if found is not None:
                return _Held(found, False)
        if isinstance(stmt, cst.SimpleStatementLine) and any(
            isinstance(small, (cst.Return, cst.Raise)) for small in stmt.body
        ):
            return _Held(None, True)
        return None

    def _rebinds(self, stmt: cst.CSTNode) -> bool:
        if any(d.name == self.name for d in self.model.defs_by_stmt.get(stmt, ())):
            return True
        return isinstance(stmt, cst.SimpleStatementLine) and any(
            isinstance(small, cst.Del) and _deletes(small.target, self.name) for small in stmt.body
        )


def _deletes(target: cst.BaseExpression, name: str) -> bool:
    if isinstance(target, (cst.Tuple, cst.List)):
        return any(_deletes(element.value, name) for element in target.elements)
    return isinstance(target, cst.Name) and target.value == name


def _release_point(
    model: FileModel, tape: TapeInstance, last_stmt: cst.CSTNode
) -> cst.CSTNode | None:
    """The ancestor of `last_stmt` that sits in the block where the tape was created."""
    creation = model.stmt_parent.get(tape.stmt)
    if creation is None:
        return None
    creation_owner = creation[0]
    current = last_stmt
    while current in model.stmt_parent:
        owner, block, _ = model.stmt_parent[current]
        if owner is creation_owner and tape.stmt in block:
            return current
        current = owner
    return None
