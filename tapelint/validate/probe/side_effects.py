"""NumPy's and Python's randomness drawn while a `tf.function` is traced (`side-effect`
events), the runtime half of TAP503.

A `tf.function` runs the user's Python only while it traces, so a draw made there runs once
per trace while the function is called many times. The module-level draws of `numpy.random`
and `random` are wrapped when TensorFlow is imported: a draw written in user code (or in
the code AutoGraph generated from it) while a `tf.function` call is tracing is recorded,
with the function being called eagerly, whose calls `functions.py` then counts. Outside a
trace the wrapper only tests one list for emptiness. A name the program bound before
TensorFlow was imported (`from random import shuffle`) keeps the unwrapped function.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from types import ModuleType
from typing import Any

from . import functions, schema
from .frames import caller, user_frames, without_this_frame, written_in_user_code
from .recorder import Recorder

_NUMPY = (
    "rand", "randn", "randint", "random", "random_sample", "ranf", "sample", "choice",
    "shuffle", "permutation", "uniform", "normal", "standard_normal", "binomial", "poisson",
    "beta", "gamma", "exponential", "laplace", "logistic", "lognormal", "multinomial",
    "multivariate_normal", "dirichlet", "geometric", "gumbel",
)  # fmt: skip
_PYTHON = (
    "random", "uniform", "randint", "randrange", "choice", "choices", "shuffle", "sample",
    "gauss", "normalvariate", "betavariate", "expovariate", "gammavariate",
    "lognormvariate", "triangular",
)  # fmt: skip


def install(recorder: Recorder, numpy_random: ModuleType | None, python_random: ModuleType,
            eager: Callable[[], bool]) -> None:  # fmt: skip
    modules = [(python_random, "random", _PYTHON)]
    if numpy_random is not None:
        modules.append((numpy_random, "numpy.random", _NUMPY))
    for module, prefix, names in modules:
        for name in names:
            original = getattr(module, name, None)
            if callable(original) and not getattr(original, "_tapelint", False):
                setattr(module, name, _wrapped(recorder, original, f"{prefix}.{name}", eager))


def _wrapped(
    recorder: Recorder, original: Callable[..., Any], what: str, eager: Callable[[], bool]
) -> Callable[..., Any]:
    @functools.wraps(original)
    def draw(*args: Any, **kwargs: Any) -> Any:
        try:
            if functions.tracing():
                try:
                    frame = caller(1)
                    if not eager() and written_in_user_code(frame):
                        serial = functions.note_side_effect()
                        recorder.emit(
                            schema.SIDE_EFFECT, what=what, function=serial, at=user_frames(frame)
                        )
                except Exception as error:
                    recorder.probe_error(error)
            return original(*args, **kwargs)
        except BaseException as error:
            without_this_frame(error)
            raise

    draw._tapelint = True  # type: ignore[attr-defined]
    return draw
