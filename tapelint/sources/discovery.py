"""Which files to check: walking the given paths, .gitignore and excludes; reading a file.

Rules of the walk:
- Directories are walked for `.py` and `.ipynb` files; directory symlinks are not followed
  (no loops, no checking a tree twice), file symlinks are.
- A walked path is skipped when it matches the exclude patterns (see `tapelint.settings.globs`) or a
  `.gitignore`. Both are relative to the project root; `.gitignore` files are read in every
  directory from the root down, each relative to its own directory, the deepest match
  deciding as in git. For a path outside the project root, its own directory stands in for
  the root.
- A copy of TensorFlow's or Keras's own source tree below the project root is skipped like
  an excluded directory (`tapelint.settings.policies.vendored_frameworks`): a project that
  carries one (a TinyML book's
  examples ship inside a TensorFlow checkout) did not write it, and its tests exercise
  gradient edge cases on purpose. The framework's own repository, whose package sits
  directly in the root, is checked as any project. `skip-vendored-frameworks = false`
  checks such a copy.
- An older copy of a file of the project (`training_BACKUP.py` beside `training.py`,
  `archive/models.py` under a package with its own `models.py`) is skipped too
  (`tapelint.settings.policies.stale_copies`): nothing runs it, and its findings repeat the
  live file's.
  `skip-older-copies = false` checks them.
- Those two are skips by policy, not by the user's excludes: each is recorded with its
  reason (`Discovery.skipped`), so that the summary counts them and `--show-files` names them.
- A path named on the command line is checked even when excluded (pre-commit names files
  one by one), unless `force_exclude`. An excluded directory named explicitly is walked as
  if it were a project root of its own.
- Every file is reported once (by resolved path), in sorted order.
- A file that cannot be read is a TAP002 finding, whether it was found by walking or named
  on the command line (even in a directory that cannot be searched); the other paths are
  checked as usual. Only a named path that does not exist is an error.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING

from tapelint.settings.globs import Globs, gitignore_spec
from tapelint.settings.policies.stale_copies import copied_file
from tapelint.settings.policies.vendored_frameworks import vendored_framework

if TYPE_CHECKING:
    from pathspec import GitIgnoreSpec

    from tapelint.settings.config import Settings


class SourceKind(Enum):
    PYTHON = "python"
    NOTEBOOK = "notebook"


_KINDS = {".py": SourceKind.PYTHON, ".ipynb": SourceKind.NOTEBOOK}


@dataclass(frozen=True, order=True)
class SourceFile:
    path: Path  # absolute, symlinks not resolved
    kind: SourceKind = field(compare=False)
    real: str = field(default="", compare=False)  # the path with symlinks resolved


@dataclass(frozen=True)
class SkipPolicies:
    """Which skips by policy a walk makes (the settings `skip-older-copies` and
    `skip-vendored-frameworks`)."""

    older_copies: bool = True
    vendored_frameworks: bool = True


def skip_policies(settings: Settings) -> SkipPolicies:
    return SkipPolicies(settings.skip_older_copies, settings.skip_vendored_frameworks)


@dataclass(frozen=True)
class Skipped:
    path: str  # as walked (absolute)
    reason: str  # why, in words: "an older copy of train.py"


@dataclass
class Discovery:
    files: list[SourceFile]
    missing: list[str]  # paths named on the command line that do not exist
    warnings: list[str]  # directories or .gitignore files that could not be read
    skipped: list[Skipped] = field(default_factory=list)  # by policy, in walk order


def discover(
    paths: Sequence[str],
    *,
    root: Path,
    exclude: Sequence[str],
    force_exclude: bool = False,
    skips: SkipPolicies = SkipPolicies(),
) -> Discovery:
    walker = _Walker(os.fspath(root.resolve()), Globs(exclude), skips)
    found: dict[str, str] = {}  # resolved path -> the path it was first found by
    missing: list[str] = []
    for given in paths:
        path = os.path.abspath(given)
        try:
            os.stat(path)
        except PermissionError:  # in a directory that cannot be searched: its TAP002 says so
            found.setdefault(path, path)
            continue
        except (OSError, ValueError):  # absent, a dangling link, a NUL in the name
            missing.append(given)
            continue
        for real, file in walker.expand(path, force_exclude=force_exclude):
            found.setdefault(real, file)
    # The order of Path objects (component by component), without building them to sort.
    ordered = sorted(found.items(), key=lambda item: item[1].split(os.sep))
    files = [SourceFile(Path(path), kind_of(path), real) for real, path in ordered]
    skipped = [skip for skip in walker.skipped if os.path.realpath(skip.path) not in found]
    return Discovery(files, missing, walker.warnings, skipped)


def is_excluded(path: Path, *, root: Path, exclude: Sequence[str]) -> bool:
    """Whether a walk from the project root would skip `path` (which need not exist)."""
    real_root = os.fspath(root.resolve())
    target = os.fspath(path)
    inside = target != real_root and _is_under(target, real_root)
    walker = _Walker(real_root, Globs(exclude))
    return walker._excluded_or_parents(
        target, False, real_root if inside else os.path.dirname(target)
    )


def kind_of(path: str | os.PathLike[str]) -> SourceKind:
    """How to read a file; a file named explicitly with another suffix is Python source."""
    return _KINDS.get(_suffix(os.path.basename(path)), SourceKind.PYTHON)


def _suffix(name: str) -> str:
    """`Path(name).suffix`, on a string."""
    dot = name.rfind(".")
    return name[dot:] if 0 < dot < len(name) - 1 else ""


def read_source(path: Path) -> bytes:
    """The file's bytes; OSError with a readable `strerror` when it cannot be read.

    Opened non-blocking and checked after opening, so a FIFO or device named `*.py`
    is reported instead of hanging the run.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as file:
        mode = os.fstat(file.fileno()).st_mode
        if not stat.S_ISREG(mode):
            raise OSError(0, f"not a regular file ({_file_type(mode)})", str(path))
        return file.read()


def _file_type(mode: int) -> str:
    kinds = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"))
    return next((name for test, name in kinds if test(mode)), "a device")


class _Walker:
    """Walks with `os.scandir` and plain strings, carrying each directory's applicable
    `.gitignore` specs down to its children instead of looking them up again per path."""

    def __init__(self, root: str, exclude: Globs, skips: SkipPolicies = SkipPolicies()) -> None:
        self.root = root
        self.exclude = exclude
        self.skips = skips
        self.warnings: list[str] = []
        self.skipped: list[Skipped] = []
        self._gitignores: dict[str, GitIgnoreSpec | None] = {}

    def expand(self, path: str, *, force_exclude: bool) -> Iterator[tuple[str, str]]:
        """(resolved path, path) of the files to check for one path named on the command
        line."""
        is_dir = os.path.isdir(path)
        inside = path != self.root and _is_under(path, self.root)
        excluded = path != self.root and self._excluded_or_parents(
            path, is_dir, self.root if inside else os.path.dirname(path)
        )
        if excluded and force_exclude:
            return
        if not is_dir:
            yield os.path.realpath(path), path
            return
        yield from self._walk(path, self.root if inside and not excluded else path)

    def _walk(self, top: str, anchor: str) -> Iterator[tuple[str, str]]:
        # Specs that apply below `top`: those of the directories from `anchor` down to its
        # parent, deepest last, each with the length of its path prefix to cut (relative to
        # `anchor`, as the exclude patterns are).
        above: list[tuple[int, GitIgnoreSpec]] = []
        if top != anchor:
            directory = os.path.dirname(top)
            while True:
                spec = self._gitignore(directory)
                if spec is not None:
                    above.append((_cut(_relative(directory, anchor)), spec))
                if directory == anchor or directory == os.path.dirname(directory):
                    break
                directory = os.path.dirname(directory)
            above.reverse()
        # (directory, its resolved path, its path relative to anchor, the parent's specs)
        pending = [(top, os.path.realpath(top), _relative(top, anchor), tuple(above))]
        while pending:
            directory, real, relative, inherited = pending.pop()
            try:
                with os.scandir(directory) as scan:
                    entries = sorted(scan, key=lambda entry: entry.name)
            except OSError as error:
                self.warnings.append(f"{directory}: cannot list directory: {error.strerror}")
                continue
            specs: tuple[tuple[int, GitIgnoreSpec], ...] | None = None
            for entry in entries:
                name = entry.name
                is_dir = entry.is_dir(follow_symlinks=False)
                if not is_dir and (_suffix(name) not in _KINDS or _is_directory_symlink(entry)):
                    continue
                if specs is None:  # read this directory's .gitignore once something needs it
                    specs = inherited
                    if any(e.name == ".gitignore" for e in entries):
                        spec = self._gitignore(directory)
                        if spec is not None:
                            specs = (*inherited, (_cut(relative), spec))
                path = os.path.join(directory, name)
                entry_relative = f"{relative}/{name}" if relative else name
                if self._excluded_relative(entry_relative, is_dir, specs):
                    continue
                reason = self._skipped_by_policy(path, entry_relative, is_dir)
                if reason is not None:
                    self.skipped.append(Skipped(path, reason))
                    continue
                if is_dir:
                    pending.append((path, os.path.join(real, name), entry_relative, specs))
                else:
                    resolved = os.path.realpath(path) if entry.is_symlink() else None
                    yield resolved or os.path.join(real, name), path

    def _skipped_by_policy(self, path: str, relative: str, is_dir: bool) -> str | None:
        """Why a walked path is skipped by a skip policy, or None when it is not."""
        if is_dir:
            if self.skips.vendored_frameworks and "/" in relative and vendored_framework(path):
                return f"a copy of {os.path.basename(path)}'s own source tree"
            return None
        if self.skips.older_copies:
            original = copied_file(path)
            if original is not None:
                shown = (
                    _relative(original, self.root) if _is_under(original, self.root) else original
                )
                return f"an older copy of {shown}"
        return None

    def _excluded_relative(
        self, relative: str, is_dir: bool, specs: tuple[tuple[int, GitIgnoreSpec], ...]
    ) -> bool:
        """Whether a walked path (relative to the walk's anchor) is excluded or ignored."""
        if self.exclude.match(relative, is_dir=is_dir):
            return True
        suffix = "/" if is_dir else ""
        for cut, spec in reversed(specs):  # the deepest .gitignore decides
            decision = spec.check_file(relative[cut:] + suffix).include
            if decision is not None:
                return decision
        return False

    def _excluded_or_parents(self, path: str, is_dir: bool, anchor: str) -> bool:
        """Whether `path`, or a directory between `anchor` and it, is excluded."""
        if path == anchor:
            return False
        if self._excluded(path, is_dir, anchor):
            return True
        parent = os.path.dirname(path)
        while parent != anchor and parent != os.path.dirname(parent):
            if self._excluded(parent, True, anchor):
                return True
            parent = os.path.dirname(parent)
        return False

    def _excluded(self, path: str, is_dir: bool, anchor: str) -> bool:
        """`_excluded_relative` for a path named on the command line (or its parents)."""
        specs = []
        directory = os.path.dirname(path)
        while True:
            spec = self._gitignore(directory)
            if spec is not None:
                specs.append((_cut(_relative(directory, anchor)), spec))
            if directory == anchor or directory == os.path.dirname(directory):
                break
            directory = os.path.dirname(directory)
        specs.reverse()
        return self._excluded_relative(_relative(path, anchor), is_dir, tuple(specs))

    def _gitignore(self, directory: str) -> GitIgnoreSpec | None:
        if directory not in self._gitignores:
            spec = None
            file = os.path.join(directory, ".gitignore")
            try:
                with open(file, encoding="utf-8", errors="replace") as handle:
                    lines = handle.read().splitlines()
            except FileNotFoundError:
                pass
            except OSError as error:
                self.warnings.append(f"{file}: cannot read: {error.strerror}; not applied")
            else:
                spec = gitignore_spec(lines) if lines else None
            self._gitignores[directory] = spec
        return self._gitignores[directory]


def _is_under(path: str, directory: str) -> bool:
    return path.startswith(directory if directory.endswith(os.sep) else directory + os.sep)


def _relative(path: str, base: str) -> str:
    """`path` relative to `base` (which contains it), `/`-separated; "" for `base` itself."""
    if path == base:
        return ""
    relative = path[len(base) if base.endswith(os.sep) else len(base) + 1 :]
    return relative.replace(os.sep, "/") if os.sep != "/" else relative


def _cut(relative_directory: str) -> int:
    """How much of a path relative to the anchor to cut to make it relative to this
    directory (itself given relative to the anchor)."""
    return len(relative_directory) + 1 if relative_directory else 0


def _is_directory_symlink(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_symlink() and entry.is_dir()
    except OSError:  # a symlink loop: not a directory we could walk anyway
        return False
