"""What one check of a document found: each diagnostic on the document it is shown on (the
file, or a notebook's cell, at the cell's own line), in tapelint's terms and the client's."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec

from tapelint.findings.diagnostics import Diagnostic
from tapelint.server.convert import LineIndex, to_lsp
from tapelint.server.documents import Snapshot
from tapelint.server.settings import ClientSettings
from tapelint.settings.config import Settings


@dataclass(frozen=True)
class Located:
    uri: str  # the document it is shown on
    diagnostic: Diagnostic  # positions within that document
    lsp: types.Diagnostic


@dataclass(frozen=True)
class Result:
    snapshot: Snapshot
    settings: Settings  # the project's, with the client's on top
    client: ClientSettings
    found: tuple[Located, ...]

    def on(self, uri: str) -> list[Located]:
        return [located for located in self.found if located.uri == uri]

    def by_uri(self) -> dict[str, list[types.Diagnostic]]:
        """The diagnostics to publish: every document of the snapshot, empty lists too."""
        published: dict[str, list[types.Diagnostic]] = {uri: [] for uri in self.snapshot.uris}
        for located in self.found:
            published[located.uri].append(located.lsp)
        return published


def locate(
    snapshot: Snapshot,
    diagnostics: list[Diagnostic],
    codec: PositionCodec,
    docs_uri: Callable[[str], str | None],
) -> tuple[Located, ...]:
    indexes: dict[str, LineIndex] = {}
    found = []
    for diagnostic in diagnostics:
        uri = _uri_of(snapshot, diagnostic)
        if uri not in indexes:
            indexes[uri] = LineIndex(snapshot.text_of(uri), codec)
        lsp = to_lsp(diagnostic, indexes[uri], docs_uri(diagnostic.code))
        found.append(Located(uri, diagnostic, lsp))
    return tuple(found)


def _uri_of(snapshot: Snapshot, diagnostic: Diagnostic) -> str:
    """The cell a notebook's diagnostic is in (`cell` counts every cell from 1)."""
    if snapshot.cells is None:
        return snapshot.uri
    number = diagnostic.cell or 1
    return snapshot.cells[min(number, len(snapshot.cells)) - 1].uri
