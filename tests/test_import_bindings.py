"""The imports of a module that tapelint does not analyse, read from its import statements
alone when every one starts a line: the same bindings as parsing the whole module."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

from tapelint.project.imports import import_summary, line_start_imports, summary_of
from tapelint.project.modules import ModuleName

PACKAGE = ModuleName("pkg.mod")
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def whole(text: str, module: ModuleName = PACKAGE):
    return summary_of(ast.parse(text), module)


def test_statements_at_line_starts_are_read_alone():
    text = (
        '"""Example:\n'
        "import not_a_binding\n"
        '"""\n'
        "import os.path\n"
        "from . import (\n"
        "    a,  # the first\n"
        "    b as c,\n"
        ")\n"
        "from .x import \\\n"
        "    y\n"
        "import q; import r\n"
        "def f():\n"
        "    return 'import this'  # import that\n"
    )
    assert line_start_imports(text) is not None
    found = import_summary(text, PACKAGE)
    assert found == whole(text)
    assert found.aliases == {
        "os": "os",
        "a": "pkg.a",
        "c": "pkg.b",
        "y": "pkg.x.y",
        "q": "q",
        "r": "r",
    }


@pytest.mark.parametrize(
    "text",
    [
        "import os\ndef f():\n    import sys\n",  # in a function: not a binding
        "import os\ntry:\n    import fast\nexcept ImportError:\n    fast = None\n",  # counts
        "x = 1; import os\n",  # after another statement on its line
        "from m import (a,  # (see b)\n    b)\n",  # a comment the statement pattern cuts
    ],
)
def test_other_shapes_parse_the_whole_module(text):
    assert line_start_imports(text) is None
    assert import_summary(text, PACKAGE) == whole(text)


def package_directory(name: str) -> Path:
    """Where an installed package is (without importing it: TensorFlow takes seconds)."""
    spec = importlib.util.find_spec(name)
    assert spec is not None and spec.origin is not None, f"{name} is not installed"
    return Path(spec.origin).parent


def modules() -> list[Path]:
    """Real modules: the fixtures, Keras' and a part of TensorFlow's own sources."""
    found = sorted(FIXTURES.rglob("*.py"))
    found += sorted(package_directory("keras").joinpath("src").rglob("*.py"))
    found += sorted(package_directory("tensorflow").joinpath("python", "ops").rglob("*.py"))
    return found


def test_real_modules_get_the_bindings_the_whole_module_gives():
    fast = 0
    paths = modules()
    for path in paths:
        text = path.read_text(encoding="utf-8")
        try:
            expected = whole(text)
        except SyntaxError:
            continue
        assert import_summary(text, PACKAGE) == expected, path
        fast += line_start_imports(text) is not None
    assert len(paths) > 1000
    assert fast > len(paths) / 4  # the fast path is taken, not only the fallback
