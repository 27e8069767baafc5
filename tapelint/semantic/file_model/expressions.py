"""Small syntactic questions about expressions, shared by the query modules."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import lru_cache

import libcst as cst

from tapelint.semantic.file_model.children import child_nodes
from tapelint.semantic.project_model.names import ImportTable, is_tensorflow

# Builtins and accessor methods that return what they are given without running a TF op.
_PURE_BUILTINS = frozenset(
    {
        "list",
        "tuple",
        "dict",
        "set",
        "iter",
        "next",
        "getattr",
        "id",
        "type",
        "isinstance",
        "len",
        "str",
        "repr",
        "print",
        "sorted",
        "reversed",
        "enumerate",
        "zip",
        "vars",
    }
)
_ACCESSOR_METHODS = frozenset(
    {"get", "pop", "setdefault", "copy", "items", "values", "keys", "popitem", "__getitem__"}
)


def every_name(node: cst.CSTNode) -> Iterator[cst.Name]:
    """Every Name node under `node`, attribute names and lambdas included."""
    pending = [node]
    while pending:
        current = pending.pop()
        if isinstance(current, cst.Name):
            yield current
        pending.extend(child_nodes(current))


def certain_argument(
    call: cst.Call, position: int | None, keyword: str | None
) -> cst.BaseExpression | None:
    """What `call` passes at `position` or as `keyword`; None when nothing is passed there or
    a `*args` / `**kwargs` may pass it."""
    index = 0
    for arg in call.args:
        if arg.star:
            return None
        if arg.keyword is not None:
            if arg.keyword.value == keyword:
                return arg.value
        elif index == position:
            return arg.value
        else:
            index += 1
    return None


def argument_for_parameter(
    call: cst.Call, positional: Sequence[str], parameter: str
) -> cst.BaseExpression | None:
    """What `call` passes for `parameter` of a function whose positional parameters are
    `positional` (`certain_argument`)."""
    position = positional.index(parameter) if parameter in positional else None
    return certain_argument(call, position, parameter)


def names_in(node: cst.CSTNode) -> Iterator[cst.Name]:
    """Name nodes read by an expression, in source order, not descending into lambdas."""
    return iter(_names_in(node))


# Rules ask for the names of the same expressions many times (each gradient flow, each None
# check), and libcst computes a node's children anew at each request. Nodes are immutable,
# so the answer is kept, for the latest nodes asked about (a language server's unchanged
# statements are the same nodes from one check to the next).
@lru_cache(maxsize=1 << 13)
def _names_in(node: cst.CSTNode) -> tuple[cst.Name, ...]:
    found: list[cst.Name] = []
    pending = [node]
    while pending:
        current = pending.pop()
        if isinstance(current, cst.Name):
            found.append(current)
        elif isinstance(current, cst.Attribute):
            pending.append(current.value)
        elif not isinstance(current, (cst.Lambda, cst.BaseNumber, cst.SimpleString)):
            pending.extend(reversed(child_nodes(current)))
    return tuple(found)


def elements(node: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The parts of a literal list/tuple (`[w, b]`), or the expression itself."""
    if isinstance(node, (cst.List, cst.Tuple)):
        return [e.value for e in node.elements]
    return [node]


def contains(node: cst.CSTNode, inner: cst.CSTNode) -> bool:
    """Whether `inner` is `node` or one of its descendants (by identity). (A loop of its
    own: it is asked often, and stops at the first match.)"""
    pending = [node]
    while pending:
        current = pending.pop()
        if current is inner:
            return True
        pending.extend(child_nodes(current))
    return False


def descendants(
    node: cst.CSTNode, *, skip: tuple[type[cst.CSTNode], ...] = ()
) -> Iterator[cst.CSTNode]:
    """`node` and the nodes below it, in source order; the nodes of the `skip` kinds are
    yielded but not entered (`skip=(cst.Lambda,)`: what runs where the expression runs)."""
    pending = [node]
    while pending:
        current = pending.pop()
        yield current
        if not isinstance(current, skip):
            pending.extend(reversed(child_nodes(current)))


# Code defined in a node runs elsewhere: a `return` in a nested function, or a `break` in a
# lambda's comprehension, is not the enclosing code's.
NESTED_CODE = (cst.FunctionDef, cst.ClassDef, cst.Lambda)


def holds(node: cst.CSTNode, kinds: tuple[type[cst.CSTNode], ...]) -> bool:
    """A node of one of these kinds in `node`, outside functions, classes and lambdas
    defined in it."""
    return any(isinstance(n, kinds) for n in descendants(node, skip=NESTED_CODE))


def computes(node: cst.BaseExpression, imports: ImportTable) -> bool:
    """Whether evaluating `node` certainly runs an op on its operands (arithmetic, a TF call,
    a call of a function or model with arguments), as opposed to plain Python access."""
    if isinstance(node, cst.BinaryOperation):
        return True
    if isinstance(node, cst.UnaryOperation):
        return not isinstance(node.operator, cst.Not)
    if not isinstance(node, cst.Call):
        return False
    func = node.func
    qualified = imports.qualify(func)
    if qualified is not None:
        return is_tensorflow(qualified) or qualified.startswith("keras.") or bool(node.args)
    if isinstance(func, cst.Name) and func.value in _PURE_BUILTINS:
        return False
    if isinstance(func, cst.Attribute) and func.attr.value in _ACCESSOR_METHODS:
        return False
    return bool(node.args)


def call_argument(call: cst.Call, position: int, keyword: str | None) -> cst.Arg | None:
    """The argument passed as `keyword=` or at `position` (positional), if present."""
    positional = 0
    for arg in call.args:
        if arg.keyword is not None:
            if arg.keyword.value == keyword:
                return arg
        elif arg.star == "":
            if positional == position:
                return arg
            positional += 1
    return None


def argument_value(call: cst.Call, position: int, keyword: str | None) -> cst.BaseExpression | None:
    arg = call_argument(call, position, keyword)
    return arg.value if arg is not None else None


def is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def decorator_callee(node: cst.BaseExpression) -> cst.BaseExpression:
    return node.func if isinstance(node, cst.Call) else node


def child_blocks(stmt: cst.CSTNode) -> list[Sequence[cst.CSTNode]]:
    """The statement lists directly inside a compound statement."""
    blocks: list[Sequence[cst.CSTNode]] = []
    for attr in ("body", "orelse", "finalbody"):
        part = getattr(stmt, attr, None)
        if part is None:
            continue
        if isinstance(part, (cst.IndentedBlock, cst.SimpleStatementSuite)):
            blocks.append(statements(part))
        elif isinstance(part, (cst.Else, cst.Finally)):
            blocks.append(statements(part.body))
        elif isinstance(part, cst.If):
            blocks.append((part,))
    for handler in getattr(stmt, "handlers", ()):
        blocks.append(statements(handler.body))
    for case in getattr(stmt, "cases", ()):
        blocks.append(statements(case.body))
    return blocks


def in_execution_order(stmts: Sequence[cst.CSTNode]) -> Iterator[cst.CSTNode]:
    """Statements in source order, each compound statement before the statements of its
    blocks; definitions (whose bodies do not run there) are left out."""
    for stmt in stmts:
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            continue
        yield stmt
        for block in child_blocks(stmt):
            yield from in_execution_order(block)


def statements(suite: cst.BaseSuite) -> Sequence[cst.CSTNode]:
    """A suite's statements; a one-line suite (`if x: return`) counts as one statement."""
    return suite.body if isinstance(suite, cst.IndentedBlock) else (suite,)


def returns_of(function: cst.FunctionDef) -> Iterator[cst.Return]:
    """The `return` statements of `function` itself (not of functions nested in it)."""
    yield from _returns(statements(function.body))


def _returns(body: Sequence[cst.CSTNode]) -> Iterator[cst.Return]:
    for statement in body:
        if isinstance(statement, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            yield from (small for small in statement.body if isinstance(small, cst.Return))
        elif not isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            for block in child_blocks(statement):
                yield from _returns(block)
