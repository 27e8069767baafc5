"""Output formats, one module per format; each renders diagnostics (already sorted) to text.

For people: `concise` (one short line each, ruff's `concise`), `text` (one line each with
the whole message: flake8's form), `full` (the code excerpt and the advice, ruff's `full`),
`grouped` (by file, ruff's `grouped`); these may be coloured (`style`). For programs:
`json`, `json-lines`, `sarif`, and for CI services `github`, `gitlab`, `azure`, `junit`,
`pylint`, `rdjson` (reviewdog); these never are.

A format's module is imported when the format is first used (`FORMATS[name]`), not with
this package: the command line names the formats (`FORMAT_NAMES`) on every start, and
`full` alone would bring libcst and the rules with it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tapelint.output.style import Style

if TYPE_CHECKING:
    from tapelint.findings.diagnostics import Diagnostic


@dataclass(frozen=True)
class Rendering:
    """What some formats need besides the diagnostics."""

    unsafe: bool = False  # unsafe fixes are enabled: `[*]` marks those findings too
    sources: Mapping[str, bytes] = field(default_factory=dict)  # standard input's bytes
    color: bool = False  # colour the formats for people (`tapelint.output.style`)

    @property
    def style(self) -> Style:
        return Style(self.color)


Renderer = Callable[[Sequence["Diagnostic"], Rendering], str]

# Each format's module (in this package), and how it is called with a `Rendering`.
_RENDERERS: dict[str, tuple[str, Callable[..., Renderer]]] = {
    "concise": (
        "concise",
        lambda m: lambda found, how: m.render(found, unsafe=how.unsafe, style=how.style),
    ),
    "full": (
        "full",
        lambda m: (
            lambda found, how: m.render(
                found, unsafe=how.unsafe, sources=how.sources, style=how.style
            )
        ),
    ),
    "grouped": (
        "grouped",
        lambda m: lambda found, how: m.render(found, unsafe=how.unsafe, style=how.style),
    ),
    "text": ("text", lambda m: lambda found, how: m.render(found, style=how.style)),
    "json": ("json", lambda m: lambda found, _: m.render(found)),
    "json-lines": ("json", lambda m: lambda found, _: m.render_lines(found)),
    "sarif": ("sarif", lambda m: lambda found, how: m.render(found, how.sources)),
    "github": ("github", lambda m: lambda found, how: m.render(found, how.sources)),
    "gitlab": ("gitlab", lambda m: lambda found, how: m.render(found, how.sources)),
    "azure": ("azure", lambda m: lambda found, how: m.render(found, how.sources)),
    "junit": ("junit", lambda m: lambda found, _: m.render(found)),
    "pylint": ("pylint", lambda m: lambda found, how: m.render(found, how.sources)),
    "rdjson": ("rdjson", lambda m: lambda found, how: m.render(found, how.sources)),
}

FORMAT_NAMES: tuple[str, ...] = tuple(_RENDERERS)


class _Formats(Mapping[str, Renderer]):
    """Format name -> renderer, importing the format's module on first lookup."""

    def __getitem__(self, name: str) -> Renderer:
        module, call = _RENDERERS[name]
        return call(importlib.import_module(f"{__name__}.{module}"))

    def __iter__(self) -> Iterator[str]:
        return iter(FORMAT_NAMES)

    def __len__(self) -> int:
        return len(FORMAT_NAMES)


FORMATS: Mapping[str, Renderer] = _Formats()

# The formats for people: a summary line follows them (on stderr), and they may be coloured.
HUMAN = frozenset({"concise", "full", "grouped", "text"})
