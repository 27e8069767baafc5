"""How a signal ends a run of the `tapelint` command: SIGINT (Ctrl-C), SIGTERM and SIGHUP,
at any moment from the entry point's first line, end it with `error: interrupted` and the
shell's status for that signal (128 + its number: 130, 143, 129), never a traceback.

Kept light (only the standard library's `os`, `signal`, `sys` and `threading`): the entry
point installs it before it imports anything heavy (`tapelint.__main__`). Decisions:

- The handler raises `Interrupted` (a KeyboardInterrupt, so everything that already stops
  for Ctrl-C stops for the other two) in the main thread, once. A second signal while the
  run is stopping ends the process at once, with the first signal's status.
- A signal the process was started ignoring (`nohup`, a shell's background job for
  SIGINT) stays ignored.
- Where Python cannot let the exception through (a finalizer, an at-fork hook: "Exception
  ignored"), it is not printed; the signal is sent again, so it lands in the next line of
  ordinary code.
- A signal that arrives while the main thread holds it (`held`, which the fixer uses
  while it writes a file) waits until it is released, even when the kernel handed
  it to another thread of this process.
- Worker processes set their own dispositions (`tapelint.run.parallel`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from types import FrameType
from typing import NoReturn

STOP_SIGNALS = frozenset(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)

# The first signal that came, and whether its `Interrupted` is on its way up the stack.
_received: int | None = None
_propagating = False


class Interrupted(KeyboardInterrupt):
    """A signal that ends the run came: `signum`."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def install() -> None:
    """Make SIGINT, SIGTERM and SIGHUP end the run (from the main thread only)."""
    for signum in STOP_SIGNALS:
        if signal.getsignal(signum) is not signal.SIG_IGN:
            signal.signal(signum, _stop)
    sys.unraisablehook = _unraisable


def received() -> int | None:
    """The first signal that came, if one did."""
    return _received


def exit_status() -> int:
    """The status a run interrupted by the first signal that came ends with (130 when none
    came: Ctrl-C's, for a KeyboardInterrupt raised some other way)."""
    return 128 + (_received or signal.SIGINT)


def check() -> None:
    """Raise `Interrupted` if a signal came and the run is still going (its first raise
    was caught by code that did not stop for it)."""
    global _propagating
    if _received is not None:
        _propagating = True
        raise Interrupted(_received)


def end_interrupted() -> NoReturn:
    """Say so and end the process now (before click, or anything else, is imported)."""
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write("error: interrupted\n")
        sys.stderr.flush()
    os._exit(exit_status())


@contextlib.contextmanager
def held() -> Iterator[None]:
    """The stop signals wait until the block is over (in the calling thread, and in the
    processes it forks, which start with them held). Where signals cannot be held, nothing
    changes."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _stop(signum: int, frame: FrameType | None) -> None:
    global _received, _propagating
    if hasattr(signal, "pthread_sigmask") and signum in signal.pthread_sigmask(
        signal.SIG_BLOCK, ()
    ):
        # The main thread holds it (a file is being written) but another thread took it:
        # send it to the main thread, which gets it when the hold ends.
        signal.pthread_kill(threading.main_thread().ident or 0, signum)
        return
    if _received is None:
        _received = signum
    elif _propagating:  # a second signal while stopping: now
        os._exit(exit_status())
    _propagating = True
    raise Interrupted(_received)


def _unraisable(unraisable: sys.UnraisableHookArgs) -> None:
    global _propagating
    if isinstance(unraisable.exc_value, Interrupted):
        _propagating = False  # `check` raises it again where the run goes on, if not sooner
        if hasattr(signal, "pthread_kill"):
            signal.pthread_kill(threading.main_thread().ident or 0, unraisable.exc_value.signum)
        return
    sys.__unraisablehook__(unraisable)
