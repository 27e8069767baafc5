"""What IPython runs for a notebook cell, line for line, without IPython.

Jupyter does not compile a cell's text as it is: IPython transforms it first
(`InteractiveShell.transform_cell`: the steps of `IPython.core.inputtransformer2`, then
automagic for a one-line cell). tapelint applies the same steps, so that a cell is TAP001
only when IPython could not run it either. Unlike IPython, every step here keeps the cell's
lines where they are: line N of the result is line N of the cell, shorter at most by the
indentation removed from its start, so a position maps back with a per-line column shift.

1. Leading blank lines are ignored (they stay blank lines here).
2. Leading indentation is removed. IPython 9.0.2 and later remove the indentation common to
   all non-blank lines (as `textwrap.dedent` does); IPython 7, 8 and 9.0.0-9.0.1 remove the
   first line's indentation from every line that starts with it. A cell is read the first way
   when that gives Python, else the second way: TAP001 means no current IPython runs it.
   Prompts pasted with code (`>>> `, `... `, `In [3]: `, `...: `) are then taken off every
   line when the first line or the second has one (IPython 9.9 also strips indented doctest
   prompts; those cells are read the older way).
3. A cell magic (`%%name` starting the first non-blank line, or the first line after
   Colab form annotations such as `#@title Setup`, which Colab runs with the magic):
   `%%time`, `%%timeit`,
   `%%capture` and `%%prun` run their body as a cell of its own (transformed again from step
   1), and so do the cell magics a notebook registers itself to run their cell as Python
   (the caller names them: see tapelint.sources.cell_magics); any other cell magic's body is not
   Python (`%%bash`, `%%writefile`, ...) and the cell is left out.
4. IPython lines, found per logical line (outside strings, brackets and backslash
   continuations, as IPython finds them in tokens, so a `%` continuing an expression or
   inside a docstring stays Python), become `pass` at their indentation:
   - an escape as the first token, also after indentation: `%magic`, `!cmd`, `!!cmd`,
     `?obj`, `??obj`, and the autocall escapes `,f a b`, `;f a b`, `/f a b`; with the
     lines it continues onto with a backslash;
   - help at the end of a logical line whose target is a dotted name (`model.fit?`,
     `tf.GradientTape??`, `%timeit?`), the whole logical line. Help after anything else
     (`f(x)?`, a space after the `?`) fails in IPython too, and is left to fail;
   - an assignment from a magic or the shell (`x = %time f()`, `files = !ls`), from the
     start of its logical line to the end of the magic's backslash continuation;
   - a cell of one line that is not Python and starts with the name of a magic
     (`pip install x`, `ls data/`): IPython's automagic runs it as that magic. (It does so
     only for one-line cells, and only when no variable of that name exists, which only the
     running kernel knows; tapelint assumes none does.)
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tapelint.parsing.slicer import SyntaxProblem

# A line of a Colab form: `#@title Setup`, `# @markdown Some text`.
_COLAB_FORM = re.compile(r"\s*#\s*@(?:title|markdown)\b")
# Cell magics whose body IPython runs as Python in the kernel's namespace.
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun"})
# The magics IPython 8 and 9 and ipykernel define (line or cell magics, and the default shell
# aliases on POSIX): without its `%`, a one-line cell starting with one of them is run as
# that magic.
# fmt: off
AUTOMAGIC_NAMES = frozenset({
    "HTML", "SVG", "alias", "alias_magic", "autoawait", "autocall", "automagic", "autosave",
    "bash", "bookmark", "capture", "cat", "cd", "clear", "code_wrap", "colors", "conda",
    "config", "connect_info", "cp", "debug", "dhist", "dirs", "doctest_mode", "ed", "edit",
    "env", "file", "gui", "hist", "history", "html", "javascript", "js", "killbgscripts",
    "latex", "ldir", "less", "lf", "lk", "ll", "load", "load_ext", "loadpy", "logoff", "logon",
    "logstart", "logstate", "logstop", "ls", "lsmagic", "lx", "macro", "magic", "mamba", "man",
    "markdown", "matplotlib", "micromamba", "mkdir", "more", "mv", "notebook", "page",
    "pastebin", "pdb", "pdef", "pdoc", "perl", "pfile", "pinfo", "pinfo2", "pip", "popd",
    "pprint", "precision", "prun", "psearch", "psource", "pushd", "pwd", "pycat", "pylab",
    "pypy", "python", "python2", "python3", "qtconsole", "quickref", "recall", "rehashx",
    "reload_ext", "rep", "rerun", "reset", "reset_selective", "rm", "rmdir", "ruby", "run",
    "save", "sc", "script", "set_env", "sh", "svg", "sx", "system", "tb", "time", "timeit",
    "unalias", "unload_ext", "uv", "who", "who_ls", "whos", "writefile", "xdel", "xmode",
})
# fmt: on
# What an IPython line reads as (after its indentation).
NEUTRAL = "pass  # tapelint: IPython syntax"

_ESCAPES = frozenset("!?%,;/")
# The target of help at the end: a dotted name (wildcards allowed), right before `?` or `??`.
_HELP_END = re.compile(r"%{0,2}[A-Za-z_*][\w*]*(?:\.[A-Za-z_*][\w*]*)*\?\??$")
# How IPython splits a line into its first word and the rest, to look for a magic.
_FIRST_WORD = re.compile(r"\s*(%{0,2}[\w.*]*)(.*)")
# Prompts pasted with the code: (on the first line, on any line), Python's and IPython's.
_PROMPTS = (
    (re.compile(r">>>( |$)"), re.compile(r"(>>>|\.\.\.)( |$)")),
    (re.compile(r"In \[\d+\]: |\s*\.{3,}: ?"), re.compile(r"In \[\d+\]: |\s*\.{3,}: ?")),
)
# Characters that, before `=`, make it part of another operator (`==`, `<=`, `+=`, `:=`...).
_BEFORE_OPERATOR_EQUALS = frozenset("=!<>+-*/%&|^@:")


@dataclass(frozen=True)
class CellCode:
    """A cell as the Python IPython runs, one line for each line of the cell."""

    lines: tuple[str, ...]
    removed: tuple[str, ...]  # the indentation taken off the start of each line
    special: frozenset[int]  # 0-based indexes of the lines that stood for IPython syntax
    # What a line added to the cell needs in front, for IPython to take it off again.
    indent: str = ""
    python: bool = True  # False: a cell magic whose body is not Python (the lines are blank)

    def column_in_cell(self, line: int, column: int) -> int:
        """The cell's column for 1-based (line, column) of `lines`."""
        if 1 <= line <= len(self.removed):
            return column + len(self.removed[line - 1])
        return column


def cell_code(
    lines: Sequence[str], python_magics: frozenset[str] = PYTHON_CELL_MAGICS
) -> CellCode | SyntaxProblem:
    """What IPython runs for a cell of these lines (no line ends), or why it cannot run it.
    `python_magics`: the cell magics whose body runs as Python."""
    lines = list(lines)
    if _parses("\n".join(lines)):
        return CellCode(tuple(lines), ("",) * len(lines), frozenset())
    problem: SyntaxProblem | None = None
    for dedent in (_common_indent, _first_line_indent):
        code = _transformed(lines, dedent, python_magics)
        found = _problem(code)
        if found is None:
            return code
        problem = problem or found
    assert problem is not None
    return problem


def _parses(text: str) -> bool:
    try:
        ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    return True


def _problem(code: CellCode) -> SyntaxProblem | None:
    if not code.python:
        return None
    try:
        ast.parse("".join(f"{line}\n" for line in code.lines))
    except SyntaxError as error:
        line = min(max(error.lineno or 1, 1), max(len(code.lines), 1))
        column = code.column_in_cell(line, error.offset or 1)
        return SyntaxProblem(line, column, error.msg)
    except ValueError as error:  # null bytes
        return SyntaxProblem(1, 1, str(error))
    return None


# ------------------------------------------------------------------ indentation


def _common_indent(lines: list[str], first: int) -> str:
    """IPython 9.0.2+: the indentation all non-blank lines share (blank: only spaces, tabs)."""
    indents = [_indentation(line) for line in lines[first:] if line.strip(" \t")]
    common = min(indents, key=len)
    while not all(indent.startswith(common) for indent in indents):
        common = common[:-1]
    return common


def _first_line_indent(lines: list[str], first: int) -> str:
    """IPython 7-9.0.1: the first non-blank line's indentation."""
    return _indentation(lines[first])


def _transformed(
    lines: list[str], dedent: Callable[[list[str], int], str], python_magics: frozenset[str]
) -> CellCode:
    first = next((i for i, line in enumerate(lines) if line and not line.isspace()), None)
    if first is None:
        return CellCode(tuple(lines), ("",) * len(lines), frozenset())
    prefix = dedent(lines, first)
    removed = [prefix if line.startswith(prefix) else "" for line in lines]
    body = [line[len(cut) :] for line, cut in zip(lines, removed, strict=True)]
    _strip_prompts(body, removed, first)
    magic = _after_form_lines(body, first)
    head = body[magic]
    if head.startswith("%%") and not re.match(r"%%\w+\?", head):
        return _cell_magic(body, removed, magic, prefix, dedent, python_magics)
    neutral, special = _neutralised(body)
    if len(body) == first + 1 and first not in special and _is_automagic(body[first]):
        neutral[first] = NEUTRAL
        special.add(first)
    return CellCode(tuple(neutral), tuple(removed), frozenset(special), prefix)


def _after_form_lines(body: list[str], first: int) -> int:
    """The first line after Colab's form annotations (`#@title ...`, `#@markdown ...`, and
    blank lines among them) when a cell magic follows them, else `first`: Colab runs a form
    cell's magic."""
    line = first
    while line < len(body) and (_COLAB_FORM.match(body[line]) or not body[line].strip()):
        line += 1
    if line < len(body) and body[line].startswith("%%"):
        return line
    return first


def _cell_magic(
    body: list[str],
    removed: list[str],
    first: int,
    prefix: str,
    dedent: Callable[[list[str], int], str],
    python_magics: frozenset[str],
) -> CellCode:
    name = body[first][2:].partition(" ")[0]
    if name not in python_magics:
        return CellCode(("",) * len(body), tuple(removed), frozenset(), prefix, python=False)
    inner = _transformed(body[first + 1 :], dedent, python_magics)
    start = first + 1
    return CellCode(
        (*body[:first], NEUTRAL, *inner.lines),
        (*removed[:start], *(removed[start + i] + cut for i, cut in enumerate(inner.removed))),
        frozenset({first, *(start + i for i in inner.special)}),
        prefix + inner.indent,
    )


def _strip_prompts(body: list[str], removed: list[str], first: int) -> None:
    """Take pasted `>>>`/`...` or `In [1]:`/`...:` prompts off every line (in place), when
    the first line has one or the second line has one."""
    for first_prompt, prompt in _PROMPTS:
        head = body[first : first + 2]
        if not (first_prompt.match(head[0]) or (len(head) > 1 and prompt.match(head[1]))):
            continue
        for index, line in enumerate(body):
            match = prompt.match(line)
            if match is not None:
                body[index] = line[match.end() :]
                removed[index] += match.group()


# ------------------------------------------------------------------ IPython lines


def _neutralised(lines: list[str]) -> tuple[list[str], set[int]]:
    """`lines` with each IPython line as a `pass` at its indentation; the indexes changed."""
    neutral = list(lines)
    special: set[int] = set()
    index = 0
    while index < len(lines):
        logical = _LogicalLine.scan(lines, index)
        span = logical.special_span(lines)
        if span is None:
            index = logical.end + 1
            continue
        indent = _indentation(lines[logical.start])
        for changed in range(span[0], span[1] + 1):
            neutral[changed] = f"{indent}{NEUTRAL}"
            special.add(changed)
        # What follows is scanned afresh, as IPython tokenises again after each change.
        index = span[1] + 1
    return neutral, special


@dataclass
class _LogicalLine:
    """One logical line: its physical lines, its first `=` at bracket depth 0, and whether
    its last token is a `?` (a comment or a string after it would be the last token)."""

    start: int
    end: int
    assign: tuple[int, int] | None  # (line, column)
    ends_in_question_mark: bool

    @classmethod
    def scan(cls, lines: list[str], start: int) -> _LogicalLine:
        depth = 0
        quote: str | None = None
        assign: tuple[int, int] | None = None
        last = ""  # the last token's kind: a code character, "string" or "comment"
        index = start
        while True:
            line = lines[index]
            column, length, continued = 0, len(line), False
            while column < length:
                char = line[column]
                if quote is not None:
                    if char == "\\":
                        continued = column == length - 1  # an escaped line end
                        column += 2
                    elif line.startswith(quote, column):
                        column += len(quote)
                        quote, last = None, "string"
                    else:
                        column += 1
                    continue
                if char == "#":
                    last = "comment"
                    break
                if char in "\"'":
                    quote = char * 3 if line.startswith(char * 3, column) else char
                    column += len(quote)
                    continue
                if char == "\\" and column == length - 1:
                    continued = True
                    break
                if char in "([{":
                    depth += 1
                elif char in ")]}":
                    depth = max(depth - 1, 0)
                elif char == "=" and depth == 0 and assign is None and _lone_equals(line, column):
                    assign = (index, column)
                if not char.isspace():
                    last = char
                column += 1
            if quote is not None and len(quote) == 1 and not continued:
                quote = None  # an unterminated string ends with its line
            more = continued or depth > 0 or quote is not None
            if not more or index + 1 >= len(lines):
                return cls(start, index, assign, last == "?")
            index += 1

    def special_span(self, lines: list[str]) -> tuple[int, int] | None:
        """The lines IPython replaces for this logical line, or None when it is Python."""
        first_line = lines[self.start]
        column = len(_indentation(first_line))
        if self.ends_in_question_mark:
            text = "\n".join(lines[self.start : self.end + 1])[column:]
            if _HELP_END.search(text):
                return (self.start, self.end)
        if _is_escape(first_line, column):
            return (self.start, _continued_end(lines, self.start))
        if self.assign is not None:
            line, at = self.assign
            text = lines[line]
            rest = text[at + 1 :].lstrip(" \t")
            magic = rest.startswith("%") and _starts_name(rest[1:].lstrip(" \t"))
            shell = rest.startswith("!") and not rest.startswith("!=") and text[:at].strip()
            if magic or shell:
                return (self.start, _continued_end(lines, line))
        return None


def _is_automagic(line: str) -> bool:
    """Whether IPython runs this line, alone in its cell, as a magic without its `%`
    (automagic, on by default: `pip install x`, `ls data/`): its first word names a magic
    and it is not Python."""
    match = _FIRST_WORD.match(line)
    assert match is not None  # every part of the pattern is optional
    name, rest = match.groups()
    return name in AUTOMAGIC_NAMES and rest[:1] not in ("=", ",") and not _parses(line)


def _indentation(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _lone_equals(line: str, column: int) -> bool:
    """Whether the `=` at `column` is an assignment, not part of `==`, `+=`, `<=`, ..."""
    after = line[column + 1 : column + 2]
    before = line[column - 1 : column] if column else ""
    return after != "=" and before not in _BEFORE_OPERATOR_EQUALS


def _is_escape(line: str, column: int) -> bool:
    """Whether the first token at `column` is one of IPython's escapes (not `!=`, `%=`,
    `/=`, `//`)."""
    char, after = line[column : column + 1], line[column + 1 : column + 2]
    if char not in _ESCAPES or not char:
        return False
    if char in "!%/" and after == "=":
        return False
    return not (char == "/" and after == "/")


def _starts_name(text: str) -> bool:
    return bool(text) and (text[0] == "_" or text[0].isidentifier())


def _continued_end(lines: list[str], index: int) -> int:
    """The last line of the backslash continuation starting at `index`."""
    while lines[index].endswith("\\") and index + 1 < len(lines):
        index += 1
    return index
