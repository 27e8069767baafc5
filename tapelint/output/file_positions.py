"""Where a diagnostic is for a tool that reads positions against the file itself.

CI annotations (`github`, `azure`, `gitlab`, `pylint`, `rdjson`, `junit`) name a file, a line
and a column of that file. A plain file's diagnostic is where it says. A notebook
diagnostic's cell position is placed in the `.ipynb` file's JSON text, on the line and
column where that character of the cell's source is (`tapelint.output.notebook_json`), and
its message starts with where it is in the notebook (`cell 4, line 2, column 9: ...`), which
is what a reader of the annotation needs. When the position cannot be placed (the file
cannot be read, or is not the notebook that was checked), the place has no position; each
format says what it does then.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tapelint.findings.diagnostics import Diagnostic, Position
from tapelint.output.notebook_json import NotebookFiles


@dataclass(frozen=True)
class FilePlace:
    span: tuple[Position, Position] | None  # start, end; None: a notebook position not placed
    message: str  # the message, after the cell position for a notebook diagnostic


class FilePlaces:
    """Places diagnostics in their files; each notebook is read at most once."""

    def __init__(self, sources: Mapping[str, bytes] | None = None) -> None:
        """`sources`: the bytes of paths not to read from disk (standard input's)."""
        self._notebooks = NotebookFiles(sources)

    def of(self, diagnostic: Diagnostic) -> FilePlace:
        if diagnostic.cell is None:
            return FilePlace((diagnostic.start, diagnostic.end), diagnostic.message)
        message = f"{cell_position(diagnostic)}: {diagnostic.message}"
        notebook = self._notebooks.get(diagnostic.path)
        placed = None
        if notebook is not None:
            placed = notebook.span(diagnostic.cell, diagnostic.start, diagnostic.end)
        return FilePlace(placed, message)

    def line_text(self, path: str, line: int) -> str | None:
        """Line `line` (1-based) of a notebook's JSON text, None when it has no such line."""
        notebook = self._notebooks.get(path)
        return notebook.line(line) if notebook is not None else None


def cell_position(diagnostic: Diagnostic) -> str:
    start = diagnostic.start
    return f"cell {diagnostic.cell}, line {start.line}, column {start.column}"
