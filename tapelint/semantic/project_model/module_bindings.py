"""What a module's top-level statements bind, read from Python's `ast`: the names other
modules can import from it.

Another module's `from mypkg import tf` is what `mypkg` binds `tf` to. Its imports say it
(`import tensorflow as tf`), through a re-export (`from .compat import tf`) or a star
import (`from .compat import *`, of the names `compat` exports: its `__all__`, else every
name without a leading underscore). A name bound in more than one way (an import in a `try`
and a fallback in its `except ImportError`, an assignment after the import) has every
binding recorded, so that the name is known only when they all agree: a fallback to
`tensorflow.keras` agrees with `tf_keras`, a fallback to a stub object (`tf = None`,
`tf = _Missing()`) does not. An assignment of an imported name or of an attribute of one
(`Adam = tf_keras.optimizers.Adam`, `tf = tf.compat.v1`) binds that name too.

Only statements of the module itself count, with those under a top-level `if` or `try`;
imports inside functions and classes are not bindings of the module.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from tapelint.semantic.project_model.names import absolute
from tapelint.semantic.project_model.summaries import NOT_IMPORTED


@dataclass
class ModuleBindings:
    aliases: dict[str, str] = field(default_factory=dict)  # the last import of each name
    star_imports: list[str] = field(default_factory=list)
    # Every binding, in order, of each imported name bound more than once or otherwise too,
    # and of each name bound only to imported names and their attributes.
    alternatives: dict[str, tuple[str, ...]] = field(default_factory=dict)
    exports: tuple[str, ...] | None = None  # `__all__`, when it is a literal list


def module_bindings(
    tree: ast.Module, module: str, *, is_package: bool, imported: Iterable[str] = ()
) -> ModuleBindings:
    """The bindings of module `module` (its dotted name) from its parsed text. A name counts
    for `alternatives` when one of the module's top-level imports binds it, or when it is in
    `imported` (the names some import of the module binds, wherever it is: one that no
    top-level statement binds is not a name of the module)."""
    found = ModuleBindings()
    every: dict[str, list[str]] = {}
    exports: list[str] | None = []  # None: `__all__` is not a literal list
    assigned_all = False
    for node in _top_level(tree.body):
        if isinstance(node, ast.Import | ast.ImportFrom):
            for name, target in _imported(node, module, is_package, found.star_imports):
                found.aliases[name] = target
                every.setdefault(name, []).append(target)
            continue
        change = _all_change(node)
        if change is not None:
            assigned_all = True
            replaces, listed = change
            kept = [] if replaces else exports
            exports = kept + listed if kept is not None and listed is not None else None
            continue
        for name, value in _bound(node):
            every.setdefault(name, []).append(_dotted_binding(value, found.aliases))
    wanted = set(found.aliases) | set(imported)
    for name, bindings in every.items():
        distinct = tuple(dict.fromkeys(bindings))
        if name in wanted:
            if len(distinct) > 1 or NOT_IMPORTED in distinct:
                found.alternatives[name] = distinct
        elif NOT_IMPORTED not in distinct:  # `Adam = keras.optimizers.Adam`
            found.alternatives[name] = distinct
    for name in sorted(set(imported) - set(every)):  # imported in a function only
        found.alternatives[name] = (NOT_IMPORTED,)
    if assigned_all and exports is not None:
        found.exports = tuple(exports)
    return found


def _top_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The module's own statements, with those of its top-level `if` and `try` blocks."""
    for node in body:
        if isinstance(node, ast.If):
            yield from _top_level(node.body)
            yield from _top_level(node.orelse)
        elif isinstance(node, ast.Try | ast.TryStar):
            blocks = (node.body, *(h.body for h in node.handlers), node.orelse, node.finalbody)
            for block in blocks:
                yield from _top_level(block)
        else:
            yield node


def _imported(
    node: ast.Import | ast.ImportFrom, module: str, is_package: bool, stars: list[str]
) -> Iterator[tuple[str, str]]:
    """(name, qualified) for each name an import binds; a star import goes into `stars`."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.asname:
                yield alias.asname, alias.name
            else:  # `import a.b` binds `a`
                root = alias.name.split(".", 1)[0]
                yield root, root
        return
    prefix = "." * node.level + (node.module or "")
    if any(alias.name == "*" for alias in node.names):
        stars.append(absolute(prefix, module, is_package=is_package))
        return
    separator = "." if node.module else ""
    for alias in node.names:
        target = f"{prefix}{separator}{alias.name}"
        yield alias.asname or alias.name, absolute(target, module, is_package=is_package)


def _all_change(node: ast.stmt) -> tuple[bool, list[str] | None] | None:
    """How a statement changes `__all__`: whether it replaces it (`__all__ = [...]`) or
    adds to it (`+=`, `.extend`, `.append`), and the names it puts there when they are
    literal strings (None: not known). None when it does not touch `__all__`."""
    if isinstance(node, ast.Assign) and any(_is_all(t) for t in node.targets):
        return True, _literal_names(node.value)
    if isinstance(node, ast.AnnAssign | ast.AugAssign) and _is_all(node.target):
        if node.value is None:
            return None
        return isinstance(node, ast.AnnAssign), _literal_names(node.value)
    if not (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Attribute)
        and _is_all(node.value.func.value)
    ):
        return None
    call, method = node.value, node.value.func.attr
    if len(call.args) != 1 or call.keywords or method not in ("extend", "append"):
        return False, None
    argument = call.args[0]
    return False, _literal_names(argument if method == "extend" else ast.List([argument]))


def _literal_names(value: ast.expr) -> list[str] | None:
    if isinstance(value, ast.List | ast.Tuple) and all(
        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts
    ):
        return [e.value for e in value.elts]  # type: ignore[attr-defined]
    return None


def _is_all(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id == "__all__"


def _bound(node: ast.stmt) -> Iterator[tuple[str, ast.expr | None]]:
    """(name, value) for each name a statement that is not an import binds at the top
    level; the value when the statement assigns one expression to the name alone."""
    if isinstance(node, ast.Assign):
        single = len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
        for target in node.targets:
            yield from ((n, node.value if single else None) for n in _names(target))
    elif isinstance(node, ast.AnnAssign) and node.value is not None:
        yield from ((n, node.value) for n in _names(node.target))
    elif isinstance(node, ast.AugAssign):
        yield from ((n, None) for n in _names(node.target))
    elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        yield node.name, None
    elif isinstance(node, ast.For | ast.AsyncFor):
        yield from ((n, None) for n in _names(node.target))
    elif isinstance(node, ast.With | ast.AsyncWith):
        for item in node.items:
            if item.optional_vars is not None:
                yield from ((n, None) for n in _names(item.optional_vars))
    elif isinstance(node, ast.Delete):
        for target in node.targets:
            yield from ((n, None) for n in _names(target))


def _names(target: ast.expr) -> Iterator[str]:
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, ast.Tuple | ast.List):
        for element in target.elts:
            yield from _names(element)
    elif isinstance(target, ast.Starred):
        yield from _names(target.value)


def _dotted_binding(value: ast.expr | None, aliases: dict[str, str]) -> str:
    """What assigning `value` binds: an imported name when it is one, or an attribute of
    one (`tf = tf.compat.v1`); else `NOT_IMPORTED`."""
    parts: list[str] = []
    while isinstance(value, ast.Attribute):
        parts.append(value.attr)
        value = value.value
    if not isinstance(value, ast.Name) or value.id not in aliases:
        return NOT_IMPORTED
    return ".".join([aliases[value.id], *reversed(parts)])
