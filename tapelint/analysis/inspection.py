"""Is a gradient in a notebook only looked at: printed, logged, displayed or asserted?

The rules about missing gradients (TAP101, TAP201, TAP202, TAP301, TAP302) exist because a
None gradient is silent: optimizers skip it, the training loop runs on, nothing says the
variables never moved. A notebook that only prints or displays a gradient is not silent: the
None is the cell's output, in front of the reader, and saved with the notebook. That is how
guides teach the failure on purpose (the autodiff guide prints the None gradient of a tensor
it never watched, or of a NumPy step). Such a cell is an inspection, not a training step, so
a None there breaks nothing.

Only notebooks: a script that prints a gradient sends the None to a console among other
output, and the same few lines are how a user's first attempt at an input gradient (without
`tape.watch`) goes wrong; there the finding explains the None.

A gradient call in a notebook is only inspected when its result goes nowhere but:

- a statement that only checks or reports (`print`, logging, `tf.print`, `assert`,
  `self.assert*`; see `significant_work.is_idle`), with the call or the name inside it;
- a bare expression statement (`grad`, `grads[0]`, `tape.gradient(y, x)`): displayed as the
  last line of a notebook cell, dropped anywhere else;
- a `for` loop over it whose body only checks or reports (`for g in grads: print(g)`).

When the result is bound to a name, every use of that name must be one of these, there must
be at least one, and all must be in the scope that binds it. At module level the name must
not appear in parts of the file that were left unparsed (definitions that mention no
trigger), where a use could hide.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import libcst as cst

from tapelint.analysis.expressions import contains, statements
from tapelint.analysis.model import Def, DefKind, FileModel, TapeCall, Use
from tapelint.analysis.significant_work import is_idle

# A bare expression of these only displays (or drops) the value: nothing runs on it.
_DISPLAYED = (cst.Name, cst.Attribute, cst.Subscript, cst.Tuple, cst.List)


def only_inspected(model: FileModel, call: TapeCall) -> bool:
    """Whether the result of the gradient call `call` is only looked at (see above)."""
    if not model.is_notebook:
        return False
    line = call.stmt
    if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
        return False
    small = line.body[0]
    if _looks_at(model, small, call.node):
        return True
    if not (isinstance(small, cst.Assign) and small.value is call.node):
        return False
    bound = [
        d
        for d in model.defs_by_stmt.get(line, [])
        if d.kind is DefKind.ASSIGN and d.value is call.node
    ]
    return len(bound) == 1 and len(small.targets) == 1 and _uses_only_look(model, bound[0])


def _looks_at(model: FileModel, small: cst.BaseSmallStatement, node: cst.CSTNode) -> bool:
    """Whether `small` holds `node` and only checks, reports or displays it."""
    if not contains(small, node):
        return False
    if is_idle(model, small):
        return True
    if not isinstance(small, cst.Expr):
        return False
    value = small.value
    return value is node or (
        isinstance(value, _DISPLAYED)
        and not any(isinstance(n, cst.Call) and n is not node for n in _descendants(value))
    )


def _uses_only_look(model: FileModel, d: Def) -> bool:
    uses = [u for u in model.uses_by_node.values() if d in u.defs]
    if not uses or any(u.scope is not d.scope for u in uses):
        return False
    if d.scope.is_module and _mentioned_outside_the_parsed_code(model, d.name):
        return False
    return all(_use_only_looks(model, u) for u in uses)


def _use_only_looks(model: FileModel, use: Use) -> bool:
    stmt = use.stmt
    if isinstance(stmt, cst.SimpleStatementLine):
        holding = [small for small in stmt.body if contains(small, use.node)]
        return bool(holding) and all(_looks_at(model, s, use.node) for s in holding)
    if isinstance(stmt, cst.For) and contains(stmt.iter, use.node) and stmt.orelse is None:
        return _only_reports(model, statements(stmt.body))
    return False


def _only_reports(model: FileModel, body: Sequence[cst.CSTNode]) -> bool:
    """Whether every statement of a loop body only checks, reports or displays."""
    for stmt in body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            return False
        for small in stmt.body:
            if not (is_idle(model, small) or _displays(small)):
                return False
    return True


def _displays(small: cst.BaseSmallStatement) -> bool:
    return (
        isinstance(small, cst.Expr)
        and isinstance(small.value, _DISPLAYED)
        and not any(isinstance(n, cst.Call) for n in _descendants(small.value))
    )


def _descendants(node: cst.CSTNode) -> list[cst.CSTNode]:
    found: list[cst.CSTNode] = []
    pending = [node]
    while pending:
        current = pending.pop()
        found.append(current)
        pending.extend(current.children)
    return found


def _mentioned_outside_the_parsed_code(model: FileModel, name: str) -> bool:
    word = re.compile(rf"\b{re.escape(name)}\b")
    return len(word.findall(model.source_text)) != len(word.findall(model.module.code))
