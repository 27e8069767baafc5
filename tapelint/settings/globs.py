"""Path patterns for `exclude`, `extend-exclude` and `per-file-ignores`.

They use .gitignore syntax (one matcher for users to learn, and `pathspec` implements it):
a pattern without a slash matches a file or directory name at any depth (`build`,
`test_*.py`), one with a slash is anchored at the project root (`src/generated/`,
`tests/**/*.py`), a trailing slash matches directories only, and a path inside a matched
directory matches too. A leading `./` is read as anchored, as people write it in ruff
configs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathspec import GitIgnoreSpec

_GLOB_CHARACTERS = frozenset("*?[]!\\/")


class Globs:
    def __init__(self, patterns: Iterable[str]) -> None:
        self.patterns = tuple(patterns)
        normalized = ["/" + p[2:] if p.startswith("./") else p for p in self.patterns]
        # Plain names (`build`, `.venv`: every default exclude) match any path component; a
        # set lookup answers them without running pathspec's regexes for every walked path.
        # With a negation (`!keep`) the order of patterns matters, so pathspec decides all.
        negated = any(p.startswith("!") for p in normalized)
        plain = {p for p in normalized if not negated and not _GLOB_CHARACTERS & set(p)}
        self._names = frozenset(plain)
        rest = [p for p in normalized if p not in plain]
        self._spec = gitignore_spec(rest) if rest else None

    def match(self, relative: str, *, is_dir: bool = False) -> bool:
        """Whether the `/`-separated path `relative` (to the patterns' base) matches."""
        if self._names and not self._names.isdisjoint(relative.split("/")):
            return True
        return self._spec is not None and self._spec.match_file(
            relative + "/" if is_dir else relative
        )


def gitignore_spec(lines: Sequence[str]) -> GitIgnoreSpec:
    """`lines` in .gitignore syntax, compiled. `pathspec` is imported on first use: its
    import costs about 30 ms (a tenth of tapelint's start-up), which a run that meets no
    `.gitignore` and no glob pattern (the default excludes are plain names) never pays."""
    from pathspec import GitIgnoreSpec

    return GitIgnoreSpec.from_lines(lines)


def relative_posix(path: Path, base: Path) -> str | None:
    """`path` relative to `base` with `/` separators, or None when it is not under `base`."""
    return path.relative_to(base).as_posix() if path.is_relative_to(base) else None
