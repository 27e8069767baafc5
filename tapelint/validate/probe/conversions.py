"""Patches on tensor-to-NumPy conversions, recorded only while a tape records.

`.numpy()`, `float()` and `int()` on an eager tensor, `__array__` on a symbolic tensor inside
a `tf.function` trace (which raises), and the common NumPy functions (`np.mean`,
`np.asarray`, `np.log`...) called from user code with a tensor argument: NumPy reads an
eager tensor through the buffer protocol, in C, so those calls are observed at the NumPy
function itself. `bool()` (an `if` on a tensor) and `__index__` (indexing) are not patched:
they do not put a NumPy value into the computation.
"""

from __future__ import annotations

import functools
import sys
from typing import Any

from . import schema
from .frames import caller, user_frames, without_this_frame, written_in_user_code
from .recorder import Recorder
from .tapes import any_tape_active, recording_tapes

_EAGER_METHODS = ("numpy", "__array__", "__float__", "__int__")
_NUMPY_FUNCTIONS = (
    "array", "asarray", "asanyarray", "mean", "sum", "prod", "std", "var", "max", "min",
    "clip", "dot", "matmul", "where", "round", "argmax", "argmin",
)  # fmt: skip
_NUMPY_UFUNCS = ("log", "exp", "sqrt", "square", "abs", "tanh", "maximum", "minimum", "power")


def install(recorder: Recorder, eager_base: type, symbolic_base: type, numpy: Any) -> None:
    for name in _EAGER_METHODS:
        setattr(eager_base, name, _patched(recorder, getattr(eager_base, name), name))
    symbolic_base.__array__ = _patched(recorder, symbolic_base.__array__, "__array__")
    for name in _NUMPY_FUNCTIONS:
        original = getattr(numpy, name, None)
        if original is not None:
            setattr(numpy, name, _numpy_function(recorder, original, name, symbolic_base))
    for name in _NUMPY_UFUNCS:
        original = getattr(numpy, name, None)
        if original is not None:
            setattr(numpy, name, _NumpyUfunc(recorder, original, name, symbolic_base))


def _has_tensor(args: tuple, kwargs: dict, tensor_type: type) -> bool:
    for value in (*args, *kwargs.values()):
        if isinstance(value, tensor_type):
            return True
        if isinstance(value, list | tuple) and any(isinstance(v, tensor_type) for v in value):
            return True
    return False


def _numpy_call(recorder: Recorder, name: str, tensor_type: type, args: tuple, kwargs: dict):
    """Record `np.NAME(tensor)` written in user code while a tape records."""
    if not any_tape_active() or not written_in_user_code(sys._getframe(2)):
        return
    if not _has_tensor(args, kwargs, tensor_type):
        return
    recording = recording_tapes()
    if recording:
        recorder.emit(
            schema.CONVERT,
            how=f"np.{name}",
            recording=recording,
            error=None,
            at=user_frames(sys._getframe(2), limit=3),
        )


def _numpy_function(recorder: Recorder, original: Any, name: str, tensor_type: type) -> Any:
    @functools.wraps(original)
    def function(*args: Any, **kwargs: Any) -> Any:
        try:
            _numpy_call(recorder, name, tensor_type, args, kwargs)
            return original(*args, **kwargs)
        except BaseException as error:
            without_this_frame(error)
            raise

    return function


class _NumpyUfunc:
    """Stands in for a ufunc (`np.log`): calls are observed, everything else delegated."""

    def __init__(self, recorder: Recorder, ufunc: Any, name: str, tensor_type: type) -> None:
        self._recorder = recorder
        self._ufunc = ufunc
        self._name = name
        self._tensor_type = tensor_type

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            _numpy_call(self._recorder, self._name, self._tensor_type, args, kwargs)
            return self._ufunc(*args, **kwargs)
        except BaseException as error:
            without_this_frame(error)
            raise

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ufunc, name)

    def __repr__(self) -> str:
        return repr(self._ufunc)


def _patched(recorder: Recorder, original: Any, how: str) -> Any:
    @functools.wraps(original)
    def convert(self, *args: Any, **kwargs: Any) -> Any:
        try:
            if not any_tape_active():
                return original(self, *args, **kwargs)
            recording = recording_tapes()
            if not recording:
                return original(self, *args, **kwargs)
            try:
                result = original(self, *args, **kwargs)
            except BaseException as error:
                recorder.emit(
                    schema.CONVERT,
                    how=how,
                    recording=recording,
                    error=[type(error).__name__, str(error)[:300]],
                    at=user_frames(caller(1), limit=3),
                )
                raise
            recorder.emit(
                schema.CONVERT,
                how=how,
                recording=recording,
                error=None,
                at=user_frames(caller(1), limit=3),
            )
            return result
        except BaseException as error:
            without_this_frame(error)
            raise

    return convert
