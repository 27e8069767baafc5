"""The bindings of a module that tapelint does not analyse: what its imports make of names.

A module with no trigger (no tape, no `apply_gradients`, no `tf.function`) is never parsed
for the rules, yet other modules may reach a helper through it: a package's `__init__.py`
re-exports (`from .utils import get_grads`), a `common.py` star-imports. For those, when a
name another module asks about leads into it, its imports alone are read with Python's
`ast` (several times cheaper than a full analysis), as a summary with no functions: the
same aliases and star imports a full analysis would record. Imports inside functions and
classes are not bindings of the module and are skipped; those under a top-level `if` or
`try` (`try: from .fast import f` / `except ImportError: ...`) count.

Most such modules (a package's `__init__.py`, a large module of ops) import only at the top,
every statement at the start of a line: then those statements alone are parsed, not the
whole file (checking TensorFlow's sources, parsing them whole was over a quarter of the time
spent on the index).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from tapelint.analysis.names import absolute
from tapelint.analysis.summaries import ModuleSummary
from tapelint.project.modules import ModuleName
from tapelint.source import Literals

# What may stand before `import` in an import statement.
FROM_CLAUSE = r"(?:from[ \t]+[\w.]+[ \t]+)?"
# An import statement from the start of its line, with its parenthesised or
# backslash-continued lines.
IMPORT_STATEMENT = r"^[ \t]*" + FROM_CLAUSE + r"import\b(?:[ \t]*\([^)]*\)|(?:[^\\\n]|\\[\s\S])*)"
_STATEMENT = re.compile(IMPORT_STATEMENT, re.MULTILINE)
_HEAD = re.compile(FROM_CLAUSE + r"import\b")
_KEYWORD = re.compile(r"\bimport\b")


def import_summary(text: str, module: ModuleName) -> ModuleSummary | None:
    """The module's import bindings as a summary; None when it does not parse."""
    tree = line_start_imports(text)
    if tree is None:
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):  # deep nesting too
            return None
    return summary_of(tree, module)


def line_start_imports(text: str) -> ast.Module | None:
    """The module's import statements parsed on their own, when each one starts a line at
    its first column (outside strings and comments): then every one is a statement of the
    module itself, none under an `if` or a `try` or in a function, and they are all of its
    imports. None when that is not so, or when they do not parse on their own."""
    literals = Literals(text)
    statements: list[str] = []
    covered = 0  # the end of the last statement taken
    for keyword in _KEYWORD.finditer(text):
        if keyword.start() < covered or literals.contains(keyword.start()):
            continue
        line = text.rfind("\n", 0, keyword.start()) + 1
        head = _HEAD.match(text, line)
        if head is None or head.end() != keyword.end():
            return None  # indented, or after another statement on its line
        statement = _STATEMENT.match(text, line)
        assert statement is not None  # the head matched
        statements.append(statement.group())
        covered = statement.end()
    try:
        return ast.parse("\n".join(statements))
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # deep nesting too
        return None


def summary_of(tree: ast.Module, module: ModuleName) -> ModuleSummary:
    """The import bindings of a parsed module."""
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
