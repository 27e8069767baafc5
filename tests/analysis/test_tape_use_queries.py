"""Gradients taken inside their own tape's block, non-persistent tapes asked twice, and
work in a tape's block that does not depend on what the tape watches."""

import pytest
from tapelint.rules.tape_life._higher_order import gradient_inside_own_block, in_block_cost
from tapelint.rules.tape_life._reuse import reused_calls
from tapelint.rules.tape_life._unrelated import unrelated_work

from tapelint.semantic import Tri
from tests.analysis.helpers import code, model_of

HEADER = "import tensorflow as tf\nimport numpy as np\n"


def _inside(body: str) -> list[Tri]:
    model = model_of(HEADER + body)
    return [gradient_inside_own_block(model, call) for call in model.gradient_calls]


@pytest.mark.parametrize(
    ("body", "answers"),
    [
        (
            "def step(x):\n    with tf.GradientTape() as t:\n        l = f(m(x))\n"
            "        g = t.gradient(l, m.trainable_variables)\n"
            "    opt.apply_gradients(zip(g, m.trainable_variables))\n",
            [Tri.YES],
        ),
        (
            "def step(x):\n    with tf.GradientTape() as t:\n        l = f(m(x))\n"
            "    g = t.gradient(l, m.trainable_variables)\n",
            [Tri.NO],
        ),
        (
            "def step(x):\n    with tf.GradientTape() as t:\n        l = f(m(x))\n"
            "        with t.stop_recording():\n            g = t.gradient(l, v)\n"
            "    print(g)\n",
            [Tri.NO],
        ),
        (
            "def d2(x):\n    with tf.GradientTape() as outer:\n        outer.watch(x)\n"
            "        with tf.GradientTape() as inner:\n            inner.watch(x)\n"
            "            y = x ** 3\n            dy = inner.gradient(y, x)\n"
            "    return outer.gradient(dy, x)\n",
            [Tri.NO, Tri.NO],
        ),
        (
            "def d2(x):\n    with tf.GradientTape(persistent=True) as t:\n        t.watch(x)\n"
            "        y = x ** 3\n        dy = t.gradient(y, x)\n        s = dy * 2\n"
            "    d2y = t.gradient(s, x)\n    del t\n    print(d2y)\n",
            [Tri.NO, Tri.NO],
        ),
        (
            "def d1(x):\n    with tf.GradientTape() as t:\n        t.watch(x)\n"
            "        y = x ** 3\n        dy = t.gradient(y, x)\n    return dy\n",
            [Tri.UNKNOWN],
        ),
        (
            "def d1(x, acc):\n    with tf.GradientTape() as outer:\n        outer.watch(x)\n"
            "        with tf.GradientTape() as t:\n            t.watch(x)\n            y = x ** 3\n"
            "            acc.append(t.gradient(y, x))\n"
            "    print(outer.gradient(tf.add_n(acc), x))\n",
            [Tri.UNKNOWN, Tri.NO],
        ),
        (
            "def step(x):\n    with tf.GradientTape(persistent=True) as t:\n        t.watch(x)\n"
            "        y = x * x\n        dy = t.gradient(y, x)\n        print(dy)\n",
            [Tri.YES],
        ),
        (
            "def gan(x):\n    with tf.GradientTape() as gt, tf.GradientTape() as dt:\n"
            "        gl, dl = losses(x)\n        gg = gt.gradient(gl, g.trainable_variables)\n"
            "        dg = dt.gradient(dl, d.trainable_variables)\n"
            "    go.apply_gradients(zip(gg, g.trainable_variables))\n"
            "    do.apply_gradients(zip(dg, d.trainable_variables))\n",
            [Tri.YES, Tri.YES],
        ),
        (
            "def pen(x):\n    with tf.GradientTape() as outer, tf.GradientTape() as inner:\n"
            "        inner.watch(x)\n        y = critic(x)\n        g = inner.gradient(y, x)\n"
            "        gp = tf.reduce_mean((tf.norm(g) - 1.0) ** 2)\n"
            "    return outer.gradient(gp, critic.trainable_variables)\n",
            [Tri.NO, Tri.NO],
        ),
        (
            "def acc(x, sums):\n    with tf.GradientTape() as t:\n        l = f(m(x))\n"
            "        gs = t.gradient(l, m.trainable_variables)\n"
            "        for s, g in zip(sums, gs):\n            s.assign_add(g)\n",
            [Tri.YES],
        ),
        (
            "def nth(x, n):\n    with tf.GradientTape(persistent=True) as t:\n"
            "        t.watch(x)\n        d = x ** 5\n        for _ in range(n):\n"
            "            d = t.gradient(d, x)\n    del t\n    print(d)\n",
            [Tri.NO],
        ),
    ],
    ids=[
        "inside-then-applied",
        "after-block",
        "stopped",
        "nested-higher-order",
        "persistent-differentiates-itself",
        "returned-to-caller",
        "appended-to-container",
        "persistent-printed",
        "two-tapes-one-with",
        "same-with-higher-order",
        "accumulated-into-variables",
        "iterated-derivative-in-loop",
    ],
)
def test_gradient_inside_own_block(body, answers):
    assert _inside(body) == answers


def _costs(body: str) -> list[tuple[str, ...] | None]:
    """Per gradient call: None, or what the in-block call costs with its evidence (the
    recording tape; the later call's target and the value it misses)."""
    model = model_of(HEADER + body)
    answers: list[tuple[str, ...] | None] = []
    for call in model.gradient_calls:
        cost = in_block_cost(model, call)
        if cost is None:
            answers.append(None)
        elif cost.kind == "recorded":
            answers.append((cost.kind, cost.recorder.name))
        elif cost.kind == "unrecorded":
            target = code(model, cost.later.node.args[0].value)
            again = "itself" if cost.later is call else "later"
            answers.append((cost.kind, again, target, cost.needed.name))
        else:
            answers.append((cost.kind,))
    return answers


@pytest.mark.parametrize(
    ("body", "answers"),
    [
        (
            "def step(x):\n    with tf.GradientTape() as t:\n        l = f(m(x))\n"
            "        g = t.gradient(l, m.trainable_variables)\n"
            "        opt.apply_gradients(zip(g, m.trainable_variables))\n",
            [None],
        ),
        (
            "def step(x):\n    with tf.GradientTape() as t:\n        l = f(m(x))\n"
            "        g = t.gradient(l, m.trainable_variables)\n"
            "        acc = tf.reduce_mean(m(x))\n        n = tf.linalg.global_norm(g)\n"
            "    opt.apply_gradients(zip(g, m.trainable_variables))\n    print(acc, n)\n",
            [None],
        ),
        (
            "def step(x):\n    with tf.GradientTape(persistent=True) as t:\n        t.watch(x)\n"
            "        y = x * x\n        dy = t.gradient(y, x)\n        print(dy)\n",
            [("persistent",)],
        ),
        (
            "def gan(x):\n    with tf.GradientTape() as gt, tf.GradientTape() as dt:\n"
            "        gl, dl = losses(x)\n        gg = gt.gradient(gl, g.trainable_variables)\n"
            "        dg = dt.gradient(dl, d.trainable_variables)\n"
            "    go.apply_gradients(zip(gg, g.trainable_variables))\n"
            "    do.apply_gradients(zip(dg, d.trainable_variables))\n",
            [("recorded", "dt"), None],
        ),
        (
            "@tf.function\ndef gan(x):\n    with tf.GradientTape() as gt, tf.GradientTape() as dt:\n"
            "        gl, dl = losses(x)\n        gg = gt.gradient(gl, g.trainable_variables)\n"
            "        dg = dt.gradient(dl, d.trainable_variables)\n"
            "    go.apply_gradients(zip(gg, g.trainable_variables))\n"
            "    do.apply_gradients(zip(dg, d.trainable_variables))\n",
            [None, None],
        ),
        (
            "def gan(x):\n    with tf.GradientTape() as gt, "
            "tf.GradientTape(watch_accessed_variables=False) as dt:\n"
            "        gl, dl = losses(x)\n        gg = gt.gradient(gl, g.trainable_variables)\n"
            "    print(gg, dt.gradient(dl, x))\n",
            [None, None],
        ),
        (
            "def step(x):\n    with tf.GradientTape() as t:\n        t.watch(x)\n"
            "        p = m(x)\n        gx = t.gradient(p, x)\n"
            "        pen = tf.reduce_mean(gx ** 2)\n        l = f(p) + pen\n"
            "    g = t.gradient(l, m.trainable_variables)\n    print(g)\n",
            [("unrecorded", "later", "l", "pen"), None],
        ),
        (
            "x = tf.constant(1.0)\nwith tf.GradientTape() as t:\n    t.watch(x)\n"
            "    y = x ** 3\n    dy = t.gradient(y, x)\nd2y = t.gradient(dy, x)\nprint(d2y)\n",
            [("unrecorded", "later", "dy", "dy"), None],
        ),
        (
            "def fit(x, n):\n    with tf.GradientTape() as t:\n        for _ in range(n):\n"
            "            l = f(m(x))\n            g = t.gradient(l, m.trainable_variables)\n"
            "            opt.apply_gradients(zip(g, m.trainable_variables))\n",
            [("unrecorded", "itself", "l", "l")],
        ),
        (
            "x = tf.constant(2.0)\nt = tf.GradientTape()\nwith t:\n    t.watch(x)\n"
            "    a = x * x\n    ga = t.gradient(a, x)\n    b = a * x\n"
            "with t:\n    t.watch(x)\n    c = b * x\ngc = t.gradient(c, x)\nprint(ga, gc)\n",
            [("unrecorded", "later", "c", "b"), None],
        ),
        (
            "def step(x, flag):\n    with tf.GradientTape(persistent=flag) as t:\n"
            "        l = f(m(x))\n        g = t.gradient(l, m.trainable_variables)\n"
            "    opt.apply_gradients(zip(g, m.trainable_variables))\n",
            [None],
        ),
    ],
    ids=[
        "non-persistent-applied-in-block",
        "non-persistent-metrics-after-call",
        "persistent-printed",
        "other-tape-of-the-same-with-records-it",
        "other-tape-records-only-while-tracing",
        "other-tape-watches-nothing-accessed",
        "later-call-needs-penalty",
        "second-derivative-on-one-tape",
        "loop-inside-the-block",
        "re-entered-tape-misses-ops",
        "persistence-unknown-nothing-needed",
    ],
)
def test_in_block_cost(body, answers):
    assert _costs(body) == answers


def _reused(body: str) -> list[tuple[str, str]]:
    model = model_of(HEADER + body)
    return [
        (code(model, reuse.call.node), reuse.how)
        for tape in model.tapes
        for reuse in reused_calls(model, tape)
    ]


WITH = "with tf.GradientTape() as t:\n    y = f(x)\n"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (WITH + "a = t.gradient(y, x)\nb = t.gradient(y, w)\n", [("t.gradient(y, w)", "sequence")]),
        (
            WITH + "a = t.gradient(y, x)\nb = t.gradient(y, w)\nc = t.gradient(y, v)\n",
            [("t.gradient(y, w)", "sequence")],
        ),
        (
            WITH + "a = t.gradient(y, x)\nif c:\n    b = t.gradient(y, w)\nd = t.gradient(y, v)\n",
            [("t.gradient(y, w)", "sequence"), ("t.gradient(y, v)", "sequence")],
        ),
        (WITH + "if c:\n    a = t.gradient(y, x)\nelse:\n    a = t.gradient(y, w)\n", []),
        (WITH + "for v in vs:\n    g = t.gradient(y, v)\n", [("t.gradient(y, v)", "loop")]),
        (
            WITH + "for v in vs:\n    g = t.gradient(y, v)\n    h = t.gradient(y, w)\n",
            [("t.gradient(y, w)", "sequence")],
        ),
        (
            WITH + "gs = [t.gradient(y, v) for v in vs]\n",
            [("t.gradient(y, v)", "comprehension")],
        ),
        (
            "for b in data:\n    with tf.GradientTape() as t:\n        y = f(b)\n"
            "    g = t.gradient(y, x)\n",
            [],
        ),
        (
            "t = tf.GradientTape()\nfor b in data:\n    with t:\n        y = f(b)\n"
            "    g = t.gradient(y, x)\n",
            [],
        ),
        (
            "with tf.GradientTape(persistent=True) as t:\n    y = f(x)\n"
            "a = t.gradient(y, x)\nb = t.gradient(y, w)\n",
            [],
        ),
        (
            "with tf.GradientTape(persistent=p) as t:\n    y = f(x)\n"
            "a = t.gradient(y, x)\nb = t.gradient(y, w)\n",
            [],
        ),
        (WITH + "a = t.gradient(y, x)\nb = t.jacobian(y, w)\n", [("t.jacobian(y, w)", "sequence")]),
        (
            WITH + "try:\n    a = t.gradient(y, x)\nexcept ValueError:\n"
            "    a = t.gradient(y, x, unconnected_gradients='zero')\n",
            [],
        ),
    ],
    ids=[
        "two",
        "three-reports-the-second",
        "branch-then-third",
        "exclusive-branches",
        "loop",
        "two-in-loop",
        "comprehension",
        "tape-per-iteration",
        "entered-per-iteration",
        "persistent",
        "persistent-unknown",
        "jacobian-after-gradient",
        "fallback-in-except",
    ],
)
def test_reused_calls(body, expected):
    assert _reused(body) == expected


def _unrelated(body: str) -> list[str]:
    model = model_of(HEADER + body)
    found = []
    for block in {block: None for tape in model.tapes for block in tape.blocks}:
        statement = unrelated_work(model, block)
        if statement is not None:
            found.append(code(model, statement))
    return found


STEP = "def step(model, x, y):\n    with tf.GradientTape() as tape:\n"
END = "    grads = tape.gradient(loss, model.trainable_variables)\n"


@pytest.mark.parametrize(
    ("inside", "expected"),
    [
        ("x = tf.image.random_flip_left_right(x)\n", ["x = tf.image.random_flip_left_right(x)"]),
        ("y1 = tf.one_hot(y, 10)\n", ["y1 = tf.one_hot(y, 10)"]),
        ("n = tf.random.normal([BATCH, 8])\n", ["n = tf.random.normal([BATCH, 8])"]),
        ("xb, yb = next(it)\n", ["xb, yb = next(it)"]),
        ("p = model(x, training=True)\n", []),
        ("z = tf.nn.relu(model.layers[0](x))\n", []),
        ("s = tf.shape(x)[0]\n", []),
        ("acc = tf.zeros([4])\n", []),
        ("x = augment(x)\n", []),
        ("k = tf.matmul(x, W)\n", []),
        ("k = tf.matmul(x, self_w)\n", []),
        ("tf.print(x)\n", []),
        (
            "y2 = tf.reshape(y, [tf.shape(x)[0], -1])\n",
            ["y2 = tf.reshape(y, [tf.shape(x)[0], -1])"],
        ),
        ("y2 = tf.cast(y, model(x, training=True).dtype)\n", []),
        ("tf.debugging.assert_equal(tf.shape(x)[0], tf.shape(y)[0])\n", []),
        ("print('batch mean', tf.reduce_mean(x))\n", []),
        (
            "tf.summary.histogram('inputs', tf.reshape(x, [-1]))\n",
            ["tf.summary.histogram('inputs', tf.reshape(x, [-1]))"],
        ),
    ],
    ids=[
        "preprocessing",
        "labels",
        "noise-module-constant",
        "data-loading",
        "model-call",
        "layer-call",
        "shape",
        "constant-accumulator",
        "unknown-function",
        "module-variable",
        "unresolved-name",
        "logging",
        "shape-of-data",
        "dtype-of-model-output",
        "assertion",
        "printing",
        "input-summary",
    ],
)
def test_unrelated_work(inside, expected):
    module = "BATCH = 32\nW = tf.Variable(tf.ones([3, 3]))\n" + STEP
    body = module + "        " + inside + "        loss = f(model(x, training=True), y)\n" + END
    assert _unrelated(body) == expected


def test_watching_the_inputs_turns_the_check_off():
    body = (
        STEP + "        tape.watch(x)\n        x2 = tf.image.resize(x, [8, 8])\n"
        "        loss = f(model(x2, training=True), y)\n" + END
    )
    assert _unrelated(body) == []


def test_a_gradient_source_is_not_unrelated_work():
    body = (
        "def step(x):\n    with tf.GradientTape() as tape:\n        z = tf.cast(x, tf.float32)\n"
        "        loss = tf.reduce_sum(z * z)\n    return tape.gradient(loss, z)\n"
    )
    assert _unrelated(body) == []


def test_work_under_stop_recording_is_not_reported():
    body = (
        STEP + "        with tape.stop_recording():\n            y1 = tf.one_hot(y, 10)\n"
        "        loss = f(model(x, training=True), y1)\n" + END
    )
    assert _unrelated(body) == []


def test_a_parameter_that_is_a_gradient_source_is_watched():
    body = (
        "def step(w, x):\n    with tf.GradientTape() as tape:\n        w2 = tf.square(w)\n"
        "        loss = tf.reduce_sum(w2 * x)\n    return tape.gradient(loss, [w])\n"
    )
    assert _unrelated(body) == []


def test_a_value_rebound_from_itself_in_a_loop_is_still_data():
    body = (
        "for x, y in zip(xs, ys):\n    with tf.GradientTape() as tape:\n"
        "        x = tf.math.l2_normalize(x, axis=1)\n        loss = f(model(x, training=True), y)\n"
        "    grads = tape.gradient(loss, model.trainable_variables)\n"
    )
    module = (
        "xs = np.split(np.random.rand(64, 4).astype('float32'), 4)\nys = np.split(np.ones(64), 4)\n"
    )
    assert _unrelated(module + body) == ["x = tf.math.l2_normalize(x, axis=1)"]


def test_a_value_feeding_a_loop_of_model_outputs_is_not_data():
    body = (
        "def step(x):\n    h = x\n    with tf.GradientTape() as tape:\n"
        "        for layer in layers:\n            h = tf.nn.relu(layer(h))\n"
        "        z = tf.square(h)\n        loss = tf.reduce_sum(z)\n"
        "    return tape.gradient(loss, model.trainable_variables)\n"
    )
    assert _unrelated(body) == []


def test_work_on_a_source_of_the_other_tape_in_one_with_is_related():
    body = (
        "def step(w, x):\n    with tf.GradientTape() as gt, tf.GradientTape() as dt:\n"
        "        w2 = tf.square(w)\n        gl = f(model(x, training=True))\n"
        "        dl = tf.reduce_sum(w2)\n"
        "    a = gt.gradient(gl, model.trainable_variables)\n    b = dt.gradient(dl, [w])\n"
        "    return a, b\n"
    )
    assert _unrelated(body) == []


def test_work_tied_to_a_loop_inside_the_block_is_not_reported():
    # Teacher forcing: the next decoder input is a slice of the targets at the loop index,
    # computed between the watched steps of the loop; it cannot move before the block.
    body = (
        STEP + "        h = model.init(x)\n        inp = tf.zeros([4, 1])\n        loss = 0.0\n"
        "        for t in range(1, 5):\n"
        "            out, h = model.dec(inp, h, training=True)\n"
        "            loss += f(out, y[:, t])\n"
        "            inp = tf.expand_dims(y[:, t], 1)\n" + END
    )
    assert _unrelated(body) == []


def test_work_in_a_loop_that_ignores_the_loop_is_still_reported():
    body = (
        STEP + "        loss = 0.0\n"
        "        for t in range(4):\n"
        "            y1 = tf.one_hot(y, 10)\n"
        "            loss += f(model(x, training=True), y1)\n" + END
    )
    assert _unrelated(body) == ["y1 = tf.one_hot(y, 10)"]


@pytest.mark.parametrize(
    ("body", "answers"),
    [
        (
            "def step(q, x):\n    with tf.GradientTape() as t:\n        l = f(q.forward(x))\n"
            "        g = t.gradient(l, q.trainables)\n"
            "    q.opt.apply_grads(zip(g, q.trainables))\n",
            [Tri.YES],
        ),
        (
            "def step(q, x):\n    with tf.GradientTape() as outer:\n"
            "        with tf.GradientTape() as t:\n            l = f(q.forward(x))\n"
            "            g = t.gradient(l, q.trainables)\n"
            "        q.apply_fast_weights(g)\n        l2 = f(q.forward(x))\n"
            "    return outer.gradient(l2, q.trainables)\n",
            [Tri.UNKNOWN, Tri.NO],
        ),
        (
            "def step(q, x):\n    with tf.GradientTape() as t:\n        l = f(q.forward(x))\n"
            "        g = t.gradient(l, q.trainables)\n"
            "    q.store(g)\n",
            [Tri.UNKNOWN],
        ),
    ],
    ids=["own-applier", "own-applier-under-outer-tape", "unknown-method"],
)
def test_a_discarded_apply_method_ends_the_gradients(body, answers):
    assert _inside(body) == answers
