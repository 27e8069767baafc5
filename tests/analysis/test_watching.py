"""What a tape watches: plain-tensor sources, watch coverage, tapes that watch nothing, and
which objects are Keras models, layers and variables."""

from __future__ import annotations

import libcst as cst
import pytest
from tapelint.rules.watching._late_watch import sources_watched_too_late

from tapelint.semantic import Tri
from tapelint.semantic.flow.watching import (
    covers,
    is_plain_tensor,
    never_watched_call,
    source_parts,
    unwatched_sources,
    watch_calls,
    watched_argument,
)
from tapelint.semantic.keras.keras_objects import KerasObjects, all_variables_in_sources
from tests.analysis.helpers import code, model_of

HEADER = "import numpy as np\nimport tensorflow as tf\nimport keras\n"


def _gradient(body: str):
    model = model_of(HEADER + body)
    (call,) = model.gradient_calls
    return model, call


@pytest.mark.parametrize(
    ("definition", "answer"),
    [
        ("s = tf.constant(1.0)", Tri.YES),
        ("s = tf.convert_to_tensor(data)", Tri.YES),
        ("s = tf.random.normal((2, 3))", Tri.YES),
        ("s = tf.linspace(-1.0, 1.0, 9)[:, None]", Tri.YES),
        ("s = tf.reshape(tf.range(6.0), (2, 3))", Tri.YES),
        ("s = np.ones(3)", Tri.YES),
        ("c = tf.constant(1.0)\ns = (c - 2.0) * c", Tri.YES),
        ("s = tf.Variable(2.0) + 1.0", Tri.YES),
        ("c = tf.constant(1.0)\ns = c", Tri.YES),
        ("s = tf.Variable(1.0)", Tri.NO),
        ("s = load()", Tri.UNKNOWN),
        ("s = 2.0 * 3.0", Tri.UNKNOWN),
        ("s = tf.random.Generator.from_seed(1)", Tri.UNKNOWN),
        ("s = tf.constant(1.0) if flag else tf.Variable(1.0)", Tri.UNKNOWN),
        ("s = tf.constant(1.0)\nif flag:\n    s = tf.Variable(1.0)", Tri.UNKNOWN),
        ("def f(s):\n    return s", Tri.UNKNOWN),
    ],
)
def test_plain_tensor_defined_before_the_block(definition, answer):
    body = f"{definition}\nwith tf.GradientTape() as t:\n    y = g(s)\nd = t.gradient(y, s)\n"
    model, call = _gradient(body)
    (source,) = source_parts(call)
    assert is_plain_tensor(model, source, call.tape) is answer


@pytest.mark.parametrize(
    ("inside", "answer"),
    [
        ("s = tf.constant(1.0)", Tri.YES),
        ("s = tf.convert_to_tensor(v)", Tri.UNKNOWN),  # reading a variable is recorded
        ("s = x * 2.0", Tri.UNKNOWN),  # may derive from a watched value
    ],
)
def test_plain_tensor_defined_inside_the_block(inside, answer):
    body = f"x = tf.constant(1.0)\nwith tf.GradientTape() as t:\n    {inside}\n    y = s * s\n"
    model, call = _gradient(body + "d = t.gradient(y, s)\n")
    (source,) = source_parts(call)
    assert is_plain_tensor(model, source, call.tape) is answer


def test_global_rebinding_makes_a_name_unknown():
    body = (
        "s = tf.constant(1.0)\ndef reset():\n    global s\n    s = tf.Variable(0.0)\n"
        "with tf.GradientTape() as t:\n    y = s * s\nd = t.gradient(y, s)\n"
    )
    model, call = _gradient(body)
    assert is_plain_tensor(model, source_parts(call)[0], call.tape) is Tri.UNKNOWN


@pytest.mark.parametrize(
    ("prelude", "watched", "answer"),
    [
        ("", "s", Tri.YES),
        ("", "[a, s]", Tri.YES),
        ("", "(s,)", Tri.YES),
        ("pair = [a, s]\n", "pair", Tri.YES),
        ("alias = s\n", "alias", Tri.YES),
        ("b = tf.constant(0.0)\n", "b", Tri.NO),
        ("b = tf.Variable(0.0)\n", "[b]", Tri.NO),
        ("", "tf.nest.flatten(inputs)", Tri.UNKNOWN),
        ("", "inputs", Tri.UNKNOWN),
    ],
)
def test_watch_covers_the_source(prelude, watched, answer):
    body = (
        f"a = tf.constant(0.0)\ns = tf.constant(1.0)\n{prelude}"
        f"with tf.GradientTape() as t:\n    t.watch({watched})\n    y = s * a\n"
        "d = t.gradient(y, s)\n"
    )
    model, call = _gradient(body)
    (watch,) = watch_calls(model, call.tape)
    assert covers(model, watched_argument(watch), source_parts(call)[0]) is answer


def _unwatched(body: str) -> list[tuple[str, bool]]:
    model = model_of(HEADER + body)
    return [
        (u.source.value, u.numpy_array)
        for call in model.gradient_calls
        for u in unwatched_sources(model, call)
    ]


@pytest.mark.parametrize(
    ("definition", "numpy_array"),
    [("x = tf.constant(1.0)", False), ("x = np.ones(3)", True)],
)
def test_unwatched_plain_tensor_is_found(definition, numpy_array):
    body = f"{definition}\nwith tf.GradientTape() as t:\n    y = x * x\nd = t.gradient(y, x)\n"
    assert _unwatched(body) == [("x", numpy_array)]


def test_watch_of_something_else_does_not_cover_the_source():
    body = (
        "x = tf.constant(1.0)\nz = tf.constant(2.0)\nwith tf.GradientTape() as t:\n"
        "    t.watch(z)\n    y = x * z\nd = t.gradient(y, [x, z])\n"
    )
    assert _unwatched(body) == [("x", False)]


@pytest.mark.parametrize(
    "block",
    [
        "    t.watch(x)\n    y = x * x\n",  # watched first
        "    y = m(x, training=True)\n    t.watch(x)\n",  # watched after the use: still counts
        "    t.watch(inputs)\n    y = x * x\n",  # a watch this analysis cannot see into
        "    helper(t)\n    y = x * x\n",  # the tape escapes to a helper
    ],
    ids=["watched", "watched-after-use", "unknown-watch", "escapes"],
)
def test_watched_or_unknown_sources_are_not_found(block):
    body = f"x = tf.constant(1.0)\nwith tf.GradientTape() as t:\n{block}d = t.gradient(y, x)\n"
    assert _unwatched(body) == []


def test_only_the_differentiating_tape_watch_counts():
    body = (
        "x = tf.constant(1.0)\nwith tf.GradientTape() as outer:\n    outer.watch(x)\n"
        "    with tf.GradientTape() as inner:\n        y = x * x\n"
        "    dy = inner.gradient(y, x)\nd2 = outer.gradient(dy, x)\n"
    )
    assert _unwatched(body) == [("x", False)]


def _never_watched(body: str) -> bool:
    model = model_of(HEADER + body)
    (tape,) = model.tapes
    return never_watched_call(model, tape) is not None


@pytest.mark.parametrize(
    ("block", "sources", "found"),
    [
        ("    y = m(x, training=True)\n", "m.trainable_variables", True),
        ("    t.watch(x)\n    y = m(x, training=True)\n", "m.trainable_variables", True),
        ("    t.watch(w)\n    y = w * b\n", "b", True),
        ("    t.watch(w)\n    y = w * b\n", "[w, b]", False),
        ("    t.watch(m.trainable_variables)\n    y = m(x)\n", "m.trainable_variables", False),
        ("    t.watch(vs)\n    y = m(x)\n", "m.trainable_variables", False),  # vs unknown
        ("    t.watch(x)\n    h = tf.tanh(x)\n    y = h * h\n", "h", False),  # intermediate
        ("    y = x * x\n", "x", False),  # a plain tensor: TAP201's case
        ("    t.watch(w)\n    y = w * b\n", "pair", False),  # pair = [w, b] holds w
        ("    t.watch(w)\n    y = w * b\n", "same", False),  # same = w is w
        ("    t.watch(w)\n    y = m(x)\n", "m.trainable_variables", False),  # may hold w
        ("    t.watch(x)\n    y = w * b\n", "pair", True),  # a new tensor is neither
    ],
)
def test_tape_that_never_watches_its_sources(block, sources, found):
    body = (
        "x = tf.constant(1.0)\nw = tf.Variable(1.0)\nb = tf.Variable(2.0)\n"
        "pair = [w, b]\nsame = w\n"
        f"with tf.GradientTape(watch_accessed_variables=False) as t:\n{block}"
        f"d = t.gradient(y, {sources})\n"
    )
    assert _never_watched(body) is found


@pytest.mark.parametrize(
    ("watched", "found"),
    [
        ("x", True),  # a parameter the model is called on: data, not the model's variables
        ("[x, c]", True),
        ("mixed", True),  # `mixed = x + c`: an op's result is a tensor, never a variable
        ("same", False),  # `same = tf.cast(other, tf.float32)` may be `other` itself
        ("other", False),  # a parameter not fed to the model: it may hold its variables
        ("vs", False),  # `vs = [v.value for v in net.trainable_variables]`: not taken apart
        ("[x, other]", False),
    ],
)
def test_outer_tape_that_watches_only_inputs(watched, found):
    body = (
        "net = keras.Sequential([keras.layers.Dense(1)])\n"
        "def step(x, c, other):\n"
        "    mixed = x + c\n"
        "    same = tf.cast(other, tf.float32)\n"
        "    vs = [v.value for v in net.trainable_variables]\n"
        "    with tf.GradientTape(watch_accessed_variables=False) as outer:\n"
        f"        outer.watch({watched})\n"
        "        with tf.GradientTape() as inner:\n"
        "            inner.watch(x)\n"
        "            u = net(tf.concat([x, c], axis=1))\n"
        "        u_x = inner.gradient(u, x)\n"
        "        loss = tf.reduce_mean(u_x ** 2) + tf.reduce_mean(net(mixed))\n"
        "    return outer.gradient(loss, net.trainable_variables)\n"
    )
    model = model_of(HEADER + body)
    outer = next(t for t in model.tapes if t.name == "outer")
    assert (never_watched_call(model, outer) is not None) is found


def test_tape_with_automatic_watching_is_not_judged():
    body = "with tf.GradientTape() as t:\n    y = m(x)\nd = t.gradient(y, m.trainable_variables)\n"
    assert _never_watched(body) is False


def _probe(model) -> cst.BaseExpression:
    """The value bound to `probe` by the last statement."""
    (d,) = [d for d in model.defs_by_stmt[model.module.body[-1]] if d.name == "probe"]
    return d.value


KERAS_PRELUDE = (
    "model = tf.keras.Sequential([tf.keras.layers.Dense(2)])\n"
    "dense = keras.layers.Dense(3)\n"
    "functional = keras.Model(inputs, outputs)\n"
    "base = tf.keras.applications.ResNet50(weights=None)\n"
    "class Net(tf.keras.Model):\n    pass\n"
    "class Block(Net):\n    pass\n"
    "class Plain(tf.Module):\n    pass\n"
    "net = Block()\n"
    "plain = Plain()\n"
    "head = model.get_layer('dense')\n"
    "inp = keras.Input((3,))\n"
    "def build():\n    m = keras.Sequential([])\n    if wide:\n        return keras.Model(i, o)\n"
    "    return m\n"
    "def maybe():\n    if ok:\n        return keras.Sequential([])\n    return load(path)\n"
    "built = build()\n"
    "unsure = maybe()\n"
    "def annotated(m: tf.keras.Model, n: tf.Module):\n    return m, n\n"
)


@pytest.mark.parametrize(
    ("expr", "answer"),
    [
        ("model", Tri.YES),
        ("dense", Tri.YES),
        ("functional", Tri.YES),
        ("base", Tri.YES),
        ("net", Tri.YES),
        ("head", Tri.YES),
        ("model.layers[0]", Tri.YES),
        ("built", Tri.YES),
        ("plain", Tri.UNKNOWN),
        ("inp", Tri.UNKNOWN),
        ("unsure", Tri.UNKNOWN),
        ("unknown_param", Tri.UNKNOWN),
    ],
)
def test_keras_objects_are_known_by_how_they_were_made(expr, answer):
    model = model_of(HEADER + KERAS_PRELUDE + f"probe = {expr}\n")
    probe = _probe(model)
    assert KerasObjects(model).is_keras_object(probe) is answer


@pytest.mark.parametrize(
    ("expr", "answer"),
    [
        ("model.trainable_variables", Tri.YES),
        ("model.weights", Tri.YES),
        ("dense.kernel", Tri.YES),
        ("model.layers[-1].bias", Tri.YES),
        ("[dense.kernel, dense.bias]", Tri.YES),
        ("model.trainable_variables[:2]", Tri.YES),
        ("net.trainable_variables + dense.trainable_variables", Tri.YES),
        ("list(model.trainable_variables)", Tri.YES),
        ("[v for v in model.trainable_variables if 'kernel' in v.path]", Tri.YES),
        ("keras.Variable(1.0)", Tri.YES),
        ("dense.add_weight(shape=())", Tri.YES),
        ("[v.value for v in model.trainable_variables]", Tri.UNKNOWN),
        ("plain.trainable_variables", Tri.UNKNOWN),
        ("tf.Variable(1.0)", Tri.UNKNOWN),
        ("x", Tri.UNKNOWN),
    ],
)
def test_keras_variables(expr, answer):
    model = model_of(HEADER + KERAS_PRELUDE + f"probe = {expr}\n")
    probe = _probe(model)
    assert KerasObjects(model).holds_keras_variables(probe) is answer


def test_parameters_annotated_with_a_keras_class_are_keras_objects():
    model = model_of(HEADER + KERAS_PRELUDE)
    (function,) = [d.stmt for d in model.scope_defs[model.scopes[0]]["annotated"]]
    (returned,) = [s.body[0].value for s in function.body.body if isinstance(s.body[0], cst.Return)]
    m, n = (e.value for e in returned.elements)
    keras_objects = KerasObjects(model)
    assert keras_objects.is_keras_object(m) is Tri.YES
    assert keras_objects.is_keras_object(n) is Tri.UNKNOWN


def test_self_is_keras_only_in_a_keras_class_method():
    body = (
        "class Net(keras.Model):\n    def train_step(self, data):\n"
        "        with tf.GradientTape() as t:\n            y = self(data, training=True)\n"
        "        return t.gradient(y, self.variables)\n"
        "class Other(tf.Module):\n    def step(self, data):\n"
        "        with tf.GradientTape() as t:\n            y = self(data)\n"
        "        return t.gradient(y, self.variables)\n"
    )
    model = model_of(HEADER + body)
    keras_objects = KerasObjects(model)
    found = [
        code(model, node)
        for call in model.gradient_calls
        for node, _ in all_variables_in_sources(model, keras_objects, call)
    ]
    assert found == ["self.variables"]


def test_all_variables_through_lists_sums_and_names():
    body = (
        "enc = tf.keras.Sequential([])\ndec = tf.keras.Sequential([])\n"
        "params = enc.weights\n"
        "with tf.GradientTape() as t:\n    y = dec(enc(x, training=True), training=True)\n"
        "a = t.gradient(y, [enc.variables, dec.trainable_variables])\n"
    )
    for sources in (
        "[enc.variables, dec.trainable_variables]",
        "dec.trainable_variables + enc.weights",
        "params",
    ):
        model = model_of(HEADER + body.replace("[enc.variables, dec.trainable_variables]", sources))
        (call,) = model.gradient_calls
        found = [
            (code(model, node), code(model, attribute))
            for node, attribute in all_variables_in_sources(model, KerasObjects(model), call)
        ]
        assert len(found) == 1
        node, attribute = found[0]
        assert attribute in ("enc.variables", "enc.weights")
        assert node == (sources if sources == "params" else attribute)


# ---------------------------------------------------------------------- watched too late
def _late(body: str) -> list[tuple[str, str, bool]]:
    model = model_of(HEADER + body)
    found = []
    for call in model.gradient_calls:
        for late in sources_watched_too_late(model, call):
            found.append((late.source.value, late.through.name, late.before_block))
    return found


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (  # measured: None. Nothing watched took part in `x * x`.
            "x = tf.constant(3.0)\nwith tf.GradientTape() as t:\n    y = x * x\n"
            "    t.watch(x)\n    loss = tf.reduce_sum(y)\nd = t.gradient(loss, x)\n",
            [("x", "y", False)],
        ),
        (  # measured: None, although the model's call after the watch is recorded
            "x = tf.random.uniform((8, 1))\nc = tf.random.uniform((8, 1))\n"
            "with tf.GradientTape() as t:\n    xc = tf.concat([x, c], axis=1)\n"
            "    t.watch(x)\n    u = net(xc)\nd = t.gradient(u, x)\n",
            [("x", "xc", False)],
        ),
        (  # before the block nothing is recorded, whatever `x` is
            "def f(x, c):\n    xc = tf.concat([x, c], 1)\n    with tf.GradientTape() as t:\n"
            "        t.watch(x)\n        u = net(xc)\n    return t.gradient(u, x)\n",
            [("x", "xc", True)],
        ),
        (  # slices and reshapes are operations too
            "def f(x):\n    first = tf.reshape(x[:, 0:1], (-1, 1))\n"
            "    with tf.GradientTape() as t:\n        t.watch(x)\n        u = net(first)\n"
            "    return t.gradient(u, x)\n",
            [("x", "first", True)],
        ),
    ],
    ids=["plain-op-in-block", "concat-in-block", "concat-before-block", "slice-before-block"],
)
def test_a_source_used_only_before_its_watch_is_found(body, expected):
    assert _late(body) == expected


@pytest.mark.parametrize(
    "body",
    [
        # measured: a gradient. The model's variables made the tape record the call.
        "x = tf.constant(1.0)\nwith tf.GradientTape() as t:\n    u = net(x)\n    t.watch(x)\n"
        "d = t.gradient(u, x)\n",
        # measured: a gradient. `w` is a variable the tape watched when `w * x` ran.
        "w = tf.Variable(2.0)\nx = tf.constant(3.0)\nwith tf.GradientTape() as t:\n"
        "    y = w * x\n    t.watch(x)\nd = t.gradient(y, x)\n",
        # measured: 3 where 9 is right, but not None (not this rule's meaning)
        "x = tf.constant(3.0)\nwith tf.GradientTape() as t:\n    y = x * x\n    t.watch(x)\n"
        "    loss = y + 3.0 * x\nd = t.gradient(loss, x)\n",
        # measured: a gradient. `c` was watched first, so the concat was recorded.
        "x = tf.constant([[1.0]])\nc = tf.constant([[2.0]])\nwith tf.GradientTape() as t:\n"
        "    t.watch(c)\n    xc = tf.concat([x, c], 1)\n    t.watch(x)\n    u = net(xc)\n"
        "d = t.gradient(u, x)\n",
        # an alias computes nothing: watching `x` watches `inputs`
        "def f(x):\n    inputs = x\n    with tf.GradientTape() as t:\n        t.watch(x)\n"
        "        u = net(inputs)\n    return t.gradient(u, x)\n",
        # `convert_to_tensor` of a tensor returns that very tensor (measured)
        "def f(x):\n    inputs = tf.convert_to_tensor(x)\n    with tf.GradientTape() as t:\n"
        "        t.watch(x)\n        u = net(inputs)\n    return t.gradient(u, x)\n",
        # a helper of unknown content runs before the watch
        "x = tf.constant(1.0)\nwith tf.GradientTape() as t:\n    y = scale(x)\n    t.watch(x)\n"
        "d = t.gradient(y, x)\n",
        # the watch is in a loop of the block: later iterations are recorded
        "x = tf.constant(1.0)\nwith tf.GradientTape() as t:\n    y = x\n    for _ in range(3):\n"
        "        y = y * x\n        t.watch(x)\nd = t.gradient(y, x)\n",
        # the tape goes to a helper, which may watch
        "x = tf.constant(1.0)\nwith tf.GradientTape() as t:\n    y = x * x\n    prepare(t)\n"
        "    t.watch(x)\nd = t.gradient(y, x)\n",
        # the assembled tensor is the source
        "def f(x, c):\n    xc = tf.concat([x, c], 1)\n    with tf.GradientTape() as t:\n"
        "        t.watch(xc)\n        u = net(xc)\n    return t.gradient(u, xc)\n",
    ],
    ids=[
        "model-call-first",
        "variable-first",
        "partial",
        "other-input-watched-first",
        "alias",
        "convert-to-tensor",
        "helper",
        "loop",
        "tape-escapes",
        "assembled-source",
    ],
)
def test_a_source_with_a_recorded_path_is_not_found(body):
    assert _late(body) == []


def test_a_variable_source_is_not_judged_by_the_late_watch():
    """TAP201 is about tensors; a parameter counts, a known `tf.Variable` does not."""
    body = (
        "v = tf.Variable([[1.0]])\nc = tf.constant([[2.0]])\nvc = tf.concat([v, c], 1)\n"
        "with tf.GradientTape() as t:\n    t.watch(v)\n    u = net(vc)\nd = t.gradient(u, v)\n"
    )
    assert _late(body) == []
    assert _late(body.replace("tf.Variable([[1.0]])", "tf.constant([[1.0]])")) == [
        ("v", "vc", True)
    ]


@pytest.mark.parametrize(
    ("helper", "found"),
    [
        ("pde = Residual()\n", False),  # a method of the file may read the global `x`
        ("pde = lambda: x * 3.0\n", False),
        ("pde = keras.layers.Lambda(lambda v: v * x)\n", False),
        ("pde = keras.Sequential([keras.layers.Dense(1)])\n", True),  # Keras' own code
    ],
    ids=["method", "lambda", "library-object-with-own-code", "library-object"],
)
def test_a_later_use_hidden_in_code_of_the_file_is_given_the_benefit(helper, found):
    body = (
        "class Residual:\n    def __call__(self):\n        return x * 3.0\n"
        "x = tf.constant([[3.0]])\n" + helper + "with tf.GradientTape() as t:\n"
        "    y = x * x\n    t.watch(x)\n    loss = y + pde()\nd = t.gradient(loss, x)\n"
    )
    assert bool(_late(body)) is found


def test_aliases_that_go_round_in_a_loop_end():
    body = (
        "x = tf.constant(1.0)\na = x\nb = a\nfor _ in range(2):\n    a = b\n    b = a\n"
        "with tf.GradientTape() as t:\n    y = b * b\n    t.watch(x)\nd = t.gradient(y, x)\n"
    )
    assert _late(body) == []
