"""Function summaries and the project index: what a module says of its functions, and how
the index resolves names and chains of helpers across modules."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from tapelint.semantic import build_model
from tapelint.semantic.project_model.summaries import (
    WHOLE,
    Applied,
    Built,
    CallResult,
    Flow,
    Forward,
    FunctionSummary,
    ModuleSummary,
    ProjectIndex,
    Site,
    Spent,
)
from tapelint.semantic.summarising.function_summaries import summarize


def _summary(source: str, module: str = "pkg.mod", *, is_package: bool = False) -> ModuleSummary:
    tree = cst.parse_module(textwrap.dedent(source))
    model = build_model(tree, module_name=module, is_package=is_package)
    return summarize(model, f"{module.replace('.', '/')}.py", lambda node: (1, 1, None, None))


HEADER = "import tensorflow as tf\n"


def test_a_function_that_returns_raw_gradients():
    summary = _summary(
        HEADER + "def grads(model, x):\n"
        "    with tf.GradientTape() as tape:\n        loss = model(x)\n"
        "    g = tape.gradient(loss, model.trainable_variables)\n    return g, loss\n"
    )
    function = summary.functions["grads"]
    assert function.params == ("model", "x")
    raw = function.returned("0")
    assert raw is not None and len(raw.raw) == 1 and not raw.opaque
    assert "tape.gradient" in raw.raw[0].label and "grads" in raw.raw[0].label


def test_filtered_gradients_are_not_raw():
    summary = _summary(
        HEADER + "def grads(tape, loss, variables):\n"
        "    g = tape.gradient(loss, variables)\n"
        "    return [x for x in g if x is not None]\n"
    )
    function = summary.functions["grads"]  # it spends its tape (see the tests of spends)
    assert all(flow.is_empty for _, flow in function.returns)


def test_a_received_tape_and_a_passed_parameter():
    summary = _summary(
        HEADER + "def grads(tape, loss, variables):\n    return tape.gradient(loss, variables)\n"
        "def clip(gradients, norm):\n    return tf.clip_by_global_norm(gradients, norm)[0]\n"
    )
    assert len(summary.functions["grads"].returned(WHOLE).raw) == 1
    clip = summary.functions["clip"].returned(WHOLE)
    # `tf.clip_by_global_norm` is kept symbolic; the index resolves it from the library.
    assert clip.calls and clip.calls[0].target == "tensorflow.clip_by_global_norm"
    assert ProjectIndex([summary]).returns("pkg.mod.clip", WHOLE) == Flow(params=(0,))


def test_applies_and_forwards():
    summary = _summary(
        HEADER + "from .steps import apply_all\n"
        "class Agent:\n"
        "    def _apply(self, grads):\n"
        "        self.opt.apply_gradients(zip(grads, self.variables))\n"
        "    def update(self, grads):\n        self._apply(grads)\n"
        "    def delegate(self, grads):\n        apply_all(grads)\n"
        "    def checked(self, grads):\n"
        "        if any(g is None for g in grads):\n            raise ValueError\n"
        "        self.opt.apply_gradients(zip(grads, self.variables))\n"
    )
    assert [a.param for a in summary.functions["Agent._apply"].applies] == [1]
    (forward,) = summary.functions["Agent.update"].forwards
    assert (forward.param, forward.target, forward.arg) == (1, "pkg.mod.Agent._apply", "1")
    (outside,) = summary.functions["Agent.delegate"].forwards
    assert outside.target == "pkg.steps.apply_all"  # relative import resolved
    assert "Agent.checked" not in summary.functions


def _site(label: str) -> Site:
    return Site("x.py", 1, 1, label)


def test_the_index_follows_chains_across_modules():
    helpers = ModuleSummary(
        "pkg.helpers",
        functions={
            "raw": FunctionSummary(("model",), ((WHOLE, Flow(raw=(_site("gradient"),))),)),
            "apply": FunctionSummary(("grads",), applies=(Applied(0, _site("apply")),)),
        },
    )
    front = ModuleSummary(
        "pkg.front",
        functions={
            "relay": FunctionSummary(
                ("g",), forwards=(Forward(0, "pkg.helpers.apply", "0", _site("relay")),)
            ),
            "fetch": FunctionSummary(
                ("m",), ((WHOLE, Flow(calls=(CallResult("pkg.raw", WHOLE),))),)
            ),
        },
    )
    package = ModuleSummary("pkg", aliases={"raw": "pkg.helpers.raw"})
    index = ProjectIndex([helpers, front, package])
    assert index.returns("pkg.front.fetch", WHOLE) == Flow(raw=(_site("gradient"),))
    assert index.applies("pkg.front.relay") == {0: ((_site("relay"), _site("apply")),)}
    assert index.returns("pkg.front.missing", WHOLE) is None


def test_star_imports_bases_and_cycles():
    base = ModuleSummary(
        "lib.base",
        functions={"Base.step": FunctionSummary(("self", "g"), applies=(Applied(1, _site("a")),))},
        bases={"Base": ()},
        classes={"Base": ("step",)},
    )
    child = ModuleSummary(
        "app.agent",
        star_imports=("lib.base",),
        bases={"Agent": ("lib.base.Base",)},
        classes={"Agent": ()},
    )
    loop = ModuleSummary(
        "app.loop",
        functions={
            "f": FunctionSummary((), ((WHOLE, Flow(calls=(CallResult("app.loop.g", WHOLE),))),)),
            "g": FunctionSummary((), ((WHOLE, Flow(calls=(CallResult("app.loop.f", WHOLE),))),)),
        },
    )
    index = ProjectIndex([base, child, loop])
    assert index.resolve("app.agent.Agent.step") == "lib.base.Base.step"
    assert index.resolve("app.agent.Base.step") == "lib.base.Base.step"
    flow = index.returns("app.loop.f", WHOLE)
    assert flow is not None and flow.opaque and not flow.raw


def test_a_view_records_what_it_asked_outside_its_module():
    index = ProjectIndex().with_module(ModuleSummary("app.train"))
    index.function("app.train.local")
    index.function("app.utils.grad")
    index.function("tensorflow.clip_by_global_norm")  # the library: no other module
    assert index.asked == {"app.utils.grad"}


@pytest.mark.parametrize(
    "summary",
    [
        ModuleSummary("m"),
        ModuleSummary(
            "pkg.m",
            functions={
                "f": FunctionSummary(
                    ("a", "b"),
                    (("0", Flow(raw=(Site("p.py", 3, 4, "`t.gradient`", 2),), params=(1,))),),
                    (Applied(0, _site("apply")),),
                    (Forward(1, "pkg.n.g", "x", _site("call")),),
                ),
                "g": FunctionSummary(
                    ("x",),
                    ((WHOLE, Flow(calls=(CallResult("h", "1", (("0", Flow(params=(0,))),)),))),),
                ),
            },
            aliases={"u": "pkg.utils"},
            star_imports=("pkg.common",),
            bases={"C": ("keras.Model",)},
        ),
    ],
)
def test_summaries_round_trip_through_json(summary):
    import json

    assert ModuleSummary.from_json(json.loads(json.dumps(summary.to_json()))) == summary


AGENT = HEADER + (
    "from tf_agents.utils import eager_utils\n"
    "class Agent:\n"
    "    def train(self, x):\n"
    "        variables = self._net.trainable_variables\n"
    "        with tf.GradientTape() as tape:\n"
    "            loss = tf.reduce_sum(self._net(x))\n"
    "        grads = tape.gradient(loss, variables)\n"
    "        def optimize():\n"
    "            self._apply_gradients(grads, variables, self._opt)\n"
    "        tf.cond(self._every_other, optimize, tf.no_op)\n"
    "    def _apply_gradients(self, gradients, variables, optimizer):\n"
    "        grads_and_vars = list(zip(gradients, variables))\n"
    "        if self._clipping is not None:\n"
    "            grads_and_vars = eager_utils.clip_gradient_norms(grads_and_vars, 1.0)\n"
    "        optimizer.apply_gradients(grads_and_vars)\n"
)


def test_a_name_bound_on_two_paths_gives_the_same_summary_every_time():
    """Both bindings of `grads_and_vars` lead to the parameter, whichever is met first: the
    second one's argument mentions the first (a walk once skipped what another path had
    followed, so the fact came and went with the order of a frozenset)."""
    found = {
        tuple(a.param for a in _summary(AGENT).functions["Agent._apply_gradients"].applies)
        for _ in range(30)
    }
    assert found == {(1,)}


def test_a_nested_function_calls_the_method_of_its_enclosing_class():
    """`self._apply_gradients(grads, ...)` inside `optimize()`, nested in the method that
    computed `grads`: the callee is the class's method, and `grads` is the method's."""
    model = build_model(cst.parse_module(AGENT), module_name="pkg.agent")
    summary = summarize(model, "pkg/agent.py", lambda node: (1, 1, None, None))
    index = ProjectIndex([summary]).with_module(summary)
    model.index = index
    from tapelint.rules.updates._appliers import helper_applies

    from tapelint.semantic.gradient_routes.gradients import gradients_of

    [helper] = list(helper_applies(model))
    assert model.module.code_for_node(helper.node.func) == "self._apply_gradients"
    assert gradients_of(model, helper.argument, helper.scope).is_raw


def test_a_parameter_asked_for_gradients_on_every_path_is_spent():
    summary = _summary(
        HEADER + "def grads(model, tape, loss):\n"
        '    """Gradients."""\n'
        "    with tf.name_scope('grads'):\n"
        "        g = tape.gradient(loss, model.trainable_variables)\n"
        "    return g\n"
        "def jac(tape, y, x):\n    tf.print('jacobian')\n    return tape.jacobian(y, x)\n"
    )
    [spent] = summary.functions["grads"].spends
    assert spent.param == 1 and spent.site.label == "`tape.gradient` in `grads`"
    assert summary.functions["grads"].spent_at(1) == spent.site
    assert [s.param for s in summary.functions["jac"].spends] == [0]


@pytest.mark.parametrize(
    "body",
    [
        "    if loss is not None:\n        return tape.gradient(loss, vs)\n",
        "    for l in [loss]:\n        g = tape.gradient(l, vs)\n",
        "    try:\n        return tape.gradient(loss, vs)\n    except RuntimeError:\n        pass\n",
        "    return [tape.gradient(l, vs) for l in loss]\n",
        "    return loss is not None and tape.gradient(loss, vs)\n",
        "    if not vs:\n        return None\n    return tape.gradient(loss, vs)\n",
        "    yield tape.gradient(loss, vs)\n",
        "    tape = tf.GradientTape()\n    return tape.gradient(loss, vs)\n",
        "    return (lambda: tape.gradient(loss, vs))\n",
        "    print(tape)\n",
    ],
    ids=[
        "branch",
        "loop",
        "try",
        "comprehension",
        "boolean",
        "after-an-early-return",
        "generator",
        "rebound",
        "lambda",
        "no-call",
    ],
)
def test_a_parameter_that_may_not_be_asked_is_not_spent(body):
    summary = _summary(HEADER + "def grads(tape, loss, vs):\n" + body)
    function = summary.functions.get("grads")
    assert function is None or function.spends == ()


def test_an_async_function_spends_nothing_when_called():
    summary = _summary(
        HEADER + "async def grads(tape, loss, vs):\n    return tape.gradient(loss, vs)\n"
    )
    function = summary.functions.get("grads")
    assert function is None or function.spends == ()


def test_spends_round_trip_through_json():
    import json

    site = Site("pkg/mod.py", 3, 12, "`tape.gradient` in `grads`")
    summary = ModuleSummary(
        "pkg.mod", functions={"grads": FunctionSummary(("tape",), spends=(Spent(0, site),))}
    )
    assert ModuleSummary.from_json(json.loads(json.dumps(summary.to_json()))) == summary


# ---------------------------------------------------------------------- builders
BUILDERS = """
import tensorflow as tf
from tensorflow import keras


def build_classifier():
    inputs = keras.Input((8,))
    hidden = keras.layers.BatchNormalization()(keras.layers.Dense(16)(inputs))
    return keras.Model(inputs, keras.layers.Dense(2)(hidden))


def build_noisy():
    return keras.Sequential([keras.layers.Dense(4), keras.layers.Dropout(0.5)])


def build_plain():
    return keras.Sequential([keras.layers.Dense(4)])


def build_layer():
    return keras.layers.Dense(4, trainable=False)


def wrap(model):
    return model


def maybe(flag):
    if flag:
        return build_plain()
    return None


async def build_later():
    return build_plain()
"""


def test_builders_say_what_they_build():
    functions = _summary(BUILDERS, "models").functions
    built = {name: f.builds for name, f in functions.items() if f.builds is not None}
    # A parameter handed back, a path that returns None, a coroutine: nothing built.
    assert built == {
        "build_classifier": Built(
            True,
            in_variables="BatchNormalization",
            in_weights="BatchNormalization",
            training_part="BatchNormalization",
        ),
        # Seed state is not a weight; dropout computes something else in training.
        "build_noisy": Built(True, in_variables="Dropout", training_part="Dropout"),
        "build_plain": Built(True),
        "build_layer": Built(
            False, in_variables="Dense(trainable=False)", in_weights="Dense(trainable=False)"
        ),
    }
    assert functions["build_plain"].params == ()


def test_a_legacy_keras_builder_says_so():
    source = "import tf_keras\n\n\ndef build():\n    return tf_keras.Sequential([tf_keras.layers.Dense(1)])\n"
    assert _summary(source, "models").functions["build"].builds == Built(True, legacy=True)


def test_builds_round_trip_through_json():
    import json

    summary = _summary(BUILDERS, "models")
    assert ModuleSummary.from_json(json.loads(json.dumps(summary.to_json()))) == summary


# ---------------------------------------------------------------------- methods of classes
_BASE = ModuleSummary(
    "lib.base",
    functions={"Base.step": FunctionSummary(("self", "g"), applies=(Applied(1, _site("a")),))},
    bases={"Base": (), "Quiet": ("lib.base.Base",)},
    classes={"Base": ("step",), "Quiet": ("step",)},
)


def _child(*bases: str, binds: tuple[str, ...] = ()) -> ModuleSummary:
    return ModuleSummary("app.agent", bases={"Agent": bases}, classes={"Agent": binds})


def test_a_method_is_found_up_the_bases_in_order():
    index = ProjectIndex([_BASE, _child("lib.base.Base", "keras.Model")])
    assert index.resolve("app.agent.Agent.step") == "lib.base.Base.step"


def test_an_override_ends_the_look_up_even_with_no_fact_to_give():
    # `Quiet.step` filters None: no summary, and the base's must not be found instead.
    assert ProjectIndex([_BASE]).resolve("lib.base.Quiet.step") is None
    index = ProjectIndex([_BASE, _child("lib.base.Quiet")])
    assert index.resolve("app.agent.Agent.step") is None
    overridden = ProjectIndex([_BASE, _child("lib.base.Base", binds=("step",))])
    assert overridden.resolve("app.agent.Agent.step") is None


@pytest.mark.parametrize(
    "bases",
    [
        ("keras.Model", "lib.base.Base"),  # a library base first may define the method
        ("", "lib.base.Base"),  # a base the module cannot name
        ("lib.missing.Base",),  # a module the index does not hold
    ],
)
def test_an_unknown_base_before_the_definition_makes_the_method_unknown(bases):
    assert ProjectIndex([_BASE, _child(*bases)]).resolve("app.agent.Agent.step") is None


def test_a_diamond_makes_the_method_unknown():
    diamond = ModuleSummary(
        "app.d",
        functions={"A.step": FunctionSummary(("self", "g"), applies=(Applied(1, _site("a")),))},
        bases={"A": (), "B": ("app.d.A",), "C": ("app.d.A",), "D": ("app.d.B", "app.d.C")},
        classes={"A": ("step",), "B": (), "C": (), "D": ()},
    )
    index = ProjectIndex([diamond])
    assert index.resolve("app.d.B.step") == "app.d.A.step"
    assert index.resolve("app.d.D.step") is None


def test_an_open_method_is_unknown_when_a_subclass_in_its_module_overrides_it():
    index = ProjectIndex([_BASE])
    assert index.resolve("lib.base.Base+.step") is None  # `Quiet` overrides `step`
    alone = ModuleSummary(
        "lib.solo",
        functions={"Base.step": _BASE.functions["Base.step"]},
        bases={"Base": (), "Child": ("lib.solo.Base",)},
        classes={"Base": ("step",), "Child": ("other",)},
    )
    assert ProjectIndex([alone]).resolve("lib.solo.Base+.step") == "lib.solo.Base.step"


def test_a_view_asks_for_the_base_method_so_an_edit_of_the_base_changes_its_digest():
    view = ProjectIndex([_BASE]).with_module(_child("lib.base.Base"))
    assert view.resolve("app.agent.Agent.step") == "lib.base.Base.step"
    assert "lib.base.Base.step" in view.asked
    edited = ModuleSummary(
        "lib.base", bases=_BASE.bases, classes={"Base": ("step",), "Quiet": ("step",)}
    )
    other = ProjectIndex([edited]).with_module(_child("lib.base.Base"))
    assert view.digest(view.asked) != other.digest(view.asked)


def test_classes_and_bases_come_from_the_whole_text():
    source = textwrap.dedent(
        """
        import tensorflow as tf
        from keras import Model
        from .base import Base


        class Agent(Base, Model, object):
            def learn(self, x):
                with tf.GradientTape() as tape:
                    loss = x
                return tape.gradient(loss, [x])

            def step(self, grads):
                return [g for g in grads if g is not None]


        class Made(make_base()):
            rate = 0.1
        """
    )
    model = build_model(cst.parse_module(source), source_text=source, module_name="pkg.agent")
    summary = summarize(model, "pkg/agent.py", lambda node: (1, 1, None, None))
    assert summary.bases == {"Agent": ("pkg.base.Base", "keras.Model"), "Made": ("",)}
    assert summary.classes == {"Agent": ("learn", "step"), "Made": ("rate",)}
