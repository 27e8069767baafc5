"""Positions resolved on a pruned module (only the path to a reported node) must equal the
positions libcst gives in the whole module, wherever the node sits."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from tapelint.linter.engine import _Locator
from tapelint.parsing.slicer import SparseSource
from tapelint.semantic import build_model
from tapelint.semantic.file_model.ast_statements import AstStatements
from tapelint.semantic.file_model.call_starts import CallStarts
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


def _check_every_placed_node(text: str, sparse: SparseSource | None = None) -> int:
    """Each node's span equals libcst's in the whole module parsed (the slice, its lines
    mapped to the file's), and none needed that whole-module resolution."""
    sparse = sparse or SparseSource(text, ((1, 1),))
    module = cst.parse_module(sparse.text)
    model = build_model(module, source_text=text, is_notebook=False)
    whole = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    locate = _Locator(model, sparse, text.split("\n"))
    placed = 0
    for node in _all_nodes(module):
        if node is module or model.statement_path(node) is None:
            continue
        placed += 1
        where = whole[node]
        start, end = locate.span(node)
        line = sparse.original_line
        assert (start.line, start.column - 1) == (line(where.start.line), where.start.column)
        assert (end.line, end.column - 1) == (line(where.end.line), where.end.column), node
    assert locate._whole is None  # every node was placed from its path
    return placed


def test_nodes_in_nested_blocks_get_their_whole_module_positions():
    assert _check_every_placed_node(NESTED) > 100


def test_crlf_line_ends_are_counted_like_libcst():
    assert _check_every_placed_node(NESTED.replace("\n", "\r\n")) > 100


def _plain_python(path: Path) -> bool:
    """A fixture Python parses as it is (a Colab export with `!pip` lines is read as
    IPython first, which this test does not do)."""
    try:
        ast.parse(path.read_text())
    except SyntaxError:
        return False
    return True


def _python_fixtures() -> list[Path]:
    """The rule fixtures that are Python as written."""
    return [p for p in sorted(FIXTURES.glob("TAP*/*.py")) if _plain_python(p)]


@pytest.mark.parametrize("path", _python_fixtures()[::7], ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fixture_nodes_get_their_whole_module_positions(path: Path):
    _check_every_placed_node(path.read_text())


@pytest.mark.parametrize(
    "path", _python_fixtures()[3::11], ids=lambda p: f"{p.parent.name}/{p.name}"
)
def test_nodes_of_sliced_fixtures_get_their_positions_in_the_file(path: Path):
    from tapelint.linter.registry import all_rules
    from tapelint.parsing.slicer import relevant_source

    text = path.read_text()
    triggers = tuple(sorted({t for rule in all_rules() for t in rule.triggers}))
    sparse = relevant_source(text, triggers)
    assert isinstance(sparse, SparseSource)
    if sparse.text:
        _check_every_placed_node(text, sparse)


# A summary's sites are placed from Python's ast where they can be (tapelint.semantic.file_model.call_starts):
# every call must get the start libcst gives it, wherever it sits and however it is written.
CALLS = textwrap.dedent(
    """\
    import tensorflow as tf
    x = f(1); y = g(h(2)) ; z = (k)(3)
    w = (m(4))
    v = a.b(c)(d)[e(5)]
    u = [q(i) for i in r(6)] if s() else {t(): p() for _ in ()}
    message = f"{fmt(x)} and {other(y)!r}"
    é = ü(1); ö = ä(é)
    if True:  # a tab
    \tlong = call(1,
    \t            nested(2),
    \t            key=value(3))
    total = first(1) + \\
        second(2)
    \f
    @decorate(1)
    def step(model, x=default()):
        with tf.GradientTape() as tape:
            loss = model(x)
        for item in items(loss):
            apply(item)
        else:
            finish(1)
        try:
            grads = tape.gradient(loss, model.trainable_variables)
        except ValueError:
            grads = fallback()
        lambda: inner(1)
        return tape.gradient(loss, model.trainable_variables)
    match command():
        case [x]:
            handle(x)
    """
)


def _check_every_placed_call(module: cst.Module, text: str, sparse: SparseSource) -> int:
    """Checks each call's place; how many were placed from the `ast` (the rest by libcst)."""
    model = build_model(module, source_text=text, is_notebook=False)
    locate = _Locator(model, sparse, text.split("\n"))
    from_ast = 0
    for node in _all_nodes(module):
        if not isinstance(node, cst.Call) or model.statement_path(node) is None:
            continue
        from_ast += CallStarts(model, AstStatements(model, sparse)).start(node) is not None
        line, column, _ = locate.place(node)
        start, _ = locate.span(node)
        assert (line, column) == (start.line, start.column), module.code_for_node(node)
    return from_ast


def test_calls_are_placed_where_libcst_places_them():
    for text, least in ((CALLS, 28), (CALLS.replace("\n", "\r\n"), 28), (NESTED, 9)):
        module = cst.parse_module(text)
        assert _check_every_placed_call(module, text, SparseSource(text, ((1, 1),))) >= least


@pytest.mark.parametrize(
    "path",
    [*_python_fixtures()[::3], *sorted((FIXTURES / "clean").glob("*.py"))],
    ids=lambda p: f"{p.parent.name}/{p.name}",
)
def test_calls_of_sliced_fixtures_are_placed_where_libcst_places_them(path: Path):
    from tapelint.linter.registry import all_rules
    from tapelint.parsing.slicer import relevant_source

    text = path.read_text()
    triggers = tuple(sorted({t for rule in all_rules() for t in rule.triggers}))
    sparse = relevant_source(text, triggers)
    assert isinstance(sparse, SparseSource)
    _check_every_placed_call(cst.parse_module(sparse.text), text, sparse)
