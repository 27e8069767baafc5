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
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tapelint.validate.probe import schema

SITE_DIR = Path(__file__).resolve().parent / "site"
_GRACE_SECONDS = 5.0
_OUTPUT_TAIL = 40  # lines of captured output kept for the failure summary


@dataclass(frozen=True)
class Outcome:
    returncode: int | None  # None: killed at the time limit
    timed_out: bool
    output_tail: str  # the end of the captured output (with --quiet), else ""


def probe_environment(events: Path, max_steps: int, sites: Path | None = None) -> dict[str, str]:
    """`sites`: the file naming the lines to watch for exceptions (`watched.write_sites`)."""
    env = dict(os.environ)
    existing = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(SITE_DIR) + (os.pathsep + existing if existing else "")
    env[schema.EVENTS_ENV] = str(events)
    env[schema.MAX_STEPS_ENV] = str(max_steps)
    if sites is not None:
        env[schema.SITES_ENV] = str(sites)
    return env


def run_program(
    command: Sequence[str], env: dict[str, str], timeout: float, *, quiet: bool
) -> Outcome:
    """Run `command` to completion or the time limit. OSError if it cannot be started."""
    with tempfile.TemporaryFile() as captured:
        output = captured if quiet else None
        process = subprocess.Popen(
            list(command),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT if quiet else None,
            start_new_session=True,
        )
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
        _kill_group(process, signal.SIGKILL)
        tail = ""
        if quiet:
            captured.seek(0)
            lines = captured.read().decode("utf-8", "replace").splitlines()
            tail = "\n".join(lines[-_OUTPUT_TAIL:])
    return Outcome(None if timed_out else process.returncode, timed_out, tail)


def _kill_group(process: subprocess.Popen, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, sig)
