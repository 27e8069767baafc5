"""Where a notebook cell's source text is in the notebook file's JSON text.

A notebook diagnostic's positions are lines and columns of its cell's source; a tool that
reads positions against the file (GitHub code scanning, from SARIF) needs the line and
column of the `.ipynb` file's JSON text where that character is. The notebook's JSON is
mapped with `json-source-map` (where each cell's `source`, a string or a list of strings,
starts and ends in the text), and a position inside one of those strings is counted through
its JSON escapes (`\\n`, `\\"`, `\\u00e9`, a surrogate pair), so the position is exact
whatever wrote the notebook: one line a source line (nbformat), a whole cell in one string,
or the whole notebook on one line.

A position on a line's start (between two strings of a list) is placed in the string that
starts there when it starts a span, and at the end of the one before when it ends a span: a
finding is then on the JSON lines of its source lines, and an edit between the two still
leaves valid JSON with the same cell source (it only joins the two strings).
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from tapelint.findings.diagnostics import Position
from tapelint.sources.discovery import read_source

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class _Piece:
    """One JSON string of a cell's source: where its decoded text starts in the cell's
    source, and where its opening quote is in the file (0-based line, column, offset)."""

    start: int
    length: int
    line: int
    column: int
    offset: int


class _Cell:
    def __init__(self, text: str, pieces: list[tuple[str, Any]]) -> None:
        self._text = text
        self._pieces: list[_Piece] = []
        parts = []
        start = 0
        for value, entry in pieces:
            if value:
                where = entry.value_start
                self._pieces.append(
                    _Piece(start, len(value), where.line, where.column, where.position)
                )
                parts.append(value)
                start += len(value)
        self.source = "".join(parts)

    @cached_property
    def _line_starts(self) -> list[int]:
        return [0, *(match.end() for match in _LINE_BREAK.finditer(self.source))]

    def past_the_end(self, line: int, column: int) -> bool:
        """Whether (line, column) is the start of the line after a last line that has no
        line end: where a fix appends after the cell (tapelint sees every cell end with
        one)."""
        ends_open = not self.source.endswith(("\n", "\r"))
        return ends_open and line == len(self._line_starts) + 1 and column == 1

    def end(self) -> Position:
        """The cell position just after its last character."""
        starts = self._line_starts
        return Position(len(starts), len(self.source) - starts[-1] + 1)

    def position(self, line: int, column: int, *, ends: bool) -> Position | None:
        """The JSON text's position (1-based) of cell position (line, column)."""
        starts = self._line_starts
        if not 1 <= line <= len(starts) or column < 1:
            return None
        offset = starts[line - 1] + column - 1
        line_end = starts[line] if line < len(starts) else len(self.source)
        if offset > line_end or not self._pieces:
            return None
        keys = [piece.start for piece in self._pieces]
        index = (bisect.bisect_left if ends and offset else bisect.bisect_right)(keys, offset) - 1
        piece = self._pieces[max(index, 0)]
        raw = _raw_length(self._text, piece.offset + 1, offset - piece.start)
        return Position(piece.line + 1, piece.column + 1 + raw + 1)


def _raw_length(text: str, at: int, count: int) -> int:
    """How many characters of JSON string text from `at` encode `count` decoded ones."""
    index = at
    for _ in range(count):
        if text[index] != "\\":
            index += 1
        elif text[index + 1] != "u":
            index += 2
        else:
            code = int(text[index + 2 : index + 6], 16)
            index += 6
            if 0xD800 <= code < 0xDC00 and text.startswith("\\u", index):
                index += 6  # the low half of a surrogate pair: one character decoded
    return index - at


class NotebookText:
    """A notebook file's JSON text, to place cell positions in it."""

    def __init__(self, text: str, document: dict[str, Any], source_map: dict[str, Any]) -> None:
        self._text = text
        self._document = document
        self._map = source_map
        self._cells: dict[int, _Cell | None] = {}

    @classmethod
    def read(cls, data: bytes) -> NotebookText | None:
        """None when `data` is not a notebook's JSON (the positions cannot be placed)."""
        from json_source_map import calculate  # only SARIF of a notebook pays for it

        try:
            text = data.decode("utf-8")
            document = json.loads(text)  # a byte-order mark is refused here: no positions
            source_map = calculate(text)
        except (UnicodeDecodeError, ValueError, RecursionError):
            return None
        if not isinstance(document, dict) or not isinstance(document.get("cells"), list):
            return None
        return cls(text, document, source_map)

    def position(self, cell: int, line: int, column: int, *, ends: bool = False) -> Position | None:
        """Where cell `cell`'s (1-based) position (line, column) is in the JSON text;
        `ends`: the position ends a span. None when it cannot be placed exactly."""
        found = self._cell(cell)
        return found.position(line, column, ends=ends) if found is not None else None

    def span(self, cell: int, start: Position, end: Position) -> tuple[Position, Position] | None:
        """Where a span of cell `cell` starts and ends in the JSON text (`end` is `start`
        for an empty span); None when it cannot be placed exactly."""
        first = self.position(cell, start.line, start.column)
        last = first if end <= start else self.position(cell, end.line, end.column, ends=True)
        return (first, last) if first is not None and last is not None else None

    def replacement(
        self, cell: int, start: Position, end: Position, content: str
    ) -> tuple[Position, Position, str] | None:
        """A fix's edit of cell `cell` as an edit of the JSON text: where it starts and ends
        there, and its text JSON-escaped; None when it cannot be placed exactly.

        tapelint edits every cell as if it ended with a line end, and writes it back
        without one if it had none: an edit that reaches past the last line of such a cell
        is, on the cell's text, one that ends at its end, less the line end the edit's
        text ends with (and, when it starts past the last line too, with one in front)."""
        found = self._cell(cell)
        if found is None:
            return None
        if found.past_the_end(end.line, end.column):
            if not content.endswith("\n"):
                return None
            content = content[:-1]
            if found.past_the_end(start.line, start.column):
                content = "\n" + content
                start = end = found.end()
            else:
                end = found.end()
        first = found.position(start.line, start.column, ends=False)
        last = first if end <= start else found.position(end.line, end.column, ends=True)
        if first is None or last is None:
            return None
        return first, last, json.dumps(content, ensure_ascii=False)[1:-1]

    def line(self, number: int) -> str | None:
        """Line `number` (1-based) of the JSON text, without its line end."""
        lines = self._lines
        return lines[number - 1].rstrip("\r") if 1 <= number <= len(lines) else None

    @cached_property
    def _lines(self) -> list[str]:
        return self._text.split("\n")

    def _cell(self, number: int) -> _Cell | None:
        if number not in self._cells:
            self._cells[number] = self._read_cell(number)
        return self._cells[number]

    def _read_cell(self, number: int) -> _Cell | None:
        cells = self._document["cells"]
        if not 1 <= number <= len(cells) or not isinstance(cells[number - 1], dict):
            return None
        source = cells[number - 1].get("source")
        pointer = f"/cells/{number - 1}/source"
        if isinstance(source, str):
            return _Cell(self._text, [(source, self._map[pointer])])
        if isinstance(source, list) and all(isinstance(part, str) for part in source):
            return _Cell(
                self._text, [(p, self._map[f"{pointer}/{i}"]) for i, p in enumerate(source)]
            )
        return None


class NotebookFiles:
    """The JSON text of each notebook named, each read at most once; standard input's
    bytes are given (the file it is checked as may hold something else)."""

    def __init__(self, sources: Mapping[str, bytes] | None = None) -> None:
        self._sources = dict(sources or {})
        self._read: dict[str, NotebookText | None] = {}

    def get(self, path: str) -> NotebookText | None:
        if path not in self._read:
            try:
                data = self._sources[path] if path in self._sources else read_source(Path(path))
            except OSError:
                data = b""
            self._read[path] = NotebookText.read(data) if data else None
        return self._read[path]
