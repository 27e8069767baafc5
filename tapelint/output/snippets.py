"""The source lines a diagnostic points at, for the full format's excerpt.

Read from the files when the output is rendered (a fixed file is read as fixed, which is
what the remaining diagnostics' positions refer to); standard input's bytes are given by the
caller, since the file it is checked as may hold something else. A notebook's lines are its
cell's own lines. A file that cannot be read or decoded has no excerpt, not an error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from tapelint.findings.diagnostics import Diagnostic
from tapelint.linter.notebooks.notebook import NotebookError, read_notebook
from tapelint.sources.discovery import read_source

_Lines = dict[int | None, Sequence[str]]  # by cell (None: a plain file)


class SourceLines:
    """The lines of each file diagnostics point at, each file read at most once."""

    def __init__(self, given: Mapping[str, bytes] | None = None) -> None:
        self._given = dict(given or {})
        self._files: dict[str, _Lines] = {}

    def line(self, diagnostic: Diagnostic, number: int) -> str | None:
        """Line `number` (1-based) of the file, or of the notebook cell, of `diagnostic`."""
        if diagnostic.path not in self._files:
            self._files[diagnostic.path] = self._read(diagnostic.path)
        lines = self._files[diagnostic.path].get(diagnostic.cell)
        if lines is None or not 1 <= number <= len(lines):
            return None
        return lines[number - 1]

    def _read(self, path: str) -> _Lines:
        try:
            data = self._given[path] if path in self._given else read_source(Path(path))
        except OSError:
            return {}
        if path.endswith(".ipynb"):
            try:
                program = read_notebook(data)
            except NotebookError:
                return {}
            cells = program.cells if program is not None else ()
            return {cell.number: cell.originals for cell in cells}
        return {None: data.decode("utf-8", errors="replace").splitlines()}
