"""A notebook's program with the code of the files its cells run or load, and its findings
placed back in the notebook.

What is checked and reported where (decisions; which lines count is
tapelint.linter.notebooks.cell_files):

- A `%run` file's code, and a `%load` file's for a cell that holds only the `%load` line,
  takes the place of that line: the program holds the file's lines right after it, so the
  names the file binds (a model, an optimizer, a helper that returns a tape) are known to
  the rest of the cell and to later cells as if an earlier cell had defined them. (IPython
  gives a `%run` file's functions the file's own namespace; here they read the notebook's.
  That differs only where a later cell rebinds a name such a function reads.)
- A finding in the file's code is the file's: it is reported on the file when the file is
  checked (as every `.py` of a project is), never in the notebook, so nothing is reported
  twice. A cell that holds a copy `%load` made of the file (`# %load file.py`, then the
  file's text) counts the same way: a finding in the copy is the file's, reported there.
- A finding in a cell that rests on the file's code is the cell's, reported in the cell; a
  related location or a message that names a place in the file names the file and its line.
- A fix that would edit the file's code, or a cell's copy of it, is left out: the finding is
  reported without it.
- When the files would make the program larger than `max-file-size`, the notebook is
  checked without them (the `%run` lines are unknown, as before).

A program with no such file is checked as it is: nothing here changes its result.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from tapelint.findings.diagnostics import Diagnostic, Edit, Fix, Position
from tapelint.linter.engine import FileAnalysis, Linter, ModuleContext
from tapelint.linter.notebooks.cell_files import FileUse, LoadedFile, NotebookFiles
from tapelint.sources.ipython_input import NEUTRAL

# A program position -> (cell, position in the cell), as `NotebookProgram.position` gives it.
CellPosition = Callable[[int, int], tuple[int, Position]]


@dataclass(frozen=True)
class CellFiles:
    """What one code cell takes from files, read."""

    index: int  # the cell's place among the program's code cells (0-based)
    # (which top-level IPython line of the cell, the file): `%run` and `%load` lines.
    runs: tuple[tuple[int, LoadedFile], ...]
    top_level: int  # the cell's count of top-level IPython lines
    copy: LoadedFile | None  # the file the cell's lines after the first are a copy of


@dataclass(frozen=True)
class Included:
    """The files a notebook's cells bring in."""

    cells: tuple[CellFiles, ...] = ()
    read: frozenset[str] = frozenset()  # the real paths of every file read for it
    code_cells: int = 0  # how many code cells the program has


def read_included(
    cells: Sequence[tuple[tuple[str, ...], tuple[FileUse, ...]]],
    files: NotebookFiles,
    program: str,
) -> Included:
    """The files that the code cells (each: its program lines, its file uses) of `program`
    bring in."""
    found: list[CellFiles] = []
    read: set[str] = set()
    size = _size(program)
    for index, (lines, uses) in enumerate(cells):
        runs: list[tuple[int, LoadedFile]] = []
        copy = None
        for use in uses:
            loaded = files.read(use.written)
            if loaded is None:
                continue
            read.add(loaded.real)
            if use.kind != "copy":
                runs.append((use.ordinal, loaded))
                size += sum(_size(line) + 1 for line in loaded.lines)
            elif _is_copy(lines[1:], loaded):
                copy = loaded
        if runs or copy is not None:
            top_level = sum(line == NEUTRAL for line in lines)
            found.append(CellFiles(index, tuple(runs), top_level, copy))
    if size > files.max_size:
        found = [dataclasses.replace(cell, runs=()) for cell in found if cell.copy is not None]
    return Included(tuple(found), frozenset(read), len(cells))


def _size(text: str) -> int:
    """Bytes in UTF-8, as `max-file-size` counts them."""
    return len(text.encode("utf-8", "surrogatepass"))


def _is_copy(lines: Sequence[str], loaded: LoadedFile) -> bool:
    return _trimmed(lines) == _trimmed([text for _, text in loaded.copied])


def _trimmed(lines: Sequence[str]) -> list[str]:
    kept = list(lines)
    while kept and not kept[-1].strip():
        kept.pop()
    return kept


# ---------------------------------------------------------------------- the program


@dataclass(frozen=True)
class Expanded:
    """A program with the files' lines in it."""

    text: str
    lines: tuple[int, ...]  # for each line (index 0 is line 1): the program line it stands for
    files: Mapping[int, tuple[str, int]]  # a line of a file's code -> (path, line in the file)
    guarded: frozenset[int]  # lines no fix may edit: the files' lines, the line after a copy

    def program_position(self, position: Position) -> Position:
        if position.line <= len(self.lines):
            return Position(self.lines[max(position.line, 1) - 1], position.column)
        return Position(self.lines[-1] + position.line - len(self.lines), position.column)


def expand(text: str, included: Included, boundary: str) -> Expanded | None:
    """`text` (a notebook's program, or a fixed one: its cells end with `boundary` lines)
    with the files' code in it; None when no file comes in."""
    if not included.cells:
        return None
    chunks = text.split(f"{boundary}\n")
    if len(chunks) != included.code_cells + 1:
        return None  # a cell holds a `boundary` line itself: where files go is not known
    by_index = {cell.index: cell for cell in included.cells}
    out: list[str] = []
    lines: list[int] = []
    files: dict[int, tuple[str, int]] = {}
    guarded: set[int] = set()
    program_line = 0
    for index, chunk in enumerate(chunks):
        chunk_lines = chunk.split("\n")[:-1]
        cell = by_index.get(index)
        inserts = _inserts(cell, chunk_lines) if cell is not None else {}
        copy = cell.copy if cell is not None else None
        if copy is not None and not _is_copy(chunk_lines[1:], copy):
            copy = None  # a fix changed the copy (it cannot: fixes of it are left out)
        for offset, line in enumerate(chunk_lines):
            program_line += 1
            out.append(line)
            lines.append(program_line)
            if copy is not None and 1 <= offset <= len(copy.copied):
                files[len(out)] = (copy.path, copy.copied[offset - 1][0])
                guarded.add(len(out))
            for loaded in inserts.get(offset, ()):
                for number, file_line in enumerate(loaded.lines, start=1):
                    out.append(file_line)
                    lines.append(program_line)
                    files[len(out)] = (loaded.path, number)
                    guarded.add(len(out))
        if index < len(chunks) - 1:
            program_line += 1
            out.append(boundary)
            lines.append(program_line)
            if copy is not None:
                guarded.add(len(out))  # a line added after a copy would change it
    if not files:
        return None
    text = "".join(f"{line}\n" for line in out)
    return Expanded(text, tuple(lines), files, frozenset(guarded))


def _inserts(cell: CellFiles, chunk_lines: list[str]) -> dict[int, list[LoadedFile]]:
    """Where in the cell's lines each run file goes: after its IPython line, found by its
    place among the cell's top-level IPython lines (fixes never add or remove one)."""
    top_level = [offset for offset, line in enumerate(chunk_lines) if line == NEUTRAL]
    if len(top_level) != cell.top_level:
        return {}
    inserts: dict[int, list[LoadedFile]] = {}
    for ordinal, loaded in cell.runs:
        inserts.setdefault(top_level[ordinal], []).append(loaded)
    return inserts


# ---------------------------------------------------------------------- checking


def analyzed(
    linter: Linter,
    text: str,
    path: str,
    included: Included,
    boundary: str,
    *,
    context: ModuleContext | None = None,
    position: CellPosition | None = None,
) -> FileAnalysis:
    """`Linter.analyze_text` of a notebook's program with the files' code in it, its
    diagnostics in the program's lines (the files' own left out). `position` places the
    summary's sites in cells (see `Linter.analyze_text`'s `origin`)."""
    expanded = expand(text, included, boundary)
    if expanded is None:
        origin = None
        if position is not None:

            def origin(line: int, column: int) -> tuple[int | None, Position, str | None]:
                return (*position(line, column), None)

        found = linter.analyze_text(text, path, is_notebook=True, context=context, origin=origin)
    else:
        found = linter.analyze_text(
            expanded.text,
            path,
            is_notebook=True,
            context=context,
            origin=_origin(expanded, position) if position is not None else None,
        )
        found.diagnostics = _placed(found.diagnostics, expanded)
    found.files = included.read
    return found


def _origin(
    expanded: Expanded, position: CellPosition
) -> Callable[[int, int], tuple[int | None, Position, str | None]]:
    def origin(line: int, column: int) -> tuple[int | None, Position, str | None]:
        in_file = expanded.files.get(line)
        if in_file is not None:
            return None, Position(in_file[1], column), in_file[0]
        where = expanded.program_position(Position(line, column))
        return (*position(where.line, where.column), None)

    return origin


def _placed(diagnostics: list[Diagnostic], expanded: Expanded) -> list[Diagnostic]:
    """The cells' diagnostics in program lines; those in a file's code are the file's."""
    placed = []
    for diagnostic in diagnostics:
        if diagnostic.start.line in expanded.files:
            continue
        placed.append(
            dataclasses.replace(
                diagnostic,
                start=expanded.program_position(diagnostic.start),
                end=expanded.program_position(diagnostic.end),
                fix=_fix_placed(diagnostic.fix, expanded),
            )
        )
    return placed


def _fix_placed(fix: Fix | None, expanded: Expanded) -> Fix | None:
    if fix is None:
        return None
    if any(
        line in expanded.guarded for edit in fix.edits for line in (edit.start.line, edit.end.line)
    ):
        return None
    edits = tuple(
        Edit(
            expanded.program_position(edit.start),
            expanded.program_position(edit.end),
            edit.content,
            edit.cell,
        )
        for edit in fix.edits
    )
    return Fix(fix.title, fix.applicability, edits)
