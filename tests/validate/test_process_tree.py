"""`tapelint validate` owns its program's whole process tree and holds a bounded part of its
output (issue 30): SIGTERM and SIGHUP end a run as Ctrl-C does; SIGKILL of tapelint still
ends the program; children that start their own session and double-forked daemons are
ended with it; `--quiet` keeps only the end of what the program prints.

Real processes and real signals, with plain Python programs (no TensorFlow: the validator
runs them all the same). Every wait is bounded and generous; nothing here measures speed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_PATIENCE = 60.0  # seconds: how long a bounded wait may last before the test fails

# Starts a child in a session of its own and a double-forked daemon (which also leaves the
# session), records each pid in NAME.pid, then ends, or with `--stay` keeps running.
TREE = textwrap.dedent(
    """\
    import os
    import subprocess
    import sys
    import time


    def record(name, pid):
        with open(name + ".tmp", "w") as out:
            out.write(str(pid))
        os.replace(name + ".tmp", name + ".pid")


    def sleep_forever():
        while True:
            time.sleep(0.2)


    sleeper = [sys.executable, "-c", "import time\\nwhile True: time.sleep(0.2)"]
    record("session", subprocess.Popen(sleeper, start_new_session=True).pid)
    first = os.fork()
    if first == 0:
        os.setsid()
        if os.fork() == 0:
            record("daemon", os.getpid())
            sleep_forever()
        os._exit(0)
    os.waitpid(first, 0)
    record("main", os.getpid())
    if "--stay" in sys.argv:
        sleep_forever()
    """
)

# Prints 200 MiB in lines of 1 KiB, then its last words, and fails.
CHATTY = textwrap.dedent(
    """\
    import sys

    block = (b"x" * 1023 + b"\\n") * 1024
    for _ in range(200):
        sys.stdout.buffer.write(block)
    sys.stdout.flush()
    raise SystemExit("last words of a chatty program")
    """
)


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


@contextlib.contextmanager
def _validate(project: Path, *arguments: str) -> Iterator[subprocess.Popen]:
    """`tapelint validate ARGUMENTS` in `project`, its output in files (an orphan holding a
    pipe would hang the test)."""
    with (project / "out.txt").open("wb") as out, (project / "err.txt").open("wb") as err:
        process = subprocess.Popen(
            [sys.executable, "-m", "tapelint", "validate", "--timeout", "600", *arguments],
            cwd=project,
            env=_environment(),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
        )
        try:
            yield process
        finally:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            process.wait()


def _pid(project: Path, name: str) -> int:
    path = project / f"{name}.pid"
    deadline = time.monotonic() + _PATIENCE
    while not path.exists():
        assert time.monotonic() < deadline, f"{name}.pid never appeared"
        time.sleep(0.05)
    return int(path.read_text())


def _alive(pid: int) -> bool:
    """Running (a zombie, already dead and waiting for its parent to see it, is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return stat.rpartition(b")")[2].split()[0] != b"Z"


def _still_running(pids: list[int]) -> list[int]:
    """The ones still running after a bounded wait for all of them to end."""
    deadline = time.monotonic() + _PATIENCE
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [pid for pid in pids if _alive(pid)]


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Path]:
    """A directory for the program; whatever it left running is killed afterwards (the old
    validator left its program behind)."""
    yield tmp_path
    for pid_file in tmp_path.glob("*.pid"):
        pid = int(pid_file.read_text())
        with contextlib.suppress(OSError):
            if os.readlink(f"/proc/{pid}/cwd") == str(tmp_path):
                os.kill(pid, signal.SIGKILL)


def _stderr(project: Path) -> str:
    return (project / "err.txt").read_text(errors="replace")


def _name(signum: signal.Signals | None) -> str:
    return signum.name if signum is not None else "normal-end"


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=_name)
def test_a_signal_to_validate_ends_the_program_and_the_run_as_ctrl_c_does(project, signum):
    (project / "spin.py").write_text(
        "import os, time\n"
        "with open('spin.tmp', 'w') as out:\n"
        "    out.write(str(os.getpid()))\n"
        "os.replace('spin.tmp', 'spin.pid')\n"
        "while True:\n"
        "    time.sleep(0.2)\n"
    )
    with _validate(project, "spin.py") as validate:
        program = _pid(project, "spin")
        validate.send_signal(signum)
        status = validate.wait(timeout=_PATIENCE)
    assert _still_running([program]) == []
    assert status == 128 + signum
    stderr = _stderr(project)
    assert "Traceback" not in stderr
    assert f"error: interrupted ({signal.Signals(signum).name})" in stderr


@pytest.mark.parametrize("signum", [None, signal.SIGTERM, signal.SIGHUP, signal.SIGKILL], ids=_name)
def test_no_process_the_program_started_outlives_the_run(project, signum):
    """Normally (the program ends, leaving a child in its own session and a daemon), and
    when tapelint is signalled, even with SIGKILL, while they all run."""
    (project / "tree.py").write_text(TREE)
    arguments = ["tree.py"] if signum is None else ["tree.py", "--stay"]
    with _validate(project, *arguments) as validate:
        pids = [_pid(project, name) for name in ("main", "session", "daemon")]
        if signum is not None:
            validate.send_signal(signum)
        status = validate.wait(timeout=_PATIENCE)
    assert _still_running(pids) == [], _stderr(project)[-3000:]
    expected = {None: 0, signal.SIGKILL: -signal.SIGKILL}.get(signum, 128 + (signum or 0))
    assert status == expected, _stderr(project)[-3000:]


def _peak_memory_kib(command: list[str], project: Path) -> tuple[int, str]:
    """Run `command` from a small Python process of its own and return the largest peak
    resident size among the processes it started (tapelint's, the program's being small),
    with tapelint's standard error."""
    measure = (
        "import resource, subprocess, sys\n"
        "with open('err.txt', 'wb') as err:\n"
        "    subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=err)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", measure, *command],
        cwd=project,
        env=_environment(),
        capture_output=True,
        text=True,
        timeout=900,
        check=True,
    )
    return int(result.stdout), _stderr(project)


@pytest.mark.parametrize("quiet", [True, False], ids=["quiet", "shown"])
def test_200_mib_of_output_costs_tapelint_little_memory(project, quiet):
    """With `-q` only the end of the output is kept, and it is what is printed when the
    program fails; without it the output is passed on as it comes (here to standard error,
    where the validator filters TensorFlow's start-up lines)."""
    (project / "chatty.py").write_text(
        CHATTY if quiet else CHATTY.replace("sys.stdout", "sys.stderr")
    )
    options = ["-q"] if quiet else []
    tapelint = [sys.executable, "-m", "tapelint", "validate", "--timeout", "600", *options]
    peak, stderr = _peak_memory_kib([*tapelint, "chatty.py"], project)
    assert "last words of a chatty program" in stderr[-5000:]
    assert "The program exited with status 1" in stderr
    assert peak < 100 * 1024, f"peak resident size {peak // 1024} MiB"
    if quiet:  # the end of the output, not all of it
        assert len(stderr) < 100_000
