"""Positions resolved on a pruned module (only the path to a reported node) must equal the
positions libcst gives in the whole module, wherever the node sits."""

from __future__ import annotations

import textwrap
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from tapelint.analysis import build_model
from tapelint.engine import _Locator
from tapelint.source import SparseSource
from tests.fixture_markers import FIXTURES

NESTED = textwrap.dedent(
    """\
    # a header comment
    \"\"\"Module docstring.\"\"\"
    import tensorflow as tf

    LIMIT = 3  # a constant


    @tf.function(jit_compile=True)
    def step(model, x):
        with tf.GradientTape(persistent=True) as tape:
            loss = model(x)
        return tape.gradient(loss, model.trainable_variables)


    class Trainer(tf.keras.Model):
        \"\"\"A trainer.\"\"\"

        def fit(self, data):
            for epoch in range(LIMIT):
                # a comment line
                for x in data:
                    if x is None:
                        continue
                    else:
                        self.step(x, lambda v: tf.square(v))
                    try:
                        grads = [g for g in self.grads(x) if g is not None]
                    except ValueError:
                        grads = tf.zeros(1)
                    finally:
                        print("done")

        def grads(self, x):
            with tf.GradientTape() as tape:
                y = x * 2
            return tape.gradient(y, x)


    for i in range(2): print(i); step(None, i)
    while False:
        pass
    else:
        step(None, 0)
    """
)


def _all_nodes(module: cst.Module) -> list[cst.CSTNode]:
    found: list[cst.CSTNode] = []

    class Collect(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            found.append(node)
            return True

    module.visit(Collect())
    return found


def _check_every_placed_node(text: str) -> int:
    module = cst.parse_module(text)
    model = build_model(module, source_text=text, is_notebook=False)
    whole = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    sparse = SparseSource(text, ((1, 1),))
    locate = _Locator(model, sparse, text.split("\n"))
    placed = 0
    for node in _all_nodes(module):
        if node is module or model.statement_path(node) is None:
            continue
        placed += 1
        where = whole[node]
        start, end = locate.span(node)
        assert (start.line, start.column - 1) == (where.start.line, where.start.column), node
        assert (end.line, end.column - 1) == (where.end.line, where.end.column), node
    return placed


def test_nodes_in_nested_blocks_get_their_whole_module_positions():
    assert _check_every_placed_node(NESTED) > 100


def test_crlf_line_ends_are_counted_like_libcst():
    assert _check_every_placed_node(NESTED.replace("\n", "\r\n")) > 100


@pytest.mark.parametrize(
    "path", sorted(FIXTURES.glob("TAP*/*.py"))[::7], ids=lambda p: f"{p.parent.name}/{p.name}"
)
def test_fixture_nodes_get_their_whole_module_positions(path: Path):
    _check_every_placed_node(path.read_text())
