"""Exceptions raised at the lines that have a diagnostic, whether or not the program catches
them (`raise` events).

A training script that wraps its step in `try/except` (a retry loop, "log and continue", a
notebook guard, a test harness) hides the very error a diagnostic predicts. The parent
checks the program statically before the run and names the watched lines (every line of
every diagnostic) in a JSON file, `{resolved path: [[first, last], ...]}`; only code
objects of those files with one of those lines are watched:

- Python 3.12+: `sys.monitoring`'s RAISE event, which fires in every frame an exception
  passes through, caught or not. RAISE cannot be enabled per code object, so the callback
  answers "not watched" for any other code object with one dictionary look-up.
- Python 3.11: no cheap event exists (`sys.settrace` slows every line of every frame), so
  the watched code objects get exception handlers in front of their own
  (`handlers311.add_handlers`) when they are created: a module's code when it is imported,
  the main script's code when it is about to run (`main311`).

Inside a `tf.function` the user's Python runs only while it traces, as code AutoGraph
generated from the source; an exception raised there reaches the caller through the
`tf.function` call, where `functions.py` reports it with its traceback's user frames
(`escaped`), mapped back to the user's lines.

At most `_PER_LINE` events are written per line (a data loader retrying in a loop must not
flood the events file), and one exception is written once per line it passes through.
"""

from __future__ import annotations

import json
import os
import sys
from types import CodeType

from . import schema
from .frames import span, traceback_frames
from .recorder import Recorder

_PER_LINE = 10
# Control flow, not errors: a generator being closed or exhausted, the program exiting.
_IGNORED = (GeneratorExit, StopIteration, StopAsyncIteration, SystemExit, KeyboardInterrupt)


class Raises:
    def __init__(self, recorder: Recorder, watched: dict[str, frozenset[int]]) -> None:
        self.recorder = recorder
        self.watched = watched  # real path -> watched line numbers
        self._real: dict[str, str] = {}
        self._lines_of_code: dict[CodeType, frozenset[int] | None] = {}
        self._written: dict[tuple[str, int], int] = {}
        self._seen: set[tuple[int, str, int]] = set()  # (id(exception), path, line)
        self._ran: set[tuple[str, int]] = set()

    def lines_of(self, filename: str) -> frozenset[int] | None:
        """The watched lines of a file, by the name its code objects carry."""
        real = self._real.get(filename)
        if real is None:
            real = self._real[filename] = os.path.realpath(filename)
        return self.watched.get(real)

    # ------------------------------------------------------------------ lines run
    def line_ran(self, place: tuple[str, int]) -> None:
        """A watched line started running (`lines311`'s marks): a `line` event, once per
        line, so that a verdict never says "not reached" about a line that ran. Never
        raises: it runs inside the user's line."""
        if place in self._ran:
            return
        try:
            self._ran.add(place)
            path, line = place
            self.recorder.emit(schema.LINE, at=[[path, line, line, 0]])
        except Exception as error:
            self.recorder.probe_error(error)

    # --------------------------------------------------------------- 3.11 handlers
    def at_handler(self, exception: BaseException) -> None:
        """Called by the handlers `handlers311` adds: the exception's traceback starts at
        the frame whose watched instruction raised (or passed on) the exception."""
        tb = exception.__traceback__
        if tb is not None:
            self._record(exception, tb.tb_frame.f_code, tb.tb_lasti, tb.tb_lineno)

    # ---------------------------------------------------------- 3.12 sys.monitoring
    def on_raise(self, code: CodeType, offset: int, exception: BaseException) -> None:
        lines = self._lines_of_code.get(code, False)
        if lines is False:
            lines = self._lines_of_code[code] = self.lines_of(code.co_filename)
        if lines:
            self._record(exception, code, offset, None, lines)

    # ------------------------------------------------------------ tf.function calls
    def escaped(self, exception: BaseException) -> None:
        """An exception left a `tf.function` call: where it came from in the user's code
        (AutoGraph's generated lines mapped back to the source)."""
        if isinstance(exception, _IGNORED):
            return
        try:
            at = traceback_frames(exception.__traceback__)
            fresh = [f for f in at if self._first_time(exception, f[0], f[1])]
            if fresh:
                self._emit(exception, at, "tf.function")
        except Exception as error:
            self.recorder.probe_error(error)

    def _record(
        self,
        exception: BaseException,
        code: CodeType,
        lasti: int,
        lineno: int | None,
        lines: frozenset[int] | None = None,
    ) -> None:
        if isinstance(exception, _IGNORED):
            return
        try:
            first, last, column = span(code, lasti, lineno)
            if lines is not None and first not in lines:
                return
            if self._first_time(exception, code.co_filename, first):
                self._emit(exception, [[code.co_filename, first, last, column]], "line")
        except Exception as error:
            self.recorder.probe_error(error)

    def _first_time(self, exception: BaseException, path: str, line: int) -> bool:
        key = (id(exception), path, line)
        if key in self._seen:
            return False
        if len(self._seen) > 4096:
            self._seen.clear()
        self._seen.add(key)
        written = self._written.get((path, line), 0)
        if written >= _PER_LINE:
            return False
        self._written[(path, line)] = written + 1
        return True

    def _emit(self, exception: BaseException, at: list[list], via: str) -> None:
        self.recorder.emit(
            schema.RAISE,
            type=type(exception).__name__,
            message=str(exception)[:1000],
            via=via,
            at=at,
        )


def install(recorder: Recorder) -> Raises | None:
    """Watch the lines named by the parent, if any; `None` when there are none."""
    path = os.environ.get(schema.SITES_ENV)
    if not path:
        return None
    with open(path, encoding="utf-8") as sites_file:
        sites = json.load(sites_file)
    watched = {
        real: frozenset(line for first, last in spans for line in range(first, last + 1))
        for real, spans in sites.items()
    }
    raises = Raises(recorder, watched)
    if sys.version_info >= (3, 12):
        _monitor(raises)
    else:
        from . import main311

        main311.install(raises)
    return raises


def _monitor(raises: Raises) -> int:
    """Start the RAISE callback; the tool id it uses."""
    monitoring = sys.monitoring  # type: ignore[attr-defined]
    # Ids not reserved for debuggers, coverage, profilers or optimizers first.
    free = [tool for tool in (4, 3, 2, 1, 0, 5) if monitoring.get_tool(tool) is None]
    if not free:
        raise RuntimeError("every sys.monitoring tool id is in use")
    tool = free[0]
    monitoring.use_tool_id(tool, "tapelint validate")
    monitoring.register_callback(tool, monitoring.events.RAISE, raises.on_raise)
    monitoring.set_events(tool, monitoring.events.RAISE)
    return tool
