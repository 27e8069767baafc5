"""The semantic package's docstrings are its map, and its subpackages are layers.

The top docstring lists every subpackage in layer order; each subpackage's docstring names
every module in it, and only those. A module may import from its own subpackage and from the
subpackages listed before it, never from one listed after: facts flow one way.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import tapelint.semantic

PACKAGE = Path(tapelint.semantic.__file__).parent


def _listed(doc: str | None) -> list[str]:
    return re.findall(r"^- `(\w+)`:", doc or "", re.MULTILINE)


def _layers() -> list[str]:
    return _listed(tapelint.semantic.__doc__)


def test_the_package_docstring_lists_every_subpackage():
    subpackages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    assert set(_layers()) == subpackages
    assert not [p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"]


def test_every_module_has_its_line_in_its_subpackage_docstring():
    for layer in _layers():
        folder = PACKAGE / layer
        doc = ast.get_docstring(ast.parse((folder / "__init__.py").read_text()))
        modules = {p.stem for p in folder.glob("*.py") if p.stem != "__init__"}
        assert set(_listed(doc)) == modules, layer


def _imported_layers(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        for name in names:
            parts = name.split(".")
            if parts[:2] == ["tapelint", "semantic"] and len(parts) > 2:
                found.add(parts[2])
    return found


def test_no_module_imports_from_a_layer_below_it():
    layers = _layers()
    upward = []
    for rank, layer in enumerate(layers):
        for path in sorted((PACKAGE / layer).glob("*.py")):
            for other in _imported_layers(path):
                if other in layers and layers.index(other) > rank:
                    upward.append(f"{layer}/{path.name} imports from {other}")
    assert upward == []


def test_the_layer_check_sees_an_upward_import(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("from tapelint.semantic.summarising.function_summaries import x\n")
    assert _imported_layers(module) == {"summarising"}
