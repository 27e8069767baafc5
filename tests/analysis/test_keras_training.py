"""Which Keras models and layers certainly compute something different in training (the
question TAP303 asks before it suggests `training=True`)."""

from __future__ import annotations

import pytest

from tapelint.linter.engine import Linter
from tapelint.linter.registry import rule_by_code_or_name
from tapelint.semantic.keras.keras_objects import KerasObjects
from tapelint.semantic.keras.keras_training import USES_TRAINING, TrainingSensitivity
from tests.analysis.helpers import model_of

HEADER = "import tensorflow as tf\nimport keras\nfrom keras import layers\n"


def _sensitive(setup: str, expr: str) -> str | None:
    model = model_of(HEADER + setup + f"probe = {expr}\n")
    (d,) = [d for d in model.defs_by_stmt[model.module.body[-1]] if d.name == "probe"]
    assert d.value is not None
    return TrainingSensitivity(KerasObjects(model)).of(d.value)


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("layers.Dropout(0.5)", "Dropout"),
        ("tf.keras.layers.SpatialDropout2D(0.2)", "SpatialDropout2D"),
        ("layers.GaussianNoise(0.1)", "GaussianNoise"),
        ("layers.BatchNormalization()", "BatchNormalization"),
        ("layers.RandomFlip('horizontal')", "RandomFlip"),
        ("layers.LSTM(32, dropout=0.2)", "LSTM(dropout=...)"),
        ("layers.GRU(32, recurrent_dropout=0.1)", "GRU(recurrent_dropout=...)"),
        ("layers.MultiHeadAttention(4, 16, dropout=0.1)", "MultiHeadAttention(dropout=...)"),
        ("layers.Bidirectional(layers.LSTM(8, dropout=0.3))", "LSTM(dropout=...)"),
        ("layers.TimeDistributed(layers.Dropout(0.3))", "Dropout"),
        ("keras.applications.ResNet50(weights=None)", "ResNet50"),
        # Pretrained: Keras recommends its batch normalisation stay in inference mode while
        # fine-tuning, which is what a call without `training=` does.
        ("keras.applications.ResNet50()", None),
        ("keras.applications.ResNet50(weights='imagenet', include_top=False)", None),
        ("keras.applications.EfficientNetB0(weights='weights.h5')", None),
        # Verified in Keras 3: the same output in training and inference.
        ("layers.LayerNormalization()", None),
        ("layers.GroupNormalization(4)", None),
        ("layers.Dense(3)", None),
        ("layers.LSTM(32)", None),
        ("layers.LSTM(32, dropout=0.0)", None),
        ("layers.Dropout(0.0)", None),
        ("layers.GaussianNoise(stddev=0)", None),
        ("layers.MultiHeadAttention(4, 16)", None),
        ("layers.Bidirectional(layers.LSTM(8))", None),
        ("keras.applications.VGG16(weights=None)", None),
        ("keras.applications.ConvNeXtTiny(weights=None)", None),
        # Made from something this file does not show.
        ("keras.models.load_model('m.keras')", None),
        ("make_model()", None),
    ],
)
def test_built_in_layers_and_applications(expr, expected):
    assert _sensitive("", expr) == expected


SEQUENTIAL_BN = "seq = keras.Sequential([layers.Dense(4), layers.BatchNormalization()])\n"
SEQUENTIAL_DENSE = "plain = keras.Sequential([layers.Dense(4), layers.Dense(1)])\n"
ADDED = "grown = keras.Sequential()\ngrown.add(layers.Dense(4))\ngrown.add(layers.Dropout(0.1))\n"
FUNCTIONAL = (
    "def build(rate):\n"
    "    inputs = keras.Input((8,))\n"
    "    x = layers.Dense(16)(inputs)\n"
    "    x = layers.Dropout(rate)(x)\n"
    "    return keras.Model(inputs, layers.Dense(1)(x))\n"
)
FUNCTIONAL_PLAIN = (
    "inputs = keras.Input((8,))\n"
    "hidden = layers.Dense(16, activation='relu')\n"
    "outputs = layers.Dense(1)(hidden(inputs))\n"
    "flat = keras.Model(inputs=inputs, outputs=outputs)\n"
)
FROZEN_BACKBONE = (
    "base = keras.applications.MobileNetV2(include_top=False, weights=None)\n"
    "image = keras.Input((96, 96, 3))\n"
    "features = base(image, training=False)\n"
    "head = keras.Model(image, layers.Dense(2)(features))\n"
)


@pytest.mark.parametrize(
    ("setup", "expr", "expected"),
    [
        (SEQUENTIAL_BN, "seq", "BatchNormalization"),
        (SEQUENTIAL_DENSE, "plain", None),
        (ADDED, "grown", "Dropout"),
        (SEQUENTIAL_BN, "keras.Sequential([seq, layers.Dense(1)])", "BatchNormalization"),
        (FUNCTIONAL, "build(0.5)", "Dropout"),
        (FUNCTIONAL_PLAIN, "flat", None),
        # The backbone keeps the mode it was called with when the model was built.
        (FROZEN_BACKBONE, "head", None),
        (SEQUENTIAL_BN + SEQUENTIAL_DENSE, "seq if flag else plain", None),
    ],
    ids=[
        "sequential",
        "sequential-dense",
        "sequential-add",
        "nested-sequential",
        "functional-builder",
        "functional-dense",
        "frozen-backbone",
        "two-paths",
    ],
)
def test_models_are_judged_by_their_layers(setup, expr, expected):
    assert _sensitive(setup, expr) == expected


@pytest.mark.parametrize(
    ("setup", "expected"),
    [
        (
            "class Net(keras.Model):\n"
            "    def __init__(self):\n        super().__init__()\n"
            "        self.drop = layers.Dropout(0.3)\n        self.out = layers.Dense(1)\n"
            "    def call(self, x):\n        return self.out(self.drop(x))\n",
            # Keras hands `training` on to the layers `call` uses even without the parameter.
            "Dropout",
        ),
        (
            "class Net(keras.Model):\n"
            "    def build(self, shape):\n        self.norm = layers.BatchNormalization()\n"
            "    def call(self, x):\n        return self.norm(x)\n",
            "BatchNormalization",
        ),
        (
            "class Net(keras.Model):\n"
            "    def call(self, x, training=None):\n"
            "        return x + tf.random.normal(tf.shape(x)) if training else x\n",
            USES_TRAINING,
        ),
        (
            "class Net(keras.Model):\n"
            "    def call(self, x, training=None):\n        return x * 2.0\n",
            None,
        ),
        (
            "class Net(keras.Model):\n"
            "    def __init__(self):\n        super().__init__()\n        self.out = layers.Dense(1)\n"
            "    def call(self, x, training=False):\n        return self.out(x, training=training)\n",
            None,
        ),
        (
            "class Linear(keras.layers.Layer):\n"
            "    def build(self, shape):\n        self.w = self.add_weight(shape=(shape[-1], 4))\n"
            "    def call(self, x):\n        return tf.matmul(x, self.w)\n",
            None,
        ),
        (
            "class Net(keras.Model):\n"
            "    def __init__(self):\n        super().__init__()\n"
            "        self.drop = layers.Dropout(0.3)\n"
            "    def __call__(self, x, is_training=False):\n        return self.drop(x, training=is_training)\n",
            None,
        ),
        (
            "class Net(keras.Model):\n"
            "    def __init__(self):\n        super().__init__()\n"
            "        self.drop = layers.Dropout(0.3)\n"
            "    def __call__(self, x, training=False):\n        return self.drop(x, training=True)\n",
            None,
        ),
        (
            "class Net(keras.Model):\n"
            "    def __init__(self):\n        super().__init__()\n"
            "        self.drop = layers.Dropout(0.3)\n"
            "    def __call__(self, x, training=False):\n        return self.drop(x, training=training)\n",
            "Dropout",
        ),
        (
            "class Block(keras.layers.Layer):\n"
            "    def __init__(self):\n        super().__init__()\n"
            "        self.norm = layers.BatchNormalization()\n"
            "    def call(self, x):\n        return self.norm(x)\n"
            "class Net(keras.Model):\n"
            "    def __init__(self):\n        super().__init__()\n        self.block = Block()\n"
            "    def call(self, x):\n        return self.block(x)\n",
            "BatchNormalization",
        ),
        (
            "class Base(keras.Model):\n"
            "    def __init__(self):\n        super().__init__()\n"
            "        self.drop = layers.Dropout(0.1)\n"
            "class Net(Base):\n"
            "    def call(self, x):\n        return self.drop(x)\n",
            "Dropout",
        ),
        (
            "class Net(keras.Model):\n"
            "    def __init__(self):\n        super().__init__()\n"
            "        self.drop = layers.Dropout(0.3)\n        self.out = layers.Dense(1)\n"
            "    def call(self, x):\n        return self.out(x)\n",
            None,  # created, never run by `call`
        ),
        (
            "class Net(keras.Model):\n"
            "    def __init__(self):\n        super().__init__()\n"
            "        drop = layers.Dropout(0.3)\n"
            "        self.head = keras.Sequential([drop, layers.Dense(1)])\n"
            "    def features(self, x):\n        return self.head(x)\n"
            "    def call(self, x):\n        return self.features(x)\n",
            "Dropout",  # through a local, and a method `call` calls
        ),
        (
            "class Net(keras.Model):\n"
            "    def __init__(self):\n        super().__init__()\n        self.blocks = []\n"
            "        self.blocks.append(layers.BatchNormalization())\n"
            "    def call(self, x):\n        for block in self.blocks:\n            x = block(x)\n"
            "        return x\n",
            "BatchNormalization",
        ),
        (
            "class Net(keras.Model):\n"
            "    def __init__(self):\n        super().__init__()\n"
            "        self.norm = layers.BatchNormalization()\n"
            "    def call(self, x):\n        for layer in self.layers:\n            x = layer(x)\n"
            "        return x\n",
            "BatchNormalization",  # every part, by iteration
        ),
    ],
    ids=[
        "init-dropout",
        "build-batchnorm",
        "call-reads-training",
        "call-ignores-training",
        "call-forwards-training-to-dense",
        "weights-only",
        "own-dunder-call",
        "own-dunder-call-ignoring-training",
        "own-dunder-call-forwarding-training",
        "in-file-block",
        "inherited-init",
        "created-never-called",
        "through-local-and-method",
        "appended-to-a-list",
        "every-part-by-iteration",
    ],
)
def test_classes_of_the_file(setup, expected):
    assert _sensitive(setup, "Net()" if "class Net" in setup else "Linear()") == expected


def test_a_class_read_from_the_text_when_its_methods_were_cut_out():
    """`__init__` and `call` never mention a tape: they are cut out before the parse, and the
    layers they make are read from the file's text."""
    source = (
        "import tensorflow as tf\n\n\n"
        "class Net(tf.keras.Model):\n"
        "    def __init__(self):\n        super().__init__()\n"
        "        self.hidden = tf.keras.layers.Dense(8)\n"
        "        self.drop = tf.keras.layers.Dropout(0.5)\n"
        "    def call(self, x):\n        return self.drop(self.hidden(x))\n\n\n"
        "net = Net()\nopt = tf.keras.optimizers.SGD()\n\n\n"
        "def step(x):\n"
        "    with tf.GradientTape() as tape:\n        loss = tf.reduce_sum(net(x))\n"
        "    grads = tape.gradient(loss, net.trainable_variables)\n"
        "    opt.apply_gradients([(g, v) for g, v in zip(grads, net.trainable_variables) if g is not None])\n"
    )
    diagnostics = Linter([rule_by_code_or_name("TAP303")]).check_text(source, "m.py")
    assert [(d.start.line, d.message.split(", so ")[1]) for d in diagnostics] == [
        (19, "`Dropout` runs in inference mode; pass `training=True`")
    ]


AGENT = (
    "import tensorflow as tf\nfrom tensorflow.keras import layers\n\n\n"
    "class Agent:\n"
    "    def __init__(self, arg):\n        self.model = self._define_model(arg)\n"
    "        self.opt = tf.keras.optimizers.SGD()\n"
    "{define}"
    "    def learn(self, x):\n"
    "        with tf.GradientTape() as tape:\n            loss = tf.reduce_sum(self.model(x))\n"
    "        grads = tape.gradient(loss, self.model.trainable_variables)\n"
    "        pairs = zip(grads, self.model.trainable_variables)\n"
    "        self.opt.apply_gradients([(g, v) for g, v in pairs if g is not None])\n"
)


@pytest.mark.parametrize(
    ("define", "expected"),
    [
        (
            "    def _define_model(self, arg):\n        model = tf.keras.Sequential()\n"
            "        model.add(layers.Dense(4))\n        model.add(layers.Dropout(0.2))\n"
            "        return model\n",
            ["Dropout"],
        ),
        (
            "    def _define_model(self, arg):\n"
            "        return tf.keras.Sequential([layers.Dense(4), layers.BatchNormalization()])\n",
            ["BatchNormalization"],
        ),
        (
            "    def _define_model(self, arg):\n"
            "        if arg:\n            return tf.keras.Sequential([layers.Dropout(0.2)])\n"
            "        return tf.keras.Sequential([layers.Dense(4)])\n",
            [],  # one of two models: neither is known
        ),
        (
            "    def _define_model(self, arg):\n        model = tf.keras.Sequential()\n"
            "        model.add(arg)\n        return model\n",
            [],  # a layer handed in: not read back from the text
        ),
        (
            "    def _define_model(self, arg):\n        model = tf.keras.Sequential()\n"
            "        model.add(layers.Dropout(0.2))\n        model = arg\n        return model\n",
            [],  # bound twice
        ),
    ],
    ids=["local-filled-with-add", "returned-directly", "one-of-two", "layer-passed-in", "rebound"],
)
def test_a_model_a_method_returns(define, expected):
    """`self.model = self._define_model()`: the model is what the method builds, read from
    the text (neither method mentions a tape, so both are cut out before the parse)."""
    source = AGENT.format(define=define)
    diagnostics = Linter([rule_by_code_or_name("TAP303")]).check_text(source, "m.py")
    assert [d.message.split(", so `")[1].split("`")[0] for d in diagnostics] == expected
