"""The model's `parsed_text()` is the text libcst parsed, handed over by the engine rather
than generated from the tree again: that holds only because libcst's code of a module is
exactly the text it was given. These tests check that on what the engine really parses
(the sliced text of every fixture, and text with the line ends, tabs and form feeds that
code generators could normalise), and that a checked module's model says so."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from tapelint.linter.registry import all_rules
from tapelint.parsing.slicer import SparseSource, relevant_source
from tapelint.semantic import build_model

ROOT = Path(__file__).resolve().parents[1]
TRIGGERS = tuple(sorted({t for rule in all_rules() for t in rule.triggers}))


def _sliced(text: str) -> str | None:
    sparse = relevant_source(text, TRIGGERS)
    return sparse.text if isinstance(sparse, SparseSource) and sparse.text else None


def test_libcst_gives_back_the_sliced_text_of_every_fixture():
    checked = 0
    for path in sorted((ROOT / "fixtures").rglob("*.py")):
        sliced = _sliced(path.read_text(encoding="utf-8"))
        if sliced is None:
            continue
        assert cst.parse_module(sliced).code == sliced, path
        checked += 1
    assert checked > 300


@pytest.mark.parametrize(
    "text",
    [
        "import tensorflow as tf\r\nwith tf.GradientTape() as t:\r\n    y = x\r\n",
        "import tensorflow as tf\n\x0c\nwith tf.GradientTape() as t:\n\ty = x  # tab\n",
        "import tensorflow as tf\nwith tf.GradientTape() as t: y = x",  # no last newline
        "import tensorflow as tf\n\n\n\n\ndef f():\n    with tf.GradientTape() as t:\n"
        "        pass\n    \n\n\n\n",
    ],
)
def test_libcst_gives_back_awkward_text(text):
    assert cst.parse_module(text).code == text


def test_a_model_without_the_parsed_text_generates_it():
    module = cst.parse_module("import tensorflow as tf\nx = tf.constant(1.0)\n")
    model = build_model(module)
    assert model.parsed_text() == module.code
    model.set_parsed_text("given")
    assert model.parsed_text() == "given"
