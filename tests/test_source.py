"""The text prefilter and the slicing that keeps reported positions exact."""

from __future__ import annotations

import re
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tapelint.linter.engine import Linter
from tapelint.linter.registry import all_rules
from tapelint.parsing.slicer import (
    SparseSource,
    SyntaxProblem,
    _name_uses,
    mentions,
    relevant_source,
)
from tapelint.sources.colab_exports import as_ipython, is_colab_export
from tests.fixture_markers import FIXTURES

TRIGGERS = ("GradientTape",)

BIG = textwrap.dedent(
    '''
    import tensorflow as tf


    def unrelated(a):
        """Nothing to do with tapes."""
        return a + 1


    @decorator
    def also_unrelated():
        pass


    class Trainer:
        def setup(self):
            self.x = 1

        def step(self, x):
            with tf.GradientTape() as tape:
                y = self.model(x)
            return tape.gradient(y, self.model.trainable_variables)

        def teardown(self):
            pass


    def uses_helper(x):
        with tf.GradientTape() as tape:
            y = scale(x)
        return tape.gradient(y, x)


    def scale(x):
        return x * 2
    '''
)


def _assert_lines_preserved(original: str, sparse: SparseSource) -> None:
    """Each line of the slice is the original's line it maps to, and the original's lines
    map back to it (`slice_line`), or to None when they were cut."""
    original_lines = original.split("\n")
    for number, line in enumerate(sparse.text.split("\n")[:-1], start=1):
        assert original_lines[sparse.original_line(number) - 1] == line
    lines = sparse.text.count("\n") + (0 if sparse.text.endswith("\n") else 1)
    kept = {sparse.original_line(number): number for number in range(1, lines + 1)}
    for number in range(1, len(original_lines) + 1):
        assert sparse.slice_line(number) == kept.get(number), number


def test_definitions_without_triggers_are_cut_and_lines_map_back():
    sparse = relevant_source(BIG, TRIGGERS)
    assert isinstance(sparse, SparseSource)
    assert "def unrelated" not in sparse.text
    assert "also_unrelated" not in sparse.text
    assert "def setup" not in sparse.text and "def teardown" not in sparse.text
    assert "def step" in sparse.text and "class Trainer" in sparse.text
    _assert_lines_preserved(BIG, sparse)


def test_helpers_referenced_by_kept_code_are_kept():
    sparse = relevant_source(BIG, TRIGGERS)
    assert "def scale" in sparse.text


def test_imported_alias_counts_as_a_trigger():
    source = "from tensorflow import GradientTape as GT\n\ndef f(x):\n    with GT() as t:\n        y = x\n"
    sparse = relevant_source(source, TRIGGERS)
    assert "with GT() as t" in sparse.text


def test_syntax_error_is_reported_with_its_line():
    problem = relevant_source(
        "import tensorflow as tf\nwith tf.GradientTape() as t\n    pass\n", TRIGGERS
    )
    assert isinstance(problem, SyntaxProblem)
    assert problem.line == 2
    assert "expected ':'" in problem.message


def test_crlf_sources_keep_their_lines():
    source = BIG.replace("\n", "\r\n")
    sparse = relevant_source(source, TRIGGERS)
    assert isinstance(sparse, SparseSource)
    original_lines = source.split("\n")
    for number, line in enumerate(sparse.text.split("\n")[:-1], start=1):
        assert original_lines[sparse.original_line(number) - 1] == line


def test_prefilter_needs_a_trigger():
    assert not mentions("import tensorflow as tf\nx = tf.constant(1)\n", TRIGGERS)
    assert mentions("with tf.GradientTape() as t: pass\n", TRIGGERS)


@pytest.mark.parametrize("path", sorted(FIXTURES.rglob("*.py")), ids=lambda p: p.name)
def test_every_fixture_slices_to_lines_of_the_original(path):
    text = path.read_text(encoding="utf-8")
    sparse = relevant_source(text, TRIGGERS)
    if isinstance(sparse, SparseSource):
        # A Colab export is read as IPython reads it, line for line (`colab_exports`).
        read_as = as_ipython(text) if is_colab_export(text) else None
        _assert_lines_preserved(read_as or text, sparse)


def test_tapes_in_docstrings_and_comments_do_not_keep_a_definition():
    source = textwrap.dedent(
        '''
        import tensorflow as tf


        def documented(x):
            """Example:

            >>> with tf.GradientTape() as g:
            ...     y = x * x
            """
            return x


        def commented(x):
            # like tf.GradientTape, but cheaper
            return x
        '''
    )
    sparse = relevant_source(source, TRIGGERS)
    assert "def documented" not in sparse.text
    assert "def commented" not in sparse.text


def test_a_referenced_class_keeps_a_parsable_body():
    source = textwrap.dedent(
        """
        import tensorflow as tf


        class Helper:
            def first(self):
                return 1

            def second(self):
                return 2


        def step(x):
            h = Helper()
            with tf.GradientTape() as tape:
                y = h.first() * x
            return tape.gradient(y, x)
        """
    )
    sparse = relevant_source(source, TRIGGERS)
    compile(sparse.text, "sparse", "exec")
    assert "class Helper" in sparse.text


def test_a_file_that_mentions_triggers_only_in_prose_has_nothing_to_parse():
    source = textwrap.dedent(
        '''\
        """Helpers; see tf.GradientTape for the real thing."""
        import tensorflow as tf

        # Not a GradientTape in sight.
        STEPS = 3


        def f(x):
            """Like `with tf.GradientTape() as g:` but cheaper."""
            return x * STEPS
        '''
    )
    sparse = relevant_source(source, TRIGGERS)
    assert isinstance(sparse, SparseSource)
    assert sparse.text == ""


def test_a_trigger_in_module_level_code_keeps_the_module_level_code():
    source = "import tensorflow as tf\n\ntape = tf.GradientTape()\n\n\ndef f(x):\n    return x\n"
    sparse = relevant_source(source, TRIGGERS)
    assert "tape = tf.GradientTape()" in sparse.text and "def f" not in sparse.text


def test_unused_from_imports_are_cut_and_used_ones_kept():
    source = textwrap.dedent(
        """\
        import os
        from numpy import mean as np_mean, std
        from tensorflow.python.ops.array_ops import reshape
        from tensorflow.python.eager.backprop import GradientTape
        from tensorflow import keras
        from .local import thing
        from json import dumps; from json import loads


        def step(x):
            with GradientTape() as tape:
                y = np_mean(x)
            return tape.gradient(y, x)
        """
    )
    sparse = relevant_source(source, TRIGGERS)
    assert isinstance(sparse, SparseSource)
    kept = sparse.text
    assert "import os" in kept  # `import m` binds a module alias: always kept
    assert "np_mean" in kept  # used by kept code
    assert "reshape" not in kept  # unused
    assert "backprop import GradientTape" in kept  # a trigger line
    assert "from tensorflow import keras" in kept  # tensorflow itself: always kept
    assert "from .local import thing" in kept  # relative: always kept
    assert "dumps" in kept  # shares its line with another statement
    _assert_lines_preserved(source, sparse)


@pytest.mark.parametrize(
    "source",
    [
        'MESSAGE = """Wrap it:\n\n    with tf.GradientTape() as tape:\n        loss = f(x)\n"""\n',
        "HELP = (\n    'use a GradientTape '\n    \"or a tf.GradientTape\"\n)\n",
        'path = r"C:\\tmp\\\\" + "tf.GradientTape"\n',
        "quote = 'it\\'s a GradientTape'\n",
        'data = b"GradientTape"  # also GradientTape\n',
        'text = f"{name} uses a GradientTape"\n',
    ],
)
def test_triggers_inside_any_string_or_comment_are_prose(source):
    compile(source, "prose", "exec")
    assert relevant_source(source, TRIGGERS) == SparseSource("", ((1, 1),))


@pytest.mark.parametrize(
    "source",
    [
        'x = "#"; tape = tf.GradientTape()\n',
        "# don't\ntape = tf.GradientTape()\n",
        's = """a\nb"""\ntape = tf.GradientTape()\n',
        "s = 'a\\\n b'; tape = tf.GradientTape()\n",
    ],
)
def test_quotes_and_hashes_inside_other_literals_do_not_hide_code(source):
    compile(source, "code", "exec")
    assert "tape = tf.GradientTape()" in relevant_source(source, TRIGGERS).text


def test_a_file_whose_tape_is_only_prose_is_not_syntax_checked():
    """Decided: TAP001 is for files whose code could matter to a rule."""
    assert relevant_source('"""A GradientTape."""\ndef broken(:\n', TRIGGERS).text == ""
    problem = relevant_source("tape = tf.GradientTape()\ndef broken(:\n", TRIGGERS)
    assert isinstance(problem, SyntaxProblem) and problem.line == 2


def test_another_class_defining_the_same_method_is_not_a_caller():
    """A layer's `call` with a tape keeps callers such as `self.call(...)`, not every
    other layer's `def call`, nor every mention of its class."""
    source = textwrap.dedent(
        """\
        import tensorflow as tf


        class Probe(tf.keras.layers.Layer):
            def call(self, x):
                with tf.GradientTape() as tape:
                    tape.watch(x)
                    y = x * x
                return tape.gradient(y, x)


        class Other(tf.keras.layers.Layer):
            def call(self, x):
                return Probe()(x)


        class Caller:
            def run(self, layer, x):
                return layer.call(x)
        """
    )
    sparse = relevant_source(source, TRIGGERS)
    assert "class Probe" in sparse.text and "def run" in sparse.text
    assert "class Other" not in sparse.text
    _assert_lines_preserved(source, sparse)


def test_names_in_docstrings_and_comments_keep_no_helper():
    source = textwrap.dedent(
        '''\
        import tensorflow as tf


        def fit(model):
            """Too slow for large data; see `evaluate_all`."""
            return model  # evaluate_all would be better


        def evaluate_all(model):
            return model


        def step(model, x):
            """Like `fit`, for one batch."""
            with tf.GradientTape() as tape:
                loss = model(x)
            return tape.gradient(loss, model.trainable_variables)
        '''
    )
    sparse = relevant_source(source, TRIGGERS)
    assert "def step" in sparse.text
    assert "def fit" not in sparse.text and "def evaluate_all" not in sparse.text


def test_a_helper_handed_the_tape_is_read_and_prose_about_it_is_not():
    """`tape.gradient(` alone makes a file worth reading: a helper module handed the tape
    never names `GradientTape`, and its summary is what the caller's check needs."""
    linter = Linter(all_rules())
    helper = "def grads_of(tape, loss, variables):\n    return tape.gradient(loss, variables)\n"
    assert linter.may_report(helper.encode())
    assert "return tape.gradient(loss, variables)" in relevant_source(helper, linter.triggers).text
    prose = [
        '"""Call `tape.gradient(loss, vs)` after the block."""\n',
        "# tape.gradient(loss, vs) returns None for unconnected variables\nx = 1\n",
        "class Field:\n    def gradient(self, x):\n        return x\n",
        "import numpy as np\nslope = np.gradient(np.arange(5.0))\n",
        "import jax.numpy as jnp\nslope = jnp.gradient(jnp.arange(5.0))\n",
    ]
    for source in prose:
        assert not linter.may_report(source.encode()), source


def _name_uses_by_alternation(text: str, names: set[str], prefix: str) -> list[int]:
    """The oracle: the names as one alternation between word boundaries."""
    if not names:
        return []
    pattern = re.compile(prefix + "(?:" + "|".join(sorted(map(re.escape, names))) + r")\b")
    return [match.start() for match in pattern.finditer(text)]


@settings(max_examples=300, deadline=None, database=None)
@given(
    text=st.text(alphabet=st.sampled_from(list("ab_1.é(\n #'")), max_size=80),
    names=st.sets(st.sampled_from(["a", "ab", "b_", "_a", "é", "aé1", "ba"]), max_size=4),
)
def test_name_uses_are_whole_words_as_an_alternation_finds_them(text, names):
    assert _name_uses(text, names) == _name_uses_by_alternation(text, names, r"\b")
    dotted = _name_uses(text, names, after_dot=True)
    assert dotted == _name_uses_by_alternation(text, names, r"\.")
