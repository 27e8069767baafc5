"""Where the gradients of a `tape.gradient` call go, and whether None is handled on the way."""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from tapelint.analysis.expressions import argument_value, elements, names_in
from tapelint.analysis.model import ApplyCall, Def, DefKind, FileModel, TapeCall

_PASS_THROUGH_BUILTINS = frozenset({"list", "tuple"})
_NONE_SAFE_TRANSFORMS = frozenset({"tensorflow.clip_by_global_norm"})


@dataclass
class GradientFlow:
    """The gradient calls an expression's gradients come from, through plain steps only."""

    origins: list[TapeCall] = field(default_factory=list)
    definitions: set[Def] = field(default_factory=set)
    opaque: bool = False  # some path goes through something this analysis does not follow


def applied_gradients(model: FileModel, apply: ApplyCall) -> GradientFlow:
    keyword = "grads_and_vars" if apply.method == "apply_gradients" else "grads"
    argument = argument_value(apply.node, 0, keyword)
    flow = GradientFlow()
    if argument is None:
        flow.opaque = True
    else:
        _follow(model, argument, flow, apply)
    return flow


def _follow(
    model: FileModel, expr: cst.BaseExpression, flow: GradientFlow, apply: ApplyCall
) -> None:
    if isinstance(expr, cst.Call):
        gradient = _gradient_call(model, expr)
        if gradient is not None:
            flow.origins.append(gradient)
            return
        func = expr.func
        if isinstance(func, cst.Name) and func.value in ("zip", *_PASS_THROUGH_BUILTINS):
            first = argument_value(expr, 0, None)
            if first is not None:
                _follow(model, first, flow, apply)
                return
        if model.imports.qualify(func) in _NONE_SAFE_TRANSFORMS:
            _follow_none_safe(model, expr, flow, apply)
            return
    elif isinstance(expr, cst.Subscript) and _is_first_item(expr):
        inner = expr.value
        if (
            isinstance(inner, cst.Call)
            and model.imports.qualify(inner.func) in _NONE_SAFE_TRANSFORMS
        ):
            _follow_none_safe(model, inner, flow, apply)
            return
    elif isinstance(expr, (cst.List, cst.Tuple)):
        for part in elements(expr):
            _follow(model, part, flow, apply)
        return
    elif isinstance(expr, cst.Name):
        defs = model.defs_of(expr)
        if not defs:
            flow.opaque = True
        for d in defs:
            _follow_definition(model, d, flow, apply)
        return
    flow.opaque = True


def _follow_none_safe(
    model: FileModel, call: cst.Call, flow: GradientFlow, apply: ApplyCall
) -> None:
    first = argument_value(call, 0, "t_list")
    if first is None:
        flow.opaque = True
    else:
        _follow(model, first, flow, apply)


def _follow_definition(model: FileModel, d: Def, flow: GradientFlow, apply: ApplyCall) -> None:
    if d in flow.definitions:
        return
    flow.definitions.add(d)
    if d.scope is not apply.scope or d.value is None:
        flow.opaque = True
    elif d.kind is DefKind.ASSIGN:
        _follow(model, d.value, flow, apply)
    elif d.kind is DefKind.UNPACK and isinstance(d.value, cst.Call):
        gradient = _gradient_call(model, d.value)
        if gradient is not None:
            flow.origins.append(gradient)
        elif model.imports.qualify(d.value.func) in _NONE_SAFE_TRANSFORMS and d.unpack_index[
            :1
        ] == (0,):
            _follow_none_safe(model, d.value, flow, apply)
        else:
            flow.opaque = True
    else:
        flow.opaque = True


def _gradient_call(model: FileModel, node: cst.Call) -> TapeCall | None:
    call = model.tape_call_at(node)
    return call if call is not None and call.method == "gradient" else None


def _is_first_item(subscript: cst.Subscript) -> bool:
    if len(subscript.slice) != 1:
        return False
    index = subscript.slice[0].slice
    return (
        isinstance(index, cst.Index)
        and isinstance(index.value, cst.Integer)
        and (index.value.value == "0")
    )


def handles_none(model: FileModel, flow: GradientFlow) -> bool:
    """Whether None gradients are dealt with between the gradient calls and the apply call:
    `unconnected_gradients=ZERO`, or a None test on the gradients or on a loop/comprehension
    variable that iterates over them (a filter, a replacement, a check that raises or logs)."""
    for origin in flow.origins:
        unconnected = argument_value(origin.node, 3, "unconnected_gradients")
        if unconnected is not None and _means_zero(unconnected):
            return True
    gradient_defs = set(flow.definitions)
    for origin in flow.origins:
        gradient_defs.update(model.defs_by_stmt.get(origin.stmt, []))
    scopes = {origin.scope for origin in flow.origins}
    for check in (c for scope in scopes for c in model.none_checks_in(scope)):
        for d in model.defs_of(check.subject):
            if d in gradient_defs:
                return True
            if d.kind in (DefKind.FOR, DefKind.COMP) and d.value is not None:
                iterated = {i for name in names_in(d.value) for i in model.defs_of(name)}
                if iterated & gradient_defs:
                    return True
    return False


def _means_zero(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.Attribute):
        return expr.attr.value == "ZERO"
    if isinstance(expr, cst.SimpleString):
        return expr.evaluated_value.lower() == "zero"
    return False
