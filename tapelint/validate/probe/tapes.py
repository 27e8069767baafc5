"""Patches on `tf.GradientTape`: creation, entering and leaving, gradient/jacobian calls,
`watch`, and how long persistent tapes live.

Per tape the probe keeps a small `_TapeInfo` on the tape object itself. A persistent tape is
judged once: when a new tape is created at the same place (the next step began; `alive`
tells whether the old one was still referenced), when it is garbage collected (`alive`
false), or when the program ends normally. Tapes created while a `tf.function` traced are
trace-time objects; their liveness says nothing about the step, so they are marked `traced`.

When TAP107 is validated (`count_ops`), an op callback counts the eager operations each
recording tape records (TensorFlow exposes no count of its own: an operation counts when
`TFE_Py_TapeSetShouldRecordBackprop` says a tape records it, for every tape of ours
recording at that moment), and a non-persistent tape that served no gradient call also
ends with a `tape-end`. What TAP304 asks is kept per tape too: whether user code read a
Keras layer's `losses` while it recorded (`note_losses_read`, from `layers.py`), and how
many losses the layers user code called while it recorded had added (`note_added_losses`).
"""

from __future__ import annotations

import atexit
import functools
import threading
import time
import weakref
from typing import Any

from . import schema
from .frames import caller, user_frames, without_this_frame
from .held import Held
from .recorder import Recorder

_local = threading.local()


def recording_tapes() -> list[int]:
    """Serials of the tapes recording on this thread right now (cheap when there are none)."""
    tapes = getattr(_local, "tapes", None)
    if not tapes:
        return []
    return [tape._tapelint.serial for tape in tapes if tape._recording]


def any_tape_active() -> bool:
    return bool(getattr(_local, "tapes", None))


# Tapes on which user code ran an op whose registered gradient is zero rather than None
# (`tf.sign`): their gradient calls also say which results were all zeros.
_zero_gradient_tapes: set[int] = set()


def note_zero_gradient_op(tapes: list[int]) -> None:
    _zero_gradient_tapes.update(tapes)


def note_losses_read() -> None:
    """User code read a Keras layer's `losses`: the tapes recording now may differentiate
    them."""
    for tape in getattr(_local, "tapes", None) or ():
        if tape._recording:
            tape._tapelint.losses_read += 1


def note_added_losses(count: int) -> None:
    """A layer user code called while tapes recorded holds `count` losses it added
    (`add_loss`, activity regularizers)."""
    for tape in getattr(_local, "tapes", None) or ():
        if tape._recording:
            tape._tapelint.added_losses = max(tape._tapelint.added_losses, count)


class _TapeInfo:
    __slots__ = (
        "added_losses",
        "calls",
        "ended",
        "inner",
        "last_step",
        "last_use",
        "losses_read",
        "ops",
        "persistent",
        "ref",
        "released_at",
        "released_step",
        "serial",
        "site",
        "traced",
    )

    def __init__(self, serial: int, persistent: bool, traced: bool) -> None:
        self.serial = serial
        self.persistent = persistent
        self.traced = traced
        self.calls = 0
        self.ops: int | None = 0  # operations it recorded (None: not counted)
        self.losses_read = 0
        self.added_losses = 0
        self.ended = False
        self.ref: weakref.ref | None = None
        self.site: tuple[str, int] | None = None  # where it was created
        # Its last gradient call (or the end of its block): `perf_counter` and step count.
        self.last_use: float | None = None
        self.last_step = 0
        self.inner: Any = None  # its recording, held to measure what it kept alive
        self.released_at = 0.0
        self.released_step = 0

    def used(self, step: int) -> None:
        self.last_use = time.perf_counter()
        self.last_step = step


class _Lifetimes:
    """Judges persistent tapes: still alive when the next step began, or collected before;
    and, through `held`, what each kept alive after its last use until it was released."""

    def __init__(self, recorder: Recorder, held: Held) -> None:
        self.recorder = recorder
        self.held = held
        self.pending: dict[int, _TapeInfo] = {}
        self.last_at_site: dict[tuple[str, int], _TapeInfo] = {}
        atexit.register(self.at_exit)

    def created(self, tape: Any, info: _TapeInfo, site: list | None) -> None:
        info.ref = weakref.ref(tape, lambda _ref, info=info: self.released(info))
        self.pending[info.serial] = info
        if site is None or info.traced:
            return
        key = info.site = (site[0], site[1])
        previous = self.last_at_site.get(key)
        self.last_at_site[key] = info
        if previous is not None and previous.ref is not None:
            self.end(previous, alive=previous.ref() is not None)

    def released(self, info: _TapeInfo) -> None:
        try:
            self.end(info, alive=False)
            if not info.traced:
                self.held.released(info)
        except Exception as error:
            self.recorder.probe_error(error)

    def watch_unasked(self, tape: Any, info: _TapeInfo) -> None:
        """A non-persistent tape: ends (`tape-end`) only if it served no gradient call."""
        info.ref = weakref.ref(tape, lambda _ref, info=info: self.end(info, alive=False))
        self.pending[info.serial] = info

    def end(self, info: _TapeInfo, alive: bool) -> None:
        if info.ended:
            return
        info.ended = True
        self.pending.pop(info.serial, None)
        if not info.persistent and info.calls:
            return  # a non-persistent tape is followed only while it may be unused
        try:
            self.recorder.emit(
                schema.TAPE_END,
                tape=info.serial,
                calls=info.calls,
                alive=alive,
                traced=info.traced,
                ops=info.ops,
            )
        except Exception as error:
            self.recorder.probe_error(error)

    def at_exit(self) -> None:
        self.held.measure_pending()
        for info in list(self.pending.values()):
            alive = info.ref is not None and info.ref() is not None
            self.end(info, alive=alive)
            if alive and not info.traced and info.persistent:
                self.held.still_alive(info)


def install(
    recorder: Recorder,
    backprop: Any,
    nest: Any,
    tensor_type: type,
    eager_tensor_type: type,
    eager: Any,
    count_ops: bool = False,
) -> None:
    tape_class = backprop.GradientTape
    held = Held(recorder, eager_tensor_type)
    lifetimes = _Lifetimes(recorder, held)
    emit = recorder.emit

    original_init = tape_class.__init__

    @functools.wraps(original_init)
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        try:
            original_init(self, *args, **kwargs)
            try:
                if held.pending:
                    held.measure_pending()
                info = _TapeInfo(recorder.serial(), bool(self._persistent), not eager())
                if not count_ops:
                    info.ops = None  # not counted: TAP107 is not being validated
                self._tapelint = info
                at = user_frames(caller(1), limit=1)
                emit(
                    schema.TAPE,
                    tape=info.serial,
                    persistent=info.persistent,
                    watch_accessed_variables=bool(self._watch_accessed_variables),
                    traced=info.traced,
                    at=at,
                )
                if info.persistent:
                    lifetimes.created(self, info, at[0] if at else None)
                elif count_ops and not info.traced:
                    lifetimes.watch_unasked(self, info)
            except Exception as error:
                recorder.probe_error(error)
        except BaseException as error:
            without_this_frame(error)
            raise

    original_enter = tape_class.__enter__

    @functools.wraps(original_enter)
    def __enter__(self):
        try:
            result = original_enter(self)
            info = getattr(self, "_tapelint", None)
            if info is not None:
                if held.pending:
                    held.measure_pending()
                tapes = getattr(_local, "tapes", None)
                if tapes is None:
                    tapes = _local.tapes = []
                tapes.append(self)
                emit(schema.ENTER, tape=info.serial, at=user_frames(caller(1), limit=1))
            return result
        except BaseException as error:
            without_this_frame(error)
            raise

    original_exit = tape_class.__exit__

    @functools.wraps(original_exit)
    def __exit__(self, *exc_info):
        try:
            try:
                return original_exit(self, *exc_info)
            finally:
                tapes = getattr(_local, "tapes", None)
                if tapes and self in tapes:
                    tapes.remove(self)
                info = getattr(self, "_tapelint", None)
                if info is not None and info.persistent and not info.traced:
                    if info.last_use is None:
                        info.used(recorder.step)
                    held.keep(info, self, info.site)
        except BaseException as error:
            without_this_frame(error)
            raise

    def differentiate(method_name: str):
        original = getattr(tape_class, method_name)

        @functools.wraps(original)
        def method(self, target, sources, *args, **kwargs):
            try:
                info = getattr(self, "_tapelint", None)
                if info is None or getattr(_local, "differentiating", False):
                    # jacobian calls gradient itself: one user call is one event
                    return original(self, target, sources, *args, **kwargs)
                if held.pending:
                    held.measure_pending()
                recording = bool(self._recording)
                info.calls += 1
                fields: dict[str, Any] = {
                    "tape": info.serial,
                    "method": method_name,
                    "recording": recording,
                    "losses_read": info.losses_read,
                    "added_losses": info.added_losses,
                }
                flat_sources: list = []
                try:
                    flat_sources = nest.flatten(sources)
                    fields["sources"] = [_source_kind(s, tensor_type) for s in flat_sources]
                    fields["variable_ids"] = [id(s) for s in flat_sources if hasattr(s, "assign")]
                    fields["regularized"] = _regularized(flat_sources)
                except Exception:
                    fields["sources"] = fields["variable_ids"] = []
                _local.differentiating = True
                try:
                    result = original(self, target, sources, *args, **kwargs)
                except BaseException as error:
                    fields["error"] = [type(error).__name__, str(error)[:300]]
                    emit(schema.GRADIENT, at=user_frames(caller(1), limit=1), none=[], **fields)
                    raise
                finally:
                    _local.differentiating = False
                    if info.persistent:
                        info.used(recorder.step)
                try:
                    flat_result = nest.flatten(result)
                    none = [r is None for r in flat_result]
                    # Which gradient belongs to which source, for matching the pairs an update
                    # receives (`zip` keeps the tensors themselves).
                    fields["gradient_ids"] = [None if r is None else id(r) for r in flat_result]
                    fields["source_ids"] = [id(s) for s in flat_sources]
                    fields["source_names"] = [_name(s, i) for i, s in enumerate(flat_sources)]
                    if any(none):
                        fields["none_names"] = [
                            _name(s, i)
                            for i, (s, n) in enumerate(zip(flat_sources, none, strict=False))
                            if n
                        ]
                except Exception:
                    flat_result, none = [], []
                if info.serial in _zero_gradient_tapes and eager():
                    try:
                        fields["zero"] = [_all_zeros(r) for r in flat_result]
                    except Exception as error:
                        recorder.probe_error(error)
                emit(schema.GRADIENT, at=user_frames(caller(1), limit=1), none=none, **fields)
                return result
            except BaseException as error:
                without_this_frame(error)
                raise

        setattr(tape_class, method_name, method)

    original_watch = tape_class.watch

    @functools.wraps(original_watch)
    def watch(self, tensor):
        try:
            info = getattr(self, "_tapelint", None)
            try:
                result = original_watch(self, tensor)
            except BaseException as error:
                if info is not None:
                    emit(
                        schema.WATCH,
                        tape=info.serial,
                        error=[type(error).__name__, str(error)[:300]],
                        at=user_frames(caller(1), limit=1),
                    )
                raise
            if info is not None:
                emit(schema.WATCH, tape=info.serial, error=None, at=user_frames(caller(1), limit=1))
            return result
        except BaseException as error:
            without_this_frame(error)
            raise

    tape_class.__init__ = __init__
    tape_class.__enter__ = __enter__
    tape_class.__exit__ = __exit__
    tape_class.watch = watch
    for name in ("gradient", "jacobian", "batch_jacobian"):
        differentiate(name)


def install_op_counting(op_callbacks: Any, should_record: Any) -> None:
    """Count, per recording tape of ours, the eager operations some tape records."""

    def count(op_type, inputs, attrs, outputs, op_name=None, graph=None):
        tapes = getattr(_local, "tapes", None)
        if not tapes or graph is not None or not inputs:
            return None
        if should_record(list(inputs)):
            for tape in tapes:
                if tape._recording:
                    tape._tapelint.ops += 1
        return None

    op_callbacks.add_op_callback(count)


def _regularized(sources: list) -> int | None:
    """How many sources carry a regularizer (Keras 3 variables); None when no source is a
    Keras 3 variable, which would say."""
    keras_variables = [s for s in sources if hasattr(s, "regularizer")]
    if not keras_variables:
        return None
    return sum(1 for s in keras_variables if s.regularizer is not None)


def _all_zeros(gradient: Any) -> bool:
    """An eager gradient whose every element is zero (read without the conversion patches)."""
    if gradient is None:
        return False
    values = getattr(gradient, "values", gradient)  # IndexedSlices
    return not values._numpy().any()


def _name(source: Any, index: int) -> str:
    """A variable's name (Keras' path, else TensorFlow's), or the source's position."""
    name = getattr(source, "path", None) or getattr(source, "name", None)
    if hasattr(source, "assign") and name:
        return str(name).removesuffix(":0")
    return f"source {index + 1}"


def _source_kind(source: Any, tensor_type: type) -> str:
    if hasattr(source, "assign"):
        return "variable"
    if isinstance(source, tensor_type):
        return "tensor"
    return "other"
