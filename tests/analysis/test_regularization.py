"""Which Keras models certainly have regularization losses, and which gradient targets
certainly never add them (the questions TAP304 asks)."""

from __future__ import annotations

import pytest
from tapelint.rules.differentiable_path._losses_in_target import ignored_regularization

from tapelint.semantic.keras.keras_objects import KerasObjects
from tapelint.semantic.keras.keras_regularization import RegularizationLosses
from tests.analysis.helpers import code, model_of

HEADER = (
    "import tensorflow as tf\nimport keras\nfrom keras import layers, regularizers\n"
    "from keras.regularizers import l2\n"
)


def _regularized(setup: str, expr: str) -> str | None:
    model = model_of(HEADER + setup + f"probe = {expr}\n")
    (d,) = [d for d in model.defs_by_stmt[model.module.body[-1]] if d.name == "probe"]
    assert d.value is not None
    return RegularizationLosses(KerasObjects(model)).of(d.value)


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        (
            "layers.Dense(3, kernel_regularizer=regularizers.l2(1e-4))",
            "Dense(kernel_regularizer=...)",
        ),
        ("layers.Dense(3, bias_regularizer=l2(0.01))", "Dense(bias_regularizer=...)"),
        ("layers.Dense(3, activity_regularizer='l1')", "Dense(activity_regularizer=...)"),
        (
            "layers.Conv2D(8, 3, kernel_regularizer=keras.regularizers.L1L2(l2=1e-3))",
            "Conv2D(kernel_regularizer=...)",
        ),
        (
            "layers.Embedding(10, 4, embeddings_regularizer=regularizers.L2())",
            "Embedding(embeddings_regularizer=...)",
        ),
        (
            "layers.Dense(3, kernel_regularizer=lambda w: tf.reduce_sum(w))",
            "Dense(kernel_regularizer=...)",
        ),
        (
            "layers.Bidirectional(layers.LSTM(4, recurrent_regularizer='l2'))",
            "LSTM(recurrent_regularizer=...)",
        ),
        ("layers.ActivityRegularization(l1=0.01)", "ActivityRegularization"),
        (
            "keras.Sequential([layers.Flatten(), layers.Dense(3, kernel_regularizer='l2')])",
            "Dense(kernel_regularizer=...)",
        ),
        # An activity regularizer still counts on a frozen layer; a weight's does not.
        (
            "layers.Dense(3, activity_regularizer='l2', trainable=False)",
            "Dense(activity_regularizer=...)",
        ),
        ("layers.Dense(3, kernel_regularizer='l2', trainable=False)", None),
        # No regularizer, or a zero one: Keras 3's `L1L2()` and `l1_l2()` default to zero.
        ("layers.Dense(3)", None),
        ("layers.Dense(3, kernel_regularizer=None)", None),
        ("layers.Dense(3, kernel_regularizer=regularizers.l2(0.0))", None),
        ("layers.Dense(3, kernel_regularizer=regularizers.L1L2())", None),
        ("layers.Dense(3, kernel_regularizer=regularizers.l1_l2())", None),
        ("layers.Dense(3, kernel_regularizer='l1_l2')", None),
        ("layers.ActivityRegularization()", None),
        # A value that may be None.
        ("layers.Dense(3, kernel_regularizer=config.regularizer)", None),
        ("layers.Dense(3, kernel_regularizer=make_regularizer())", None),
        ("keras.applications.ResNet50(weights=None)", None),
        ("keras.models.load_model('m.keras')", None),
    ],
)
def test_built_in_layers(expr, expected):
    assert _regularized("", expr) == expected


def test_a_name_bound_to_a_regularizer_on_every_path():
    assert _regularized("reg = l2(5e-4)\n", "layers.Dense(3, kernel_regularizer=reg)")
    maybe = "reg = l2(5e-4) if decay else None\n"
    assert _regularized(maybe, "layers.Dense(3, kernel_regularizer=reg)") is None


def test_classes_that_add_losses():
    adds = (
        "class Sparse(layers.Layer):\n"
        "    def call(self, x):\n"
        "        self.add_loss(tf.reduce_sum(tf.abs(x)))\n"
        "        return x\n"
    )
    assert _regularized(adds, "Sparse()") == "`Sparse`'s `add_loss`"
    weight = (
        "class Scale(layers.Layer):\n"
        "    def build(self, shape):\n"
        "        self.w = self.add_weight(shape=(1,), regularizer=l2(1e-3))\n"
        "    def call(self, x):\n"
        "        return x * self.w\n"
    )
    assert _regularized(weight, "Scale()") == "`Scale`'s regularized weight"
    unused = (
        "class Net(keras.Model):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.spare = layers.Dense(3, kernel_regularizer='l2')\n"
        "        self.head = layers.Dense(3)\n"
        "    def call(self, x):\n"
        "        return self.head(x)\n"
    )
    assert _regularized(unused, "Net()") is None  # the regularized part is never called


def test_add_loss_on_a_model_counts_for_the_binding_it_reaches():
    setup = (
        "m = keras.Sequential([layers.Dense(3)])\n"
        "m.add_loss(lambda: tf.reduce_sum(m.layers[0].kernel))\n"
    )
    assert _regularized(setup, "m") == "`m.add_loss(...)`"
    assert _regularized(setup + "m = keras.Sequential([layers.Dense(3)])\n", "m") is None


STEP = (
    "model = keras.Sequential([layers.Dense(3, kernel_regularizer='l2')])\n"
    "ce = keras.losses.MeanSquaredError()\n"
    "def step(x, y, loss_fn):\n"
    "    with tf.GradientTape() as tape:\n"
    "        out = model(x, training=True)\n"
    "{body}"
    "    return tape.gradient(loss, model.trainable_variables)\n"
)


def _ignored(body: str, setup: str = "") -> list[str]:
    model = model_of(HEADER + setup + STEP.format(body=body))
    return [
        f"{found.owner}: {code(model, found.target)}" for found in ignored_regularization(model)
    ]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("        loss = ce(y, out)\n", ["model: loss"]),
        ("        loss = tf.reduce_mean(tf.square(y - out)) / 2.0\n", ["model: loss"]),
        (
            "        loss = 0.0\n        for i in range(3):\n            loss += ce(y, out)\n",
            ["model: loss"],
        ),
        ("        loss = keras.losses.mean_squared_error(y, out) * len(x)\n", ["model: loss"]),
        # The losses are added.
        ("        loss = ce(y, out) + tf.add_n(model.losses)\n", []),
        ("        loss = ce(y, out)\n        loss += sum(model.losses)\n", []),
        ("        reg = model.losses\n        loss = ce(y, out) + tf.math.add_n(reg)\n", []),
        # A penalty written by hand, or a term named like one.
        (
            "        loss = ce(y, out) + 1e-4 * tf.add_n([tf.nn.l2_loss(v) for v in model.trainable_variables])\n",
            [],
        ),
        ("        loss = ce(y, out) + weight_decay_term\n", []),
        # Code that may add them: a method, a function passed in, a helper handed the model.
        ("        loss = model.compute_loss(x, y, out)\n", []),
        ("        loss = loss_fn(y, out)\n", []),
        ("        loss = helper(model, y, out)\n", []),
        ("        loss = trainer.loss(y, out)\n", []),
        ("        loss = ce(y, out) + self_aux.value\n", []),
        ("        loss = ce(y, out) + tf.add_n(getattr(model, 'losses'))\n", []),
    ],
)
def test_targets(body, expected):
    assert _ignored(body) == expected


def test_functions_of_the_file_are_read():
    adds = "def total(y, p):\n    return ce(y, p) + sum(model.losses)\n"
    assert _ignored("        loss = total(y, out)\n", adds) == []
    through = (
        "def reg():\n    return sum(model.losses)\ndef total(y, p):\n    return ce(y, p) + reg()\n"
    )
    assert _ignored("        loss = total(y, out)\n", through) == []
    plain = "def total(y, p):\n    return ce(y, p)\n"
    assert _ignored("        loss = total(y, out)\n", plain) == ["model: loss"]


def test_a_model_whose_losses_come_from_add_loss_only_allows_one_term():
    setup = (
        "class Kl(layers.Layer):\n"
        "    def call(self, x):\n"
        "        self.add_loss(tf.reduce_mean(x))\n"
        "        return x\n"
        "vae = keras.Sequential([Kl(), layers.Dense(3)])\n"
    )
    one = (
        "def step(x):\n    with tf.GradientTape() as tape:\n"
        "        loss = tf.reduce_mean(tf.square(x - vae(x, training=True)))\n"
        "    return tape.gradient(loss, vae.trainable_variables)\n"
    )
    two = one.replace("))\n    return", ")) + tf.reduce_mean(x)\n    return")
    assert [f.owner for f in ignored_regularization(model_of(HEADER + setup + one))] == ["vae"]
    assert ignored_regularization(model_of(HEADER + setup + two)) == []


def test_a_loss_function_passed_in_is_followed_to_what_every_call_passes():
    """In a script (or notebook), a function only the file calls: every call passes the
    file's `mse`, which cannot add the losses; a closure that reads them keeps it quiet."""
    train = (
        "def train(loss_fn, x, y):\n    with tf.GradientTape() as tape:\n"
        "        loss = loss_fn(y, model(x, training=True))\n"
        "    return tape.gradient(loss, model.trainable_variables)\n"
    )
    setup = (
        "model = keras.Sequential([layers.Dense(3, kernel_regularizer='l2')])\n"
        "def mse(y, p):\n    return tf.reduce_mean(tf.square(y - p))\n"
    )
    script = "if __name__ == '__main__':\n    train(mse, 1, 2)\n"
    found = ignored_regularization(model_of(HEADER + setup + train + script))
    assert [f.owner for f in found] == ["model"]
    closure = script.replace(
        "train(mse, 1, 2)", "train(lambda y, p: mse(y, p) + sum(model.losses), 1, 2)"
    )
    assert ignored_regularization(model_of(HEADER + setup + train + closure)) == []
    library = HEADER + setup + train  # a library's public function: any caller may pass anything
    assert ignored_regularization(model_of(library + "train(mse, 1, 2)\n")) == []
