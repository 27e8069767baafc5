"""`tapelint check --watch` on a terminal (a real pseudo-terminal) and stopped with Ctrl-C:
the screen is cleared before each check, and the end prints nothing of watchfiles'."""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli_helpers import CLEAN, LOSS_OUTSIDE, write

WAIT = 60.0  # seconds, at most, for any one thing to appear
CLEAR = "\x1b[2J"


class TerminalWatcher:
    """`tapelint check --watch` with its standard output on a pseudo-terminal and its
    standard error on a pipe, read as they come."""

    def __init__(self, cwd: Path) -> None:
        self.terminal, tty = pty.openpty()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tapelint", "check", "--watch", "--color", "never"],
            cwd=cwd,
            stdout=tty,
            stderr=subprocess.PIPE,
        )
        os.close(tty)
        self.output = {"stdout": "", "stderr": ""}

    def _read(self, timeout: float) -> None:
        assert self.process.stderr is not None
        sources = {self.terminal: "stdout", self.process.stderr.fileno(): "stderr"}
        ready, _, _ = select.select(list(sources), [], [], timeout)
        for fd in ready:
            try:
                data = os.read(fd, 65536)
            except OSError:  # the terminal's other end closed
                data = b""
            self.output[sources[fd]] += data.decode("utf-8", "replace")

    def wait_for(self, stream: str, text: str, count: int = 1, touch=None) -> None:
        deadline, next_touch = time.monotonic() + WAIT, time.monotonic() + 5
        while self.output[stream].count(text) < count:
            if time.monotonic() > deadline:
                pytest.fail(f"{text!r} x{count} not on {stream} in {WAIT} s: {self.output}")
            if touch is not None and time.monotonic() > next_touch:
                touch()
                next_touch = time.monotonic() + 5
            self._read(0.2)

    def finish(self) -> int:
        status = self.process.wait(timeout=WAIT)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            before = dict(self.output)
            self._read(0.2)
            if before == self.output:
                break
        os.close(self.terminal)
        return status

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)


def test_on_a_terminal_each_check_starts_on_a_cleared_screen_and_ctrl_c_ends_quietly(
    project: Path,
) -> None:
    write(project, "train.py", CLEAN)
    watcher = TerminalWatcher(project)
    try:
        watcher.wait_for("stderr", "Watching for file changes")
        assert watcher.output["stdout"].startswith(CLEAR)  # before the first check

        def edit() -> None:
            write(project, "train.py", LOSS_OUTSIDE)

        edit()
        watcher.wait_for("stdout", "TAP101", touch=edit)
        assert watcher.output["stdout"].count(CLEAR) >= 2
        last_screen = watcher.output["stdout"].rpartition(CLEAR)[2]
        assert "TAP101" in last_screen  # the new result is on the cleared screen
        watcher.wait_for("stderr", "Found 1 problem")  # the check is over
        watcher.process.send_signal(signal.SIGINT)
        status = watcher.finish()
    finally:
        watcher.kill()
    assert status == 0
    assert "KeyboardInterrupt" not in watcher.output["stderr"]
    assert "stopping watch" not in watcher.output["stderr"]
    assert watcher.output["stderr"].rstrip().splitlines()[-1].startswith("Found 1 problem")


def test_into_a_pipe_nothing_is_cleared(project: Path) -> None:
    write(project, "train.py", LOSS_OUTSIDE)
    process = subprocess.Popen(
        [sys.executable, "-m", "tapelint", "check", "--watch"],
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        deadline = time.monotonic() + WAIT
        while "Watching for file changes" not in process.stderr.readline():
            assert time.monotonic() < deadline and process.poll() is None
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=WAIT)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)
    assert process.returncode == 0
    assert "TAP101" in stdout and CLEAR not in stdout
    assert "stopping watch" not in stderr
