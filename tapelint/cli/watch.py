"""`check --watch`: check, then check again each time a source file or a config file changes.

Changes are seen with `watchfiles` (the operating system's file events, batched: a save
that writes several files triggers one check). What counts is a change to a `.py` or
`.ipynb` file, or to a `.toml` file (a pyproject.toml or the `--config` file: the settings
are read again for each check), under the paths checked; `.git`, `__pycache__` and the
like are ignored, and so is the result cache (its entries have no such suffix). Each check
prints as a plain `check` would, after a line on stderr saying why it runs (the changed
file's path as findings show it, relative to the current directory). On a terminal the
screen is cleared before each check, as ruff does, so what shows is the latest result only;
into a pipe or a file nothing is cleared. Ctrl-C stops watching at any moment (also in the
middle of a check), with exit status 0 and nothing more printed (watchfiles' own log line
about it is not let through);
an error in one check (a broken config file) is printed and the watching goes on.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from watchfiles import Change

WATCHED_SUFFIXES = (".py", ".ipynb", ".toml")


def watch(paths: Sequence[str], also: Sequence[Path], check: Callable[[], object]) -> int:
    """Run `check` now and after each batch of changes under `paths` (and to the files in
    `also`), until interrupted."""
    import watchfiles  # only a watching run pays for its import

    targets = sorted({os.path.abspath(p) for p in (*paths, *map(str, also)) if os.path.exists(p)})
    # Interrupts are raised, not logged: with raise_interrupt=False watchfiles prints its own
    # warning on Ctrl-C. Ctrl-C at any moment (waiting, or in a check) ends the watching.
    batches = watchfiles.watch(*targets, watch_filter=_SourceFilter(), raise_interrupt=True)
    try:
        click.clear()  # on a terminal only: click does nothing otherwise
        check()
        if not targets:
            click.echo("error: nothing to watch: none of the paths exists", err=True)
            return 2
        click.echo("Watching for file changes (Ctrl-C stops).", err=True)
        for changes in batches:
            changed = sorted({os.path.relpath(path) for _, path in changes})
            shown = changed[0] if len(changed) == 1 else f"{len(changed)} files"
            click.clear()
            click.echo(f"[{time.strftime('%H:%M:%S')}] {shown} changed: checking again.", err=True)
            check()
    except KeyboardInterrupt:
        pass
    return 0


class _SourceFilter:
    """watchfiles' default filter (no `.git`, `__pycache__`, editor swap files...), and
    only the files that can change a result."""

    def __init__(self) -> None:
        import watchfiles

        self._default = watchfiles.DefaultFilter()

    def __call__(self, change: Change, path: str) -> bool:
        return path.endswith(WATCHED_SUFFIXES) and self._default(change, path)
