"""Patches on the TensorFlow ops that cut a gradient path (TAP302): `argmax`/`argmin`,
`round`, `sign`, `floor`, `ceil`, `cast`, `where`, `stop_gradient`, as `tf.NAME` and
`tf.math.NAME`. A call is recorded only when user code makes it while a tape records; the
many calls Keras and TensorFlow make themselves cost one frame look-up each.
"""

from __future__ import annotations

import functools
import sys
from typing import Any

from . import schema
from .frames import user_frames, without_this_frame, written_in_user_code
from .recorder import Recorder
from .tapes import any_tape_active, note_zero_gradient_op, recording_tapes

# Ops whose registered gradient is zero rather than None: the path is cut all the same.
_ZERO_GRADIENT = frozenset({"sign"})
_NAMES = ("argmax", "argmin", "round", "sign", "floor", "ceil", "cast", "where", "stop_gradient")


def install(recorder: Recorder, namespaces: list[Any]) -> None:
    wrapped: dict[int, Any] = {}  # one wrapper per op, shared by the namespaces
    for namespace in namespaces:
        for name in _NAMES:
            original = getattr(namespace, name, None)
            if original is None:
                continue
            if id(original) not in wrapped:
                wrapped[id(original)] = _patched(recorder, original, name)
            setattr(namespace, name, wrapped[id(original)])


def _patched(recorder: Recorder, original: Any, name: str) -> Any:
    @functools.wraps(original)
    def op(*args: Any, **kwargs: Any) -> Any:
        if any_tape_active():
            caller = sys._getframe(1)
            if written_in_user_code(caller):
                recording = recording_tapes()
                if recording:
                    recorder.emit(
                        schema.OP, op=name, recording=recording, at=user_frames(caller, limit=1)
                    )
                    if name in _ZERO_GRADIENT:
                        note_zero_gradient_op(recording)
        try:
            return original(*args, **kwargs)
        except BaseException as error:
            without_this_frame(error)
            raise

    return op
