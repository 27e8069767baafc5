"""Lengths of zipped gradient and variable lists, counted as symbolic sums."""

from __future__ import annotations

import pytest
from tapelint.rules.updates._lengths import Count, Layout, zip_layout

from tapelint.semantic.gradient_routes.gradients import applied_pairing
from tests.analysis.helpers import model_of

PROLOGUE = """
import keras
import tensorflow as tf

model = keras.Sequential([keras.layers.Dense(1)])
w = tf.Variable(1.0)
extra = [tf.Variable(0.5), tf.Variable(0.1)]
n = len(extra)
variables = model.trainable_variables + [w] + extra
opt = keras.optimizers.Adam()
with tf.GradientTape() as tape:
    loss = model(x) * w
grads = tape.gradient(loss, variables)
"""


def _layout(apply: str, prologue: str = PROLOGUE) -> Layout | None:
    model = model_of(prologue + apply + "\n")
    (call,) = model.apply_calls
    pairing = applied_pairing(model, call)
    assert pairing is not None
    return zip_layout(model, pairing.gradients, pairing.variables)


def test_counts_cancel_to_a_whole_number() -> None:
    m, k = Count.of("m"), Count.of("k")
    assert (m + Count(1) + k - (k + Count(2)) - m).whole() == -1
    assert (m - Count(1)).whole() is None
    assert (m + Count(1)).at_least(1) and not (m - Count(1)).at_least(0)


@pytest.mark.parametrize(
    ("apply", "short", "shift", "aligned"),
    [
        (
            "opt.apply_gradients(zip(grads[: -(n + 1)], model.trainable_variables))",
            None,
            None,
            True,
        ),
        ("opt.apply_gradients(zip(grads[-(n + 1) :], [w] + extra))", None, None, True),
        ("opt.apply_gradients(zip(grads[: -(n + 2)], model.trainable_variables))", 1, None, False),
        ("opt.apply_gradients(zip(grads[-(n + 1) :], extra))", None, -1, False),
        ("opt.apply_gradients(zip(grads[-(n + 3) :], [w] + extra))", None, None, False),
        ("opt.apply_gradients(zip(grads, model.trainable_variables))", None, None, True),
    ],
)
def test_slices_line_up_or_not(apply: str, short: int | None, shift: int | None, aligned: bool):
    layout = _layout(apply)
    assert layout is not None
    assert (layout.short, layout.shift, layout.aligned) == (short, shift, aligned)


@pytest.mark.parametrize(
    "apply",
    [
        "opt.apply_gradients(zip(grads[-n:], extra))",  # -n may be -0: the start
        "opt.apply_gradients(zip(grads[::2], model.trainable_variables))",  # a step
        "opt.apply_gradients(zip(clip(grads)[:-1], model.trainable_variables))",
    ],
)
def test_what_cannot_be_read_is_unknown(apply: str) -> None:
    unknown_length = PROLOGUE.replace("extra = [tf.Variable(0.5), tf.Variable(0.1)]", "extra = f()")
    assert _layout(apply, unknown_length) is None


def test_a_list_the_code_does_not_show_is_one_count() -> None:
    unknown_length = PROLOGUE.replace("extra = [tf.Variable(0.5), tf.Variable(0.1)]", "extra = f()")
    layout = _layout(
        "opt.apply_gradients(zip(grads[: -(n + 2)], model.trainable_variables))", unknown_length
    )
    assert layout is not None and layout.short == 1


def test_a_list_changed_in_place_is_not_counted() -> None:
    changed = PROLOGUE.replace("n = len(extra)\n", "n = len(extra)\nextra.append(w)\n")
    apply = "opt.apply_gradients(zip(grads[: -(n + 2)], model.trainable_variables))"
    assert _layout(apply, changed) is None
