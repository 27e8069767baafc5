"""Jupyter notebooks: their code cells as one program, every position back to its cell, and
fixes written back into the cells.

How a notebook is read (decisions, in the order a user meets them):

- With the standard `json` module. A notebook is a JSON object with a `cells` list
  (nbformat 4); the reference library, nbformat, would add jsonschema validation and
  traitlets for the three keys read here. nbformat 3 files (`worksheets`) are refused with a
  hint to convert them. Notebooks whose kernel language is not Python are not checked.
- A notebook whose kernel is Python 2 (`kernelspec.name` `python2`, or a `language_info`
  version 2) runs cells that Python 3 cannot parse (`print x`) without error, so such a
  cell is left out with no TAP001: TAP001 in a notebook means the notebook's own kernel
  would fail. Its cells that Python 3 parses are checked as in any notebook, so a tape in
  them is still followed across cells.
- A cell a course leaves blank for the student (`x = # TODO`, `# Your code goes here`) does
  not parse on purpose: it is left out with no TAP001 (see
  tapelint.settings.policies.exercise_cells).
- Code cells are joined in order into one program: the kernel runs them in one namespace, so
  a tape in one cell and its `apply_gradients` two cells later are one training step, and a
  persistent tape still bound at the end of the notebook stays alive in the kernel (TAP103).
  Markdown and raw cells are skipped. A comment line marks where each cell ends.
- A cell is read as the Python IPython runs for it (see tapelint.sources.ipython_input): leading
  indentation removed, line magics, shell escapes and help (`%timeit f()`, `!pip install x`,
  `files = !ls`, `model.fit?`) read as `pass` at their indentation, a cell magic whose body
  is not Python (`%%bash`, `%%writefile`, ...) leaving its cell out, and `%%time`,
  `%%timeit`, `%%capture`, `%%prun` keeping their body, and so a cell magic that an earlier
  cell registers to run its cell as Python (tapelint.sources.cell_magics). No line moves: a line of
  the program is a line of its cell, at most shifted left by the indentation IPython
  removes, and positions are shifted back. A cell that is already valid Python is read as it is.
- A cell that `%run`s or `%load`s a project file has that file's code where the line is,
  its findings reported on the file only (see tapelint.linter.notebooks.cell_files and
  tapelint.linter.notebooks.program_files); fixes never edit it.
- A cell written in another language is left out like a cell magic that is not Python:
  its metadata says so (VS Code's `vscode.languageId`), or it does not parse and is
  recognisably R (`x <- ...`, `library(...)`; a Colab notebook that switches runtimes for a
  few cells). See tapelint.sources.cell_language.
- A cell that IPython could not run either (it does not parse after those steps) is TAP001
  located in that cell; it is left out of the program (as blank lines) and the other cells
  are still checked.
- Positions are (cell, line within the cell): the cell is the 1-based index into the
  notebook's `cells` list, counting every cell, so it matches what Jupyter shows. A fix's edits
  say which cell each one changes.

How a notebook is fixed: the program is fixed like a file (same fixes, same re-lint passes,
same check that the result parses), then cut back into cells at the cell-end marks. Each
changed cell is written back line for line against what the program had: an unchanged line
is the cell's own line (IPython lines and removed indentation included), a changed or added
line gets the indentation IPython removes from that cell. The cell written is then read again
and must give exactly the fixed program's lines, else the notebook is left alone with a
warning; a fix that would change an IPython line is refused the same way. Only the changed
cells' `source` is replaced. The JSON is written back in the layout it was read in
(indentation, key order, escaping, final newline), which is checked by re-serialising the
unchanged notebook first: when that does not reproduce the file byte for byte (a hand-written
file, numbers json cannot round-trip), the notebook is left alone with a warning rather than
reformatted. `--add-noqa` writes into cells the same way (`with_cell_sources`).
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
import functools
import json
import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tapelint.findings.diagnostics import Diagnostic, Edit, Fix, Position
from tapelint.linter.engine import FileAnalysis, Linter, ModuleContext
from tapelint.linter.fixer import FixError, fix_source
from tapelint.linter.notebooks.cell_files import FileUse, NotebookFiles, file_uses, mentions_files
from tapelint.linter.notebooks.program_files import Included, analyzed, read_included
from tapelint.parsing.slicer import SyntaxProblem
from tapelint.semantic.file_model.model import UNREAD_CELL
from tapelint.settings.policies.exercise_cells import is_exercise_blank
from tapelint.settings.policies.lab_solutions import cell_key, solution_cells
from tapelint.sources.cell_language import is_declared_foreign, looks_like_r
from tapelint.sources.cell_magics import registered
from tapelint.sources.ipython_input import PYTHON_CELL_MAGICS, CellCode, cell_code

# The line that ends each cell in the program.
_CELL_END = "# tapelint: end of cell"


class NotebookError(Exception):
    """A file that is not a notebook tapelint can read; the message says why (TAP002)."""


@dataclass(frozen=True)
class CodeCell:
    number: int  # 1-based index into the notebook's `cells`
    source: str  # as in the notebook, line ends normalised to "\n"
    originals: tuple[str, ...]  # the cell's own lines
    code: CellCode  # what the program has for it, line for line
    editable: bool  # False for a cell left out (not Python, or not parsing)
    # The cell magics whose body runs as Python when this cell runs (IPython's, and those
    # earlier cells registered: tapelint.sources.cell_magics).
    magics: frozenset[str] = PYTHON_CELL_MAGICS
    uses: tuple[
        FileUse, ...
    ] = ()  # its `%run` and `%load` lines (tapelint.linter.notebooks.cell_files)

    @property
    def lines(self) -> tuple[str, ...]:
        return self.code.lines


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

    def cell(self, number: int) -> CodeCell | None:
        return self._by_number.get(number)

    def position(self, line: int, column: int) -> tuple[int, Position]:
        """The cell and the position in it of program position (line, column)."""
        number, cell_line = self.origin(line)
        cell = self.cell(number)
        if cell is not None:
            column = cell.code.column_in_cell(cell_line, column)
        return number, Position(cell_line, column)

    @functools.cached_property
    def _by_number(self) -> dict[int, CodeCell]:
        return {cell.number: cell for cell in self.cells}


@dataclass(frozen=True)
class FixedNotebook:
    data: bytes  # the whole notebook, to write
    fixed: int  # diagnostics whose fix was applied
    remaining: list[Diagnostic]  # diagnostics of the fixed notebook
    changes: list[tuple[int, str, str]]  # (cell, source before, source after)
    # How many of `fixed` had each (code, name).
    fixed_codes: Counter[tuple[str, str]] = dataclasses.field(default_factory=Counter)


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
    except RecursionError:  # json's decoder recurses once per level of nesting
        raise NotebookError("not a notebook: its JSON is nested too deeply") from None
    cells = _cells(document)
    if not _is_python(document.get("metadata")):
        return None
    python2 = _is_python2(document.get("metadata"))
    lines: list[str] = []
    origins: list[tuple[int, int]] = []
    code_cells: list[CodeCell] = []
    problems: list[tuple[int, SyntaxProblem]] = []
    magics = PYTHON_CELL_MAGICS
    for number, cell in enumerate(cells, start=1):
        if cell.get("cell_type") != "code":
            continue
        source = _source(cell, number)
        originals = _split(source)
        code = (
            _left_out(originals)
            if is_declared_foreign(cell.get("metadata"))
            else cell_code(originals, magics)
        )
        if isinstance(code, SyntaxProblem):
            if not (python2 or looks_like_r(originals) or is_exercise_blank(originals, code)):
                problems.append((number, code))
            code = _imports_of(originals) if python2 else _left_out(originals)
            if not looks_like_r(originals):
                code = _marked_unread(code)
        uses = file_uses(originals, code)
        code_cells.append(
            CodeCell(number, source, tuple(originals), code, code.python, magics, uses)
        )
        if code.python:
            magics = registered("\n".join(code.lines), magics)
        lines.extend([*code.lines, _CELL_END])
        origins.extend((number, line) for line in range(1, len(code.lines) + 2))
    text = "".join(f"{line}\n" for line in lines)
    return NotebookProgram(text, tuple(origins), tuple(code_cells), tuple(problems), document)


def _marked_unread(code: CellCode) -> CellCode:
    """A Python cell left out because it does not parse, with its first blank line saying so
    (`UNREAD_CELL`): what it does with the names of other cells is not known (a gradient
    call there asks a tape an earlier cell recorded)."""
    lines = list(code.lines)
    if "" not in lines:
        return code
    lines[lines.index("")] = UNREAD_CELL
    return dataclasses.replace(code, lines=tuple(lines))


def _left_out(originals: list[str]) -> CellCode:
    blank = ("",) * len(originals)
    return CellCode(blank, blank, frozenset(), python=False)


def check_notebook(
    linter: Linter,
    data: bytes,
    path: str,
    context: ModuleContext | None = None,
    files: NotebookFiles | None = None,
) -> list[Diagnostic]:
    """Diagnostics of one notebook, located by cell and line within the cell."""
    return analyze_notebook(linter, data, path, context, files).diagnostics


def analyze_notebook(
    linter: Linter,
    data: bytes,
    path: str,
    context: ModuleContext | None = None,
    files: NotebookFiles | None = None,
) -> FileAnalysis:
    """`Linter.analyze_text` of a notebook's program: its diagnostics located by cell and
    line within the cell, and its summary's sites too (so related locations and the
    messages that name them point into cells). `files`: where the files its cells run or
    load are read (None: beside `path`, from disk)."""
    triggered = any(t.encode() in data for t in linter.triggers)
    if not linter.codes or not (triggered or mentions_files(data)):
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
    found = analyzed(
        linter,
        program.text,
        path,
        _included(program, linter, path, files),
        _CELL_END,
        context=context,
        position=program.position,
    )
    diagnostics.extend(_located(found.diagnostics, program))
    copies = _solution_copies(program, path)
    found.diagnostics = sorted(
        (d for d in diagnostics if d.cell not in copies), key=lambda d: d.sort_key
    )
    return found


def _solution_copies(program: NotebookProgram, path: str) -> frozenset[int]:
    """The cells of a lab notebook that are its solution's cells (see `lab_solutions`)."""
    solved = solution_cells(path)
    if not solved:
        return frozenset()
    return frozenset(cell.number for cell in program.cells if cell_key(cell.source) in solved)


def _included(
    program: NotebookProgram, linter: Linter, path: str, files: NotebookFiles | None
) -> Included:
    """The files the notebook's cells run or load, read."""
    if not any(cell.uses for cell in program.cells):
        return Included()
    if files is None:
        files = NotebookFiles.beside(os.path.abspath(path), path, linter.max_file_size)
    cells = [(cell.lines, cell.uses) for cell in program.cells]
    return read_included(cells, files, program.text)


def fix_notebook(
    linter: Linter,
    data: bytes,
    path: str,
    *,
    unsafe: bool,
    context: ModuleContext | None = None,
    files: NotebookFiles | None = None,
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

    included = _included(program, linter, path, files)
    copies = _solution_copies(program, path)

    def lint(text: str) -> list[Diagnostic]:
        found = analyzed(linter, text, path, included, _CELL_END, context=context).diagnostics
        return [d for d in found if program.origin(d.start.line)[0] not in copies]

    result = fix_source(program.text, lint, unsafe=unsafe)
    changes = _changed_cells(program, result.text)
    _replace_sources(program.document, {number: after for number, _, after in changes})
    fixed_data = dump(program.document) if changes else data
    remaining = check_notebook(linter, fixed_data, path, context, files)
    if not changes:
        return FixedNotebook(fixed_data, 0, remaining, changes)
    return FixedNotebook(fixed_data, result.fixed, remaining, changes, result.fixed_codes)


def with_cell_sources(data: bytes, sources: dict[int, str]) -> bytes:
    """The notebook `data` with the `source` of the cells numbered in `sources` replaced,
    everything else byte for byte. Raises FixError when its JSON layout cannot be kept."""
    try:
        document = json.loads(data)
    except ValueError as error:  # UnicodeDecodeError included
        raise FixError(f"not a notebook: {error}") from None
    except RecursionError:
        raise FixError("not a notebook: its JSON is nested too deeply") from None
    dump = _serialiser_of(document, data)
    _cells(document)
    _replace_sources(document, sources)
    return dump(document)


def _replace_sources(document: dict[str, Any], sources: dict[int, str]) -> None:
    """Set each cell's source, as a list of lines when the notebook keeps it that way."""
    for number, source in sources.items():
        cell = document["cells"][number - 1]
        keep_list = isinstance(cell.get("source"), list)
        cell["source"] = source.splitlines(keepends=True) if keep_list else source


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
                content = _content_in_cell(program, edit_cell, edit_start, edit.content)
                edits.append(Edit(edit_start, edit_end, content, cell=edit_cell))
            fix = Fix(fix.title, fix.applicability, tuple(edits))
        located.append(dataclasses.replace(diagnostic, start=start, end=end, cell=cell, fix=fix))
    return located


def _span(
    program: NotebookProgram, start: Position, end: Position
) -> tuple[int, Position, Position]:
    cell, start_in_cell = program.position(start.line, start.column)
    end_cell, end_in_cell = program.position(end.line, end.column)
    if end_cell != cell:  # no statement spans cells; never let a range leave its cell
        return cell, start_in_cell, start_in_cell
    return cell, start_in_cell, end_in_cell


def _content_in_cell(program: NotebookProgram, number: int, start: Position, content: str) -> str:
    """An edit's text as the cell needs it: each line it starts carries the indentation
    IPython removes from the cell. Inside the cell, the edit starts after a line's removed
    indentation, so that goes after each line end; appended after the cell's last line, in
    front of each line."""
    cell = program.cell(number)
    if cell is None or not cell.code.indent:
        return content
    indent = cell.code.indent
    if start.line > len(cell.originals):
        return "\n".join(f"{indent}{line}" if line else line for line in content.split("\n"))
    return content.replace("\n", f"\n{indent}")


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
        restored = _restore(lines, cell)
        reread = cell_code(restored, cell.magics)
        if isinstance(reread, SyntaxProblem) or list(reread.lines) != lines:
            raise FixError(f"the fixes cannot be written back into cell {cell.number} exactly")
        after = "\n".join(restored)
        if cell.source.endswith("\n"):
            after += "\n"
        changes.append((cell.number, cell.source, after))
    return changes


def _restore(lines: list[str], cell: CodeCell) -> list[str]:
    """The cell's lines for the fixed program lines `lines`: unchanged lines as the cell has
    them, changed and added ones with the indentation IPython removes in front."""
    code = cell.code
    restored: list[str] = []
    matcher = difflib.SequenceMatcher(None, code.lines, lines, autojunk=False)
    for tag, old_start, old_end, new_start, new_end in matcher.get_opcodes():
        if tag == "equal":
            restored.extend(cell.originals[old_start:old_end])
            continue
        if any(index in code.special for index in range(old_start, old_end)):
            raise FixError(f"the fixes changed the IPython lines of cell {cell.number}")
        one_for_one = old_end - old_start == new_end - new_start
        for offset, line in enumerate(lines[new_start:new_end]):
            indent = code.removed[old_start + offset] if one_for_one else code.indent
            restored.append(f"{indent}{line}" if line.strip() else line)
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
                options: dict[str, Any] = {
                    "indent": indent,
                    "sort_keys": sort_keys,
                    "ensure_ascii": ensure_ascii,
                }
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


def _imports_of(originals: list[str]) -> CellCode:
    """A Python 2 cell that Python 3 cannot parse, kept only for its import statements of one
    line each (`import tensorflow as tf` beside a `print x`): they bind what later cells use."""
    kept = tuple(line if _is_import_line(line) else "" for line in originals)
    blank = ("",) * len(originals)
    return CellCode(kept, blank, frozenset())


def _is_import_line(line: str) -> bool:
    if not line.startswith(("import ", "from ")):
        return False
    try:
        tree = ast.parse(line)
    except SyntaxError:
        return False
    return len(tree.body) == 1 and isinstance(tree.body[0], (ast.Import, ast.ImportFrom))


def _is_python2(metadata: Any) -> bool:
    """Whether the notebook's kernel is Python 2, as Jupyter records it."""
    if not isinstance(metadata, dict):
        return False
    kernel = metadata.get("kernelspec")
    name = kernel.get("name") if isinstance(kernel, dict) else None
    if isinstance(name, str) and name.lower() in ("python2", "python2.7"):
        return True
    info = metadata.get("language_info")
    if not isinstance(info, dict):
        return False
    version = info.get("version")
    mode = info.get("codemirror_mode")
    mode_version = mode.get("version") if isinstance(mode, dict) else None
    return (isinstance(version, str) and version.startswith("2.")) or mode_version == 2


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


def _kind(value: Any) -> str:
    names = {list: "a list", str: "a string", int: "a number", float: "a number"}
    return names.get(type(value), "null" if value is None else type(value).__name__)
