"""`child_nodes` gives exactly libcst's `children`: the same nodes, in the same order."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import libcst as cst
import pytest

from tapelint.semantic.file_model.children import child_nodes

ROOT = Path(__file__).resolve().parents[2]
# Large standard-library modules: nearly every kind of statement and expression, decorators,
# star imports, f-strings, match statements, async code.
STDLIB = [inspect, ast, pytest, cst]


def _sources() -> list[Path]:
    fixtures = [p for p in sorted((ROOT / "fixtures").rglob("*.py")) if _parses(p)]
    library = [Path(m.__file__) for m in STDLIB]
    return fixtures + library + [Path(inspect.getfile(cst._nodes.statement))]


def _parses(path: Path) -> bool:
    try:
        ast.parse(path.read_bytes())
    except SyntaxError:
        return False
    return True


def _mismatches(module: cst.Module) -> list[str]:
    found = []
    pending: list[cst.CSTNode] = [module]
    while pending:
        node = pending.pop()
        expected = node.children
        got = child_nodes(node)
        if len(got) != len(expected) or any(a is not b for a, b in zip(got, expected, strict=True)):
            found.append(type(node).__name__)
        pending.extend(expected)
    return found


def test_child_nodes_equal_libcsts_children_on_every_node():
    checked = 0
    for path in _sources():
        module = cst.parse_module(path.read_bytes())
        assert _mismatches(module) == [], path
        checked += 1
    assert checked > 100


def test_every_kind_of_import_and_match():
    source = (
        "from . import (a as b, c)\nfrom .x.y import *\nimport a.b as c, d\n"
        "match p:\n    case [1, *rest] | {'k': v, **kw} if v:\n        pass\n"
        "    case Point(x=0, y=_) as q:\n        pass\n"
        "async def f[T](x: T, /, *a, k=1, **kw) -> T:\n"
        "    async with a as (b, c), d: await x\n    return [y async for y in z if y]\n"
        "x = f'{a!r:>{w}}' 'b' r'c'\ntype A = list[int]\n"
    )
    assert _mismatches(cst.parse_module(source)) == []


def test_no_module_asks_libcsts_children():
    """libcst's `children` rebuilds the node; tapelint's code reads `child_nodes` instead
    (a new `node.children` would bring back the cost on every node it walks)."""
    asking = []
    for folder in ("tapelint", "rules"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Attribute) and node.attr == "children":
                    asking.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert asking == []
