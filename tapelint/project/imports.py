"""The bindings of a module that tapelint does not analyse: what its imports make of names.

A module with no trigger (no tape, no `apply_gradients`, no `tf.function`) is never parsed
for the rules, yet other modules may reach a helper through it: a package's `__init__.py`
re-exports (`from .utils import get_grads`), a `common.py` star-imports. For those, when a
name another module asks about leads into it, its imports alone are read with Python's
`ast` (several times cheaper than a full analysis), as a summary with no functions: the
same aliases and star imports a full analysis would record. Imports inside functions and
classes are not bindings of the module and are skipped; those under a top-level `if` or
`try` (`try: from .fast import f` / `except ImportError: ...`) count.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from tapelint.analysis.names import absolute
from tapelint.analysis.summaries import ModuleSummary
from tapelint.project.modules import ModuleName


def import_summary(text: str, module: ModuleName) -> ModuleSummary | None:
    """The module's import bindings as a summary; None when it does not parse."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    aliases: dict[str, str] = {}
    stars: list[str] = []
    for node in _module_level(tree.body):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    aliases[alias.asname] = alias.name
                else:  # `import a.b` binds `a`
                    root = alias.name.split(".", 1)[0]
                    aliases[root] = root
            continue
        prefix = "." * node.level + (node.module or "")
        if any(alias.name == "*" for alias in node.names):
            stars.append(absolute(prefix, module.name, is_package=module.is_package))
            continue
        separator = "." if node.module else ""
        for alias in node.names:
            target = f"{prefix}{separator}{alias.name}"
            aliases[alias.asname or alias.name] = absolute(
                target, module.name, is_package=module.is_package
            )
    return ModuleSummary(module=module.name, aliases=aliases, star_imports=tuple(stars))


def _module_level(body: list[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.If):
            yield from _module_level(node.body)
            yield from _module_level(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, *(h.body for h in node.handlers), node.orelse):
                yield from _module_level(block)
