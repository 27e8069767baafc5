"""Patch on Keras layer and model calls made from user code while a tape records: whether
`training=` was passed (TAP303's runtime fact), and, when it was not, which layers inside
the call ran in inference mode (TAP303's cost). Calls Keras makes to sub-layers are not
recorded as calls: only the call the user wrote says what the user forgot.

For TAP304, after such a call the losses its layers added (`add_loss`, activity
regularizers: Keras keeps them in each layer's `_losses` until the next outer call) are
counted for the recording tapes, and user code reading a layer's `losses` while a tape
records is noted (`tapes.note_losses_read`).

A call without `training` leaves Keras' call context without a training value, so a
Dropout or noise layer (with a rate above zero) and BatchNormalization inside it fall back
to their default, inference: they are listed as they run, unless `training=True` was
passed to them directly (a model's own `call` may do so). A model's `call` that passes on
`training=None` (`self.drop(h, training=training)`) passes nothing: the layer is listed too.
"""

from __future__ import annotations

import functools
import sys
import threading
from typing import Any

from . import schema
from .frames import user_frames, without_this_frame, written_in_user_code
from .recorder import Recorder
from .tapes import any_tape_active, note_added_losses, note_losses_read, recording_tapes

_local = threading.local()


def install(recorder: Recorder, layer_class: type, keras_layers: Any) -> None:
    switched = _switched_by_training(keras_layers)
    original_call = layer_class.__call__

    @functools.wraps(original_call)
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            if not any_tape_active():
                return original_call(self, *args, **kwargs)
            caller = sys._getframe(1)
            recording = recording_tapes() if written_in_user_code(caller) else None
            outer = getattr(_local, "inference", None)
            passed_on = "training" in kwargs and kwargs["training"] is None
            if not recording or (passed_on and outer is not None):
                # Keras' own sub-layer calls, and a subclassed model's `call` passing on the
                # `training=None` it was given (`self.drop(h, training=training)` in a
                # `train_step` that called `self(x)`): the layer runs as the outer call left it.
                if outer is not None and not kwargs.get("training") and _switched(self, switched):
                    outer.append(self.name)
                return original_call(self, *args, **kwargs)
            at = user_frames(caller, limit=1)
            if "training" in kwargs:
                recorder.emit(
                    schema.LAYER_CALL,
                    type=type(self).__name__,
                    training=True,
                    recording=recording,
                    at=at,
                )
                result = original_call(self, *args, **kwargs)
                note_added_losses(_added_losses(self))
                return result
            names = [self.name] if _switched(self, switched) else []
            _local.inference = names
            try:
                result = original_call(self, *args, **kwargs)
                note_added_losses(_added_losses(self))
                return result
            finally:
                _local.inference = outer
                if outer is not None:  # a call written inside another one's `call`
                    outer.extend(names)
                recorder.emit(
                    schema.LAYER_CALL,
                    type=type(self).__name__,
                    training=False,
                    inference_layers=list(dict.fromkeys(names)),
                    recording=recording,
                    at=at,
                )
        except BaseException as error:
            without_this_frame(error)
            raise

    layer_class.__call__ = __call__
    losses = layer_class.losses

    def read_losses(self: Any) -> Any:
        if any_tape_active() and written_in_user_code(sys._getframe(1)):
            note_losses_read()
        return losses.fget(self)

    layer_class.losses = property(read_losses, doc=losses.__doc__)


def _added_losses(layer: Any) -> int:
    """The losses `layer` and its sub-layers added in the call that just returned, read
    without computing anything (`Layer.losses` would run the weight regularizers)."""
    try:
        return sum(len(getattr(part, "_losses", ())) for part in layer._flatten_layers())
    except Exception:
        return 0


def _switched_by_training(keras_layers: Any) -> tuple[type, ...]:
    names = ("Dropout", "GaussianNoise", "GaussianDropout", "AlphaDropout", "BatchNormalization")
    return tuple(c for c in (getattr(keras_layers, n, None) for n in names) if c is not None)


def _switched(layer: Any, switched: tuple[type, ...]) -> bool:
    """A layer whose output depends on `training` (noise and dropout only with a rate)."""
    if not isinstance(layer, switched):
        return False
    if type(layer).__name__ == "BatchNormalization" or hasattr(layer, "moving_mean"):
        return True
    rate = getattr(layer, "rate", None)
    if rate is None:
        rate = getattr(layer, "stddev", 0)
    try:
        return float(rate) > 0
    except (TypeError, ValueError):
        return True
