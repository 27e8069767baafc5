"""Property-based robustness (issue 20), bounded in examples and time: generated source
text, garbled text, package layouts and malformed notebook JSON never make an internal
error, and a layout's findings are the same with `--jobs 1`, in a pool and from a warm
cache."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import hypothesmith
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tapelint.linter.engine import Linter
from tapelint.linter.registry import all_rules
from tapelint.run import parallel
from tapelint.run.runner import Options, run, run_stdin
from tapelint.settings.config import Settings
from tests.cli_helpers import LOSS_OUTSIDE, UNFILTERED

# No example database: nothing written into the repository; each run draws anew.
BOUNDED = settings(
    max_examples=40,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
LINTER = Linter([rule for rule in all_rules()])
# Text that makes the engine analyse the rest (a trigger in code), before and after it.
TRIGGERS = st.sampled_from(
    [
        "import tensorflow as tf\nwith tf.GradientTape() as tape:\n    pass\n",
        "opt.apply_gradients(zip(g, v))\n",
        "@tf.function\ndef step(x):\n    return x\n",
        "",
    ]
)


def _no_internal_error(text: str) -> None:
    """The engine's whole path on `text`: a result, never an exception."""
    analysis = LINTER.analyze_text(text, "generated.py")
    assert all(d.start.line >= 1 and d.start.column >= 1 for d in analysis.diagnostics)


@BOUNDED
@given(source=hypothesmith.from_grammar(), before=TRIGGERS, after=TRIGGERS)
def test_generated_python_never_makes_an_internal_error(source, before, after):
    _no_internal_error(before + source + "\n" + after)


@BOUNDED
@given(
    garbage=st.text(
        alphabet=st.sampled_from(list("()[]{}:.,=+*@\\'\"#\n\r\t xtapeGradientTf1\x00\x0c")),
        max_size=300,
    ),
    before=TRIGGERS,
    line_end=st.sampled_from(["\n", "\r\n", "\r"]),
)
def test_garbled_text_never_makes_an_internal_error(garbage, before, line_end):
    _no_internal_error((before + garbage).replace("\n", line_end))


# ---------------------------------------------------------------------- layouts
MODULES = ["pkg", "pkg.a", "pkg.b", "pkg.sub", "pkg.sub.c", "top"]
# Each line a module may hold: star imports and re-exports of modules that exist or not.
IMPORT_LINES = st.sampled_from(
    [
        "from . import *\n",
        "from .a import *\n",
        "from .b import *\n",
        "from ._native import *\n",
        "from .sub import *\n",
        "from .a import helper\n",
        "from .b import helper as grads\n",
        "from pkg import helper\n",
        "from pkg.sub import *\n",
        "from pkg.sub.c import grads\n",
        "import pkg.a as a\n",
        "from top import *\n",
        "from missing.module import helper\n",
    ]
)
BODIES = st.sampled_from(
    [
        "",
        "def helper(model, x):\n    return model(x)\n",
        "def grads(model, x):\n    with tf.GradientTape() as tape:\n"
        "        loss = model(x)\n    return tape.gradient(loss, model.weights)\n",
        LOSS_OUTSIDE,
        UNFILTERED,
    ]
)
STEP = (
    "import tensorflow as tf\nfrom pkg import grads, helper\n\n\ndef step(model, opt, x):\n"
    "    g = grads(model, helper(model, x))\n"
    "    opt.apply_gradients(zip(g, model.trainable_variables))\n"
)


def _path_of(module: str) -> str:
    parts = module.split(".")
    if module in ("pkg", "pkg.sub"):
        return os.path.join(*parts, "__init__.py")
    return os.path.join(*parts) + ".py"


@st.composite
def layouts(draw) -> dict[str, str]:
    files = {}
    for module in draw(st.sets(st.sampled_from(MODULES), min_size=1)):
        lines = draw(st.lists(IMPORT_LINES, max_size=4))
        body = draw(BODIES)
        files[_path_of(module)] = "import tensorflow as tf\n" + "".join(lines) + body
    files["train.py"] = STEP
    files["loose.py"] = LOSS_OUTSIDE  # found in every layout
    return files


def _check(root: Path, **options) -> tuple[list, list[str]]:
    report = run(["."], Settings(root=root), Options(**options))
    found = [(d.path, d.start.line, d.start.column, d.code, d.message) for d in report.diagnostics]
    return found, report.errors


# The fixture only lowers the pool's threshold: the same for every example.
@settings(
    max_examples=15,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(files=layouts())
def test_a_package_layout_checks_the_same_serially_in_a_pool_and_from_the_cache(
    files, monkeypatch_pool
):
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        for relative, text in files.items():
            (root / relative).parent.mkdir(parents=True, exist_ok=True)
            (root / relative).write_text(text)
        cwd = os.getcwd()
        os.chdir(root)
        try:
            serial, errors = _check(root, jobs=1)
            assert errors == []
            assert ("loose.py", 8, 12, "TAP101") in [found[:4] for found in serial]
            assert _check(root, jobs=2) == (serial, [])
            cache = root / ".tapelint_cache"
            assert _check(root, jobs=1, cache_dir=cache) == (serial, [])  # cold
            assert _check(root, jobs=1, cache_dir=cache) == (serial, [])  # warm
        finally:
            os.chdir(cwd)


@pytest.fixture
def monkeypatch_pool(monkeypatch):
    """Every pass of a parallel run in a pool, however small the files."""
    monkeypatch.setattr(parallel, "POOL_MIN_BYTES", 0)


# ---------------------------------------------------------------------- notebooks
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=20,
)
CELL_SOURCE = st.sampled_from(
    ["import tensorflow as tf\n", LOSS_OUTSIDE, "%%bash\nls\n", "!pip install x\n", "def f(:\n"]
)


@st.composite
def notebooks(draw) -> bytes:
    """Notebook JSON, valid or not in any part: a cell without source, a source that is a
    number, cells that are not objects, a top level that is not an object..."""
    cells = []
    for _ in range(draw(st.integers(0, 4))):
        cell = {
            "cell_type": draw(st.sampled_from(["code", "markdown", "raw", 3, None])),
            "source": draw(st.one_of(CELL_SOURCE, st.lists(CELL_SOURCE, max_size=3), JSON_VALUES)),
            "metadata": draw(st.one_of(st.just({}), JSON_VALUES)),
        }
        if draw(st.booleans()):
            del cell[draw(st.sampled_from(sorted(cell)))]
        cells.append(draw(st.one_of(st.just(cell), JSON_VALUES)))
    document = draw(
        st.one_of(
            st.just({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}),
            st.just({"cells": cells}),
            JSON_VALUES,
        )
    )
    text = json.dumps(document)
    if draw(st.booleans()):  # and JSON that does not decode
        text = text[: draw(st.integers(0, len(text)))]
    return ("GradientTape" + text if draw(st.booleans()) else text).encode()


@BOUNDED
@given(data=notebooks())
def test_malformed_notebook_json_never_makes_an_internal_error(data):
    with tempfile.TemporaryDirectory() as directory:
        result = run_stdin(data, "notebook.ipynb", Settings(root=Path(directory)), Options())
    assert result.report.errors == []
