"""TAP501/TAP502 need code that never mentions a tape: the prefilter and the slicer keep it,
and still skip what cannot matter."""

from __future__ import annotations

import ast
import textwrap

import pytest

from tapelint.linter.engine import Linter
from tapelint.linter.registry import rule_by_code_or_name
from tapelint.parsing.slicer import SparseSource, _import_aliases, mentions, relevant_source
from tests.fixture_markers import FIXTURES, expected

COMPILED = [rule_by_code_or_name("TAP501"), rule_by_code_or_name("TAP502")]
LINTER = Linter(COMPILED)

# No tape anywhere; the loop that passes the counter is in a function nothing here calls
# (a library module: the caller lives in another file).
LIBRARY = textwrap.dedent(
    """\
    import tensorflow as tf


    def unrelated(path):
        return open(path).read()


    @tf.function
    def evaluate(x, epoch):
        return tf.reduce_mean(x)


    def run(ds, epochs):
        for epoch in range(epochs):
            for x in ds:
                evaluate(x, epoch)


    class Agent:
        @tf.function
        def act(self, obs, step):
            return obs

        def describe(self):
            # calls act() somewhere else
            return "agent"

        def rollout(self, env):
            for step in range(100):
                self.act(env.obs, step)
    """
)


def test_a_file_without_any_trigger_is_never_parsed():
    source = "import tensorflow as tf\nx = tf.constant(1)\nfor i in range(3):\n    f(x, i)\n"
    assert not mentions(source, LINTER.triggers)


def test_loops_calling_a_compiled_step_are_kept_when_nothing_refers_to_them():
    sparse = relevant_source(LIBRARY, LINTER.triggers)
    assert isinstance(sparse, SparseSource)
    assert "def run(" in sparse.text and "def rollout(" in sparse.text
    assert "def unrelated(" not in sparse.text
    # a mention in a comment does not keep a method
    assert "def describe(" not in sparse.text


def test_counters_in_those_loops_are_reported_at_their_lines():
    found = [(d.code, d.start.line) for d in LINTER.check_text(LIBRARY, "lib.py")]
    lines = LIBRARY.split("\n")
    assert found == [
        ("TAP501", next(i for i, t in enumerate(lines, 1) if t.strip() == "evaluate(x, epoch)")),
        ("TAP501", next(i for i, t in enumerate(lines, 1) if "self.act(" in t)),
    ]


def test_tf_function_imported_from_tensorflow_is_recognised_in_a_file_that_is_read():
    source = textwrap.dedent(
        """\
        from tensorflow import GradientTape
        from tensorflow import function as compiled


        @compiled
        def step(x, n):
            with GradientTape() as tape:
                y = x * x
            return tape.gradient(y, x)


        for n in range(3):
            step(1.0, n)
        """
    )
    assert [d.code for d in LINTER.check_text(source, "alias.py")] == ["TAP501"]


def test_mentions_in_strings_comments_and_docstrings_keep_nothing():
    source = textwrap.dedent(
        '''\
        import tensorflow as tf


        def build(fn):
            """Wrap `fn` like tf.function would."""
            if not callable(fn):
                raise TypeError("expected a tf.function or a callable, it's " + repr(fn))
            return fn  # not a tf.function


        @tf.function
        def step(x):
            return x
        '''
    )
    sparse = relevant_source(source, LINTER.triggers)
    assert "def step" in sparse.text and "def build" not in sparse.text
    only_prose = '"""Helpers that work inside tf.function."""\nimport os\n\nPATH = os.sep\n'
    assert relevant_source(only_prose, LINTER.triggers).text == ""


def _aliases(source: str) -> tuple[str, ...]:
    return _import_aliases(source, ast.parse(source), ("GradientTape", "tf.function"))


def test_import_aliases_need_a_word_boundary():
    source = "from tensorflow import GradientTape as GT\nimport MyGradientTape as Other\n"
    assert _aliases(source) == ("GT",)
    assert _aliases("from tensorflow import (\n    GradientTape  as  Tape,\n)\n") == ("Tape",)


def test_import_aliases_come_from_import_statements_only():
    source = 'import os\nmessage = "not supported by tf.function as an attribute"\n'
    assert _aliases(source) == ()
    assert _aliases(
        'from tensorflow import GradientTape as Tape\nprint("GradientTape as x")\n'
    ) == ("Tape",)


def test_state_in_a_loop_that_applies_gradients_is_found_without_a_tape_in_the_file():
    source = textwrap.dedent(
        """\
        import tensorflow as tf


        def fit(model, batches, grad_fn):
            for x, y in batches:
                optimizer = tf.keras.optimizers.Adam()
                grads = grad_fn(model, x, y)
                optimizer.apply_gradients(
                    [(g, v) for g, v in zip(grads, model.trainable_variables) if g is not None]
                )
        """
    )
    assert [(d.code, d.start.line) for d in LINTER.check_text(source, "fit.py")] == [("TAP502", 6)]


@pytest.mark.parametrize("code", ["TAP501", "TAP502"])
def test_each_rule_alone_still_reads_what_its_findings_need(code):
    """With only this rule selected, its triggers alone decide what is sliced away."""
    alone = Linter([rule_by_code_or_name(code)])
    for path in sorted((FIXTURES / code).glob("flag_*.py")):
        want = {line for line, marker, _ in expected(path) if marker == code}
        got = {d.start.line for d in alone.check_bytes(path.read_bytes(), str(path))}
        assert got == want, path.name


def test_callers_of_a_compiled_attribute_are_kept():
    source = textwrap.dedent(
        """\
        import tensorflow as tf


        class Trainer:
            def __init__(self):
                self.step = tf.function(self._step)

            def _step(self, x, epoch):
                return x

            def fit(self, ds, epochs):
                for epoch in range(epochs):
                    for x in ds:
                        self.step(x, epoch)
        """
    )
    alone = Linter([rule_by_code_or_name("TAP501")])
    assert [(d.code, d.start.line) for d in alone.check_text(source, "t.py")] == [("TAP501", 14)]


@pytest.mark.parametrize(
    "source",
    [
        '"""Wrap the step in `tf.function` to compile it."""\n',
        "# tf.function would retrace here\nx = 1\n",
        'def f():\n    """Example:\n\n    >>> @tf.function\n    ... def g(x):\n    ...     return x\n    """\n',
        'raise ValueError("tf.function only supports singleton tf.Variables")\n',
    ],
)
def test_tf_function_in_prose_only_is_not_read(source):
    assert not LINTER.may_report(source.encode())


@pytest.mark.parametrize(
    "source",
    [
        "import tensorflow as tf\n\n@tf.function\ndef step(x):\n    return x\n",
        "import tensorflow as tf\n\n@tf.function(jit_compile=True)\ndef step(x):\n    return x\n",
        "import tensorflow as tf\nstep = tf.function(lambda x: x)\n",
        "import tensorflow as tf\nfor i in range(3):\n    f = tf.function(g)  # retraces\n",
    ],
)
def test_tf_function_in_code_is_read(source):
    assert LINTER.may_report(source.encode())


def test_defining_apply_gradients_is_not_a_trigger_and_calling_it_is():
    definition = "class MyOptimizer:\n    def apply_gradients(self, pairs):\n        return pairs\n"
    assert not LINTER.may_report(definition.encode())
    call = "def fit(opt, pairs):\n    opt.apply_gradients(pairs)\n"
    assert LINTER.may_report(call.encode())
    assert "opt.apply_gradients(pairs)" in relevant_source(call, LINTER.triggers).text
