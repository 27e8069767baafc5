"""Calls of known Keras models and layers made while a tape records, and their `training=`.

A callee is known to be a Keras model or layer only when this file shows it:

- a name bound (on every path) to a Keras constructor: `keras.Sequential(...)`,
  `keras.Model(inputs, outputs)`, `keras.models.load_model(...)`, a layer class from
  `keras.layers`, an application from `keras.applications`;
- a name bound to an instance of a class defined in the file that subclasses `keras.Model`
  or `keras.layers.Layer` (directly or through other such classes of the file);
- a name bound to the result of a function defined in the file whose every `return` gives
  one of the above (`q_net = build_q_network()`);
- `self` inside a method of such a class, and `self.encoder` when every assignment to
  `self.encoder` in that class gives one of the above. Methods that never mention a tape
  (`__init__`) are usually cut out before the parse (see `tapelint.source`); their
  assignments are then read from the file's text with Python's `ast`, and a class or
  builder named there is looked up among the module's own definitions.

A model passed in as a parameter, returned by a function of another module, or bound on
some path to something else is unknown, and unknown is never reported.

Only calls that train are reported: of a model (or a layer or sub-model stored on one)
whose variables the tape's gradient calls differentiate, or of a built-in layer without
variables whose output depends on `training` (dropout, noise) in a tape that trains some
model. A target network, a distillation teacher or a frozen feature extractor runs in
inference mode on purpose, and so does every model in a tape that differentiates with
respect to inputs (saliency maps, adversarial examples). Built-in layers that compute the
same thing in training and inference (`Dense`, `Conv2D`) are never reported; batch
normalisation and layers built with a nonzero `dropout=` are.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import libcst as cst

from tapelint.analysis.dataflow import Watched
from tapelint.analysis.expressions import calls_in_statement, child_blocks, statements
from tapelint.analysis.model import (
    Def,
    DefKind,
    FileModel,
    Scope,
    TapeInstance,
    Use,
    is_recording,
)
from tapelint.analysis.names import dotted_name

_MAX_DEPTH = 6
_KERAS_MODELS = frozenset(
    {
        "keras.Model",
        "keras.Sequential",
        "keras.models.Model",
        "keras.models.Sequential",
        "keras.models.load_model",
        "keras.models.clone_model",
        "keras.saving.load_model",
    }
)
_KERAS_BASES = frozenset(
    {"keras.Model", "keras.Sequential", "keras.models.Model", "keras.models.Sequential"}
)
_KERAS_LAYER_BASES = frozenset({"keras.layers.Layer", "keras.Layer"})
_NOT_LAYERS = frozenset({"Input", "InputSpec"})
_STATELESS_TRAINING_LAYERS = frozenset(
    {
        "Dropout",
        "SpatialDropout1D",
        "SpatialDropout2D",
        "SpatialDropout3D",
        "GaussianDropout",
        "GaussianNoise",
        "AlphaDropout",
    }
)
_NORMALIZATION_LAYERS = frozenset({"BatchNormalization", "SyncBatchNormalization"})


@dataclass(frozen=True)
class KerasCall:
    node: cst.Call
    callee: str  # how the callee is spelled: `model`, `self`, `self.encoder`
    kind: str  # "model" or "layer"
    tape: TapeInstance


def calls_without_training(model: FileModel) -> list[KerasCall]:
    """Calls of known Keras models/layers, made while a tape records, without `training=`."""
    found: dict[cst.Call, KerasCall] = {}
    known = _Known(model)
    trained = {tape: _trained_owners(model, tape) for tape in model.tapes if tape.blocks}
    for tape, call, use in _recorded_calls(model, trained):
        if call in found or _passes_training(call):
            continue
        kind = known.kind_of_callee(call.func, use.scope)
        # A layer without variables (dropout, noise) is never among the sources, but it is
        # part of what the tape trains.
        if kind == "stateless" or (
            kind in ("model", "layer") and _is_trained(call.func, trained[tape])
        ):
            kind = "layer" if kind == "stateless" else kind
            found[call] = KerasCall(call, dotted_name(call.func) or "", kind, tape)
    return list(found.values())


def _recorded_calls(
    model: FileModel, trained: dict[TapeInstance, frozenset[str]]
) -> Iterator[tuple[TapeInstance, cst.Call, Use]]:
    """Calls of a name or `name.attribute` made while a tape that trains a model records.

    Only statements that read such a name while recording are searched, not whole blocks:
    walking libcst nodes is what costs here."""
    tapes_by_scope: dict[Scope, list[TapeInstance]] = {}
    for tape, owners in trained.items():
        if owners:
            tapes_by_scope.setdefault(tape.scope, []).append(tape)
    if not tapes_by_scope:
        return
    searched: set[tuple[int, int]] = set()
    for use in list(model.uses_by_node.values()):
        tapes = tapes_by_scope.get(use.scope)
        if not tapes or not isinstance(use.node, cst.Name) or use.stmt is None:
            continue
        for tape in tapes:
            if not is_recording(use.ctx, tape) or (id(tape), id(use.stmt)) in searched:
                continue
            searched.add((id(tape), id(use.stmt)))
            for call in calls_in_statement(use.stmt):
                root = _root_name(call.func)
                caller = model.uses_by_node.get(root) if root is not None else None
                if caller is not None and is_recording(caller.ctx, tape):
                    yield tape, call, caller


def _trained_owners(model: FileModel, tape: TapeInstance) -> frozenset[str]:
    """The models and layers whose variables the tape's gradient calls differentiate
    (`model` for `tape.gradient(loss, model.trainable_variables)`)."""
    owners: set[str] = set()
    for call in model.calls_on(tape):
        if call.is_gradient:
            owners |= Watched(model, call).source_callables
    return frozenset(owners)


def _is_trained(func: cst.BaseExpression, trained: frozenset[str]) -> bool:
    """The callee is a trained model, or a layer or sub-model stored on one (`self.encoder`
    when `self.trainable_variables` are the sources)."""
    if dotted_name(func) in trained:
        return True
    return isinstance(func, cst.Attribute) and dotted_name(func.value) in trained


def _passes_training(call: cst.Call) -> bool:
    """`training=` given, or possibly given: `**kwargs`, `*args` or a second positional
    argument (which Keras may pass on to `call` as `training`)."""
    positional = 0
    for arg in call.args:
        if arg.star or (arg.keyword is not None and arg.keyword.value == "training"):
            return True
        if arg.keyword is None:
            positional += 1
    return positional > 1


def _root_name(func: cst.BaseExpression) -> cst.Name | None:
    while isinstance(func, cst.Attribute):
        func = func.value
    return func if isinstance(func, cst.Name) else None


class _Known:
    """What the file shows about its objects."""

    def __init__(self, model: FileModel) -> None:
        self.model = model
        self._classes: dict[str, list[ast.ClassDef]] | None = None
        self._text_assignments: dict[str, dict[str, list[ast.expr | None]]] = {}

    def kind_of_callee(self, func: cst.BaseExpression, scope: Scope) -> str | None:
        if isinstance(func, cst.Name):
            if func.value == "self":
                owner = _enclosing_class(scope)
                return self.class_kind(owner, 0) if owner is not None else None
            return self.kind_of_name(func, 0)
        if (
            isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Name)
            and func.value.value == "self"
        ):
            owner = _enclosing_class(scope)
            if owner is not None:
                return self.attribute_kind(owner, func.attr.value)
        return None

    def kind_of_name(self, name: cst.Name, depth: int) -> str | None:
        defs = self._defs_of(name)
        if not defs or depth > _MAX_DEPTH:
            return None
        return _combined({self.kind_of_definition(d, depth + 1) for d in defs})

    def kind_of_definition(self, d: Def, depth: int) -> str | None:
        if d.kind is not DefKind.ASSIGN or d.value is None:
            return None
        return self.kind_of_value(d.value, depth)

    def kind_of_value(self, value: cst.BaseExpression, depth: int) -> str | None:
        if depth > _MAX_DEPTH:
            return None
        if isinstance(value, cst.Name):
            return self.kind_of_name(value, depth + 1)
        if not isinstance(value, cst.Call):
            return None
        qualified = self.model.imports.qualify(value.func) or ""
        if qualified in _KERAS_MODELS or _is_application(qualified):
            return "model"
        if _is_layer_class(qualified):
            return _built_in_layer_kind(qualified, value)
        if isinstance(value.func, cst.Name):
            return self.kind_of_constructed(value.func, depth + 1)
        return None

    def kind_of_constructed(self, func: cst.Name, depth: int) -> str | None:
        """A class of this file instantiated, or a builder function of this file called."""
        defs = self._defs_of(func)
        if len(defs) != 1:
            return None
        (d,) = defs
        if d.kind is not DefKind.DEFINITION:
            return None
        if isinstance(d.stmt, cst.ClassDef):
            return self.class_kind(d.stmt, depth + 1)
        if isinstance(d.stmt, cst.FunctionDef):
            return self.returned_kind(d.stmt, depth + 1)
        return None

    def class_kind(self, node: cst.ClassDef, depth: int) -> str | None:
        if depth > _MAX_DEPTH:
            return None
        for base in node.bases:
            qualified = self.model.imports.qualify(base.value) or ""
            if qualified in _KERAS_BASES:
                return "model"
            if qualified in _KERAS_LAYER_BASES:
                return "layer"
            if isinstance(base.value, cst.Name):
                kind = self.kind_of_constructed(base.value, depth + 1)
                if kind is not None:
                    return kind
        return None

    def returned_kind(self, function: cst.FunctionDef, depth: int) -> str | None:
        returned = list(_returns(statements(function.body)))
        if not returned or any(r.value is None for r in returned):
            return None
        return _combined({self.kind_of_value(r.value, depth + 1) for r in returned})

    def _defs_of(self, name: cst.Name) -> frozenset[Def] | list[Def]:
        """The definitions reaching `name`; for a name read from the text of a method that
        was cut out (see `_assignments_in_text`), the module's own definitions of it."""
        if name in self.model.uses_by_node:
            return self.model.defs_of(name)
        module_scope = self.model.scopes[0]
        return self.model.scope_defs[module_scope].get(name.value, [])

    def attribute_kind(self, owner: cst.ClassDef, attribute: str) -> str | None:
        assigned = list(_attribute_assignments(owner, attribute))
        if not assigned:
            assigned = self._assignments_in_text(owner.name.value, attribute)
        if not assigned:
            return None
        return _combined({self.kind_of_value(value, 0) for value in assigned})

    def _assignments_in_text(self, class_name: str, attribute: str) -> list[cst.BaseExpression]:
        """Values assigned to `self.<attribute>` in the methods of the file's one class named
        `class_name`, read from the whole text. A value that names a parameter of its method,
        or a binding other than a plain `=`, comes back as `None` (unknown)."""
        if class_name not in self._text_assignments:
            self._text_assignments[class_name] = self._read_class_assignments(class_name)
        values = self._text_assignments[class_name].get(attribute, [])
        return [
            cst.Name("None") if value is None else cst.parse_expression(ast.unparse(value))
            for value in values
        ]

    def _read_class_assignments(self, class_name: str) -> dict[str, list[ast.expr | None]]:
        if self._classes is None:
            self._classes = {}
            for node in _ast_statements(ast.parse(self.model.source_text).body):
                if isinstance(node, ast.ClassDef):
                    self._classes.setdefault(node.name, []).append(node)
        classes = self._classes.get(class_name, [])
        assigned: dict[str, list[ast.expr | None]] = {}
        if len(classes) != 1:
            return assigned
        for method in classes[0].body:
            if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            arguments = method.args
            parameters = {
                a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)
            }
            for node in _ast_statements(method.body):
                for target, value in _ast_bindings(node):
                    for attribute in _bound_self_attributes(target):
                        plain = value is not None and isinstance(target, ast.Attribute)
                        names = (
                            {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}
                            if plain
                            else set()
                        )
                        known = plain and not names & parameters
                        assigned.setdefault(attribute, []).append(value if known else None)
        return assigned


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


def _combined(kinds: set[str | None]) -> str | None:
    """One answer for a name bound on several paths: known only if known on every path, and
    "inert" only if inert on every path."""
    if not kinds or None in kinds:
        return None
    if "inert" in kinds:
        return "inert" if len(kinds) == 1 else None
    if kinds == {"stateless"}:
        return "stateless"
    return "model" if "model" in kinds else "layer"


def _built_in_layer_kind(qualified: str, constructor: cst.Call) -> str:
    """ "stateless" for layers without variables whose output depends on `training` (dropout,
    noise, random augmentation), "layer" for batch normalisation and layers constructed with
    a nonzero dropout rate (`LSTM(64, dropout=0.2)`), "inert" for the rest (`Dense`)."""
    name = qualified.rsplit(".", 1)[-1]
    if name in _STATELESS_TRAINING_LAYERS or name.startswith("Random"):
        return "stateless"
    if name in _NORMALIZATION_LAYERS:
        return "layer"
    for arg in constructor.args:
        keyword = arg.keyword.value if arg.keyword is not None else ""
        if keyword.endswith("dropout") and not _is_zero(arg.value):
            return "layer"
    return "inert"


def _is_zero(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, (cst.Integer, cst.Float)) and float(expr.value) == 0


def _is_application(qualified: str) -> bool:
    return (
        qualified.startswith("keras.applications.") and qualified.rsplit(".", 1)[-1][:1].isupper()
    )


def _is_layer_class(qualified: str) -> bool:
    if not qualified.startswith("keras.layers."):
        return False
    name = qualified.rsplit(".", 1)[-1]
    return name[:1].isupper() and name not in _NOT_LAYERS


def _enclosing_class(scope: Scope) -> cst.ClassDef | None:
    """The class a method belongs to (`scope` is the method's own scope)."""
    parent = scope.parent
    if (
        isinstance(scope.node, cst.FunctionDef)
        and parent is not None
        and isinstance(parent.node, cst.ClassDef)
    ):
        return parent.node
    return None


def _returns(body: Sequence[cst.CSTNode]) -> Iterator[cst.Return]:
    """The `return` statements of a function body, not those of nested definitions."""
    for statement in body:
        if isinstance(statement, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            yield from (small for small in statement.body if isinstance(small, cst.Return))
        elif not isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            for block in child_blocks(statement):
                yield from _returns(block)


def _attribute_assignments(owner: cst.ClassDef, attribute: str) -> Iterator[cst.BaseExpression]:
    """Values assigned to `self.<attribute>` in the class's methods (plain `=` only; any
    other binding such as `+=`, a tuple target or a `for` makes the attribute unknown, so it
    is returned as itself to poison the answer)."""
    for method in statements(owner.body):
        if not isinstance(method, cst.FunctionDef):
            continue
        for node in _simple_statements(statements(method.body)):
            for small in node.body:
                yield from _assigned_to(small, attribute)


def _assigned_to(small: cst.BaseSmallStatement, attribute: str) -> Iterator[cst.BaseExpression]:
    targets: list[cst.BaseExpression] = []
    if isinstance(small, cst.Assign):
        targets = [t.target for t in small.targets]
    elif isinstance(small, (cst.AnnAssign, cst.AugAssign)):
        targets = [small.target]
    for target in targets:
        if _mentions_self_attribute(target, attribute):
            plain = isinstance(small, (cst.Assign, cst.AnnAssign)) and dotted_name(target)
            yield small.value if plain and small.value is not None else target


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
