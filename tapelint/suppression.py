"""`# noqa` comments: per line (flake8 syntax, codes or names) and per file."""

from __future__ import annotations

import re
from collections.abc import Iterable

from tapelint.diagnostics import Diagnostic

_LINE_NOQA = re.compile(
    r"#\s*noqa(?::[\s]?(?P<codes>[A-Za-z0-9_-]+(?:[,\s]+[A-Za-z0-9_-]+)*))?", re.IGNORECASE
)
_FILE_NOQA = re.compile(
    r"^\s*#\s*tapelint:\s*noqa(?::\s*(?P<codes>[A-Za-z0-9_-]+(?:[,\s]+[A-Za-z0-9_-]+)*))?\s*$",
    re.IGNORECASE | re.MULTILINE,
)


def _parse_codes(raw: str | None) -> frozenset[str] | None:
    """None means "everything"; otherwise the listed codes/names, upper-cased."""
    if raw is None:
        return None
    return frozenset(part.upper() for part in re.split(r"[,\s]+", raw) if part)


def _matches(selectors: frozenset[str] | None, diagnostic: Diagnostic) -> bool:
    if selectors is None:
        return True
    return any(diagnostic.code.startswith(s) or diagnostic.name.upper() == s for s in selectors)


def file_suppressions(text: str) -> list[frozenset[str] | None]:
    return [_parse_codes(m.group("codes")) for m in _FILE_NOQA.finditer(text)]


def line_suppression(line: str) -> frozenset[str] | bool | None:
    """False when the line has no noqa; None for a bare `# noqa`; else the listed codes."""
    match = _LINE_NOQA.search(line)
    if match is None:
        return False
    return _parse_codes(match.group("codes"))


def unsuppressed(
    diagnostics: Iterable[Diagnostic], lines_of: dict[int, str], text: str
) -> list[Diagnostic]:
    """Drop diagnostics silenced by a noqa on their line or a file-level noqa.

    `lines_of` maps a diagnostic's line number to the physical line it sits on.
    """
    diagnostics = list(diagnostics)
    if not diagnostics:
        return diagnostics
    whole_file = file_suppressions(text)
    kept = []
    for diagnostic in diagnostics:
        if any(_matches(s, diagnostic) for s in whole_file):
            continue
        line = lines_of.get(diagnostic.start.line, "")
        on_line = line_suppression(line)
        if on_line is not False and _matches(on_line, diagnostic):
            continue
        kept.append(diagnostic)
    return kept
