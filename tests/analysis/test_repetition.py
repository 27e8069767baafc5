"""What one repetition trains, and whether each operand persists across repetitions."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest
from tapelint.rules.compiled_steps._repetition import (
    Persistence,
    Repetitions,
    changes_trainability,
    counts_passes,
)

from tapelint.semantic.calls.steps import StepIndex
from tests.analysis.helpers import code, model_of

FRESH, PERSISTS, UNKNOWN = Persistence.FRESH, Persistence.PERSISTS, Persistence.UNKNOWN


def _applications(source: str, unit_header: str) -> list[tuple[Persistence, list[Persistence]]]:
    """The applications of the loop or function whose first line is `unit_header`: the
    optimizer's persistence, and each trained object's."""
    model = model_of("import tensorflow as tf\n" + textwrap.dedent(source))
    index = StepIndex(model)
    repetitions = Repetitions(model, index)
    for scope in model.scopes:
        units = [scope.node] if isinstance(scope.node, cst.FunctionDef) else []
        units += [f.node for s in model.calls if s.scope is scope for f in s.ctx if f.node]
        for unit in units:
            if code(model, unit).strip().startswith(unit_header):
                return [
                    (a.optimizer.persistence, [op.persistence for op in a.trained])
                    for a in repetitions.applications(unit, scope)
                ]
    raise AssertionError(f"no unit {unit_header!r}")


STEP = (
    "    with tf.GradientTape() as tape:\n        loss = f(x)\n"
    "    opt.apply_gradients(zip(tape.gradient(loss, {v}), {v}))\n"
)


@pytest.mark.parametrize(
    ("before", "inside", "variables", "expected"),
    [
        ("model = m()\nopt = o()\n", "", "model.trainable_variables", (PERSISTS, [PERSISTS])),
        ("opt = o()\n", "    model = m()\n", "model.trainable_variables", (PERSISTS, [FRESH])),
        ("", "    model = m()\n    opt = o()\n", "model.weights", (FRESH, [FRESH])),
        ("w = v()\nopt = o()\n", "    b = v()\n", "[w, b]", (PERSISTS, [PERSISTS, FRESH])),
        (
            "opt = o()\na = m()\n",
            "",
            "a.trainable_variables + x.layers[0].weights",
            (PERSISTS, [PERSISTS, FRESH]),
        ),
        ("opt = o()\n", "", "models[i].trainable_variables", (PERSISTS, [UNKNOWN])),
        ("opt = o()\n", "", "get_model().trainable_variables", (PERSISTS, [UNKNOWN])),
        ("opt = o()\n", "", "undefined.trainable_variables", (PERSISTS, [UNKNOWN])),
        ("opt = o()\nm = n()\n", "    vs = m.trainable_variables\n", "vs", (PERSISTS, [PERSISTS])),
    ],
    ids=[
        "both-kept",
        "model-per-iteration",
        "fresh-case",
        "literal-list",
        "sum-and-target",
        "subscript",
        "call",
        "undefined",
        "through-a-name",
    ],
)
def test_operands_of_a_loop(before, inside, variables, expected):
    source = before + "for x in ds:\n" + inside + STEP.format(v=variables)
    assert _applications(source, "for x in ds") == [expected]


def test_pairs_literal_and_minimize_are_read():
    source = (
        "opt = o()\nw = v()\nglobal_step = s()\nfor x in ds:\n"
        "    opt.apply_gradients([(g, w)])\n"
        "    opt.minimize(loss, var_list=[w])\n"
        "    opt.minimize(loss, global_step)\n"
        "    opt.apply(grads, [w])\n"
        "    ds.apply(transform)\n"
    )
    assert _applications(source, "for x in ds") == [
        (PERSISTS, [PERSISTS]),
        (PERSISTS, [PERSISTS]),
        (PERSISTS, []),
        (PERSISTS, [PERSISTS]),
    ]


def test_self_attributes_are_fresh_only_when_the_repetition_assigns_them():
    source = (
        "class T:\n    def fit(self, ds):\n        for x in ds:\n"
        "            self.opt = o()\n"
        "            self.opt.apply_gradients(zip(g, self.model.trainable_variables))\n"
    )
    assert _applications(source, "for x in ds") == [(FRESH, [PERSISTS])]


def test_a_callee_reads_its_parameters_at_the_call():
    source = (
        "model = m()\n"
        "def step(optimizer, net, x):\n"
        "    optimizer.apply_gradients(zip(g, net.trainable_variables + model.weights))\n"
        "for x in ds:\n    opt = o()\n    fresh = m()\n    step(opt, fresh, x)\n"
    )
    assert _applications(source, "for x in ds") == [(FRESH, [FRESH, PERSISTS])]


def test_a_function_reads_its_parameters_at_the_calls_in_loops():
    function = (
        "def train(net, ds):\n    opt = o()\n    for x in ds:\n"
        "        opt.apply_gradients(zip(g, net.trainable_variables))\n"
    )
    kept = function + "net = m()\nfor e in range(3):\n    train(net, ds)\n"
    assert _applications(kept, "def train") == [(FRESH, [PERSISTS])]
    fresh = function + "for e in range(3):\n    net = m()\n    train(net, ds)\n"
    assert _applications(fresh, "def train") == [(FRESH, [FRESH])]
    # a call outside any loop says nothing about repetitions
    once = function + "train(m(), ds)\n"
    assert _applications(once, "def train") == [(FRESH, [UNKNOWN])]


def test_a_method_reads_self_as_the_receiver():
    source = (
        "class Agent:\n    def learn(self, x):\n        opt = o()\n"
        "        opt.apply_gradients(zip(g, self.q.trainable_variables))\n"
        "agent = Agent()\nfor t in range(9):\n    agent.learn(t)\n"
    )
    assert _applications(source, "def learn") == [(FRESH, [PERSISTS])]
    fresh = source.replace(
        "agent = Agent()\nfor t in range(9):\n", "for t in range(9):\n    agent = Agent()\n"
    )
    assert _applications(fresh, "def learn") == [(FRESH, [FRESH])]


def test_gradient_sources_stand_for_pairs_built_by_a_helper():
    source = (
        "opt = o()\nmodel = m()\nfor x in ds:\n"
        "    with tf.GradientTape() as tape:\n        loss = f(x)\n"
        "    grads = tape.gradient(loss, model.trainable_variables)\n"
        "    opt.apply_gradients(keep(grads, model.trainable_variables))\n"
    )
    assert _applications(source, "for x in ds") == [(PERSISTS, [PERSISTS])]


def _loop(header: str) -> cst.CSTNode:
    return cst.parse_statement(header + "\n    pass\n")


@pytest.mark.parametrize(
    ("header", "counts"),
    [
        ("for epoch in range(10):", True),
        ("for epoch in trange(10):", True),
        ("for i, _ in enumerate(tqdm(range(n))):", True),
        ("for step in itertools.count():", True),
        ("while not done:", True),
        ("for x, y in dataset:", False),
        ("for lr in (0.1, 0.01):", False),
        ("for fold, (a, b) in enumerate(folds):", False),
    ],
)
def test_counting_loops(header, counts):
    assert counts_passes(_loop(header)) is counts


def test_changing_trainability_is_seen_anywhere_in_the_body():
    assert changes_trainability(
        _loop("for stage in range(3):\n    if stage:\n        base.trainable = True")
    )
    assert not changes_trainability(_loop("for stage in range(3):\n    trainable = base.trainable"))
