"""The questions rules ask: recorded targets, NumPy on the path, gradient flows."""

import pytest
from tapelint.rules.tape_life._recording import target_recorded

from tapelint.semantic import Tri
from tapelint.semantic.flow.dataflow import numpy_on_path
from tapelint.semantic.gradient_routes.gradients import applied_gradients, handles_none
from tests.analysis.helpers import code, model_of

HEADER = "import tensorflow as tf\nimport numpy as np\n"


def _recorded(body: str) -> Tri:
    model = model_of(HEADER + body)
    (call,) = model.gradient_calls
    return target_recorded(model, call).answer


@pytest.mark.parametrize(
    ("body", "answer"),
    [
        ("with tf.GradientTape() as t:\n    l = f(m(x))\ng = t.gradient(l, v)\n", Tri.YES),
        ("with tf.GradientTape() as t:\n    p = m(x)\nl = f(p)\ng = t.gradient(l, v)\n", Tri.NO),
        ("with tf.GradientTape() as t:\n    p = m(x)\ng = t.gradient(p * 2, v)\n", Tri.NO),
        ("l = f(x)\nwith tf.GradientTape() as t:\n    p = m(x)\ng = t.gradient(l, v)\n", Tri.NO),
        (
            "l = 0.0\nwith tf.GradientTape() as t:\n    for b in bs:\n        l += f(b)\n"
            "g = t.gradient(l, v)\n",
            Tri.UNKNOWN,
        ),
        ("l = 0.0\nwith tf.GradientTape() as t:\n    l += f(x)\ng = t.gradient(l, v)\n", Tri.YES),
        (
            "with tf.GradientTape() as t:\n    l = f(x)\ntotal = l\ng = t.gradient(total, v)\n",
            Tri.YES,
        ),
        (
            "with tf.GradientTape() as t:\n    out = f(x)\ng = t.gradient(out['loss'], v)\n",
            Tri.UNKNOWN,
        ),
        (
            "with tf.GradientTape() as t:\n    p = m(x)\n    with t.stop_recording():\n"
            "        l = f(p)\ng = t.gradient(l, v)\n",
            Tri.NO,
        ),
        (
            "def s(l):\n    with tf.GradientTape() as t:\n        p = m(x)\n    return t.gradient(l, v)\n",
            Tri.UNKNOWN,
        ),
        # The gradient of a watched source with respect to itself is ones, not None.
        (
            "x = c()\nwith tf.GradientTape() as t:\n    t.watch(x)\ng = t.gradient(x, x)\n",
            Tri.UNKNOWN,
        ),
        (
            "x = c()\nwith tf.GradientTape() as t:\n    t.watch(x)\ny = x\ng = t.gradient(y, z)\n",
            Tri.UNKNOWN,
        ),
        (
            "x = c()\nwith tf.GradientTape() as t:\n    t.watch([x])\ng = t.gradient([x, x], z)\n",
            Tri.UNKNOWN,
        ),
        # Made from the watched source before the block: not the source itself.
        (
            "x = c()\ny = x * 2\nwith tf.GradientTape() as t:\n    t.watch(x)\ng = t.gradient(y, x)\n",
            Tri.NO,
        ),
    ],
    ids=[
        "inside",
        "after",
        "expression-after",
        "before",
        "accumulated-maybe",
        "accumulated",
        "alias",
        "subscript",
        "stopped",
        "parameter",
        "source-itself",
        "alias-of-watched",
        "watched-twice",
        "made-from-source-before",
    ],
)
def test_target_recorded(body, answer):
    assert _recorded(body) is answer


@pytest.mark.parametrize(
    ("body", "answer", "when"),
    [
        (  # a number, then `+=` in a loop after the block: never recorded on any path
            "with tf.GradientTape() as t:\n    ls = [f(b) for b in bs]\ntotal = 0.0\n"
            "for l in ls:\n    total += 0.5 * l\ng = t.gradient(total, v)\n",
            Tri.NO,
            "after",
        ),
        (  # `total = total + l` after each block of a tape made per iteration
            "total = 0\nfor b in bs:\n    with tf.GradientTape() as t:\n        l = f(b)\n"
            "    total = total + l\ng = t.gradient(total, v)\n",
            Tri.NO,
            "after",
        ),
        (  # the same `+=` inside the block is recorded on every path that runs it
            "total = 0.0\nwith tf.GradientTape() as t:\n    for b in bs:\n"
            "        total += f(b)\ng = t.gradient(total, v)\n",
            Tri.UNKNOWN,
            None,
        ),
        (  # recorded on one path, a plain alias on the other: nothing is shown
            "with tf.GradientTape() as t:\n    l = f(x)\ntotal = l\nif aux:\n"
            "    total = total + 0.1 * f(y)\ng = t.gradient(total, v)\n",
            Tri.UNKNOWN,
            None,
        ),
        (  # only a number reaches the target: not a question of recording
            "with tf.GradientTape() as t:\n    l = f(x)\ntotal = 0.0\ng = t.gradient(total, v)\n",
            Tri.UNKNOWN,
            None,
        ),
    ],
    ids=["loop-after-block", "tape-per-iteration", "loop-in-block", "one-path", "number-only"],
)
def test_accumulation_after_the_block(body, answer, when):
    model = model_of(HEADER + body)
    (call,) = model.gradient_calls
    found = target_recorded(model, call)
    assert found.answer is answer
    assert found.when == when


@pytest.mark.parametrize(
    ("body", "answer"),
    [
        (
            "with tf.GradientTape() as t:\n    r = f(x)\n"
            "g = t.gradient(tf.cast(r, dtype=x.dtype), x)\n",
            Tri.UNKNOWN,
        ),
        (
            "with tf.GradientTape() as t:\n    r = f(x)\nc = tf.cast(r, tf.float32)\n"
            "g = t.gradient(c, x)\n",
            Tri.UNKNOWN,
        ),
        (
            "with tf.GradientTape() as t:\n    r = f(x)\ng = t.gradient(tf.convert_to_tensor(r), x)\n",
            Tri.UNKNOWN,
        ),
        (
            "with tf.GradientTape() as t:\n    p = m(x)\ng = t.gradient(tf.cast(p * 2, tf.float64), v)\n",
            Tri.NO,
        ),
        (
            "with tf.GradientTape() as t:\n    p = m(x)\nl = f(p)\ng = t.gradient(tf.cast(l, tf.float64), v)\n",
            Tri.NO,
        ),
        (
            "with tf.GradientTape() as t:\n    p = m(x)\nc = tf.cast(f(p), tf.float64)\n"
            "g = t.gradient(c, v)\n",
            Tri.NO,
        ),
        (
            "with tf.GradientTape() as t:\n    l = tf.cast(f(x), tf.float32)\ng = t.gradient(l, v)\n",
            Tri.YES,
        ),
    ],
    ids=[
        "cast-in-call",
        "cast-assigned",
        "convert",
        "cast-of-expression-after",
        "cast-of-value-computed-after",
        "assigned-cast-of-expression-after",
        "cast-inside",
    ],
)
def test_a_cast_after_the_block_is_its_argument_when_the_dtype_matches(body, answer):
    """`tf.cast` (and `tf.convert_to_tensor`) return their argument when nothing needs
    converting: a cast of a recorded value may be that value, one of an unrecorded value is
    not recorded either way."""
    assert _recorded(body) is answer


def _numpy(body: str) -> list[str]:
    model = model_of(HEADER + body)
    found = []
    for call in model.gradient_calls:
        found += [code(model, n.node) for n in numpy_on_path(model, call)]
    return found


def test_numpy_on_model_output_feeding_the_loss_is_found():
    body = (
        "with tf.GradientTape() as t:\n    p = model(x)\n    l = tf.reduce_mean(np.square(p))\n"
        "g = t.gradient(l, model.trainable_variables)\n"
    )
    assert _numpy(body) == ["np.square(p)"]


@pytest.mark.parametrize(
    "inside",
    [
        "    xs = np.asarray(x)\n    l = tf.reduce_mean(model(xs))\n",
        "    p = model(x)\n    print(p.numpy())\n    l = tf.reduce_mean(p)\n",
        "    p = model(x)\n    n = int(tf.shape(p)[0])\n    l = tf.reduce_sum(p) / n\n",
        "    p = model(x)\n    c = np.mean(tf.stop_gradient(p))\n    l = tf.reduce_mean(p) * c\n",
        "    p = model(x)\n    if float(tf.reduce_max(p)) > 1:\n        p = p / 2\n    l = tf.reduce_mean(p)\n",
        "    p = model(x)\n    l = tf.unstack(p)[int(tf.argmax(p[0]))]\n",
    ],
    ids=["input-data", "logging", "shape", "stop-gradient", "control-only", "index"],
)
def test_numpy_off_the_differentiable_path_is_not_found(inside):
    body = (
        "with tf.GradientTape() as t:\n" + inside + "g = t.gradient(l, model.trainable_variables)\n"
    )
    assert _numpy(body) == []


def test_watched_tensor_through_numpy_is_found():
    body = (
        "with tf.GradientTape() as t:\n    t.watch(x)\n    y = float(x) * 2.0\n"
        "g = t.gradient(y, x)\n"
    )
    assert _numpy(body) == ["float(x)"]


def test_numpy_on_a_value_computed_before_the_tape_recorded_is_not_found():
    """The environment's state comes from an action chosen with an earlier model output,
    computed before the tape's block: the tape recorded none of that."""
    body = (
        "s = env.reset()\n"
        "for step in range(99):\n"
        "    q = net(np.asarray([one_hot(s)])).numpy()\n"
        "    a = np.argmax(q, 1)\n"
        "    s1, r = env.step(a[0])\n"
        "    with tf.GradientTape() as t:\n"
        "        qs = net(np.asarray([one_hot(s)], dtype=np.float32))\n"
        "        l = tf.reduce_sum(tf.square(target - qs))\n"
        "    g = t.gradient(l, net.trainable_weights)\n"
        "    s = s1\n"
    )
    assert _numpy(body) == []
    inside = body.replace(
        "    with tf.GradientTape() as t:\n",
        "    with tf.GradientTape() as t:\n        q = net(x)\n        a = np.argmax(q.numpy(), 1)\n        s = state_of(a)\n",
    )
    assert sorted(_numpy(inside)) == ["np.asarray([one_hot(s)], dtype=np.float32)", "q.numpy()"]


def test_numpy_on_a_value_computed_under_stop_recording_is_not_found():
    body = (
        "with tf.GradientTape() as t:\n    p = model(x)\n    with t.stop_recording():\n"
        "        w = model(x2)\n    l = tf.reduce_mean(p * np.asarray(w))\n"
        "g = t.gradient(l, model.trainable_variables)\n"
    )
    assert _numpy(body) == []


def _apply_flow(body: str):
    model = model_of(HEADER + body)
    (apply,) = model.apply_calls
    flow = applied_gradients(model, apply)
    return model, flow


def test_gradients_followed_through_zip_and_clip_by_global_norm():
    model, flow = _apply_flow(
        "with tf.GradientTape() as t:\n    l = f(m(x))\ng = t.gradient(l, vs)\n"
        "g, _ = tf.clip_by_global_norm(g, 1.0)\nopt.apply_gradients(list(zip(g, vs)))\n"
    )
    assert len(flow.origins) == 1 and not flow.opaque
    assert not handles_none(model, flow)


@pytest.mark.parametrize(
    ("between", "raw", "handled"),
    [
        # The filter ends the path: nothing raw reaches the apply (and it is not opaque).
        (
            "pairs = [(a, b) for a, b in zip(g, vs) if a is not None]\nopt.apply_gradients(pairs)\n",
            False,
            False,
        ),
        (
            "if any(a is None for a in g):\n    raise ValueError('x')\nopt.apply_gradients(zip(g, vs))\n",
            True,
            True,
        ),
        (
            "for a, b in zip(g, vs):\n    if a is None:\n        print(b.name)\nopt.apply_gradients(zip(g, vs))\n",
            True,
            True,
        ),
        # An unknown helper: not followed.
        ("opt.apply_gradients(zip(helper(g), vs))\n", False, False),
        # A check after the apply guards nothing the apply received.
        (
            "opt.apply_gradients(zip(g, vs))\nfor a in g:\n    if a is not None:\n        log(a)\n",
            True,
            False,
        ),
    ],
    ids=["filter", "check-raises", "loop-logs", "through-helper", "check-after"],
)
def test_none_handled_or_not_followed(between, raw, handled):
    model, flow = _apply_flow(
        "with tf.GradientTape() as t:\n    l = f(m(x))\ng = t.gradient(l, vs)\n" + between
    )
    assert flow.is_raw is raw
    if raw:
        assert len(flow.origins) == 1
        (apply,) = model.apply_calls
        assert handles_none(model, flow, apply.stmt) is handled


def test_unconnected_gradients_zero_handles_none():
    model, flow = _apply_flow(
        "with tf.GradientTape() as t:\n    l = f(m(x))\n"
        "g = t.gradient(l, vs, unconnected_gradients=tf.UnconnectedGradients.ZERO)\n"
        "opt.apply_gradients(zip(g, vs))\n"
    )
    assert flow.origins and handles_none(model, flow)


def test_nested_conversions_are_reported_once_at_the_innermost():
    body = (
        "with tf.GradientTape() as t:\n    p = model(x)\n    l = tf.reduce_mean(np.square(p.numpy() - y))\n"
        "g = t.gradient(l, model.trainable_variables)\n"
    )
    assert _numpy(body) == ["p.numpy()"]


def test_sub_models_of_a_watched_keras_model_are_watched():
    model = model_of(
        HEADER + "class VAE(tf.keras.Model):\n"
        "    def augment(self, x):\n        return x\n"
        "    def train_step(self, data):\n"
        "        with tf.GradientTape() as tape:\n"
        "            z = self.encoder(data)\n"
        "            a = np.asarray(self.augment(data))\n"
        "            loss = tf.reduce_mean(np.square(z)) + tf.reduce_mean(a)\n"
        "        return tape.gradient(loss, self.trainable_variables)\n"
    )
    (call,) = model.gradient_calls
    assert [code(model, n.node) for n in numpy_on_path(model, call)] == ["np.square(z)"]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("k = int(np.argmax(p.numpy()))\n    l = -tf.math.log(p[0, k])\n", []),
        ("k = np.argsort(p.numpy())[-3:]\n    l = -tf.reduce_sum(tf.gather(p[0], k))\n", []),
        ("k = np.argmax(p.numpy(), axis=1)\n    l = tf.reduce_sum(tf.one_hot(k, 10) * p)\n", []),
        ("k = p.numpy()\n    l = tf.reduce_sum(p[0, 0] * k)\n", ["p.numpy()"]),
    ],
    ids=["subscript-index", "gather-indices", "one-hot-indices", "value-not-index"],
)
def test_numpy_that_only_picks_an_index_is_not_on_the_path(line, expected):
    body = (
        "with tf.GradientTape() as t:\n    p = model(x)\n    "
        + line
        + "g = t.gradient(l, model.trainable_variables)\n"
    )
    assert _numpy(body) == expected


@pytest.mark.parametrize(
    ("prefix", "line", "expected"),
    [
        ("", "l = tf.reduce_sum(net.predict_on_batch(x))\n", ["net.predict_on_batch(x)"]),
        ("", "l = tf.reduce_sum(net.predict(x) - y)\n", ["net.predict(x)"]),
        ("", "l = tf.reduce_sum(other.predict(x) - net(x))\n", []),
        (
            "class Agent:\n    def predict(self, x):\n        return self.net(x)\n",
            "l = tf.reduce_sum(net.predict(x) - y)\n",
            [],
        ),
    ],
    ids=["predict-on-batch", "predict", "predict-of-a-model-not-differentiated", "own-predict"],
)
def test_keras_predict_on_the_differentiated_model_leaves_the_tape(prefix, line, expected):
    body = (
        prefix
        + "with tf.GradientTape() as t:\n    "
        + line
        + "g = t.gradient(l, net.trainable_variables)\n"
    )
    assert _numpy(body) == expected
