"""Is a gradient in a notebook only looked at (printed, displayed, asserted)?"""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from tapelint.semantic import build_model
from tapelint.semantic.tape_life.inspection import only_inspected

TAPE = (
    "import tensorflow as tf\nimport logging\n"
    "x = tf.constant(3.0)\n"
    "with tf.GradientTape() as tape:\n"
    "    y = x * x\n"
)


def _inspected(after: str, *, is_notebook: bool = True) -> bool:
    module = cst.parse_module(TAPE + textwrap.dedent(after))
    model = build_model(module, is_notebook=is_notebook)
    (call,) = model.gradient_calls
    return only_inspected(model, call)


@pytest.mark.parametrize(
    "after",
    [
        "print(tape.gradient(y, x))\n",
        "tape.gradient(y, x)\n",
        "grad = tape.gradient(y, x)\nprint(grad)\n",
        "grad = tape.gradient(y, [x])\nfor g in grad:\n    print(g)\n",
        "grad = tape.gradient(y, [x])\ngrad[0]\n",
        "grad = tape.gradient(y, x)\nlogging.info('gradient: %s', grad)\nassert grad is None\n",
        "grad = tape.gradient(y, x)\nprint(f'{grad}')\ntf.print(grad)\n",
    ],
    ids=[
        "print-call",
        "displayed-call",
        "printed-name",
        "printed-loop",
        "displayed-name",
        "logged-asserted",
        "f-string-tf-print",
    ],
)
def test_printed_or_displayed_gradients_are_inspections(after):
    assert _inspected(after)


@pytest.mark.parametrize(
    "after",
    [
        "grad = tape.gradient(y, x)\nx2 = x - 0.1 * grad\n",
        "grad = tape.gradient(y, x)\nprint(grad)\nopt.apply_gradients([(grad, x)])\n",
        "grad = tape.gradient(y, x)\n",
        "grad = tape.gradient(y, x)\nfor g in [grad]:\n    x = x - g\n",
        "grad = tape.gradient(y, x)\nprint(tf.abs(grad))\nsaliency = tf.abs(grad)\n",
        "grad = tape.gradient(y, x)\ndef step():\n    return grad * 2\n",
        "grads = [tape.gradient(y, x)]\nprint(grads)\n",
    ],
    ids=[
        "used",
        "printed-and-applied",
        "never-used",
        "loop-that-computes",
        "one-use-computes",
        "used-in-a-function",
        "built-into-a-list",
    ],
)
def test_gradients_used_for_anything_else_are_not(after):
    assert not _inspected(after)


def test_only_notebooks_have_inspections():
    assert not _inspected("print(tape.gradient(y, x))\n", is_notebook=False)


def test_a_use_in_unparsed_code_counts():
    text = TAPE + "grad = tape.gradient(y, x)\nprint(grad)\n"
    sliced = cst.parse_module(text)
    whole = text + "def update(v):\n    v.assign_sub(grad)\n"
    model = build_model(sliced, source_text=whole, is_notebook=True)
    (call,) = model.gradient_calls
    assert not only_inspected(model, call)
