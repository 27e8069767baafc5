"""reviewdog's Diagnostic Format (rdjson): one JSON object, `{source, diagnostics}`, that
`reviewdog -f=rdjson` turns into review comments (with suggested changes) on a pull request.

Each diagnostic has its message, `severity` (`ERROR` or `WARNING`), `code` (`value`, and
`url`, the rule's page), `location` (`path` and a `range` whose end is exclusive), the
places it rests on as `related_locations`, and, for a plain file, its fix's edits as
`suggestions`. Columns count UTF-8 bytes, as the format says (tapelint counts characters
elsewhere); they are converted on the file's lines as it is when the output is written.

A notebook diagnostic's range is in the `.ipynb` file's JSON text where its source is, its
message starts with the cell, line and column in the notebook
(`tapelint.output.file_positions`), and it has no suggestions (an edit of a cell is not a
plain edit of the JSON text). When its position cannot be placed, the location has no range.
A related place in a notebook has its cell position in its message and no range.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from tapelint.findings.diagnostics import Diagnostic, Edit, Position, Related
from tapelint.findings.rule import DOCS_URL
from tapelint.output.file_positions import FilePlaces
from tapelint.output.json import url
from tapelint.output.snippets import SourceLines


def render(diagnostics: Sequence[Diagnostic], sources: Mapping[str, bytes] | None = None) -> str:
    """`sources`: the bytes of paths not to read from disk (standard input's)."""
    columns = _ByteColumns(sources)
    result = {
        "source": {"name": "tapelint", "url": DOCS_URL},
        "diagnostics": [_diagnostic(d, columns) for d in diagnostics],
    }
    return json.dumps(result, indent=2, ensure_ascii=False) + "\n"


def _diagnostic(diagnostic: Diagnostic, columns: _ByteColumns) -> dict[str, Any]:
    place = columns.places.of(diagnostic)
    location: dict[str, Any] = {"path": diagnostic.path}
    if place.span is not None:
        location["range"] = columns.range(diagnostic, *place.span)
    code: dict[str, Any] = {"value": diagnostic.code}
    page = url(diagnostic.code)
    if page is not None:
        code["url"] = page
    result: dict[str, Any] = {
        "message": place.message,
        "location": location,
        "severity": diagnostic.severity.value.upper(),
        "code": code,
    }
    if diagnostic.related:
        result["related_locations"] = [_related(related) for related in diagnostic.related]
    if diagnostic.fix is not None and diagnostic.cell is None:
        result["suggestions"] = [
            _suggestion(diagnostic, edit, columns) for edit in diagnostic.fix.edits
        ]
    return result


def _related(related: Related) -> dict[str, Any]:
    if related.cell is not None:
        where = f"cell {related.cell}, line {related.line}, column {related.column}"
        return {"message": f"{where}: {related.message}", "location": {"path": related.path}}
    start = {"line": related.line, "column": related.column}
    return {
        "message": related.message,
        "location": {"path": related.path, "range": {"start": start}},
    }


def _suggestion(diagnostic: Diagnostic, edit: Edit, columns: _ByteColumns) -> dict[str, Any]:
    return {"range": columns.range(diagnostic, edit.start, edit.end), "text": edit.content}


class _ByteColumns:
    """Converts character columns to UTF-8 byte columns on the lines of the files."""

    def __init__(self, sources: Mapping[str, bytes] | None) -> None:
        self.places = FilePlaces(sources)
        self._lines = SourceLines(sources)

    def range(self, diagnostic: Diagnostic, start: Position, end: Position) -> dict[str, Any]:
        result = {"start": self._position(diagnostic, start)}
        if end > start:
            result["end"] = self._position(diagnostic, end)
        return result

    def _position(self, diagnostic: Diagnostic, position: Position) -> dict[str, int]:
        if diagnostic.cell is None:
            text = self._lines.line(diagnostic, position.line)
        else:  # a position already placed in the notebook's JSON text
            text = self.places.line_text(diagnostic.path, position.line)
        return {"line": position.line, "column": byte_column(text, position.column)}


def byte_column(text: str | None, column: int) -> int:
    """The 1-based UTF-8 byte column of character column `column` of line `text` (as it is
    when the line cannot be read)."""
    if text is None:
        return column
    before = text[: column - 1]
    past_the_end = max(column - 1 - len(text), 0)
    return len(before.encode("utf-8", errors="surrogatepass")) + past_the_end + 1
