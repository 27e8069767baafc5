"""What did the user ask for, and how does the run end? The `tapelint` command (click), the
printing of results and the exit status.

- `main`: the click group and its commands (`check`, `clean`, `rule`, `rules`, `validate`,
  `server`); `tapelint.__main__.main` (the console script) installs the signal handlers, then
  calls `main`.
- `check`: a `check` request: run it, print it, choose the exit status.
- `clean`, `show`, `watch`, `progress`: `tapelint clean`, the `--show-*` listings,
  `--watch`, and the progress line on a terminal.
"""

from tapelint.cli.main import cli, main

__all__ = ["cli", "main"]
