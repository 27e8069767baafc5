"""Module names and import resolution: which module a file is, and which file a module is.

A file's module name (decisions):

- In a regular package (its directory has an `__init__.py`): the dotted path from the
  directory above the outermost package, found by walking up the `__init__.py`
  directories (`src/pkg/sub/mod.py` is `pkg.sub.mod`; `pkg/__init__.py` is `pkg`, a
  package). The walk may leave the project root: a repository whose root has an
  `__init__.py` is itself a package named after its directory (`seed_rl.common.utils`).
- Outside any regular package, a script: its stem (`train.py` is `train`, wherever it
  is), since running it puts its own directory first on `sys.path`. A script that uses a
  relative import (`from .utils import f`) can only run as part of a namespace package,
  so it is named by its path from the project's import root instead (`agents/dqn.py` is
  `agents.dqn`).
- Notebooks and an unnamed standard input are `__main__`: nothing imports them.

Which file a name is (`ModuleLayout.locate`): each dotted prefix of the name is tried as a
module file, the longest first, `a/b/__init__.py` before `a/b.py`, in the importing
file's import roots in order, the first found winning (as the first `sys.path` entry
that has it does). A file's import roots (`roots_of`):

- a script's (and a notebook's) own directory, then the project roots;
- for a module of a package: the directory above its outermost package, then the project
  roots, then its own directory (a package module run as a script sees its siblings);

where the project roots are the project root (the configuration's root, else the current
directory), its `src/` when there is one, and the directory above the root when the root
is itself a package. A directory without `__init__.py` on the way is a namespace package,
so `from agents.dqn import Agent` at the root finds `agents/dqn.py`.

What counts as the project: files under the project root that the run's excludes and
`.gitignore` files do not skip, and the files being checked. A name that leads elsewhere
(an installed package, a directory outside the root) is not resolved: what it does is
unknown, and unknown is never reported.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

MAIN = "__main__"

# `from .x import y` / `from . import y` at the start of a line (the relative imports that
# make a script part of a namespace package).
_RELATIVE_IMPORT = re.compile(rb"^[ \t]*from[ \t]+\.", re.MULTILINE)


@dataclass(frozen=True)
class ModuleName:
    name: str = MAIN
    is_package: bool = False

    @property
    def key(self) -> str:
        """The name, told apart from a module of the same name that is not a package."""
        return f"{self.name}/__init__" if self.is_package else self.name


def uses_relative_import(data: bytes) -> bool:
    return _RELATIVE_IMPORT.search(data) is not None


class ModuleLayout:
    """Module names of files and module files of names, for one project root.

    Paths are strings, absolute and with symlinks resolved (`os.path.realpath`); the
    filesystem is asked at most once per directory entry. `is_project_file(path)` says
    whether a file found outside the run belongs to the project (not excluded).
    """

    def __init__(self, root: str, is_project_file: Callable[[str], bool]) -> None:
        self.root = os.path.realpath(root)
        self._is_project_file = is_project_file
        self._run_files: set[str] = set()
        self._files: dict[str, bool] = {}
        self._located: dict[tuple[tuple[str, ...], str], str | None] = {}
        src = os.path.join(self.root, "src")
        self._project_roots = [self.root]
        if os.path.isdir(src):
            self._project_roots.append(src)
        if self._is_file(os.path.join(self.root, "__init__.py")):
            self._project_roots.append(os.path.dirname(self.root))

    def forget(self) -> None:
        """Files were created or deleted: look again."""
        self._files.clear()
        self._located.clear()

    def add_run_files(self, paths: list[str]) -> None:
        """The files being checked: always part of the project, wherever they are."""
        self._run_files.update(paths)
        self._located.clear()

    # ------------------------------------------------------------------ names of files
    def module_of(self, path: str, data: bytes | None = None) -> ModuleName:
        """The module a Python file is; `data` (its bytes) tells a namespace-package
        script by its relative imports."""
        directory, filename = os.path.split(path)
        is_package = filename == "__init__.py"
        parts = [] if is_package else [_stem(filename)]
        while self._is_file(os.path.join(directory, "__init__.py")):
            parts.insert(0, os.path.basename(directory))
            parent = os.path.dirname(directory)
            if parent == directory:
                break
            directory = parent
        if is_package or len(parts) > 1:
            return ModuleName(".".join(parts), is_package)
        if data is not None and uses_relative_import(data):
            for root in self._roots_containing(path):
                return ModuleName(_dotted(os.path.relpath(path, root)), False)
        return ModuleName(parts[0], False)

    def roots_of(self, path: str, module: ModuleName) -> tuple[str, ...]:
        """The directories the file's absolute imports are looked up in, in order."""
        directory = os.path.dirname(path)
        inside = self._under(path, self.root)
        project = self._project_roots if inside else []
        if module.name == MAIN or (not module.is_package and "." not in module.name):
            roots = [directory, *project]
        else:
            top = path  # up one directory per part of the name (and the `__init__.py`)
            for _ in range(module.name.count(".") + (2 if module.is_package else 1)):
                top = os.path.dirname(top)
            roots = [top, *project, directory]
        return tuple(dict.fromkeys(roots))

    # ------------------------------------------------------------------ files of names
    def locate(self, module: str, roots: tuple[str, ...]) -> str | None:
        """The file of module `module` (a dotted name) seen from `roots`, if it is one of
        the project's."""
        key = (roots, module)
        if key not in self._located:
            self._located[key] = self._find(module, roots)
        return self._located[key]

    def _find(self, module: str, roots: tuple[str, ...]) -> str | None:
        parts = module.split(".")
        if not all(part.isidentifier() for part in parts):
            return None
        relative = os.path.join(*parts)
        for root in roots:
            for candidate in (
                os.path.join(root, relative, "__init__.py"),
                os.path.join(root, relative + ".py"),
            ):
                if self._is_file(candidate):
                    return candidate if self._belongs(candidate) else None
        return None

    def _belongs(self, path: str) -> bool:
        if path in self._run_files:
            return True
        return self._under(path, self.root) and self._is_project_file(path)

    # ------------------------------------------------------------------ helpers
    def _roots_containing(self, path: str) -> Iterator[str]:
        """The project roots a file is under, `src/` and the root's parent first."""
        for root in reversed(self._project_roots):
            if self._under(path, root):
                yield root

    @staticmethod
    def _under(path: str, directory: str) -> bool:
        return path.startswith(directory.rstrip(os.sep) + os.sep)

    def _is_file(self, path: str) -> bool:
        found = self._files.get(path)
        if found is None:
            found = self._files[path] = os.path.isfile(path)
        return found


def _stem(filename: str) -> str:
    return filename[:-3] if filename.endswith(".py") else os.path.splitext(filename)[0]


def _dotted(relative: str) -> str:
    parts = relative.split(os.sep)
    parts[-1] = _stem(parts[-1])
    return ".".join(parts)
