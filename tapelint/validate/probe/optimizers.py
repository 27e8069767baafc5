"""Patches on optimizers: every `apply_gradients`/`apply` call, which gradients were None,
and the step count. The families followed (`bootstrap.py` installs each on import):

- Keras 3 (`keras.optimizers.*`, and `tf.keras.optimizers.*` since TensorFlow 2.16):
  `apply_gradients` and `apply`;
- Keras 2 (`tf_keras.optimizers.*` and `tf_keras.optimizers.legacy.*`, which is what
  `tf.keras` is under `TF_USE_LEGACY_KERAS=1`, and `keras` itself up to TensorFlow 2.15):
  `apply_gradients` of both optimizer bases.

TF1's `tf.compat.v1.train.Optimizer` is not followed: it leaves out None gradients itself,
so no rule's verdict rests on its updates (the static rules count it as another library's).

`apply_gradients` calls `apply` itself; only the outermost call of a thread is recorded.
"""

from __future__ import annotations

import functools
import threading
import weakref
from typing import Any

from . import schema
from .frames import caller, user_frames, without_this_frame
from .functions import note_traced_update
from .recorder import Recorder

_local = threading.local()


_PATCHED = "__tapelint_updates__"


def install(recorder: Recorder, optimizer_class: type, eager: Any) -> None:
    """Keras 3's base optimizer: `apply_gradients` and `apply`."""
    install_apply_gradients(recorder, optimizer_class, eager, with_apply=True)


def install_apply_gradients(
    recorder: Recorder, optimizer_class: type, eager: Any, *, with_apply: bool = False
) -> None:
    """An optimizer base whose `apply_gradients(grads_and_vars, ...)` makes every update
    (Keras 2's two bases); once per class, however many names it is imported by."""
    if optimizer_class.__dict__.get(_PATCHED):
        return
    setattr(optimizer_class, _PATCHED, True)
    serials: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def serial_of(optimizer: Any) -> int:
        serial = serials.get(optimizer)
        if serial is None:
            serial = serials[optimizer] = recorder.serial()
        return serial

    def begin(method: str, optimizer: Any, grads: list, variables: list | None) -> Any:
        """Record the update about to be made; what `end` needs, or None for an update
        inside another (Keras' `apply_gradients` calls `apply`)."""
        if getattr(_local, "applying", False):
            return None
        serial = serial_of(optimizer)
        traced = not eager()
        if variables is None:
            variables = list(getattr(optimizer, "_trainable_variables", None) or [])
        recorder.trains(serial, (id(variable) for variable in variables))
        if not traced:
            recorder.before_updates((serial,))
        none_variables = [
            _name(variable)
            for grad, variable in zip(grads, variables, strict=False)
            if grad is None
        ]
        built = None
        if getattr(optimizer, "built", False):
            built = [id(v) for v in getattr(optimizer, "_trainable_variables", None) or []]
        recorder.emit(
            schema.APPLY,
            optimizer=serial,
            method=method,
            count=len(grads),
            none_variables=none_variables,
            variables=[id(variable) for variable in variables],
            variable_names=[_name(variable) for variable in variables],
            gradient_ids=[None if grad is None else id(grad) for grad in grads],
            built=built,
            traced=traced,
            at=user_frames(caller(2), limit=1),
        )
        _local.applying = True
        return serial, traced

    def end(update: Any, done: bool) -> None:
        if update is None:
            return
        _local.applying = False
        serial, traced = update
        if not done:
            return
        if traced:
            note_traced_update(serial)
        else:
            recorder.after_updates((serial,))

    # The original is called in the wrapper itself, and an error it raises leaves with the
    # wrapper's entry taken out of its traceback: the program's tracebacks stay its own.
    original_apply_gradients = optimizer_class.apply_gradients

    @functools.wraps(original_apply_gradients)
    def apply_gradients(self, grads_and_vars, *args: Any, **kwargs: Any) -> Any:
        pairs = list(grads_and_vars)
        variables = [pair[1] for pair in pairs]
        update = begin("apply_gradients", self, [pair[0] for pair in pairs], variables)
        done = False
        try:
            result = original_apply_gradients(self, pairs, *args, **kwargs)
            done = True
        except BaseException as error:
            without_this_frame(error)
            raise
        finally:
            end(update, done)
        return result

    optimizer_class.apply_gradients = apply_gradients
    if not with_apply:
        return
    original_apply = optimizer_class.apply

    @functools.wraps(original_apply)
    def apply(self, grads, trainable_variables=None, *args: Any, **kwargs: Any) -> Any:
        grads = list(grads)
        variables = list(trainable_variables) if trainable_variables is not None else None
        update = begin("apply", self, grads, variables)
        done = False
        try:
            result = original_apply(self, grads, variables, *args, **kwargs)
            done = True
        except BaseException as error:
            without_this_frame(error)
            raise
        finally:
            end(update, done)
        return result

    optimizer_class.apply = apply


def _name(variable: Any) -> str:
    return str(getattr(variable, "path", None) or getattr(variable, "name", None) or variable)
