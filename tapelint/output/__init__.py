"""Output formats, one module per format; each renders diagnostics (already sorted) to text.

For people: `concise` (one short line each, ruff's `concise`), `text` (one line each with
the whole message: flake8's form), `full` (the code excerpt and the advice, ruff's `full`),
`grouped` (by file, ruff's `grouped`). For programs: `json`, `sarif`, `github`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from tapelint.findings.diagnostics import Diagnostic
from tapelint.output import concise, full, github, grouped, json, sarif, text


@dataclass(frozen=True)
class Rendering:
    """What some formats need besides the diagnostics."""

    unsafe: bool = False  # unsafe fixes are enabled: `[*]` marks those findings too
    sources: Mapping[str, bytes] = field(default_factory=dict)  # standard input's bytes


FORMATS: dict[str, Callable[[Sequence[Diagnostic], Rendering], str]] = {
    "concise": lambda found, how: concise.render(found, unsafe=how.unsafe),
    "full": lambda found, how: full.render(found, unsafe=how.unsafe, sources=how.sources),
    "grouped": lambda found, how: grouped.render(found, unsafe=how.unsafe),
    "text": lambda found, _: text.render(found),
    "json": lambda found, _: json.render(found),
    "sarif": lambda found, how: sarif.render(found, how.sources),
    "github": lambda found, how: github.render(found, how.sources),
}

# The formats for people: a summary line follows them (on stderr).
HUMAN = frozenset({"concise", "full", "grouped", "text"})
