"""Which tapes record their block for nothing (the question TAP107 asks)."""

from __future__ import annotations

import pytest
from tapelint.rules.tape_life._unused import unused_tapes

from tapelint.semantic.file_model.model import UNREAD_CELL
from tests.analysis.helpers import code, model_of

HEADER = "import tensorflow as tf\nmodel = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n"


def _unused(body: str) -> list[str]:
    """The names of the unused tapes (`-` for an unnamed one), and what each records."""
    model = model_of(HEADER + body)
    return [
        f"{found.tape.name or '-'}: {code(model, found.recorded) if found.recorded else '...'}"
        for found in unused_tapes(model)
    ]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        # Never asked, never handed on.
        (
            "def f(x):\n    with tf.GradientTape() as tape:\n        y = model(x)\n    return y\n",
            ["tape: model(x)"],
        ),
        (
            "def f(x):\n    with tf.GradientTape():\n        y = model(x)\n    return y\n",
            ["-: model(x)"],
        ),
        (
            "def f(x):\n    with tf.GradientTape() as t:\n        t.watch(x)\n        y = x * x\n"
            "    del t\n    return y\n",
            ["t: ..."],
        ),
        # Asked, after the block or in it.
        (
            "def f(x):\n    with tf.GradientTape() as tape:\n        y = model(x)\n"
            "    return tape.gradient(y, model.trainable_variables)\n",
            [],
        ),
        (
            "def f(x):\n    with tf.GradientTape() as tape:\n        y = model(x)\n"
            "        g = tape.batch_jacobian(y, x)\n    return g\n",
            [],
        ),
        # Handed on: returned, passed, stored, aliased, read by a closure.
        (
            "def f(x):\n    with tf.GradientTape() as tape:\n        y = model(x)\n    return tape\n",
            [],
        ),
        (
            "def f(x, opt):\n    with tf.GradientTape() as tape:\n        y = model(x)\n"
            "    opt.minimize(y, model.trainable_variables, tape=tape)\n",
            [],
        ),
        (
            "def f(x, out):\n    with tf.GradientTape() as tape:\n        y = model(x)\n"
            "    out['tape'] = tape\n",
            [],
        ),
        (
            "def f(x):\n    with tf.GradientTape() as tape:\n        y = model(x)\n"
            "    other = tape\n    return other.gradient(y, model.trainable_variables)\n",
            [],
        ),
        (
            "def f(x):\n    def g(y):\n        return tape.gradient(y, model.trainable_variables)\n"
            "    with tf.GradientTape() as tape:\n        y = model(x)\n    return g(y)\n",
            [],
        ),
        # On an object, or the name of another scope.
        (
            "class T:\n    def f(self, x):\n        with tf.GradientTape() as self.tape:\n            y = model(x)\n",
            [],
        ),
        (
            "def f(x):\n    global tape\n    with tf.GradientTape() as tape:\n        y = model(x)\n",
            [],
        ),
        (
            "def f(x, n):\n    with tf.GradientTape() as tape:\n        y = model(x)\n"
            "    return locals()[n]\n",
            [],
        ),
        # Records nothing, or runs its caller's code.
        ("def f(x):\n    with tf.GradientTape() as tape:\n        print(len(x))\n", []),
        (
            "def f(x):\n    with tf.GradientTape(watch_accessed_variables=False) as tape:\n"
            "        y = model(x)\n    return y\n",
            [],
        ),
        ("def f(x):\n    with tf.GradientTape() as tape:\n        yield model(x)\n", []),
        # The gradient call is the student's exercise.
        (
            "def f(x):\n    with tf.GradientTape() as tape:\n        y = model(x)\n"
            "    grads = None  # YOUR CODE HERE\n    return grads\n",
            [],
        ),
    ],
)
def test_unused_tapes(body, expected):
    assert _unused(body) == expected


def test_a_top_level_tape_read_by_a_function_of_the_text_is_used():
    asked = "with tf.GradientTape() as tape:\n    y = model(x)\n\ndef g():\n    return tape\n"
    assert _unused(asked) == []


def test_a_function_with_a_tape_of_its_own_does_not_read_the_top_level_one():
    own = (
        "with tf.GradientTape() as tape:\n    y = model(x)\n\n"
        "def step(x):\n    with tf.GradientTape() as tape:\n        z = model(x)\n"
        "    return tape.gradient(z, model.trainable_variables)\n"
    )
    assert _unused(own) == ["tape: model(x)"]


def test_a_notebook_cell_that_was_not_read_may_ask_a_top_level_tape():
    program = "with tf.GradientTape() as tape:\n    y = model(x)\n"
    assert _unused(program) == ["tape: model(x)"]
    assert _unused(program + UNREAD_CELL + "\n") == []
