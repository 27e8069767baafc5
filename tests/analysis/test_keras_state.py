"""Which Keras models and layers certainly hold non-trainable variables (the evidence TAP203
needs before it says `variables` has entries without a gradient). Each case with a layer
was measured on Keras 3.15 by building it and listing `non_trainable_variables`."""

from __future__ import annotations

import pytest

from tapelint.semantic.keras.keras_objects import KerasObjects
from tapelint.semantic.keras.keras_state import FROZEN, NonTrainableState
from tests.analysis.helpers import model_of

HEADER = "import tensorflow as tf\nimport keras\nfrom keras import layers\n"


def _state(setup: str, expr: str, header: str = HEADER) -> str | None:
    model = model_of(header + setup + f"probe = {expr}\n")
    (d,) = [d for d in model.defs_by_stmt[model.module.body[-1]] if d.name == "probe"]
    assert d.value is not None
    return NonTrainableState(KerasObjects(model)).of(d.value)


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("layers.BatchNormalization()", "BatchNormalization"),
        ("layers.Normalization()", "Normalization"),
        ("layers.SpectralNormalization(layers.Dense(3))", "SpectralNormalization"),
        ("layers.Dense(3, trainable=False)", "Dense(trainable=False)"),
        # Keras 3 layers that draw random numbers keep their seed state as a variable.
        ("layers.Dropout(0.5)", "Dropout"),
        ("layers.GaussianNoise(0.1)", "GaussianNoise"),
        ("layers.RandomFlip('horizontal')", "RandomFlip"),
        ("layers.LSTM(8, dropout=0.2)", "LSTM(dropout=...)"),
        ("layers.Bidirectional(layers.LSTM(8, dropout=0.2))", "LSTM(dropout=...)"),
        ("keras.applications.ResNet50(weights=None)", "ResNet50"),
        ("layers.Dense(3)", None),
        ("layers.LayerNormalization()", None),
        ("layers.GroupNormalization(2)", None),
        ("layers.Embedding(10, 3)", None),
        ("layers.Reshape((2, 2))", None),
        ("layers.Dropout(0.0)", None),
        ("layers.LSTM(8)", None),
        ("keras.applications.VGG16(weights=None)", None),
        ("keras.models.load_model('m.keras')", None),
    ],
)
def test_built_in_layers_and_applications(expr, expected):
    assert _state("", expr) == expected


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("layers.BatchNormalization()", "BatchNormalization"),
        ("layers.Dense(3, trainable=False)", "Dense(trainable=False)"),
        ("keras.applications.ResNet50(weights=None)", "ResNet50"),
        # A seed generator's state is in `variables`, not in `weights`.
        ("layers.Dropout(0.5)", None),
        ("layers.LSTM(8, dropout=0.2)", None),
        ("keras.Sequential([layers.Dense(4), layers.Dropout(0.2), layers.Dense(1)])", None),
    ],
)
def test_weights_leave_seed_state_out(expr, expected):
    model = model_of(HEADER + f"probe = {expr}\n")
    (d,) = [d for d in model.defs_by_stmt[model.module.body[-1]] if d.name == "probe"]
    assert d.value is not None
    assert NonTrainableState(KerasObjects(model), "weights").of(d.value) == expected


def test_dropout_holds_no_variable_in_legacy_keras():
    legacy = "import os\nos.environ['TF_USE_LEGACY_KERAS'] = '1'\n" + HEADER
    assert _state("", "layers.Dropout(0.5)", legacy) is None
    assert _state("", "layers.BatchNormalization()", legacy) == "BatchNormalization"


@pytest.mark.parametrize(
    ("setup", "expr", "expected"),
    [
        (
            "seq = keras.Sequential([layers.Dense(4), layers.BatchNormalization()])\n",
            "seq",
            "BatchNormalization",
        ),
        ("plain = keras.Sequential([layers.Dense(4), layers.Dense(1)])\n", "plain", None),
        (
            "base = keras.Sequential([layers.Dense(4)])\nbase.trainable = False\n"
            "inputs = keras.Input((3,))\n"
            "whole = keras.Model(inputs, layers.Dense(1)(base(inputs)))\n",
            "whole",
            FROZEN,
        ),
        (
            "base = keras.Sequential([layers.Dense(4), layers.Dense(4)])\n"
            "for layer in base.layers[:1]:\n    layer.trainable = False\n",
            "base",
            FROZEN,
        ),
        # Called with training=False while the model was built, the backbone still holds
        # its batch normalisation statistics.
        (
            "base = keras.applications.MobileNetV2(include_top=False, weights=None)\n"
            "image = keras.Input((96, 96, 3))\n"
            "head = keras.Model(image, layers.Dense(2)(base(image, training=False)))\n",
            "head",
            "MobileNetV2",
        ),
        (
            "class Center(keras.layers.Layer):\n"
            "    def build(self, shape):\n"
            "        self.mean = self.add_weight(shape=(shape[-1],), trainable=False)\n"
            "    def call(self, x):\n        return x - self.mean\n",
            "Center()",
            "`Center`'s non-trainable weights",
        ),
        (
            "class Linear(keras.layers.Layer):\n"
            "    def build(self, shape):\n        self.w = self.add_weight(shape=(shape[-1], 4))\n"
            "    def call(self, x):\n        return tf.matmul(x, self.w)\n",
            "Linear()",
            None,
        ),
        (
            "class Net(keras.Model):\n"
            "    def __init__(self):\n        super().__init__()\n"
            "        self.norm = layers.BatchNormalization()\n"
            "    def call(self, x):\n        return self.norm(x)\n",
            "Net()",
            "BatchNormalization",
        ),
        (
            "class Net(keras.Model):\n"
            "    def __init__(self):\n        super().__init__()\n"
            "        self.encoder = make_encoder()\n        self.encoder.trainable = False\n"
            "    def call(self, x):\n        return self.encoder(x)\n",
            "Net()",
            "`Net`'s non-trainable weights",
        ),
    ],
    ids=[
        "sequential-bn",
        "sequential-dense",
        "frozen-submodel",
        "frozen-layers-of-model",
        "backbone-in-inference-mode",
        "add-weight-not-trainable",
        "add-weight-trainable",
        "subclass-bn",
        "subclass-frozen-part",
    ],
)
def test_models_are_judged_by_their_parts(setup, expr, expected):
    assert _state(setup, expr) == expected
