"""The progress display: on a terminal only, on stderr only, never with --quiet."""

from __future__ import annotations

import io
import os
import pty
import subprocess
import sys
from pathlib import Path

import click

from tapelint.cli.progress import ProgressDisplay
from tests.cli_helpers import LOSS_OUTSIDE, run_subprocess, write


def run_with_terminal_stderr(*args: str, cwd: Path) -> tuple[int, str, str]:
    """`python -m tapelint ARGS` with stderr on a pseudo-terminal and stdout on a pipe."""
    controller, terminal = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "tapelint", *args],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=terminal,
    )
    os.close(terminal)
    chunks = []
    while True:
        try:
            chunk = os.read(controller, 4096)
        except OSError:  # the terminal closed: the process has exited
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(controller)
    stdout, _ = process.communicate(timeout=120)
    return process.returncode, stdout.decode(), b"".join(chunks).decode(errors="replace")


def many_files(root: Path) -> None:
    for index in range(3):
        write(root, f"train_{index}.py", LOSS_OUTSIDE)


def test_on_a_terminal_the_bar_counts_files_on_stderr_and_is_erased(tmp_path: Path) -> None:
    many_files(tmp_path)
    code, stdout, stderr = run_with_terminal_stderr("check", ".", cwd=tmp_path)
    assert code == 1
    assert "Checking" in stderr and "3/3" in stderr
    assert "\x1b[1A\r\x1b[2K" in stderr  # the finished bar is erased
    # The summary line, coloured since stderr is a terminal (tapelint.output.style).
    assert click.unstyle(stderr).rstrip().endswith("Found 3 problems in 3 files.")
    assert "Checking" not in stdout and len(stdout.splitlines()) == 3


def test_quiet_turns_it_off(tmp_path: Path) -> None:
    many_files(tmp_path)
    code, stdout, stderr = run_with_terminal_stderr("check", "-q", ".", cwd=tmp_path)
    assert code == 1 and len(stdout.splitlines()) == 3
    assert stderr == ""


def test_off_when_stderr_is_not_a_terminal(tmp_path: Path) -> None:
    many_files(tmp_path)
    result = run_subprocess("check", ".", cwd=tmp_path)
    assert result.stderr == "Found 3 problems in 3 files.\n"


def test_a_single_file_needs_no_bar(tmp_path: Path) -> None:
    write(tmp_path, "train.py", LOSS_OUTSIDE)
    _, _, stderr = run_with_terminal_stderr("check", ".", cwd=tmp_path)
    assert "Checking" not in stderr


def test_a_stream_that_is_not_a_terminal_gets_nothing() -> None:
    stream = io.StringIO()
    with ProgressDisplay(stream) as progress:
        for done in range(1, 11):
            progress(done, 10)
    assert stream.getvalue() == ""
