#!/usr/bin/env python3
"""How long an editor waits for tapelint's diagnostics: didChange to publishDiagnostics.

    python3 -m pip install -e '.[server]'
    python3 bench/server_latency.py            # 3-6 minutes on 2 busy cores

Starts `tapelint server` over stdio, opens a generated training module (1,000 lines, then
5,000; training steps with tapes, 10 findings per 1,000 lines), waits for its first
diagnostics, makes 5 unmeasured edits (the warm server), then sends edits one at a time:
each `didChange` changes one constant inside a GAN step (the findings stay the same),
and the time until the server publishes diagnostics for that version is one sample. Prints
the median and the 95th percentile (nearest rank) of:

- the latency, didChange to publishDiagnostics: what a user waits after they stop typing,
  the server's debounce included;
- the CPU time of the server's check of each version (its checking thread, from the
  server's `$/logTrace`): what the check costs, which other jobs on a shared machine do not
  inflate; on an idle machine the latency is about this plus the debounce;
- the CPU time of the same check from scratch (`runner.run_stdin` with no project, in this
  process, while the server is idle): what `tapelint check --stdin-filename` does, nothing
  kept from earlier checks. The server keeps the parse of the statements an edit left alone
  and their positions (`tapelint.parsing.incremental`, `tapelint.parsing.positions`): this less
  the server's CPU is what that saves.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HEADER = '''"""Training code for several models: generated for tapelint's latency benchmark."""

import numpy as np
import tensorflow as tf

'''

# Training code as projects write it, one unit after another (names numbered): most units
# are clean (model builders, data pipelines, evaluation, and training steps done right), and
# every third or so holds a bug tapelint reports (TAP101 a loss computed after the block,
# TAP401 gradients applied unfiltered; a persistent tape asked once, in a `tf.function`,
# costs nothing and is not reported): 10 findings in 1,000 lines.
CLEAN_STEP = '''
def make_classifier_{i}(num_classes):
    """A small convolutional classifier."""
    return tf.keras.Sequential(
        [
            tf.keras.layers.Conv2D(32, 3, activation="relu"),
            tf.keras.layers.MaxPooling2D(),
            tf.keras.layers.Flatten(),
            tf.keras.layers.Dense(128, activation="relu"),
            tf.keras.layers.Dense(num_classes),
        ]
    )


def classifier_step_{i}(model, optimizer, images, labels):
    """One optimisation step of the classifier; gradients filtered before the update."""
    with tf.GradientTape() as tape:
        logits = model(images, training=True)
        loss = tf.reduce_mean(
            tf.keras.losses.sparse_categorical_crossentropy(labels, logits, from_logits=True)
        )
    grads = tape.gradient(loss, model.trainable_variables)
    pairs = [(g, v) for g, v in zip(grads, model.trainable_variables) if g is not None]
    optimizer.apply_gradients(pairs)
    return loss
'''
DATA = '''
def batches_{i}(features, labels, batch_size=32):
    """Shuffled batches of a NumPy dataset."""
    order = np.random.permutation(len(features))
    for start in range(0, len(order), batch_size):
        chosen = order[start : start + batch_size]
        yield features[chosen], labels[chosen]


def evaluate_{i}(model, dataset):
    """Mean loss and accuracy over a dataset; no tape here."""
    total, correct, count = 0.0, 0, 0
    for images, labels in dataset:
        logits = model(images, training=False)
        total += float(tf.reduce_mean(tf.keras.losses.mse(labels, logits)))
        correct += int(np.sum(np.argmax(logits.numpy(), axis=-1) == labels.numpy()))
        count += int(labels.shape[0])
    return total / max(count, 1), correct / max(count, 1)
'''
CLEAN_GAN = '''
def gan_step_{i}(generator, discriminator, gen_opt, disc_opt, images, noise_dim=100):
    """GAN step: both losses computed while their tapes record."""
    noise = tf.random.normal([tf.shape(images)[0], noise_dim])
    bce = tf.keras.losses.BinaryCrossentropy(from_logits=True)
    with tf.GradientTape() as gen_tape, tf.GradientTape() as disc_tape:
        generated = generator(noise, training=True)
        real_output = discriminator(images, training=True)
        fake_output = discriminator(generated, training=True)
        gen_loss = bce(tf.ones_like(fake_output), fake_output)
        real_loss = bce(tf.ones_like(real_output), real_output)
        fake_loss = bce(tf.zeros_like(fake_output), fake_output)
        disc_loss = real_loss + fake_loss * {scale}
    gen_grads = gen_tape.gradient(gen_loss, generator.trainable_variables)
    disc_grads = disc_tape.gradient(disc_loss, discriminator.trainable_variables)
    gen_opt.apply_gradients(
        [(g, v) for g, v in zip(gen_grads, generator.trainable_variables) if g is not None]
    )
    disc_opt.apply_gradients(
        [(g, v) for g, v in zip(disc_grads, discriminator.trainable_variables) if g is not None]
    )
    return gen_loss, disc_loss
'''
LOSS_AFTER_BLOCK = '''
def wgan_critic_step_{i}(critic, generator, critic_opt, images, noise_dim=128):
    """Critic step whose loss is built after the tape stopped recording (TAP101)."""
    noise = tf.random.normal([tf.shape(images)[0], noise_dim])
    with tf.GradientTape() as tape:
        fake = generator(noise, training=False)
        real_score = critic(images, training=True)
        fake_score = critic(fake, training=True)
    critic_loss = tf.reduce_mean(fake_score) - tf.reduce_mean(real_score)
    grads = tape.gradient(critic_loss, critic.trainable_variables)
    critic_opt.apply_gradients(
        [(g, v) for g, v in zip(grads, critic.trainable_variables) if g is not None]
    )
    return critic_loss
'''
UNFILTERED_APPLY = '''
def actor_critic_step_{i}(actor, critic, actor_opt, critic_opt, states, actions, returns):
    """Actor-critic update; the critic's gradients are applied unfiltered (TAP401)."""
    with tf.GradientTape() as actor_tape, tf.GradientTape() as critic_tape:
        logits = actor(states, training=True)
        values = tf.squeeze(critic(states, training=True), axis=-1)
        advantages = returns - values
        one_hot = tf.one_hot(actions, tf.shape(logits)[-1])
        log_probs = tf.reduce_sum(tf.nn.log_softmax(logits) * one_hot, axis=-1)
        actor_loss = -tf.reduce_mean(log_probs * tf.stop_gradient(advantages))
        critic_loss = tf.reduce_mean(tf.square(advantages))
    actor_grads = actor_tape.gradient(actor_loss, actor.trainable_variables)
    critic_grads = critic_tape.gradient(critic_loss, critic.trainable_variables)
    actor_opt.apply_gradients(
        [(g, v) for g, v in zip(actor_grads, actor.trainable_variables) if g is not None]
    )
    critic_opt.apply_gradients(zip(critic_grads, critic.trainable_variables))
    return actor_loss, critic_loss
'''
PERSISTENT_ONCE = '''
@tf.function
def regression_step_{i}(model, optimizer, x, y):
    """A persistent tape asked for one gradient only (TAP102)."""
    with tf.GradientTape(persistent=True) as tape:
        predictions = model(x, training=True)
        loss = tf.reduce_mean(tf.keras.losses.mse(y, predictions))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(
        [(g, v) for g, v in zip(grads, model.trainable_variables) if g is not None]
    )
    return loss
'''
UNITS = (
    CLEAN_STEP,
    DATA,
    CLEAN_GAN,
    LOSS_AFTER_BLOCK,
    CLEAN_STEP,
    DATA,
    UNFILTERED_APPLY,
    CLEAN_GAN,
    CLEAN_STEP,
    PERSISTENT_ONCE,
)


def training_source(target_lines: int) -> str:
    """A module of about `target_lines` lines of training code (whole units, in turn)."""
    parts, lines, i = [HEADER], HEADER.count("\n"), 0
    while lines < target_lines:
        unit = UNITS[i % len(UNITS)].format(i=i, scale="1.0")
        parts.append(unit)
        lines += unit.count("\n")
        i += 1
    return "".join(parts)


def _scale_line(text: str) -> tuple[int, int, int]:
    """(line, start, end), 0-based, of the constant the edits change: the loss scale of
    the clean GAN step nearest the middle of the file."""
    lines = text.split("\n")
    token = "fake_loss * "
    found = [n for n, line in enumerate(lines) if token in line]
    line = min(found, key=lambda n: abs(n - len(lines) // 2))
    start = lines[line].index(token) + len(token)
    end = start
    while end < len(lines[line]) and (lines[line][end].isdigit() or lines[line][end] == "."):
        end += 1
    return line, start, end


_TRACE = re.compile(r"checked (?P<uri>\S+) version (?P<version>\d+): .* \((?P<cpu>\d+) ms CPU\)$")


class _Server:
    """`tapelint server` over stdio, with the time each version's diagnostics arrived."""

    def __init__(self) -> None:
        from lsprotocol import types
        from pygls.lsp.client import LanguageClient

        self.types = types
        self.client = LanguageClient("tapelint-latency-bench", "1")
        self.arrived: dict[tuple[str, int | None], float] = {}
        self.counts: dict[tuple[str, int | None], int] = {}
        self.cpu: dict[tuple[str, int], float] = {}  # the server's CPU seconds per check
        self.news = asyncio.Event()  # set when a notification arrives (no polling: the
        # benchmark must not take CPU from the server it measures)

        @self.client.feature(types.LOG_TRACE)
        def traced(params: types.LogTraceParams) -> None:
            found = _TRACE.match(params.message)
            if found is not None:
                key = (found["uri"], int(found["version"]))
                self.cpu[key] = int(found["cpu"]) / 1000
                self.news.set()

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def published(params: types.PublishDiagnosticsParams) -> None:
            key = (params.uri, params.version)
            self.arrived[key] = time.perf_counter()
            self.counts[key] = len(params.diagnostics)
            self.news.set()

    async def start(self, root: Path) -> None:
        types = self.types
        await self.client.start_io(sys.executable, "-m", "tapelint", "server")
        await self.client.initialize_async(
            types.InitializeParams(
                capabilities=types.ClientCapabilities(),
                root_uri=root.as_uri(),
                workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name=root.name)],
                trace=types.TraceValue.Verbose,  # each check's CPU time comes in its trace
            )
        )
        self.client.initialized(types.InitializedParams())

    async def stop(self) -> None:
        await self.client.shutdown_async(None)
        self.client.exit(None)
        await self.client.stop()

    async def cpu_of(self, uri: str, version: int) -> float:
        await self._until(lambda: (uri, version) in self.cpu, f"a trace of version {version}")
        return self.cpu[(uri, version)]

    async def wait(self, uri: str, version: int) -> float:
        await self._until(lambda: (uri, version) in self.arrived, f"diagnostics of {version}")
        return self.arrived[(uri, version)]

    async def _until(self, arrived: Callable[[], bool], what: str, timeout: float = 120) -> None:
        deadline = time.perf_counter() + timeout
        while not arrived():
            self.news.clear()
            try:
                await asyncio.wait_for(self.news.wait(), deadline - time.perf_counter())
            except TimeoutError:
                raise TimeoutError(f"no {what} from the server") from None


async def _measure(
    server: _Server, path: Path, samples: int, warmup: int, pause: float
) -> tuple[int, list[float], list[float], list[float]]:
    """After `warmup` unmeasured edits, `samples` edits to `path`: the number of findings,
    each edit's latency, the CPU time the server's check of it took, and the CPU time a
    check of the edited text from scratch takes (in this process, while the server is
    idle)."""
    types = server.types
    text = path.read_text(encoding="utf-8")
    uri = path.as_uri()
    server.client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)
        )
    )
    await server.wait(uri, 1)
    findings = server.counts[(uri, 1)]
    line, start, end = _scale_line(text)
    latencies: list[float] = []
    cpu: list[float] = []
    engine: list[float] = []
    for version in range(2, 2 + warmup + samples):
        value = f"{1 + version / 1000:.3f}"
        change = types.TextDocumentContentChangePartial(
            range=types.Range(types.Position(line, start), types.Position(line, end)), text=value
        )
        lines = text.split("\n")
        lines[line] = lines[line][:start] + value + lines[line][end:]
        text, end = "\n".join(lines), start + len(value)
        sent = time.perf_counter()
        server.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[change],
            )
        )
        arrived = await server.wait(uri, version)
        if server.counts[(uri, version)] != findings:
            raise RuntimeError(f"version {version}: {server.counts[(uri, version)]} findings")
        if version >= 2 + warmup:
            latencies.append(arrived - sent)
            cpu.append(await server.cpu_of(uri, version))
            engine.append(_scratch_seconds(text, path))
        await asyncio.sleep(pause)  # the user reads; the server is idle again
    return findings, latencies, cpu, engine


def _scratch_seconds(text: str, path: Path) -> float:
    """The CPU time of `tapelint check --stdin-filename` for `text`, without the process."""
    from tapelint.run.runner import Options, run_stdin
    from tapelint.settings.config import load_settings

    settings = load_settings()
    started = time.process_time()
    run_stdin(text.encode("utf-8"), str(path), settings, Options(force_exclude=True))
    return time.process_time() - started


def _percentile(values: list[float], fraction: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    rank = -(-round(fraction * 100) * len(ordered) // 100)  # ceil(fraction * n)
    return ordered[max(rank, 1) - 1]


def _ms(values: list[float]) -> str:
    median, p95 = statistics.median(values), _percentile(values, 0.95)
    return f"{median * 1000:.0f} | {p95 * 1000:.0f}"


async def _bench(sizes: list[int], samples: int, warmup: int, pause: float) -> str:
    rows = []
    with tempfile.TemporaryDirectory(prefix="tapelint-latency-") as work:
        root = Path(work)
        server = _Server()
        await server.start(root)
        try:
            for size in sizes:
                path = root / f"train_{size}.py"
                path.write_text(training_source(size), encoding="utf-8")
                lines = path.read_text(encoding="utf-8").count("\n")
                measured = await _measure(server, path, samples, warmup, pause)
                findings, latencies, cpu, engine = measured
                rows.append(
                    f"| {lines:,} | {findings} | {len(latencies)} | {_ms(latencies)} "
                    f"| {_ms(cpu)} | {_ms(engine)} |"
                )
        finally:
            await server.stop()
    header = (
        "| lines | findings | edits | latency median (ms) | p95 | server CPU per check: median "
        "| p95 | check from scratch, CPU: median | p95 |\n"
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    )
    return "\n".join([header, *rows])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,5000", help="file sizes in lines")
    parser.add_argument("--samples", type=int, default=40, help="measured edits per file")
    parser.add_argument("--warmup", type=int, default=5, help="unmeasured edits first")
    parser.add_argument("--pause", type=float, default=0.2, help="seconds between edits")
    args = parser.parse_args(argv)
    sizes = [int(size) for size in args.sizes.split(",")]
    print(
        f"tapelint server latency, didChange -> publishDiagnostics; {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, load average {os.getloadavg()[0]:.1f}"
    )
    print(asyncio.run(_bench(sizes, args.samples, args.warmup, args.pause)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
