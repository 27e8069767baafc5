"""Which parameters a function always asks for gradients: handed a non-persistent tape, such a
function leaves it spent, and the caller's next gradient call on it raises.

"Always" is meant strictly, because the fact makes a caller's call a gradient call: a
`p.gradient(...)`, `p.jacobian(...)` or `p.batch_jacobian(...)` in a statement of the
function's own body (or of a `with` block in it) that runs before anything that can leave
the function: a compound statement that may `return` or `raise`, or a `return` / `raise`
itself. A call in a branch, a loop, a `try`, a comprehension, a lambda, a conditional
expression or a boolean operator may not run, and does not count. Generators and `async`
functions run nothing when called, and a parameter the function rebinds may not be the
caller's tape: neither has the fact.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import libcst as cst

from tapelint.semantic.file_model.expressions import descendants, holds, statements
from tapelint.semantic.file_model.model import DefKind, FileModel, Scope, TapeCall

_MAY_NOT_RUN = (
    cst.Lambda,
    cst.ListComp,
    cst.SetComp,
    cst.DictComp,
    cst.GeneratorExp,
    cst.IfExp,
    cst.BooleanOperation,
    cst.FunctionDef,
    cst.ClassDef,
)


def spent_parameters(
    model: FileModel, scope: Scope, params: Sequence[str], calls: Iterable[cst.Call]
) -> dict[str, cst.Call]:
    """Each parameter of the function of `scope` asked for gradients on every path through
    it, with the first call that asks it; `calls` are the calls the function makes itself.
    (Most functions ask no parameter anything: walking their trees to be sure would cost
    more than the rest of their summary.)"""
    function = scope.node
    assert isinstance(function, cst.FunctionDef)
    asking = {call: name for call in calls if (name := _asked_parameter(call, params))}
    if not asking or function.asynchronous is not None or _is_generator(function):
        return {}
    rebound = _rebound(model, scope)
    found: dict[str, cst.Call] = {}
    for call in _calls_on_every_path(statements(function.body)):
        name = asking.get(call)
        if name is not None and name not in rebound:
            found.setdefault(name, call)
    return found


def _asked_parameter(call: cst.Call, params: Sequence[str]) -> str | None:
    """The parameter `call` asks for gradients (`p.gradient(...)`), if it does."""
    func = call.func
    if (
        isinstance(func, cst.Attribute)
        and isinstance(func.value, cst.Name)
        and func.value.value in params
        and func.attr.value in TapeCall.GRADIENT_METHODS
    ):
        return func.value.value
    return None


def _calls_on_every_path(stmts: Sequence[cst.CSTNode]) -> Iterator[cst.Call]:
    """The calls that run whenever the statements run, up to the first one that may leave."""
    for stmt in stmts:
        if isinstance(stmt, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            for small in stmt.body:
                yield from _calls_that_run(small)
                if isinstance(small, (cst.Return, cst.Raise)):
                    return
        elif isinstance(stmt, cst.With):
            for item in stmt.items:
                yield from _calls_that_run(item.item)
            yield from _calls_on_every_path(statements(stmt.body))
            if _may_leave(stmt.body):
                return
        elif isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            continue
        elif _may_leave(stmt):
            return


def _calls_that_run(node: cst.CSTNode) -> Iterator[cst.Call]:
    """Calls in `node`, outside the parts of an expression that may not run."""
    found = descendants(node, skip=_MAY_NOT_RUN)
    return (n for n in found if isinstance(n, cst.Call))


def _may_leave(node: cst.CSTNode) -> bool:
    """A `return` or `raise` in `node`, outside functions and classes defined in it."""
    return holds(node, (cst.Return, cst.Raise))


def _is_generator(function: cst.FunctionDef) -> bool:
    return any(holds(stmt, (cst.Yield,)) for stmt in statements(function.body))


def _rebound(model: FileModel, scope: Scope) -> set[str]:
    """Names the function binds itself (assigned, a loop or `with ... as` target, imported,
    deleted, declared `global`): a parameter among them may not hold the caller's tape."""
    return {
        name
        for name, defs in model.scope_defs.get(scope, {}).items()
        if any(d.kind is not DefKind.PARAM for d in defs)
    }
