"""The lines the probe watches for exceptions: every line of every diagnostic found before
the run, in the files the program will most likely run.

Those files are the script (and, for a command, the `.py` files among its arguments), the
files named with `--paths`, and the modules they import from their own directory trees,
found by reading their `import` statements (transitively, without running anything). A
module the program reaches some other way (a dynamic import, a package installed
elsewhere) still gets verdicts after the run, but an exception it catches itself is not
seen; naming it with `--paths` puts it under watch.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterable, Sequence
from pathlib import Path

from tapelint.findings.diagnostics import Diagnostic

_MAX_MODULES = 200  # a script importing a whole source tree: watch what it names first


def local_modules(paths: Sequence[str]) -> list[str]:
    """The `.py` files under each file's own directory that it imports, transitively, in
    the order found (the given files excluded)."""
    given = [Path(p).resolve() for p in paths if p.endswith(".py") and Path(p).is_file()]
    seen = set(given)
    found: list[Path] = []
    queue = [(path, path.parent) for path in given]
    while queue and len(found) < _MAX_MODULES:
        path, root = queue.pop(0)
        for module in _imported(path, root):
            if module not in seen:
                seen.add(module)
                found.append(module)
                queue.append((module, root))
    return [str(path) for path in found]


def _imported(path: Path, root: Path) -> Iterable[Path]:
    try:
        tree = ast.parse(path.read_bytes())
    except (OSError, SyntaxError, ValueError):
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield from _module_files(root, alias.name.split("."))
        elif isinstance(node, ast.ImportFrom):
            base = root if node.level == 0 else _parent(path, node.level)
            parts = node.module.split(".") if node.module else []
            yield from _module_files(base, parts)
            for alias in node.names:  # `from package import module`
                yield from _module_files(base, [*parts, alias.name])


def _parent(path: Path, level: int) -> Path:
    folder = path.parent
    for _ in range(level - 1):
        folder = folder.parent
    return folder


def _module_files(base: Path, parts: list[str]) -> Iterable[Path]:
    """The files executed by importing `parts` from `base`: each package's `__init__.py`
    on the way and the module itself."""
    folder = base
    for index, part in enumerate(parts):
        if not part.isidentifier():
            return
        module = folder / f"{part}.py"
        package = folder / part / "__init__.py"
        if module.is_file() and index == len(parts) - 1:
            yield module.resolve()
            return
        if not package.is_file():
            return
        yield package.resolve()
        folder = folder / part


def write_sites(diagnostics: Iterable[Diagnostic], cwd: Path, destination: Path) -> None:
    """`{resolved path: [[first, last], ...]}` for the probe (`probe/raises.py`)."""
    sites: dict[str, list[list[int]]] = {}
    for diagnostic in diagnostics:
        if diagnostic.cell is not None:  # a notebook cell is not a file Python runs
            continue
        path = str((cwd / diagnostic.path).resolve())
        last = max(diagnostic.start.line, diagnostic.end.line)
        sites.setdefault(path, []).append([diagnostic.start.line, last])
    destination.write_text(json.dumps(sites), encoding="utf-8")
