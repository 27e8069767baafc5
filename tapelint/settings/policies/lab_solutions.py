"""A course's lab notebooks next to their solutions: each finding is reported once.

Courses keep each exercise notebook twice: `.../labs/NAME.ipynb`, which the student
completes, and `.../solutions/NAME.ipynb` beside it (any directory named `labs` or `lab`,
with `solutions` or `solution` in its place). The cells the lab gives complete are the
solution's cells, the same code with at most other comments, so a finding in one of them
would be reported twice, and its fix belongs to both. It is reported on the solution: a lab
cell whose code (comments aside) is the code of one of the solution's cells is left out of
the lab's report (and of its fixes). The lab's own cells, the ones the student writes or
that differ, are reported as usual.

The solution is read from disk wherever the lab is checked (a whole run, one file from
pre-commit, an editor), so what is reported on the lab does not depend on which files a run
was given; the cache keys a lab's results with its solution's bytes.
"""

from __future__ import annotations

import io
import json
import tokenize
from pathlib import Path, PurePath

_LAB_DIRECTORIES = {"labs": ("solutions", "solution"), "lab": ("solution", "solutions")}


def solution_of(path: str) -> Path | None:
    """The solution notebook of the lab notebook at `path`, if there is one on disk."""
    pure = PurePath(path)
    if pure.suffix != ".ipynb":
        return None
    parts = pure.parts
    for index in range(len(parts) - 2, -1, -1):  # the nearest `labs` directory first
        for name in _LAB_DIRECTORIES.get(parts[index].lower(), ()):
            candidate = Path(*parts[:index], name, *parts[index + 1 :])
            if candidate.is_file():
                return candidate
    return None


def solution_bytes(path: str) -> bytes:
    """The solution's bytes (empty when there is none, or it cannot be read): what a lab's
    cached results also depend on."""
    solution = solution_of(path)
    if solution is None:
        return b""
    try:
        return solution.read_bytes()
    except OSError:
        return b""


def solution_cells(path: str) -> frozenset[str]:
    """The code of each of the solution's code cells (see `cell_key`); empty without one."""
    data = solution_bytes(path)
    if not data:
        return frozenset()
    try:
        document = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return frozenset()
    cells = document.get("cells") if isinstance(document, dict) else None
    if not isinstance(cells, list):
        return frozenset()
    found = set()
    for cell in cells:
        if isinstance(cell, dict) and cell.get("cell_type") == "code":
            source = cell.get("source", "")
            text = "".join(source) if isinstance(source, list) else source
            if isinstance(text, str) and text.strip():
                found.add(cell_key(text))
    return frozenset(found)


def cell_key(source: str) -> str:
    """A cell's code as compared: without comments (a lab adds `# TODO` lines to the
    solution's code), trailing blanks and blank lines (notebook tools differ in these)."""
    lines = source.splitlines()
    for row, column in sorted(_comment_starts(source), reverse=True):
        lines[row - 1] = lines[row - 1][:column]
    return "\n".join(line.rstrip() for line in lines if line.strip())


def _comment_starts(source: str) -> list[tuple[int, int]]:
    """Where each comment starts (line, column); none when the cell does not tokenize as
    Python (its comments then stay in the comparison)."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        return []
    return [token.start for token in tokens if token.type == tokenize.COMMENT]
