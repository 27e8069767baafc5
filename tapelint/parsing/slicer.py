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
import codecs
import dataclasses
import functools
import io
import itertools
import re
import tokenize
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from tapelint.sources.colab_exports import as_ipython, is_colab_export
from tapelint.sources.percent_cells import runs_as_cells

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_DEFINITIONS = (*_FUNCTIONS, ast.ClassDef)
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_WORD = re.compile(r"\w+")  # a whole word: what `\bname\b` matches when it is `name`


# Triggers that library code mentions mostly in prose or in definitions: `tf.function` is in
# 226 of TensorFlow's and Keras' own files, most of them only in words (docstrings, doctests,
# comments, error messages), and `apply_gradients` is defined by every optimizer class. A
# mention of one of these counts only where code can use it: on a line that does not start
# with `#`, `>>>` or `...` and has no backtick or `#` before it, and in the shape of a use:
# a decorator `@tf.function` or a call `tf.function(...)`, a method call
# `.apply_gradients(...)`. (`step = tf.function` without a call, or a module alias such as
# `T.function`, is not seen; see the TAP501 docs.) `.gradient(` (a tape's gradient call in a
# helper that is handed the tape, in a module that never names `GradientTape`) is held to
# the same code-shaped line, and NumPy's (and PyTorch's) `gradient` function is not one.
# The prefilter and the slicer both ask `TriggerTest`.
USE_SHAPES = {
    "tf.function": r"(?:(?<=@)tf\.function\b|(?<![\w.])tf\.function\s*\()",
    "tensorflow.function": r"(?:(?<=@)tensorflow\.function\b|(?<![\w.])tensorflow\.function\s*\()",
    "apply_gradients": r"(?<=\.)apply_gradients\s*\(",
    ".gradient(": r"(?<!np)(?<!numpy)(?<!torch)\.gradient\(",
}


class TriggerTest:
    """Where a source mentions a trigger where code could use it.

    Each trigger is found with `str.find` (or `bytes.find`) and each occurrence is then
    checked where it stands: a pattern scanning the whole file for a line shape costs about
    a millisecond per file, and most occurrences are few."""

    def __init__(self, triggers: tuple[str, ...]) -> None:
        self._text = [(t, _compiled(t)) for t in triggers]
        self._bytes = [(t.encode(), _compiled(t, bytes_=True)) for t in triggers]

    def in_bytes(self, data: bytes) -> bool:
        ends = _line_ends(data)
        return any(_first_code_use(data, t, shape, ends) for t, shape in self._bytes)

    def in_text(self, text: str) -> bool:
        ends = _line_ends(text)
        return any(_first_code_use(text, t, shape, ends) for t, shape in self._text)

    def positions(self, text: str) -> list[int]:
        """Where each use of a trigger starts, ascending, whatever the line looks like: the
        slicer tells code from prose exactly (`Literals`)."""
        return sorted(position for t, shape in self._text for position in _uses(text, t, shape))


def _compiled(trigger: str, *, bytes_: bool = False) -> re.Pattern | None:
    shape = USE_SHAPES.get(trigger)
    if shape is None:
        return None
    return re.compile(shape.encode() if bytes_ else shape)


_PROSE_STARTS = ("#", ">>>", "...")


def _uses(source, trigger, shape):  # str or bytes throughout
    start = source.find(trigger)
    while start != -1:
        if shape is None or shape.match(source, start):
            yield start
        start = source.find(trigger, start + 1)


def _line_ends(source):  # str or bytes
    """What ends a line of `source`: `\n`, and `\r` when it has any (a lone one is an old
    Mac line end; looking for one in a file that has none would scan back to its start)."""
    newline, carriage_return = ("\n", "\r") if isinstance(source, str) else (b"\n", b"\r")
    return (newline, carriage_return) if carriage_return in source else (newline,)


def _first_code_use(source, trigger, shape, line_ends) -> bool:
    """Whether a trigger is used where code could use it. Only the shaped triggers are held
    to a code-shaped line: the others are rarely in prose, and the slicer sorts out prose.
    A line starts after any of `line_ends`."""
    for start in _uses(source, trigger, shape):
        if shape is None:
            return True
        line_start = max(source.rfind(end, 0, start) for end in line_ends)
        prefix = source[line_start + 1 : start]
        if _code_shaped(prefix if isinstance(prefix, str) else prefix.decode("latin-1")):
            return True
    return False


def _code_shaped(line_prefix: str) -> bool:
    """Whether what follows `line_prefix` can be code: the line does not start a comment or
    a doctest, and no backtick or `#` comes before (Markdown prose, a comment)."""
    return not line_prefix.lstrip().startswith(_PROSE_STARTS) and not (
        "`" in line_prefix or "#" in line_prefix
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
    # The whole original text parsed with `ast`, when slicing parsed it: the analysis
    # reuses it rather than parse the file a second time.
    tree: ast.Module | None = field(default=None, compare=False, repr=False)

    def original_line(self, line: int) -> int:
        index = bisect.bisect_right(self.segments, (line, float("inf"))) - 1
        sparse_start, original_start = self.segments[max(index, 0)]
        return original_start + (line - sparse_start)

    def slice_line(self, original: int) -> int | None:
        """The line of `text` that line `original` of the original is; None for a line that
        was cut out (the inverse of `original_line`)."""
        index = bisect.bisect_right(self._original_starts, original) - 1
        if index < 0:
            return None
        sparse_start, original_start = self.segments[index]
        line = sparse_start + (original - original_start)
        end = self.segments[index + 1][0] if index + 1 < len(self.segments) else self._end
        return line if line < end else None

    @functools.cached_property
    def _original_starts(self) -> list[int]:
        return [original for _, original in self.segments]

    @functools.cached_property
    def _end(self) -> int:
        """The line after the last line of `text` (a line end ends a line, and starts none)."""
        return self.text.count("\n") + (1 if self.text.endswith("\n") else 2)


def mentions(text: str, triggers: tuple[str, ...]) -> bool:
    return TriggerTest(triggers).in_text(text)


def relevant_source(
    text: str,
    triggers: tuple[str, ...],
    parse: Callable[[str], ast.Module] = ast.parse,
) -> SparseSource | SyntaxProblem:
    """`text` without top-level definitions that cannot matter to rules with these triggers.

    A file whose every mention of a trigger is inside a string or a comment has nothing to
    parse (and is not syntax-checked either: TAP001 is for files whose code could matter).
    Lines end at `\n` (or `\r\n`): the engine makes lone carriage returns newlines first
    (`engine.with_newline_line_ends`). `parse` is `ast.parse`, or what stands for it (the
    language server's `IncrementalParser.parse_tree`)."""
    literals = Literals(text)
    positions = TriggerTest(triggers).positions(text)
    if all(literals.contains(position) for position in positions):
        return SparseSource("", ((1, 1),))
    try:
        tree = parse(text)
    except SyntaxError as error:
        if runs_as_cells(text):
            return SparseSource("", ((1, 1),))  # run cell by cell: see percent_cells
        if is_colab_export(text):
            ipython = as_ipython(text)
            if ipython is not None and ipython != text:
                return relevant_source(ipython, triggers, parse)  # see colab_exports
        return SyntaxProblem(error.lineno or 1, error.offset or 1, error.msg)
    except ValueError as error:  # e.g. null bytes on older interpreters
        return SyntaxProblem(1, 1, str(error))
    except (RecursionError, MemoryError):  # how CPython's parser rejects deep nesting
        return SyntaxProblem(1, 1, "nested too deeply for Python's parser")
    aliases = _import_aliases(text, tree, triggers)
    if aliases:
        positions = sorted([*positions, *TriggerTest(aliases).positions(text)])
    trigger_lines = _lines_of(text, [p for p in positions if not literals.contains(p)])
    trigger_lines = _with_callers(text, tree, trigger_lines, literals)
    candidates: list[tuple[str, int, int]] = []
    members: list[tuple[int, int]] = []  # methods that may go from a class that stays
    for node in tree.body:
        if not isinstance(node, _DEFINITIONS):
            continue
        first, last = _span(node)
        if not _any_between(trigger_lines, first, last):
            candidates.append((node.name, first, last))
        if isinstance(node, ast.ClassDef):
            # Methods can go one by one, but a class body must keep at least one statement.
            methods = [
                (member.name, *_span(member))
                for member in node.body
                if isinstance(member, _DEFINITIONS)
                and not _any_between(trigger_lines, *_span(member))
            ]
            if len(methods) < len(node.body):
                candidates.extend(methods)
                members.extend((first, last) for _, first, last in methods)
    imports = _droppable_imports(tree, trigger_lines)
    if not candidates and not imports:
        return SparseSource(text, ((1, 1),), tree)
    # Keep the helpers that the code which matters refers to by name (a function handed to
    # `tf.py_function`, a loss helper): rules may look into them.
    # Names in docstrings and comments refer to nothing (a class docstring's `model.fit(...)`
    # example must not keep `fit`).
    code = literals.blanked(text)
    referenced = _referenced(code, candidates, _held_classes(tree, trigger_lines))
    dropped = [(first, last) for name, first, last in candidates if name not in referenced]
    if imports:
        # Then the imports that nothing kept (the helpers just kept included) refers to, nor
        # the cut-out methods of a class that stays: what its `__init__` or a model-building
        # method makes is read back from the text (`keras_objects`), names resolved by these.
        kept = _without(code, [*dropped, *((first, last) for _, first, last in imports)])
        used = set(_IDENTIFIER.findall(kept.text))
        lines = code.splitlines(keepends=True)
        for first, last in members:
            if (first, last) in dropped and not _inside_any(dropped, first, last):
                used.update(_IDENTIFIER.findall("".join(lines[first - 1 : last])))
        dropped += [(first, last) for names, first, last in imports if not names & used]
    if not dropped:
        return SparseSource(text, ((1, 1),), tree)
    return dataclasses.replace(_without(text, dropped), tree=tree)


def _inside_any(spans: list[tuple[int, int]], first: int, last: int) -> bool:
    """Whether another span (a whole class that goes) holds lines `first`..`last`."""
    return any(a <= first and last <= b and (a, b) != (first, last) for a, b in spans)


def _referenced(
    code: str, candidates: list[tuple[str, int, int]], held: frozenset[str] = frozenset()
) -> set[str]:
    """The names that the code which matters refers to, with those that the helpers it
    refers to refer to, transitively: a loss method that calls another method of the class
    (`self._loss` calling `self._predictions`), which a rule may follow too. `held`: the
    classes whose objects a class that matters holds (`_held_classes`), referred to from
    a method that may itself be cut (`__init__`)."""
    without_all = _without(code, [(first, last) for _, first, last in candidates])
    referenced = set(_IDENTIFIER.findall(without_all.text)) | held
    lines = code.splitlines(keepends=True)
    pending = [c for c in candidates if c[0] in referenced]
    inside: dict[tuple[str, int, int], set[str]] = {}
    while pending:
        candidate = pending.pop()
        if candidate not in inside:
            _, first, last = candidate
            inside[candidate] = set(_IDENTIFIER.findall("".join(lines[first - 1 : last])))
        new = inside[candidate] - referenced
        if new:
            referenced |= new
            pending += [c for c in candidates if c[0] in new]
    return referenced


def _held_classes(tree: ast.Module, trigger_lines: list[int]) -> frozenset[str]:
    """The names of the classes whose objects a class with a trigger line stores on `self`
    (`self.accumulator = GradientAccumulator(...)`, in `__init__` or any other method): a
    method called on that attribute (`self.accumulator.add(grads)`) resolves to theirs
    (`analysis.calls.objects`), so they must be parsed with it."""
    held: set[str] = set()
    for node in tree.body:
        if not isinstance(node, ast.ClassDef) or not _any_between(trigger_lines, *_span(node)):
            continue
        for stmt in _statements_in(node):
            if not isinstance(stmt, ast.Assign) or not isinstance(stmt.value, ast.Call):
                continue
            func = stmt.value.func
            stores_on_self = any(
                isinstance(t, ast.Attribute)
                and isinstance(t.value, ast.Name)
                and t.value.id == "self"
                for t in stmt.targets
            )
            if stores_on_self and isinstance(func, ast.Name):
                held.add(func.id)
    return frozenset(held)


# The fields of a statement (or an `except` handler, a `case`) that hold statements.
_STATEMENT_LISTS = ("body", "orelse", "finalbody", "handlers", "cases")


def _statements_in(node: ast.ClassDef) -> Iterator[ast.AST]:
    """The statements of a class body at any depth (nested blocks and definitions too), and
    its `except` handlers and `case` clauses, without the expressions `ast.walk` would also
    visit: the assignments `_held_classes` looks for are statements, and walking every
    expression of every class with a trigger was about a third of slicing a file."""
    pending: list[ast.AST] = list(node.body)
    while pending:
        stmt = pending.pop()
        yield stmt
        for name in _STATEMENT_LISTS:
            inner = getattr(stmt, name, None)
            if isinstance(inner, list):
                pending.extend(inner)


def _with_callers(
    text: str, tree: ast.Module, trigger_lines: list[int], literals: Literals
) -> list[int]:
    """`trigger_lines` plus the lines that use, by name, what mentions a trigger: a
    top-level function or a module-level name assigned on a trigger line
    (`train_step = tf.function(train_step)`), used by its bare name, or a method or an
    attribute a method assigns on one (`self.step = tf.function(self._step)`), used as an
    attribute (`self.step(...)`, `trainer.fit(...)`). The loop that runs a training step
    (`for batch in ds: train_step(batch)`) matters as much as the step.

    One level only; dunder names are left out (`super().__init__` is everywhere), and so
    are other definitions of the same name: a method `call` with a tape must not keep every
    other layer's `def call` (Keras calls it through `__call__`, not by name)."""
    bare: set[str] = set()
    attributes: set[str] = set()
    for node in tree.body:
        if isinstance(node, _FUNCTIONS) and _any_between(trigger_lines, *_span(node)):
            bare.add(node.name)
        bare.update(_assigned_on([node], trigger_lines, attributes))
        for member in node.body if isinstance(node, ast.ClassDef) else ():
            if isinstance(member, _DEFINITIONS) and _any_between(trigger_lines, *_span(member)):
                attributes.add(member.name)
                _assigned_on(member.body, trigger_lines, attributes)
    bare = {name for name in bare if not name.startswith("__")}
    attributes = {name for name in attributes if not name.startswith("__")}
    uses = [
        position
        for position in (*_name_uses(text, bare), *_name_uses(text, attributes, after_dot=True))
        if not literals.contains(position)
        and (text[position] == "." or not _defines_or_follows_dot(text, position))
    ]
    return sorted({*trigger_lines, *_lines_of(text, sorted(uses))})


def _name_uses(text: str, names: set[str], *, after_dot: bool = False) -> list[int]:
    """Where `names` occur as whole words; `after_dot`: right after a `.`, where the dot
    is. One pass over the words of the text, each looked up in the set: an alternation of
    the names made the regular expression engine try each of them at every word (a file
    of training steps has hundreds)."""
    if not names:
        return []
    if after_dot:
        return [
            match.start() - 1
            for match in _WORD.finditer(text)
            if match.group() in names and match.start() and text[match.start() - 1] == "."
        ]
    return [match.start() for match in _WORD.finditer(text) if match.group() in names]


def _defines_or_follows_dot(text: str, position: int) -> bool:
    """Whether the name at `position` is an attribute (`x.name`) or being defined
    (`def name`, `class name`)."""
    before = text[max(0, position - 6) : position]
    return before.endswith((".", "def ", "class "))


def _assigned_on(
    statements: list[ast.stmt], trigger_lines: list[int], attributes: set[str]
) -> set[str]:
    """Names bound by these assignments when they span a trigger line; the `self.`
    attributes they bind go into `attributes`."""
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
                attributes.add(target.attr)
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


def _import_aliases(text: str, tree: ast.Module, triggers: tuple[str, ...]) -> tuple[str, ...]:
    """Local names a trigger is imported as (`GradientTape as GT` makes `GT` a trigger).

    Each trigger is found with `str.find` and only then matched against ` as name`: a
    regular expression starting with a word boundary scans every position of the file, about
    forty times slower on large files. A match counts only when an import statement binds
    it: prose such as "supported by tf.function as an attribute" must not make `an` a
    trigger."""
    found: set[str] = set()
    for trigger in triggers:
        start = text.find(trigger)
        while start != -1:
            end = start + len(trigger)
            if _word_boundary_before(text, start):
                match = _AS_ALIAS.match(text, end)
                if match is not None:
                    found.add(match.group(1))
            start = text.find(trigger, end)
    if not found:
        return ()
    imported = {trigger.rpartition(".")[2] for trigger in triggers}
    return tuple(
        sorted(
            alias.asname
            for node in ast.walk(tree)
            if isinstance(node, ast.Import | ast.ImportFrom)
            for alias in node.names
            if alias.asname in found and alias.name.rpartition(".")[2] in imported
        )
    )


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


def _lines_of(text: str, positions: list[int]) -> list[int]:
    """The 1-based lines of ascending character positions."""
    lines, line, last = [], 1, 0
    for position in positions:
        line += text.count("\n", last, position)
        last = position
        lines.append(line)
    return lines


# Comments and string literals, found left to right: a quote inside a comment, or a `#`
# inside a string, is consumed by the literal it belongs to. (Prefixes such as `r` or `f`
# need no pattern: a backslash never ends a string, raw or not.)
_LITERAL = re.compile(
    r"""\#[^\n]*|'''(?:[^\\]|\\.)*?'''|\"\"\"(?:[^\\]|\\.)*?\"\"\"|'(?:[^\\'\n]|\\.)*'|"(?:[^\\"\n]|\\.)*\"""",
    re.S,
)


class Literals:
    """Where a source's comments and string literals (docstrings included) are: a trigger
    in one is prose (`>>> with tf.GradientTape() as g:`, an error message naming
    `tf.function`), not code. A regular expression finds them about forty times faster
    than `ast.parse` parses the file."""

    def __init__(self, text: str) -> None:
        spans = [match.span() for match in _LITERAL.finditer(text)]
        self._starts = [start for start, _ in spans]
        self._ends = [end for _, end in spans]

    def contains(self, position: int) -> bool:
        index = bisect.bisect_right(self._starts, position) - 1
        return index >= 0 and position < self._ends[index]

    def blanked(self, text: str) -> str:
        """`text` with every literal emptied but its line ends kept: code only, same lines."""
        parts = []
        last = 0
        for start, end in zip(self._starts, self._ends, strict=True):
            parts.append(text[last:start])
            parts.append("\n" * text.count("\n", start, end))
            last = end
        parts.append(text[last:])
        return "".join(parts)


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


# Levels of nesting (statements and expressions of Python's syntax tree) below which a
# file is never too deep to check: libcst's tree is walked recursively, and Python's stack
# ends near 300 levels of `a + a + ...` (each level takes several frames); ordinary code is
# nested less than 30 levels. A recursion error in a file nested less is an engine bug.
DEEP_NESTING = 100


def too_deeply_nested(source: ast.Module | str) -> SyntaxProblem | None:
    """The TAP001 problem of a module (its `ast` tree, or its text) nested DEEP_NESTING
    levels or more, at its deepest node; None when it is nested less."""
    if isinstance(source, str):
        try:
            source = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return SyntaxProblem(1, 1, "nested too deeply for Python's parser")
    deepest: tuple[int, ast.AST] = (0, source)
    pending: list[tuple[ast.AST, int]] = [(source, 0)]
    while pending:
        node, depth = pending.pop()
        deepest = max(deepest, (depth, node), key=lambda found: found[0])
        for child in ast.iter_child_nodes(node):
            if hasattr(child, "lineno"):  # not an operator or a context
                pending.append((child, depth + 1))
    depth, node = deepest
    if depth < DEEP_NESTING:
        return None
    line, column = getattr(node, "lineno", 1), getattr(node, "col_offset", 0) + 1
    return SyntaxProblem(line, column, f"nested too deeply for libcst ({depth} levels)")


# What libcst is given to parse at most, in tokens (a name, a number, an operator...). Its
# tree costs about 2 kB a token (a list literal of 100,000 numbers: 400 MB, and 6 s), so a
# data literal of millions of elements would take gigabytes. The code that may matter in
# the largest file with a trigger in TensorFlow's sources is 14,000 tokens.
MAX_PARSE_TOKENS = 200_000
_TOKEN = re.compile(r"\w+|[^\w\s]")


def too_large_to_parse(text: str) -> SyntaxProblem | None:
    """The TAP001 problem of code (what the slicer kept) with more than MAX_PARSE_TOKENS
    tokens; None for anything smaller (counted only when its length does not settle it)."""
    if len(text) <= MAX_PARSE_TOKENS:
        return None
    tokens = sum(1 for _ in itertools.islice(_TOKEN.finditer(text), MAX_PARSE_TOKENS + 1))
    if tokens <= MAX_PARSE_TOKENS:
        return None
    problem = f"more than {MAX_PARSE_TOKENS:,} tokens of code to parse (a large data literal?)"
    return SyntaxProblem(1, 1, problem)


def encoding_declaration_problem(data: bytes) -> SyntaxProblem | None:
    """The TAP001 problem of source that starts with a UTF-8 byte order mark but declares
    another encoding in a coding cookie: Python refuses to run it (a SyntaxError, "encoding
    problem"), although either encoding may decode its bytes. None for any other source
    (an unknown or undecodable encoding is not a syntax problem but a TAP002)."""
    if not data.startswith(codecs.BOM_UTF8):
        return None
    try:  # the cookie alone, as Python reads it (the first two lines)
        after_bom = io.BytesIO(data[len(codecs.BOM_UTF8) :])
        declared, lines = tokenize.detect_encoding(after_bom.readline)
    except SyntaxError:
        return None
    if declared == "utf-8":  # the cookie says UTF-8 too, or there is none
        return None
    problem = f"the file starts with a UTF-8 byte order mark but declares {declared}"
    return SyntaxProblem(len(lines), 1, problem)
