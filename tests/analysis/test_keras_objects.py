"""How a Keras object was made (`Origin`), the one answer TAP203, TAP204 and TAP303 share."""

from __future__ import annotations

import libcst as cst
import pytest
from tapelint.rules.differentiable_path._keras_calls import calls_without_training

from tapelint.linter.engine import Linter
from tapelint.linter.registry import rule_by_code_or_name
from tapelint.semantic import Tri
from tapelint.semantic.keras.keras_objects import How, KerasObjects
from tapelint.semantic.project_model.summaries import (
    Built,
    Flow,
    FunctionSummary,
    ModuleSummary,
    ProjectIndex,
)
from tests.analysis.helpers import code, model_of

HEADER = "import tensorflow as tf\nimport keras\n"
PRELUDE = (
    "model = tf.keras.Sequential([])\n"
    "class Net(keras.Model):\n    pass\n"
    "class Custom(keras.Layer):\n    pass\n"
    "class MyDense(keras.layers.Dense):\n    pass\n"
    "def step(m: keras.Model):\n    return m\n"
    "def build():\n    return model\n"
)


def _origins(expr: str) -> set[tuple[How, bool, str | None]] | None:
    model = model_of(HEADER + PRELUDE + f"probe = {expr}\n")
    (d,) = [d for d in model.defs_by_stmt[model.module.body[-1]] if d.name == "probe"]
    assert d.value is not None
    found = KerasObjects(model).origins(d.value)
    return None if found is None else {(o.how, o.is_model, o.keras_class) for o in found}


@pytest.mark.parametrize(
    ("expr", "origins"),
    [
        ("model", {(How.CONSTRUCTED, True, "keras.Sequential")}),
        ("keras.layers.Dropout(0.5)", {(How.CONSTRUCTED, False, "keras.layers.Dropout")}),
        ("Net()", {(How.SUBCLASS, True, "keras.Model")}),
        ("Custom()", {(How.SUBCLASS, False, "keras.Layer")}),
        ("MyDense(3)", {(How.SUBCLASS, False, "keras.layers.Dense")}),
        ("model.layers[0]", {(How.TAKEN, False, None)}),
        ("model.get_layer('x')", {(How.TAKEN, False, None)}),
        ("build()", {(How.CONSTRUCTED, True, "keras.Sequential")}),
        ("step(model)", {(How.ANNOTATED, True, "keras.Model")}),
        ("tf.Module()", None),
        ("unknown_name", None),
    ],
)
def test_origins_say_how_each_object_was_made(expr, origins):
    assert _origins(expr) == origins


def test_an_annotated_parameter_is_keras_but_not_built_here():
    model = model_of(HEADER + "def step(m: keras.Model):\n    return m\n")
    (function,) = [s for s in model.module.body if isinstance(s, cst.FunctionDef)]
    (returned,) = [s.body[0].value for s in function.body.body]
    (origin,) = KerasObjects(model).origins(returned)
    assert (origin.how, origin.is_model) == (How.ANNOTATED, True)


CLASS = (
    "class M(tf.keras.Model):\n"
    "    def __init__(self):\n        super().__init__()\n"
    "        self.enc = tf.keras.Sequential([tf.keras.layers.BatchNormalization()])\n"
    "        self.dense = tf.keras.layers.Dense(2)\n"
    "        self.other = make_other()\n"
)


@pytest.mark.parametrize(
    ("expr", "answer"),
    [("self.enc", Tri.YES), ("self.dense", Tri.YES), ("self.other", Tri.UNKNOWN)],
)
def test_self_attributes_are_known_from_every_assignment_in_the_class(expr, answer):
    model = model_of(HEADER + CLASS + f"    def probe(self):\n        return {expr}\n")
    (owner,) = [s for s in model.module.body if isinstance(s, cst.ClassDef)]
    probe = owner.body.body[-1]
    (returned,) = [s.body[0].value for s in probe.body.body]
    assert KerasObjects(model).is_keras_object(returned) is answer


def test_a_watched_sub_model_assigned_in_a_cut_out_init_is_reported():
    """`__init__` never mentions a tape, so it is cut out before the parse; the sub-model
    stored there is read from the text, for TAP204 as for TAP303."""
    source = (
        HEADER + CLASS + "    def train_step(self, d):\n"
        "        with tf.GradientTape(watch_accessed_variables=False) as t:\n"
        "            t.watch(self.enc.trainable_variables)\n"
        "            t.watch(self.other.trainable_variables)\n"
        "            l = self.enc(d, training=True)\n"
        "        return t.gradient(l, self.enc.trainable_variables)\n"
    )
    diagnostics = Linter([rule_by_code_or_name("TAP204")]).check_text(source, "m.py")
    assert [d.start.line for d in diagnostics] == [11]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        # Known as Keras, but not made here: TAP303 stays silent (RULES.md: built in the module).
        (
            "def step(m: keras.Model, x):\n    with tf.GradientTape() as t:\n        l = m(x)\n"
            "    return t.gradient(l, m.trainable_variables)\n",
            [],
        ),
        (
            "class MyDense(keras.layers.Dense):\n    pass\nm = MyDense(3)\n"
            "with tf.GradientTape() as t:\n    l = m(x)\ng = t.gradient(l, m.trainable_variables)\n",
            [],
        ),
        (
            "class Block(keras.Layer):\n    def __init__(self):\n"
            "        self.norm = keras.layers.BatchNormalization()\nm = Block()\n"
            "with tf.GradientTape() as t:\n    l = m(x)\ng = t.gradient(l, m.trainable_variables)\n",
            ["m(x)"],
        ),
    ],
)
def test_training_flag_asks_only_about_objects_made_here(body, expected):
    model = model_of(HEADER + body)
    assert [code(model, c.node) for c in calls_without_training(model)] == expected


# ---------------------------------------------------------------------- built elsewhere
_MODELS = ModuleSummary(
    "models",
    functions={
        "build": FunctionSummary((), builds=Built(True, in_variables="BatchNormalization")),
        "build_legacy": FunctionSummary((), builds=Built(True, legacy=True)),
        "helper": FunctionSummary(("x",), returns=(("*", Flow(params=(0,))),)),
    },
)


def _with_index(source: str):
    model = model_of(source)
    model.index = ProjectIndex([_MODELS]).with_module(ModuleSummary("__main__"))
    return model, KerasObjects(model)


@pytest.mark.parametrize(
    ("call", "known"),
    [
        ("build()", True),
        ("models.build()", True),
        ("helper(x)", False),  # no `builds` fact
        ("missing()", False),  # no summary at all
        ("tf.keras.utils.get_file('x')", False),  # TensorFlow's: never the project's
    ],
)
def test_a_model_built_by_a_function_of_another_module(call, known):
    model, keras = _with_index(
        "import tensorflow as tf\nimport models\nfrom models import build, helper, missing\n"
        f"probe = {call}\n"
    )
    (d,) = [d for d in model.defs_by_stmt[model.module.body[-1]] if d.name == "probe"]
    assert d.value is not None
    found = keras.origins(d.value)
    if not known:
        assert found is None
        return
    assert found is not None
    (origin,) = found
    assert (origin.how, origin.is_model, origin.keras_class) == (How.BUILT, True, "models.build")
    assert origin.built == Built(True, in_variables="BatchNormalization")
    assert "models.build" in model.index.asked


def test_variables_of_a_legacy_keras_builder_are_tf_variables():
    model, keras = _with_index(
        "from models import build, build_legacy\nnew = build()\nold = build_legacy()\n"
        "a = new.trainable_variables\nb = old.trainable_variables\n"
    )
    a, b = (model.module.body[i].body[0].value for i in (3, 4))  # type: ignore[attr-defined]
    assert keras.holds_keras_variables(a) is Tri.YES
    assert keras.holds_keras_variables(b) is Tri.UNKNOWN
