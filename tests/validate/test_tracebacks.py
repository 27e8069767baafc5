"""Tracebacks of the program stay its own: an exception raised through each call the probe
wraps prints the same traceback text with and without `tapelint validate`, and none shows a
frame of tapelint's (issue 33)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Each case raises through one wrapped call; the program prints its traceback text.
PROGRAM = """
import sys
import traceback

import keras
import numpy as np
import tensorflow as tf
import tf_keras

CASES = {}


def case(function):
    CASES[function.__name__] = function
    return function


@case
def cast_while_recording():
    with tf.GradientTape():
        tf.cast([1.0], "no_such_dtype")


@case
def keras_optimizer_constructor():
    keras.optimizers.Adam(lr=0.1)


@case
def variable_constructor():
    tf.Variable([1.0], shape=(3, 3))


@case
def layer_call():
    with tf.GradientTape():
        keras.layers.Dense(2)(tf.zeros((2, 3)), training=True)
    keras.layers.Dense(2)(tf.zeros(()))


@case
def tape_reused():
    x = tf.Variable(1.0)
    with tf.GradientTape() as tape:
        y = x * x
    tape.gradient(y, x)
    tape.gradient(y, x)


@case
def tape_watch():
    with tf.GradientTape() as tape:
        tape.watch("not a tensor")


@case
def keras_apply_gradients():
    variable = tf.Variable([1.0, 2.0])
    keras.optimizers.SGD(0.1).apply_gradients([(tf.ones((3,)), variable)])


@case
def tf_keras_apply_gradients():
    variable = tf.Variable([1.0, 2.0])
    tf_keras.optimizers.SGD(0.1).apply_gradients([(tf.ones((3,)), variable)])


@case
def tf_keras_legacy_apply_gradients():
    variable = tf.Variable([1.0, 2.0])
    tf_keras.optimizers.legacy.SGD(0.1).apply_gradients([(tf.ones((3,)), variable)])


@case
def numpy_function_while_recording():
    with tf.GradientTape():
        np.log("a")


@case
def compiled_function():
    @tf.function
    def step(x):
        raise ValueError("raised while tracing")

    step(tf.constant(1.0))


@case
def random_draw_while_tracing():
    @tf.function
    def step(x):
        return x + np.random.normal(size=-1)

    step(tf.constant(1.0))


with open(sys.argv[1], "w") as out:
    for name, function in CASES.items():
        try:
            function()
        except Exception:
            out.write(f"=== {name}\\n{traceback.format_exc()}")
        else:
            out.write(f"=== {name} did not raise\\n")
"""


def _cases(output: str) -> dict[str, str]:
    """Each case's traceback text; AutoGraph's generated file names, random in every run,
    made equal."""
    output = re.sub(r"__autograph_generated_file\w+\.py", "__autograph_generated_file.py", output)
    cases = {}
    for block in output.split("=== ")[1:]:
        name, _, text = block.partition("\n")
        cases[name] = text
    return cases


def test_tracebacks_through_every_wrapped_call_are_the_programs_own(tmp_path: Path) -> None:
    program = tmp_path / "raises_through_wrappers.py"
    program.write_text(PROGRAM)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "3"}
    plain_out, validated_out = tmp_path / "plain.txt", tmp_path / "validated.txt"
    plain = subprocess.run(
        [sys.executable, str(program), str(plain_out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        cwd=tmp_path,
    )
    subprocess.run(
        [
            *(sys.executable, "-m", "tapelint", "validate", "--quiet", "--"),
            *(sys.executable, str(program), str(validated_out)),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        cwd=tmp_path,
    )
    expected = _cases(plain_out.read_text())
    observed = _cases(validated_out.read_text())
    assert len(expected) == 12, plain.stderr[-2000:]
    assert not [name for name in expected if "did not raise" in name]
    assert "tapelint" not in validated_out.read_text()
    for name, text in expected.items():
        assert observed.get(name) == text, name
