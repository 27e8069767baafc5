"""Colour for the formats for people (`--color auto|always|never`), with click's `style`.

Whether to colour a stream:

- `never`: no colour; `always`: colour, even into a pipe or a file;
- `auto` (the default): colour only when the stream is a terminal, unless `NO_COLOR` is set
  to anything but the empty string (no-color.org) or `TERM` is `dumb`; `FORCE_COLOR` set to
  anything but the empty string (force-color.org) or `CLICOLOR_FORCE` set to anything but
  `0` or the empty string (the CLICOLOR convention) colours a stream that is not a terminal.
  `NO_COLOR` wins over both: a user who turned colour off keeps it off. The command line's
  `--color always`/`never` wins over every variable.

What is coloured, as ruff does: the path (bold), the rule code (red for an error, yellow for
a warning, bold), the `[*]` mark of what the fixes can fix (cyan), the full format's
gutter and arrow (blue), its carets (the code's colour) and its `help:` label (cyan), and
the summary line. The formats for programs are never coloured.

click (already a dependency) writes the escape codes; `rich` would add width handling that
these formats do not need, for a larger import on every run.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TextIO

import click

from tapelint.findings.diagnostics import Severity

CHOICES = ("auto", "always", "never")


def wants_color(
    choice: str, stream: TextIO | None, environ: Mapping[str, str] | None = None
) -> bool:
    """Whether to colour what is written to `stream` (None: nothing to colour)."""
    if choice != "auto":
        return choice == "always"
    env = os.environ if environ is None else environ
    if env.get("NO_COLOR", "") or stream is None:
        return False
    if env.get("FORCE_COLOR", "") or env.get("CLICOLOR_FORCE", "0") not in ("", "0"):
        return True
    if env.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or closed
        return False


_CODE_COLOURS = {Severity.ERROR: "red", Severity.WARNING: "yellow"}


@dataclass(frozen=True)
class Style:
    """Wraps the parts of a line in colour, or returns them as they are (`enabled` False)."""

    enabled: bool = False

    def _paint(self, text: str, **how: Any) -> str:
        return click.style(text, **how) if self.enabled and text else text

    def path(self, text: str) -> str:
        return self._paint(text, bold=True)

    def code(self, text: str, severity: Severity) -> str:
        return self._paint(text, fg=_CODE_COLOURS[severity], bold=True)

    def mark(self, text: str) -> str:
        """The `[*]` of a finding the fixes can fix."""
        return self._paint(text, fg="cyan")

    def gutter(self, text: str) -> str:
        return self._paint(text, fg="blue", bold=True)

    def carets(self, text: str, severity: Severity) -> str:
        return self._paint(text, fg=_CODE_COLOURS[severity], bold=True)

    def label(self, text: str) -> str:
        """`help:`, `note:`, `fix:` in the full format."""
        return self._paint(text, fg="cyan", bold=True)

    def passed(self, text: str) -> str:
        return self._paint(text, fg="green", bold=True)

    def found(self, text: str) -> str:
        return self._paint(text, bold=True)


PLAIN = Style()
