"""flake8 plugin: tapelint's rules as flake8 checks (`flake8 --select TAP`).

A thin adapter: flake8 reads the file and hands over its lines; tapelint's own engine lints
them with every rule that is not in preview (flake8 has no way to opt in to preview rules),
and flake8 applies its own `select`, `ignore`, `per-file-ignores` and `# noqa`. Columns go to
flake8 0-based, which adds one when it prints, so both tools print the same position. Files
that do not parse are flake8's own E999 (flake8 runs no plugin on them); TAP001 and TAP002
are tapelint's and do not occur here. tapelint's config file is not read: flake8's is.

Registered under the entry point `TAP` in `flake8.extension`. It imports neither TensorFlow
nor flake8.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import cache
from importlib import metadata

from tapelint.engine import Linter
from tapelint.registry import all_rules


@cache
def _linter() -> Linter:
    return Linter([rule for rule in all_rules() if not rule.preview and not rule.engine_reported])


def _version() -> str:
    try:
        return metadata.version("tapelint")
    except metadata.PackageNotFoundError:  # imported from a source checkout
        return "0+unknown"


class TapelintChecker:
    """flake8 calls it once per file with the file's name and lines."""

    name = "tapelint"
    version = _version()

    # flake8 tells plugin kinds apart by parameter names: a `tree` parameter makes this a
    # whole-file check. The tree itself is not used (tapelint parses with libcst).
    def __init__(self, tree: object, filename: str, lines: Sequence[str]) -> None:
        self.filename = filename
        self.lines = lines

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        text = "".join(self.lines)
        for diagnostic in _linter().check_text(text, self.filename):
            message = f"{diagnostic.code} {diagnostic.message}"
            yield diagnostic.start.line, diagnostic.start.column - 1, message, type(self)
