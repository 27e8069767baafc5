"""Does a Keras model or layer certainly compute something different in training?

`training=` only changes what runs when the callee is, or contains, a layer that reads it.
Checked in Keras 3 (3.15, by running each layer with `training=True` and `False`): dropout
and noise (`Dropout`, `SpatialDropout1D/2D/3D`, `GaussianDropout`, `GaussianNoise`,
`AlphaDropout`), `BatchNormalization`, `SpectralNormalization`, random augmentation
(`Random*`, `AugMix`, `CutMix`, `MixUp`, `RandAugment`), and recurrent and attention layers
built with a nonzero `dropout=` / `recurrent_dropout=`. `LayerNormalization`,
`GroupNormalization`, `UnitNormalization`, `Dense`, `Conv2D`, `Embedding`, an `LSTM` or a
`MultiHeadAttention` without dropout compute the same either way. A `training` given to an
outer layer reaches the layers it calls even when its `call` takes no `training` parameter
(Keras keeps it in the call context).

The answer is the name of one such part, or None when the callee is not certainly
training-sensitive: its composition is unknown (a parameter, a loaded model, a layer taken
out of a model) or known to be insensitive. Known compositions:

- a built-in layer, from its class and constructor arguments; `Bidirectional` and
  `TimeDistributed` from the layer they wrap;
- a `keras.applications` model: all of them contain batch normalisation except `VGG16`,
  `VGG19` and the `ConvNeXt` family (layer normalisation, no stochastic depth by default);
- `keras.Sequential([...])` from its layers and the layers `.add()`ed to it;
- a functional `keras.Model(inputs, outputs)` from the layers its outputs are computed with,
  followed back through the names they are bound to; a sub-model called there with an
  explicit `training=` keeps that mode and does not count;
- an instance of a class of this file: training-sensitive when its `__init__` or `build`
  (or an in-file base class's) creates a training-sensitive part, or when its `call` takes
  `training` and decides something with it (`if training:`); forwarding it as
  `layer(x, training=training)` counts only through what `layer` is. A class that
  overrides `__call__` has its own protocol: Keras' training handling never runs, and it
  is reported only when that `__call__` takes `training` and uses it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

import libcst as cst

from tapelint.analysis.keras_objects import How, KerasObjects, Origin, is_application
from tapelint.analysis.model import DefKind

STATELESS_TRAINING_LAYERS = frozenset(
    {
        "Dropout",
        "SpatialDropout1D",
        "SpatialDropout2D",
        "SpatialDropout3D",
        "GaussianDropout",
        "GaussianNoise",
        "AlphaDropout",
        "AugMix",
        "CutMix",
        "MixUp",
        "RandAugment",
    }
)
_STATEFUL_TRAINING_LAYERS = frozenset(
    {"BatchNormalization", "SyncBatchNormalization", "SpectralNormalization"}
)
_WRAPPERS = frozenset({"Bidirectional", "TimeDistributed"})
# keras.applications models without batch normalisation or dropout by default.
_INSENSITIVE_APPLICATIONS = ("VGG16", "VGG19", "ConvNeXt")
_FUNCTIONAL_MODELS = frozenset({"keras.Model", "keras.models.Model"})
_SEQUENTIAL_MODELS = frozenset({"keras.Sequential", "keras.models.Sequential"})
USES_TRAINING = "its `call` (which reads `training`)"


def is_stateless_training_layer(qualified: str) -> bool:
    """A built-in layer without variables whose output depends on `training`."""
    name = qualified.rsplit(".", 1)[-1]
    return name in STATELESS_TRAINING_LAYERS or name.startswith("Random")


class TrainingSensitivity:
    """Answers, with memory, for one file."""

    def __init__(self, keras: KerasObjects) -> None:
        self.keras = keras
        self.model = keras.model
        self._classes: dict[str, str | None] = {}
        self._added: dict[cst.Call, list[cst.BaseExpression]] | None = None
        self._ast_classes: dict[str, list[ast.ClassDef]] | None = None

    def of(self, expr: cst.BaseExpression) -> str | None:
        """A training-sensitive part of what `expr` evaluates to, on every path, or None."""
        return self._of(expr, set())

    def _of(self, expr: cst.BaseExpression, seen: set[cst.CSTNode]) -> str | None:
        if expr in seen:
            return None
        seen.add(expr)
        origins = self.keras.origins(expr)
        if not origins:
            return None
        found = [self._origin(origin, seen) for origin in origins]
        return found[0] if all(found) else None

    def _origin(self, origin: Origin, seen: set[cst.CSTNode]) -> str | None:
        if origin.how is How.SUBCLASS and origin.class_name is not None:
            return self._class(origin.class_name)
        if origin.how is not How.CONSTRUCTED or origin.keras_class is None:
            return None
        call, qualified = origin.call, origin.keras_class
        if call is None:
            return None
        name = qualified.rsplit(".", 1)[-1]
        if is_application(qualified):
            return None if name.startswith(_INSENSITIVE_APPLICATIONS) else name
        if qualified in _SEQUENTIAL_MODELS:
            return self._sequential(call, seen)
        if qualified in _FUNCTIONAL_MODELS:
            outputs = _argument(call, 1, "outputs")
            return self._graph(outputs, seen) if outputs is not None else None
        if not qualified.startswith("keras.layers."):
            return None  # load_model, clone_model: made from something this file cannot see
        return self._built_in_layer(name, call, seen)

    def _built_in_layer(self, name: str, call: cst.Call, seen: set[cst.CSTNode]) -> str | None:
        if name in _STATEFUL_TRAINING_LAYERS:
            return name
        if is_stateless_training_layer(name):
            rate = _argument(call, 0, "stddev" if name == "GaussianNoise" else "rate")
            return None if rate is not None and _is_zero(rate) else name
        if name in _WRAPPERS:
            wrapped = _argument(call, 0, "layer")
            return self._of(wrapped, seen) if wrapped is not None else None
        for arg in call.args:
            keyword = arg.keyword.value if arg.keyword is not None else ""
            if keyword.endswith("dropout") and not _is_zero(arg.value):
                return f"{name}({keyword}=...)"
        return None

    # ------------------------------------------------------------------ models
    def _sequential(self, call: cst.Call, seen: set[cst.CSTNode]) -> str | None:
        layers: list[cst.BaseExpression] = []
        listed = _argument(call, 0, "layers")
        if isinstance(listed, (cst.List, cst.Tuple)):
            layers += [e.value for e in listed.elements if isinstance(e, cst.Element)]
        layers += self._added_layers().get(call, [])
        for layer in layers:
            found = self._of(layer, seen)
            if found:
                return found
        return None

    def _added_layers(self) -> dict[cst.Call, list[cst.BaseExpression]]:
        """`m.add(layer)` calls, by the constructor call `m` is bound to."""
        if self._added is None:
            self._added = {}
            for site in self.model.calls:
                func = site.node.func
                if not (
                    isinstance(func, cst.Attribute)
                    and func.attr.value == "add"
                    and isinstance(func.value, cst.Name)
                    and site.node.args
                ):
                    continue
                for d in self.model.defs_of(func.value):
                    if d.kind is DefKind.ASSIGN and isinstance(d.value, cst.Call):
                        self._added.setdefault(d.value, []).append(site.node.args[0].value)
        return self._added

    def _graph(self, expr: cst.CSTNode, seen: set[cst.CSTNode]) -> str | None:
        """A training-sensitive layer that computes `expr` in a functional model, looked for
        back through the calls and names it is computed from."""
        pending = [expr]
        while pending:
            node = pending.pop()
            if node in seen or isinstance(node, cst.Lambda):
                continue
            seen.add(node)
            if isinstance(node, cst.Name):
                for d in self.keras.defs_of(node):
                    if d.kind is DefKind.ASSIGN and d.value is not None:
                        pending.append(d.value)
                continue
            if isinstance(node, cst.Call) and not _passes_training(node):
                found = self._of(node.func, seen)
                if found:
                    return found
            pending.extend(node.children)
        return None

    # ------------------------------------------------------------------ classes of this file
    def _class(self, class_name: str) -> str | None:
        if class_name not in self._classes:
            self._classes[class_name] = None  # recursion: a class made of itself
            self._classes[class_name] = self._class_answer(class_name)
        return self._classes[class_name]

    def _class_answer(self, class_name: str) -> str | None:
        methods = self._methods(class_name)
        if methods is None:
            return None
        own_call = methods.get("__call__")
        if own_call is not None and not _mentions_training(own_call):
            # Its own protocol: the layers it calls get `training` only from it.
            return None
        for name in ("__init__", "build"):
            method = methods.get(name)
            if method is None:
                continue
            for call in _calls_in(method):
                found = self._of(self.keras.parse_text_expression(call), set())
                if not found and isinstance(call.func, ast.Name):
                    # A class of the file that only this cut-out method names.
                    found = self._class(call.func.id) if call.func.id != class_name else None
                if found:
                    return found
        forward = own_call or methods.get("call")
        if forward is not None and _reads_training(forward):
            return USES_TRAINING
        return None

    def _methods(self, class_name: str) -> dict[str, ast.FunctionDef] | None:
        """The methods of the file's one class named `class_name`, with those it inherits
        from classes of the file (the nearest definition wins); None when the file does not
        define exactly one such class."""
        if self._ast_classes is None:
            self._ast_classes = self.keras.classes_in_text()
        classes = self._ast_classes.get(class_name, [])
        if len(classes) != 1:
            return None
        methods: dict[str, ast.FunctionDef] = {}
        for base in classes[0].bases:
            if isinstance(base, ast.Name) and base.id != class_name:
                inherited = self._methods(base.id) if base.id in self._ast_classes else {}
                for name, method in (inherited or {}).items():
                    methods.setdefault(name, method)
        for node in classes[0].body:
            if isinstance(node, ast.FunctionDef):
                methods[node.name] = node
        return methods


def _calls_in(method: ast.FunctionDef) -> Iterator[ast.Call]:
    for node in ast.walk(method):
        if isinstance(node, ast.Call):
            yield node


def _has_parameter(function: ast.FunctionDef, name: str) -> bool:
    arguments = function.args
    return any(
        a.arg == name for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)
    )


def _mentions_training(function: ast.FunctionDef) -> bool:
    """The function takes `training` and reads it in any way."""
    return _has_parameter(function, "training") and any(
        isinstance(node, ast.Name) and node.id == "training" and isinstance(node.ctx, ast.Load)
        for statement in function.body
        for node in ast.walk(statement)
    )


def _reads_training(function: ast.FunctionDef) -> bool:
    """The function takes `training` and decides something with it: branches on it, or
    hands it to a function positionally (`tf.cond`, `in_train_phase`). Handing it on as
    `layer(x, training=training)` does not count by itself: whether that layer reads it is
    what its construction says."""
    if not _has_parameter(function, "training"):
        return False
    forwarded = {
        id(node.value)
        for statement in function.body
        for node in ast.walk(statement)
        if isinstance(node, ast.keyword) and node.arg == "training"
    }
    return any(
        isinstance(node, ast.Name)
        and node.id == "training"
        and isinstance(node.ctx, ast.Load)
        and id(node) not in forwarded
        for statement in function.body
        for node in ast.walk(statement)
    )


def _passes_training(call: cst.Call) -> bool:
    return any(arg.keyword is not None and arg.keyword.value == "training" for arg in call.args)


def _argument(call: cst.Call, position: int, keyword: str) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg.value
    positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
    return positional[position].value if position < len(positional) else None


def _is_zero(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, (cst.Integer, cst.Float)) and float(expr.value) == 0
