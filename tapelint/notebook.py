"""Jupyter notebooks: their code cells as one program, and every position back to its cell.

How a notebook is read (decisions, in the order a user meets them):

- With the standard `json` module. A notebook is a JSON object with a `cells` list
  (nbformat 4); the reference library, nbformat, would add jsonschema validation and
  traitlets for the three keys read here. nbformat 3 files (`worksheets`) are refused with a
  hint to convert them. Notebooks whose kernel language is not Python are not checked.
- Code cells are joined in order into one program: the kernel runs them in one namespace, so
  a tape in one cell and its `apply_gradients` two cells later are one training step, and a
  persistent tape still bound at the end of the notebook stays alive in the kernel (TAP103).
  Markdown and raw cells are skipped.
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
  notebook's `cells` list, counting every cell, so it matches what Jupyter shows.
- Fixes are not offered for notebooks: their findings carry no fix, so `--fix` and `--diff`
  leave `.ipynb` files alone. Writing cells back into the JSON while keeping everything else
  (outputs, metadata, the writer's formatting) byte for byte is a job of its own.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import re
from dataclasses import dataclass
from typing import Any

from tapelint.diagnostics import Diagnostic, Position
from tapelint.engine import Linter
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


class NotebookError(Exception):
    """A file that is not a notebook tapelint can read; the message says why (TAP002)."""


@dataclass(frozen=True)
class NotebookProgram:
    """A notebook's code cells as one Python program."""

    text: str
    # For each line of `text` (index 0 is line 1): (cell, line within the cell), 1-based.
    origins: tuple[tuple[int, int], ...]
    # Cells that do not parse on their own: (cell, problem in the cell's own lines).
    problems: tuple[tuple[int, SyntaxProblem], ...]
    cell_lengths: dict[int, int]  # code cell -> its number of lines

    def origin(self, line: int) -> tuple[int, int]:
        """Where program line `line` came from; a line past the end stays in the last cell."""
        if not self.origins:
            return (1, line)
        if line <= len(self.origins):
            return self.origins[max(line, 1) - 1]
        cell, last = self.origins[-1]
        return cell, last + line - len(self.origins)


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
    problems: list[tuple[int, SyntaxProblem]] = []
    lengths: dict[int, int] = {}
    for number, cell in enumerate(cells, start=1):
        if cell.get("cell_type") != "code":
            continue
        source = _source(cell, number)
        code = _python_lines(source)
        if isinstance(code, SyntaxProblem):
            problems.append((number, code))
            code = [""] * len(_split(source))
        lengths[number] = len(code)
        lines.extend(code)
        origins.extend((number, line) for line in range(1, len(code) + 1))
    text = "".join(f"{line}\n" for line in lines)
    return NotebookProgram(text, tuple(origins), tuple(problems), lengths)


def check_notebook(linter: Linter, data: bytes, path: str) -> list[Diagnostic]:
    """Diagnostics of one notebook, located by cell and line within the cell."""
    if not linter.codes or not any(t.encode() in data for t in linter.triggers):
        return []
    try:
        program = read_notebook(data)
    except NotebookError as error:
        return linter.unreadable(path, str(error))
    if program is None:
        return []
    diagnostics = [
        dataclasses.replace(d, cell=cell)
        for cell, problem in program.problems
        for d in linter.unparsable(path, problem)
    ]
    for diagnostic in linter.check_text(program.text, path, is_notebook=True):
        diagnostics.append(_in_cell(diagnostic, program))
    return sorted(diagnostics, key=lambda d: d.sort_key)


def _in_cell(diagnostic: Diagnostic, program: NotebookProgram) -> Diagnostic:
    cell, line = program.origin(diagnostic.start.line)
    end_cell, end_line = program.origin(diagnostic.end.line)
    end = Position(end_line, diagnostic.end.column)
    if end_cell != cell:  # a range ending where the next cell starts: the end of this one
        end = Position(program.cell_lengths.get(cell, line) + 1, 1)
    return dataclasses.replace(
        diagnostic, start=Position(line, diagnostic.start.column), end=end, cell=cell, fix=None
    )


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


def _python_lines(source: str) -> list[str] | SyntaxProblem:
    """The cell's lines as Python, IPython syntax neutralised; or why they do not parse."""
    lines = _split(source)
    if _parses(source):
        return lines
    magic = _CELL_MAGIC.match(lines[0]) if lines else None
    if magic is not None:
        if magic.group("name") not in _PYTHON_CELL_MAGICS:
            return [""] * len(lines)
        lines = ["", *lines[1:]]
    neutral, touched = _neutralise_line_escapes(lines)
    text = "".join(f"{line}\n" for line in neutral)
    try:
        tree = ast.parse(text)
    except SyntaxError as error:
        return SyntaxProblem(error.lineno or 1, error.offset or 1, error.msg)
    except ValueError as error:  # null bytes
        return SyntaxProblem(1, 1, str(error))
    for index in touched & _lines_inside_strings(tree):
        neutral[index] = lines[index]
    return neutral


def _parses(source: str) -> bool:
    try:
        ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    return True


def _neutralise_line_escapes(lines: list[str]) -> tuple[list[str], set[int]]:
    """Each escape line (and its backslash continuations) as `pass` at its indentation;
    the indexes of the lines changed."""
    neutral = list(lines)
    touched: set[int] = set()
    index = 0
    while index < len(lines):
        match = _LINE_ESCAPE.match(lines[index])
        if match is None:
            index += 1
            continue
        indent = match.group("indent")
        neutral[index] = f"{indent}pass"
        touched.add(index)
        while lines[index].endswith("\\") and index + 1 < len(lines):
            index += 1
            neutral[index] = f"{indent}pass"
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
