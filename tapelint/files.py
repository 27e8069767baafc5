"""Which files to check: walking the given paths, .gitignore and excludes; reading a file.

Rules of the walk:
- Directories are walked for `.py` and `.ipynb` files; directory symlinks are not followed
  (no loops, no checking a tree twice), file symlinks are.
- A walked path is skipped when it matches the exclude patterns (see `tapelint.globs`) or a
  `.gitignore`. Both are relative to the project root; `.gitignore` files are read in every
  directory from the root down, each relative to its own directory, the deepest match
  deciding as in git. For a path outside the project root, its own directory stands in for
  the root.
- A path named on the command line is checked even when excluded (pre-commit names files
  one by one), unless `force_exclude`. An excluded directory named explicitly is walked as
  if it were a project root of its own.
- Every file is reported once (by resolved path), in sorted order.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from pathspec import GitIgnoreSpec

from tapelint.globs import Globs


class SourceKind(Enum):
    PYTHON = "python"
    NOTEBOOK = "notebook"


_KINDS = {".py": SourceKind.PYTHON, ".ipynb": SourceKind.NOTEBOOK}


@dataclass(frozen=True, order=True)
class SourceFile:
    path: Path  # absolute, symlinks not resolved
    kind: SourceKind = field(compare=False)


@dataclass
class Discovery:
    files: list[SourceFile]
    missing: list[str]  # paths named on the command line that do not exist
    warnings: list[str]  # directories or .gitignore files that could not be read


def discover(
    paths: Sequence[str], *, root: Path, exclude: Sequence[str], force_exclude: bool = False
) -> Discovery:
    walker = _Walker(root.resolve(), Globs(exclude))
    found: dict[str, Path] = {}
    missing: list[str] = []
    for given in paths:
        path = Path(os.path.abspath(given))
        if not os.path.exists(path):
            missing.append(given)
            continue
        for file in walker.expand(path, force_exclude=force_exclude):
            found.setdefault(os.path.realpath(file), file)
    files = sorted(SourceFile(path, kind_of(path)) for path in found.values())
    return Discovery(files, missing, walker.warnings)


def is_excluded(path: Path, *, root: Path, exclude: Sequence[str]) -> bool:
    """Whether a walk from the project root would skip `path` (which need not exist)."""
    root = root.resolve()
    inside = path != root and path.is_relative_to(root)
    walker = _Walker(root, Globs(exclude))
    return walker._excluded_or_parents(path, False, root if inside else path.parent)


def kind_of(path: Path) -> SourceKind:
    """How to read a file; a file named explicitly with another suffix is Python source."""
    return _KINDS.get(path.suffix, SourceKind.PYTHON)


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
    def __init__(self, root: Path, exclude: Globs) -> None:
        self.root = root
        self.exclude = exclude
        self.warnings: list[str] = []
        self._gitignores: dict[Path, GitIgnoreSpec | None] = {}

    def expand(self, path: Path, *, force_exclude: bool) -> Iterator[Path]:
        """The files to check for one path named on the command line."""
        is_dir = os.path.isdir(path)
        inside = path != self.root and path.is_relative_to(self.root)
        excluded = path != self.root and self._excluded_or_parents(
            path, is_dir, self.root if inside else path.parent
        )
        if excluded and force_exclude:
            return
        if not is_dir:
            yield path
            return
        yield from self._walk(path, self.root if inside and not excluded else path)

    def _walk(self, top: Path, anchor: Path) -> Iterator[Path]:
        pending = [top]
        while pending:
            directory = pending.pop()
            try:
                entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
            except OSError as error:
                self.warnings.append(f"{directory}: cannot list directory: {error.strerror}")
                continue
            for entry in entries:
                path = directory / entry.name
                if entry.is_dir(follow_symlinks=False):
                    if not self._excluded(path, True, anchor):
                        pending.append(path)
                elif (
                    path.suffix in _KINDS
                    and not _is_directory_symlink(entry)
                    and not self._excluded(path, False, anchor)
                ):
                    yield path

    def _excluded_or_parents(self, path: Path, is_dir: bool, anchor: Path) -> bool:
        """Whether `path`, or a directory between `anchor` and it, is excluded."""
        if path == anchor:
            return False
        if self._excluded(path, is_dir, anchor):
            return True
        parent = path.parent
        while parent != anchor and parent != parent.parent:
            if self._excluded(parent, True, anchor):
                return True
            parent = parent.parent
        return False

    def _excluded(self, path: Path, is_dir: bool, anchor: Path) -> bool:
        relative = path.relative_to(anchor).as_posix()
        return self.exclude.match(relative, is_dir=is_dir) or self._gitignored(path, is_dir, anchor)

    def _gitignored(self, path: Path, is_dir: bool, anchor: Path) -> bool:
        directory = path.parent
        while True:
            spec = self._gitignore(directory)
            if spec is not None:
                relative = path.relative_to(directory).as_posix() + ("/" if is_dir else "")
                decision = spec.check_file(relative).include
                if decision is not None:
                    return decision
            if directory == anchor or directory == directory.parent:
                return False
            directory = directory.parent

    def _gitignore(self, directory: Path) -> GitIgnoreSpec | None:
        if directory not in self._gitignores:
            spec = None
            file = directory / ".gitignore"
            try:
                lines = file.read_text(encoding="utf-8", errors="replace").splitlines()
            except FileNotFoundError:
                pass
            except OSError as error:
                self.warnings.append(f"{file}: cannot read: {error.strerror}; not applied")
            else:
                spec = GitIgnoreSpec.from_lines(lines) if lines else None
            self._gitignores[directory] = spec
        return self._gitignores[directory]


def _is_directory_symlink(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_symlink() and entry.is_dir()
    except OSError:  # a symlink loop: not a directory we could walk anyway
        return False
