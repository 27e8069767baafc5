"""Deciding from the raw text what can matter, before any libcst parse.

Most files of a repository never mention a tape: they are skipped after a substring test.
In files that do, top-level functions and classes (and methods of classes) that never
mention a trigger word are cut out before libcst parses what remains; a line map keeps every
reported position exact. Python's own `ast` finds the statement boundaries (and reports
syntax errors) about ten times faster than libcst parses.
"""

from __future__ import annotations

import ast
import bisect
import re
from dataclasses import dataclass

_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


# Triggers that library code mentions mostly in prose (docstrings, doctests, comments, error
# messages): `tf.function` is in 226 of TensorFlow's and Keras' own files, most of them only in
# words. A mention of one of these counts only on a line shaped like code that uses it: a
# decorator `@tf.function` or a call `tf.function(...)`, on a line that does not start with `#`,
# `>>>` or `...` and has no backtick or `#` before it. (`step = tf.function` without a call, or
# a module alias such as `T.function`, is not seen; see the TAP501 docs.)
PROSE_PRONE_TRIGGERS = ("tf.function", "tensorflow.function")


def _code_use(trigger: str) -> str:
    name = re.escape(trigger)
    return rf"^[ \t]*+(?!#|>>>|\.\.\.)[^\n`#]*?(?:@{name}\b|\b{name}\s*\()"


class TriggerTest:
    """Whether a source mentions a trigger where code could use it: a substring test, plus a
    one-line pattern for the prose-prone triggers (only run when their substring is there)."""

    def __init__(self, triggers: tuple[str, ...]) -> None:
        plain = [t for t in triggers if t not in PROSE_PRONE_TRIGGERS]
        shaped = [t for t in triggers if t in PROSE_PRONE_TRIGGERS]
        self._plain_text = tuple(plain)
        self._plain_bytes = tuple(t.encode() for t in plain)
        self._shaped_text = [(t, re.compile(_code_use(t), re.M)) for t in shaped]
        self._shaped_bytes = [(t.encode(), re.compile(_code_use(t).encode(), re.M)) for t in shaped]

    def in_bytes(self, data: bytes) -> bool:
        return any(t in data for t in self._plain_bytes) or any(
            t in data and pattern.search(data) for t, pattern in self._shaped_bytes
        )

    def in_text(self, text: str) -> bool:
        return any(t in text for t in self._plain_text) or any(
            t in text and pattern.search(text) for t, pattern in self._shaped_text
        )


@dataclass(frozen=True)
class SyntaxProblem:
    line: int
    column: int
    message: str


@dataclass(frozen=True)
class SparseSource:
    """The parts of a file worth parsing, and where each of their lines came from."""

    text: str
    # (first line in `text`, first line in the original), ascending; 1-based.
    segments: tuple[tuple[int, int], ...]

    def original_line(self, line: int) -> int:
        index = bisect.bisect_right(self.segments, (line, float("inf"))) - 1
        sparse_start, original_start = self.segments[max(index, 0)]
        return original_start + (line - sparse_start)


def mentions(text: str, triggers: tuple[str, ...]) -> bool:
    return TriggerTest(triggers).in_text(text)


def relevant_source(text: str, triggers: tuple[str, ...]) -> SparseSource | SyntaxProblem:
    """`text` without top-level definitions that cannot matter to rules with these triggers."""
    try:
        tree = ast.parse(text)
    except SyntaxError as error:
        return SyntaxProblem(error.lineno or 1, error.offset or 1, error.msg)
    except ValueError as error:  # e.g. null bytes on older interpreters
        return SyntaxProblem(1, 1, str(error))
    if text.count("\r") != text.count("\r\n"):
        return SparseSource(text, ((1, 1),))  # lone CR line ends: keep the line map trivial
    trigger_lines = _lines_mentioning(text, (*triggers, *_import_aliases(text, triggers)))
    prose = _docstring_lines(tree)
    trigger_lines = [line for line in trigger_lines if line not in prose]
    if not trigger_lines:
        # Mentioned only in docstrings or comments: no code here can matter.
        return SparseSource("", ((1, 1),))
    trigger_lines = _with_callers(text, tree, trigger_lines, prose)
    candidates: list[tuple[str, int, int]] = []
    for node in tree.body:
        if not isinstance(node, _DEFINITIONS):
            continue
        first, last = _span(node)
        if not _any_between(trigger_lines, first, last):
            candidates.append((node.name, first, last))
        if isinstance(node, ast.ClassDef):
            # Methods can go one by one, but a class body must keep at least one statement.
            members = [
                (member.name, *_span(member))
                for member in node.body
                if isinstance(member, _DEFINITIONS)
                and not _any_between(trigger_lines, *_span(member))
            ]
            if len(members) < len(node.body):
                candidates.extend(members)
    imports = _droppable_imports(tree, trigger_lines)
    if not candidates and not imports:
        return SparseSource(text, ((1, 1),))
    # Keep the helpers that the code which matters refers to by name (a function handed to
    # `tf.py_function`, a loss helper): rules may look into them.
    without_all = _without(text, [(first, last) for _, first, last in candidates])
    referenced = set(_IDENTIFIER.findall(without_all.text))
    dropped = [(first, last) for name, first, last in candidates if name not in referenced]
    if imports:
        # Then the imports that nothing kept (the helpers just kept included) refers to.
        kept = _without(text, [*dropped, *((first, last) for _, first, last in imports)])
        used = set(_IDENTIFIER.findall(kept.text))
        dropped += [(first, last) for names, first, last in imports if not names & used]
    if not dropped:
        return SparseSource(text, ((1, 1),))
    return _without(text, dropped)


def _with_callers(
    text: str, tree: ast.Module, trigger_lines: list[int], prose: set[int]
) -> list[int]:
    """`trigger_lines` plus the lines that use, by name, what mentions a trigger: a
    top-level function or a method, a module-level name assigned on a trigger line
    (`train_step = tf.function(train_step)`), or an attribute a method assigns on one
    (`self.step = tf.function(self._step)`). The loop that runs a training step
    (`for batch in ds: train_step(batch)`, `self.step(...)`) matters as much as the step.
    One level only; dunder names are left out (`super().__init__` is everywhere)."""
    names: set[str] = set()
    for node in tree.body:
        members = node.body if isinstance(node, ast.ClassDef) else ()
        for definition in (node, *members):
            if isinstance(definition, _DEFINITIONS) and _any_between(
                trigger_lines, *_span(definition)
            ):
                names.add(definition.name)
                if definition is not node:
                    names.update(_assigned_on(definition.body, trigger_lines))
        names.update(_assigned_on([node], trigger_lines))
    names = {name for name in names if not name.startswith("__")}
    if not names:
        return trigger_lines
    pattern = re.compile(r"\b(?:" + "|".join(sorted(map(re.escape, names))) + r")\b")
    lines = set(trigger_lines)
    line, last = 1, 0
    for match in pattern.finditer(text):
        line += text.count("\n", last, match.start())
        last = match.start()
        if line not in prose and _is_code(text[text.rfind("\n", 0, last) + 1 : last]):
            lines.add(line)
    return sorted(lines)


def _assigned_on(statements: list[ast.stmt], trigger_lines: list[int]) -> set[str]:
    """Names (and `self.` attributes) bound by these assignments when they span a trigger
    line."""
    names: set[str] = set()
    for stmt in statements:
        if not isinstance(stmt, ast.Assign | ast.AnnAssign):
            continue
        if not _any_between(trigger_lines, stmt.lineno, stmt.end_lineno or stmt.lineno):
            continue
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        for target in targets:
            if isinstance(target, ast.Name):
                names.add(target.id)
            elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
                names.add(target.attr)
    return names


def _droppable_imports(
    tree: ast.Module, trigger_lines: list[int]
) -> list[tuple[frozenset[str], int, int]]:
    """Top-level `from m import a, b as c` statements that may go when nothing kept uses the
    names they bind, with those names: a re-exporting `__init__.py` is hundreds of them, and
    the analysis only needs the imports of names the kept code uses.

    Kept always: `import m` (it binds the module aliases, like `tf`, that fixes write),
    imports from `tensorflow` itself or `tensorflow.compat` (module aliases too), star
    imports, relative imports, lines that mention a trigger, and statements that share a
    line with another statement (line ranges are what gets cut).
    """
    found = []
    body = tree.body
    for index, node in enumerate(body):
        if not isinstance(node, ast.ImportFrom) or node.level or node.module is None:
            continue
        module = node.module
        if module == "tensorflow" or module.startswith("tensorflow.compat"):
            continue
        if any(alias.name == "*" for alias in node.names):
            continue
        first, last = node.lineno, node.end_lineno or node.lineno
        if index and (body[index - 1].end_lineno or 0) >= first:
            continue
        if index + 1 < len(body) and body[index + 1].lineno <= last:
            continue
        if _any_between(trigger_lines, first, last):
            continue
        names = frozenset(alias.asname or alias.name for alias in node.names)
        found.append((names, first, last))
    return found


def _docstring_lines(tree: ast.Module) -> set[int]:
    """Lines of the docstrings of top-level definitions and their members: a tape in an
    example there (`>>> with tf.GradientTape() as g:`) is prose, not code."""
    lines: set[int] = set()
    pending: list[ast.AST] = [tree]
    for node in tree.body:
        if isinstance(node, _DEFINITIONS):
            pending.append(node)
            if isinstance(node, ast.ClassDef):
                pending.extend(m for m in node.body if isinstance(m, _DEFINITIONS))
    for node in pending:
        body = getattr(node, "body", [])
        if (
            body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            lines.update(range(body[0].lineno, (body[0].end_lineno or body[0].lineno) + 1))
    return lines


def _import_aliases(text: str, triggers: tuple[str, ...]) -> tuple[str, ...]:
    """Local names a trigger is imported as (`GradientTape as GT` makes `GT` a trigger).

    Each trigger is found with `str.find` and only then matched against ` as name`: a
    regular expression starting with a word boundary scans every position of the file, about
    forty times slower on large files."""
    aliases: set[str] = set()
    for trigger in triggers:
        start = text.find(trigger)
        while start != -1:
            end = start + len(trigger)
            if _word_boundary_before(text, start):
                match = _AS_ALIAS.match(text, end)
                if match is not None:
                    aliases.add(match.group(1))
            start = text.find(trigger, end)
    return tuple(sorted(aliases))


_AS_ALIAS = re.compile(r"\s+as\s+(\w+)")


def _word_boundary_before(text: str, index: int) -> bool:
    """What `\\b` means just before `text[index]`."""

    def is_word(char: str) -> bool:
        return char.isalnum() or char == "_"

    before = is_word(text[index - 1]) if index > 0 else False
    return before != is_word(text[index])


def _span(node: ast.stmt) -> tuple[int, int]:
    first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])
    return first, node.end_lineno or node.lineno


def _lines_mentioning(text: str, triggers: tuple[str, ...]) -> list[int]:
    positions = []
    for trigger in triggers:
        start = text.find(trigger)
        while start != -1:
            positions.append(start)
            start = text.find(trigger, start + 1)
    positions.sort()
    lines, line, last = [], 1, 0
    for position in positions:
        line += text.count("\n", last, position)
        last = position
        if _is_code(text[text.rfind("\n", 0, position) + 1 : position]):
            lines.append(line)
    return lines


def _is_code(line_prefix: str) -> bool:
    """Whether what follows `line_prefix` on its line is code: not in a comment, and not in
    a string that opened on this line (an error message that names `tf.function`).
    Strings that span lines are not followed; docstrings are handled separately."""
    quote = ""
    index = 0
    while index < len(line_prefix):
        char = line_prefix[index]
        if quote:
            if char == "\\":
                index += 1
            elif line_prefix.startswith(quote, index):
                index += len(quote) - 1
                quote = ""
        elif char == "#":
            return False
        elif char in "\"'":
            quote = char * 3 if line_prefix.startswith(char * 3, index) else char
            index += len(quote) - 1
        index += 1
    return not quote


def _any_between(sorted_lines: list[int], first: int, last: int) -> bool:
    index = bisect.bisect_left(sorted_lines, first)
    return index < len(sorted_lines) and sorted_lines[index] <= last


def _without(text: str, dropped: list[tuple[int, int]]) -> SparseSource:
    # Split on line ends only: str.splitlines would also split on form feeds and the like,
    # which are not line ends to the parser.
    lines = text.split("\n")
    lines = [line + "\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])
    kept: list[str] = []
    segments: list[tuple[int, int]] = []
    line = 1
    for first, last in sorted(dropped):
        if line < first:
            segments.append((len(kept) + 1, line))
            kept.extend(lines[line - 1 : first - 1])
        line = max(line, last + 1)
    if line <= len(lines):
        segments.append((len(kept) + 1, line))
        kept.extend(lines[line - 1 :])
    if not segments:
        segments.append((1, 1))
    return SparseSource("".join(kept), tuple(segments))
