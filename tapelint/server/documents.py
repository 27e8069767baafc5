"""What the server checks: an immutable snapshot of one open document.

A Python file is one text document. A notebook is a notebook document (LSP 3.17) whose
cells are text documents of their own; it is checked as the notebook file it stands for,
built from its cells, so that cells are joined, IPython syntax is neutralised and positions
come back per cell exactly as `tapelint check` does for a `.ipynb` file. Snapshots are
taken on the server's event loop and handed to the checking thread, which therefore never
sees the workspace change under it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from lsprotocol import types
from pygls.uris import to_fs_path
from pygls.workspace import Workspace

PYTHON = "python"
_VIRTUAL_DOCUMENTS = ".virtual_documents"


@dataclass(frozen=True)
class Cell:
    uri: str
    kind: str  # nbformat's cell_type: "code" (Python), "markdown", or "raw" (another language)
    text: str
    version: int | None


@dataclass(frozen=True)
class Snapshot:
    """One open document at one version. `cells` is None for a text document."""

    uri: str
    version: int | None
    path: Path  # the file it is checked as: its config, per-file-ignores and excludes
    text: str = ""
    cells: tuple[Cell, ...] | None = None

    @property
    def uris(self) -> tuple[str, ...]:
        """The documents diagnostics are published on: the file, or each cell."""
        return (self.uri,) if self.cells is None else tuple(cell.uri for cell in self.cells)

    def text_of(self, uri: str) -> str:
        if self.cells is None:
            return self.text
        return next(cell.text for cell in self.cells if cell.uri == uri)

    def version_of(self, uri: str) -> int | None:
        if self.cells is None:
            return self.version
        return next(cell.version for cell in self.cells if cell.uri == uri)

    def same_content(self, other: Snapshot) -> bool:
        return (self.path, self.text, self.cells) == (other.path, other.text, other.cells)

    def notebook_json(self) -> bytes:
        """The notebook file these cells make (nbformat 4, one-space indentation)."""
        cells = [_nbformat_cell(cell) for cell in self.cells or ()]
        document = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
        return (json.dumps(document, indent=1, ensure_ascii=False) + "\n").encode("utf-8")


def _nbformat_cell(cell: Cell) -> dict:
    entry: dict = {"cell_type": cell.kind, "metadata": {}, "source": cell.text}
    if cell.kind == "code":
        entry.update(execution_count=None, outputs=[])
    return entry


def text_snapshot(workspace: Workspace, uri: str) -> Snapshot | None:
    """A Python file; or, for Python named `*.ipynb`, a notebook's code as one program.

    JupyterLab's LSP extension sends a notebook as such a text document (its code cells
    joined, under `.virtual_documents/` in the Jupyter root). It is checked as that
    notebook with one code cell, so notebook semantics and the notebook's own
    configuration apply (the `.virtual_documents` directory is left out of its path, and is
    often in `.gitignore`)."""
    document = workspace.text_documents.get(unquote(uri))
    if document is None:
        return None
    path = path_of(uri, workspace)
    if path.suffix != ".ipynb":
        return Snapshot(uri, document.version, path, text=document.source)
    parts = list(path.parts)
    if _VIRTUAL_DOCUMENTS in parts:
        del parts[len(parts) - 1 - parts[::-1].index(_VIRTUAL_DOCUMENTS)]
    cell = Cell(uri, "code", document.source, document.version)
    return Snapshot(uri, document.version, Path(*parts), text=document.source, cells=(cell,))


def notebook_snapshot(workspace: Workspace, uri: str) -> Snapshot | None:
    notebook = workspace.get_notebook_document(notebook_uri=uri)
    if notebook is None:
        return None
    cells = []
    for cell in notebook.cells:
        document = workspace.text_documents.get(unquote(cell.document))
        if document is None:
            continue
        cells.append(
            Cell(
                cell.document,
                _cell_kind(cell, document.language_id),
                document.source,
                document.version,
            )
        )
    return Snapshot(uri, notebook.version, path_of(uri, workspace), cells=tuple(cells))


def _cell_kind(cell: types.NotebookCell, language: str | None) -> str:
    if cell.kind == types.NotebookCellKind.Markup:
        return "markdown"
    return "code" if (language or PYTHON) == PYTHON else "raw"


def path_of(uri: str, workspace: Workspace) -> Path:
    """The file a document is checked as. A document that is not a file (an unsaved buffer,
    `untitled:Untitled-1`) is checked as a file of its name in the workspace's root, so the
    project's configuration applies to it. So is one whose path holds a NUL byte, which no
    file can have."""
    path = to_fs_path(uri)
    if path is not None and "\0" not in path:
        return Path(os.path.abspath(path))
    # Not a file, or a path no file can have (a NUL byte: `%00`).
    name = os.path.basename(unquote(urlparse(uri).path)).replace("\0", "") or "untitled"
    return Path(workspace.root_path or os.getcwd()).absolute() / name
