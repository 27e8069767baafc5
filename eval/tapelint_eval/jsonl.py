"""JSON-lines files of records (labels, misses): each non-blank line one JSON object."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def records(path: Path, error: type[Exception]) -> Iterator[tuple[str, Any]]:
    """Each non-blank line of `path`, parsed, with where it is (`path:line`); a file that
    cannot be read or a line that is not JSON raises `error` naming the place."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as problem:
        raise error(f"{path}: {problem}") from problem
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        where = f"{path}:{number}"
        try:
            yield where, json.loads(text)
        except json.JSONDecodeError as problem:
            raise error(f"{where}: not JSON: {problem}") from problem
