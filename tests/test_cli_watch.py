"""`tapelint check --watch`, run for real: a process that watches a directory, sees a file
change and checks again (every wait bounded; nothing about how fast)."""

from __future__ import annotations

import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.cli_helpers import CLEAN, LOSS_OUTSIDE, write

WAIT = 60.0  # seconds, at most, for any one thing to appear
RETOUCH = 5.0  # write the file again after this long without a re-check


class Watcher:
    """A `tapelint check --watch` process and the lines it prints (stdout and stderr)."""

    def __init__(self, cwd: Path, *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tapelint", "check", "--watch", *args],
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))

    def wait_for(self, text: str, *, again: Callable[[], None] | None = None) -> str:
        """The first new line containing `text`; `again()` is called each RETOUCH seconds
        (a change made before the watcher was armed is not seen)."""
        deadline = time.monotonic() + WAIT
        next_touch = time.monotonic() + RETOUCH
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.2)
            except queue.Empty:
                if again is not None and time.monotonic() > next_touch:
                    again()
                    next_touch = time.monotonic() + RETOUCH
                continue
            self.seen.append(line)
            if text in line:
                return line
        pytest.fail(f"no line with {text!r} within {WAIT} s; printed: {self.seen}")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)


@pytest.fixture
def watching(project: Path) -> Iterator[Watcher]:
    write(project, "train.py", CLEAN)
    watcher = Watcher(project, "--output-format", "concise")
    yield watcher
    watcher.stop()


def test_an_edit_is_checked_again(watching: Watcher, project: Path) -> None:
    assert watching.wait_for("All checks passed!") == "All checks passed!"
    watching.wait_for("Watching for file changes")

    def edit() -> None:
        write(project, "train.py", LOSS_OUTSIDE)

    edit()
    watching.wait_for("train.py changed: checking again.", again=edit)
    finding = watching.wait_for("TAP101")
    assert finding.startswith("train.py:8:12: TAP101 `loss` is computed after")
    watching.wait_for("Found 1 problem in 1 file.")

    def repair() -> None:
        write(project, "train.py", CLEAN)

    repair()
    watching.wait_for("All checks passed!", again=repair)
    assert watching.process.poll() is None  # still watching


def test_files_that_cannot_change_a_result_are_not_watched(watching: Watcher, project) -> None:
    watching.wait_for("Watching for file changes")
    write(project, "notes.txt", "a change that is not Python\n")

    def edit() -> None:
        write(project, "train.py", LOSS_OUTSIDE)

    edit()
    line = watching.wait_for("changed: checking again.", again=edit)
    assert "notes.txt" not in line
    assert not any("notes.txt" in seen for seen in watching.seen)


def test_standard_input_cannot_be_watched(project: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tapelint", "check", "--watch", "-"],
        cwd=project,
        input="",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert result.stderr == "error: --watch watches files: it cannot check standard input\n"


def test_an_edited_config_is_read_again(project: Path) -> None:
    write(project, "train.py", LOSS_OUTSIDE)
    watcher = Watcher(project, "--output-format", "concise")
    try:
        watcher.wait_for("Found 1 problem in 1 file.")
        watcher.wait_for("Watching for file changes")

        def ignore() -> None:
            write(project, "pyproject.toml", '[tool.tapelint]\nignore = ["TAP101"]\n')

        ignore()
        watcher.wait_for("pyproject.toml changed: checking again.", again=ignore)
        watcher.wait_for("All checks passed!")
    finally:
        watcher.stop()
