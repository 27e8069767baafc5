"""tapelint's diagnostics and edits in LSP terms.

tapelint counts lines from 1 and columns from 1 in Unicode code points, on lines ended by
`\\n` (a `\\r` before it belongs to the line, as for the parser). LSP counts both from 0, and
columns in the code units of the encoding agreed at initialisation (UTF-16 unless the client
offers another). A column past the end of its line (a syntax error at the end of the file)
is clamped to the line's end, as the protocol asks.
"""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec

from tapelint.findings.diagnostics import Diagnostic, Position, Severity

SOURCE = "tapelint"
_SEVERITY = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
}


class LineIndex:
    """Positions in one text, for the client."""

    def __init__(self, text: str, codec: PositionCodec) -> None:
        self.text = text
        self._codec = codec
        self._lines = text.split("\n")
        self._starts = [0]
        for line in self._lines[:-1]:
            self._starts.append(self._starts[-1] + len(line) + 1)

    def position(self, where: Position) -> types.Position:
        """A tapelint position (1-based line and column, in code points)."""
        line = min(max(where.line, 1), len(self._lines)) - 1
        content = self._lines[line].removesuffix("\r")
        column = min(max(where.column - 1, 0), len(content))
        return types.Position(line, self._codec.client_num_units(content[:column]))

    def position_at(self, offset: int) -> types.Position:
        """The position before the character at `offset` (an index into the text)."""
        line = _last_at_most(self._starts, offset)
        return self.position(Position(line + 1, offset - self._starts[line] + 1))

    def line(self, number: int) -> str:
        """Line `number` (1-based) without its line end; "" past the end."""
        if not 1 <= number <= len(self._lines):
            return ""
        return self._lines[number - 1].removesuffix("\r")


def _last_at_most(starts: list[int], offset: int) -> int:
    low, high = 0, len(starts) - 1
    while low < high:
        middle = (low + high + 1) // 2
        if starts[middle] <= offset:
            low = middle
        else:
            high = middle - 1
    return low


def to_lsp(diagnostic: Diagnostic, index: LineIndex, docs_uri: str | None) -> types.Diagnostic:
    return types.Diagnostic(
        range=types.Range(index.position(diagnostic.start), index.position(diagnostic.end)),
        message=diagnostic.message,
        severity=_SEVERITY[diagnostic.severity],
        code=diagnostic.code,
        code_description=types.CodeDescription(href=docs_uri) if docs_uri else None,
        source=SOURCE,
        related_information=_related(diagnostic) or None,
    )


def _related(diagnostic: Diagnostic) -> list[types.DiagnosticRelatedInformation]:
    """The places a finding rests on (a helper's gradient call or apply, maybe in another
    file), as locations the editor can jump to. Their files' text is not at hand, so the
    column counts code points (the same as UTF-16 units on the ASCII lines code is written
    in); a place in a notebook cell is left out (its cell's document is the client's)."""
    found = []
    for place in diagnostic.related:
        if place.cell is not None:
            continue
        start = types.Position(max(place.line - 1, 0), max(place.column - 1, 0))
        uri = (Path.cwd() / place.path).resolve().as_uri()
        location = types.Location(uri=uri, range=types.Range(start, start))
        found.append(types.DiagnosticRelatedInformation(location=location, message=place.message))
    return found


def text_edit(before: str, after: str, index: LineIndex) -> types.TextEdit | None:
    """One edit that turns `before` (the text `index` was built on) into `after`: the
    differing middle, so that the client leaves the rest (and its cursor) alone. None when
    the texts are equal."""
    if before == after:
        return None
    limit = min(len(before), len(after))
    start = 0
    while start < limit and before[start] == after[start]:
        start += 1
    if start and before[start - 1] == "\r":  # never between the halves of a `\r\n`
        start -= 1
    end = 0
    while end < limit - start and before[-1 - end] == after[-1 - end]:
        end += 1
    cut = len(before) - end
    if end and cut > start and before[cut] == "\n" and before[cut - 1] == "\r":
        end -= 1
        cut += 1
    new_text = after[start : len(after) - end]
    return types.TextEdit(
        range=types.Range(index.position_at(start), index.position_at(cut)), new_text=new_text
    )
