"""What a construction of training state builds and holds (TAP502)."""

from __future__ import annotations

import textwrap

import pytest
from tapelint.rules.compiled_steps._constructors import Constructors, StateKind

from tests.analysis.helpers import code, model_of


def _sites(source: str, prefix: str = "x = "):
    """The constructors, and the call assigned by each `x = ...` line of `source`."""
    model = model_of("import tensorflow as tf\nimport keras\n" + textwrap.dedent(source))
    constructors = Constructors(model)
    calls = [s for s in model.calls if code(model, s.stmt).startswith(prefix)]
    return constructors, [s for s in calls if s.node is s.stmt.body[0].value]


@pytest.mark.parametrize(
    ("call", "kind"),
    [
        ("tf.keras.optimizers.Adam()", StateKind.OPTIMIZER),
        ("tf.compat.v1.train.MomentumOptimizer(0.1, 0.9)", StateKind.OPTIMIZER),
        ("keras.Sequential([])", StateKind.MODEL),
        ("keras.layers.Dense(3)", StateKind.LAYER),
        ("tf.Variable(1.0)", StateKind.VARIABLE),
        ("keras.layers.Dropout(0.2)", None),
        ("keras.optimizers.schedules.ExponentialDecay(0.1, 10, 0.9)", None),
        ("make_optimizer()", None),
    ],
)
def test_kinds(call, kind):
    constructors, (site,) = _sites(f"x = {call}\n")
    assert constructors.kind(site) is kind


@pytest.mark.parametrize(
    ("call", "slotless"),
    [
        ("tf.compat.v1.train.GradientDescentOptimizer(0.1)", True),
        ("tf.keras.optimizers.SGD()", True),
        ("tf.keras.optimizers.SGD(0.01, momentum=0.0, nesterov=True)", True),
        ("keras.optimizers.SGD(learning_rate=rate, use_ema=False)", True),
        ("keras.optimizers.SGD(lr=0.1)", True),
        ("tf.keras.optimizers.SGD(0.01, 0.9)", False),
        ("tf.keras.optimizers.SGD(0.01, momentum=m)", False),
        ("tf.keras.optimizers.SGD(0.01, use_ema=True)", False),
        ("tf.keras.optimizers.SGD(0.01, gradient_accumulation_steps=4)", False),
        ("tf.keras.optimizers.SGD(keras.optimizers.schedules.CosineDecay(0.1, 100))", False),
        ("tf.keras.optimizers.SGD(schedule)", False),
        ("tf.keras.optimizers.SGD(Warmup(0.1))", False),
        ("tf.compat.v1.train.MomentumOptimizer(0.1, 0.9)", False),
        ("tf.keras.optimizers.Adam(0.1)", False),
        ("tensorflow_addons.optimizers.SGDW(1e-4, 0.1)", False),
    ],
)
def test_slotless_optimizers(call, slotless):
    source = (
        "import tensorflow_addons\n"
        "schedule = keras.optimizers.schedules.ExponentialDecay(0.1, 10, 0.9)\n"
        "class Warmup(keras.optimizers.schedules.LearningRateSchedule):\n    pass\n"
        f"x = {call}\n"
    )
    constructors, (site,) = _sites(source)
    assert constructors.is_slotless_optimizer(site) is slotless


@pytest.mark.parametrize(
    ("call", "built"),
    [
        ("keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])", True),
        ("keras.Sequential([keras.layers.Dense(3, input_shape=(4,))])", True),
        ("keras.Model(inputs, outputs)", True),
        ("keras.Model(inputs=i, outputs=o)", True),
        ("keras.applications.ResNet50(weights=None)", True),
        ("Scale()", True),
        ("keras.Sequential([keras.layers.Dense(3)])", False),
        ("keras.layers.Dense(3)", False),
        ("keras.layers.Dense(3, input_shape=(4,))", False),
        ("Net()", False),
    ],
)
def test_construction_that_creates_weights_at_once(call, built):
    source = (
        "class Scale(keras.layers.Layer):\n    def __init__(self):\n"
        "        super().__init__()\n        self.s = tf.Variable(1.0)\n"
        "class Net(keras.Model):\n    def __init__(self):\n"
        "        super().__init__()\n        self.d = keras.layers.Dense(3)\n"
        f"x = {call}\n"
    )
    constructors, (site,) = _sites(source)
    assert constructors.builds_at_construction(site) is built
