"""`# noqa` comments: per line (flake8 syntax, codes or names) and per file; and
tapelint's own line comment, `# tapelint: ignore[...]`, for rule names.

`# noqa: TAP101` is for codes, the form flake8 and ruff read too. A rule name belongs in
`# tapelint: ignore[loss-outside-tape]` (codes there work as well): neither flake8, which
would take `# noqa: loss-outside-tape` for a bare `# noqa` silencing every tool's findings on
the line, nor ruff, which warns that it is an invalid noqa directive, reads that comment.
Names in `# noqa:` are still honoured while that form is deprecated (see
docs/configuration.md).

A line's noqa is read on that line. A line that cannot end in a comment, because it ends
inside a multi-line string or with a backslash continuation, takes its noqa from the first
line after it that can (where the string or the continuation ends), as ruff reads it; its
own text still counts too.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from tapelint.findings.diagnostics import Diagnostic

# A line's noqa and its list (codes or names; tapelint reads both, flake8 only codes).
LINE_NOQA = re.compile(
    r"#\s*noqa(?::[\s]?(?P<codes>[A-Za-z0-9_-]+(?:[,\s]+[A-Za-z0-9_-]+)*))?", re.IGNORECASE
)
# tapelint's own: codes or names between brackets; no blanket form (a bare noqa is that).
TOOL_IGNORE = re.compile(
    r"#\s*tapelint:\s*ignore\[\s*(?P<codes>[A-Za-z0-9_-]+(?:[,\s]+[A-Za-z0-9_-]+)*)[,\s]*\]",
    re.IGNORECASE,
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


def silences(line: str, diagnostic: Diagnostic) -> bool:
    """Whether a noqa on `line` silences `diagnostic`."""
    on_line = line_suppression(line)
    return on_line is not False and _matches(on_line, diagnostic)


@dataclass(frozen=True)
class CommentSites:
    """Where comments are and can go in a source text (1-based lines, 0-based columns)."""

    comments: dict[int, int]  # line -> column where the comment on it starts
    # A line that cannot end in a comment -> the line that takes its comment instead.
    carried: dict[int, int]

    def noqa_line(self, line: int) -> int:
        return self.carried.get(line, line)


def comment_sites(text: str) -> CommentSites | None:
    """Where comments are and can go in `text`; None when it does not tokenize."""
    comments: dict[int, int] = {}
    line_ends: set[int] = set()
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                comments[token.start[0]] = token.start[1]
            elif token.type in (tokenize.NEWLINE, tokenize.NL):
                line_ends.add(token.start[0])
    except (tokenize.TokenError, SyntaxError):
        return None
    carried: dict[int, int] = {}
    pending: list[int] = []
    for line in range(1, max(line_ends, default=0) + 1):
        if line in line_ends:
            carried.update((waiting, line) for waiting in pending)
            pending.clear()
        else:
            pending.append(line)
    return CommentSites(comments, carried)


def _matches(selectors: frozenset[str] | None, diagnostic: Diagnostic) -> bool:
    if selectors is None:
        return True
    return any(diagnostic.code.startswith(s) or diagnostic.name.upper() == s for s in selectors)


def file_suppressions(text: str) -> list[frozenset[str] | None]:
    return [_parse_codes(m.group("codes")) for m in _FILE_NOQA.finditer(text)]


def line_suppression(line: str) -> frozenset[str] | Literal[False] | None:
    """False when the line has neither a noqa nor a `# tapelint: ignore[...]`; None for a
    bare `# noqa`; else the listed codes and names (of both comments)."""
    noqa = LINE_NOQA.search(line)
    listed = _parse_codes(noqa.group("codes")) if noqa is not None else frozenset()
    if listed is None:
        return None
    ignores = [
        _parse_codes(match.group("codes")) or frozenset() for match in TOOL_IGNORE.finditer(line)
    ]
    if noqa is None and not ignores:
        return False
    return listed.union(*ignores)


def unsuppressed(
    diagnostics: Iterable[Diagnostic], lines_of: dict[int, str], text: str
) -> list[Diagnostic]:
    """Drop diagnostics silenced by a noqa on their line or a file-level noqa.

    `lines_of` maps a diagnostic's line number to the physical line it sits on.
    """
    diagnostics = list(diagnostics)
    if not diagnostics or not _ANY_NOQA.search(text):
        return diagnostics
    whole_file = file_suppressions(text)
    carried = _CarriedLines(text)
    kept = []
    for diagnostic in diagnostics:
        if any(_matches(s, diagnostic) for s in whole_file):
            continue
        if silences(lines_of.get(diagnostic.start.line, ""), diagnostic):
            continue
        if silences(carried.line_for(diagnostic.start.line), diagnostic):
            continue
        kept.append(diagnostic)
    return kept


_ANY_NOQA = re.compile(r"noqa|tapelint:\s*ignore", re.IGNORECASE)


class _CarriedLines:
    """The line that holds the noqa of a line that cannot end in a comment; "" for a line
    that can. Tokenises the text only when first asked."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._sites: CommentSites | None = None
        self._lines: list[str] = []

    def line_for(self, line: int) -> str:
        if self._sites is None:
            self._sites = comment_sites(self._text) or CommentSites({}, {})
            self._lines = self._text.split("\n")
        target = self._sites.carried.get(line)
        return self._lines[target - 1] if target is not None else ""
