"""The engine: positions survive slicing, bad input becomes a diagnostic, fixes are located."""

from __future__ import annotations

import textwrap

from tapelint.findings.diagnostics import Applicability, Position
from tapelint.linter.engine import Linter
from tapelint.linter.registry import all_rules

LINTER = Linter(all_rules())

STEP_AFTER_HELPERS = textwrap.dedent(
    """\
    import tensorflow as tf


    def load(path):
        rows = []
        for line in open(path):
            rows.append(line.split(","))
        return rows


    class Trainer:
        def log(self, msg):
            print(msg)

        def step(self, x):
            with tf.GradientTape() as tape:
                pred = self.model(x)
            loss = tf.reduce_mean(pred)
            return tape.gradient(loss, self.model.trainable_variables)
    """
)


def test_positions_are_exact_after_cut_definitions():
    (diagnostic,) = LINTER.check_text(STEP_AFTER_HELPERS, "train.py")
    assert diagnostic.code == "TAP101"
    assert diagnostic.start == Position(19, 16)
    line = STEP_AFTER_HELPERS.split("\n")[18]
    assert line[diagnostic.start.column - 1 :].startswith("tape.gradient(")


def test_unparsable_file_is_a_diagnostic_with_the_parser_line():
    source = "import tensorflow as tf\n\nwith tf.GradientTape() as tape\n    y = 1\n"
    (diagnostic,) = LINTER.check_text(source, "broken.py")
    assert (diagnostic.code, diagnostic.start.line) == ("TAP001", 3)
    assert "expected ':'" in diagnostic.message


def test_undecodable_bytes_are_a_diagnostic():
    data = b"import tensorflow as tf\n# caf\xe9\nwith tf.GradientTape() as t:\n    pass\n"
    (diagnostic,) = LINTER.check_bytes(data, "latin.py")
    assert diagnostic.code == "TAP002"
    assert "decode" in diagnostic.message


def test_coding_cookie_is_honoured():
    data = (
        b"# -*- coding: latin-1 -*-\nimport tensorflow as tf\n# caf\xe9\n"
        b"with tf.GradientTape() as t:\n    p = m(x)\nl = f(p)\ng = t.gradient(l, v)\n"
    )
    assert [d.code for d in LINTER.check_bytes(data, "latin.py")] == ["TAP101"]


def test_empty_and_tapeless_files_produce_nothing():
    assert LINTER.check_bytes(b"", "empty.py") == []
    assert LINTER.check_bytes(b"import tensorflow as tf\nx = 1\n", "plain.py") == []


def test_release_fix_inserts_del_after_the_last_use():
    source = textwrap.dedent(
        """\
        import tensorflow as tf

        def step(x):
            with tf.GradientTape(persistent=True) as tape:
                y = f(x)
            a = tape.gradient(y, x)
            b = tape.gradient(y, w)
            v = model(a, training=False)
            return b, v
        """
    )
    (diagnostic,) = [d for d in LINTER.check_text(source, "s.py") if d.code == "TAP103"]
    assert diagnostic.start == Position(4, 5)
    (edit,) = diagnostic.fix.edits
    assert diagnostic.fix.applicability is Applicability.SAFE
    assert (edit.start, edit.end, edit.content) == (
        Position(8, 1),
        Position(8, 1),
        "    del tape\n",
    )


def test_persistent_fix_removes_the_argument():
    source = "import tensorflow as tf\nwith tf.GradientTape(persistent=True) as t:\n    y = f(x)\ng = t.gradient(y, x)\n"
    (diagnostic,) = [d for d in LINTER.check_text(source, "s.py") if d.code == "TAP102"]
    assert diagnostic.start == Position(2, 22)
    (edit,) = diagnostic.fix.edits
    assert edit.content == "tf.GradientTape()"
    assert (edit.start, edit.end) == (Position(2, 6), Position(2, 38))


def test_release_fix_keeps_tab_indentation():
    source = (
        "import tensorflow as tf\n\ndef step(x):\n"
        "\twith tf.GradientTape(persistent=True) as tape:\n\t\ty = f(x)\n"
        "\ta = tape.gradient(y, x)\n\tb = tape.gradient(y, w)\n\tmodel(a, training=False)\n"
    )
    (diagnostic,) = [d for d in LINTER.check_text(source, "s.py") if d.code == "TAP103"]
    (edit,) = diagnostic.fix.edits
    assert edit.content == "\tdel tape\n"


def test_syntax_errors_alone_can_be_selected():
    linter = Linter([r for r in all_rules() if r.code == "TAP001"])
    source = "import tensorflow as tf\nwith tf.GradientTape() as tape\n    y = 1\n"
    assert [d.code for d in linter.check_text(source, "b.py")] == ["TAP001"]


def test_file_level_noqa_silences_syntax_errors_too():
    source = (
        "# tapelint: noqa\nimport tensorflow as tf\nwith tf.GradientTape() as tape\n    y = 1\n"
    )
    assert LINTER.check_text(source, "b.py") == []


def test_a_tape_that_serves_one_call_is_reported_once():
    source = (
        "import tensorflow as tf\ndef step(x):\n"
        "    with tf.GradientTape(persistent=True) as tape:\n        y = f(x)\n"
        "    g = tape.gradient(y, x)\n    opt.step(g)\n"
    )
    assert [d.code for d in LINTER.check_text(source, "s.py")] == ["TAP102"]


def test_an_op_on_the_path_of_two_gradient_calls_is_reported_once():
    """`Rule.findings` keeps the first finding per node: TAP301 asks once per gradient call,
    and both calls lead to the same `.numpy()`."""
    source = textwrap.dedent(
        """\
        import numpy as np
        import tensorflow as tf

        with tf.GradientTape(persistent=True) as tape:
            pred = model(x, training=True)
            loss = tf.reduce_mean(np.square(pred.numpy() - y))
        g1 = tape.gradient(loss, model.trainable_variables)
        g2 = tape.gradient(loss, model.trainable_variables)
        del tape
        """
    )
    found = [(d.code, d.start.line) for d in LINTER.check_text(source, "t.py")]
    assert found.count(("TAP301", 6)) == 1
