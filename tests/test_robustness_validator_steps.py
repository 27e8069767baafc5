"""`tapelint validate --max-steps` counts training steps whichever optimizer object makes
them (issue 20): a program that makes a new optimizer every epoch (TAP502's bug) is
stopped after the steps asked for, as one that keeps its optimizer is. A real run on
TensorFlow."""

from __future__ import annotations

import subprocess
import sys
import textwrap

# 40 epochs of 2 steps, a new optimizer each epoch (so none makes the 5 steps asked for); it
# prints each step it finishes.
RECREATED = textwrap.dedent(
    """\
    import tensorflow as tf

    w = tf.Variable(1.0)
    done = 0
    for epoch in range(40):
        optimizer = tf.keras.optimizers.SGD(0.1)
        for _ in range(2):
            with tf.GradientTape() as tape:
                loss = (w - 3.0) ** 2
            grads = tape.gradient(loss, [w])
            optimizer.apply_gradients(zip(grads, [w]))
            done += 1
            print("step", done, flush=True)
    """
)


def test_max_steps_stops_a_program_that_recreates_its_optimizer_every_epoch(tmp_path):
    script = tmp_path / "recreated.py"
    script.write_text(RECREATED)
    result = subprocess.run(
        [sys.executable, "-m", "tapelint", "validate", "--max-steps", "5", str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert "Stopped the program after 5 optimizer steps (--max-steps 5)" in result.stderr, (
        result.stderr[-3000:]
    )
    steps = [line for line in result.stdout.splitlines() if line.startswith("step ")]
    assert steps == [f"step {n}" for n in range(1, 6)]
