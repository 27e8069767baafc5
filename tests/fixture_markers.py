"""Reading the `# expect:` markers of fixture files (see fixtures/README.md)."""

from __future__ import annotations

import json
import re
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
# A fixture checked in preview mode: the parts of rules still in preview are reported.
_PREVIEW = re.compile(r"^\s*#\s*fixture:\s*preview\s*$", re.MULTILINE)
_MARKER = re.compile(r"#\s*expect:\s*(?P<codes>TAP\d{3}(?::\d+)?(?:\s*,\s*TAP\d{3}(?::\d+)?)*)")


def expected(path: Path) -> set[tuple[int, str, int | None]]:
    """{(line, code, column or None)} from the file's markers."""
    return _markers(path.read_text(encoding="utf-8").splitlines())


def expected_in_notebook(path: Path) -> set[tuple[int, int, str, int | None]]:
    """{(cell, line within the cell, code, column or None)} from the markers in a notebook's
    code cells; cells are numbered from 1, counting every cell, as tapelint reports them."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return {
        (number, *marker)
        for number, cell in enumerate(cells, start=1)
        if cell["cell_type"] == "code"
        for marker in _markers("".join(cell["source"]).splitlines())
    }


def asks_preview(path: Path) -> bool:
    """Whether a fixture (a `.py` file, or any code cell of a notebook) has a
    `# fixture: preview` line: it is checked in preview mode."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".ipynb":
        cells = json.loads(text)["cells"]
        text = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    return _PREVIEW.search(text) is not None


def _markers(lines: list[str]) -> set[tuple[int, str, int | None]]:
    found = set()
    for number, line in enumerate(lines, start=1):
        match = _MARKER.search(line)
        if match is None:
            continue
        for item in match.group("codes").split(","):
            code, _, column = item.strip().partition(":")
            found.add((number, code, int(column) if column else None))
    return found


def rule_fixture_files() -> list[Path]:
    return sorted(FIXTURES.glob("TAP[1-9]*/*.py"))


def clean_files() -> list[Path]:
    return sorted((FIXTURES / "clean").rglob("*.py"))


def notebook_files() -> list[Path]:
    return sorted((FIXTURES / "notebooks").glob("*.ipynb"))
