"""Which calls build training state (optimizers, Keras models and weighted layers, variables),
and which of them run once per training step.

State built per step starts over each step: an optimizer loses its slots and step count, a
model or layer its trained weights. Inside a `tf.function` it is worse: TensorFlow 2.21
raises `ValueError: tf.function only supports singleton tf.Variables created on the first
call` at the first call that creates a variable (measured for `tf.Variable`, a Keras
optimizer, and a Keras `Dense` called in the function).

Recognised by import, never by spelling: `tf.keras.optimizers.Adam`, `keras.optimizers.*`,
`tf.optimizers.*`, `tensorflow_addons.optimizers.*`, `tf.compat.v1.train.*Optimizer`;
`keras.Sequential` / `keras.Model` / `keras.applications.*`; the `keras.layers` classes that
own weights (stateless ones such as `Flatten` or `MaxPooling2D` cost nothing to rebuild);
`tf.Variable` / `keras.Variable`; and classes of this file that subclass a Keras model, or a
Keras layer when their own methods create weights.

Precision: a constructor under an `if` (a lazy-initialisation guard such as `if self.v is
None:`), in a `match` case or an `except` runs only on some steps, and is not reported. In
eager code a `tf.Variable` made per step is often a deliberate fresh value (an adversarial
perturbation, a copy of fast weights), so only models, layers and optimizers are reported
there; and a model that receives weights right after it is built (`set_weights`,
`load_weights`) is a copy, which is the point of meta-learning loops.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import Enum

import libcst as cst

from tapelint.analysis.keras_objects import LAYER_BASES, MODEL_CLASSES, is_application
from tapelint.analysis.model import CallSite, DefKind, FileModel, Scope
from tapelint.analysis.steps import StepIndex, innermost_loop, under_condition

_VARIABLES = frozenset({"tensorflow.Variable", "keras.Variable", "keras.variables.Variable"})
_OPTIMIZER_NAMESPACES = (
    "keras.optimizers.",
    "tensorflow.optimizers.",
    "tensorflow_addons.optimizers.",
)
# `keras.layers` classes that own weights. Layers without (Flatten, pooling, Dropout in eager
# code) are cheap to rebuild and are left alone.
_WEIGHTED_LAYERS = frozenset(
    {
        "Dense",
        "EinsumDense",
        "Embedding",
        "Conv1D",
        "Conv2D",
        "Conv3D",
        "Convolution1D",
        "Convolution2D",
        "Convolution3D",
        "Conv1DTranspose",
        "Conv2DTranspose",
        "Conv3DTranspose",
        "Convolution2DTranspose",
        "Convolution3DTranspose",
        "SeparableConv1D",
        "SeparableConv2D",
        "SeparableConvolution1D",
        "SeparableConvolution2D",
        "DepthwiseConv1D",
        "DepthwiseConv2D",
        "ConvLSTM1D",
        "ConvLSTM2D",
        "ConvLSTM3D",
        "LSTM",
        "GRU",
        "SimpleRNN",
        "LSTMCell",
        "GRUCell",
        "SimpleRNNCell",
        "BatchNormalization",
        "LayerNormalization",
        "GroupNormalization",
        "MultiHeadAttention",
        "GroupedQueryAttention",
        "AdditiveAttention",
        "PReLU",
        "LocallyConnected1D",
        "LocallyConnected2D",
    }
)
_WEIGHT_METHODS = frozenset({"add_weight", "add_variable"})
_COPY_METHODS = frozenset({"set_weights", "load_weights"})


class StateKind(Enum):
    OPTIMIZER = "an optimizer"
    MODEL = "a Keras model"
    LAYER = "a Keras layer"
    VARIABLE = "a variable"


class Where(Enum):
    COMPILED = "compiled"  # inside a `tf.function` (or a Keras `train_step`)
    LOOP = "loop"  # in the body of a training loop
    STEP = "step"  # in a training-step function that is called in a loop


@dataclass(frozen=True)
class StateInStep:
    node: cst.Call
    kind: StateKind
    where: Where
    function: str | None  # the compiled function or the step function, by name


def state_created_per_step(model: FileModel, index: StepIndex) -> Iterator[StateInStep]:
    """Each constructor run per step; layers built in the arguments of a model built per
    step (`Sequential([Dense(...)])`) are part of that one finding."""
    found = list(_per_step(model, index))
    nested = {inner for state in found for inner in _calls_inside(state.node.args)}
    yield from (state for state in found if state.node not in nested)


def _calls_inside(nodes: Sequence[cst.CSTNode]) -> Iterator[cst.Call]:
    for node in nodes:
        if isinstance(node, cst.Call):
            yield node
        yield from _calls_inside(node.children)


def _per_step(model: FileModel, index: StepIndex) -> Iterator[StateInStep]:
    constructors = _Constructors(model)
    for site in model.calls:
        kind = constructors.kind(site)
        if kind is None:
            continue
        scope = site.scope
        if index.is_compiled(scope):
            if not under_condition(model, site.stmt, scope.node):
                yield StateInStep(site.node, kind, Where.COMPILED, _function_name(scope))
            continue
        if kind is StateKind.VARIABLE or _gets_copied_weights(model, site):
            continue
        loop = innermost_loop(site.ctx)
        if loop is not None:
            if index.is_training_loop(loop.node, scope) and not under_condition(
                model, site.stmt, loop.node
            ):
                yield StateInStep(site.node, kind, Where.LOOP, None)
            continue
        function = scope.node
        if (
            isinstance(function, cst.FunctionDef)
            and index.is_step(function)
            and index.called_in_loop(function) is not None
            and not under_condition(model, site.stmt, function)
        ):
            yield StateInStep(site.node, kind, Where.STEP, function.name.value)


def _function_name(scope: Scope) -> str | None:
    while scope is not None and not isinstance(scope.node, cst.FunctionDef):
        scope = scope.parent
    return scope.node.name.value if scope is not None else None


def _gets_copied_weights(model: FileModel, site: CallSite) -> bool:
    """`copy = Model(...); copy.set_weights(model.get_weights())`: the statement builds a
    copy (layers in its arguments included), not new state."""
    bound = {
        d
        for d in model.defs_by_stmt.get(site.stmt, [])
        if d.kind is DefKind.ASSIGN and not d.unpack_index
    }
    if not bound:
        return False
    for other in model.calls:
        func = other.node.func
        if (
            other.scope is site.scope
            and isinstance(func, cst.Attribute)
            and func.attr.value in _COPY_METHODS
            and isinstance(func.value, cst.Name)
            and bound & model.defs_of(func.value)
        ):
            return True
    return False


class _Constructors:
    """What kind of state a call builds, if it certainly builds some."""

    def __init__(self, model: FileModel) -> None:
        self.model = model
        self._classes: dict[cst.ClassDef, StateKind | None] = {}
        self._calls_in_class: dict[cst.ClassDef, list[CallSite]] | None = None

    def kind(self, site: CallSite) -> StateKind | None:
        qualified = site.qualified
        if qualified is not None:
            return _imported_kind(qualified)
        func = site.node.func
        if not isinstance(func, cst.Name):
            return None
        defs = self.model.defs_of(func)
        kinds = {
            self._class_kind(d.stmt)
            if d.kind is DefKind.DEFINITION and isinstance(d.stmt, cst.ClassDef)
            else None
            for d in defs
        }
        if len(kinds) != 1:
            return None
        return next(iter(kinds))

    def _class_kind(self, node: cst.ClassDef) -> StateKind | None:
        if node in self._classes:
            return self._classes[node]
        self._classes[node] = None  # a cycle through bases decides nothing
        found: StateKind | None = None
        for base in node.bases:
            qualified = self.model.imports.qualify(base.value)
            if qualified in MODEL_CLASSES:
                found = StateKind.MODEL
            elif qualified in LAYER_BASES:
                found = StateKind.LAYER if self._creates_weights(node) else None
            elif qualified is not None:
                found = _imported_kind(qualified)
            elif isinstance(base.value, cst.Name):
                parents = {
                    self._class_kind(d.stmt)
                    for d in self.model.defs_of(base.value)
                    if d.kind is DefKind.DEFINITION and isinstance(d.stmt, cst.ClassDef)
                }
                found = parents.pop() if len(parents) == 1 else None
            if found is not None:
                break
        self._classes[node] = found
        return found

    def _creates_weights(self, node: cst.ClassDef) -> bool:
        for site in self._class_calls().get(node, []):
            func = site.node.func
            if isinstance(func, cst.Attribute) and func.attr.value in _WEIGHT_METHODS:
                return True
            if self.kind(site) is not None:
                return True
        return False

    def _class_calls(self) -> dict[cst.ClassDef, list[CallSite]]:
        """The calls made by the methods of each class of the file."""
        if self._calls_in_class is None:
            self._calls_in_class = {}
            for site in self.model.calls:
                scope: Scope | None = site.scope
                while scope is not None:
                    if isinstance(scope.node, cst.ClassDef):
                        self._calls_in_class.setdefault(scope.node, []).append(site)
                    scope = scope.parent
        return self._calls_in_class


def _imported_kind(qualified: str) -> StateKind | None:
    module, _, last = qualified.rpartition(".")
    if qualified in _VARIABLES:
        return StateKind.VARIABLE
    if qualified in MODEL_CLASSES:
        return StateKind.MODEL
    if qualified == "keras.mixed_precision.LossScaleOptimizer":
        return StateKind.OPTIMIZER
    if not last[:1].isupper():
        return None
    if qualified.startswith(_OPTIMIZER_NAMESPACES) and ".schedules" not in qualified:
        return StateKind.OPTIMIZER
    if module == "tensorflow.train" and last.endswith("Optimizer"):
        return StateKind.OPTIMIZER
    if is_application(qualified):
        return StateKind.MODEL
    if module == "keras.layers" and last in _WEIGHTED_LAYERS:
        return StateKind.LAYER
    return None
