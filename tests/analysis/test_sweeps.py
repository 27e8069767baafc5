"""Sweeps: loops over a handful of cases written out in the code, and their case values."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest
from tapelint.rules.compiled_steps._sweeps import is_case_value, is_sweep

from tapelint.semantic.file_model.model import DefKind
from tests.analysis.helpers import model_of


def _loop_answers(source: str) -> tuple[bool, dict[str, bool]]:
    """Whether the last `for` loop of the module is a sweep, and for each of its loop
    variables whether it is a case value."""
    model = model_of("import itertools\nimport tensorflow as tf\n" + textwrap.dedent(source))
    loop = [s for s in model.module.body if isinstance(s, cst.For)][-1]
    variables = {
        d.name: is_case_value(model, d)
        for d in model.defs_by_stmt.get(loop, [])
        if d.kind is DefKind.FOR
    }
    return is_sweep(model, loop), variables


@pytest.mark.parametrize(
    "source",
    [
        "for lr in [0.1, 0.01]:\n    pass\n",
        "for jit in (True, False):\n    pass\n",
        "dims = [1, 2, 3]\nfor dim in dims:\n    pass\n",
        "for i, n in enumerate((10, 250)):\n    pass\n",
        "dtypes = [tf.float32, tf.float64]\ndims = [1, 2]\n"
        "for dtype, dim in itertools.product(dtypes, dims):\n    pass\n",
        "for lr, bs in [(0.1, 32), (0.01, 64)]:\n    pass\n",
        "for name, size in zip(['a', 'b'], [1, 2]):\n    pass\n",
        "for dim in sorted([3, 1, 2]):\n    pass\n",
    ],
    ids=["list", "tuple", "bound-name", "enumerate", "product", "pairs", "zip", "sorted"],
)
def test_loops_over_written_out_cases_are_sweeps(source):
    sweep, variables = _loop_answers(source)
    assert sweep
    assert all(variables.values()), variables


@pytest.mark.parametrize(
    "source",
    [
        "for epoch in range(5):\n    pass\n",
        "for x, y in dataset:\n    pass\n",
        "for dtype in supported_dtypes():\n    pass\n",
        "cases = [1]\ncases.append(2)\nfor case in cases:\n    pass\n",
        "cases = [1]\nif more:\n    cases = load()\nfor case in cases:\n    pass\n",
        "for dtype, dim in itertools.product(supported(), [1, 2]):\n    pass\n",
        "for case in [*base, 4]:\n    pass\n",
        "for case in []:\n    pass\n",
    ],
    ids=[
        "range",
        "dataset",
        "computed",
        "appended-to",
        "rebound",
        "product-of-unknown",
        "starred",
        "empty",
    ],
)
def test_counted_or_computed_loops_are_not_sweeps(source):
    assert not _loop_answers(source)[0]


def test_case_values_are_python_constants_of_a_written_out_collection():
    _, variables = _loop_answers(
        "for dtype, dim in itertools.product(supported(), [1, 2, 3]):\n    pass\n"
    )
    assert variables == {"dtype": False, "dim": True}
    _, variables = _loop_answers("for m in [build(1), build(2)]:\n    pass\n")
    assert variables == {"m": False}
    _, variables = _loop_answers("for i, m in enumerate([a, b]):\n    pass\n")
    assert variables == {"i": True, "m": False}
    sweep, variables = _loop_answers("for name, x in zip(['a', 'b'], values):\n    pass\n")
    assert sweep  # zip stops at its shortest argument
    assert variables == {"name": True, "x": False}
