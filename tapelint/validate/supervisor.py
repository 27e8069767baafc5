"""The process between `tapelint validate` and the user's program, on Linux: it starts the
program and ends every process the program starts, whatever happens to tapelint.

Run by `launch.py` as `python -I supervisor.py PARENT STATUS_FD GRACE -- COMMAND...`, in a
session of its own. It imports nothing from tapelint, and `-I` keeps the probe (on the
program's PYTHONPATH) out of it.

- It is a child subreaper (`PR_SET_CHILD_SUBREAPER`): a process of the program whose parent
  ends (a double-forked daemon, a child left behind in a session of its own) becomes its
  child instead of init's. So every process of the program stays below it, whatever session
  or process group it moved to, and is found by walking /proc from here.
- It asks for SIGHUP when tapelint ends, and the program's first process for SIGKILL when the
  supervisor ends (`PR_SET_PDEATHSIG`): SIGKILL of tapelint still ends the whole tree.
- tapelint's requests are signals: SIGTERM stops the program (SIGTERM to each of its
  processes, SIGKILL to all after GRACE seconds), SIGHUP or SIGINT ends it at once.
- When the program's first process ends, whatever it left running is killed. The supervisor
  exits when no process of the program is left (or GRACE seconds after killing those that
  refuse to go: another user's, started through sudo). It writes to STATUS_FD `started` or
  why the program could not start (`error ERRNO MESSAGE`), and at the end how the program's
  first process ended (`returncode N`, N negative for a signal).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence

# prctl(2) options
_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_LIBC = ctypes.CDLL(None, use_errno=True)
_HANDLED = {signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP, signal.SIGINT}


def main(argv: Sequence[str]) -> int:
    parent, status_fd, grace = int(argv[0]), int(argv[1]), float(argv[2])
    command = list(argv[4:])  # argv[3] is "--"
    signal.pthread_sigmask(signal.SIG_BLOCK, _HANDLED)  # taken with sigtimedwait below
    _LIBC.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGHUP, 0, 0, 0)
    if os.getppid() != parent:  # tapelint ended before the request was made
        return 1
    with os.fdopen(status_fd, "w") as status:
        try:
            # A group of its own: a program that signals its group does not reach this one.
            program = subprocess.Popen(command, preexec_fn=_as_child(os.getpid()), process_group=0)
        except OSError as error:
            status.write(f"error {error.errno or 0} {error.strerror or error}\n")
            return 1
        status.write("started\n")
        status.flush()
        returncode = Tree(program, grace).run()
        status.write(f"returncode {returncode}\n")
    return 0


def _as_child(supervisor: int) -> Callable[[], None]:
    """What the program's first process does before it starts the program."""

    def prepare() -> None:
        signal.pthread_sigmask(signal.SIG_SETMASK, set())
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != supervisor:  # the supervisor ended before the request
            os._exit(1)

    return prepare


class Tree:
    """The program's processes, all below this one."""

    def __init__(self, program: subprocess.Popen, grace: float) -> None:
        self.program = program
        self.grace = grace
        self.returncode: int | None = None

    def run(self) -> int:
        """Until the program's first process ends or tapelint asks; then end every process."""
        deadline = None  # set when stopping: the time SIGKILL follows SIGTERM
        while self.returncode is None:
            if deadline is None:
                received = signal.sigwaitinfo(_HANDLED)
            else:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                received = signal.sigtimedwait(_HANDLED, left)
            if received is None:
                continue
            if received.si_signo == signal.SIGCHLD:
                self._reap()
            elif received.si_signo == signal.SIGTERM and deadline is None:
                self._signal_all(signal.SIGTERM)
                deadline = time.monotonic() + self.grace
            elif received.si_signo in (signal.SIGHUP, signal.SIGINT):
                break
        self._end_all()
        return -signal.SIGKILL if self.returncode is None else self.returncode

    def _end_all(self) -> None:
        deadline = time.monotonic() + self.grace
        while True:
            self._signal_all(signal.SIGKILL)
            if not self._reap() or time.monotonic() > deadline:
                return
            signal.sigtimedwait({signal.SIGCHLD}, 0.05)

    def _signal_all(self, signum: int) -> None:
        for pid in descendants(os.getpid()):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signum)

    def _reap(self) -> bool:
        """Collect the children that ended; False once there is no child left."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return False
            if pid == 0:
                return True
            if pid == self.program.pid:
                self.returncode = self.program.returncode = os.waitstatus_to_exitcode(status)


def descendants(root: int) -> list[int]:
    """Every process below `root`, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rpartition(b")")[2].split()
        except OSError:  # it ended meanwhile
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
    found: list[int] = []
    waiting = [root]
    while waiting:
        below = children.get(waiting.pop(), [])
        found += below
        waiting += below
    return found


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
