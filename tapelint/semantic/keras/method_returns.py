"""What a method returns, read from the file's text: the expressions a model-building
method (`def _define_model(self): return keras.Sequential([...])`) gives back, so that
`self.model = self._define_model()` is known as what the method builds.

A method's returns are read with Python's `ast`, since methods without a tape are usually
cut out before the parse (`tapelint.parsing.slicer`). Its names other than `self` would be looked
up among the module's definitions by the caller, so a returned expression is kept only when
it names none of the method's own parameters or locals, with one exception: a local bound
once to a constructor and then filled with `.add(...)` (`model = Sequential()`,
`model.add(Dense(8))`, `return model`), given back as that constructor call and the layers
added to it. Anything else (a name bound twice, a local passed in, a `yield`) makes the
method's result unknown, and the method builds nothing known.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class Returned:
    """One `return` of a method: the expression it gives (`self` may appear in it, always as
    the method's instance), and the layers `.add(...)`ed to it when it was a local."""

    value: ast.expr
    added: tuple[ast.expr, ...] = ()


def returned_values(method: ast.FunctionDef) -> list[Returned] | None:
    """Every `return` of `method`, or None when one of them is not known this way (or the
    method has none, or is a generator)."""
    returns = list(_returns(method.body))
    if not returns or _is_generator(method):
        return None
    own = _own_names(method)
    found: list[Returned] = []
    for node in returns:
        if node.value is None:
            return None
        value = node.value
        if isinstance(value, ast.Name) and value.id in own:
            known = _filled_local(method, value.id, own)
            if known is None:
                return None
            found.append(known)
        elif _names(value) & own:
            return None
        else:
            found.append(Returned(value))
    return found


def _filled_local(method: ast.FunctionDef, name: str, own: set[str]) -> Returned | None:
    """`name = Constructor(...)` bound once, the layers `name.add(layer)` adds to it."""
    bindings = [node for node in ast.walk(method) if _binds_name(node, name)]
    if len(bindings) != 1 or not isinstance(bindings[0], ast.Assign):
        return None
    binding = bindings[0]
    if len(binding.targets) != 1 or not isinstance(binding.value, ast.Call):
        return None
    if _names(binding.value) & own:
        return None
    added: list[ast.expr] = []
    for node in ast.walk(method):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if (
            isinstance(func, ast.Attribute)
            and func.attr == "add"
            and isinstance(func.value, ast.Name)
            and func.value.id == name
        ):
            if len(node.args) != 1 or node.keywords or _names(node.args[0]) & own:
                return None
            added.append(node.args[0])
    return Returned(binding.value, tuple(added))


def _binds_name(node: ast.AST, name: str) -> bool:
    targets: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        targets = list(node.targets)
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor)):
        targets = [node.target]
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        targets = [item.optional_vars for item in node.items if item.optional_vars is not None]
    elif isinstance(node, ast.NamedExpr):
        targets = [node.target]
    return any(
        isinstance(part, ast.Name) and part.id == name
        for target in targets
        for part in ast.walk(target)
    )


def _own_names(method: ast.FunctionDef) -> set[str]:
    """The method's parameters but its first (`self`), and every name it binds."""
    arguments = method.args
    positional = [*arguments.posonlyargs, *arguments.args]
    names = {a.arg for a in (*positional[1:], *arguments.kwonlyargs)}
    names |= {a.arg for a in (arguments.vararg, arguments.kwarg) if a is not None}
    for node in ast.walk(method):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node is not method:
            names.add(node.name)
    return names


def _names(expr: ast.expr) -> set[str]:
    return {node.id for node in ast.walk(expr) if isinstance(node, ast.Name)}


def _returns(body: list[ast.stmt]) -> Iterator[ast.Return]:
    for statement in body:
        if isinstance(statement, ast.Return):
            yield statement
        elif not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for field in ("body", "orelse", "finalbody"):
                yield from _returns(getattr(statement, field, None) or [])
            for handler in getattr(statement, "handlers", []):
                yield from _returns(handler.body)
            for case in getattr(statement, "cases", []):
                yield from _returns(case.body)


def _is_generator(method: ast.FunctionDef) -> bool:
    pending: list[ast.AST] = list(method.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            return True
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            pending.extend(ast.iter_child_nodes(node))
    return False
