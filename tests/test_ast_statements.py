"""libcst's statements paired with the `ast` statements of the slicer's tree: every statement
must get the line where libcst starts it, in the whole file and in a slice of it."""

from __future__ import annotations

import textwrap
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from tapelint.linter.registry import all_rules
from tapelint.parsing.slicer import SparseSource, relevant_source
from tapelint.semantic import build_model
from tapelint.semantic.file_model.ast_statements import AstStatements
from tests.fixture_markers import FIXTURES
from tests.test_locator import CALLS, NESTED, _all_nodes, _python_fixtures

TRIGGERS = tuple(sorted({t for rule in all_rules() for t in rule.triggers}))

# Every kind of block, one-line suites, `elif` chains, decorators, a `match`, and definitions
# the slicer cuts (no trigger) between, before and inside the ones it keeps.
BLOCKS = textwrap.dedent(
    """\
    import tensorflow as tf


    def cut_before(a):
        return a + 1


    @tf.function
    @other(1,
           2)
    def step(model, x):
        if x: y = 1; z = 2
        elif x > 1:
            with tf.GradientTape() as tape: loss = model(x)
        elif x > 2: pass
        else: w = 3
        try: a = 1
        except ValueError: b = 2
        else: c = 3
        finally: d = 4
        for i in range(3): print(i)
        else: print("done")
        match x:
            case [v]: handle(v)
            case _:
                other(x)
        return tape.gradient(loss, model.trainable_variables)


    class Trainer:
        def cut_method(self):
            return 1

        # a comment before a kept method
        async def train(self, data):
            async with tf.GradientTape() as tape:
                async for x in data:
                    loss = self.model(x)
            return tape.gradient(loss, self.model.trainable_variables)

        def cut_too(self):
            pass


    def cut_after():
        pass
    x = 1; y = (
        2)
    """
)


def _statements_of(module: cst.Module) -> list[cst.CSTNode]:
    kinds = (cst.SimpleStatementLine, cst.SimpleStatementSuite, cst.BaseCompoundStatement)
    return [node for node in _all_nodes(module) if isinstance(node, kinds)]


def _check_every_statement(text: str, sparse: SparseSource) -> int:
    """Each statement's `ast` statements start on the line of the file where libcst starts
    it (its first small statement, for a line of them); how many statements were paired."""
    module = cst.parse_module(sparse.text)
    model = build_model(module, source_text=text, is_notebook=False)
    whole = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    statements = AstStatements(model, sparse)
    paired = 0
    for node in _statements_of(module):
        path = model.statement_path(node)
        if path is None or path[-1] is not node:
            continue
        found = statements.statements(path)
        assert found is not None, module.code_for_node(node)
        simple = isinstance(node, (cst.SimpleStatementLine, cst.SimpleStatementSuite))
        smalls = list(node.body) if simple else [node]
        assert len(found) == len(smalls), module.code_for_node(node)
        for ours, theirs in zip(smalls, found, strict=True):
            line = statements.line(theirs.lineno)
            assert line is not None
            assert sparse.original_line(line) == theirs.lineno
            assert line == whole[ours].start.line, module.code_for_node(ours)
            column = statements.column(line, theirs.col_offset)
            assert column == whole[ours].start.column, module.code_for_node(ours)
        paired += 1
    return paired


def test_statements_of_a_whole_text_pair_up():
    for text in (BLOCKS, NESTED, CALLS, BLOCKS.replace("\n", "\r\n")):
        assert _check_every_statement(text, SparseSource(text, ((1, 1),))) > 20


def test_statements_of_a_slice_pair_up_with_the_slicers_tree():
    sparse = relevant_source(BLOCKS, TRIGGERS)
    assert isinstance(sparse, SparseSource) and sparse.tree is not None
    # The slicer cut the definitions without a trigger, so lines moved.
    assert "cut_before" not in sparse.text and "cut_method" not in sparse.text
    assert "cut_too" not in sparse.text and "cut_after" not in sparse.text
    assert len(sparse.segments) > 2
    assert _check_every_statement(BLOCKS, sparse) > 20


def test_cut_lines_map_to_no_line_of_the_slice():
    sparse = relevant_source(BLOCKS, TRIGGERS)
    assert isinstance(sparse, SparseSource)
    model = build_model(cst.parse_module(sparse.text), source_text=BLOCKS, is_notebook=False)
    statements = AstStatements(model, sparse)
    lines = BLOCKS.split("\n")
    cut = lines.index("def cut_before(a):") + 1
    kept = lines.index("def step(model, x):") + 1
    assert statements.line(cut) is None
    assert statements.line(kept) == sparse.text.split("\n").index("def step(model, x):") + 1


@pytest.mark.parametrize(
    "path",
    [*_python_fixtures()[::4], *sorted((FIXTURES / "clean").glob("*.py"))],
    ids=lambda p: f"{p.parent.name}/{p.name}",
)
def test_statements_of_sliced_fixtures_pair_up(path: Path):
    text = path.read_text()
    sparse = relevant_source(text, TRIGGERS)
    assert isinstance(sparse, SparseSource)
    if sparse.text:
        _check_every_statement(text, sparse)
