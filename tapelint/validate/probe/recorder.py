"""Writing events, counting optimizer steps, and ending the program after `max_steps`.

Events are appended to the file named by the parent, one `os.write` per line on a file
opened with O_APPEND, so every process of the program (subprocesses inherit the
environment) can share it and nothing is lost if the program is killed.

A step is an optimizer update: an `apply_gradients`/`apply` call made eagerly, or a call of
a `tf.function` whose trace contained one (that is how `model.fit` and compiled steps are
counted). Steps are counted per optimizer; the program is ended just before an optimizer
would make an update past `max_steps`, once every optimizer seen so far has made
`max_steps` (so a GAN's two optimizers both get their steps).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
from collections.abc import Callable, Iterable
from typing import Any

from . import schema


class Recorder:
    def __init__(self, path: str, max_steps: int) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        self.max_steps = max_steps
        self.updates: dict[int, int] = {}  # optimizer serial -> updates made
        self.step = 0
        self._serial = 0
        self._lock = threading.Lock()
        self.before_stop: list[Callable[[], None]] = []  # last words before `stop`

    def serial(self) -> int:
        with self._lock:
            self._serial += 1
            return self._serial

    def emit(self, kind: str, **fields: Any) -> None:
        """Append one event. Never raises: the user's program must not fail because of us
        (a program that closed every file descriptor just loses its events)."""
        fields["kind"] = kind
        fields["pid"] = os.getpid()
        fields["step"] = self.step
        with contextlib.suppress(Exception):
            line = json.dumps(fields, default=repr, separators=(",", ":")) + "\n"
            os.write(self._fd, line.encode("utf-8", "replace"))

    def probe_error(self, error: BaseException) -> None:
        self.emit(schema.PROBE_ERROR, message=f"{type(error).__name__}: {error}")

    # ------------------------------------------------------------------ steps
    def before_updates(self, optimizers: Iterable[int]) -> None:
        """Called just before updates by `optimizers`; ends the program when done."""
        optimizers = tuple(optimizers)
        if not self.updates or not optimizers:
            return
        if any(o not in self.updates for o in optimizers):
            return
        if min(self.updates.values()) >= self.max_steps:
            self.stop()

    def after_updates(self, optimizers: Iterable[int]) -> None:
        for optimizer in optimizers:
            self.updates[optimizer] = self.updates.get(optimizer, 0) + 1
        step = max(self.updates.values(), default=0)
        if step > self.step:
            self.step = step
            self.emit(schema.STEPS)

    def stop(self) -> None:
        """End the program now: the steps asked for are done."""
        for last_words in self.before_stop:
            with contextlib.suppress(Exception):
                last_words()
        self.emit(schema.STOP, max_steps=self.max_steps)
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(0)
