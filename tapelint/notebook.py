"""Jupyter notebooks: their code cells as one program, every position back to its cell, and
fixes written back into the cells.

How a notebook is read (decisions, in the order a user meets them):

- With the standard `json` module. A notebook is a JSON object with a `cells` list
  (nbformat 4); the reference library, nbformat, would add jsonschema validation and
  traitlets for the three keys read here. nbformat 3 files (`worksheets`) are refused with a
  hint to convert them. Notebooks whose kernel language is not Python are not checked.
- Code cells are joined in order into one program: the kernel runs them in one namespace, so
  a tape in one cell and its `apply_gradients` two cells later are one training step, and a
  persistent tape still bound at the end of the notebook stays alive in the kernel (TAP103).
  Markdown and raw cells are skipped. A comment line marks where each cell ends.
- IPython syntax is neutralised without shifting a line: a line magic, shell escape or help
  line (`%timeit f()`, `!pip install x`, `files = !ls`, `model.fit?`) becomes `pass` at the
  same indentation (with its backslash continuation lines), and a cell magic whose body is not
  Python (`%%bash`, `%%writefile`, ...) blanks its whole cell. `%%time`, `%%timeit`,
  `%%capture` and `%%prun` run their body as Python, so only their first line goes. A cell that
  is already valid Python is never touched, and a candidate line inside a multi-line string
  is put back, so `%` at the start of a continuation line or in a docstring is safe.
- A cell that does not parse on its own is TAP001 located in that cell; it is left out of the
  program (as blank lines) and the other cells are still checked.
- Positions are (cell, line within the cell): the cell is the 1-based index into the
  notebook's `cells` list, counting every cell, so it matches what Jupyter shows. A fix's edits
  say which cell each one changes.

How a notebook is fixed: the program is fixed like a file (same fixes, same re-lint passes,
same check that the result parses), then cut back into cells at the cell-end marks; the
neutralised IPython lines are put back, and only the changed cells' `source` is replaced. The
JSON is written back in the layout it was read in (indentation, key order, escaping, final
newline), which is checked by re-serialising the unchanged notebook first: when that does not
reproduce the file byte for byte (a hand-written file, numbers json cannot round-trip), the
notebook is left alone with a warning rather than reformatted.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tapelint.diagnostics import Diagnostic, Edit, Fix, Position
from tapelint.engine import FileAnalysis, Linter, ModuleContext
from tapelint.fixer import FixError, fix_source
from tapelint.source import SyntaxProblem

# Cell magics whose body IPython runs as Python.
_PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun"})
_CELL_MAGIC = re.compile(r"\s*%%(?P<name>\w+)")
# `%magic`, `!cmd`, `!!cmd` (not `!=`), `?name`, `name?`, `name??`, `x = !cmd`, `x = %magic`.
_LINE_ESCAPE = re.compile(
    r"""^(?P<indent>[ \t]*)(?:
        %
      | !(?!=)
      | \?
      | [A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*\s*=\s*(?:%|!(?!=))
      | [^#]*[\w.)\]]\?{1,2}\s*$
    )""",
    re.VERBOSE,
)
# What a neutralised IPython line reads as (after its indentation), and the cell-end mark.
_NEUTRAL = "pass  # tapelint: IPython syntax"
_CELL_END = "# tapelint: end of cell"


class NotebookError(Exception):
    """A file that is not a notebook tapelint can read; the message says why (TAP002)."""


@dataclass(frozen=True)
class CodeCell:
    number: int  # 1-based index into the notebook's `cells`
    source: str  # as in the notebook, line ends normalised to "\n"
    lines: tuple[str, ...]  # as in the program
    neutralised: tuple[str, ...]  # the original of each neutralised line, in order
    editable: bool  # False for a cell left out (not Python, or not parsing)


@dataclass(frozen=True)
class NotebookProgram:
    """A notebook's code cells as one Python program."""

    text: str
    # For each line of `text` (index 0 is line 1): (cell, line within the cell), 1-based.
    # A cell-end mark is the line after its cell's last line.
    origins: tuple[tuple[int, int], ...]
    cells: tuple[CodeCell, ...]
    # Cells that do not parse on their own: (cell, problem in the cell's own lines).
    problems: tuple[tuple[int, SyntaxProblem], ...]
    document: dict[str, Any]

    def origin(self, line: int) -> tuple[int, int]:
        """Where program line `line` came from; a line past the end stays in the last cell."""
        if not self.origins:
            return (1, line)
        if line <= len(self.origins):
            return self.origins[max(line, 1) - 1]
        cell, last = self.origins[-1]
        return cell, last + line - len(self.origins)


@dataclass(frozen=True)
class FixedNotebook:
    data: bytes  # the whole notebook, to write
    fixed: int  # diagnostics whose fix was applied
    remaining: list[Diagnostic]  # diagnostics of the fixed notebook
    changes: list[tuple[int, str, str]]  # (cell, source before, source after)


def read_notebook(data: bytes) -> NotebookProgram | None:
    """The program of a notebook's code cells; None for a notebook in another language.

    Raises NotebookError when `data` is not a readable nbformat 4 notebook.
    """
    try:
        document = json.loads(data)
    except UnicodeDecodeError as error:
        raise NotebookError(f"not a notebook: cannot decode: {error}") from None
    except ValueError as error:
        raise NotebookError(f"not a notebook: invalid JSON: {error}") from None
    cells = _cells(document)
    if not _is_python(document.get("metadata")):
        return None
    lines: list[str] = []
    origins: list[tuple[int, int]] = []
    code_cells: list[CodeCell] = []
    problems: list[tuple[int, SyntaxProblem]] = []
    for number, cell in enumerate(cells, start=1):
        if cell.get("cell_type") != "code":
            continue
        source = _source(cell, number)
        code = _python_lines(source)
        if isinstance(code, SyntaxProblem):
            problems.append((number, code))
            code = _Code([""] * len(_split(source)), [], editable=False)
        code_cells.append(
            CodeCell(number, source, tuple(code.lines), tuple(code.neutralised), code.editable)
        )
        lines.extend([*code.lines, _CELL_END])
        origins.extend((number, line) for line in range(1, len(code.lines) + 2))
    text = "".join(f"{line}\n" for line in lines)
    return NotebookProgram(text, tuple(origins), tuple(code_cells), tuple(problems), document)


def check_notebook(
    linter: Linter, data: bytes, path: str, context: ModuleContext | None = None
) -> list[Diagnostic]:
    """Diagnostics of one notebook, located by cell and line within the cell."""
    return analyze_notebook(linter, data, path, context).diagnostics


def analyze_notebook(
    linter: Linter, data: bytes, path: str, context: ModuleContext | None = None
) -> FileAnalysis:
    """`Linter.analyze_text` of a notebook's program: its diagnostics located by cell and
    line within the cell, and its summary's sites too (so related locations and the
    messages that name them point into cells)."""
    if not linter.codes or not any(t.encode() in data for t in linter.triggers):
        return FileAnalysis([])
    try:
        program = read_notebook(data)
    except NotebookError as error:
        return FileAnalysis(linter.unreadable(path, str(error)))
    if program is None:
        return FileAnalysis([])
    diagnostics = [
        dataclasses.replace(d, cell=cell)
        for cell, problem in program.problems
        for d in linter.unparsable(path, problem)
    ]
    found = linter.analyze_text(
        program.text, path, is_notebook=True, context=context, origin=program.origin
    )
    diagnostics.extend(_located(found.diagnostics, program))
    found.diagnostics = sorted(diagnostics, key=lambda d: d.sort_key)
    return found


def fix_notebook(
    linter: Linter,
    data: bytes,
    path: str,
    *,
    unsafe: bool,
    context: ModuleContext | None = None,
) -> FixedNotebook:
    """The notebook with its fixes applied. Raises FixError when they cannot be."""
    try:
        program = read_notebook(data)
    except NotebookError as error:
        raise FixError(str(error)) from None
    if program is None:
        return FixedNotebook(data, 0, [], [])
    dump = _serialiser_of(program.document, data)
    if program.text.count(f"{_CELL_END}\n") != len(program.cells):
        raise FixError(f"a cell contains tapelint's own cell-end line `{_CELL_END}`")

    def lint(text: str) -> list[Diagnostic]:
        return linter.check_text(text, path, is_notebook=True, context=context)

    result = fix_source(program.text, lint, unsafe=unsafe)
    changes = _changed_cells(program, result.text)
    for number, _, after in changes:
        cell = program.document["cells"][number - 1]
        keep_list = isinstance(cell.get("source"), list)
        cell["source"] = after.splitlines(keepends=True) if keep_list else after
    fixed_data = dump(program.document) if changes else data
    remaining = check_notebook(linter, fixed_data, path, context)
    return FixedNotebook(fixed_data, result.fixed if changes else 0, remaining, changes)


# ------------------------------------------------------------------ positions


def _located(diagnostics: list[Diagnostic], program: NotebookProgram) -> list[Diagnostic]:
    located = []
    for diagnostic in diagnostics:
        cell, start, end = _span(program, diagnostic.start, diagnostic.end)
        fix = diagnostic.fix
        if fix is not None:
            edits = []
            for edit in fix.edits:
                edit_cell, edit_start, edit_end = _span(program, edit.start, edit.end)
                edits.append(Edit(edit_start, edit_end, edit.content, cell=edit_cell))
            fix = Fix(fix.title, fix.applicability, tuple(edits))
        located.append(dataclasses.replace(diagnostic, start=start, end=end, cell=cell, fix=fix))
    return located


def _span(
    program: NotebookProgram, start: Position, end: Position
) -> tuple[int, Position, Position]:
    cell, line = program.origin(start.line)
    end_cell, end_line = program.origin(end.line)
    if end_cell != cell:  # no statement spans cells; never let a range leave its cell
        return cell, Position(line, start.column), Position(line, start.column)
    return cell, Position(line, start.column), Position(end_line, end.column)


# ------------------------------------------------------------------ fixing


def _changed_cells(program: NotebookProgram, fixed_text: str) -> list[tuple[int, str, str]]:
    """(cell, before, after) for each code cell the fixed program changes."""
    chunks = fixed_text.split(f"{_CELL_END}\n")
    if len(chunks) != len(program.cells) + 1 or chunks[-1]:
        raise FixError("the fixes moved a cell boundary")
    changes = []
    for cell, chunk in zip(program.cells, chunks, strict=False):
        lines = chunk.split("\n")[:-1]  # every program line ends with "\n"
        if tuple(lines) == cell.lines:
            continue
        if not cell.editable:
            raise FixError(f"a fix would change cell {cell.number}, which is not Python")
        after = "\n".join(_restore(lines, cell))
        if cell.source.endswith("\n"):
            after += "\n"
        changes.append((cell.number, cell.source, after))
    return changes


def _restore(lines: list[str], cell: CodeCell) -> list[str]:
    """The cell's lines with its IPython lines put back in place of their stand-ins."""
    originals = iter(cell.neutralised)
    restored = []
    for line in lines:
        if line.strip() == _NEUTRAL:
            original = next(originals, None)
            if original is None:
                raise FixError(f"the fixes changed the IPython lines of cell {cell.number}")
            line = original
        restored.append(line)
    if next(originals, None) is not None:
        raise FixError(f"the fixes changed the IPython lines of cell {cell.number}")
    return restored


def _serialiser_of(document: Any, data: bytes) -> Callable[[Any], bytes]:
    """A function writing JSON in the layout `data` has, found by reproducing `data`."""
    try:
        original = data.decode("utf-8")
    except UnicodeDecodeError:
        raise FixError("the notebook is not UTF-8") from None
    for indent in (1, 2, 4, None):
        for sort_keys in (True, False):
            for ensure_ascii in (False, True):
                options = {"indent": indent, "sort_keys": sort_keys, "ensure_ascii": ensure_ascii}
                text = json.dumps(document, **options)
                if original in (text, text + "\n"):
                    ending = original[len(text) :]

                    def dump(changed: Any, options: dict = options, ending: str = ending) -> bytes:
                        return (json.dumps(changed, **options) + ending).encode("utf-8")

                    return dump
    raise FixError(
        "the notebook's JSON layout is not one tapelint can write back unchanged "
        "(save it from Jupyter first)"
    )


# ------------------------------------------------------------------ reading


@dataclass
class _Code:
    lines: list[str]
    neutralised: list[str]
    editable: bool = True


def _cells(document: Any) -> list[dict[str, Any]]:
    if not isinstance(document, dict):
        raise NotebookError(f"not a notebook: the JSON is {_kind(document)}, not an object")
    if "worksheets" in document:
        raise NotebookError(
            "nbformat 3 notebooks are not supported; convert it with "
            "`jupyter nbconvert --to notebook --nbformat 4`"
        )
    cells = document.get("cells")
    if not isinstance(cells, list):
        raise NotebookError("not a notebook: no `cells` list")
    for number, cell in enumerate(cells, start=1):
        if not isinstance(cell, dict):
            raise NotebookError(f"not a notebook: cell {number} is {_kind(cell)}, not an object")
    return cells


def _is_python(metadata: Any) -> bool:
    """False only when the notebook says its language and it is not Python."""
    if not isinstance(metadata, dict):
        return True
    for key, field in (("language_info", "name"), ("kernelspec", "language")):
        section = metadata.get(key)
        language = section.get(field) if isinstance(section, dict) else None
        if isinstance(language, str) and language:
            return language.lower().startswith("python")
    return True


def _source(cell: dict[str, Any], number: int) -> str:
    source = cell.get("source", "")
    if isinstance(source, list) and all(isinstance(part, str) for part in source):
        source = "".join(source)
    if not isinstance(source, str):
        raise NotebookError(f"not a notebook: the source of cell {number} is not text")
    return source.replace("\r\n", "\n").replace("\r", "\n")


def _split(source: str) -> list[str]:
    lines = source.split("\n")
    return lines[:-1] if lines[-1] == "" else lines


def _python_lines(source: str) -> _Code | SyntaxProblem:
    """The cell's lines as Python, IPython syntax neutralised; or why they do not parse."""
    lines = _split(source)
    if _parses(source):
        return _Code(lines, [])
    magic = _CELL_MAGIC.match(lines[0]) if lines else None
    if magic is not None and magic.group("name") not in _PYTHON_CELL_MAGICS:
        return _Code([""] * len(lines), [], editable=False)
    neutral, touched = _neutralise(lines, cell_magic=magic is not None)
    text = "".join(f"{line}\n" for line in neutral)
    try:
        tree = ast.parse(text)
    except SyntaxError as error:
        return SyntaxProblem(error.lineno or 1, error.offset or 1, error.msg)
    except ValueError as error:  # null bytes
        return SyntaxProblem(1, 1, str(error))
    for index in touched & _lines_inside_strings(tree):
        neutral[index] = lines[index]
    kept = sorted(touched - _lines_inside_strings(tree))
    return _Code(neutral, [lines[index] for index in kept])


def _parses(source: str) -> bool:
    try:
        ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    return True


def _neutralise(lines: list[str], *, cell_magic: bool) -> tuple[list[str], set[int]]:
    """Each IPython line (and its backslash continuations) as a `pass` at its indentation;
    the indexes of the lines changed. With `cell_magic`, the first line is one too."""
    neutral = list(lines)
    touched: set[int] = set()
    index = 0
    while index < len(lines):
        match = _LINE_ESCAPE.match(lines[index])
        if match is None and not (cell_magic and index == 0):
            index += 1
            continue
        indent = match.group("indent") if match is not None else ""
        neutral[index] = f"{indent}{_NEUTRAL}"
        touched.add(index)
        while lines[index].endswith("\\") and index + 1 < len(lines):
            index += 1
            neutral[index] = f"{indent}{_NEUTRAL}"
            touched.add(index)
        index += 1
    return neutral, touched


def _lines_inside_strings(tree: ast.Module) -> set[int]:
    """0-based indexes of the lines after the first line of every multi-line string."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Constant, ast.JoinedStr)) and node.end_lineno:
            if isinstance(node, ast.Constant) and not isinstance(node.value, (str, bytes)):
                continue
            inside.update(range(node.lineno, node.end_lineno))  # 1-based lines after the first
    return inside


def _kind(value: Any) -> str:
    names = {list: "a list", str: "a string", int: "a number", float: "a number"}
    return names.get(type(value), "null" if value is None else type(value).__name__)
