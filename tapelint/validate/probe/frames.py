"""Which frames are the user's, and what source span each one is executing.

A frame is the user's unless its file belongs to the standard library, an installed package
(site-packages: TensorFlow, Keras, pytest...), or tapelint itself. Code that AutoGraph
generated from a user function (`__autograph_generated_file*.py`) is mapped back to the
user's file and lines through the source maps AutoGraph builds (see `functions.py`); the
calls it makes go through AutoGraph's `converted_call`, so a patch that asks who called it
looks past those frames (`written_in_user_code`).

The span is that of the instruction the frame is executing (Python 3.11 positions), so a
call written over several lines covers all of them.
"""

from __future__ import annotations

import os
import sys
import sysconfig
from types import CodeType, FrameType, TracebackType

_TAPELINT_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_LIBRARY_DIRS = tuple(
    {
        os.path.join(os.path.realpath(path), "")
        for key in ("stdlib", "platstdlib", "purelib", "platlib")
        if (path := sysconfig.get_paths().get(key))
    }
    | {os.path.join(_TAPELINT_DIR, "")}
)
_GENERATED = "__autograph_generated_file"
_AUTOGRAPH = os.path.join("tensorflow", "python", "autograph", "")
MAX_FRAMES = 6

# AutoGraph source maps: generated file -> {generated line: (user file, user line)}.
generated_lines: dict[str, dict[int, tuple[str, int]]] = {}

_user_files: dict[str, bool] = {}
_positions: dict[CodeType, list] = {}


def is_user_file(filename: str) -> bool:
    known = _user_files.get(filename)
    if known is None:
        known = _judge(filename)
        _user_files[filename] = known
    return known


def _judge(filename: str) -> bool:
    if filename.startswith("<"):
        return filename in ("<string>", "<stdin>")
    if os.path.basename(filename).startswith(_GENERATED):
        return False  # mapped separately
    real = os.path.realpath(filename)
    parts = real.split(os.sep)
    if "site-packages" in parts or "dist-packages" in parts:
        return False
    return not real.startswith(_LIBRARY_DIRS)


def user_frames(frame: FrameType | None, limit: int = MAX_FRAMES) -> list[list]:
    """`[path, first_line, last_line, column]` of the user frames from `frame` outwards."""
    found: list[list] = []
    while frame is not None and len(found) < limit:
        where = _where(frame.f_code, frame.f_lasti, frame.f_lineno)
        if where is not None:
            found.append(where)
        frame = frame.f_back
    return found


def traceback_frames(tb: TracebackType | None, limit: int = MAX_FRAMES) -> list[list]:
    """The user frames of a traceback, innermost first."""
    found: list[list] = []
    while tb is not None:
        where = _where(tb.tb_frame.f_code, tb.tb_lasti, tb.tb_lineno)
        if where is not None:
            found.append(where)
        tb = tb.tb_next
    return found[::-1][:limit]


def is_user_code(code: CodeType) -> bool:
    return is_user_file(code.co_filename)


def written_in_user_code(frame: FrameType | None) -> bool:
    """The call made from `frame` was written by the user: in the user's own code, or in the
    code AutoGraph generated from it inside a `tf.function` (whose calls reach the callee
    through AutoGraph's `converted_call`, which is skipped)."""
    while frame is not None and _AUTOGRAPH in frame.f_code.co_filename:
        frame = frame.f_back
    if frame is None:
        return False
    filename = frame.f_code.co_filename
    if _GENERATED in filename:
        mapped = generated_lines.get(filename, {}).get(frame.f_lineno or 0)
        return mapped is not None and is_user_file(mapped[0])
    return is_user_file(filename)


def _where(code: CodeType, lasti: int, lineno: int | None) -> list | None:
    filename = code.co_filename
    if is_user_file(filename):
        first, last, column = span(code, lasti, lineno)
        return [filename, first, last, column]
    if _GENERATED in filename:
        return _mapped(filename, *span(code, lasti, lineno)[:2], lineno or 0)
    return None


def _mapped(filename: str, first: int, last: int, lineno: int) -> list | None:
    """The user lines a span of AutoGraph's generated code came from (a `with` statement's
    span maps to the user's whole block, as far as its last line is mapped)."""
    lines = generated_lines.get(filename, {})
    start = lines.get(first) or lines.get(lineno)
    if start is None:
        return None
    end = lines.get(last)
    stop = end[1] if end is not None and end[0] == start[0] and end[1] >= start[1] else start[1]
    return [start[0], start[1], stop, 1]


def span(code: CodeType, lasti: int, lineno: int | None) -> tuple[int, int, int]:
    """First line, last line and 1-based start column (of the UTF-8 bytes) being executed."""
    positions = _positions.get(code)
    if positions is None:
        positions = _positions[code] = list(code.co_positions())
    index = lasti // 2
    if 0 <= index < len(positions):
        first, last, column = positions[index][0], positions[index][1], positions[index][2]
        if first is not None:
            last = last if last is not None else first
            return first, last, (column or 0) + 1
    return lineno or 0, lineno or 0, 1


def caller(depth: int) -> FrameType:
    """The frame `depth` levels above the caller of this function."""
    return sys._getframe(depth + 1)


def without_this_frame(error: BaseException) -> None:
    """Called in a patch's `except` block just before a bare `raise`: the traceback loses the
    patch's own entry, and a bare `raise` re-raises with the traceback as it stands (it adds
    no entry for the frame again), so the program's traceback is exactly what it would be
    without the patch."""
    tb = error.__traceback__
    if tb is not None and tb.tb_frame is sys._getframe(1):  # a C original leaves no entry
        error.__traceback__ = tb.tb_next
