"""GitLab's Code Quality report: a JSON array of issues that GitLab shows on merge requests
(`artifacts: reports: codequality:` in `.gitlab-ci.yml`).

Each issue has the fields GitLab's documentation asks for: `description` (the code and the
message), `check_name` (the code), `fingerprint`, `severity` (`major` for an error-severity
rule, `minor` for a warning-severity one) and `location` (`path`, and `lines` with `begin`
and `end`).

`path` is relative to the current directory (GitLab wants it relative to the repository,
and a CI job runs in the repository's root) when the file is under it, with `/` separators.
The fingerprint identifies a finding across runs, so that GitLab can tell new findings from
fixed ones: a hash of the path, the code, the message, and how many identical findings come
before it in the file. The line is left out, so that editing the lines above a finding does
not make it look fixed and new again.

A notebook diagnostic's lines are those of the `.ipynb` file's JSON text where its source
is, and its description starts with the cell, line and column in the notebook
(`tapelint.output.file_positions`); when that cannot be placed, `lines` is the file's first
line, since GitLab needs one.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tapelint.findings.diagnostics import Diagnostic, Severity
from tapelint.output.file_positions import FilePlaces

SEVERITIES = {Severity.ERROR: "major", Severity.WARNING: "minor"}


def render(diagnostics: Sequence[Diagnostic], sources: Mapping[str, bytes] | None = None) -> str:
    """`sources`: the bytes of paths not to read from disk (standard input's)."""
    places = FilePlaces(sources)
    before: Counter[tuple[str, str, str]] = Counter()
    issues = []
    for diagnostic in diagnostics:
        path = relative_path(diagnostic.path)
        key = (path, diagnostic.code, f"{diagnostic.cell}:{diagnostic.message}")
        issues.append(_issue(diagnostic, path, places, _fingerprint(key, before[key])))
        before[key] += 1
    return json.dumps(issues, indent=2, ensure_ascii=False) + "\n"


def _issue(
    diagnostic: Diagnostic, path: str, places: FilePlaces, fingerprint: str
) -> dict[str, Any]:
    place = places.of(diagnostic)
    begin, end = (place.span[0].line, place.span[1].line) if place.span is not None else (1, 1)
    return {
        "description": f"{diagnostic.code} {place.message}",
        "check_name": diagnostic.code,
        "fingerprint": fingerprint,
        "severity": SEVERITIES[diagnostic.severity],
        "location": {"path": path, "lines": {"begin": begin, "end": max(end, begin)}},
    }


def _fingerprint(key: tuple[str, str, str], occurrence: int) -> str:
    text = "\0".join([*key, str(occurrence)])
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()


def relative_path(path: str) -> str:
    """`path` relative to the current directory when it is under it, with `/` separators."""
    given = Path(path)
    if given.is_absolute() and given.is_relative_to(Path.cwd()):
        given = given.relative_to(Path.cwd())
    return given.as_posix()
