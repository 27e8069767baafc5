"""flake8 plugin: tapelint's rules as flake8 checks (`flake8 --select TAP`).

A thin adapter: flake8 reads the file and hands over its lines; tapelint's own engine lints
them with every rule that is not in preview (flake8 has no way to opt in to preview rules),
and flake8 applies its own `select`, `ignore`, `per-file-ignores` and `# noqa`. Columns go to
flake8 0-based, which adds one when it prints, so both tools print the same position. Files
that do not parse are flake8's own E999 (flake8 runs no plugin on them, so a Colab `.py`
export that `tapelint check` reads as IPython is E999 there); TAP001 and TAP002
are tapelint's and do not occur here. tapelint's config file is not read: flake8's is.

Imports are resolved as `tapelint check FILE` resolves them (decided: the same findings in
both tools): the modules a file's names lead to, inside the project of the current
directory (where flake8 runs), are analysed for their summaries, once per flake8 process.

Registered under the entry point `TAP` in `flake8.extension`. It imports neither TensorFlow
nor flake8.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from functools import cache
from pathlib import Path

import tapelint
from tapelint.linter.engine import Linter
from tapelint.linter.registry import all_rules
from tapelint.project.modules import MAIN, ModuleName
from tapelint.run.runner import check_in_project
from tapelint.run.workspace import Project
from tapelint.settings.config import Settings
from tapelint.settings.policies.test_code import TEST_CODE_IGNORES

# What flake8 calls standard input.
_STDIN_NAMES = ("stdin", "-")


@cache
def _linter() -> Linter:
    """The default rules, quiet in tests kept in other files as `tapelint check` is by
    default (flake8's per-file-ignores match files, not a `TestWaveAct()` in a module)."""
    rules = [rule for rule in all_rules() if not rule.preview and not rule.engine_reported]
    return Linter(rules, quiet_in_tests=frozenset(TEST_CODE_IGNORES))


@cache
def _project() -> Project:
    """The project of the directory flake8 runs in (tapelint's config is not read)."""
    return Project(Settings(root=Path.cwd()))


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
        text = "".join(self.lines)
        project = _project()
        module, path = ModuleName(MAIN), os.path.realpath(self.filename)
        if self.filename not in _STDIN_NAMES:
            module = project.module_of(path, text.encode("utf-8", "surrogatepass"))
        diagnostics, _ = check_in_project(
            lambda context: _linter().analyze_text(text, self.filename, context=context),
            path,
            module,
            project,
        )
        for diagnostic in diagnostics:
            message = f"{diagnostic.code} {diagnostic.message}"
            yield diagnostic.start.line, diagnostic.start.column - 1, message, type(self)
