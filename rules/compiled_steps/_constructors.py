"""Which calls build training state (optimizers, Keras models and weighted layers,
variables), and what each construction holds.

Recognised by import, never by spelling: `tf.keras.optimizers.Adam`, `keras.optimizers.*`,
`tf.optimizers.*`, `tensorflow_addons.optimizers.*`, `tf.compat.v1.train.*Optimizer`;
`keras.Sequential` / `keras.Model` / `keras.applications.*`; the `keras.layers` classes that
own weights (stateless ones such as `Flatten` or `MaxPooling2D` cost nothing to rebuild);
`tf.Variable` / `keras.Variable`; and classes of this file that subclass a Keras model, or a
Keras layer when their own methods create weights.

What a construction holds, measured on TensorFlow 2.21 (Keras 3):

- *Slot-less optimizers* keep nothing from one update to the next, so building one per step
  resets nothing: TF1's `GradientDescentOptimizer` (and `ProximalGradientDescentOptimizer`),
  which create no variable at all, and a Keras `SGD` without momentum, EMA or gradient
  accumulation whose learning rate is not a schedule. Such an `SGD` keeps only its step
  count, which nothing reads unless the learning rate is a `LearningRateSchedule`: five
  steps with an `SGD(0.1)` rebuilt per step give exactly the weights of one kept `SGD(0.1)`
  (with `nesterov=True` or `weight_decay` too), while with `momentum=0.9` or an
  `ExponentialDecay` schedule they differ. A momentum given as anything but a literal zero
  counts as state (why pass it otherwise); a learning rate is a schedule only when shown to
  be one (a schedule's constructor, or a name bound only to one); `**config` shows
  nothing.
- *Variables at construction*: a Keras optimizer creates its variables (step count,
  learning rate) in its constructor, so constructing one in a `tf.function` raises; a TF1
  optimizer creates none until it applies gradients, and then only if it has slots. A Keras
  model or layer creates its weights when it is built: at construction for a `Sequential`
  that starts with `keras.Input` (or a layer given `input_shape=`), a functional
  `keras.Model(inputs, outputs)`, an application, and a class of this file whose
  `__init__` creates variables; otherwise only when it is first called or `build()` is
  called. `@tf.function def f(): keras.Sequential([keras.layers.Dense(3)])` runs fine.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from enum import Enum

import libcst as cst

from tapelint.semantic.calls.callees import call_site, plain_function
from tapelint.semantic.file_model.children import child_nodes
from tapelint.semantic.file_model.expressions import argument_value, holds, statements
from tapelint.semantic.file_model.model import CallSite, DefKind, FileModel, Scope
from tapelint.semantic.keras.keras_objects import LAYER_BASES, MODEL_CLASSES, is_application

# What ends a function's call, or makes it hand back something else than its `return`.
_EXITS = (cst.Return, cst.Yield, cst.Await)
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
# TF1 optimizers without slots: they create no variable, ever.
_SLOTLESS_V1 = frozenset(
    {
        "tensorflow.train.GradientDescentOptimizer",
        "tensorflow.train.ProximalGradientDescentOptimizer",
    }
)
_INPUTS = frozenset({"keras.Input", "keras.layers.Input", "keras.layers.InputLayer"})
_INPUT_SHAPE_KEYWORDS = frozenset({"input_shape", "input_dim", "batch_input_shape"})


class StateKind(Enum):
    OPTIMIZER = "an optimizer"
    MODEL = "a Keras model"
    LAYER = "a Keras layer"
    VARIABLE = "a variable"


class Constructors:
    """What kind of state a call builds, if it certainly builds some; answers cached per
    class of the file."""

    def __init__(self, model: FileModel) -> None:
        self.model = model
        self._classes: dict[cst.ClassDef, StateKind | None] = {}
        self._calls_in_class: dict[cst.ClassDef, list[CallSite]] | None = None
        self._returned: dict[cst.FunctionDef, CallSite | None] = {}

    def kind(self, site: CallSite) -> StateKind | None:
        return self._direct_kind(self.construction(site))

    def construction(self, site: CallSite) -> CallSite:
        """The call that builds what `site` gives: `site` itself, or the construction that
        a function of this file returns (`def make_optimizer(lr): return
        keras.optimizers.Adam(lr)`: each call of it builds a new optimizer). One level of
        helper; a decorated function (a cache may hand back the same object every time),
        one with several returns, or one that returns anything but the construction itself
        is not followed."""
        returned = self._returned_construction(site)
        return returned if returned is not None else site

    def _returned_construction(self, site: CallSite) -> CallSite | None:
        function = plain_function(self.model, site.node)
        if function is None:
            return None
        if function not in self._returned:
            self._returned[function] = self._construction_returned_by(function)
        return self._returned[function]

    def _construction_returned_by(self, function: cst.FunctionDef) -> CallSite | None:
        """The construction the function's one exit, its last statement, returns."""
        body = statements(function.body)
        last = body[-1] if body else None
        if isinstance(last, cst.SimpleStatementLine):
            if any(holds(small, _EXITS) for small in last.body[:-1]):
                return None
            last = last.body[-1]
        if not isinstance(last, cst.Return) or not isinstance(last.value, cst.Call):
            return None
        if holds(last.value, _EXITS) or any(holds(stmt, _EXITS) for stmt in body[:-1]):
            return None
        inner = call_site(self.model, last.value)
        return inner if inner is not None and self._direct_kind(inner) is not None else None

    def _direct_kind(self, site: CallSite) -> StateKind | None:
        qualified = site.qualified
        if qualified is not None:
            return _imported_kind(qualified)
        func = site.node.func
        if not isinstance(func, cst.Name):
            return None
        kinds = {
            self._class_kind(d.stmt)
            if d.kind is DefKind.DEFINITION and isinstance(d.stmt, cst.ClassDef)
            else None
            for d in self.model.defs_of(func)
        }
        return next(iter(kinds)) if len(kinds) == 1 else None

    # ------------------------------------------------------------------ what it holds
    def is_slotless_optimizer(self, site: CallSite) -> bool:
        """An optimizer that keeps nothing between updates (see the module docs)."""
        site = self.construction(site)
        qualified = site.qualified
        if qualified in _SLOTLESS_V1:
            return True
        if qualified is None or qualified.rpartition(".")[2] != "SGD":
            return False
        if not qualified.startswith(_OPTIMIZER_NAMESPACES):
            return False
        call = site.node
        momentum = argument_value(call, 1, "momentum")
        if momentum is not None and not _is_zero(momentum):
            return False
        if not _keyword_is(call, "use_ema", "False"):
            return False
        if not _keyword_is(call, "gradient_accumulation_steps", "None"):
            return False
        rate = argument_value(call, 0, "learning_rate") or _keyword(call, "lr")
        return rate is None or not self._is_schedule(rate, 0)

    def is_v1_optimizer(self, site: CallSite) -> bool:
        """A TF1 `tf.compat.v1.train.*Optimizer`: it creates variables only when it applies
        gradients (slots), never in its constructor."""
        qualified = self.construction(site).qualified or ""
        return qualified.startswith("tensorflow.train.") and qualified.endswith("Optimizer")

    def builds_at_construction(self, site: CallSite) -> bool:
        """Whether a model or layer constructor creates its weights right away (see the
        module docs), rather than when the object is first called or built."""
        site = self.construction(site)
        qualified = site.qualified
        call = site.node
        if qualified is not None:
            if is_application(qualified):
                return True
            if qualified in MODEL_CLASSES and qualified.endswith("Model"):
                return (
                    argument_value(call, 0, "inputs") is not None
                    and argument_value(call, 1, "outputs") is not None
                )
            if qualified in MODEL_CLASSES:
                return any(self._declares_input(node) for node in calls_inside(call.args))
            return False
        return any(self._init_creates_variables(c) for c in self._classes_of(site.node.func))

    # ------------------------------------------------------------------ helpers
    def _declares_input(self, call: cst.Call) -> bool:
        if self.model.imports.qualify(call.func) in _INPUTS:
            return True
        return any(
            arg.keyword is not None and arg.keyword.value in _INPUT_SHAPE_KEYWORDS
            for arg in call.args
        )

    def _init_creates_variables(self, node: cst.ClassDef) -> bool:
        init = next(
            (
                stmt
                for stmt in statements(node.body)
                if isinstance(stmt, cst.FunctionDef) and stmt.name.value == "__init__"
            ),
            None,
        )
        if init is None:
            return False
        for site in self._class_calls().get(node, []):
            if _function_of(site.scope) is not init:
                continue
            func = site.node.func
            if isinstance(func, cst.Attribute) and func.attr.value in _WEIGHT_METHODS:
                return True
            if site.qualified in _VARIABLES:
                return True
        return False

    def _is_schedule(self, expr: cst.BaseExpression, depth: int) -> bool:
        """Whether a learning rate is certainly a `LearningRateSchedule`: a schedule's
        constructor, or a name bound only to one."""
        if depth > 3:
            return False
        if isinstance(expr, cst.Call):
            qualified = self.model.imports.qualify(expr.func) or ""
            if ".schedules." in qualified:
                return True
            return any(self._subclasses_schedule(c) for c in self._classes_of(expr.func))
        if isinstance(expr, cst.Name):
            defs = self.model.defs_of(expr)
            return bool(defs) and all(
                d.kind is DefKind.ASSIGN
                and d.value is not None
                and not d.unpack_index
                and self._is_schedule(d.value, depth + 1)
                for d in defs
            )
        return False

    def _classes_of(self, func: cst.BaseExpression) -> list[cst.ClassDef]:
        if not isinstance(func, cst.Name):
            return []
        return [
            d.stmt
            for d in self.model.defs_of(func)
            if d.kind is DefKind.DEFINITION and isinstance(d.stmt, cst.ClassDef)
        ]

    def _subclasses_schedule(self, node: cst.ClassDef) -> bool:
        return any(
            ".schedules." in (self.model.imports.qualify(base.value) or "") for base in node.bases
        )

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
                parents = {self._class_kind(c) for c in self._classes_of(base.value)}
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


def calls_inside(nodes: Sequence[cst.CSTNode]) -> Iterator[cst.Call]:
    """Every call in these nodes, at any depth."""
    pending = list(nodes)
    while pending:
        node = pending.pop()
        if isinstance(node, cst.Call):
            yield node
        pending.extend(child_nodes(node))


def _keyword(call: cst.Call, name: str) -> cst.BaseExpression | None:
    return next(
        (a.value for a in call.args if a.keyword is not None and a.keyword.value == name), None
    )


def _keyword_is(call: cst.Call, name: str, default: str) -> bool:
    """Whether keyword `name` is absent or given as its default (`False`, `None`)."""
    value = _keyword(call, name)
    return value is None or (isinstance(value, cst.Name) and value.value == default)


def _function_of(scope: Scope | None) -> cst.FunctionDef | None:
    while scope is not None:
        if isinstance(scope.node, cst.FunctionDef):
            return scope.node
        scope = scope.parent
    return None


def _is_zero(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, (cst.Integer, cst.Float)):
        return float(expr.evaluated_value) == 0.0
    return False


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
