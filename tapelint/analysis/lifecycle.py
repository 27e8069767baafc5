"""A tape's life: how it is used, whether it escapes, and whether it outlives its last use."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from tapelint.analysis.expressions import argument_value
from tapelint.analysis.model import (
    DefKind,
    FileModel,
    FrameKind,
    TapeInstance,
    Tri,
    Use,
)

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
    """YES when on every path the tape answers at most one gradient-like call."""
    if escapes(model, tape) or needs_persistence(model, tape):
        return Tri.UNKNOWN
    return Tri.YES if tape.max_calls <= 1 else Tri.NO


@dataclass(frozen=True)
class Unreleased:
    """A persistent tape kept alive after its last use while more work runs."""

    last_use: cst.CSTNode  # the statement of the last use
    why: str  # "module", "notebook", "loop", "function" or "attribute"
    # The statement after which `del <tape>` can go, in the block that created the tape.
    release_after: cst.CSTNode | None


def unreleased(model: FileModel, tape: TapeInstance) -> Unreleased | None:
    """A persistent tape that needs its persistence (more than one call) and outlives its
    last use; a tape that serves at most one call has a simpler problem: its persistence."""
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
    if last_stmt is None:
        return None
    loop = _innermost_loop(tape)
    if _released_after(model, tape, uses, last_order, loop):
        return None
    after = _after_last_use(model, last_stmt, tape.name or "")
    if loop is not None:
        why = "loop"
    elif after == "work":
        why = "module" if tape.scope.is_module else "function"
    elif after == "end" and tape.scope.is_module and model.is_notebook:
        why = "notebook"
    else:
        return None
    return Unreleased(last_stmt, why, _release_point(model, tape, last_stmt))


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
    if last_stmt is None or _released_after(model, tape, uses, last_order, None):
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


_LOG_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical"})


def _is_idle(model: FileModel, stmt: cst.CSTNode) -> bool:
    """`return`, `pass`, a docstring, or printing/logging: nothing that holds memory long."""
    if not isinstance(stmt, cst.SimpleStatementLine):
        return False
    for small in stmt.body:
        if isinstance(small, (cst.Return, cst.Pass)):
            continue
        if not isinstance(small, cst.Expr):
            return False
        value = small.value
        if isinstance(value, cst.SimpleString):
            continue
        if not isinstance(value, cst.Call):
            return False
        func = value.func
        if isinstance(func, cst.Name) and func.value == "print":
            continue
        if isinstance(func, cst.Attribute) and func.attr.value in _LOG_METHODS:
            continue
        if model.imports.qualify(func) == "tensorflow.print":
            continue
        return False
    return True


def _after_last_use(model: FileModel, stmt: cst.CSTNode, name: str) -> str:
    """What follows the last use in its scope: "work" (a statement that is not idle runs
    while the tape is alive), "rebound" (the name is rebound or deleted first) or "end"."""
    current = stmt
    while current in model.stmt_parent:
        owner, block, index = model.stmt_parent[current]
        for later in block[index + 1 :]:
            if any(d.name == name for d in model.defs_by_stmt.get(later, ())):
                return "rebound"
            if not _is_idle(model, later):
                return "work"
        if isinstance(owner, (cst.Module, cst.FunctionDef, cst.ClassDef)):
            return "end"
        current = owner
    return "end"


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
