"""Processes that clean up after themselves (issue 20): a worker killed in the middle of a
run loses only the file it was checking; workers end with the main process, however it
ends; SIGTERM and SIGHUP stop a run as Ctrl-C does. Real processes, real signals; every
wait is bounded."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tapelint.linter.engine import Linter
from tapelint.run import parallel
from tests.cli_helpers import LOSS_OUTSIDE, run_cli, write
from tests.test_parallel import make_repository, padding

DIED = "internal error: the worker process checking it died"


def _errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error: ")]


def _without(stdout: str, path: str) -> list[str]:
    return [line for line in stdout.splitlines() if not line.startswith(f"{path}:")]


@pytest.mark.parametrize("jobs", ["2", "3"])
def test_a_worker_killed_in_the_first_pass_loses_only_the_file_it_was_checking(
    project, monkeypatch, jobs
):
    make_repository(project)
    serial = run_cli("check", "--no-cache", "--jobs", "1")
    original = Linter.analyze_bytes
    parent = os.getpid()

    def killed(self, data, path, context=None):
        if path == "pkg0/mod_03.py" and os.getpid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)  # what the OOM killer does
        return original(self, data, path, context)

    monkeypatch.setattr(Linter, "analyze_bytes", killed)
    result = run_cli("check", "--no-cache", "--jobs", jobs)
    assert result.exit_code == 2
    assert _errors(result.stderr) == [f"error: pkg0/mod_03.py: {DIED}"]
    assert result.stdout.splitlines() == _without(serial.stdout, "pkg0/mod_03.py")
    assert "pkg0/mod_03.py:" in serial.stdout  # it had findings, which were lost


HELPERS = textwrap.dedent(
    """\
    import tensorflow as tf


    def grads(model, x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(model(x))
        return tape.gradient(loss, model.trainable_variables)
    """
)


def _step(n: int) -> str:
    return (
        "from helpers import grads\n\n\n"
        f"def step_{n}(model, opt, x):\n"
        "    g = grads(model, x)\n"
        "    opt.apply_gradients(zip(g, model.trainable_variables))\n"
    )


def test_a_worker_killed_in_the_second_pass_loses_only_the_file_it_was_checking(
    project, monkeypatch
):
    monkeypatch.setattr(parallel, "POOL_MIN_BYTES", 0)  # every pass in a pool
    write(project, "helpers.py", HELPERS)
    for n in range(12):
        write(project, f"step_{n:02d}.py", _step(n) + padding(40))
    write(project, "loose.py", LOSS_OUTSIDE)
    serial = run_cli("check", "--no-cache", "--jobs", "1")
    assert len(serial.stdout.splitlines()) == 13
    original = Linter.analyze_bytes
    parent = os.getpid()

    def killed(self, data, path, context=None):
        if path == "step_05.py" and context.index is not None and os.getpid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)
        return original(self, data, path, context)

    monkeypatch.setattr(Linter, "analyze_bytes", killed)
    result = run_cli("check", "--no-cache", "--jobs", "2")
    assert result.exit_code == 2
    assert _errors(result.stderr) == [f"error: step_05.py: {DIED}"]
    assert result.stdout.splitlines() == _without(serial.stdout, "step_05.py")


def test_a_worker_that_dies_once_is_retried_and_nothing_is_lost(project, monkeypatch, tmp_path):
    make_repository(project)
    serial = run_cli("check", "--no-cache", "--jobs", "1")
    original = Linter.analyze_bytes
    parent = os.getpid()
    once = tmp_path / "killed-once"

    def killed_once(self, data, path, context=None):
        if path == "pkg1/mod_07.py" and os.getpid() != parent and not once.exists():
            once.touch()
            os.kill(os.getpid(), signal.SIGKILL)  # a transient failure: memory ran out once
        return original(self, data, path, context)

    monkeypatch.setattr(Linter, "analyze_bytes", killed_once)
    result = run_cli("check", "--no-cache", "--jobs", "2")
    assert once.exists()
    assert (result.exit_code, result.stdout) == (serial.exit_code, serial.stdout)
    assert _errors(result.stderr) == []


# Runs `tapelint ARGS` with every file's analysis waiting, in a worker, after it says so
# (a file named after the worker's pid in $MARKS): the workers are busy when the test
# signals the main process.
SLOW_RUN = textwrap.dedent(
    """\
    import os, sys, time
    from tapelint.linter.engine import Linter

    def waiting(self, data, path, context=None):
        open(os.path.join(os.environ["MARKS"], str(os.getpid())), "w").close()
        time.sleep(300)

    Linter.analyze_bytes = waiting
    sys.argv[0] = "tapelint"
    from tapelint.cli import main
    main()
    """
)


def _gone(pid: int) -> bool:
    """Whether the process has ended (a zombie has: only its exit status is left)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True
    return "\nState:\tZ" in status


def _wait_for(condition, timeout: float = 60) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM, signal.SIGHUP])
def test_workers_end_with_the_main_process_and_release_its_output(project, tmp_path, signum):
    for n in range(4):
        write(project, f"mod_{n}.py", LOSS_OUTSIDE + padding(8000))
    marks = tmp_path / "marks"
    marks.mkdir()
    process = subprocess.Popen(
        [sys.executable, "-c", SLOW_RUN, "check", "--no-cache", "--jobs", "2", "."],
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "MARKS": str(marks)},
    )
    workers: list[int] = []
    try:
        assert _wait_for(lambda: len(list(marks.iterdir())) == 2), "the workers never started"
        workers = [int(mark.name) for mark in marks.iterdir()]
        os.kill(process.pid, signum)  # the main process only, not its group
        # Returns once every process holding the output pipes has ended.
        _, stderr = process.communicate(timeout=60)
        assert _wait_for(lambda: all(_gone(pid) for pid in workers))
    finally:  # a failure leaves no process behind
        for pid in [process.pid, *workers]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        process.wait(timeout=60)
    if signum == signal.SIGKILL:
        assert process.returncode == -signal.SIGKILL
    else:  # as for Ctrl-C, with the shell's status for the signal
        assert process.returncode == 128 + signum
        assert "error: interrupted" in stderr
