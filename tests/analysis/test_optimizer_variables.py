"""Which updates hand a Keras 3 optimizer variables it was not built with (TAP404)."""

from __future__ import annotations

from tapelint.rules.updates._optimizer_variables import new_variables

from tests.analysis.helpers import code, model_of

MODELS = """
import keras
import tensorflow as tf

a = keras.Sequential([keras.layers.Dense(1)])
b = keras.Sequential([keras.layers.Dense(1)])
"""
STEP = """
with tf.GradientTape() as tape:
    loss = {m}(x)
grads = tape.gradient(loss, {m}.trainable_variables)
opt.apply_gradients(zip(grads, {m}.trainable_variables))
"""


def _found(source: str) -> list[tuple[str, str, str]]:
    model = model_of(source)
    return [(f.kind, f.earlier, code(model, f.update.node)) for f in new_variables(model)]


def test_a_second_model_after_the_first() -> None:
    source = MODELS + "opt = keras.optimizers.Adam()\n" + STEP.format(m="a") + STEP.format(m="b")
    assert _found(source) == [
        ("model", "a", "opt.apply_gradients(zip(grads, b.trainable_variables))")
    ]


def test_a_new_optimizer_for_the_second_model() -> None:
    source = (
        MODELS
        + "opt = keras.optimizers.Adam()\n"
        + STEP.format(m="a")
        + "opt = keras.optimizers.Adam()\n"
        + STEP.format(m="b")
    )
    assert _found(source) == []


def test_the_first_update_under_a_condition() -> None:
    first = "if pretrain:\n" + "".join(f"    {line}\n" for line in STEP.format(m="a").split("\n"))
    source = MODELS + "opt = keras.optimizers.Adam()\n" + first + STEP.format(m="b")
    assert _found(source) == []


def test_a_model_built_from_the_other_is_not_a_new_set() -> None:
    source = MODELS.replace(
        "b = keras.Sequential([keras.layers.Dense(1)])", "b = keras.Sequential([a])"
    )
    source += "opt = keras.optimizers.Adam()\n" + STEP.format(m="a") + STEP.format(m="b")
    assert _found(source) == []


def test_legacy_keras_is_left_alone() -> None:
    source = "import tf_keras\n" + MODELS + "opt = keras.optimizers.Adam()\n"
    assert _found(source + STEP.format(m="a") + STEP.format(m="b")) == []


def test_unfrozen_in_the_epoch_loop() -> None:
    loop = "".join(f"    {line}\n" for line in STEP.format(m="b").split("\n"))
    source = (
        MODELS.replace("keras.layers.Dense(1)])\n\n", "keras.layers.Dense(1)])\n", 1)
        + "a.trainable = False\nb = keras.Sequential([a, keras.layers.Dense(1)])\n"
        + "opt = keras.optimizers.Adam()\n"
        + "for epoch in range(10):\n    if epoch == {k}:\n        a.trainable = True\n"
        + loop
    )
    assert [f[:2] for f in _found(source.format(k=3))] == [("unfrozen", "a")]
    assert _found(source.format(k=0)) == []
