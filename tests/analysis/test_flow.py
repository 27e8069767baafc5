"""How many calls a tape answers on one path, and which definitions reach a use."""

import pytest
from tapelint.rules.tape_life._lifecycle import escapes, serves_at_most_one_call

from tapelint.semantic import Tri
from tests.analysis.helpers import model_of

HEADER = "import tensorflow as tf\n"


def _max_calls(body: str) -> int:
    model = model_of(HEADER + body)
    (tape,) = model.tapes
    return tape.max_calls


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("with tf.GradientTape() as t:\n    y = f(x)\ng = t.gradient(y, x)\n", 1),
        (
            "with tf.GradientTape() as t:\n    y = f(x)\na = t.gradient(y, x)\nb = t.gradient(y, w)\n",
            2,
        ),
        (
            "with tf.GradientTape() as t:\n    y = f(x)\nif c:\n    a = t.gradient(y, x)\n"
            "else:\n    a = t.jacobian(y, x)\n",
            1,
        ),
        ("with tf.GradientTape() as t:\n    y = f(x)\nfor v in vs:\n    g = t.gradient(y, v)\n", 2),
        ("with tf.GradientTape() as t:\n    y = f(x)\ngs = [t.gradient(y, v) for v in vs]\n", 2),
        (
            "for b in data:\n    with tf.GradientTape() as t:\n        y = f(b)\n"
            "    g = t.gradient(y, x)\n",
            1,
        ),
        (
            "with tf.GradientTape() as t:\n    y = f(x)\nwhile True:\n    g = t.gradient(y, x)\n"
            "    break\n",
            1,
        ),
        (
            "def h(c):\n    with tf.GradientTape() as t:\n        y = f(x)\n    if c:\n"
            "        return t.gradient(y, x)\n    return t.gradient(y, w)\n",
            1,
        ),
        ("with tf.GradientTape() as t:\n    y = f(x)\n", 0),
    ],
    ids=[
        "one",
        "two-in-sequence",
        "exclusive-branches",
        "loop",
        "comprehension",
        "tape-per-iteration",
        "loop-with-break",
        "return-in-branch",
        "none",
    ],
)
def test_max_calls_per_path(body, expected):
    assert _max_calls(body) == expected


def test_escaping_tape_makes_call_count_unknown():
    model = model_of(
        HEADER + "def f():\n    with tf.GradientTape(persistent=True) as t:\n        y = g(x)\n"
        "    return t\n"
    )
    (tape,) = model.tapes
    assert escapes(model, tape)
    assert serves_at_most_one_call(model, tape) is Tri.UNKNOWN


@pytest.mark.parametrize(
    "use",
    ["helper(t)", "store.append(t)", "self.tape = t", "fn = lambda: t.gradient(y, x)"],
)
def test_tape_escapes(use):
    model = model_of(
        HEADER + f"def f():\n    with tf.GradientTape() as t:\n        y = g(x)\n    {use}\n"
    )
    assert escapes(model, model.tapes[0])


def test_method_calls_and_del_do_not_escape():
    model = model_of(
        HEADER + "def f():\n    with tf.GradientTape(persistent=True) as t:\n        t.watch(x)\n"
        "        y = g(x)\n    a = t.gradient(y, x)\n    del t\n"
    )
    assert not escapes(model, model.tapes[0])


def test_reaching_definitions_join_branches():
    model = model_of("if c:\n    loss = a()\nelse:\n    loss = b()\nprint(loss)\n")
    (use,) = [u for u in model.uses_by_node.values() if u.node.value == "loss"]
    assert {d.value.func.value for d in use.defs} == {"a", "b"}


def test_loop_carried_definition_reaches_the_top_of_the_body():
    model = model_of("total = 0\nfor x in xs:\n    print(total)\n    total = total + x\n")
    printed = next(
        u
        for u in model.uses_by_node.values()
        if u.node.value == "total"
        and u.order == min(v.order for v in model.uses_by_node.values() if v.node.value == "total")
    )
    assert len(printed.defs) == 2


def test_each_gradient_call_knows_whether_it_repeats_a_call():
    model = model_of(
        HEADER + "with tf.GradientTape() as t:\n    y = f(x)\nif c:\n    a = t.gradient(y, x)\n"
        "else:\n    a = t.gradient(y, w)\nb = t.gradient(y, v)\n"
    )
    assert [c.nth for c in model.gradient_calls] == [1, 1, 2]
