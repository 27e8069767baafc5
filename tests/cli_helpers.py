"""Shared by the command-line tests: snippets that produce known diagnostics, and runners."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

from click.testing import CliRunner

from tapelint.cli import cli

# TAP101 at 8:12 (the gradient call): the loss is computed after the tape's block.
LOSS_OUTSIDE = textwrap.dedent(
    """\
    import tensorflow as tf


    def train_step(model, x):
        with tf.GradientTape() as tape:
            pred = model(x)
        loss = tf.reduce_mean(pred)
        return tape.gradient(loss, model.trainable_variables)
    """
)

# TAP102 at 5:26 (`persistent=True`), safe fix: the one gradient call is after the block.
PERSISTENT_ONCE = textwrap.dedent(
    """\
    import tensorflow as tf


    def grads_of(model, x):
        with tf.GradientTape(persistent=True) as tape:
            loss = tf.reduce_mean(model(x))
        return tape.gradient(loss, model.trainable_variables)
    """
)

# TAP102 at 5:26 with an unsafe fix: the one gradient call is inside the block.
PERSISTENT_ONCE_INSIDE = textwrap.dedent(
    """\
    import tensorflow as tf


    def grads_of(model, x):
        with tf.GradientTape(persistent=True) as tape:
            loss = tf.reduce_mean(model(x))
            grads = tape.gradient(loss, model.trainable_variables)
        return grads
    """
)

# TAP103 at 4:5 (the `with`), safe fix: `del tape` after the second gradient call (the
# tape is still alive while `model.evaluate` runs).
NOT_RELEASED = textwrap.dedent(
    """\
    import tensorflow as tf

    for x in data:
        with tf.GradientTape(persistent=True) as tape:
            loss = tf.reduce_mean(model(x))
        g1 = tape.gradient(loss, model.trainable_variables)
        g2 = tape.gradient(loss, x)
        print(g1, g2)
        model.evaluate(validation_data)
    """
)

# TAP401 at 8:5 (the apply call).
UNFILTERED = textwrap.dedent(
    """\
    import tensorflow as tf


    def train_step(model, optimizer, x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(model(x))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
    """
)

# Correct code: no diagnostic with any rule.
CLEAN = textwrap.dedent(
    """\
    import tensorflow as tf


    def grads_of(model, x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(model(x))
        return tape.gradient(loss, model.trainable_variables)
    """
)


@dataclass(frozen=True)
class Run:
    exit_code: int
    stdout: str
    stderr: str

    def codes(self) -> list[tuple[str, str]]:
        """(path, code) of each text-format diagnostic line, in printed order."""
        pairs = []
        for line in self.stdout.splitlines():
            location, _, rest = line.partition(": ")
            pairs.append((location.split(":")[0], rest.split(" ")[0]))
        return pairs


def run_cli(*args: str) -> Run:
    """Run `tapelint ARGS` in-process in the current directory."""
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return Run(result.exit_code, result.stdout, result.stderr)


def run_subprocess(*args: str, cwd: Path, timeout: float = 60) -> Run:
    """Run `python -m tapelint ARGS` as a real process."""
    process = subprocess.run(
        [sys.executable, "-m", "tapelint", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return Run(process.returncode, process.stdout, process.stderr)


def write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path
