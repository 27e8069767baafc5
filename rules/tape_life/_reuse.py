"""Which gradient call asks a non-persistent tape for gradients a second time?

The builder counts, per path, the gradient-like calls a tape has answered (`TapeCall.nth`):
a call reached after another one, or run again by a loop or a comprehension, is a repeat.
The count starts over when the tape is created again, or when a non-persistent tape is
entered again (`with tape:`), since TensorFlow then records on a fresh tape.

A repeat on a non-persistent tape raises, so code after it never runs with the tape
spent: of the calls in one straight line only the first repeat is reported.

A helper that always asks the tape it is handed for gradients spends it too
(`tape_handoffs`): `reused_through_helpers` finds a gradient call, or a hand-off, that
follows a hand-off or a gradient call in one straight line (a whole statement earlier in a
block that encloses it), the tape not entered again in between; and a hand-off that a loop
or a comprehension runs again, when nothing in the loop can end it after one iteration
(`break`, `return`, `raise`), the tape is not entered again inside it, and the loop is not
over a one-element list written out.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from tapelint.semantic.file_model.expressions import contains, holds, statements
from tapelint.semantic.file_model.model import (
    FileModel,
    Frame,
    FrameKind,
    TapeCall,
    TapeInstance,
    Tri,
)
from tapelint.semantic.project_model.names import dotted_name
from tapelint.semantic.project_model.summaries import Site

from ._tape_handoffs import HandOff, tape_handoffs


@dataclass(frozen=True)
class HelperReuse:
    """`node` asks the spent tape for gradients (a gradient call, or a hand-off to a helper
    that asks it at `spent_at`), after `earlier` did (the same two kinds)."""

    node: cst.Call
    spent_at: Site | None  # None: `node` is a gradient call on the tape itself
    earlier: cst.Call  # `node` itself when a loop runs it again
    earlier_spent_at: Site | None
    how: str = "sequence"  # "loop", "comprehension": that runs `node` again (`Reuse.how`)


@dataclass(frozen=True)
class Reuse:
    call: TapeCall
    # How the tape was already spent: "comprehension" (the call runs once per element),
    # "loop" (the loop runs the call again) or "sequence" (an earlier call on the path).
    how: str


def reused_calls(model: FileModel, tape: TapeInstance) -> list[Reuse]:
    """The gradient calls that find the non-persistent `tape` already spent on some path."""
    if tape.persistent is not Tri.NO:
        return []
    calls = [c for c in model.calls_on(tape) if c.is_gradient and c.scope is tape.scope]
    found = []
    for call in calls:
        if call.nth < 2 or _unreachable_when_spent(model, tape, call, calls):
            continue
        if _under_the_creations_test(model, tape, call) or _error_expected(model, call.stmt):
            continue
        if _fallback_after_failed_call(model, call, calls):
            continue
        found.append(Reuse(call, _how(tape, call, calls)))
    return found


@dataclass(frozen=True)
class _Spend:
    node: cst.Call
    stmt: cst.CSTNode | None
    order: int
    spent_at: Site | None
    whole_statement: bool


def reused_through_helpers(model: FileModel, tape: TapeInstance) -> HelperReuse | None:
    """The first gradient call or hand-off that finds the non-persistent `tape` spent by an
    earlier one, where a helper is one of the two."""
    if tape.persistent is not Tri.NO:
        return None
    found = list(tape_handoffs(model, tape))
    handoffs = [
        _Spend(h.node, h.stmt, h.order, h.spent_at, _is_whole(h.node, h.stmt)) for h in found
    ]
    if not handoffs:
        return None
    direct = [
        _Spend(c.node, c.stmt, c.order, None, _is_whole(c.node, c.stmt))
        for c in model.calls_on(tape)
        if c.is_gradient and c.scope is tape.scope
    ]
    spends = sorted(handoffs + direct, key=lambda spend: spend.order)
    for later in spends:
        for earlier in spends:
            if earlier.order >= later.order or (
                earlier.spent_at is None and later.spent_at is None
            ):
                continue
            if not earlier.whole_statement or not _statement_precedes(
                model, earlier.stmt, later.stmt
            ):
                continue
            if any(earlier.order < start < later.order for start, _ in tape.blocks.values()):
                continue  # entered again: a fresh recording
            if _error_expected(model, later.stmt):
                continue
            return HelperReuse(later.node, later.spent_at, earlier.node, earlier.spent_at)
    for handoff in found:
        how = _run_again_by(tape, handoff)
        if how is not None and not _error_expected(model, handoff.stmt):
            return HelperReuse(handoff.node, handoff.spent_at, handoff.node, handoff.spent_at, how)
    return None


def _run_again_by(tape: TapeInstance, handoff: HandOff) -> str | None:
    """ "loop" or "comprehension" when one around the hand-off, but not around the tape's
    creation, runs it a second time with the same tape."""
    created_in = {id(f.node) for f in tape.ctx}
    loops = [
        f
        for f in handoff.ctx
        if f.kind in (FrameKind.LOOP, FrameKind.COMPREHENSION) and id(f.node) not in created_in
    ]
    if not loops:
        return None
    if any(contains(loop.node, block) for loop in loops for block in tape.blocks):
        return None  # entered again: a fresh recording
    if any(_may_run_once(loop.node) for loop in loops):
        return None
    return "comprehension" if loops[-1].kind is FrameKind.COMPREHENSION else "loop"


def _may_run_once(loop: cst.CSTNode) -> bool:
    """A loop that something in its body can end after one iteration, or that goes over a
    written-out one-element list or tuple."""
    if (
        isinstance(loop, cst.For)
        and isinstance(loop.iter, (cst.List, cst.Tuple))
        and len(loop.iter.elements) <= 1
    ):
        return True
    if not isinstance(loop, (cst.For, cst.While)):
        return False  # a comprehension runs for every element
    return holds(loop.body, (cst.Break, cst.Return, cst.Raise))


def _how(tape: TapeInstance, call: TapeCall, calls: list[TapeCall]) -> str:
    if any(f.kind is FrameKind.COMPREHENSION for f in _frames_since_creation(tape, call)):
        return "comprehension"
    if any(other.order < call.order for other in calls if other is not call):
        return "sequence"
    return "loop"


def _unreachable_when_spent(
    model: FileModel, tape: TapeInstance, call: TapeCall, calls: list[TapeCall]
) -> bool:
    """A repeat that runs only after another repeat has already raised: two earlier calls
    on its straight-line path, or (for a call repeated by a loop) a later call that every
    iteration reaches after it, which raises first."""
    earlier = [c for c in calls if c.order < call.order and precedes(model, c, call)]
    if len(earlier) >= 2:
        first = min(c.order for c in earlier)
        if not any(first < start < call.order for start, _ in tape.blocks.values()):
            return True
    if _how(tape, call, calls) == "loop":
        loops = [f.node for f in _frames_since_creation(tape, call) if f.kind is FrameKind.LOOP]
        for later in calls:
            if (
                loops
                and later.order > call.order
                and precedes(model, call, later)
                and any(f.node is loops[-1] for f in later.ctx)
            ):
                return True
    return False


def _under_the_creations_test(model: FileModel, tape: TapeInstance, call: TapeCall) -> bool:
    """The tape is created, and the call made, under `if` statements with the same test in
    the same loop iteration (`if executing_eagerly(): with tf.GradientTape() as tape: ...`
    and later `if executing_eagerly(): tape.gradient(...)`): every iteration that makes the
    call made a fresh tape first. Only a call repeated by the loop is judged this way; the
    test is compared as written."""
    if _how(tape, call, model.calls_on(tape)) != "loop":
        return False
    created = _guarding_tests(model, tape.stmt)
    called = _guarding_tests(model, call.stmt)
    return bool(created) and created[-1] in called


_CATCHES_RUNTIME_ERROR = frozenset({"RuntimeError", "Exception", "BaseException"})


def _error_expected(model: FileModel, stmt: cst.CSTNode | None) -> bool:
    """The repeat (in `stmt`) runs in a `try` whose handler catches the `RuntimeError` it
    raises (a guide showing the error, a test asserting it): the program expects it."""
    current = stmt
    while current is not None and current in model.stmt_parent:
        owner, block, _ = model.stmt_parent[current]
        if isinstance(owner, cst.Try) and block is owner.body.body:
            for handler in owner.handlers:
                caught = handler.type
                names = (
                    [e.value for e in caught.elements]
                    if isinstance(caught, cst.Tuple)
                    else [caught]
                )
                if caught is None or any(
                    (dotted_name(n) or "").rsplit(".", 1)[-1] in _CATCHES_RUNTIME_ERROR
                    for n in names
                    if n is not None
                ):
                    return True
        current = owner
    return False


def _guarding_tests(model: FileModel, stmt: cst.CSTNode | None) -> list[str]:
    """The tests of the `if` statements whose body holds `stmt`, innermost last, up to the
    innermost loop."""
    tests: list[str] = []
    current = stmt
    while current is not None and current in model.stmt_parent:
        owner, block, _ = model.stmt_parent[current]
        if isinstance(owner, (cst.For, cst.While, cst.FunctionDef, cst.Module)):
            break
        if (
            isinstance(owner, cst.If)
            and isinstance(owner.body, cst.IndentedBlock)
            and block is owner.body.body
        ):
            tests.insert(0, model.module.code_for_node(owner.test))
        current = owner
    return tests


def _frames_since_creation(tape: TapeInstance, call: TapeCall) -> list[Frame]:
    """The frames around `call` that do not also enclose the tape's creation."""
    created_in = {id(f.node) for f in tape.ctx}
    return [f for f in call.ctx if id(f.node) not in created_in]


def _fallback_after_failed_call(model: FileModel, call: TapeCall, calls: list[TapeCall]) -> bool:
    """A call in an `except` handler whose `try` body also asks the tape: a gradient call
    that raises leaves the tape unspent, so the handler may be the first call that returns."""
    current: cst.CSTNode | None = call.stmt
    while current is not None and current in model.stmt_parent:
        owner = model.stmt_parent[current][0]
        if isinstance(owner, (cst.Try, cst.TryStar)) and any(
            current in statements(handler.body) for handler in owner.handlers
        ):
            return any(contains(owner.body, other.node) for other in calls if other is not call)
        current = owner
    return False


def precedes(model: FileModel, first: TapeCall, then: TapeCall) -> bool:
    """`first` is a whole statement (`g = tape.gradient(...)`) sitting earlier in a block
    that encloses `then`'s statement: whenever `then` runs, `first` ran before it."""
    return _is_whole(first.node, first.stmt) and _statement_precedes(model, first.stmt, then.stmt)


def _statement_precedes(
    model: FileModel, first: cst.CSTNode | None, then: cst.CSTNode | None
) -> bool:
    """Statement `first` sits earlier in a block that encloses statement `then`."""
    if first is None or then is None:
        return False
    current: cst.CSTNode = then
    while current in model.stmt_parent:
        _, block, index = model.stmt_parent[current]
        if first in block[:index]:
            return True
        current = model.stmt_parent[current][0]
    return False


def _is_whole(call: cst.Call, stmt: cst.CSTNode | None) -> bool:
    """`call` is the whole value of its statement (`g = f(...)`, `f(...)`): it runs first."""
    if not isinstance(stmt, cst.SimpleStatementLine):
        return False
    for small in stmt.body:
        if isinstance(small, (cst.Assign, cst.Expr)) and small.value is call:
            return True
    return False
