"""Patches on `tf.function`: creation, eager calls (tracing counts, steps inside compiled
code), and AutoGraph's source maps so that events raised from converted user code point at
the user's own lines.

A `tf.function` runs the user's Python only while it traces; the probe sees that trace.
When a trace contained an optimizer update, every later eager call of that function is a
step (`Recorder.before_updates` / `after_updates`), which is how `model.fit` and compiled
steps are counted and stopped.
"""

from __future__ import annotations

import functools
import os
import sys
import time
from types import FrameType
from typing import Any

from . import schema
from .frames import caller, generated_lines, is_user_code, user_frames, without_this_frame
from .raises import Raises
from .recorder import Recorder

# The functions whose call is running on the stack, innermost last: an optimizer update
# seen while tracing belongs to all of them.
_calling: list[_FunctionInfo] = []


class _FunctionInfo:
    __slots__ = ("optimizers", "serial", "side_effects", "tracing", "user")

    def __init__(self, serial: int, user: bool) -> None:
        self.serial = serial
        self.user = user
        self.optimizers: set[int] = set()
        self.tracing = 0.0  # seconds spent tracing it so far
        # A trace of it ran a side effect of user code (`side_effects.py`): its eager calls
        # are counted even when it is Keras' own (`fit`'s train function).
        self.side_effects = False


def note_traced_update(optimizer: int) -> None:
    for info in _calling:
        info.optimizers.add(optimizer)


def tracing() -> bool:
    """Whether a `tf.function` call is on the stack (it may be tracing)."""
    return bool(_calling)


def note_side_effect() -> int:
    """User code ran a side effect while a call traced: the serial of the function called
    eagerly (the outermost call), whose calls are from now on counted."""
    info = _calling[0]
    info.side_effects = True
    return info.serial


def install(recorder: Recorder, function_class: type, eager: Any, raises: Raises | None) -> None:
    """`raises`, when lines are watched, is told of every exception a call lets out."""
    original_init = function_class.__init__

    @functools.wraps(original_init)
    def __init__(self, python_function: Any, *args: Any, **kwargs: Any) -> None:
        try:
            original_init(self, python_function, *args, **kwargs)
            try:
                code = _code_of(python_function)
                wraps_user_code = code is not None and is_user_code(code)
                creator = _outside_tensorflow(caller(1))
                # `tf.function(model)` in user code wraps Keras code, but its retracing is the
                # user's doing all the same; functions Keras creates for `fit` are not.
                user = wraps_user_code or (creator is not None and is_user_code(creator.f_code))
                info = _FunctionInfo(recorder.serial(), user)
                self._tapelint = info
                if user:
                    definition = None
                    if wraps_user_code:
                        definition = [code.co_filename, code.co_firstlineno, _header_end(code)]
                    recorder.emit(
                        schema.FUNCTION,
                        function=info.serial,
                        user=True,
                        definition=definition,
                        end=_last_line(code) if wraps_user_code else None,
                        at=user_frames(creator or caller(1), limit=1),
                    )
            except Exception as error:
                recorder.probe_error(error)
        except BaseException as error:
            without_this_frame(error)
            raise

    unwatched_call = function_class.__call__
    if raises is None:
        original_call = unwatched_call
    else:

        def original_call(self: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                return unwatched_call(self, *args, **kwargs)
            except BaseException as error:
                raises.escaped(error)
                without_this_frame(error)
                raise

    @functools.wraps(unwatched_call)
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            info = getattr(self, "_tapelint", None)
            if info is None or not eager():
                if info is None:
                    return original_call(self, *args, **kwargs)
                _calling.append(info)
                try:
                    return original_call(self, *args, **kwargs)
                finally:
                    _calling.remove(info)
            if info.optimizers:
                recorder.before_updates(info.optimizers)
            before = self.experimental_get_tracing_count()
            tracing_before = info.tracing
            _calling.append(info)
            try:
                result = original_call(self, *args, **kwargs)
            finally:
                _calling.remove(info)
            if info.user or info.side_effects:
                recorder.emit(
                    schema.CALL,
                    function=info.serial,
                    traces_before=before,
                    traces_after=self.experimental_get_tracing_count(),
                    tracing_seconds=round(info.tracing - tracing_before, 6),
                    arguments=_python_values(args, kwargs),
                    at=user_frames(caller(1), limit=1),
                )
            if info.optimizers:
                recorder.after_updates(info.optimizers)
            return result
        except BaseException as error:
            without_this_frame(error)
            raise

    function_class.__init__ = __init__
    function_class.__call__ = __call__


def install_tracing_timer(tracing_compilation: Any) -> None:
    """Time each trace (the making of a concrete function, nested traces included) and
    charge it to the innermost `tf.function` being called."""
    original = tracing_compilation._create_concrete_function

    @functools.wraps(original)
    def _create_concrete_function(*args: Any, **kwargs: Any) -> Any:
        try:
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                if _calling:
                    _calling[-1].tracing += time.perf_counter() - start
        except BaseException as error:
            without_this_frame(error)
            raise

    tracing_compilation._create_concrete_function = _create_concrete_function


def install_source_maps(loader_module: Any) -> None:
    """Remember where AutoGraph's generated lines come from."""
    original = loader_module.load_ast

    @functools.wraps(original)
    def load_ast(*args: Any, **kwargs: Any) -> Any:
        try:
            result = original(*args, **kwargs)
            source_map = result[2] if isinstance(result, tuple) and len(result) == 3 else None
            for location, origin in (source_map or {}).items():
                lines = generated_lines.setdefault(location.filename, {})
                lines[location.lineno] = (origin.loc.filename, origin.loc.lineno)
            return result
        except BaseException as error:
            without_this_frame(error)
            raise

    loader_module.load_ast = load_ast


def _python_values(args: tuple, kwargs: dict) -> str:
    """What `tf.function` keys a trace on beyond tensor specs, as a short string: the Python
    values among the arguments (numbers, strings, lists of them) and the identity of other
    objects. Tensors and arrays count by kind only (their shapes are TensorFlow's business).
    Two calls with different strings were given different Python values."""
    parts = [_python_value(value, 0) for value in args]
    parts += [f"{name}={_python_value(value, 0)}" for name, value in sorted(kwargs.items())]
    text = ",".join(parts)
    return text if len(text) <= 200 else f"{text[:120]}#{hash(text):x}"


def _python_value(value: Any, depth: int) -> str:
    if value is None or isinstance(value, (bool, int, float, str)):
        return repr(value)[:40]
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return "tensor"
    if isinstance(value, (list, tuple)) and depth < 2:
        return "[" + ",".join(_python_value(item, depth + 1) for item in value[:16]) + "]"
    if isinstance(value, dict) and depth < 2:
        items = list(value.items())[:16]
        return "{" + ",".join(f"{k!r}:{_python_value(v, depth + 1)}" for k, v in items) + "}"
    return f"{type(value).__name__}@{id(value):x}"


def _outside_tensorflow(frame: FrameType | None) -> FrameType | None:
    """The first frame, from `frame` outwards, that is not TensorFlow's own code."""
    package = os.path.join(os.path.dirname(sys.modules["tensorflow"].__file__), "")
    while frame is not None and frame.f_code.co_filename.startswith(package):
        frame = frame.f_back
    return frame


def _code_of(function: Any) -> Any:
    function = getattr(function, "__func__", function)
    function = getattr(function, "__wrapped__", function)
    return getattr(function, "__code__", None)


def _header_end(code: Any) -> int:
    """The last line of the decorators and signature: the line before the body starts."""
    first = code.co_firstlineno
    body = [line for _, _, line in code.co_lines() if line is not None and line > first]
    return max(first, min(body) - 1) if body else first


def _last_line(code: Any) -> int:
    """The last line of the function's body (its nested functions' too)."""
    last = code.co_firstlineno
    for const in (code, *(c for c in code.co_consts if hasattr(c, "co_lines"))):
        last = max([last, *(line for _, _, line in const.co_lines() if line is not None)])
    return last
