"""Tapes that helpers hand back: which functions hand one back (`tape_life.handing_back`, as
their summaries say), which calls receive one (`calls.handed_tapes`), and the caller's tape
the second walk makes of it (`build_model(..., handed_back=...)`)."""

from __future__ import annotations

import json
import textwrap

import libcst as cst
import pytest
from tapelint.rules.tape_life._lifecycle import serves_at_most_one_call

from tapelint.semantic import Tri, build_model
from tapelint.semantic.calls.handed_tapes import handed_tapes
from tapelint.semantic.file_model.model import FileModel
from tapelint.semantic.project_model.summaries import (
    WHOLE,
    FunctionSummary,
    HandedBack,
    ModuleSummary,
    ProjectIndex,
    Site,
)
from tapelint.semantic.summarising.function_summaries import summarize

HEADER = "import tensorflow as tf\n"
FORWARD = (
    "def forward(x):\n"
    "    with tf.GradientTape() as tape:\n"
    "        loss = model(x)\n"
    "    return loss, tape\n"
)


def _summary(source: str, module: str = "pkg.mod") -> ModuleSummary:
    model = _model(_tree(source), module)
    return summarize(model, f"{module.replace('.', '/')}.py", lambda node: (1, 1, None, None))


def _tree(source: str) -> cst.Module:
    return cst.parse_module(textwrap.dedent(source))


def _model(tree: cst.Module, module: str = "pkg.mod", handed_back=None) -> FileModel:
    """The model of `tree`; `handed_back` holds calls of that same tree."""
    return build_model(tree, module_name=module, handed_back=handed_back)


def _rebuilt(source: str, index: ProjectIndex, module: str = "pkg.train") -> FileModel:
    """The second walk of `source`, with the calls the first walk's model says hand back a
    tape by `index`."""
    tree = _tree(source)
    return _model(tree, module, handed_tapes(_model(tree, module), index))


def _hands_back(source: str, name: str) -> tuple[tuple[str, bool | None, int, bool], ...]:
    function = _summary(HEADER + source).functions.get(name)
    handed = function.hands_back if function is not None else ()
    return tuple((h.part, h.persistent, h.asked, h.toy) for h in handed)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (FORWARD, (("1", False, 0, False),)),
        (
            "def record(x):\n"
            "    with tf.GradientTape(persistent=True) as tape:\n"
            "        out = model(x)\n"
            "    return tape\n",
            ((WHOLE, True, 0, False),),
        ),
        (  # `persistent=flag`: not known; a first gradient taken in the helper is counted
            "def record(x, flag):\n"
            "    with tf.GradientTape(persistent=flag) as tape:\n"
            "        out = model(x)\n"
            "    first = tape.gradient(out, model.trainable_variables)\n"
            "    return first, tape\n",
            (("1", None, 1, False),),
        ),
        (  # a return in the block and one after it, the same tape at the same place
            "def forward(x, early):\n"
            "    with tf.GradientTape() as tape:\n"
            "        out = model(x)\n"
            "        if early:\n"
            "            return out, tape\n"
            "    return out * 2, tape\n",
            (("1", False, 0, False),),
        ),
        (  # toy values written out in the code
            "def toy():\n"
            "    x = tf.constant([1.0, 2.0])\n"
            "    with tf.GradientTape(persistent=True) as tape:\n"
            "        tape.watch(x)\n"
            "        y = x * x\n"
            "    return y, tape\n",
            (("1", True, 0, True),),
        ),
        (  # a static method is called as a function
            "class Agent:\n"
            "    @staticmethod\n"
            "    def forward(x):\n"
            "        with tf.GradientTape() as tape:\n"
            "            out = model(x)\n"
            "        return out, tape\n",
            (("1", False, 0, False),),
        ),
    ],
)
def test_what_a_function_hands_back(source, expected):
    name = "Agent.forward" if source.startswith("class") else source.split("(")[0][4:]
    assert _hands_back(source, name) == expected


@pytest.mark.parametrize(
    "source",
    [
        # None on another path, or the function runs off its end (which returns None)
        "def f(x):\n    if x is None:\n        return None, None\n"
        "    with tf.GradientTape() as tape:\n        out = model(x)\n    return out, tape\n",
        "def f(x):\n    with tf.GradientTape() as tape:\n        out = model(x)\n"
        "    if x is not None:\n        return out, tape\n",
        "def f(x, keep):\n    with tf.GradientTape() as tape:\n        out = model(x)\n"
        "    return out, tape if keep else None\n",
        # returns of two shapes, or two tapes at the same place
        "def f(x, both):\n    with tf.GradientTape() as tape:\n        out = model(x)\n"
        "    if both:\n        return out, tape, x\n    return out, tape\n",
        "def f(x, flag):\n    with tf.GradientTape() as a:\n        out = model(x)\n"
        "    with tf.GradientTape(persistent=True) as b:\n        out = model(x)\n"
        "    if flag:\n        return out, a\n    return out, b\n",
        # held elsewhere too: stored, passed on, read by a nested function, an attribute
        "def f(self, x):\n    with tf.GradientTape() as tape:\n        out = model(x)\n"
        "    self.last = tape\n    return out, tape\n",
        "def f(x):\n    with tf.GradientTape() as tape:\n        out = model(x)\n"
        "    log_tape(tape)\n    return out, tape\n",
        "def f(x):\n    with tf.GradientTape() as tape:\n        out = model(x)\n"
        "    grads = lambda: tape.gradient(out, x)\n    return grads, tape\n",
        "def f(self, x):\n    self.tape = tf.GradientTape()\n    with self.tape:\n"
        "        out = model(x)\n    return out, self.tape\n",
        "def f(x):\n    with tf.GradientTape() as tape:\n        out = model(x)\n"
        "        tape.__enter__()\n    return out, tape\n",
        # a generator, a coroutine, a decorated function (the decorator may hand back
        # something else)
        "def f(x):\n    with tf.GradientTape() as tape:\n        out = model(x)\n"
        "    yield out\n    return out, tape\n",
        "async def f(x):\n    with tf.GradientTape() as tape:\n        out = model(x)\n"
        "    return out, tape\n",
        "@functools.lru_cache\ndef f(x):\n    with tf.GradientTape() as tape:\n"
        "        out = model(x)\n    return out, tape\n",
        # a tape it was handed, or that another helper made
        "def f(tape, x):\n    with tape:\n        out = model(x)\n    return out, tape\n",
        "def f(x):\n    out, tape = forward(x)\n    return out, tape\n" + FORWARD,
    ],
)
def test_what_a_function_does_not_hand_back(source):
    assert _hands_back(source, "f") == ()


def test_hands_back_round_trips_through_json():
    site = Site("pkg/mod.py", 3, 10, "`tape` in `forward`")
    summary = ModuleSummary(
        "pkg.mod",
        functions={
            "forward": FunctionSummary(
                ("x",),
                hands_back=(
                    HandedBack("1", True, 1, False, site),
                    HandedBack("*", None, 0, True, site),
                ),
            )
        },
    )
    assert ModuleSummary.from_json(json.loads(json.dumps(summary.to_json()))) == summary
    assert _summary(HEADER + FORWARD).functions["forward"].has_facts


CALLER = HEADER + (
    "from pkg.steps import forward, helper\n"
    "def step(x):\n"
    "    loss, tape = forward(x)\n"
    "    first = tape.gradient(loss, model.trainable_variables)\n"
    "    second = tape.gradient(loss, model.trainable_variables)\n"
    "    out, other = helper(x)\n"
    "    return first, second, other\n"
)


def _steps_index(persistent: bool | None) -> ProjectIndex:
    site = Site("pkg/steps.py", 3, 10, "`tape` in `forward`")
    handed = (HandedBack("1", persistent, 0, False, site),)
    steps = ModuleSummary(
        "pkg.steps",
        functions={
            "forward": FunctionSummary(("x",), hands_back=handed),
            "helper": FunctionSummary(("x",), hands_back=handed),
        },
    )
    return ProjectIndex([steps]).with_module(ModuleSummary("pkg.train"))


def test_only_calls_whose_tape_is_asked_for_gradients_are_looked_up():
    model = _model(_tree(CALLER), "pkg.train")
    index = _steps_index(False)
    found = handed_tapes(model, index)
    # `helper` hands back a tape too, but nothing asks `other` for gradients.
    assert [(model.module.code_for_node(call), list(parts)) for call, parts in found.items()] == [
        ("forward(x)", ["1"])
    ]
    assert index.asked == {"pkg.steps.forward"}


def test_the_second_walk_binds_the_callers_tape():
    assert _model(_tree(CALLER), "pkg.train").tapes == []
    model = _rebuilt(CALLER, _steps_index(False))
    (tape,) = model.tapes
    assert tape.name == "tape" and tape.persistent is Tri.NO
    assert tape.handed_back is not None and tape.handed_back.helper == "pkg.steps.forward"
    assert model.module.code_for_node(tape.ctor) == "forward(x)"
    assert [call.nth for call in model.calls_on(tape)] == [1, 2]
    assert tape.watch_accessed_variables is Tri.UNKNOWN  # what the helper watched is unseen


@pytest.mark.parametrize(("persistent", "expected"), [(True, Tri.YES), (None, Tri.UNKNOWN)])
def test_the_callers_tape_has_the_helpers_persistence(persistent, expected):
    model = _rebuilt(CALLER, _steps_index(persistent))
    assert model.tapes[0].persistent is expected


def test_a_fresh_tape_each_time_the_call_runs():
    source = HEADER + (
        "from pkg.steps import forward\n"
        "def steps(batches):\n"
        "    for x in batches:\n"
        "        loss, tape = forward(x)\n"
        "        yield tape.gradient(loss, model.trainable_variables)\n"
    )
    model = _rebuilt(source, _steps_index(False))
    (tape,) = model.tapes
    assert model.calls_on(tape)[0].nth == 1 and tape.max_calls == 1


def test_the_calls_a_handed_back_tape_answered_in_its_helper_count():
    source = HEADER + (
        "def _forward(x):\n"
        "    with tf.GradientTape(persistent=True) as tape:\n"
        "        loss = model(x)\n"
        "    first = tape.gradient(loss, model.trainable_variables)\n"
        "    return first, loss, tape\n"
        "def step(x):\n"
        "    first, loss, tape = _forward(x)\n"
        "    return first, tape.gradient(loss, model.trainable_variables)\n"
    )
    model = _rebuilt(source, ProjectIndex().with_module(_summary(source)), "pkg.mod")
    helper_tape, caller_tape = model.tapes
    # One call in the helper, one in the caller: the persistence is needed.
    assert serves_at_most_one_call(model, caller_tape) is Tri.NO
    assert serves_at_most_one_call(model, helper_tape) is Tri.NO
