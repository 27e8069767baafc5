"""Per-gradient transforms behind indirection (TAP403): what a function's summary says it
runs on its parameters (`parameter_transforms`), which calls hand it raw gradients
(`helper_transforms`), and `tf.cond` followed through its lambda branches (`gradients`)."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest
from tapelint.rules.updates._helper_transforms import helper_transforms

from tapelint.semantic import build_model
from tapelint.semantic.gradient_routes.gradients import gradients_of
from tapelint.semantic.gradient_routes.transforms import raw_list
from tapelint.semantic.project_model.summaries import ProjectIndex
from tapelint.semantic.summarising.function_summaries import summarize
from tests.analysis.helpers import code, model_of

HEADER = "import tensorflow as tf\n"


def _facts(source: str) -> dict[str, list[tuple[int, bool, str]]]:
    """The transforms of the parameters named `g...` (the others, `s` in `g * s`, have
    facts too, of no use to a caller handing gradients)."""
    model = build_model(cst.parse_module(HEADER + textwrap.dedent(source)), module_name="m")
    summary = summarize(model, "m.py", lambda node: (1, 1, None, None), every_parameter=True)
    found = {
        name: [
            (t.param, t.each, t.site.label.split("` in `")[0] + "`")
            for t in f.transforms
            if f.params[t.param].startswith("g")
        ]
        for name, f in summary.functions.items()
    }
    return {name: facts for name, facts in found.items() if facts}


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("def f(grads, s):\n    return [g * s for g in grads]\n", [(0, True, "`g * s`")]),
        (
            "def f(self, grads):\n    self.acc = [a + g for a, g in zip(self.acc, grads)]\n",
            [(1, True, "`a + g`")],
        ),
        (
            "def f(grads):\n    out = []\n    for i, g in enumerate(grads):\n"
            "        out.append(tf.clip_by_norm(g, 1.0))\n    return out\n",
            [(0, True, "`tf.clip_by_norm(g, 1.0)`")],
        ),
        (
            "def f(grads, n):\n    return tf.nest.map_structure(lambda g: g / n, grads)\n",
            [(0, True, "`g / n`")],
        ),
        (
            "def f(g):\n    return g + tf.random.normal(tf.shape(g))\n",
            [(0, False, "`g + tf.random.normal(tf.shape(g))`")],
        ),
        ("def f(g):\n    return tf.identity(g)\n", [(0, False, "`tf.identity(g)`")]),
    ],
)
def test_what_a_function_runs_on_its_parameters(source, expected):
    assert _facts(source) == {"f": expected}


@pytest.mark.parametrize(
    "source",
    [
        # guarded, in the op's expression or before it
        "def f(g, n):\n    return None if g is None else g + n\n",
        "def f(g):\n    if g is None:\n        return None\n    return g * 2\n",
        "def f(grads, s):\n    return [None if g is None else g * s for g in grads]\n",
        "def f(grads, s):\n    return [g * s for g in grads if g is not None]\n",
        "def f(grads, s):\n    grads = [g for g in grads if g is not None]\n"
        "    return [g * s for g in grads]\n",
        # passes None through: a test of the parameter picks the branch the op runs in
        "def f(g):\n    if isinstance(g, tf.IndexedSlices):\n"
        "        return tf.convert_to_tensor(g)\n    return g\n",
        # a `try` may catch what None raises
        "def f(g):\n    try:\n        return g * 2\n    except TypeError:\n        return None\n",
        # `tf.nest` and `tf.clip_by_global_norm` take None
        "def f(grads):\n    return tf.nest.flatten(grads)\n",
        "def f(grads):\n    return tf.clip_by_global_norm(grads, 1.0)[0]\n",
        # only the elements a test on the paired variable picks
        "def f(grads, vs):\n    return [g * 2 if 'bias' in v.name else g for g, v in zip(grads, vs)]\n",
        # the op is a nested function's, not this one's
        "def f(g):\n    def inner(h):\n        return h * 2\n    return inner\n",
    ],
)
def test_guarded_or_none_safe_parameters_have_no_fact(source):
    assert _facts(source) == {}


def test_a_module_says_what_its_mapped_functions_run_on_their_parameters_themselves():
    source = (
        "def add_noise(g):\n    return g + 1.0\n\n\n"
        "def scale(g):\n    return g * 2.0\n\n\n"
        "def step(grads):\n    return tf.nest.map_structure(add_noise, grads)\n"
    )
    model = build_model(cst.parse_module(HEADER + source), module_name="m")
    summary = summarize(model, "m.py", lambda node: (1, 1, None, None))
    assert {name for name, f in summary.functions.items() if f.transforms} == {"add_noise"}
    every = summarize(model, "m.py", lambda node: (1, 1, None, None), every_parameter=True)
    assert {name for name, f in every.functions.items() if f.transforms} == {"add_noise", "scale"}


def _report(source: str, module: str = "m") -> list[tuple[str, str]]:
    model = build_model(cst.parse_module(HEADER + textwrap.dedent(source)), module_name=module)
    summary = summarize(model, f"{module}.py", lambda node: (1, 1, None, None))
    model.index = ProjectIndex().with_module(summary)
    return [(code(model, found.node), found.site.label) for found in helper_transforms(model)]


STEP = """\
model = tf.keras.Sequential([tf.keras.layers.Dense(4)])


def scale_all(grads, s):
    return [g * s for g in grads]


def add_noise(g):
    return g + tf.random.normal(tf.shape(g))


class Trainer:
    def accumulate(self, grads):
        self.acc = [a + g for a, g in zip(self.acc, grads)]

    def noise(self, g):
        return g * 1.01

    def step(self, x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(model(x))
        grads = tape.gradient(loss, model.trainable_variables)
        {use}
"""


@pytest.mark.parametrize(
    ("use", "reported"),
    [
        ("self.accumulate(grads)", "self.accumulate(grads)"),
        ("scale_all(grads, 0.5)", "scale_all(grads, 0.5)"),
        ("scale_all(s=0.5, grads=grads)", "scale_all(s=0.5, grads=grads)"),
        ("tf.nest.map_structure(add_noise, grads)", "tf.nest.map_structure(add_noise, grads)"),
        ("list(map(self.noise, grads))", "map(self.noise, grads)"),
        (
            "tf.cond(x, lambda: scale_all(grads, 2.0), lambda: grads)",
            "scale_all(grads, 2.0)",
        ),
    ],
)
def test_calls_that_hand_raw_gradients_to_a_transform(use, reported):
    assert [node for node, _ in _report(STEP.format(use=use))] == [reported]


@pytest.mark.parametrize(
    "use",
    [
        "scale_all([g for g in grads if g is not None], 0.5)",
        "tf.nest.map_structure(add_noise, [g for g in grads if g is not None])",
        "scale_all(grads[0], 0.5)",  # one gradient: its rows are walked, never None
        "scale_all(zip(grads, model.trainable_variables), 0.5)",  # pairs, not gradients
        "scale_all(tf.clip_by_global_norm(grads, 1.0)[0], 0.5) if grads[0] is None else 0",
        "add_noise(grads)",  # the whole list into `g + ...`: nothing claimed
        "self.accumulate(model.trainable_variables)",
    ],
)
def test_look_alikes_hand_no_raw_gradients_to_a_transform(use):
    assert _report(STEP.format(use=use)) == []


def _flow(body: str, expr: str):
    model = model_of(HEADER + "def step(model, x, p):\n" + textwrap.indent(body, "    "))
    statement = model.module.body[-1].body.body[-1]
    value = statement.body[0].value
    scope = next(s for s in model.scopes if s.node is model.module.body[-1])
    assert code(model, value) == expr
    return model, gradients_of(model, value, scope)


def test_cond_is_followed_through_its_lambda_branches():
    body = (
        "with tf.GradientTape() as tape:\n    loss = model(x)\n"
        "grads = tape.gradient(loss, model.trainable_variables)\n"
        "clipped = tf.clip_by_global_norm(grads, 1.0)[0]\n"
        "chosen = tf.cond(p, lambda: clipped, lambda: grads)\n"
        "chosen\n"
    )
    model, flow = _flow(body, "chosen")
    assert flow.origins and raw_list(model, flow)


@pytest.mark.parametrize(
    "branches",
    [
        "lambda: [g for g in grads if g is not None], lambda: []",
        "scale, lambda: grads",  # a function value: not followed
        "lambda *a: grads, lambda: grads",  # a lambda with parameters: not followed
    ],
)
def test_cond_branches_that_filter_or_are_not_followed(branches):
    body = (
        "with tf.GradientTape() as tape:\n    loss = model(x)\n"
        "grads = tape.gradient(loss, model.trainable_variables)\n"
        f"chosen = tf.cond(p, {branches})\n"
        "chosen\n"
    )
    model, flow = _flow(body, "chosen")
    assert not raw_list(model, flow)


@pytest.mark.parametrize("picked", ["grads[0]", "first", "pairs"])
def test_one_gradient_or_pairs_are_not_the_list(picked):
    body = (
        "with tf.GradientTape() as tape:\n    loss = model(x)\n"
        "grads = tape.gradient(loss, model.trainable_variables)\n"
        "first, second = grads\n"
        "pairs = zip(grads, model.trainable_variables)\n"
        f"{picked}\n"
    )
    model, flow = _flow(body, picked)
    assert flow.origins and flow.repackaged and not raw_list(model, flow)
