"""Patches that count constructions written in user code: Keras layers and models,
Keras optimizers, and `tf.Variable`s.

Only a construction the user wrote is recorded: the frames between the patch and the user's
frame must all be constructor plumbing (`__new__`, `__init__`, `__call__` of the classes and
their metaclass), so the variables a layer builds for itself, or the sub-layers a Keras
layer makes in its own `__init__`, are not counted against the user's line.
"""

from __future__ import annotations

import contextlib
import functools
import weakref
from types import FrameType
from typing import Any

from . import schema
from .frames import is_user_code, user_frames, without_this_frame
from .recorder import Recorder

_PLUMBING = frozenset({"__new__", "__init__", "__call__", "error_handler", "_variable_call"})


def _written_by_user(frame: FrameType | None) -> list | None:
    """The user frame that wrote the construction, then the user frame that called it (a
    helper's caller: `make_optimizer(lr)` builds what the helper's `return` constructs)."""
    while frame is not None and not is_user_code(frame.f_code):
        if frame.f_code.co_name not in _PLUMBING:
            return None
        frame = frame.f_back
    if frame is None:
        return None
    return user_frames(frame, limit=2) or None


# The last object built at each user site: what a rebuild there throws away (TAP502's cost).
_last_built: dict[tuple[str, int], weakref.ref] = {}


def _emit(recorder: Recorder, what: str, instance: Any, frame: FrameType | None) -> None:
    try:
        frames = _written_by_user(frame)
        if frames is None:
            return
        key = (frames[0][0], frames[0][1])
        previous_ref = _last_built.get(key)
        previous = previous_ref() if previous_ref is not None else None
        with contextlib.suppress(TypeError):  # an object without weak references
            _last_built[key] = weakref.ref(instance)
        recorder.emit(
            schema.CONSTRUCT,
            what=what,
            type=type(instance).__name__,
            replaced=_state_of(what, previous) if previous is not None else None,
            at=frames,
        )
    except Exception as error:
        recorder.probe_error(error)


def _state_of(what: str, built: Any) -> dict[str, int] | None:
    """What the previous object built at the same site had accumulated, lost with it: an
    optimizer's iteration count and slot variables, a layer's parameters."""
    try:
        if what == "optimizer":
            iterations = built.iterations
            value = int(iterations.value.read_value()._numpy())
            learning_rate = getattr(built, "_learning_rate", None)
            slots = [v for v in built.variables if v is not iterations and v is not learning_rate]
            return {"iterations": value, "slot_variables": len(slots)}
        if what == "layer" and built.built:
            return {"parameters": int(built.count_params())}
    except Exception:  # a symbolic value while tracing, an unusual optimizer
        return None
    return None


def install_keras(recorder: Recorder, layer_class: type, optimizer_class: type) -> None:
    original_new = layer_class.__dict__["__new__"]

    @functools.wraps(original_new)
    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        try:
            instance = original_new(cls, *args, **kwargs)
        except BaseException as error:
            without_this_frame(error)
            raise
        _emit(recorder, "layer", instance, _caller())
        return instance

    layer_class.__new__ = staticmethod(__new__)

    original_init = optimizer_class.__init__

    @functools.wraps(original_init)
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        try:
            original_init(self, *args, **kwargs)
        except BaseException as error:
            without_this_frame(error)
            raise
        _emit(recorder, "optimizer", self, _caller())

    optimizer_class.__init__ = __init__


def install_variables(recorder: Recorder, metaclass: type) -> None:
    original_call = metaclass.__call__

    @functools.wraps(original_call)
    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        try:
            instance = original_call(cls, *args, **kwargs)
        except BaseException as error:
            without_this_frame(error)
            raise
        _emit(recorder, "variable", instance, _caller())
        return instance

    metaclass.__call__ = __call__


def _caller() -> FrameType | None:
    import sys

    return sys._getframe(2)
