"""What a Keras model or layer is certainly made of: the walk shared by the questions that
ask whether some part of it has a property (computes something different in training,
holds non-trainable variables).

Known compositions:

- a built-in layer, from its class and constructor arguments; `Bidirectional` and
  `TimeDistributed` from the layer they wrap;
- a `keras.applications` model, from its family;
- `keras.Sequential([...])` from its layers and the layers `.add()`ed to it;
- a functional `keras.Model(inputs, outputs)` from the layers its outputs are computed with,
  followed back through the names they are bound to;
- an instance of a class of this file, from what its `__init__` or `build` (or an in-file
  base class's) creates and its `call` uses (`forward_pass`), and from its other methods
  as the question decides;
- what a function of another module builds, from what its summary says (`built`).

A subclass answers the property's own questions (`built_in_layer`, `application`,
`class_answer`, `counts_call`, `built`); the walk answers with the name of one part that has the
property, or None when the composition is unknown (a parameter, a loaded model) or known
not to have it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

import libcst as cst

from tapelint.semantic.file_model.children import child_nodes
from tapelint.semantic.file_model.expressions import argument_value
from tapelint.semantic.file_model.model import DefKind
from tapelint.semantic.keras.forward_pass import ForwardPass
from tapelint.semantic.keras.keras_objects import (
    How,
    KerasObjects,
    Origin,
    Origins,
    is_application,
)

_WRAPPERS = frozenset({"Bidirectional", "TimeDistributed"})
_FUNCTIONAL_MODELS = frozenset({"keras.Model", "keras.models.Model"})
_SEQUENTIAL_MODELS = frozenset({"keras.Sequential", "keras.models.Sequential"})


class CompositionSearch:
    """Looks for a part with the subclass's property, with memory, for one file."""

    def __init__(self, keras: KerasObjects) -> None:
        self.keras = keras
        self.model = keras.model
        self._classes: dict[str, str | None] = {}
        self._added: dict[cst.Call, list[cst.BaseExpression]] | None = None
        self._ast_classes: dict[str, list[ast.ClassDef]] | None = None

    # ------------------------------------------------------------------ the property
    def built_in_layer(self, name: str, call: cst.Call) -> str | None:
        """The part's name when the `keras.layers` class `name`, built by `call`, has the
        property by itself (wrappers are followed by the walk)."""
        raise NotImplementedError

    def application(self, name: str, call: cst.Call) -> str | None:
        """The part's name when the `keras.applications` model `name`, built by `call`, has
        the property."""
        raise NotImplementedError

    def class_answer(self, class_name: str, methods: dict[str, ast.FunctionDef]) -> str | None:
        """What a class of the file answers; `parts_created(methods)` gives what its
        `__init__`/`build` builds."""
        raise NotImplementedError

    def built(self, origin: Origin) -> str | None:
        """What the summary of the function of another module that built the object says
        (a `How.BUILT` origin); by default nothing is known."""
        return None

    def counts_call(self, call: cst.Call) -> bool:
        """Whether a layer called in a functional model's graph counts as its part."""
        return True

    # ------------------------------------------------------------------ the walk
    def of(self, expr: cst.BaseExpression) -> str | None:
        """A part with the property of what `expr` evaluates to, on every path, or None."""
        return self.of_seen(expr, set())

    def of_seen(self, expr: cst.BaseExpression, seen: set[cst.CSTNode]) -> str | None:
        if expr in seen:
            return None
        seen.add(expr)
        return self.of_origins(self.keras.origins(expr), seen)

    def of_origins(self, origins: Origins, seen: set[cst.CSTNode] | None = None) -> str | None:
        """A part with the property of an object made in each of the ways `origins` says
        (every one must have it), or None."""
        if not origins:
            return None
        found = [self._origin(origin, seen if seen is not None else set()) for origin in origins]
        return found[0] if all(found) else None

    def _origin(self, origin: Origin, seen: set[cst.CSTNode]) -> str | None:
        if origin.how is How.SUBCLASS and origin.class_name is not None:
            return self.of_class(origin.class_name)
        if origin.how is How.BUILT:
            return self.built(origin)
        if origin.how is not How.CONSTRUCTED or origin.keras_class is None:
            return None
        call, qualified = origin.call, origin.keras_class
        if call is None:
            return None
        name = qualified.rsplit(".", 1)[-1]
        if is_application(qualified):
            return self.application(name, call)
        if qualified in _SEQUENTIAL_MODELS:
            return self._sequential(call, seen)
        if qualified in _FUNCTIONAL_MODELS:
            outputs = argument_value(call, 1, "outputs")
            return self._graph(outputs, seen) if outputs is not None else None
        if not qualified.startswith("keras.layers."):
            return None  # load_model, clone_model: made from something this file cannot see
        if name in _WRAPPERS:
            wrapped = argument_value(call, 0, "layer")
            found = self.of_seen(wrapped, seen) if wrapped is not None else None
            return found or self.built_in_layer(name, call)
        return self.built_in_layer(name, call)

    def _sequential(self, call: cst.Call, seen: set[cst.CSTNode]) -> str | None:
        layers: list[cst.BaseExpression] = []
        listed = argument_value(call, 0, "layers")
        if isinstance(listed, (cst.List, cst.Tuple)):
            layers += [e.value for e in listed.elements if isinstance(e, cst.Element)]
        layers += self._added_layers().get(call, [])
        layers += self.keras.added_in_text(call)
        for layer in layers:
            found = self.of_seen(layer, seen)
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
        """A part that computes `expr` in a functional model, looked for back through the
        calls and names it is computed from."""
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
            if isinstance(node, cst.Call) and self.counts_call(node):
                found = self.of_seen(node.func, seen)
                if found:
                    return found
            pending.extend(child_nodes(node))
        return None

    # ------------------------------------------------------------------ classes of this file
    def of_class(self, class_name: str) -> str | None:
        if class_name not in self._classes:
            self._classes[class_name] = None  # recursion: a class made of itself
            methods = self._methods(class_name)
            answer = self.class_answer(class_name, methods) if methods is not None else None
            self._classes[class_name] = answer
        return self._classes[class_name]

    def parts_created(self, class_name: str, methods: dict[str, ast.FunctionDef]) -> str | None:
        """A part with the property that the class's `__init__` or `build` creates and its
        forward pass uses (`forward_pass`)."""
        forward = ForwardPass(methods)
        for name in ("__init__", "build"):
            method = methods.get(name)
            if method is None:
                continue
            for call in calls_in(method):
                if not forward.uses_part(method, call):
                    continue
                found = self.of(self.keras.parse_text_expression(call, class_name))
                if not found and isinstance(call.func, ast.Name):
                    # A class of the file that only this cut-out method names.
                    found = self.of_class(call.func.id) if call.func.id != class_name else None
                if found:
                    return found
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


def calls_in(method: ast.FunctionDef) -> Iterator[ast.Call]:
    for node in ast.walk(method):
        if isinstance(node, ast.Call):
            yield node


def is_zero(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, (cst.Integer, cst.Float)) and float(expr.value) == 0
