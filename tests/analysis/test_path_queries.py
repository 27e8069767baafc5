"""Queries behind TAP302/303/402/403: cut differentiable paths, training flags, which variables
gradients are applied to, and per-gradient transforms."""

import pytest
from tapelint.rules.differentiable_path._keras_calls import calls_without_training
from tapelint.rules.updates._identity import same_object_lists, variable_lists_differ

from tapelint.semantic.file_model.expressions import argument_value
from tapelint.semantic.flow.differentiability import path_breaks
from tapelint.semantic.gradient_routes.gradients import (
    applied_pairing,
    gradients_of,
    swapped_pairing,
)
from tapelint.semantic.gradient_routes.transforms import unguarded_transforms
from tests.analysis.helpers import code, model_of

HEADER = "import tensorflow as tf\n"


def _breaks(inside: str, sources: str = "model.trainable_variables") -> list[tuple[str, str]]:
    model = model_of(
        HEADER + "with tf.GradientTape() as t:\n" + inside + f"g = t.gradient(l, {sources})\n"
    )
    (call,) = model.gradient_calls
    return [(code(model, b.node), b.kind) for b in path_breaks(model, call)]


@pytest.mark.parametrize(
    ("inside", "expected"),
    [
        (
            "    p = model(x)\n    l = tf.cast(tf.argmax(p, -1), tf.float32)\n",
            [("tf.argmax(p, -1)", "index")],
        ),
        ("    p = model(x)\n    l = tf.reduce_sum(tf.round(p))\n", [("tf.round(p)", "step")]),
        (
            "    p = model(x)\n    l = tf.reduce_sum(tf.cast(p, tf.int32))\n",
            [("tf.cast(p, tf.int32)", "cast")],
        ),
        (
            "    p = model(x)\n    l = tf.reduce_sum(tf.cast(p > 0.5, tf.float32))\n",
            [("p > 0.5", "comparison")],
        ),
        (
            "    l = tf.reduce_sum(tf.stop_gradient(model(x)))\n",
            [("tf.stop_gradient(model(x))", "stop_gradient")],
        ),
        ("    p = model(x)\n    l = tf.reduce_sum(p // 2.0)\n", [("p // 2.0", "step")]),
        (
            "    p = model(x)\n    l = tf.reduce_sum(tf.where(f(p), 1.0, 0.0))\n",
            [("tf.where(f(p), 1.0, 0.0)", "where")],
        ),
    ],
    ids=[
        "argmax",
        "round",
        "int-cast",
        "comparison",
        "stop-gradient",
        "floor-division",
        "where-constants",
    ],
)
def test_a_cut_path_is_found_at_the_op(inside, expected):
    assert _breaks(inside) == expected


@pytest.mark.parametrize(
    "inside",
    [
        # argmax for a metric beside the loss
        "    p = model(x)\n    l = tf.reduce_mean(p)\n    acc = tf.argmax(p, -1)\n",
        # a mask that weights a differentiable term
        "    p = model(x)\n    m = tf.cast(p > 0, tf.float32)\n    l = tf.reduce_sum(m * p)\n",
        # stop_gradient on part of the path
        "    p = model(x)\n    l = tf.reduce_mean(p - tf.stop_gradient(target(y)))\n",
        # straight-through estimator
        "    p = model(x)\n    l = tf.reduce_sum(p + tf.stop_gradient(tf.round(p) - p))\n",
        # non-differentiable ops on labels only
        "    p = model(x)\n    k = tf.argmax(y, -1)\n    l = ce(k, p)\n",
        # tf.where with a differentiable branch
        "    p = model(x)\n    l = tf.reduce_sum(tf.where(p > 0, p, 0.0))\n",
        # a float cast
        "    p = model(x)\n    l = tf.reduce_sum(tf.cast(p, tf.float32))\n",
        # an unknown function also sees the model
        "    p = model(x)\n    l = tf.reduce_sum(tf.round(p)) + penalty()\n",
        # a list filled by `append`: its definition does not show what it holds
        "    p = model(x)\n    ls = []\n    ls.append(p)\n    l = tf.add_n(ls) + tf.reduce_sum(tf.round(p))\n",
        # a function handed to a TensorFlow op may use the model
        "    p = model(x)\n    l = tf.reduce_sum(tf.map_fn(lambda b: model(b), x)) + tf.reduce_sum(tf.round(p))\n",
        # object state may have been set from the model elsewhere
        "    p = model(x)\n    l = tf.reduce_sum(tf.round(p)) + agent.aux_loss\n",
        # a cut op outside the recording block does not count here
        "    p = model(x)\n",
    ],
    ids=[
        "metric",
        "mask",
        "partial-stop-gradient",
        "straight-through",
        "labels",
        "where-branch",
        "float-cast",
        "unknown-call",
        "appended-list",
        "lambda",
        "object-state",
        "outside",
    ],
)
def test_paths_that_keep_a_gradient_are_not_cut(inside):
    if inside.endswith("    p = model(x)\n"):
        inside += "l = tf.reduce_sum(tf.round(p))\n"
    assert _breaks(inside) == []


def test_each_source_is_judged_on_its_own():
    inside = "    l = tf.reduce_sum(tf.round(x * w)) + b\n"
    assert _breaks(inside, sources="[w, b]") == [("tf.round(x * w)", "step")]


def _calls(body: str) -> list[str]:
    model = model_of(HEADER + body)
    return [code(model, c.node) for c in calls_without_training(model)]


SEQUENTIAL = "m = tf.keras.Sequential([tf.keras.layers.Dense(3), tf.keras.layers.Dropout(0.1)])\n"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            SEQUENTIAL + "with tf.GradientTape() as t:\n    l = m(x)\n"
            "g = t.gradient(l, m.trainable_variables)\n",
            ["m(x)"],
        ),
        (
            SEQUENTIAL + "with tf.GradientTape() as t:\n    l = m(x, training=True)\n"
            "g = t.gradient(l, m.trainable_variables)\n",
            [],
        ),
        (
            "def build():\n    i = tf.keras.Input((3,))\n    o = tf.keras.layers.Dropout(0.2)(i)\n"
            "    return tf.keras.Model(i, o)\nm = build()\n"
            "with tf.GradientTape() as t:\n    l = m(x)\ng = t.gradient(l, m.trainable_variables)\n",
            ["m(x)"],
        ),
        (
            "class M(tf.keras.Model):\n"
            "    def __init__(self):\n        self.drop = tf.keras.layers.Dropout(0.5)\n"
            "    def train_step(self, d):\n"
            "        with tf.GradientTape() as t:\n            l = self(d)\n"
            "        return t.gradient(l, self.trainable_variables)\n",
            ["self(d)"],
        ),
        (
            "def step(m, x):\n    with tf.GradientTape() as t:\n        l = m(x)\n"
            "    return t.gradient(l, m.trainable_variables)\n",
            [],
        ),
        (
            SEQUENTIAL + "with tf.GradientTape() as t:\n    t.watch(x)\n    l = m(x)\n"
            "g = t.gradient(l, x)\n",
            [],
        ),
        (
            "d = tf.keras.layers.Dense(3)\nwith tf.GradientTape() as t:\n    l = d(x)\n"
            "g = t.gradient(l, d.trainable_variables)\n",
            [],
        ),
        (
            "d = tf.keras.layers.Dense(3)\nr = tf.keras.layers.Dropout(0.5)\n"
            "with tf.GradientTape() as t:\n    l = r(d(x))\n"
            "g = t.gradient(l, d.trainable_variables)\n",
            ["r(d(x))"],
        ),
        (
            SEQUENTIAL + "with tf.GradientTape() as t:\n    with t.stop_recording():\n"
            "        v = m(x)\n    l = m(x, training=True)\n"
            "g = t.gradient(l, m.trainable_variables)\n",
            [],
        ),
    ],
    ids=[
        "sequential",
        "training-given",
        "builder",
        "self-in-model",
        "parameter",
        "input-gradient",
        "inert-layer",
        "dropout-layer",
        "stop-recording",
    ],
)
def test_calls_without_training(body, expected):
    assert _calls(body) == expected


def test_sub_model_assigned_in_a_method_that_was_cut_out_is_read_from_the_text():
    from tapelint.linter.engine import Linter
    from tapelint.linter.registry import rule_by_code_or_name

    source = (
        HEADER + "class M(tf.keras.Model):\n"
        "    def __init__(self):\n        super().__init__()\n"
        "        self.enc = tf.keras.Sequential([tf.keras.layers.BatchNormalization()])\n"
        "        self.head = tf.keras.layers.Dense(1)\n"
        "    def train_step(self, d):\n"
        "        with tf.GradientTape() as t:\n            l = self.head(self.enc(d))\n"
        "        return t.gradient(l, self.trainable_variables)\n"
    )
    diagnostics = Linter([rule_by_code_or_name("TAP303")]).check_text(source, "m.py")
    assert [(d.start.line, d.start.column) for d in diagnostics] == [(9, 27)]


def _lists(body: str):
    """The model, and the sources and the applied variables of its one apply."""
    model = model_of(HEADER + body)
    (apply,) = model.apply_calls
    pairing = applied_pairing(model, apply)
    assert pairing is not None
    flow = gradients_of(model, pairing.gradients, apply.scope, elementwise=True)
    (origin,) = flow.origins
    return model, argument_value(origin.node, 1, "sources"), pairing.variables


def _differ(body: str) -> bool:
    return variable_lists_differ(*_lists(body))


GRADS = "with tf.GradientTape() as t:\n    l = f(x)\n"


@pytest.mark.parametrize(
    ("body", "differ"),
    [
        (
            "g = t.gradient(l, gen.trainable_variables)\no.apply_gradients(zip(g, disc.trainable_variables))\n",
            False,
        ),
        (
            "gen = mk()\ndisc = mk2()\n" + GRADS + "g = t.gradient(l, gen.trainable_variables)\n"
            "o.apply_gradients(zip(g, disc.trainable_variables))\n",
            True,
        ),
        (
            "gen = mk()\n" + GRADS + "g = t.gradient(l, gen.trainable_variables)\n"
            "o.apply_gradients(zip(g, gen.trainable_weights))\n",
            False,
        ),
        (
            "w = tf.Variable(1.0)\nb = tf.Variable(0.0)\n" + GRADS + "g = t.gradient(l, [w, b])\n"
            "o.apply_gradients(zip(g, [b, w]))\n",
            True,
        ),
        (
            "m = mk()\nn = m\n" + GRADS + "g = t.gradient(l, m.trainable_variables)\n"
            "o.apply_gradients([(c(a), v) for a, v in zip(g, n.trainable_variables) if a is not None])\n",
            False,
        ),
        (
            "m = mk()\nk = mk()\n" + GRADS + "g = t.gradient(l, m.trainable_variables)\n"
            "g = [c(a) for a in g]\no.apply_gradients(zip(g, k.trainable_variables))\n",
            True,
        ),
        (
            "m = mk()\n" + GRADS + "g = t.gradient(l, m.trainable_variables)\n"
            "o.apply_gradients(zip(g, m.variables))\n",
            False,
        ),
        (
            "m = mk()\nk = mk()\n" + GRADS + "g = t.gradient(l, m.variables)\n"
            "o.apply_gradients(zip(g, k.trainable_variables))\n",
            True,
        ),
        (
            "def f(enc, dec):\n    with tf.GradientTape() as t:\n        l = dec(enc(x))\n"
            "    g = t.gradient(l, enc.trainable_weights)\n"
            "    o.apply_gradients(zip(g, dec.weights))\n",
            True,
        ),
        (
            "m = mk()\nk = mk()\n" + GRADS + "g = t.gradient(l, m.variables + k.variables)\n"
            "o.apply_gradients(zip(g, m.trainable_variables + k.trainable_variables))\n",
            False,
        ),
        (
            "m = mk()\nk = mk()\n" + GRADS + "g = t.gradient(l, m.variables + k.variables)\n"
            "o.apply_gradients(zip(g, k.trainable_variables + m.trainable_variables))\n",
            True,
        ),
    ],
    ids=[
        "unknown-objects",
        "two-constructions",
        "weights-alias",
        "swapped-list",
        "name-alias",
        "after-elementwise-transform",
        "all-variables-unknown",
        "all-variables-of-another-object",
        "two-parameters-weights",
        "concatenations-of-the-same-objects",
        "concatenations-in-another-order",
    ],
)
def test_variable_lists_differ(body, differ):
    if body.startswith("g = "):
        body = GRADS + body
    assert _differ(body) is differ


@pytest.mark.parametrize(
    ("models", "differ"),
    [
        ("a, b = mk(), mk()\n", True),  # two calls, two objects
        ("a = Net()\nb = Net()\n", True),
        ("a = b = mk()\n", False),  # one call bound to two names
        ("a, b = pair()\n", False),  # one call may return one object twice
        ("a = nets.get('x')\nb = nets.get('y')\n", False),  # accessors hand out objects
        ("@functools.lru_cache\ndef mk():\n    return Net()\na = mk()\nb = mk()\n", False),
        ("def mk():\n    global made\n    return made\na = mk()\nb = mk()\n", False),
    ],
    ids=["unpacked", "two-instances", "chained", "unpacked-call", "accessor", "cached", "global"],
)
def test_models_built_by_one_factory(models, differ):
    body = (
        models + GRADS + "g = t.gradient(l, a.trainable_variables)\n"
        "o.apply_gradients(zip(g, b.trainable_variables))\n"
    )
    assert _differ(body) is differ


@pytest.mark.parametrize(
    ("assignments", "differ"),
    [
        ("self.a = mk()\n        self.b = mk()\n", True),
        ("self.a, self.b = Net(), Net()\n", True),
        ("self.a = self.b = mk()\n", False),
        ("self.a = mk()\n        self.b = copy.copy(self.a)\n", False),
        ("self.a = mk()\n        self.b = clone(self.a)\n", False),  # takes the other
        ("self.a = nets.get(k)\n        self.b = nets.get(k)\n", False),
    ],
    ids=["two-calls", "unpacked", "chained", "copy", "derived", "accessor"],
)
def test_attributes_built_by_one_factory(assignments, differ):
    source = (
        "class A:\n    def __init__(self, net):\n        "
        + assignments
        + "    def step(self):\n        with tf.GradientTape() as t:\n            l = self.a(x)\n"
        "        g = t.gradient(l, self.a.trainable_variables)\n"
        "        o.apply_gradients(zip(g, self.b.trainable_variables))\n"
    )
    assert _differ(source) is differ


def test_attributes_assigned_from_the_same_value_may_alias():
    source = (
        HEADER
        + "class A:\n    def __init__(self, net):\n        self.a = net\n        self.b = net\n"
        "    def step(self):\n        with tf.GradientTape() as t:\n            l = self.a(x)\n"
        "        g = t.gradient(l, self.a.trainable_variables)\n"
        "        o.apply_gradients(zip(g, self.b.trainable_variables))\n"
    )
    assert _differ(source[len(HEADER) :]) is False
    other = source.replace("self.b = net", "self.b = other")
    assert _differ(other[len(HEADER) :]) is True


def _transforms(after: str, sources: str = "vs") -> list[str]:
    model = model_of(
        HEADER
        + "vs = m.trainable_variables\nw = tf.Variable(1.0)\n"
        + GRADS
        + f"g = t.gradient(l, {sources})\n"
        + after
    )
    return [code(model, t.node) for t in unguarded_transforms(model)]


@pytest.mark.parametrize(
    ("after", "expected"),
    [
        ("c = [tf.clip_by_norm(a, 1.0) for a in g]\n", ["tf.clip_by_norm(a, 1.0)"]),
        ("c = [a * 2 for a in g]\n", ["a * 2"]),
        ("c = [(tf.math.abs(a), v) for a, v in zip(g, vs)]\n", ["tf.math.abs(a)"]),
        ("c = [tf.clip_by_norm(a * s, 1.0) for a in g]\n", ["a * s"]),
        ("for i, a in enumerate(g):\n    g[i] = -a\n", ["-a"]),
        ("c = [tf.clip_by_norm(a, 1.0) for a in g if a is not None]\n", []),
        ("c = [None if a is None else a * 2 for a in g]\n", []),
        (
            "c = [tf.convert_to_tensor(a) if isinstance(a, tf.IndexedSlices) else a for a in g]\n",
            [],
        ),
        ("for a in g:\n    if a is None:\n        continue\n    print(a * 2)\n", []),
        ("c, n = tf.clip_by_global_norm(g, 1.0)\n", []),
        ("c = [my_clip(a) for a in g]\n", []),
        ("c = [(a, v) for a, v in zip(g, vs)]\n", []),
        ("c = [v * 2 for a, v in zip(g, vs)]\n", []),
    ],
    ids=[
        "clip",
        "scale",
        "pairs",
        "innermost-op",
        "loop",
        "filtered",
        "conditional",
        "type-test",
        "continue",
        "global-norm",
        "own-helper",
        "no-op",
        "variable-side",
    ],
)
def test_unguarded_transforms(after, expected):
    assert _transforms(after) == expected


def test_zero_for_unconnected_gradients_is_never_none():
    model = model_of(
        HEADER
        + GRADS
        + "g = t.gradient(l, vs, unconnected_gradients=tf.UnconnectedGradients.ZERO)\n"
        "c = [a * 2 for a in g]\n"
    )
    assert unguarded_transforms(model) == []


@pytest.mark.parametrize(
    ("sources", "expected"),
    [
        ("[w, x]", ["a * 2"]),
        ("m.trainable_weights + [w]", ["a * 2"]),
        ("w", []),
        ("unknown_name", []),
        # One source that the loss may read: a None gradient leaves nothing to train and
        # raises at the first op anyway.
        ("[w]", []),
    ],
    ids=["literal-list", "sum", "one-variable", "unknown", "one-source-list"],
)
def test_transforms_need_a_list_of_gradients(sources, expected):
    assert _transforms("c = [a * 2 for a in g]\n", sources) == expected


@pytest.mark.parametrize(
    ("after", "expected"),
    [
        ("c = tf.nest.map_structure(lambda a: a * 2, g)\n", ["a * 2"]),
        ("c = list(map(lambda a: tf.clip_by_norm(a, 1.0), g))\n", ["tf.clip_by_norm(a, 1.0)"]),
        ("c = tf.nest.map_structure(lambda a: None if a is None else a * 2, g)\n", []),
        ("c = tf.nest.map_structure(lambda v, a: v * 2, vs, g)\n", []),
        ("c = tf.nest.map_structure(scale, g)\n", []),
    ],
    ids=["map-structure", "builtin-map", "guarded", "other-parameter", "named-function"],
)
def test_mapped_transforms(after, expected):
    assert _transforms(after) == expected


@pytest.mark.parametrize(
    ("apply", "swapped"),
    [
        ("o.apply_gradients(zip(m.trainable_variables, g))\n", True),
        ("o.apply_gradients(list(zip(m.trainable_variables, g)))\n", True),
        ("o.apply_gradients(zip(g, m.trainable_variables))\n", False),
        ("o.apply_gradients(zip(other.trainable_variables, g))\n", False),
        ("o.apply_gradients(zip(m.trainable_variables, h))\n", False),
    ],
    ids=["reversed", "reversed-through-list", "right-order", "other-variables", "not-gradients"],
)
def test_swapped_pairing(apply, swapped):
    body = GRADS + "g = t.gradient(l, m.trainable_variables)\nh = f(g)\n" + apply
    model = model_of(HEADER + body)
    (call,) = model.apply_calls
    assert (swapped_pairing(model, call) is not None) is swapped


_DISTILLER = (
    "class Distiller(tf.keras.Model):\n"
    "    def __init__(self):\n        super().__init__()\n"
    "        self.student = tf.keras.Sequential([tf.keras.layers.BatchNormalization()])\n"
    "        self.teacher = tf.keras.Sequential([tf.keras.layers.BatchNormalization()])\n"
    "        self.alias = {alias}\n"
    "    def train_step(self, x):\n"
    "        with tf.GradientTape() as t:\n"
    "            l = self.student(x) - self.teacher(x)\n"
    "        return t.gradient(l, {sources})\n"
)


@pytest.mark.parametrize(
    ("alias", "sources", "trained"),
    [
        # an attribute every assignment of the class aliases to the student's weights
        ("self.student.trainable_weights", "self.alias", ["self.student"]),
        ("list(self.student.trainable_weights)", "self.alias", ["self.student"]),
        ("self.student.trainable_weights[2:]", "self.alias", ["self.student"]),
        ("self.student.trainable_weights", "[*self.alias]", ["self.student"]),
        # not an alias of variable lists: the object it is read from is what is trained
        ("[]", "self.alias", ["self.student", "self.teacher"]),
        ("None", "self.trainable_variables", ["self.student", "self.teacher"]),
    ],
    ids=["alias", "list-copy", "slice", "starred", "empty-list", "own-variables"],
)
def test_trained_models_followed_through_aliases_of_their_weights(alias, sources, trained):
    """The teacher runs in inference mode on purpose: only what the tape trains is asked
    for `training=` (before, an attribute alias made every model on `self` trained)."""
    from tapelint.linter.engine import Linter
    from tapelint.linter.registry import rule_by_code_or_name

    source = HEADER + _DISTILLER.format(alias=alias, sources=sources)
    diagnostics = Linter([rule_by_code_or_name("TAP303")]).check_text(source, "m.py")
    assert sorted(d.message.split("`")[1] for d in diagnostics) == trained


@pytest.mark.parametrize(
    "binding",
    [
        "w = student.trainable_weights",
        "w = list(student.trainable_weights)",
        "w, other = student.trainable_weights, teacher.trainable_weights",
    ],
    ids=["name", "list-copy", "unpacked"],
)
def test_trained_models_followed_through_names(binding):
    body = (
        "student = tf.keras.Sequential([tf.keras.layers.BatchNormalization()])\n"
        "teacher = tf.keras.Sequential([tf.keras.layers.BatchNormalization()])\n"
        f"{binding}\n"
        "with tf.GradientTape() as t:\n    l = student(x) - teacher(x)\n"
        "g = t.gradient(l, w)\n"
    )
    assert _calls(body) == ["student(x)"]


def test_attributes_that_only_alias_each_other_say_nothing():
    """No value lists anyone's variables: every model on `self` may be what is trained."""
    from tapelint.linter.engine import Linter
    from tapelint.linter.registry import rule_by_code_or_name

    source = HEADER + _DISTILLER.format(alias="self.other", sources="self.alias").replace(
        "        self.alias = self.other\n",
        "        self.alias = self.other\n        self.other = self.alias\n",
    )
    diagnostics = Linter([rule_by_code_or_name("TAP303")]).check_text(source, "m.py")
    assert sorted(d.message.split("`")[1] for d in diagnostics) == ["self.student", "self.teacher"]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            "m = mk()\nvs = m.trainable_variables\n" + GRADS + "g = t.gradient(l, vs)\n"
            "o.apply_gradients(zip(g, m.variables))\n",
            ("m.trainable_variables", "m.variables"),
        ),
        (
            "m = mk()\nn = m\n" + GRADS + "g = t.gradient(l, m.weights)\n"
            "o.apply_gradients(zip(g, n.trainable_weights))\n",
            ("m.weights", "n.trainable_weights"),
        ),
        (
            "m = mk()\n" + GRADS + "g = t.gradient(l, m.trainable_variables)\n"
            "o.apply_gradients(zip(g, m.trainable_weights))\n",
            None,  # the same list
        ),
        (
            "m = mk()\nk = mk()\n" + GRADS + "g = t.gradient(l, m.trainable_variables)\n"
            "o.apply_gradients(zip(g, k.variables))\n",
            None,  # two objects: `variable_lists_differ`'s
        ),
        (
            GRADS
            + "g = t.gradient(l, m.trainable_variables)\no.apply_gradients(zip(g, m.variables))\n",
            None,  # `m` is bound nowhere: not pinned down
        ),
    ],
    ids=["alias-of-the-list", "alias-of-the-object", "same-group", "two-objects", "unbound"],
)
def test_same_object_lists(body, expected):
    model, sources, applied = _lists(body)
    found = same_object_lists(model, sources, applied)
    assert (None if found is None else (code(model, found[0]), code(model, found[1]))) == expected
