"""Output formats, one module per format; each renders diagnostics (already sorted) to text.

For people: `concise` (one short line each, ruff's `concise`), `text` (one line each with
the whole message: flake8's form), `full` (the code excerpt and the advice, ruff's `full`),
`grouped` (by file, ruff's `grouped`); these may be coloured (`style`). For programs:
`json`, `json-lines`, `sarif`, and for CI services `github`, `gitlab`, `azure`, `junit`,
`pylint`, `rdjson` (reviewdog); these never are.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from tapelint.findings.diagnostics import Diagnostic
from tapelint.output import (
    azure,
    concise,
    full,
    github,
    gitlab,
    grouped,
    json,
    junit,
    pylint,
    rdjson,
    sarif,
    text,
)
from tapelint.output.style import Style


@dataclass(frozen=True)
class Rendering:
    """What some formats need besides the diagnostics."""

    unsafe: bool = False  # unsafe fixes are enabled: `[*]` marks those findings too
    sources: Mapping[str, bytes] = field(default_factory=dict)  # standard input's bytes
    color: bool = False  # colour the formats for people (`tapelint.output.style`)

    @property
    def style(self) -> Style:
        return Style(self.color)


FORMATS: dict[str, Callable[[Sequence[Diagnostic], Rendering], str]] = {
    "concise": lambda found, how: concise.render(found, unsafe=how.unsafe, style=how.style),
    "full": lambda found, how: full.render(
        found, unsafe=how.unsafe, sources=how.sources, style=how.style
    ),
    "grouped": lambda found, how: grouped.render(found, unsafe=how.unsafe, style=how.style),
    "text": lambda found, how: text.render(found, style=how.style),
    "json": lambda found, _: json.render(found),
    "json-lines": lambda found, _: json.render_lines(found),
    "sarif": lambda found, how: sarif.render(found, how.sources),
    "github": lambda found, how: github.render(found, how.sources),
    "gitlab": lambda found, how: gitlab.render(found, how.sources),
    "azure": lambda found, how: azure.render(found, how.sources),
    "junit": lambda found, _: junit.render(found),
    "pylint": lambda found, how: pylint.render(found, how.sources),
    "rdjson": lambda found, how: rdjson.render(found, how.sources),
}

# The formats for people: a summary line follows them (on stderr), and they may be coloured.
HUMAN = frozenset({"concise", "full", "grouped", "text"})
