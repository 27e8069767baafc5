"""Is a persistent tape still held while significant work runs after the place where
`del` would go? (`lifecycle.unreleased`, `significant_work`)"""

import textwrap

import libcst as cst
import pytest
from tapelint.rules.tape_life._lifecycle import unreleased

from tapelint.semantic import build_model
from tests.analysis.helpers import code, model_of

HEADER = "import tensorflow as tf\nimport numpy as np\n"
# A two-call persistent tape in a function; the parametrized tail follows its last use.
STEP = (
    "def step(model, opt, x, y, x_val):\n"
    "    with tf.GradientTape(persistent=True) as t:\n"
    "        t.watch(x)\n"
    "        p = model(x)\n"
    "        l = tf.reduce_mean((p - y) ** 2)\n"
    "    g = t.gradient(l, model.trainable_variables)\n"
    "    gx = t.gradient(l, x)\n"
)


def _held(source: str) -> tuple[str, str | None] | None:
    """(why, the significant work's code) of the first tape, or None when not reported."""
    model = model_of(HEADER + source)
    found = unreleased(model, model.tapes[0])
    if found is None:
        return None
    return found.why, code(model, found.work) if found.work is not None else None


@pytest.mark.parametrize(
    ("tail", "expected"),
    [
        ("    opt.apply_gradients(zip(g, model.trainable_variables))\n    return l\n", None),
        ("    opt.step()\n    metric.update_state(l)\n    w.assign_sub(0.1 * g[0])\n", None),
        ("    print(g)\n    logging.info('%s', gx)\n    tf.summary.scalar('l', l, step=1)\n", None),
        ("    v = model(x_val)\n    return v\n", ("work", "model(x_val)")),
        ("    v = model.predict(x_val)\n", ("work", "model.predict(x_val)")),
        ("    v = other(x_val, training=False)\n", ("work", "other(x_val, training=False)")),
        ("    v = unknown_net(x_val)\n", None),
        ("    v = imported_evaluate(model, x_val)\n", None),
        ("    return model(x_val)\n", ("work", "model(x_val)")),
        ("    del t\n    v = model(x_val)\n", None),
        ("    t = None\n    v = model(x_val)\n", None),
        ("    if x_val is not None:\n        v = model(x_val)\n", ("work", "model(x_val)")),
        (
            "    with tf.GradientTape(persistent=True) as t:\n        v = model(x_val)\n",
            None,
        ),
        ("    yield g\n", ("work", "yield g")),
        ("    def later():\n        return model(x_val)\n    return later\n", None),
    ],
    ids=[
        "update-then-return",
        "updates-metrics-assign",
        "print-log-summary",
        "model-again",
        "predict",
        "training-keyword",
        "unknown-callee",
        "imported-helper",
        "return-value-runs-model",
        "del-first",
        "set-none-first",
        "model-under-if",
        "rebound-by-next-with",
        "yield",
        "definition-does-not-run",
    ],
)
def test_significant_work_after_the_last_use(tail, expected):
    assert _held(STEP + tail) == expected


def test_assertions_are_idle_in_a_unit_test():
    source = textwrap.dedent(
        """\
        class GradTest(tf.test.TestCase):
            def test_grads(self):
                model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
                x = tf.ones((2, 3))
                with tf.GradientTape(persistent=True) as t:
                    t.watch(x)
                    y = model(x)
                gx = t.gradient(y, x)
                gw = t.gradient(y, model.trainable_variables)
                self.assertAllClose(gx, model(x) * 0.0 + gx)
                np.testing.assert_allclose(gx.numpy(), gx.numpy())
                tf.debugging.assert_all_finite(gx, "finite")
                assert gw
        """
    )
    assert _held(source) is None


def test_several_persistent_blocks_in_sequence_rebind_the_name():
    block = (
        "    with tf.GradientTape(persistent=True) as t:\n        t.watch(x)\n        y = x * x\n"
        "    self.assertAllClose(t.gradient(y, x), 2 * x)\n"
        "    self.assertAllClose(t.gradient(y * y, x), 4 * x**3)\n"
    )
    source = "def test_powers(self, x):\n" + block * 3
    model = model_of(HEADER + source)
    assert [unreleased(model, tape) for tape in model.tapes] == [None, None, None]


def test_work_still_inside_the_tapes_own_block_does_not_count():
    source = (
        "def loss(model, x, xb):\n"
        "    with tf.GradientTape(persistent=True) as t:\n"
        "        t.watch(x)\n"
        "        u = model(x, training=True)\n"
        "        ux = t.gradient(u, x)\n"
        "        uxx = t.gradient(ux, x)\n"
        "        ub = model(xb, training=True)\n"
        "    return tf.reduce_mean(uxx) + tf.reduce_mean(ub)\n"
    )
    assert _held(source) is None
    after = source.replace("    return", "    v = model(xb, training=False)\n    return")
    assert _held(after) == ("work", "model(xb, training=False)")


def test_the_release_point_is_after_the_block_holding_the_last_use():
    source = STEP.replace(
        "    gx = t.gradient(l, x)\n", "    if y is not None:\n        gx = t.gradient(l, x)\n"
    )
    model = model_of(HEADER + source + "    v = model(x_val)\n")
    found = unreleased(model, model.tapes[0])
    assert found is not None and found.release_after is not None
    assert code(model, found.release_after).startswith("if y is not None:")


LOOP = (
    "def train(model, opt, ds, teacher):\n"
    "    for x, y in ds:\n"
    "{before}"
    "        with tf.GradientTape(persistent=True) as t:\n"
    "            p = model(x, training=True)\n"
    "            a = tf.reduce_mean(p - y)\n"
    "            b = tf.reduce_mean((p - y) ** 2)\n"
    "        ga = t.gradient(a, model.trainable_variables)\n"
    "        gb = t.gradient(b, model.trainable_variables)\n"
    "{rest}"
    "{after}"
)


@pytest.mark.parametrize(
    ("before", "rest", "after", "expected"),
    [
        ("", "        opt.apply_gradients(zip(ga, model.trainable_variables))\n", "", None),
        (
            "        soft = teacher(x, training=False)\n",
            "        opt.apply_gradients(zip(ga, model.trainable_variables))\n",
            "",
            ("work", "teacher(x, training=False)"),
        ),
        (
            "",
            "        if y is None:\n            continue\n",
            "    model.evaluate(ds)\n",
            ("work", "model.evaluate(ds)"),
        ),
        (
            "        t = None\n        soft = teacher(x, training=False)\n",
            "",
            "",
            None,
        ),
        (
            "        soft = teacher(x, training=False)\n",
            "        del t\n",
            "",
            None,
        ),
    ],
    ids=[
        "update-only",
        "next-iteration-runs-teacher-first",
        "after-the-loop",
        "set-none-before-next-work",
        "del-in-body",
    ],
)
def test_loop_body_counts_the_next_iteration_until_the_creation(before, rest, after, expected):
    assert _held(LOOP.format(before=before, rest=rest, after=after)) == expected


def test_while_test_runs_before_the_next_creation():
    source = (
        "def train(model, x, y):\n"
        "    while tf.reduce_mean(model(x, training=False)) > 0.1:\n"
        "        with tf.GradientTape(persistent=True) as t:\n"
        "            p = model(x)\n"
        "        g1 = t.gradient(p, x)\n"
        "        g2 = t.gradient(p, model.trainable_variables)\n"
    )
    assert _held(source) == ("work", "model(x, training=False)")


def test_helper_of_the_file_that_runs_a_model_is_significant():
    source = (
        "model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n"
        "def evaluate(ds):\n"
        "    return [float(tf.reduce_mean(model(x))) for x in ds]\n"
        "def log(value):\n"
        "    print(value)\n"
        "def step(x, y, val_ds):\n"
        "    with tf.GradientTape(persistent=True) as t:\n"
        "        t.watch(x)\n"
        "        p = model(x)\n"
        "    g = t.gradient(p, model.trainable_variables)\n"
        "    gx = t.gradient(p, x)\n"
        "    log(gx)\n"
        "{call}"
    )
    assert _held(source.format(call="    return g\n")) is None
    assert _held(source.format(call="    v = evaluate(val_ds)\n")) == ("work", "evaluate(val_ds)")


def test_recursive_helpers_terminate():
    source = (
        "def ping(n):\n    return pong(n - 1)\n"
        "def pong(n):\n    return ping(n)\n" + STEP + "    ping(3)\n"
    )
    assert _held(source) is None


def _module(source: str, *, notebook: bool) -> tuple[str, str | None] | None:
    model = build_model(cst.parse_module(HEADER + source), is_notebook=notebook)
    found = unreleased(model, model.tapes[0])
    if found is None:
        return None
    return found.why, code(model, found.work) if found.work is not None else None


MODULE = (
    "model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n"
    "x = tf.constant(np.load('inputs.npy'))\n"
    "with tf.GradientTape(persistent=True) as tape:\n"
    "    tape.watch(x)\n"
    "    y = model(x)\n"
    "gx = tape.gradient(y, x)\n"
    "gw = tape.gradient(y, model.trainable_variables)\n"
    "print(gx, gw)\n"
)


def test_module_scope_script_and_notebook():
    assert _module(MODULE, notebook=False) is None
    assert _module(MODULE, notebook=True) == ("notebook", None)
    fit = MODULE + "model.fit(x, x, epochs=3)\n"
    assert _module(fit, notebook=False) == ("work", "model.fit(x, x, epochs=3)")
    rebound = MODULE + "with tf.GradientTape() as tape:\n    z = model(x)\n"
    assert _module(rebound, notebook=True) is None


TOY = (
    "{inputs}"
    "with tf.GradientTape(persistent=True) as tape:\n"
    "    tape.watch(x)\n"
    "    y = layer(x) * w\n"
    "gx = tape.gradient(y, x)\n"
    "gw = tape.gradient(y, w)\n"
    "layer(x)\n"
)


@pytest.mark.parametrize(
    ("inputs", "toy"),
    [
        ("x = tf.random.normal([7, 5])\nw = tf.Variable(2.0)\n", True),
        ("x = tf.constant([[1., 2., 3.]])\nw = tf.Variable(tf.random.normal((3, 2)))\n", True),
        ("x = np.random.rand(4, 2)\nw = tf.Variable([1.0, -1.0])\n", True),
        ("x0 = [[1., 2.]]\nx = tf.constant(x0) * 2.0\nw = tf.Variable(0.5)\n", True),
        ("x = tf.random.normal([64, 224, 224, 3])\nw = tf.Variable(2.0)\n", False),
        ("x = tf.constant(np.linspace(0.0, 1.0, 50))\nw = tf.Variable(2.0)\n", False),
        ("x = next(batches)\nw = tf.Variable(2.0)\n", False),
        ("x = tf.random.normal([7, 5])\nw = load_weights()\n", False),
    ],
    ids=[
        "random-of-written-shape",
        "literal-data",
        "numpy-random-dims",
        "arithmetic-on-toys",
        "too-many-elements",
        "a-grid-is-not-a-toy",
        "data-from-an-iterator",
        "unknown-origin",
    ],
)
def test_a_tape_over_toy_values_holds_nothing_worth_releasing(inputs, toy):
    source = "layer = tf.keras.layers.Dense(4)\n" + TOY.format(inputs=inputs)
    expected = None if toy else ("work", "layer(x)")
    assert _module(source, notebook=True) == expected
