"""Running the user's program under the probe: environment, time limit, its processes, its
output.

The program runs with the probe's `sitecustomize.py` first on PYTHONPATH and stdin closed (a
program waiting for input would otherwise wait until the time limit). Every process it
starts ends with the run, however the run ends (see `ProgramTree`): at the time limit they
get SIGTERM, then SIGKILL after a short grace; when the program ends on its own, anything it
left running is killed; when tapelint is interrupted or killed, they are killed.

With `--quiet` only the end of the program's output is kept in memory (`_Tail`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Protocol

from tapelint import interrupts
from tapelint.validate import tflog
from tapelint.validate.probe import schema

SITE_DIR = Path(__file__).resolve().parent / "site"
_SUPERVISOR = Path(__file__).resolve().parent / "supervisor.py"
_GRACE_SECONDS = 5.0
_MARGIN_SECONDS = 5.0  # how much longer than the grace the supervisor may take
_OUTPUT_TAIL = 40  # lines of captured output shown for the failure summary
_TAIL_BYTES = 256 * 1024  # how much of the end of the output --quiet keeps


@dataclass(frozen=True)
class Outcome:
    returncode: int | None  # None: killed at the time limit
    timed_out: bool
    output_tail: str  # the end of the captured output (with --quiet), else ""


def probe_environment(
    events: Path,
    max_steps: int | None,
    sites: Path | None = None,
    codes: frozenset[str] = frozenset(),
) -> dict[str, str]:
    """`sites`: the file naming the lines to watch for exceptions (`watched.write_sites`);
    `codes`: the codes of the diagnostics being validated."""
    env = dict(os.environ)
    existing = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(SITE_DIR) + (os.pathsep + existing if existing else "")
    env[schema.EVENTS_ENV] = str(events)
    env[schema.MAX_STEPS_ENV] = str(max_steps or 0)  # 0: no limit
    if sites is not None:
        env[schema.SITES_ENV] = str(sites)
    if codes:
        env[schema.CODES_ENV] = ",".join(sorted(codes))
    return env


def run_program(
    command: Sequence[str],
    env: dict[str, str],
    timeout: float,
    *,
    quiet: bool,
    stdout_to_stderr: bool = False,
    drop_tf_noise: bool = False,
) -> Outcome:
    """Run `command` to completion or the time limit. OSError if it cannot be started.

    `stdout_to_stderr` sends the program's standard output to our standard error (so
    that our standard output carries only the report); `drop_tf_noise` takes TensorFlow's
    start-up INFO lines out of its output (`tflog`)."""
    tail = _Tail() if quiet else None
    if quiet:
        stdout, stderr = subprocess.PIPE, subprocess.STDOUT
    else:
        stdout = _stderr_fd() if stdout_to_stderr else None
        stderr = subprocess.PIPE if drop_tf_noise else None
    tree: ProgramTree | None = None
    pump: _Pump | None = None
    timed_out = False
    try:
        with interrupts.held():  # a signal now is acted on once the program can be ended
            tree = ProgramTree(command, env, stdout, stderr)
        source = tree.process.stdout if quiet else tree.process.stderr
        if source is not None:
            pump = _Pump(source, tail if tail is not None else _StderrSink())
        timed_out = not tree.wait(timeout)
        if timed_out:
            tree.stop()
    finally:
        if tree is not None:
            tree.end()
        if pump is not None:
            pump.finish()
    assert tree is not None
    output_tail = tail.text(drop_tf_noise) if tail is not None else ""
    return Outcome(None if timed_out else tree.returncode, timed_out, output_tail)


class ProgramTree:
    """The program and every process it starts.

    On Linux the program runs under `supervisor.py`, which keeps all its processes below it
    (a child subreaper), ends them all when asked or when tapelint dies (a parent-death
    signal), and reports how the program ended. Elsewhere the program runs in a session of
    its own, and the run ends its process group: a process that leaves the group, or the
    program itself if tapelint is killed with SIGKILL, is not reached there."""

    def __init__(
        self, command: Sequence[str], env: dict[str, str], stdout: int | None, stderr: int | None
    ) -> None:
        self.supervised = sys.platform.startswith("linux")
        argv = list(command)
        pass_fds: tuple[int, ...] = ()
        if self.supervised:
            self._status_read, status_write = os.pipe()
            argv = [
                sys.executable,
                "-I",
                str(_SUPERVISOR),
                str(os.getpid()),
                str(status_write),
                str(_GRACE_SECONDS),
                "--",
                *argv,
            ]
            pass_fds = (status_write,)
        try:
            self.process = subprocess.Popen(
                argv,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=stdout,
                stderr=stderr,
                start_new_session=True,
                pass_fds=pass_fds,
            )
        except OSError:
            if self.supervised:
                os.close(self._status_read)
            raise
        finally:
            for fd in pass_fds:
                os.close(fd)
        self.ended = False
        self.returncode: int | None = None
        if self.supervised:
            self._status = os.fdopen(self._status_read, "rb")
            self._started()

    def wait(self, timeout: float) -> bool:
        """Wait for the program's end; False if it still runs after `timeout` seconds."""
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return False
        return True

    def stop(self) -> None:
        """SIGTERM to the program, SIGKILL after the grace (the time limit)."""
        if self.supervised:
            self._signal(signal.SIGTERM)
        else:
            _kill_group(self.process, signal.SIGTERM)
        if not self.wait(_GRACE_SECONDS + _MARGIN_SECONDS):
            self.end()

    def end(self) -> None:
        """Kill every process of the program now, if any is left, and wait for that."""
        if self.ended:
            return
        self.ended = True
        if self.process.returncode is None:
            if self.supervised:
                self._signal(signal.SIGHUP)
                if not self.wait(_GRACE_SECONDS + _MARGIN_SECONDS):  # it failed: the program
                    self.process.kill()  # ends with it (its parent-death signal)
            else:
                _kill_group(self.process, signal.SIGKILL)
        self.process.wait()
        if not self.supervised:
            _kill_group(self.process, signal.SIGKILL)  # what the program left in its group
            self.returncode = self.process.returncode
        else:
            with self._status:
                self.returncode = _returncode(self._status.read().decode("utf-8", "replace"))

    def _started(self) -> None:
        """The supervisor's first word: the program started, or why it could not."""
        first = self._status.readline().decode("utf-8", "replace").strip()
        if first.startswith("error "):
            self._status.close()
            self.process.wait()
            _, number, message = first.split(" ", 2)
            raise OSError(int(number), message)

    def _signal(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.process.send_signal(signum)


def _returncode(status: str) -> int:
    """From the supervisor's last word; none means it was killed, and the program with it."""
    words = status.split()
    if len(words) == 2 and words[0] == "returncode":
        return int(words[1])
    return -signal.SIGKILL


class _Tail:
    """The end of the program's output: at most `_TAIL_BYTES` of it in memory, however much
    it prints."""

    def __init__(self) -> None:
        self.kept = bytearray()
        self.cut = False  # the beginning was dropped

    def feed(self, data: bytes) -> None:
        self.kept += data
        if len(self.kept) > _TAIL_BYTES:
            del self.kept[: len(self.kept) - _TAIL_BYTES]
            self.cut = True

    def flush(self) -> None:
        pass  # nothing held back

    def text(self, drop_tf_noise: bool) -> str:
        """Its last lines (the first kept line, cut short, left out)."""
        lines = bytes(self.kept).decode("utf-8", "replace").splitlines()
        if self.cut and len(lines) > 1:
            lines = lines[1:]
        text = "\n".join(lines)
        if drop_tf_noise:
            text = tflog.without_noise(text)
        return "\n".join(text.splitlines()[-_OUTPUT_TAIL:])


class _Pump:
    """Copies the program's output (a pipe) to `sink` as it comes, in a thread of its own."""

    def __init__(self, source: IO[bytes], sink: _Sink) -> None:
        self.source = source
        self.sink = sink
        self.thread = threading.Thread(target=self._run, name="tapelint-output", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            while chunk := os.read(self.source.fileno(), 65536):
                self.sink.feed(chunk)
            self.sink.flush()

    def finish(self) -> None:
        """Wait for the rest of the output (every writer is gone once the program's
        processes are)."""
        self.thread.join(timeout=_GRACE_SECONDS)
        with contextlib.suppress(OSError):
            self.source.close()


class _Sink(Protocol):
    def feed(self, data: bytes) -> None: ...

    def flush(self) -> None: ...


class _StderrSink:
    """Our standard error, without TensorFlow's start-up noise."""

    def __init__(self) -> None:
        self.filter = tflog.LineFilter()
        self.target = sys.stderr.buffer if hasattr(sys.stderr, "buffer") else None

    def feed(self, data: bytes) -> None:
        self._write(self.filter.feed(data))

    def flush(self) -> None:
        self._write(self.filter.flush())

    def _write(self, data: bytes) -> None:
        if not data:
            return
        if self.target is None:  # a text-only stream (tests capture with one)
            sys.stderr.write(data.decode("utf-8", "replace"))
            sys.stderr.flush()
        else:
            self.target.write(data)
            self.target.flush()


def _stderr_fd() -> int:
    try:
        return sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # replaced by a stream without a file
        return 2


def _kill_group(process: subprocess.Popen, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, sig)
