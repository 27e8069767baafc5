"""A progress display for long runs: files done / total, on stderr, only on a terminal.

It is click's progress bar (click is already a dependency), created once the number of files
is known and erased when the run ends, so the terminal keeps only the findings and the
summary. Output that is not a terminal (a pipe, a file, CI logs) never sees it.
"""

from __future__ import annotations

import sys
from types import TracebackType
from typing import Any, TextIO

import click

# Cursor up one line, then clear it: undoes the line the finished bar leaves behind.
_ERASE_PREVIOUS_LINE = "\033[1A\r\033[2K"


class ProgressDisplay:
    """Call it with (done, total) as files finish; use it as a context manager. The total
    may grow during the run (files that are checked a second time with the project index
    count twice)."""

    def __init__(self, stream: TextIO | None = None, *, enabled: bool = True) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled and _is_terminal(self.stream)
        self._bar: Any = None

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled or total < 2:
            return
        if self._bar is None:
            self._bar = click.progressbar(
                length=total, label="Checking", file=self.stream, show_pos=True, width=30
            )
            self._bar.__enter__()
        self._bar.length = total  # a run learns of second passes as it goes
        self._bar.update(done - self._bar.pos)

    def __enter__(self) -> ProgressDisplay:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._bar is not None:
            self._bar.__exit__(kind, error, traceback)
            self.stream.write(_ERASE_PREVIOUS_LINE)
            self.stream.flush()
            self._bar = None


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or closed
        return False
