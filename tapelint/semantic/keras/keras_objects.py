"""Which expressions are certainly Keras models or layers, how each was made, and which
certainly hold Keras variables. The one place that knows Keras objects: every question
about a model or a layer asks here.

Keras 3 (what `tf.keras` is since TensorFlow 2.16) has its own `keras.Variable`, which is not
a `tf.Variable`. Whether an object is a Keras object is decided from how it was made, never
from an attribute's name: `tf.Module` and plain Python classes also name their variable lists
`variables` or `weights`, and there they hold ordinary `tf.Variable`s.

Known Keras objects, each with its `Origin`:

- CONSTRUCTED: the result of a Keras constructor (`tf.keras.Sequential(...)`,
  `keras.Model(inputs, outputs)`, `keras.layers.Dense(...)`,
  `keras.applications.ResNet50(...)`, `keras.models.load_model(...)`);
- SUBCLASS: an instance of a class of this module that subclasses a Keras model or layer
  (directly or through other classes of the module), and `self` inside such a class;
- ANNOTATED: a parameter annotated with a Keras model or layer class (`model: keras.Model`);
  and a parameter of a function only this file can call (a notebook's or a script's, a
  nested or private one) to which every call in the file passes a known Keras object: the
  origins of what is passed;
- TAKEN: `model.layers[i]` and `model.get_layer(...)` of a known model;
- BUILT: the result of a function of another module of the project whose summary says it
  returns a Keras model or layer (`model = build_model()` with `build_model` imported from
  `models.py`), with what the summary knows of its non-trainable state (`summaries.Built`);

and, through them, the result of a function of this module whose every `return` gives a
known Keras object (`build_model()`), names bound to any of these on every path, and
`self.encoder` when every assignment to `self.encoder` in the class gives one. Methods that
never mention a tape (`__init__`) are usually cut out before the parse (see
`tapelint.parsing.slicer`); their assignments are then read from the file's text with Python's
`ast`, and a class or builder named there is looked up among the module's own definitions.
Anything else (an unannotated parameter, the result of an imported function without such a
summary, an imported class, a name bound on some path to something else) is unknown.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from enum import Enum

import libcst as cst

from tapelint.semantic.calls.callees import (
    Callee,
    arguments_passed,
    callee_of,
    only_called_here,
    outside_project,
)
from tapelint.semantic.file_model.expressions import (
    child_blocks,
    every_name,
    returns_of,
    statements,
)
from tapelint.semantic.file_model.model import Def, DefKind, FileModel, TapeCall, Tri
from tapelint.semantic.flow.watching import source_argument
from tapelint.semantic.keras.method_returns import returned_values
from tapelint.semantic.project_model.names import (
    absolute,
    canonical,
    dotted_name,
    is_tensorflow_or_keras,
)
from tapelint.semantic.project_model.summaries import Built

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
# A model's or layer's "all variables": trainable and not.
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
# The Keras model classes: constructors of models, and bases of model subclasses.
MODEL_CLASSES = frozenset(
    {"keras.Model", "keras.Sequential", "keras.models.Model", "keras.models.Sequential"}
)
# The base class of custom Keras layers.
LAYER_BASES = frozenset({"keras.layers.Layer", "keras.Layer"})
_MODEL_FACTORIES = MODEL_CLASSES | {
    "keras.models.load_model",
    "keras.models.clone_model",
    "keras.saving.load_model",
}
# Upper-case names under `keras.layers` that are not layers.
_NOT_LAYERS = frozenset({"Input", "InputSpec"})
# Methods of a Keras model that run it (forward passes, or whole loops of them).
RUNNING_METHODS = frozenset(
    {"call", "fit", "evaluate", "predict", "train_on_batch", "test_on_batch", "predict_on_batch"}
)
_KERAS_VARIABLE_CONSTRUCTORS = frozenset({"keras.Variable", "keras.variables.Variable"})
# Source text that means the file runs legacy Keras 2 (`tf_keras`), whose variables are
# `tf.Variable`s.
_LEGACY_KERAS_MARKERS = ("tf_keras", "TF_USE_LEGACY_KERAS", "tensorflow.python.keras")


def uses_legacy_keras(model: FileModel) -> bool:
    return any(marker in model.source_text for marker in _LEGACY_KERAS_MARKERS)


class How(Enum):
    CONSTRUCTED = "constructed"
    SUBCLASS = "subclass"
    ANNOTATED = "annotated"
    TAKEN = "taken"
    BUILT = "built"


@dataclass(frozen=True)
class Origin:
    """How one binding made a Keras object."""

    how: How
    is_model: bool  # a model (or an instance of a class deriving from one), else a layer
    # CONSTRUCTED: the constructor's qualified name; SUBCLASS: the Keras class the class of
    # this file derives from (None when its definitions disagree); ANNOTATED: the annotation.
    keras_class: str | None = None
    # CONSTRUCTED: the constructor call, whose arguments say what a built-in layer does.
    call: cst.Call | None = None
    # SUBCLASS: the name of the class of this file that made it.
    class_name: str | None = None
    # BUILT: what the summary of the function that built it says (`keras_class` is then
    # that function's qualified name).
    built: Built | None = None


# Every way the paths reaching an expression made it, or None when some path is unknown.
Origins = frozenset[Origin] | None


def _combined(answers: Iterable[Origins]) -> Origins:
    """Known only when known on every path."""
    found: set[Origin] = set()
    for answer in answers:
        if answer is None:
            return None
        found |= answer
    return frozenset(found) if found else None


class KerasObjects:
    """Answers, with memory, for one file."""

    def __init__(self, model: FileModel) -> None:
        self.model = model
        self._classes: dict[cst.ClassDef, Origin | None] = {}
        self._defs: dict[Def, Origins] = {}
        self._functions: dict[cst.FunctionDef, Origins] = {}
        self._attributes: dict[tuple[cst.ClassDef, str], Origins] = {}
        self._ast_classes: dict[str, list[ast.ClassDef]] | None = None
        self._text_assignments: dict[tuple[str, bool], dict[str, list[ast.expr | None]]] = {}
        self._text_names: set[cst.Name] = set()
        # `self` in an expression read from the text of a method of this class.
        self._text_self: dict[cst.Name, str] = {}
        self._methods_built: dict[tuple[str, str], Origins] = {}
        # Layers `.add(...)`ed to a model that a method builds in a local (`method_returns`).
        self._added_in_text: dict[cst.Call, list[cst.BaseExpression]] = {}

    # ------------------------------------------------------------------ models and layers
    def is_keras_object(self, expr: cst.BaseExpression) -> Tri:
        """YES when `expr` certainly evaluates to a Keras model or layer."""
        return Tri.YES if self.origins(expr) is not None else Tri.UNKNOWN

    def origins(self, expr: cst.BaseExpression) -> Origins:
        """How `expr` was made on each path that reaches it; None unless it is certainly a
        Keras model or layer."""
        if isinstance(expr, cst.Name):
            defs = self.defs_of(expr)
            return _combined(self._def_origins(d) for d in defs) if defs else None
        if isinstance(expr, cst.Call):
            return self._call_origins(expr)
        if isinstance(expr, cst.Subscript):
            # `model.layers[0]`
            value = expr.value
            if (
                isinstance(value, cst.Attribute)
                and value.attr.value == "layers"
                and self.origins(value.value) is not None
            ):
                return frozenset({Origin(How.TAKEN, is_model=False)})
            return None
        if isinstance(expr, cst.Attribute):
            return self._self_attribute_origins(expr)
        return None

    def defs_of(self, name: cst.Name) -> Sequence[Def] | frozenset[Def]:
        """The definitions reaching `name`; for a name read from the text of a method that
        was cut out (see `_assignments_in_text`), the module's own definitions of it."""
        if name in self._text_names:
            return self.model.scope_defs[self.model.scopes[0]].get(name.value, [])
        return self.model.defs_of(name)

    def _def_origins(self, d: Def) -> Origins:
        if d in self._defs:
            return self._defs[d]
        self._defs[d] = None  # cycles: `m = wrap(m)` in a loop
        answer: Origins = None
        if d.kind is DefKind.ASSIGN and d.value is not None:
            answer = self.origins(d.value)
        elif d.kind is DefKind.PARAM:
            owner = _method_owner(d) if d.name == "self" else None
            made = self._class_origin(owner) if owner is not None else None
            if made is None:
                made = self._annotated_origin(d)
            answer = frozenset({made}) if made is not None else self._passed_origins(d)
        self._defs[d] = answer
        return answer

    def _passed_origins(self, d: Def) -> Origins:
        """A parameter of a function that only this file can call (a function of a
        notebook or a script, a nested or private function), to which every call in the
        file passes a known Keras object: the objects passed."""
        function = d.stmt
        if d.name == "self" or not isinstance(function, cst.FunctionDef):
            return None
        if not only_called_here(self.model, function):
            return None
        passed = arguments_passed(self.model, d)
        if not passed:
            return None
        return _combined(self.origins(value) if value is not None else None for value in passed)

    def _call_origins(self, call: cst.Call) -> Origins:
        func = call.func
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value == "get_layer"
            and self.origins(func.value) is not None
        ):
            return frozenset({Origin(How.TAKEN, is_model=False)})
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
            owner = self._self_class_name(func.value)
            if owner is not None:
                return self._method_origins(owner, func.attr.value)
        qualified = self.model.imports.qualify(func)
        if qualified is not None:
            if not _is_keras_factory(qualified):
                return self._built_elsewhere(call)
            is_model = qualified in _MODEL_FACTORIES or is_application(qualified)
            return frozenset({Origin(How.CONSTRUCTED, is_model, qualified, call)})
        if isinstance(func, cst.Name):
            defs = self.defs_of(func)
            if not defs and self._star_imported_layer(func):
                layer = f"keras.layers.{func.value}"
                return frozenset({Origin(How.CONSTRUCTED, False, layer, call)})
            if not defs:  # perhaps from a star import
                return self._built_elsewhere(call)
            made = [d.stmt for d in defs if d.kind is DefKind.DEFINITION]
            if not made or len(made) != len(defs):
                return None
            if all(isinstance(c, cst.ClassDef) for c in made):
                classes = [self._class_origin(c) for c in made if isinstance(c, cst.ClassDef)]
                return _combined(frozenset({c}) if c is not None else None for c in classes)
            if all(isinstance(f, cst.FunctionDef) for f in made):
                return _combined(
                    self._returned_origins(f) for f in made if isinstance(f, cst.FunctionDef)
                )
        return None

    def _star_imported_layer(self, name: cst.Name) -> bool:
        """`Dropout` bound by `from tensorflow.keras.layers import *`: the file binds it
        nowhere, star-imports a Keras layers module, and every module it star-imports is
        TensorFlow's or Keras' (a star import of the project's own module could bind it to
        anything)."""
        stars = [canonical(module) for module in self.model.imports.star_modules]
        return (
            "keras.layers" in stars
            and all(is_tensorflow_or_keras(module) for module in stars)
            and _is_keras_layer_constructor(f"keras.layers.{name.value}")
            and not hasattr(builtins, name.value)
        )

    def _built_elsewhere(self, call: cst.Call) -> Origins:
        """A call of a function of another module of the project that returns a Keras
        model or layer on every path, by the function's summary in the project index."""
        index = self.model.index
        callee = callee_of(self.model, call) if index is not None else None
        if callee is None and index is not None and call.func in self._text_names:
            # `build_backbone(64)` read back from a cut-out method: by the name imported.
            qualified = self.model.imports.qualify(call.func)
            module = self.model.module_name
            callee = (
                Callee(absolute(qualified, module, is_package=self.model.is_package), False)
                if qualified is not None
                else None
            )
        if index is None or callee is None or callee.bound or outside_project(callee.target):
            return None
        summary = index.function(callee.target)
        built = summary.builds if summary is not None else None
        if built is None:
            return None
        origin = Origin(How.BUILT, built.is_model, callee.target, call, built=built)
        return frozenset({origin})

    def _method_origins(self, class_name: str, method_name: str) -> Origins:
        """`self._define_model()`: what the method of the class (or of an in-file base) gives
        back on every `return`, read from the file's text (`method_returns`)."""
        key = (class_name, method_name)
        if key in self._methods_built:
            return self._methods_built[key]
        self._methods_built[key] = None  # recursion
        method = self._method_in_text(class_name, method_name, set())
        returned = returned_values(method) if method is not None else None
        answer: Origins = None
        if returned:
            parsed = []
            for one in returned:
                value = self.parse_text_expression(one.value, class_name)
                if isinstance(value, cst.Call) and one.added:
                    self._added_in_text[value] = [
                        self.parse_text_expression(layer, class_name) for layer in one.added
                    ]
                parsed.append(value)
            answer = _combined(self.origins(value) for value in parsed)
        self._methods_built[key] = answer
        return answer

    def _method_in_text(
        self, class_name: str, method_name: str, seen: set[str]
    ) -> ast.FunctionDef | None:
        """The file's one class `class_name`'s method, or the nearest in-file base's."""
        classes = self.classes_in_text().get(class_name, [])
        if len(classes) != 1 or class_name in seen:
            return None
        seen.add(class_name)
        for node in classes[0].body:
            if isinstance(node, ast.FunctionDef) and node.name == method_name:
                return node
        for base in classes[0].bases:
            if isinstance(base, ast.Name):
                found = self._method_in_text(base.id, method_name, seen)
                if found is not None:
                    return found
        return None

    def added_in_text(self, call: cst.Call) -> list[cst.BaseExpression]:
        """Layers `.add(...)`ed to the model that `call`, read from a method's text, makes."""
        return self._added_in_text.get(call, [])

    def returned(self, function: cst.FunctionDef) -> Origins:
        """How what a function of this file returns was made, when every `return` gives a
        known Keras object."""
        return self._returned_origins(function)

    def _returned_origins(self, function: cst.FunctionDef) -> Origins:
        """A function of this file (`build_model()`) whose every `return` gives a Keras
        object."""
        if function in self._functions:
            return self._functions[function]
        self._functions[function] = None  # recursion
        returned = list(returns_of(function))
        answer: Origins = None
        if returned and all(r.value is not None for r in returned):
            answer = _combined(self.origins(r.value) for r in returned if r.value is not None)
        self._functions[function] = answer
        return answer

    def _annotated_origin(self, d: Def) -> Origin | None:
        """A parameter annotated with a Keras model or layer class (`model: keras.Model`)."""
        annotation = d.annotation()
        qualified = self.model.imports.qualify(annotation) if annotation is not None else None
        if qualified is not None and _is_keras_base(qualified):
            return Origin(How.ANNOTATED, qualified in MODEL_CLASSES, qualified)
        return None

    def instance_of(self, node: cst.ClassDef) -> Origins:
        """How an instance of class `node` of this file is made: a Keras subclass, or None
        when the class is not certainly one."""
        made = self._class_origin(node)
        return frozenset({made}) if made is not None else None

    def _class_origin(self, node: cst.ClassDef) -> Origin | None:
        """An instance of a class of this file: SUBCLASS, with the first Keras class among
        its bases (or its local bases' bases)."""
        if node in self._classes:
            return self._classes[node]
        self._classes[node] = None  # cycles through bases decide nothing
        answer: Origin | None = None
        for base in node.bases:
            if base.keyword is not None:
                continue
            qualified = self.model.imports.qualify(base.value)
            if qualified is not None and _is_keras_base(qualified):
                answer = Origin(How.SUBCLASS, qualified in MODEL_CLASSES, qualified)
            elif isinstance(base.value, cst.Name):
                answer = self._local_base_origin(base.value)
            if answer is not None:
                answer = replace(answer, class_name=node.name.value)
                break
        self._classes[node] = answer
        return answer

    def _local_base_origin(self, base: cst.Name) -> Origin | None:
        local = [d.stmt for d in self.defs_of(base)]
        if not local or not all(isinstance(c, cst.ClassDef) for c in local):
            return None
        found = [self._class_origin(c) for c in local if isinstance(c, cst.ClassDef)]
        if any(f is None for f in found):
            return None
        if len({(f.how, f.is_model, f.keras_class) for f in found if f is not None}) == 1:
            return found[0]
        return Origin(How.SUBCLASS, any(f.is_model for f in found if f is not None))

    def _self_attribute_origins(self, expr: cst.Attribute) -> Origins:
        """`self.encoder`, from every assignment to it in the methods of `self`'s class."""
        owner = self.self_class(expr)
        if owner is None:
            return None
        key = (owner, expr.attr.value)
        if key in self._attributes:
            return self._attributes[key]
        self._attributes[key] = None  # `self.x = self.x` and the like
        assigned = self.self_attribute_values(expr)
        answer = (
            _combined(self.origins(v) if v is not None else None for v in assigned)
            if assigned
            else None
        )
        self._attributes[key] = answer
        return answer

    def self_class(self, expr: cst.Attribute) -> cst.ClassDef | None:
        """The class whose methods `self` is in, for `self.<attribute>`."""
        if not isinstance(expr.value, cst.Name) or expr.value.value != "self":
            return None
        in_text = self._text_self.get(expr.value)
        if in_text is not None:
            return self._class_named(in_text)
        owners = {_method_owner(d) for d in self.defs_of(expr.value)}
        return owners.pop() if len(owners) == 1 else None

    def _self_class_name(self, name: cst.Name) -> str | None:
        """The name of the class whose instance `name` is, when it is a method's `self`."""
        if name.value != "self":
            return None
        in_text = self._text_self.get(name)
        if in_text is not None:
            return in_text
        owners = {_method_owner(d) for d in self.defs_of(name)}
        owner = owners.pop() if len(owners) == 1 else None
        return owner.name.value if owner is not None else None

    def _class_named(self, class_name: str) -> cst.ClassDef | None:
        """The module's one class statement named `class_name`."""
        defs = self.model.scope_defs[self.model.scopes[0]].get(class_name, [])
        classes = [d.stmt for d in defs if isinstance(d.stmt, cst.ClassDef)]
        return classes[0] if len(classes) == 1 and len(defs) == 1 else None

    def self_attribute_values(self, expr: cst.Attribute) -> list[cst.BaseExpression | None]:
        """The values assigned to `self.<attribute>` in the methods of `self`'s class, from
        the parsed methods or else from the file's text; None stands for a value that is not
        a plain `=` (unknown). Empty when `expr` is not such an attribute."""
        return self._self_attribute_values(expr, reads_self=False)

    def self_attribute_aliases(self, expr: cst.Attribute) -> list[cst.BaseExpression | None]:
        """Like `self_attribute_values`, but a value may read `self`: what an attribute
        aliases (`self.student_vars = self.student.trainable_weights`). The values are for
        their dotted names, not for asking how an object was made."""
        return self._self_attribute_values(expr, reads_self=True)

    def _self_attribute_values(
        self, expr: cst.Attribute, *, reads_self: bool
    ) -> list[cst.BaseExpression | None]:
        owner = self.self_class(expr)
        if owner is None:
            return []
        assigned = list(_attribute_assignments(owner, expr.attr.value))
        return assigned or self._assignments_in_text(owner.name.value, expr.attr.value, reads_self)

    def _assignments_in_text(
        self, class_name: str, attribute: str, reads_self: bool = False
    ) -> list[cst.BaseExpression | None]:
        """Values assigned to `self.<attribute>` in the methods of the file's one class named
        `class_name`, read from the whole text. A value that names a parameter of its method
        (but `self` when `reads_self`), or a binding other than a plain `=`, comes back as
        `None` (unknown)."""
        key = (class_name, reads_self)
        if key not in self._text_assignments:
            self._text_assignments[key] = self._read_class_assignments(class_name, reads_self)
        values: list[cst.BaseExpression | None] = []
        for value in self._text_assignments[key].get(attribute, []):
            # An alias's value is read for its dotted name, its `self` for no class.
            owner = None if reads_self else class_name
            parsed = self.parse_text_expression(value, owner) if value is not None else None
            values.append(parsed)
        return values

    def parse_text_expression(
        self, value: ast.expr, class_name: str | None = None
    ) -> cst.BaseExpression:
        """An expression read from the file's text with `ast`, as libcst; the names in it are
        looked up among the module's own definitions, but `self`, which stands for the
        instance of `class_name` when the expression comes from one of its methods."""
        parsed = cst.parse_expression(ast.unparse(value))
        names = list(every_name(parsed))
        self._text_names.update(names)
        if class_name is not None:
            self._text_self.update((n, class_name) for n in names if n.value == "self")
        return parsed

    def classes_in_text(self) -> dict[str, list[ast.ClassDef]]:
        """The file's classes (not those defined inside functions), by name, read from the
        whole text: methods that were cut out before the parse are there."""
        if self._ast_classes is None:
            self._ast_classes = {}
            tree = self.model.text_tree()
            for node in _ast_statements(tree.body if tree is not None else []):
                if isinstance(node, ast.ClassDef):
                    self._ast_classes.setdefault(node.name, []).append(node)
        return self._ast_classes

    def _read_class_assignments(
        self, class_name: str, reads_self: bool = False
    ) -> dict[str, list[ast.expr | None]]:
        classes = self.classes_in_text().get(class_name, [])
        assigned: dict[str, list[ast.expr | None]] = {}
        if len(classes) != 1:
            return assigned
        for method in classes[0].body:
            if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            arguments = method.args
            positional = [*arguments.posonlyargs, *arguments.args]
            parameters = {a.arg for a in (*positional, *arguments.kwonlyargs)}
            if reads_self and positional:
                parameters.discard(positional[0].arg)
            own_methods = {
                node.name for node in classes[0].body if isinstance(node, ast.FunctionDef)
            }
            for node in _ast_statements(method.body):
                for target, value in _ast_bindings(node):
                    for attribute in _bound_self_attributes(target):
                        plain = value is not None and isinstance(target, ast.Attribute)
                        names = (
                            {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}
                            if plain and value is not None
                            else set()
                        )
                        if plain and value is not None and _calls_own_method(value, own_methods):
                            # `self._define_model(width)`: what the method returns names
                            # none of its parameters (`method_returns`), so the arguments
                            # decide nothing here.
                            names = set()
                        known = plain and not names & parameters
                        assigned.setdefault(attribute, []).append(value if known else None)
        return assigned

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
                owner = self.origins(expr.value)
                legacy = owner is not None and any(o.built and o.built.legacy for o in owner)
                return Tri.YES if owner is not None and not legacy else Tri.UNKNOWN
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
            defs = self.defs_of(expr)
            return _all([self._def_holds_keras_variables(d) for d in defs])
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
        found = self.origins(expr)
        return found is not None and all(
            origin.how is How.TAKEN
            or (
                origin.how is How.CONSTRUCTED
                and _is_keras_layer_constructor(origin.keras_class or "")
            )
            for origin in found
        )


def _calls_own_method(value: ast.expr, methods: set[str]) -> bool:
    """`self.m(...)` with `m` a method of the class, and no other use of `self`."""
    if not (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and isinstance(value.func.value, ast.Name)
        and value.func.value.id == "self"
        and value.func.attr in methods
    ):
        return False
    return not any(
        isinstance(n, ast.Name) and n.id == "self"
        for part in (*value.args, *value.keywords)
        for n in ast.walk(part)
    )


def _all(answers: list[Tri]) -> Tri:
    if answers and all(a is Tri.YES for a in answers):
        return Tri.YES
    if answers and all(a is Tri.NO for a in answers):
        return Tri.NO
    return Tri.UNKNOWN


def _method_owner(d: Def) -> cst.ClassDef | None:
    """The class whose instance `d` binds: the first parameter of a method that is neither
    a static nor a class method."""
    if d.kind is not DefKind.PARAM:
        return None
    function = d.scope.node
    owner = d.scope.parent.node if d.scope.parent is not None else None
    if not isinstance(function, cst.FunctionDef) or not isinstance(owner, cst.ClassDef):
        return None
    positional = [*function.params.posonly_params, *function.params.params]
    if not positional or positional[0].name is not d.target:
        return None
    for decorator in function.decorators:
        if isinstance(decorator.decorator, cst.Name) and decorator.decorator.value in (
            "staticmethod",
            "classmethod",
        ):
            return None
    return owner


def _is_keras_layer_constructor(qualified: str) -> bool:
    prefix, _, last = qualified.rpartition(".")
    return prefix == "keras.layers" and last[:1].isupper() and last not in _NOT_LAYERS


def is_application(qualified: str) -> bool:
    """`keras.applications.ResNet50`, `keras.applications.resnet50.ResNet50`."""
    last = qualified.rpartition(".")[2]
    return qualified.startswith("keras.applications.") and last[:1].isupper()


def _is_keras_factory(qualified: str) -> bool:
    return (
        qualified in _MODEL_FACTORIES
        or _is_keras_layer_constructor(qualified)
        or is_application(qualified)
    )


def _is_keras_base(qualified: str) -> bool:
    """A Keras class that a model or layer class (or an annotation) may name."""
    return (
        qualified in MODEL_CLASSES
        or qualified in LAYER_BASES
        or _is_keras_layer_constructor(qualified)
    )


def _attribute_assignments(
    owner: cst.ClassDef, attribute: str
) -> Iterator[cst.BaseExpression | None]:
    """Values assigned to `self.<attribute>` in the class's methods that were parsed (plain
    `=` only; any other binding such as `+=`, a tuple target or a `for` makes the attribute
    unknown, and comes back as None)."""
    for method in statements(owner.body):
        if not isinstance(method, cst.FunctionDef):
            continue
        for node in _simple_statements(statements(method.body)):
            for small in node.body:
                yield from _assigned_to(small, attribute)


def _assigned_to(
    small: cst.BaseSmallStatement, attribute: str
) -> Iterator[cst.BaseExpression | None]:
    targets: list[cst.BaseExpression] = []
    if isinstance(small, cst.Assign):
        targets = [t.target for t in small.targets]
    elif isinstance(small, (cst.AnnAssign, cst.AugAssign)):
        targets = [small.target]
    for target in targets:
        if not _mentions_self_attribute(target, attribute):
            continue
        if isinstance(small, (cst.Assign, cst.AnnAssign)) and dotted_name(target):
            yield small.value
        else:
            yield None


def _mentions_self_attribute(target: cst.BaseExpression, attribute: str) -> bool:
    if isinstance(target, (cst.Tuple, cst.List)):
        return any(_mentions_self_attribute(e.value, attribute) for e in target.elements)
    return dotted_name(target) == f"self.{attribute}"


def _simple_statements(
    body: Sequence[cst.CSTNode],
) -> Iterator[cst.SimpleStatementLine | cst.SimpleStatementSuite]:
    for node in body:
        if isinstance(node, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            yield node
        elif not isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            for block in child_blocks(node):
                yield from _simple_statements(block)


def _ast_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement in `body`, nested blocks included, and class bodies, but not the
    bodies of functions (a method's own statements are read through its `body`)."""
    for statement in body:
        yield statement
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for field in ("body", "orelse", "finalbody"):
            yield from _ast_statements(getattr(statement, field, []))
        for handler in getattr(statement, "handlers", []):
            yield from _ast_statements(handler.body)
        for case in getattr(statement, "cases", []):
            yield from _ast_statements(case.body)


def _ast_bindings(node: ast.AST) -> list[tuple[ast.expr, ast.expr | None]]:
    if isinstance(node, ast.Assign):
        return [(target, node.value) for target in node.targets]
    if isinstance(node, ast.AnnAssign):
        return [(node.target, node.value)]
    if isinstance(node, ast.AugAssign):
        return [(node.target, None)]
    if isinstance(node, (ast.For, ast.With)):
        targets = (
            [node.target] if isinstance(node, ast.For) else [i.optional_vars for i in node.items]
        )
        return [(t, None) for t in targets if t is not None]
    return []


def _bound_self_attributes(target: ast.expr) -> Iterator[str]:
    """The `x` of every `self.x` a binding target binds."""
    if isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from _bound_self_attributes(element)
    elif (
        isinstance(target, ast.Attribute)
        and isinstance(target.value, ast.Name)
        and target.value.id == "self"
    ):
        yield target.attr


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
        values = [d.value for d in defs if d.kind is DefKind.ASSIGN and d.value is not None]
        if not defs or len(values) != len(defs):
            return
        found = [list(_all_variables_in(model, keras, value, expr)) for value in values]
        if all(found):
            yield found[0][0]
