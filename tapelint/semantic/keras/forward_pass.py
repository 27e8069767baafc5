"""Which of the parts a subclassed Keras model or layer creates does its forward pass use?

Keras builds a part (and so gives it variables) and runs it only when the class's `call`
reaches it: a `Dropout` created in `__init__` that `call` never touches drops nothing, and a
`BatchNormalization` that `call` never runs is never built, so it holds no moving
statistics. A part counts as used when the statement that creates it binds an attribute
(`self.drop = Dropout(0.5)`, `self.blocks.append(Dropout(0.5))`, `self.blocks[i] = ...`),
directly or through a local name of the same method (`drop = Dropout(0.5)`, then
`self.head = keras.Sequential([dense, drop])`), that the forward pass mentions: `call` (or
an own `__call__`) and the methods of the class it reaches through `self.method(...)`. A
forward pass that reaches its parts by iteration or by name (`self.layers`,
`self.submodules`, `getattr(self, ...)`, `self.__dict__`) may use any of them.

Read from the file's text with Python's `ast`, since `__init__` and methods without a tape
are usually cut out before the parse (`tapelint.parsing.slicer`).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

# Ways a forward pass reaches its parts without naming them.
_ALL_PARTS_ATTRIBUTES = frozenset({"layers", "submodules", "_layers", "__dict__"})
_ALL_PARTS_FUNCTIONS = frozenset({"getattr", "vars"})
_FORWARD_METHODS = ("call", "__call__")


class ForwardPass:
    """The attributes one class's forward pass mentions; None when it has no `call` of the
    file's (its forward pass is not visible: every part created is taken as used), or when
    it reaches its parts without naming them."""

    def __init__(self, methods: dict[str, ast.FunctionDef]) -> None:
        self._methods = methods
        self.used: frozenset[str] | None = _mentioned_attributes(methods)

    def uses_part(self, method: ast.FunctionDef, call: ast.Call) -> bool:
        """Whether the part that `call` (in `method`, `__init__` or `build`) creates is one
        the forward pass uses."""
        if self.used is None:
            return True
        statement = _statement_of(method, call)
        if statement is None:
            return False
        return bool(_reached_attributes(method, statement) & self.used)


def _mentioned_attributes(methods: dict[str, ast.FunctionDef]) -> frozenset[str] | None:
    forward = next((methods[m] for m in _FORWARD_METHODS if m in methods), None)
    if forward is None:
        return None
    mentioned: set[str] = set()
    pending, seen = [forward], set()
    while pending:
        function = pending.pop()
        if function.name in seen:
            continue
        seen.add(function.name)
        for node in ast.walk(function):
            if isinstance(node, ast.Call) and _name_of(node.func) in _ALL_PARTS_FUNCTIONS:
                return None
            attribute = _self_attribute(node)
            if attribute is None:
                continue
            if attribute in _ALL_PARTS_ATTRIBUTES:
                return None
            mentioned.add(attribute)
            if attribute in methods:
                pending.append(methods[attribute])
    return frozenset(mentioned)


def _statement_of(method: ast.FunctionDef, call: ast.Call) -> ast.stmt | None:
    """The simple statement of `method` that holds `call`."""
    for statement in _simple_statements(method.body):
        if any(node is call for node in ast.walk(statement)):
            return statement
    return None


def _reached_attributes(method: ast.FunctionDef, statement: ast.stmt) -> set[str]:
    """The `self` attributes that what `statement` makes ends up in: those it binds, and
    those that later statements of the method bind from the local names it binds."""
    attributes, names = _binds(statement)
    statements = list(_simple_statements(method.body))
    start = next(i for i, s in enumerate(statements) if s is statement)
    for later in statements[start + 1 :]:
        if names and _reads_any(later, names):
            bound_attributes, bound_names = _binds(later)
            attributes |= bound_attributes
            names |= bound_names
    return attributes


def _binds(statement: ast.stmt) -> tuple[set[str], set[str]]:
    """The `self` attributes and the local names a statement binds or fills
    (`self.x = ...`, `self.x[i] = ...`, `self.x.append(...)`, `x = ...`)."""
    targets: list[ast.expr] = []
    if isinstance(statement, ast.Assign):
        targets = list(statement.targets)
    elif isinstance(statement, (ast.AnnAssign, ast.AugAssign)):
        targets = [statement.target]
    elif isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        func = statement.value.func
        if isinstance(func, ast.Attribute):
            targets = [func.value]  # `self.blocks.append(layer)`, `parts.append(layer)`
    attributes: set[str] = set()
    names: set[str] = set()
    for target in targets:
        for node in _target_parts(target):
            attribute = _self_attribute(node)
            if attribute is not None:
                attributes.add(attribute)
            elif isinstance(node, ast.Name):
                names.add(node.id)
    return attributes, names


def _target_parts(target: ast.expr) -> Iterator[ast.expr]:
    if isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from _target_parts(element)
    elif isinstance(target, (ast.Subscript, ast.Starred)):
        yield from _target_parts(target.value)
    else:
        yield target


def _reads_any(statement: ast.stmt, names: set[str]) -> bool:
    return any(
        isinstance(node, ast.Name) and node.id in names and isinstance(node.ctx, ast.Load)
        for node in ast.walk(statement)
    )


def _simple_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements of a block that hold no block, nested blocks included (not nested
    functions or classes), in order."""
    for statement in body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        blocks = [getattr(statement, field, None) for field in ("body", "orelse", "finalbody")] + [
            handler.body for handler in getattr(statement, "handlers", [])
        ]
        nested = [block for block in blocks if isinstance(block, list)]
        if nested:
            for block in nested:
                yield from _simple_statements(block)
        else:
            yield statement


def _self_attribute(node: ast.AST) -> str | None:
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    ):
        return node.attr
    return None


def _name_of(func: ast.expr) -> str | None:
    return func.id if isinstance(func, ast.Name) else None
