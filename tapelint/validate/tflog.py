"""TensorFlow's start-up log in the program's output: kept quiet unless the user set
`TF_CPP_MIN_LOG_LEVEL`.

On a CPU machine TensorFlow starts by printing INFO lines (CPU instruction sets, oneDNN
notices) that say nothing about the program and bury the validator's report. Decided: when
the user has not set `TF_CPP_MIN_LOG_LEVEL`, the program runs with it at 1 (TensorFlow's
INFO lines off, its warnings and errors kept), and the INFO lines TensorFlow writes before
its logging is set up, which ignore that variable, are taken out of the program's standard
error along with absl's banner about them. Everything else the program prints passes
through unchanged, as it comes. A user who sets the variable (to any value) sees
TensorFlow's log exactly as without tapelint.
"""

from __future__ import annotations

import re

LEVEL = "TF_CPP_MIN_LOG_LEVEL"
_BANNER = b"WARNING: All log messages before absl::InitializeLog() is called are written to STDERR"
# absl's INFO prefix: severity, MMDD, time, thread id, file:line]
_INFO = re.compile(rb"I\d{4} \d\d:\d\d:\d+\.\d+ +\d+ [\w.+/-]+:\d+\] ")
# Every start of such a prefix, cut anywhere.
_INFO_START = re.compile(rb"I\d{0,4}(?: [\d:.]*(?: +\d*(?: [\w.+/-]*(?::\d*\]?)?)?)?)?")
_LONGEST_PREFIX = 4096  # a line is written whole in one write up to this size


def quiet_environment(env: dict[str, str]) -> bool:
    """Turn TensorFlow's INFO log off unless the user chose a level; True if it did."""
    if LEVEL in env:
        return False
    env[LEVEL] = "1"
    return True


def is_noise(line: bytes) -> bool:
    """One of TensorFlow's start-up INFO lines, or absl's banner about them."""
    return line.rstrip(b"\r\n") == _BANNER or _INFO.match(line) is not None


def _may_be_noise(partial: bytes) -> bool:
    """A line cut short (no newline yet) that could still turn out to be noise."""
    if len(partial) > _LONGEST_PREFIX:
        return False
    return bool(
        _BANNER.startswith(partial) or _INFO.match(partial) or _INFO_START.fullmatch(partial)
    )


class LineFilter:
    """Streams the program's output with the noise lines taken out: a complete line is
    passed or dropped as a whole, and a line still being written is passed at once unless
    it could be noise (then it waits for its end)."""

    def __init__(self) -> None:
        self._held = b""  # the start of a line that may be noise
        self._passing = False  # the current line was found not to be noise

    def feed(self, data: bytes) -> bytes:
        out = bytearray()
        *complete, last = data.split(b"\n")
        for piece in complete:
            if self._passing:
                out += piece + b"\n"
            else:
                line = self._held + piece + b"\n"
                if not is_noise(line):
                    out += line
            self._held, self._passing = b"", False
        if last:
            if self._passing:
                out += last
            elif _may_be_noise(self._held + last):
                self._held += last
            else:
                out += self._held + last
                self._held, self._passing = b"", True
        return bytes(out)

    def flush(self) -> bytes:
        held, self._held = self._held, b""
        return b"" if not held or is_noise(held) else held


def without_noise(text: str) -> str:
    """Captured output (`--quiet`) without the noise lines."""
    return "\n".join(
        line for line in text.split("\n") if not is_noise(line.encode("utf-8", "replace"))
    )
