"""Is a gradient in a notebook only looked at: printed, logged, displayed or asserted?

A missing gradient (a loss not recorded, a source not watched, a path cut) matters because a
None gradient is silent: optimizers skip it, the training loop runs on, nothing says the
variables never moved. A notebook that only prints or displays a gradient is not silent: the
None is the cell's output, in front of the reader, and saved with the notebook. That is how
guides teach the failure on purpose (the autodiff guide prints the None gradient of a tensor
it never watched, or of a NumPy step). Such a cell is an inspection, not a training step, so
a None there breaks nothing.

In any file, the gradient of a source that the code never reads (`grads = tape.gradient(y,
[c, w])` followed only by `grads[1]`; `_, g_w = tape.gradient(y, [c, w])`) can be None
without anything going wrong: nothing uses it.

In any file, a gradient that the code asserts to be None (`self.assertIsNone(grad)`,
`assert grads[1] is None`, `assert grads[1:] == [None]`) is in plain sight too: the test
checks the None on purpose.

Otherwise only notebooks: a script that prints a gradient sends the None to a console among other
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
from weakref import WeakKeyDictionary

import libcst as cst

from tapelint.semantic.file_model.children import child_nodes
from tapelint.semantic.file_model.expressions import contains, descendants, statements
from tapelint.semantic.file_model.model import Def, DefKind, FileModel, TapeCall, Use
from tapelint.semantic.tape_life.significant_work import is_idle

# A bare expression of these only displays (or drops) the value: nothing runs on it.
_DISPLAYED = (cst.Name, cst.Attribute, cst.Subscript, cst.Tuple, cst.List)


def only_inspected(model: FileModel, call: TapeCall) -> bool:
    """Whether the result of the gradient call `call` is only looked at (see above), or
    asserted to be None in any file (`asserted_none`)."""
    if asserted_none(model, call):
        return True
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
    uses = _uses_in_scope(model, d)
    if not uses:
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
        pending.extend(child_nodes(current))
    return found


def _mentioned_outside_the_parsed_code(model: FileModel, name: str) -> bool:
    """Whether the file mentions `name` in code the parse left out (answered once per name
    and model: several rules ask it of every module-level name, all of a notebook's)."""
    answers = _MENTIONED_OUTSIDE.setdefault(model, {})
    answer = answers.get(name)
    if answer is None:
        word = re.compile(rf"\b{re.escape(name)}\b")
        parsed = model.parsed_text()
        answer = parsed != model.source_text and len(word.findall(model.source_text)) != len(
            word.findall(parsed)
        )
        answers[name] = answer
    return answer


_MENTIONED_OUTSIDE: WeakKeyDictionary[FileModel, dict[str, bool]] = WeakKeyDictionary()


def never_read(model: FileModel, call: TapeCall, index: int) -> bool:
    """Whether the gradient for the `index`-th of a literal list of sources is never read:
    the call's result is bound to one name, used only by constant subscripts of other
    positions, or unpacked with that position's name never used (see above)."""
    line = call.stmt
    if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
        return False
    small = line.body[0]
    if not (isinstance(small, cst.Assign) and small.value is call.node and len(small.targets) == 1):
        return False
    target = small.targets[0].target
    bound = [d for d in model.defs_by_stmt.get(line, []) if d.value is call.node]
    if isinstance(target, cst.Name) and len(bound) == 1:
        uses = _uses_in_scope(model, bound[0])
        return uses is not None and all(_other_position(u, index) for u in uses)
    if isinstance(target, cst.Tuple | cst.List):
        elements = target.elements
        if index >= len(elements) or any(isinstance(e, cst.StarredElement) for e in elements):
            return False
        unpacked = elements[index].value
        if not isinstance(unpacked, cst.Name):
            return False
        named = [d for d in bound if d.target is unpacked]
        return len(named) == 1 and _uses_in_scope(model, named[0]) == []
    return False


def _uses_in_scope(model: FileModel, d: Def) -> list[Use] | None:
    """Every use of `d`, or None when one may be out of sight (another scope, or code of the
    module that was left unparsed)."""
    uses = [u for u in model.uses_by_node.values() if d in u.defs]
    if any(u.scope is not d.scope for u in uses):
        return None
    if d.scope.is_module and _mentioned_outside_the_parsed_code(model, d.name):
        return None
    return uses


def _other_position(use: Use, index: int) -> bool:
    """Whether `use` is `name[k]` with a constant `k` other than `index` (non-negative)."""
    for node in descendants(use.stmt):
        if isinstance(node, cst.Subscript) and node.value is use.node:
            if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
                return False
            key = node.slice[0].slice.value
            return isinstance(key, cst.Integer) and int(key.value, 0) != index
    return False


# unittest's and TensorFlow's test assertions that a value is None.
_NONE_ASSERTIONS = frozenset({"assertIsNone", "assertNone"})


def asserted_none(model: FileModel, call: TapeCall) -> bool:
    """Whether the code asserts that the gradient of `call` is None, in any file: a test that
    checks the None itself (`self.assertIsNone(grad)`, `assert grads[1] is None`) wants it,
    and a report that the gradient is None tells its author what the test already says."""
    asserting = _none_assertions(model)
    if not asserting:
        return False  # most files: no statement asserts a None
    held: list[tuple[cst.CSTNode, cst.CSTNode]] = [(call.node, call.stmt)]
    bound = {
        d
        for d in model.defs_by_stmt.get(call.stmt, [])
        if d.value is not None and contains(d.value, call.node)
    }
    held += [(u.node, u.stmt) for u in model.uses_by_node.values() if u.defs & bound]
    return any(
        stmt in asserting and _asserts_none(node, stmt)
        for node, stmt in held
        if isinstance(stmt, cst.SimpleStatementLine)
    )


def _none_assertions(model: FileModel) -> frozenset[cst.SimpleStatementLine]:
    """The statements of the module that assert something is None (built once per model,
    from the statements the model's walk indexed: walking the whole tree again for them took
    15-25% of the time of checking training code, profiled)."""
    found = _NONE_ASSERTING.get(model)
    if found is None:
        # Each kind of assertion is spelled with `assert` (the keyword, `assertIsNone`): a
        # module without the word has none, and its statements are not looked at.
        found = (
            frozenset(
                node
                for node in model.stmt_parent
                if isinstance(node, cst.SimpleStatementLine)
                and any(_asserted(small) is not None for small in node.body)
            )
            if "assert" in model.source_text
            else frozenset()
        )
        _NONE_ASSERTING[model] = found
    return found


_NONE_ASSERTING: WeakKeyDictionary[FileModel, frozenset[cst.SimpleStatementLine]] = (
    WeakKeyDictionary()
)


def _asserts_none(node: cst.CSTNode, stmt: cst.SimpleStatementLine) -> bool:
    """Whether `stmt` asserts that `node` (or something it is part of) is None."""
    return any(
        (asserted := _asserted(small)) is not None and contains(asserted, node)
        for small in stmt.body
    )


def _asserted(small: cst.BaseSmallStatement) -> cst.BaseExpression | None:
    """What a small statement asserts to be None: the test of `assert x is None` (also
    `x == [None]`, `all(g is None for g in x)`), the argument of `self.assertIsNone(x)`."""
    if isinstance(small, cst.Assert):
        test = small.test
        return test if any(_compares_to_none(part) for part in descendants(test)) else None
    value = small.value if isinstance(small, cst.Expr) else None
    if (
        isinstance(value, cst.Call)
        and isinstance(value.func, cst.Attribute)
        and value.func.attr.value in _NONE_ASSERTIONS
        and value.args
    ):
        return value.args[0].value
    return None


def _compares_to_none(node: cst.CSTNode) -> bool:
    return (
        isinstance(node, cst.Comparison)
        and len(node.comparisons) == 1
        and isinstance(node.comparisons[0].operator, (cst.Is, cst.Equal))
        and _is_none_value(node.comparisons[0].comparator)
    )


def _is_none_value(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, (cst.List, cst.Tuple)):
        return bool(expr.elements) and all(_is_none_value(e.value) for e in expr.elements)
    return isinstance(expr, cst.Name) and expr.value == "None"
