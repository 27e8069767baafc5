"""Running the user's program under the probe: environment, time limit, process group.

The program runs in its own process group (a new session), with the probe's
`sitecustomize.py` first on PYTHONPATH and stdin closed (a program waiting for input would
otherwise wait until the time limit). On timeout the whole group gets SIGTERM, then SIGKILL
after a short grace; when the program ends on its own, anything it left running in its group
(data-loader workers of a program the probe stopped) is killed too.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from tapelint.validate import tflog
from tapelint.validate.probe import schema

SITE_DIR = Path(__file__).resolve().parent / "site"
_GRACE_SECONDS = 5.0
_OUTPUT_TAIL = 40  # lines of captured output kept for the failure summary


@dataclass(frozen=True)
class Outcome:
    returncode: int | None  # None: killed at the time limit
    timed_out: bool
    output_tail: str  # the end of the captured output (with --quiet), else ""


def probe_environment(
    events: Path,
    max_steps: int,
    sites: Path | None = None,
    codes: frozenset[str] = frozenset(),
) -> dict[str, str]:
    """`sites`: the file naming the lines to watch for exceptions (`watched.write_sites`);
    `codes`: the codes of the diagnostics being validated."""
    env = dict(os.environ)
    existing = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(SITE_DIR) + (os.pathsep + existing if existing else "")
    env[schema.EVENTS_ENV] = str(events)
    env[schema.MAX_STEPS_ENV] = str(max_steps)
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

    `stdout_to_stderr` sends the program's standard output to ours standard error (so
    that our standard output carries only the report); `drop_tf_noise` takes TensorFlow's
    start-up INFO lines out of its output (`tflog`)."""
    with tempfile.TemporaryFile() as captured:
        if quiet:
            stdout, stderr = captured, subprocess.STDOUT
        else:
            stdout = _stderr_fd() if stdout_to_stderr else None
            stderr = subprocess.PIPE if drop_tf_noise else None
        process = subprocess.Popen(
            list(command),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
        )
        pump = _Pump(process.stderr) if process.stderr is not None else None
        timed_out = False
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(process, signal.SIGTERM)
            try:
                process.wait(timeout=_GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                _kill_group(process, signal.SIGKILL)
                process.wait()
        except BaseException:  # Ctrl-C: leave nothing running
            _kill_group(process, signal.SIGKILL)
            process.wait()
            raise
        finally:
            _kill_group(process, signal.SIGKILL)
            if pump is not None:
                pump.finish()
        tail = ""
        if quiet:
            captured.seek(0)
            text = captured.read().decode("utf-8", "replace")
            if drop_tf_noise:
                text = tflog.without_noise(text)
            tail = "\n".join(text.splitlines()[-_OUTPUT_TAIL:])
    return Outcome(None if timed_out else process.returncode, timed_out, tail)


class _Pump:
    """Copies the program's standard error to ours as it comes, without TensorFlow's
    start-up noise, in a thread of its own."""

    def __init__(self, source: IO[bytes]) -> None:
        self.source = source
        self.filter = tflog.LineFilter()
        self.thread = threading.Thread(target=self._run, name="tapelint-stderr", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        target = sys.stderr.buffer if hasattr(sys.stderr, "buffer") else None
        with contextlib.suppress(OSError, ValueError):
            while chunk := os.read(self.source.fileno(), 65536):
                self._write(target, self.filter.feed(chunk))
            self._write(target, self.filter.flush())

    @staticmethod
    def _write(target: IO[bytes] | None, data: bytes) -> None:
        if not data:
            return
        if target is None:  # a text-only stream (tests capture with one)
            sys.stderr.write(data.decode("utf-8", "replace"))
            sys.stderr.flush()
        else:
            target.write(data)
            target.flush()

    def finish(self) -> None:
        """Wait for the rest of the output (every writer is gone once the group is)."""
        self.thread.join(timeout=_GRACE_SECONDS)
        with contextlib.suppress(OSError):
            self.source.close()


def _stderr_fd() -> int:
    try:
        return sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # replaced by a stream without a file
        return 2


def _kill_group(process: subprocess.Popen, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, sig)
