"""Start the probe: open the events file, watch for TensorFlow and Keras being imported,
and record uncaught exceptions.

Nothing is patched until the program imports TensorFlow (or Keras): an import hook runs the
patches right after the module has executed, so a program that never imports them pays
nothing, and every patch is in place before the program's own code can use them.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import os
import sys
import threading
from collections.abc import Callable
from typing import Any

from . import raises as raises_module
from . import schema
from .frames import traceback_frames
from .raises import Raises
from .recorder import Recorder

# Exceptions at the watched lines (None: no lines to watch, or watching failed to start).
_raises: Raises | None = None


def start() -> None:
    path = os.environ.get(schema.EVENTS_ENV)
    if not path:
        return
    recorder = Recorder(path, int(os.environ.get(schema.MAX_STEPS_ENV) or 0) or None)
    recorder.emit(
        schema.START,
        argv=list(getattr(sys, "argv", [])),
        executable=sys.executable,
        tensorflow=importlib.util.find_spec("tensorflow") is not None,
    )
    _record_uncaught_exceptions(recorder)
    _watch_raises(recorder)
    hooks = {
        "tensorflow": lambda module: _patch_tensorflow(recorder),
        "keras": lambda module: _patch_keras(recorder),
        "tf_keras": lambda module: _each(recorder, (_keras2_optimizers("tf_keras"),)),
    }
    sys.meta_path.insert(0, _AfterImport(hooks, recorder))


def _watch_raises(recorder: Recorder) -> None:
    global _raises
    try:
        _raises = raises_module.install(recorder)
    except Exception as error:
        recorder.probe_error(error)


def _patch_tensorflow(recorder: Recorder) -> None:
    _each(
        recorder,
        (
            _tapes,
            _conversions,
            _functions,
            _variables,
            _cut_ops,
            _source_maps,
            _side_effects,
        ),
    )


def _patch_keras(recorder: Recorder) -> None:
    """`keras` is Keras 3, or Keras 2 (TensorFlow up to 2.15, or a program that makes
    `keras` name `tf_keras`): Keras 2 has its own optimizer bases and none of Keras 3's."""
    keras = sys.modules.get("keras")
    if str(getattr(keras, "__version__", "3")).startswith("3"):
        _each(recorder, (_optimizers, _layers))
    else:
        _each(recorder, (_keras2_optimizers(getattr(keras, "__name__", "keras")),))


def _each(recorder: Recorder, installers: tuple[Callable[[Recorder], None], ...]) -> None:
    """Install each patch on its own: one that does not fit this TensorFlow or Keras version
    is reported (`probe-error`) without costing the others."""
    for install in installers:
        try:
            install(recorder)
        except Exception as error:
            recorder.probe_error(error)


def _eager() -> Callable[[], bool]:
    from tensorflow.python.eager import context

    return context.executing_eagerly


def _tapes(recorder: Recorder) -> None:
    from tensorflow.python import pywrap_tfe
    from tensorflow.python.eager import backprop
    from tensorflow.python.framework import op_callbacks, ops
    from tensorflow.python.framework import tensor as tensor_lib
    from tensorflow.python.util import nest

    from . import tapes

    count_ops = "TAP107" in os.environ.get(schema.CODES_ENV, "").split(",")
    tapes.install(
        recorder, backprop, nest, tensor_lib.Tensor, ops._EagerTensorBase, _eager(), count_ops
    )
    if count_ops:
        tapes.install_op_counting(op_callbacks, pywrap_tfe.TFE_Py_TapeSetShouldRecordBackprop)


def _conversions(recorder: Recorder) -> None:
    from tensorflow.python.framework import ops
    from tensorflow.python.framework import tensor as tensor_lib

    from . import conversions

    conversions.install(recorder, ops._EagerTensorBase, tensor_lib.Tensor, sys.modules["numpy"])


def _functions(recorder: Recorder) -> None:
    from tensorflow.python.eager.polymorphic_function import (
        polymorphic_function,
        tracing_compilation,
    )

    from . import functions

    functions.install(recorder, polymorphic_function.Function, _eager(), _raises)
    functions.install_tracing_timer(tracing_compilation)


def _side_effects(recorder: Recorder) -> None:
    import random

    from . import side_effects

    numpy = sys.modules.get("numpy")
    side_effects.install(recorder, getattr(numpy, "random", None), random, _eager())


def _variables(recorder: Recorder) -> None:
    from tensorflow.python.ops import variables

    from . import constructions

    constructions.install_variables(recorder, variables.VariableMetaclass)


def _cut_ops(recorder: Recorder) -> None:
    from . import cut_ops

    tensorflow = sys.modules["tensorflow"]
    cut_ops.install(recorder, [tensorflow, tensorflow.math])


def _source_maps(recorder: Recorder) -> None:
    """Without them, events in AutoGraph-converted code point at the tf.function's caller."""
    from tensorflow.python.autograph.pyct import loader

    from . import functions

    functions.install_source_maps(loader)


def _optimizers(recorder: Recorder) -> None:
    from keras.src.layers.layer import Layer
    from keras.src.optimizers.base_optimizer import BaseOptimizer

    from . import constructions, optimizers

    optimizers.install(recorder, BaseOptimizer, _eager())
    constructions.install_keras(recorder, Layer, BaseOptimizer)


def _keras2_optimizers(package: str) -> Callable[[Recorder], None]:
    """The two optimizer bases of Keras 2 (`package` is `tf_keras`, or `keras` 2.x): the
    current one and `legacy`'s `OptimizerV2`."""

    def install(recorder: Recorder) -> None:
        from . import optimizers

        for module, name in (("optimizer", "Optimizer"), ("legacy.optimizer_v2", "OptimizerV2")):
            bases = importlib.import_module(f"{package}.src.optimizers.{module}")
            optimizers.install_apply_gradients(recorder, getattr(bases, name), _eager())

    return install


def _layers(recorder: Recorder) -> None:
    from keras.src import layers as keras_layers
    from keras.src.layers.layer import Layer

    from . import layers

    layers.install(recorder, Layer, keras_layers)


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs a hook right after a top-level module has been executed by its own loader."""

    def __init__(self, hooks: dict[str, Callable[[Any], None]], recorder: Recorder) -> None:
        self.hooks = hooks
        self.recorder = recorder

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name not in self.hooks:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _HookedLoader(spec.loader, name, self)
        return spec

    def loaded(self, name: str, module: Any) -> None:
        # find_spec is also called by mere look-ups (importlib.util.find_spec): the hook is
        # spent only once the module has really been executed.
        hook = self.hooks.pop(name, None)
        if hook is None:
            return
        try:
            hook(module)
        except Exception as error:
            self.recorder.probe_error(error)


class _HookedLoader(importlib.abc.Loader):
    def __init__(self, loader: Any, name: str, finder: _AfterImport) -> None:
        self.loader = loader
        self.name = name
        self.finder = finder

    def create_module(self, spec: Any) -> Any:
        return self.loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        module.__loader__ = self.loader
        if module.__spec__ is not None:
            module.__spec__.loader = self.loader
        self.loader.exec_module(module)
        self.finder.loaded(self.name, module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.loader, name)


def _record_uncaught_exceptions(recorder: Recorder) -> None:
    previous_hook = sys.excepthook

    def excepthook(kind, value, tb):
        _record(recorder, kind, value, tb)
        previous_hook(kind, value, tb)

    sys.excepthook = excepthook
    previous_thread_hook = threading.excepthook

    def thread_excepthook(args):
        _record(recorder, args.exc_type, args.exc_value, args.exc_traceback)
        previous_thread_hook(args)

    threading.excepthook = thread_excepthook


def _record(recorder: Recorder, kind: Any, value: Any, tb: Any) -> None:
    try:
        recorder.emit(
            schema.EXCEPTION,
            type=getattr(kind, "__name__", str(kind)),
            message=str(value)[:1000],
            at=traceback_frames(tb),
        )
    except Exception as error:
        recorder.probe_error(error)
