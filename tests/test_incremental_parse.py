"""A slice parsed in pieces (`tapelint.parsing.incremental`) is the tree libcst makes of the
whole slice, node for node, and a second parse after an edit reuses the statements the edit
left alone."""

from __future__ import annotations

import ast
import textwrap
import warnings
from pathlib import Path

import hypothesmith
import libcst as cst
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tapelint.linter.registry import all_rules
from tapelint.parsing.incremental import IncrementalParser, _piece_texts
from tapelint.parsing.slicer import SparseSource, relevant_source
from tests.fixture_markers import FIXTURES

# Generated code (hypothesmith) may call a literal (`1()`) or hold an invalid escape
# (`"\\p"`): Python compiles it with a warning, which is expected here.
pytestmark = [
    pytest.mark.filterwarnings("ignore::SyntaxWarning"),
    pytest.mark.filterwarnings("ignore:invalid escape sequence:DeprecationWarning"),
]

TRIGGERS = tuple(sorted({t for rule in all_rules() for t in rule.triggers}))

# What lines around top-level statements can be: comments in and out of the first column,
# lines of whitespace, a form feed, decorators with comments between them, blocks of every
# kind, one-line suites, and indentation that changes from one statement to the next.
AROUND = (
    textwrap.dedent(
        """\
    #!/usr/bin/env python
    # a header comment

    \"\"\"The docstring.\"\"\"
    import tensorflow as tf
    x = 1; y = 2  # two on a line


    def first(a):
        if a:
            return 1
        # a comment owned by the block
    # a comment in the first column

    \f
    @tf.function
    # between decorators
    @other(1,
           2)
    def four_spaces(model, x):
        with tf.GradientTape() as tape:
            loss = model(x)
    <12 spaces>
    <4 spaces>
        return tape.gradient(loss, model.trainable_variables)
    <2 spaces>

    class Trainer:
        def step(self):
            pass

            # indented deeper than the last statement

    if x: pass
    elif y:
        pass
    else: z = 3
    try:
        pass
    except ValueError:
        pass
    finally: pass
    for i in range(2): print(i)
    else:
        print("done")
    match x:
        case 1:
            pass
    while False: pass
    # the footer
    """
    )
    .replace("<12 spaces>", " " * 12)
    .replace("<4 spaces>", " " * 4)
    .replace("<2 spaces>", "  ")
)


def _whole_tree(text: str) -> SparseSource:
    return SparseSource(text, ((1, 1),), ast.parse(text))


def _assert_same_tree(sparse: SparseSource, *, pieces: int = 2) -> None:
    """The slice cut in at least `pieces` pieces parses to the whole slice's tree; parsed
    again, every top-level statement is the first parse's (so the pieces were joined, not
    parsed whole after all), but for one written twice (parsed again each time)."""
    texts = _piece_texts(sparse)
    assert texts is not None and "".join(texts) == sparse.text
    assert len(texts) >= pieces
    parser = IncrementalParser()
    parsed = parser.parse(sparse)
    assert parsed.deep_equals(cst.parse_module(sparse.text))
    assert parsed.code == sparse.text
    if len(texts) > 1:
        again = parser.parse(sparse)
        codes = [parsed.code_for_node(statement) for statement in parsed.body]
        for a, b, code in zip(again.body, parsed.body, codes, strict=True):
            assert a is b or codes.count(code) > 1, code


def test_pieces_make_the_whole_tree_whatever_surrounds_the_statements():
    _assert_same_tree(_whole_tree(AROUND), pieces=10)


@pytest.mark.parametrize(
    "change",
    [
        lambda text: text.replace("\n", "\r\n"),
        lambda text: text.rstrip("\n"),  # no line end at the end
        lambda text: text.replace("    ", "\t"),
        lambda text: text.replace("    ", "  "),
    ],
    ids=["crlf", "no-final-line-end", "tabs", "two-spaces"],
)
def test_pieces_make_the_whole_tree_with_other_line_ends_and_indentation(change):
    text = change(AROUND)
    _assert_same_tree(_whole_tree(text), pieces=10)


@pytest.mark.parametrize(
    "text",
    [
        "import tensorflow as tf\ndef f():\r\n    pass\r\ndef g():\n    pass\n",
        "import tensorflow as tf\n\ndef f():\n  pass\n\ndef g():\n    pass\n",
    ],
    ids=["line-ends", "indentation"],
)
def test_line_ends_or_indentation_that_change_midway_are_parsed_whole(text):
    # libcst's defaults are the first line end and indentation, and a node holds its own
    # only when it is another: pieces that found other defaults must not be joined.
    parser = IncrementalParser()
    first = parser.parse(_whole_tree(text))
    assert first.deep_equals(cst.parse_module(text))
    assert parser.parse(_whole_tree(text)).body[0] is not first.body[0]


def test_a_line_of_whitespace_after_a_block_goes_where_libcst_puts_it():
    # Less indented than the block: the next statement's in the whole, the piece's footer.
    for gap in ("  \n", "    \n", "  # c\n", "        # c\n", "\n  \n\n"):
        text = f"def f():\n    if x:\n        pass\n{gap}def g():\n    pass\n"
        sparse = _whole_tree(text)
        assert IncrementalParser().parse(sparse).deep_equals(cst.parse_module(text)), gap


def test_a_slice_is_cut_where_its_statements_are_and_parses_as_the_whole_slice():
    text = textwrap.dedent(
        """\
        import tensorflow as tf


        def cut(a):
            return a + 1


        class Trainer:
            def step(self, x):
                with tf.GradientTape() as tape:
                    y = x * 2
                return tape.gradient(y, x)

            # about the method that goes
            def get_config(self):
                return {}


        def also_cut():
            pass
        """
    )
    sparse = relevant_source(text, TRIGGERS)
    assert isinstance(sparse, SparseSource) and len(sparse.segments) > 1
    assert "get_config" not in sparse.text and "def cut" not in sparse.text
    _assert_same_tree(sparse)


def _python_fixtures() -> list[Path]:
    found = []
    for path in sorted(FIXTURES.rglob("*.py")):
        try:
            ast.parse(path.read_text())
        except SyntaxError:
            continue
        found.append(path)
    return found


@pytest.mark.parametrize("path", _python_fixtures()[::3], ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fixtures_whole_and_sliced_parse_to_the_whole_tree(path: Path):
    text = path.read_text()
    _assert_same_tree(_whole_tree(text), pieces=1)
    sparse = relevant_source(text, TRIGGERS)
    if isinstance(sparse, SparseSource) and sparse.text:
        _assert_same_tree(sparse, pieces=1)


@settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    parts=st.lists(hypothesmith.from_grammar(), min_size=2, max_size=4),
    between=st.sampled_from(["", "\n", "# c\n", "\n  \n", "    # deep\n\n"]),
)
def test_generated_modules_parse_to_the_whole_tree(parts, between):
    text = between.join(part if part.endswith("\n") else part + "\n" for part in parts)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)  # `1()` and the like
            tree = ast.parse(text)
        expected = cst.parse_module(text)
    except (SyntaxError, ValueError, cst.ParserSyntaxError, RecursionError, MemoryError):
        return
    parsed = IncrementalParser().parse(SparseSource(text, ((1, 1),), tree))
    assert parsed.deep_equals(expected)


STEPS = textwrap.dedent(
    """\
    import tensorflow as tf


    def first(model, x):
        with tf.GradientTape() as tape:
            loss = model(x) * 1.0
        return tape.gradient(loss, model.trainable_variables)


    def second(model, x):
        with tf.GradientTape() as tape:
            loss = model(x) * 2.0
        return tape.gradient(loss, model.trainable_variables)


    print("same")


    print("same")
    """
)


def test_an_edit_reparses_only_the_statement_it_changed():
    parser = IncrementalParser()
    before = parser.parse(_whole_tree(STEPS))
    edited = STEPS.replace("model(x) * 2.0", "model(x) * 2.5")
    after = parser.parse(_whole_tree(edited))
    assert after.deep_equals(cst.parse_module(edited))
    assert after.body[0] is before.body[0] and after.body[1] is before.body[1]
    assert after.body[2] is not before.body[2]
    assert after.body[3] is before.body[3]  # the first `print("same")`; the second is
    assert after.body[4] is not after.body[3]  # parsed each time (see below)


def test_a_statement_written_twice_is_two_nodes():
    # The analysis keys on nodes: one node in two places would be one statement.
    parser = IncrementalParser()
    for _ in range(2):
        module = parser.parse(_whole_tree(STEPS))
        assert module.body[3].deep_equals(module.body[4])
        assert module.body[3] is not module.body[4]


def test_pieces_least_recently_used_go_beyond_the_line_limit():
    parser = IncrementalParser(max_lines=40)
    first = parser.parse(_whole_tree(STEPS))
    for scale in range(3, 9):  # each edit makes a piece of its own
        parser.parse(_whole_tree(STEPS.replace("2.0", f"{scale}.0")))
    again = parser.parse(_whole_tree(STEPS))
    assert again.body[0] is first.body[0]  # in every parse: kept
    assert again.body[2] is not first.body[2]  # in the first parse only: gone
    assert again.deep_equals(first)


# ---------------------------------------------------------------------- `ast` trees
def _dump(text_or_tree: str | ast.Module) -> str:
    tree = ast.parse(text_or_tree) if isinstance(text_or_tree, str) else text_or_tree
    return ast.dump(tree, include_attributes=True)


def test_an_edit_in_a_line_keeps_the_other_statements_of_the_tree():
    parser = IncrementalParser()
    before = parser.parse_tree(STEPS)
    edited = STEPS.replace("model(x) * 1.0", "model(x) * 1.5")
    after = parser.parse_tree(edited)
    assert _dump(after) == _dump(edited)
    assert after.body[1] is not before.body[1]
    assert all(after.body[i] is before.body[i] for i in (0, 2, 3, 4))


def test_an_added_line_keeps_the_statements_before_it_and_moves_those_after():
    parser = IncrementalParser()
    before = parser.parse_tree(STEPS)
    edited = STEPS.replace(
        "    return tape.gradient", "    # a new line\n    return tape.gradient", 1
    )
    after = parser.parse_tree(edited)
    assert _dump(after) == _dump(edited)
    assert after.body[0] is before.body[0]
    assert after.body[4].lineno == before.body[4].lineno + 1


def test_a_text_naming_future_features_is_parsed_whole():
    # `from __future__ import barry_as_FLUFL` changes the grammar of what follows.
    text = "from __future__ import annotations\n" + STEPS
    parser = IncrementalParser()
    before = parser.parse_tree(text)
    after = parser.parse_tree(text.replace("1.0", "1.5"))
    assert after.body[0] is not before.body[0]


# What an edit inserts: lines that open, close or continue blocks, brackets and strings.
SNIPPETS = [
    *("    x = 1", "x = 1", "", "# c", "    # c", "else:", "def g():", "(", ")", '"""'),
    *("\\", "@dec", "    pass", "y", ":", "elif z:", "if a:", "except E:", "1"),
]
EDITS = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=10_000),  # which line
        st.integers(min_value=0, max_value=200),  # where in it
        st.sampled_from(["insert line", "delete line", "insert text", "delete character"]),
        st.sampled_from(SNIPPETS),
    ),
    min_size=1,
    max_size=8,
)


def _edited(text: str, edit: tuple[int, int, str, str]) -> str:
    lines = text.split("\n")
    line, column, kind, snippet = edit
    line %= len(lines)
    column %= len(lines[line]) + 1
    if kind == "insert line":
        lines.insert(line, snippet)
    elif kind == "delete line" and len(lines) > 1:
        del lines[line]
    elif kind == "insert text":
        lines[line] = lines[line][:column] + snippet + lines[line][column:]
    else:
        lines[line] = lines[line][:column] + lines[line][column + 1 :]
    return "\n".join(lines)


def _outcome(parse, text: str) -> tuple[str, str]:
    try:
        return "tree", _dump(parse(text))
    except (SyntaxError, ValueError) as error:
        return type(error).__name__, str(error)


@settings(
    max_examples=150,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    start=st.sampled_from([STEPS, AROUND, *(p.read_text() for p in _python_fixtures()[::25])]),
    edits=EDITS,
)
def test_edited_texts_parse_to_the_tree_of_the_whole_text(start, edits):
    # Each edit is parsed from the tree of the text before it, as a server's edits are.
    parser = IncrementalParser()
    text = start
    for edit in edits:
        text = _edited(text, edit)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)
            assert _outcome(parser.parse_tree, text) == _outcome(ast.parse, text)
