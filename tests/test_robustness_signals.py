"""Signals at any moment of `tapelint check` (issue 30): SIGINT, SIGTERM and SIGHUP end the
run with `error: interrupted` and the shell's status for the signal (130, 143, 129), never
a traceback, from the entry point's first line on, in worker processes as they start, and
with `--fix`, where every file is left either as it was or fixed whole.

Real processes and real signals. The moments that are hard to hit by timing are made
certain by a signal the process sends itself (while the command's modules are imported,
while a worker forks); a property test sends signals at random moments."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.cli_helpers import PERSISTENT_ONCE, write
from tests.test_parallel import padding

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="POSIX signals, and /proc to see handlers"
)

STOP_SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]


def _ended_by(stderr: str, signum: int, returncode: int) -> None:
    assert "Traceback" not in stderr and "Exception ignored" not in stderr, stderr
    assert returncode == 128 + signum, stderr
    assert stderr.splitlines()[-1] == "error: interrupted", stderr


def _tree(root: Path, files: int = 12) -> Path:
    """Files with a safe fix each (TAP102), enough source for a pool of workers."""
    for n in range(files):
        write(
            root,
            f"step_{n}.py",
            PERSISTENT_ONCE.replace("grads_of", f"grads_{n}") + padding(12_000),
        )
    return root


def _run(code: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


# Runs `python -m tapelint ARGS`, sending itself SIGNUM while the command's modules are
# imported (the old entry point printed a KeyboardInterrupt traceback, or died by SIGTERM).
WHILE_IMPORTING = textwrap.dedent(
    """\
    import os, runpy, signal, sys

    class Interrupting:
        def find_spec(self, name, path=None, target=None):
            if name == "tapelint.cli.check":
                os.kill(os.getpid(), int(os.environ["SIGNUM"]))
            return None

    sys.meta_path.insert(0, Interrupting())
    sys.argv[0] = "tapelint"
    runpy.run_module("tapelint", run_name="__main__", alter_sys=True)
    """
)


@pytest.mark.parametrize("signum", STOP_SIGNALS)
def test_a_signal_while_the_command_starts_ends_it_without_a_traceback(tmp_path, signum):
    write(tmp_path, "train.py", PERSISTENT_ONCE)
    done = subprocess.run(
        [sys.executable, "-c", WHILE_IMPORTING, "check", "--no-cache", "."],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "SIGNUM": str(int(signum))},
    )
    _ended_by(done.stderr, signum, done.returncode)
    assert done.stdout == ""


# Runs `tapelint ARGS` with SIGTERM sent, once, to the first worker as soon as it is forked
# (what the main process does to its workers when it stops): the old workers ran the
# parent's handler then and printed a traceback.
TO_A_NEW_WORKER = textwrap.dedent(
    """\
    import os, signal, sys
    from tapelint.cli import main

    def signal_once():
        try:
            os.close(os.open(os.environ["MARK"], os.O_CREAT | os.O_EXCL))
        except FileExistsError:
            return
        os.kill(os.getpid(), signal.SIGTERM)

    os.register_at_fork(after_in_child=signal_once)
    sys.argv[0] = "tapelint"
    main()
    """
)


def test_a_worker_signalled_as_it_starts_ends_quietly_and_its_files_are_checked(tmp_path):
    project = _tree(tmp_path / "project")
    serial = _run(
        "from tapelint.cli import main; main()", "check", "--no-cache", "--jobs", "1", cwd=project
    )
    assert serial.returncode == 1
    done = subprocess.run(
        [sys.executable, "-c", TO_A_NEW_WORKER, "check", "--no-cache", "--jobs", "2"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "MARK": str(tmp_path / "signalled")},
    )
    assert (tmp_path / "signalled").exists(), "no worker was forked"
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr, done.stderr
    assert (done.returncode, done.stdout) == (1, serial.stdout)


# Runs `tapelint ARGS` with SIGSIGNUM sent to the main process, once, in the middle of
# forking a worker: the old run lost the exception in a fork hook ("Exception ignored"),
# went on, and fixed every file.
WHILE_FORKING = textwrap.dedent(
    """\
    import os, signal, sys
    from tapelint.cli import main

    sent = []

    def signal_once():
        if not sent:
            sent.append(True)
            os.kill(os.getpid(), int(os.environ["SIGNUM"]))

    os.register_at_fork(after_in_parent=signal_once)
    sys.argv[0] = "tapelint"
    main()
    """
)


@pytest.mark.parametrize("signum", STOP_SIGNALS)
def test_a_signal_while_a_worker_forks_stops_the_run_and_its_fixes(tmp_path, signum):
    project = _tree(tmp_path)
    before = {path: path.read_bytes() for path in project.glob("*.py")}
    done = subprocess.run(
        [sys.executable, "-c", WHILE_FORKING, "check", "--no-cache", "--jobs", "2", "--fix"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "SIGNUM": str(int(signum))},
    )
    _ended_by(done.stderr, signum, done.returncode)
    # The workers fork for the first pass: nothing had been fixed yet.
    assert {path: path.read_bytes() for path in project.glob("*.py")} == before


# ---------------------------------------------------------------------- at random moments
def _catches_all(pid: int) -> bool:
    """Whether the process has a handler for each of the stop signals (SigCgt in /proc)."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("SigCgt:"):
                caught = int(line.split()[1], 16)
                return all(caught >> (signum - 1) & 1 for signum in STOP_SIGNALS)
    return False


@pytest.fixture(scope="module")
def trees(tmp_path_factory) -> tuple[Path, dict[str, bytes]]:
    """A tree to copy for each run, and its files as `--fix` leaves them."""
    original = _tree(tmp_path_factory.mktemp("original"))
    fixed = tmp_path_factory.mktemp("fixed") / "tree"
    shutil.copytree(original, fixed)
    done = subprocess.run(
        [sys.executable, "-m", "tapelint", "check", "--no-cache", "--fix", "--jobs", "1"],
        cwd=fixed,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0 and "12 fixed" in done.stderr, done.stderr
    return original, {path.name: path.read_bytes() for path in fixed.glob("*.py")}


@settings(
    max_examples=18,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    signum=st.sampled_from(STOP_SIGNALS),
    fix=st.booleans(),
    delay=st.floats(min_value=0, max_value=4.0),
)
def test_a_signal_at_any_moment_ends_check_cleanly(trees, tmp_path_factory, signum, fix, delay):
    original, fixed = trees
    project = tmp_path_factory.mktemp("run") / "tree"
    shutil.copytree(original, project)
    args = ["check", "--no-cache", "--jobs", "2", *(["--fix"] if fix else [])]
    process = subprocess.Popen(
        [sys.executable, "-m", "tapelint", *args],
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # The moments start at tapelint's first line (before it, the interpreter's own start
        # is Python's business): when the process has handlers for SIGTERM and SIGHUP,
        # which nothing but tapelint installs (Python's own is for SIGINT).
        while process.poll() is None and not _catches_all(process.pid):
            time.sleep(0.001)
        assert process.poll() is None, "the run ended without ever handling SIGTERM and SIGHUP"
        time.sleep(delay)
        finished = process.poll() is not None
        if not finished:
            process.send_signal(signum)
        _, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert "Traceback" not in stderr and "Exception ignored" not in stderr, stderr
    completed = "Found " in stderr and "error: interrupted" not in stderr
    if finished or (completed and process.returncode in (0, 1)):  # it was over
        assert process.returncode == (0 if fix else 1), stderr
    else:
        _ended_by(stderr, signum, process.returncode)
    for path in project.glob("*.py"):
        allowed = {original.joinpath(path.name).read_bytes()}
        if fix:
            allowed.add(fixed[path.name])
        assert path.read_bytes() in allowed, path.name
