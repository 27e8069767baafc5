"""Patch on Keras layer and model calls made from user code while a tape records: whether
`training=` was passed (TAP303's runtime fact). Calls Keras makes to sub-layers are not
recorded: only the call the user wrote says what the user forgot."""

from __future__ import annotations

import functools
import sys
from typing import Any

from . import schema
from .frames import user_frames, written_in_user_code
from .recorder import Recorder
from .tapes import any_tape_active, recording_tapes


def install(recorder: Recorder, layer_class: type) -> None:
    original_call = layer_class.__call__

    @functools.wraps(original_call)
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if any_tape_active():
            caller = sys._getframe(1)
            if written_in_user_code(caller):
                recording = recording_tapes()
                if recording:
                    recorder.emit(
                        schema.LAYER_CALL,
                        type=type(self).__name__,
                        training="training" in kwargs,
                        recording=recording,
                        at=user_frames(caller, limit=1),
                    )
        return original_call(self, *args, **kwargs)

    layer_class.__call__ = __call__
