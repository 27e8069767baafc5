"""The source lines a finding points at, read from a materialised repository."""

from __future__ import annotations

import json
from pathlib import Path


def source_lines(root: Path, path: str, cell: int | None) -> list[str]:
    """The lines of a file, or of one notebook cell (1-based index into `cells`, markdown
    cells counted, as tapelint reports it). Empty when it cannot be read."""
    file = root / path
    try:
        text = file.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    if cell is None:
        return text.splitlines()
    try:
        cells = json.loads(text)["cells"]
        source = cells[cell - 1]["source"]
    except (ValueError, KeyError, IndexError, TypeError):
        return []
    return ("".join(source) if isinstance(source, list) else str(source)).splitlines()


def excerpt(lines: list[str], line: int, context: int) -> list[tuple[int, str]]:
    """(number, text) of `line` and `context` lines either side, within the file."""
    first = max(1, line - context)
    last = min(len(lines), line + context)
    return [(number, lines[number - 1]) for number in range(first, last + 1)]
