"""Writing events, counting optimizer steps, and ending the program after `max_steps`.

Events are appended to the file named by the parent, one `os.write` per line on a file
opened with O_APPEND, so every process of the program (subprocesses inherit the
environment) can share it and nothing is lost if the program is killed.

An update is an `apply_gradients`/`apply` call made eagerly, or a call of a `tf.function`
whose trace contained one (that is how `model.fit` and compiled steps are counted). An
optimizer is known by the variables it trains (`trains`), not by the object: a program
that makes a new optimizer every epoch (TAP502's bug) trains the same variables with each.
A training step is a round of updates in which no optimizer updates twice: one updating
again starts the next step. So a GAN's two optimizers, updating in turn, make one step a
round and both get their steps, and the new optimizer of each epoch counts every update.
The program is ended just before the update that would start step `max_steps + 1` (never
when `max_steps` is None).
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
    def __init__(self, path: str, max_steps: int | None) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        self.max_steps = max_steps
        self.step = 0  # training steps started
        self._round: set[object] = set()  # the optimizers that updated in this step
        self._trained: dict[int, frozenset[int]] = {}  # optimizer serial -> its variables
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
    def trains(self, optimizer: int, variables: Iterable[int]) -> None:
        """Optimizer `optimizer` updates these variables (their ids), as first seen."""
        self._trained.setdefault(optimizer, frozenset(variables))

    def before_updates(self, optimizers: Iterable[int]) -> None:
        """Called just before updates by `optimizers`; ends the program when they would
        start a step past `max_steps`."""
        if self.max_steps is None or self.step < self.max_steps:
            return
        if self._round & self._known(optimizers):
            self.stop()

    def after_updates(self, optimizers: Iterable[int]) -> None:
        known = self._known(optimizers)
        if not known:
            return
        if not self._round or self._round & known:  # the first update, or a new step
            self._round = set()
            self.step += 1
            self.emit(schema.STEPS)
        self._round |= known

    def _known(self, optimizers: Iterable[int]) -> set[object]:
        """The optimizers as their variables (a serial for one whose are not known)."""
        return {self._trained.get(optimizer) or optimizer for optimizer in optimizers}

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
