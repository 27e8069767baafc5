"""Whose optimizer an expression is (a Keras one, another library's, or unknown), which
decides whether `.apply(...)` applies gradients (TAP401, TAP402)."""

from __future__ import annotations

import pytest

from tapelint.semantic.gradient_routes.optimizers import (
    Library,
    Optimizers,
    gradient_applies,
    library_of_class,
)
from tests.analysis.helpers import model_of

HEADER = "import tensorflow as tf\nimport keras\nimport sonnet as snt\n"


def _library(setup: str, expr: str) -> Library | None:
    model = model_of(HEADER + setup + f"probe = {expr}\n")
    (d,) = [d for d in model.defs_by_stmt[model.module.body[-1]] if d.name == "probe"]
    assert d.value is not None
    return Optimizers(model).library(d.value)


@pytest.mark.parametrize(
    ("qualified", "expected"),
    [
        ("keras.optimizers.Adam", Library.KERAS),
        ("tensorflow.optimizers.SGD", Library.KERAS),
        ("keras.optimizers.get", Library.KERAS),
        ("keras.mixed_precision.LossScaleOptimizer", Library.KERAS),
        ("tensorflow_addons.optimizers.AdamW", Library.KERAS),
        ("keras.optimizers.schedules.ExponentialDecay", None),
        ("sonnet.optimizers.Adam", Library.OTHER),
        ("sonnet.Optimizer", Library.OTHER),
        ("mylib.training.LionOptimizer", Library.OTHER),
        ("tensorflow.train.AdamOptimizer", Library.OTHER),  # TF1: skips None itself
        ("tensorflow.compat.v1.train.GradientDescentOptimizer", Library.OTHER),
        ("tensorflow.train.Checkpoint", None),
        ("numpy.array", None),
        ("mylib.layers.Dense", None),
    ],
)
def test_library_of_a_class(qualified, expected):
    assert library_of_class(qualified) is expected


@pytest.mark.parametrize(
    ("setup", "expr", "expected"),
    [
        ("", "tf.keras.optimizers.Adam(1e-3)", Library.KERAS),
        ("opt = keras.optimizers.SGD(0.1)\n", "opt", Library.KERAS),
        ("def make():\n    return keras.optimizers.Adam()\n", "make()", Library.KERAS),
        ("", "snt.optimizers.SGD(0.1)", Library.OTHER),
        ("opt = keras.optimizers.SGD(0.1) if flag else snt.optimizers.SGD(0.1)\n", "opt", None),
        ("", "make_optimizer()", None),
        (
            "model = keras.Sequential([keras.layers.Dense(1)])\n",
            "model.optimizer",
            Library.KERAS,
        ),
        ("", "trainer.optimizer", None),
    ],
)
def test_expressions(setup, expr, expected):
    assert _library(setup, expr) is expected


def _applies(source: str) -> list[str]:
    model = model_of(HEADER + source)
    return [model.module.code_for_node(a.node.func) for a in gradient_applies(model)]


def test_self_attributes_and_the_compiled_optimizer():
    source = (
        "class Agent:\n"
        "    def __init__(self):\n"
        "        self.opt = snt.optimizers.Adam(1e-3)\n"
        "        self.keras_opt = keras.optimizers.Adam(1e-3)\n"
        "    def update(self, grads, variables):\n"
        "        self.opt.apply(grads, variables)\n"
        "        self.keras_opt.apply(grads, variables)\n"
        "        self.opt.apply_gradients(zip(grads, variables))\n"
        "class Net(keras.Model):\n"
        "    def train_step(self, data):\n"
        "        self.optimizer.apply(data, self.trainable_variables)\n"
        "def helper(optimizer, grads, variables):\n"
        "    optimizer.apply(grads, variables)\n"
        "    optimizer.apply_gradients(zip(grads, variables))\n"
    )
    assert sorted(_applies(source)) == [
        "optimizer.apply_gradients",
        "self.keras_opt.apply",
        "self.optimizer.apply",
    ]


def test_classes_of_the_file():
    source = (
        "class Adam:\n    def apply_gradients(self, grads, variables):\n        pass\n"
        "class Scaled(keras.optimizers.SGD):\n    pass\n"
        "class MoreScaled(Scaled):\n    pass\n"
        "own = Adam()\nderived = MoreScaled()\n"
    )
    assert _library(source, "own") is Library.OTHER
    assert _library(source, "derived") is Library.KERAS
