"""flake8 plugin: tapelint's rules as flake8 checks (`flake8 --select TAP`).

A thin adapter: flake8 reads the file and hands over its lines; tapelint's own engine lints
them with every rule that is not in preview (flake8 has no way to opt in to preview rules),
and flake8 applies its own `select`, `ignore`, `per-file-ignores` and `# noqa`. Columns go to
flake8 0-based, which adds one when it prints, so both tools print the same position. Files
that do not parse are flake8's own E999 (flake8 runs no plugin on them, so a Colab `.py`
export that `tapelint check` reads as IPython is E999 there); TAP001 and TAP002
are tapelint's and do not occur here.

Each file's tapelint configuration applies as it does for `tapelint check` and the editor
(`tapelint.settings.resolution`: the closest `tapelint.toml` or `[tool.tapelint]`): its
`select`, `ignore`, `per-file-ignores` and `preview` decide which rules run, and flake8's
own options then filter what they find. A config that cannot be used is reported once on
standard error and the defaults apply, as in the editor. Without a config file the project
root is the current directory (where flake8 runs).

Imports are resolved as `tapelint check FILE` resolves them (decided: the same findings in
both tools): the modules a file's names lead to, inside the file's project, are analysed for
their summaries, once per flake8 process.

Registered under the entry point `TAP` in `flake8.extension`. It imports neither TensorFlow
nor flake8, and at registration (flake8 loads every plugin on each start, also for
`flake8 --version` and runs that select no TAP code) only this module: libcst and the rules
are imported by the first check.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import tapelint

if TYPE_CHECKING:
    from tapelint.run.per_file import Linters
    from tapelint.run.workspace import Project
    from tapelint.settings.config import Settings

# What flake8 calls standard input.
_STDIN_NAMES = ("stdin", "-")


@cache
def _settings(directory: Path) -> Settings:
    """The settings of the files in `directory`, without the rules only the command reports."""
    from tapelint.linter.registry import all_rules
    from tapelint.settings.config import ConfigError, Settings
    from tapelint.settings.resolution import ConfigSource

    tool_rules = [rule.code for rule in all_rules() if rule.engine_reported]
    try:
        settings = ConfigSource().settings_for(directory, Path.cwd().resolve())
    except ConfigError as error:
        print(f"tapelint: {error}; the defaults apply", file=sys.stderr)
        settings = Settings(root=Path.cwd().resolve())
    return settings.override(ignore=tool_rules)


@cache
def _linters(settings: Settings) -> Linters:
    from tapelint.run.per_file import Linters

    return Linters(settings)


@cache
def _project(settings: Settings) -> Project:
    from tapelint.run.workspace import Project

    return Project(settings)


class TapelintChecker:
    """flake8 calls it once per file with the file's name and lines."""

    name = "tapelint"
    version = tapelint.version()

    # flake8 tells plugin kinds apart by parameter names: a `tree` parameter makes this a
    # whole-file check. The tree itself is not used (tapelint parses with libcst).
    def __init__(self, tree: object, filename: str, lines: Sequence[str]) -> None:
        self.filename = filename
        self.lines = lines

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        from tapelint.project.modules import MAIN, ModuleName
        from tapelint.run.runner import check_in_project

        text = "".join(self.lines)
        stdin = self.filename in _STDIN_NAMES
        file = Path(os.path.abspath("-" if stdin else self.filename))
        settings = _settings(file.parent)
        project = _project(settings)
        linter = _linters(settings).for_file(file)
        module, path = ModuleName(MAIN), os.path.realpath(file)
        if not stdin:
            module = project.module_of(path, text.encode("utf-8", "surrogatepass"))
        diagnostics, _ = check_in_project(
            lambda context: linter.analyze_text(text, self.filename, context=context),
            path,
            module,
            project,
        )
        for diagnostic in diagnostics:
            message = f"{diagnostic.code} {diagnostic.message}"
            yield diagnostic.start.line, diagnostic.start.column - 1, message, type(self)
