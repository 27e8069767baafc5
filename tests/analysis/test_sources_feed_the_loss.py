"""The evidence that no gradient of a call can be None (TAP401 stays quiet on it): every
source feeds the loss, or there is one source. Each case has its near miss."""

from __future__ import annotations

import pytest

from tapelint.linter.engine import Linter
from tapelint.linter.registry import rule_by_code_or_name

HEADER = "import tensorflow as tf\n\n\n"
STEP = (
    "def step(x, y):\n"
    "    with tf.GradientTape() as tape:\n"
    "        loss = tf.reduce_mean(tf.square({output} - y))\n"
    "    grads = tape.gradient(loss, {sources})\n"
    "    opt.apply_gradients(zip(grads, {sources}))\n"
)


def _reported(setup: str, output: str, sources: str) -> bool:
    source = HEADER + setup + "opt = tf.keras.optimizers.SGD(0.1)\n\n\n"
    source += STEP.format(output=output, sources=sources)
    return bool(Linter([rule_by_code_or_name("TAP401")]).check_text(source, "m.py"))


PARAMETERS = (
    "def init():\n"
    "    return {{'w': tf.Variable(tf.ones([3, 1])), 'b': tf.Variable(tf.zeros([1]))}}\n\n\n"
    "def forward(x, params):\n"
    "    w = params['w']\n"
    "    return tf.matmul(x, w) + params[{key!r}]\n\n\n"
    "parameters = init()\nw = parameters['w']\nb = parameters['b']\n"
)
HELPER = (
    "def init_weight(shape):\n    weight = tf.Variable(tf.random.normal(shape))\n"
    "    return weight\n\n\n"
    "def init_pair(shape):\n    return [tf.Variable(tf.ones(shape)), tf.Variable(tf.ones(shape))]\n\n\n"
    "w = init_weight([3, 1])\npair = init_pair([3, 1])\n"
)
GATE = (
    "class Gate(tf.keras.layers.Layer):\n"
    "    def __init__(self, a, b):\n        super().__init__()\n"
    "        self.a = a\n        self.b = b\n        self.many = [a, b]\n"
    "    def call(self, x):\n        return x * self.a{plus_b}\n\n\n"
    "a = tf.Variable(1.0)\nb = tf.Variable(0.0)\ngate = Gate(a=a, b=b)\n"
    "inputs = tf.keras.Input(shape=(1,))\n"
    "model = tf.keras.Model(inputs=inputs, outputs=gate(inputs))\n"
)
# A class with a docstring: its methods, which mention no tape, are cut out before the
# parse, and `call` is read back from the text.
DOCUMENTED_GATE = GATE.replace(
    "class Gate(tf.keras.layers.Layer):\n",
    'class Gate(tf.keras.layers.Layer):\n    """A gate."""\n\n',
)
# `build` binds `self.b` again: `call` reads that weight, not the `b` handed in.
REBUILT_GATE = GATE.replace(
    "    def call(self, x):",
    "    def build(self, shape):\n        self.b = self.add_weight(shape=(1,))\n"
    "    def call(self, x):",
)
LAMBDA = (
    "w = tf.Variable(tf.ones([3, 1]))\nb = tf.Variable(tf.zeros([1]))\n"
    "inputs = tf.keras.Input(shape=(3,))\n"
    "hidden = tf.keras.layers.Lambda(lambda t: tf.matmul(t, w){plus_b})(inputs)\n"
    "model = tf.keras.Model(inputs, hidden)\n"
)


@pytest.mark.parametrize(
    ("setup", "output", "sources", "reported"),
    [
        (PARAMETERS.format(key="b"), "forward(x, parameters)", "[w, b]", False),
        (PARAMETERS.format(key="w"), "forward(x, parameters)", "[w, b]", True),
        (
            PARAMETERS.format(key="b") + "parameters['b'] = tf.Variable(tf.ones([1]))\n",
            "forward(x, parameters)",
            "[w, b]",
            True,  # the dict is written to: its entry may be another variable
        ),
        (HELPER, "tf.matmul(x, w)", "w", False),
        (HELPER, "tf.matmul(x, pair[0])", "pair", True),
        (GATE.format(plus_b=" + self.b"), "model(x)", "[a, b]", False),
        (GATE.format(plus_b=""), "model(x)", "[a, b]", True),
        (GATE.format(plus_b=""), "model(x)", "gate.a", False),
        (GATE.format(plus_b=""), "model(x)", "gate.many", True),
        (DOCUMENTED_GATE.format(plus_b=" + self.b"), "gate(x)", "[a, b]", False),
        (DOCUMENTED_GATE.format(plus_b=""), "gate(x)", "[a, b]", True),
        (REBUILT_GATE.format(plus_b=" + self.b"), "gate(x)", "[a, b]", True),
        (LAMBDA.format(plus_b=" + b"), "model(x)", "[w, b]", False),
        (LAMBDA.format(plus_b=""), "model(x)", "[w, b]", True),
    ],
    ids=[
        "dict-entries-read-by-forward",
        "dict-entry-never-read",
        "dict-written",
        "helper-returns-one-variable",
        "helper-returns-a-list",
        "gate-call-reads-both",
        "gate-call-ignores-one",
        "one-attribute-source",
        "attribute-holds-a-list",
        "documented-gate-call-read-from-text",
        "documented-gate-call-ignores-one",
        "attribute-bound-again-in-build",
        "lambda-layer-reads-both",
        "lambda-layer-ignores-one",
    ],
)
def test_every_source_feeds_the_loss(setup, output, sources, reported):
    assert _reported(setup, output, sources) is reported
