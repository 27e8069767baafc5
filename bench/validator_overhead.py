"""How much `tapelint validate`'s instrumentation slows an eager training step.

    python3 bench/validator_overhead.py [--steps 60] [--blocks 7]

In one process: time a small Keras model's eager step (tape, loss, gradient,
apply_gradients, a float() of the loss) without the probe, then install the probe's patches
exactly as it does inside a validated program and time the same step again. Each side is
the median of several blocks of steps; the ratio instrumented / plain is printed (the aim is
at most 1.10). A benchmark, not a test: numbers depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import keras
import tensorflow as tf

from tapelint.validate.probe import bootstrap
from tapelint.validate.probe.recorder import Recorder


def make_step():
    model = keras.Sequential(
        [
            keras.Input((32,)),
            keras.layers.Dense(64, activation="relu"),
            keras.layers.Dense(64, activation="relu"),
            keras.layers.Dense(1),
        ]
    )
    optimizer = keras.optimizers.Adam(1e-3)
    x = tf.random.normal((64, 32))
    y = tf.random.normal((64, 1))

    def step() -> float:
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(x, training=True) - y) ** 2)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        return float(loss)

    return step


def time_per_step(step, steps: int, blocks: int) -> float:
    samples = []
    for _ in range(blocks):
        start = time.perf_counter()
        for _ in range(steps):
            step()
        samples.append((time.perf_counter() - start) / steps)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=60, help="steps per timed block")
    parser.add_argument("--blocks", type=int, default=7, help="timed blocks per side")
    args = parser.parse_args()

    step = make_step()
    for _ in range(20):  # warm up: build the optimizer, fill caches
        step()
    plain = time_per_step(step, args.steps, args.blocks)

    with tempfile.TemporaryDirectory() as scratch:
        recorder = Recorder(str(Path(scratch) / "events.jsonl"), max_steps=10**9)
        bootstrap._patch_tensorflow(recorder)
        bootstrap._patch_keras(recorder)
        for _ in range(20):
            step()
        instrumented = time_per_step(step, args.steps, args.blocks)
        events = len((Path(scratch) / "events.jsonl").read_text().splitlines())

    print(f"plain step:        {plain * 1e3:8.3f} ms")
    print(f"instrumented step: {instrumented * 1e3:8.3f} ms  ({events} events written)")
    print(f"ratio:             {instrumented / plain:8.3f}  (aim: <= 1.10)")


if __name__ == "__main__":
    main()
