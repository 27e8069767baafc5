"""Which tapes does a function hand back to its callers?

`def _forward(x): with tf.GradientTape() as tape: ...; return out, tape` gives its caller a
tape: `out, tape = self._forward(x)` and the caller's `tape.gradient(...)` asks it. The
fact is meant strictly, since it makes the caller's name a tape with the helper's
persistence: on every path the function returns (no path runs off its end, which returns
None), each `return` gives the same tape at the same place of its value (the whole value,
or one element of a tuple of the same length each time); the function is neither a
generator nor `async`, and has no decorator but `staticmethod` / `classmethod` (another
may hand back something else); the tape is created in the function by
`tf.GradientTape(...)`, bound to a plain name (an attribute would keep it on an object
too), and used there only by its own methods, its `with` blocks and those returns: passed
to a call, stored or read by a nested function, it may be held or asked elsewhere. A tape
the function itself got from another helper is not followed further.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import libcst as cst

from tapelint.semantic.file_model.expressions import holds, in_execution_order, statements
from tapelint.semantic.file_model.model import FileModel, Scope, TapeCall, TapeInstance
from tapelint.semantic.project_model.names import dotted_name
from tapelint.semantic.project_model.summaries import WHOLE

# What a function may do with the tape it hands back besides returning it.
_OWN_USES = frozenset(
    {"with", "watch", "stop_recording", "watched_variables", "reset", *TapeCall.GRADIENT_METHODS}
)
_PLAIN_DECORATORS = frozenset({"staticmethod", "classmethod"})


@dataclass(frozen=True)
class HandBack:
    """The function returns `tape` as `part` of its value (`"*"`, or `"0"`, `"1"`, ...)."""

    part: str
    tape: TapeInstance


def tapes_handed_back(model: FileModel, scope: Scope) -> list[HandBack]:
    """The tapes the function of `scope` creates and hands back on every path."""
    function = scope.node
    if not isinstance(function, cst.FunctionDef) or scope.falls_off_end:
        return []
    if function.asynchronous is not None or not _plainly_decorated(function):
        return []
    if not any(_returned(model, tape) for tape in model.tapes if tape.scope is scope):
        return []  # most functions with a tape return no tape: no walk of their bodies
    body = statements(function.body)
    if any(holds(stmt, (cst.Yield,)) for stmt in body):
        return []
    values = [small.value for small in _own_returns(body)]
    if not values or any(value is None for value in values):
        return []
    parts = _parts_by_position([value for value in values if value is not None])
    found = []
    for part, returned in parts.items():
        tapes = {_tape_named(model, expr) for expr in returned}
        tape = tapes.pop() if len(tapes) == 1 else None
        if tape is not None and _held_only_here(model, tape, scope, returned):
            found.append(HandBack(part, tape))
    return found


def _returned(model: FileModel, tape: TapeInstance) -> bool:
    """Whether a `return` statement of the tape's scope reads a name holding it."""
    return any(
        use.tape_role is None
        and use.scope is tape.scope
        and isinstance(use.stmt, (cst.SimpleStatementLine, cst.SimpleStatementSuite))
        and any(isinstance(small, cst.Return) for small in use.stmt.body)
        for use in model.uses_of_tape(tape)
    )


def _plainly_decorated(function: cst.FunctionDef) -> bool:
    return all(dotted_name(d.decorator) in _PLAIN_DECORATORS for d in function.decorators)


def _own_returns(body: Sequence[cst.CSTNode]) -> list[cst.Return]:
    """The `return` statements of the function itself, not of functions nested in it."""
    return [
        small
        for stmt in in_execution_order(body)
        if isinstance(stmt, (cst.SimpleStatementLine, cst.SimpleStatementSuite))
        for small in stmt.body
        if isinstance(small, cst.Return)
    ]


def _parts_by_position(values: list[cst.BaseExpression]) -> dict[str, list[cst.BaseExpression]]:
    """Each part of the returned values, with what every `return` gives there: the whole
    value, or the elements of tuples that all have the same length (none when the returns
    do not have one shape)."""
    if all(isinstance(value, cst.Name) for value in values):
        return {WHOLE: list(values)}
    if not all(isinstance(value, cst.Tuple) for value in values):
        return {}
    tuples = [value for value in values if isinstance(value, cst.Tuple)]
    lengths = {len(value.elements) for value in tuples}
    if len(lengths) != 1 or any(
        isinstance(element, cst.StarredElement) for value in tuples for element in value.elements
    ):
        return {}
    (length,) = lengths
    return {str(i): [value.elements[i].value for value in tuples] for i in range(length)}


def _tape_named(model: FileModel, expr: cst.BaseExpression) -> TapeInstance | None:
    """The one tape a returned name holds on every path to the `return`."""
    use = model.uses_by_node.get(expr) if isinstance(expr, cst.Name) else None
    if use is None or not use.defs:
        return None
    tapes = {d.tape for d in use.defs}
    return tapes.pop() if len(tapes) == 1 else None


def _held_only_here(
    model: FileModel, tape: TapeInstance, scope: Scope, returned: list[cst.BaseExpression]
) -> bool:
    """The tape was created in the function, held by a plain name, and used there only by
    its own methods, its `with` blocks and the returns that hand it back."""
    if tape.scope is not scope or tape.handed_back is not None:
        return False
    if tape.name is None or "." in tape.name:
        return False
    handed = {id(expr) for expr in returned}
    for use in model.uses_of_tape(tape):
        if use.scope is not scope:
            return False
        if use.tape_role is None and id(use.node) not in handed:
            return False
        if use.tape_role is not None and use.tape_role not in _OWN_USES:
            return False
    return True
