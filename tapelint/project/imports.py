"""The bindings of a module that tapelint does not analyse: what its imports make of names.

A module with no trigger (no tape, no `apply_gradients`, no `tf.function`) is never parsed
for the rules, yet other modules may reach a helper through it: a package's `__init__.py`
re-exports (`from .utils import get_grads`), a `common.py` star-imports, a `compat.py`
binds `tf_keras` to whichever Keras is installed. For those, when a name another module
asks about leads into it, its imports alone are read with Python's `ast` (several times
cheaper than a full analysis), as a summary with no functions: the same bindings a full
analysis would record (`analysis.project_model.module_bindings`). Imports inside
functions and classes are not bindings of the module and are skipped; those under a
top-level `if` or `try` (`try: from .fast import f` / `except ImportError: ...`) count.

Most such modules (a package's `__init__.py`, a large module of ops) import only at the top,
every statement at the start of a line: then those statements alone are parsed, not the
whole file (checking TensorFlow's sources, parsing them whole was over a quarter of the time
spent on the index). Not when a line of the module may bind an imported name another way
(`tf = None`), bind a name to an imported one (`Adam = keras.optimizers.Adam`) or set
`__all__`: those statements matter too, and the whole module is parsed."""

from __future__ import annotations

import ast
import bisect
import re

from tapelint.parsing.slicer import Literals
from tapelint.project.modules import ModuleName
from tapelint.semantic.project_model.module_bindings import module_bindings
from tapelint.semantic.project_model.summaries import ModuleSummary

# What may stand before `import` in an import statement.
FROM_CLAUSE = r"(?:from[ \t]+[\w.]+[ \t]+)?"
# An import statement from the start of its line, with its parenthesised or
# backslash-continued lines.
IMPORT_STATEMENT = r"^[ \t]*" + FROM_CLAUSE + r"import\b(?:[ \t]*\([^)]*\)|(?:[^\\\n]|\\[\s\S])*)"
_STATEMENT = re.compile(IMPORT_STATEMENT, re.MULTILINE)
_HEAD = re.compile(FROM_CLAUSE + r"import\b")
_KEYWORD = re.compile(r"\bimport\b")
# A statement that may bind a name, which the group captures (`tf = None`, `tf, np = ...`,
# `tf: Any = ...`, `tf += 1`, `def tf():`, `for tf in`), at the start of a line or
# indented (under a top-level `if` or `try`, or in a function: a superset).
_MAY_BIND = re.compile(
    r"^[ \t]*(?:(?:async[ \t]+)?(?:def|class|for|del)[ \t]+(\w+)"
    r"|[(\[]?[ \t]*(\w+)[ \t]*(?:,|=(?!=)|:|[-+*/%@&|^<>]{1,3}=))",
    re.MULTILINE,
)
_ALL = re.compile(r"^[ \t]*__all__\b", re.MULTILINE)
# A name bound to a name or a dotted name alone (`Adam = keras.optimizers.Adam`): the
# groups capture the name bound and the first name of the value. When that one is
# imported, what may bind a name other than an import statement.
DOTTED_ASSIGNMENT = (
    r"^[ \t]*(\w+)[ \t]*(?::[^=\n]*)?=[ \t]*(\w+)(?:[ \t]*\.[ \t]*\w+)*[ \t]*(?:#[^\n]*)?$"
)
_DOTTED_ASSIGNMENT = re.compile(DOTTED_ASSIGNMENT, re.MULTILINE)


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
    spans: list[tuple[int, int]] = []
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
        spans.append(statement.span())
        covered = statement.end()
    try:
        tree = ast.parse("\n".join(statements))
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # deep nesting too
        return None
    return None if _binds_otherwise(text, tree, _Outside(literals, spans)) else tree


class _Outside:
    """Where neither a literal nor one of the import statements is."""

    def __init__(self, literals: Literals, statements: list[tuple[int, int]]) -> None:
        self._literals = literals
        self._starts = [start for start, _ in statements]
        self._ends = [end for _, end in statements]

    def contains(self, position: int) -> bool:
        """Whether `position` is inside a literal or an import statement."""
        index = bisect.bisect_right(self._starts, position) - 1
        in_statement = index >= 0 and position < self._ends[index]
        return in_statement or self._literals.contains(position)


def _binds_otherwise(text: str, imports: ast.Module, literals: _Outside) -> bool:
    """Whether a statement may bind a name the imports bind, or bind another name to an
    imported name (or an attribute of one), or set `__all__`: then the module's other
    statements matter too."""
    if any(not literals.contains(m.start()) for m in _ALL.finditer(text)):
        return True
    bound = {
        (alias.asname or alias.name).split(".", 1)[0]
        for node in imports.body
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    for match in _DOTTED_ASSIGNMENT.finditer(text):
        if match.group(2) in bound and not literals.contains(match.start(1)):
            return True
    for match in _MAY_BIND.finditer(text):
        group = 1 if match.group(1) is not None else 2
        if match.group(group) in bound and not literals.contains(match.start(group)):
            return True
    return False


def summary_of(tree: ast.Module, module: ModuleName) -> ModuleSummary:
    """The import bindings of a parsed module."""
    found = module_bindings(tree, module.name, is_package=module.is_package)
    return ModuleSummary(
        module=module.name,
        aliases=found.aliases,
        star_imports=tuple(found.star_imports),
        alternatives=found.alternatives,
        exports=found.exports,
    )
