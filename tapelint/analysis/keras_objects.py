"""Which expressions are certainly Keras models or layers, and which certainly hold Keras
variables.

Keras 3 (what `tf.keras` is since TensorFlow 2.16) has its own `keras.Variable`, which is not
a `tf.Variable`. Whether an object is a Keras object is decided from how it was made, never
from an attribute's name: `tf.Module` and plain Python classes also name their variable lists
`variables` or `weights`, and there they hold ordinary `tf.Variable`s.

Known Keras objects: the result of a Keras constructor (`tf.keras.Sequential(...)`,
`keras.Model(inputs, outputs)`, `keras.layers.Dense(...)`, `keras.applications.ResNet50(...)`,
`keras.models.load_model(...)`), an instance of a class of this module that subclasses a Keras
model or layer, `self` inside such a class, the result of a function of this module whose
every `return` gives a known Keras object (`build_model()`), a parameter annotated with a
Keras model or layer class, `model.layers[i]` and `model.get_layer(...)` of a known model,
and names bound to any of these. Anything else (an unannotated parameter, `self.encoder`
assigned in an `__init__`, an imported helper's result) is unknown.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import libcst as cst

from tapelint.analysis.model import Def, DefKind, FileModel, TapeCall, Tri
from tapelint.analysis.watching import source_argument

# Attributes of a Keras model or layer that list its variables.
VARIABLE_LISTS = frozenset(
    {
        "trainable_variables",
        "trainable_weights",
        "non_trainable_variables",
        "non_trainable_weights",
        "variables",
        "weights",
    }
)
# What RULES.md's TAP203 calls "all variables": trainable and not.
_ALL_VARIABLES = frozenset({"variables", "weights"})
# Variables that built-in Keras layers expose as attributes.
_LAYER_VARIABLES = frozenset(
    {
        "kernel",
        "bias",
        "recurrent_kernel",
        "depthwise_kernel",
        "pointwise_kernel",
        "embeddings",
        "gamma",
        "beta",
        "moving_mean",
        "moving_variance",
    }
)
_MODEL_FACTORIES = frozenset(
    {
        "keras.Sequential",
        "keras.Model",
        "keras.models.Sequential",
        "keras.models.Model",
        "keras.models.load_model",
        "keras.models.clone_model",
        "keras.saving.load_model",
    }
)
# Upper-case names under `keras.layers` that are not layers.
_NOT_LAYERS = frozenset({"Input", "InputSpec"})
_KERAS_VARIABLE_CONSTRUCTORS = frozenset({"keras.Variable", "keras.variables.Variable"})
# Source text that means the file runs legacy Keras 2 (`tf_keras`), whose variables are
# `tf.Variable`s.
_LEGACY_KERAS_MARKERS = ("tf_keras", "TF_USE_LEGACY_KERAS", "tensorflow.python.keras")


def uses_legacy_keras(model: FileModel) -> bool:
    return any(marker in model.source_text for marker in _LEGACY_KERAS_MARKERS)


def _all(answers: list[Tri]) -> Tri:
    if answers and all(a is Tri.YES for a in answers):
        return Tri.YES
    if answers and all(a is Tri.NO for a in answers):
        return Tri.NO
    return Tri.UNKNOWN


class KerasObjects:
    """Answers, with memory, for one file."""

    def __init__(self, model: FileModel) -> None:
        self.model = model
        self._classes: dict[cst.ClassDef, Tri] = {}
        self._defs: dict[Def, Tri] = {}
        self._functions: dict[cst.FunctionDef, Tri] = {}

    # ------------------------------------------------------------------ models and layers
    def is_keras_object(self, expr: cst.BaseExpression) -> Tri:
        """YES when `expr` certainly evaluates to a Keras model or layer."""
        if isinstance(expr, cst.Name):
            return self._name(expr, self._def_is_keras_object)
        if isinstance(expr, cst.Call):
            return self._constructs_keras_object(expr)
        if isinstance(expr, cst.Subscript):
            # `model.layers[0]`
            value = expr.value
            if isinstance(value, cst.Attribute) and value.attr.value == "layers":
                return Tri.YES if self.is_keras_object(value.value) is Tri.YES else Tri.UNKNOWN
        return Tri.UNKNOWN

    def _name(self, name: cst.Name, judge: Callable[[Def], Tri]) -> Tri:
        defs = self.model.defs_of(name)
        if not defs:
            return Tri.UNKNOWN
        return _all([judge(d) for d in defs])

    def _def_is_keras_object(self, d: Def) -> Tri:
        cached = self._defs.get(d)
        if cached is not None:
            return cached
        self._defs[d] = Tri.UNKNOWN  # cycles: `m = wrap(m)` in a loop
        answer = Tri.UNKNOWN
        if d.kind is DefKind.ASSIGN and d.value is not None:
            answer = self.is_keras_object(d.value)
        elif d.kind is DefKind.PARAM:
            answer = self._self_of_keras_class(d) if d.name == "self" else Tri.UNKNOWN
            if answer is not Tri.YES:
                answer = self._annotated_as_keras(d)
        self._defs[d] = answer
        return answer

    def _constructs_keras_object(self, call: cst.Call) -> Tri:
        func = call.func
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value == "get_layer"
            and self.is_keras_object(func.value) is Tri.YES
        ):
            return Tri.YES
        qualified = self.model.imports.qualify(func)
        if qualified is not None:
            return Tri.YES if _is_keras_factory(qualified) else Tri.UNKNOWN
        if isinstance(func, cst.Name):
            defs = self.model.defs_of(func)
            made = [d.stmt for d in defs if d.kind is DefKind.DEFINITION]
            if not made or len(made) != len(defs):
                return Tri.UNKNOWN
            if all(isinstance(c, cst.ClassDef) for c in made):
                return _all([self._is_keras_class(c) for c in made])
            if all(isinstance(f, cst.FunctionDef) for f in made):
                return _all([self._returns_keras_object(f) for f in made])
        return Tri.UNKNOWN

    def _returns_keras_object(self, function: cst.FunctionDef) -> Tri:
        """A function of this file (`build_model()`) whose every `return` gives a Keras
        object."""
        cached = self._functions.get(function)
        if cached is not None:
            return cached
        self._functions[function] = Tri.UNKNOWN  # recursion
        returns = _returns_of(function)
        answer = Tri.UNKNOWN
        if returns and all(r.value is not None for r in returns):
            answer = _all([self.is_keras_object(r.value) for r in returns])
        self._functions[function] = answer
        return answer

    def _annotated_as_keras(self, d: Def) -> Tri:
        """A parameter annotated with a Keras model or layer class (`model: keras.Model`)."""
        function = d.stmt
        if not isinstance(function, (cst.FunctionDef, cst.Lambda)):
            return Tri.UNKNOWN
        params = function.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            if param.name is d.target and param.annotation is not None:
                qualified = self.model.imports.qualify(param.annotation.annotation)
                if qualified is not None and _is_keras_base(qualified):
                    return Tri.YES
        return Tri.UNKNOWN

    def _is_keras_class(self, node: cst.ClassDef) -> Tri:
        cached = self._classes.get(node)
        if cached is not None:
            return cached
        self._classes[node] = Tri.UNKNOWN
        answer = Tri.UNKNOWN
        for base in node.bases:
            if base.keyword is not None:
                continue
            qualified = self.model.imports.qualify(base.value)
            if qualified is not None and _is_keras_base(qualified):
                answer = Tri.YES
            elif isinstance(base.value, cst.Name):
                local = [d.stmt for d in self.model.defs_of(base.value)]
                if (
                    local
                    and all(isinstance(c, cst.ClassDef) for c in local)
                    and _all([self._is_keras_class(c) for c in local]) is Tri.YES
                ):
                    answer = Tri.YES
        self._classes[node] = answer
        return answer

    def _self_of_keras_class(self, d: Def) -> Tri:
        function = d.scope.node
        owner = d.scope.parent.node if d.scope.parent is not None else None
        if not isinstance(function, cst.FunctionDef) or not isinstance(owner, cst.ClassDef):
            return Tri.UNKNOWN
        positional = [*function.params.posonly_params, *function.params.params]
        if not positional or positional[0].name is not d.target:
            return Tri.UNKNOWN
        for decorator in function.decorators:
            if isinstance(decorator.decorator, cst.Name) and decorator.decorator.value in (
                "staticmethod",
                "classmethod",
            ):
                return Tri.UNKNOWN
        return self._is_keras_class(owner)

    # ------------------------------------------------------------------ variables
    def variable_list_of_keras_object(self, expr: cst.BaseExpression) -> Tri:
        """YES for `X.trainable_variables`, `X.weights`, ... when X is a known Keras object."""
        if isinstance(expr, cst.Attribute) and expr.attr.value in VARIABLE_LISTS:
            return self.is_keras_object(expr.value)
        return Tri.UNKNOWN

    def holds_keras_variables(self, expr: cst.BaseExpression) -> Tri:
        """YES when `expr` certainly is, or certainly contains, a Keras variable: a Keras
        object's variable list, a built-in layer's `kernel`/`bias`/..., an element or slice
        of those, `keras.Variable(...)`, `layer.add_weight(...)`, or a list, concatenation,
        `list()`/`tuple()` or plain comprehension of any of them."""
        if isinstance(expr, cst.Attribute):
            if expr.attr.value in VARIABLE_LISTS:
                return Tri.YES if self.is_keras_object(expr.value) is Tri.YES else Tri.UNKNOWN
            if expr.attr.value in _LAYER_VARIABLES and self._is_builtin_layer(expr.value):
                return Tri.YES
            return Tri.UNKNOWN
        if isinstance(expr, cst.Subscript):
            return Tri.YES if self.holds_keras_variables(expr.value) is Tri.YES else Tri.UNKNOWN
        if isinstance(expr, (cst.List, cst.Tuple)):
            parts = [
                self.holds_keras_variables(e.value)
                for e in expr.elements
                if isinstance(e, (cst.Element, cst.StarredElement))
            ]
            return Tri.YES if Tri.YES in parts else Tri.UNKNOWN
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
            parts = [self.holds_keras_variables(expr.left), self.holds_keras_variables(expr.right)]
            return Tri.YES if Tri.YES in parts else Tri.UNKNOWN
        if isinstance(expr, (cst.ListComp, cst.GeneratorExp)):
            return self._comprehension_of_variables(expr)
        if isinstance(expr, cst.Call):
            return self._call_holds_keras_variables(expr)
        if isinstance(expr, cst.Name):
            return self._name(expr, self._def_holds_keras_variables)
        return Tri.UNKNOWN

    def _def_holds_keras_variables(self, d: Def) -> Tri:
        if d.value is None:
            return Tri.UNKNOWN
        if d.kind is DefKind.ASSIGN:
            return self.holds_keras_variables(d.value)
        if d.kind in (DefKind.FOR, DefKind.COMP) and not d.unpack_index:
            # `for v in model.trainable_variables`: each `v` is a Keras variable.
            return self.holds_keras_variables(d.value)
        return Tri.UNKNOWN

    def _comprehension_of_variables(self, expr: cst.ListComp | cst.GeneratorExp) -> Tri:
        """`[v for v in model.trainable_variables if ...]` keeps the variables themselves."""
        clause = expr.for_in
        if (
            clause.inner_for_in is None
            and isinstance(clause.target, cst.Name)
            and isinstance(expr.elt, cst.Name)
            and expr.elt.value == clause.target.value
            and self.holds_keras_variables(clause.iter) is Tri.YES
        ):
            return Tri.YES
        return Tri.UNKNOWN

    def _call_holds_keras_variables(self, call: cst.Call) -> Tri:
        func = call.func
        if isinstance(func, cst.Name) and func.value in ("list", "tuple") and len(call.args) == 1:
            if not self.model.defs_of(func):  # the builtin, not a rebinding
                return self.holds_keras_variables(call.args[0].value)
            return Tri.UNKNOWN
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value == "add_weight"
            and self.is_keras_object(func.value) is Tri.YES
        ):
            return Tri.YES
        if self.model.imports.qualify(func) in _KERAS_VARIABLE_CONSTRUCTORS:
            return Tri.YES
        return Tri.UNKNOWN

    def _is_builtin_layer(self, expr: cst.BaseExpression) -> bool:
        """A layer whose `kernel`/`bias` are certainly Keras variables: made by a
        `keras.layers` constructor, or taken from a known model (`model.layers[0]`)."""
        if isinstance(expr, cst.Name):
            defs = self.model.defs_of(expr)
            return bool(defs) and all(
                d.kind is DefKind.ASSIGN and d.value is not None and self._is_builtin_layer(d.value)
                for d in defs
            )
        if isinstance(expr, cst.Call):
            qualified = self.model.imports.qualify(expr.func)
            if qualified is not None:
                return _is_keras_layer_constructor(qualified)
            return self._constructs_keras_object(expr) is Tri.YES and isinstance(
                expr.func, cst.Attribute
            )  # `model.get_layer(...)`
        if isinstance(expr, cst.Subscript):
            return self.is_keras_object(expr) is Tri.YES
        return False


def _returns_of(function: cst.FunctionDef) -> list[cst.Return]:
    """The `return` statements of `function` itself (not of functions nested in it)."""
    found: list[cst.Return] = []
    pending: list[cst.CSTNode] = list(function.body.children)
    while pending:
        node = pending.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(node, cst.Return):
            found.append(node)
        pending.extend(node.children)
    return found


def _is_keras_layer_constructor(qualified: str) -> bool:
    prefix, _, last = qualified.rpartition(".")
    return prefix == "keras.layers" and last[:1].isupper() and last not in _NOT_LAYERS


def _is_keras_factory(qualified: str) -> bool:
    if qualified in _MODEL_FACTORIES or _is_keras_layer_constructor(qualified):
        return True
    # `keras.applications.ResNet50`, `keras.applications.resnet50.ResNet50`
    last = qualified.rpartition(".")[2]
    return qualified.startswith("keras.applications.") and last[:1].isupper()


def _is_keras_base(qualified: str) -> bool:
    return qualified in (
        "keras.Model",
        "keras.Sequential",
        "keras.models.Model",
        "keras.models.Sequential",
        "keras.layers.Layer",
    ) or _is_keras_layer_constructor(qualified)


def all_variables_in_sources(
    model: FileModel, keras: KerasObjects, call: TapeCall
) -> Iterator[tuple[cst.CSTNode, cst.Attribute]]:
    """`X.variables` / `X.weights` of a known Keras object among a gradient call's sources
    (also inside a list, tuple or `+`, or through a name bound only to such an expression),
    with the node to report: the attribute, or the source name that stands for it."""
    sources = source_argument(call)
    if sources is not None:
        yield from _all_variables_in(model, keras, sources, None)


def _all_variables_in(
    model: FileModel,
    keras: KerasObjects,
    expr: cst.BaseExpression,
    reported: cst.CSTNode | None,
) -> Iterator[tuple[cst.CSTNode, cst.Attribute]]:
    if isinstance(expr, cst.Attribute):
        if expr.attr.value in _ALL_VARIABLES and keras.is_keras_object(expr.value) is Tri.YES:
            yield (reported or expr, expr)
    elif isinstance(expr, (cst.List, cst.Tuple)):
        for element in expr.elements:
            yield from _all_variables_in(model, keras, element.value, reported)
    elif isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
        yield from _all_variables_in(model, keras, expr.left, reported)
        yield from _all_variables_in(model, keras, expr.right, reported)
    elif isinstance(expr, cst.Name) and reported is None:
        defs = model.defs_of(expr)
        if not defs or any(d.kind is not DefKind.ASSIGN or d.value is None for d in defs):
            return
        found = [list(_all_variables_in(model, keras, d.value, expr)) for d in defs]
        if all(found):
            yield found[0][0]
