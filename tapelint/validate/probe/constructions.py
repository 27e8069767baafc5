"""Patches that count constructions written in user code: Keras layers and models,
Keras optimizers, and `tf.Variable`s.

Only a construction the user wrote is recorded: the frames between the patch and the user's
frame must all be constructor plumbing (`__new__`, `__init__`, `__call__` of the classes and
their metaclass), so the variables a layer builds for itself, or the sub-layers a Keras
layer makes in its own `__init__`, are not counted against the user's line.
"""

from __future__ import annotations

import functools
from types import FrameType
from typing import Any

from . import schema
from .frames import is_user_code, user_frames
from .recorder import Recorder

_PLUMBING = frozenset({"__new__", "__init__", "__call__", "error_handler", "_variable_call"})


def _written_by_user(frame: FrameType | None) -> list | None:
    while frame is not None and not is_user_code(frame.f_code):
        if frame.f_code.co_name not in _PLUMBING:
            return None
        frame = frame.f_back
    if frame is None:
        return None
    found = user_frames(frame, limit=1)
    return found[0] if found else None


def _emit(recorder: Recorder, what: str, cls: Any, frame: FrameType | None) -> None:
    try:
        site = _written_by_user(frame)
        if site is not None:
            recorder.emit(
                schema.CONSTRUCT, what=what, type=getattr(cls, "__name__", "?"), at=[site]
            )
    except Exception as error:
        recorder.probe_error(error)


def install_keras(recorder: Recorder, layer_class: type, optimizer_class: type) -> None:
    original_new = layer_class.__dict__["__new__"]

    @functools.wraps(original_new)
    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        instance = original_new(cls, *args, **kwargs)
        _emit(recorder, "layer", cls, _caller())
        return instance

    layer_class.__new__ = staticmethod(__new__)

    original_init = optimizer_class.__init__

    @functools.wraps(original_init)
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        _emit(recorder, "optimizer", type(self), _caller())

    optimizer_class.__init__ = __init__


def install_variables(recorder: Recorder, metaclass: type) -> None:
    original_call = metaclass.__call__

    @functools.wraps(original_call)
    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        instance = original_call(cls, *args, **kwargs)
        _emit(recorder, "variable", cls, _caller())
        return instance

    metaclass.__call__ = __call__


def _caller() -> FrameType | None:
    import sys

    return sys._getframe(2)
