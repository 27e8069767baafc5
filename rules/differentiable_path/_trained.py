"""Which Keras models and layers a tape trains: the objects whose variables its gradient
calls differentiate (`model` for `tape.gradient(loss, model.trainable_variables)`).

The sources are followed through aliases of variable lists: lists, `+`, slices,
`list(...)`, names bound to them (`w = self.student.trainable_weights`, or unpacked from a
literal tuple), and attributes every assignment of the class binds to them
(`self.student_vars = self.student.trainable_weights`). Any other attribute (`self.kernel`)
stands for the object it is read from. Each owner comes with the expression that denotes it
(`model`, `self.encoder`), to ask what it is made of.
"""

from __future__ import annotations

import libcst as cst

from tapelint.semantic.file_model.model import FileModel, TapeCall, TapeInstance
from tapelint.semantic.flow.watching import source_argument
from tapelint.semantic.keras.keras_objects import VARIABLE_LISTS, KerasObjects
from tapelint.semantic.project_model.names import dotted_name

# Owners by dotted name (`self.encoder`), each with an expression that denotes it.
Owners = dict[str, cst.BaseExpression]


def trained_by_tape(model: FileModel, keras: KerasObjects, tape: TapeInstance) -> Owners:
    """The models and layers whose variables the tape's gradient calls differentiate."""
    owners: Owners = {}
    for call in model.calls_on(tape):
        if call.is_gradient:
            owners.update(trained_by_call(model, keras, call))
    return owners


def trained_by_call(
    model: FileModel, keras: KerasObjects, call: TapeCall, *, whole_lists: bool = False
) -> Owners:
    """The models and layers whose variables one gradient call differentiates. With
    `whole_lists`, only those whose whole variable list is among the sources: a slice
    (`model.trainable_variables[-2:]`, a head) trains some of them, not known which."""
    sources = source_argument(call)
    if sources is None:
        return {}
    return _variable_owners(model, keras, sources, set(), whole_lists)


def _variable_owners(
    model: FileModel,
    keras: KerasObjects,
    expr: cst.BaseExpression,
    seen: set[int],
    whole_lists: bool = False,
) -> Owners:
    if id(expr) in seen:
        return {}
    seen.add(id(expr))
    if whole_lists and isinstance(expr, cst.Subscript):
        return {}
    if isinstance(expr, cst.BinaryOperation):
        return _variable_owners(model, keras, expr.left, seen, whole_lists) | _variable_owners(
            model, keras, expr.right, seen, whole_lists
        )
    if isinstance(expr, (cst.List, cst.Tuple)):
        found: Owners = {}
        for element in expr.elements:
            found |= _variable_owners(model, keras, element.value, seen, whole_lists)
        return found
    if isinstance(expr, cst.Subscript):
        return _variable_owners(model, keras, expr.value, seen, whole_lists)
    if isinstance(expr, cst.Call):
        func = expr.func
        if (
            isinstance(func, cst.Name)
            and not model.defs_of(func)
            and func.value in ("list", "tuple")
            and len(expr.args) == 1
        ):
            return _variable_owners(model, keras, expr.args[0].value, seen, whole_lists)
        return {}
    if isinstance(expr, cst.Attribute):
        owner = dotted_name(expr.value)
        if expr.attr.value in VARIABLE_LISTS:
            return {owner: expr.value} if owner is not None else {}
        aliased = _attribute_alias_owners(model, keras, expr, seen, whole_lists)
        if aliased:
            return aliased
        return {owner: expr.value} if owner is not None else {}
    if isinstance(expr, cst.Name):
        found = {}
        for d in model.defs_of(expr):
            value = d.bound_value()
            if value is not None:
                found |= _variable_owners(model, keras, value, seen, whole_lists)
        return found
    return {}


def _attribute_alias_owners(
    model: FileModel, keras: KerasObjects, expr: cst.Attribute, seen: set[int], whole_lists: bool
) -> Owners:
    """The owners of `self.<name>` when every value the class assigns to it lists the
    variables of something (empty when one does not, or when it is not such an attribute)."""
    values = keras.self_attribute_aliases(expr)
    if not values or any(v is None for v in values):
        return {}
    owners: Owners = {}
    for value in values:
        assert value is not None
        found = _variable_owners(model, keras, value, seen, whole_lists)
        if not found:
            return {}
        owners |= found
    return owners
