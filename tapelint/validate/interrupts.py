"""SIGINT, SIGTERM and SIGHUP during `tapelint validate`: each stops the run as Ctrl-C does.

While `handled()` is active (in the main thread) the first of them raises `Interrupted`,
which ends the program's processes on its way out; later ones are ignored while that
happens (it takes a few seconds at most). Inside `deferred()` (starting the program) the
signal is held until the block ends, so that a program is never started and then lost.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

_NAMES = ("SIGINT", "SIGTERM", "SIGHUP")
_SIGNALS = [getattr(signal, name) for name in _NAMES if hasattr(signal, name)]


class Interrupted(KeyboardInterrupt):
    """The run was interrupted by `signum`; tapelint's exit status is 128 + signum."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class _State:
    active = False
    deferring = False
    pending: int | None = None
    raised = False


_state = _State()


def _on_signal(signum: int, frame: FrameType | None) -> None:
    if _state.raised or _state.pending is not None:
        return
    if _state.deferring:
        _state.pending = signum
        return
    _state.raised = True
    raise Interrupted(signum)


@contextlib.contextmanager
def handled() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {signum: signal.signal(signum, _on_signal) for signum in _SIGNALS}
    _state.active, _state.pending, _state.raised = True, None, False
    try:
        yield
    finally:
        _state.active = False
        for signum, handler in previous.items():
            signal.signal(signum, handler)


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    if not _state.active or _state.deferring:
        yield
        return
    _state.deferring = True
    try:
        yield
    finally:
        _state.deferring = False
        if _state.pending is not None:
            signum, _state.pending = _state.pending, None
            _state.raised = True
            raise Interrupted(signum)
