"""Where the gradients of a `tape.gradient` call go, and whether None is handled on the way."""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from tapelint.analysis.expressions import argument_value, elements, names_in
from tapelint.analysis.model import ApplyCall, Def, DefKind, FileModel, Scope, TapeCall

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
    if argument is None:
        return GradientFlow(opaque=True)
    return gradients_of(model, argument, apply.scope)


def gradients_of(
    model: FileModel, expr: cst.BaseExpression, scope: Scope, *, elementwise: bool = False
) -> GradientFlow:
    """The gradient calls whose gradients `expr` (evaluated in `scope`) holds, one for one.

    Followed: plain assignments, `zip` (its first argument), `list`/`tuple`, the None-safe
    `tf.clip_by_global_norm`; with `elementwise`, also a comprehension that transforms each
    gradient without filtering (`[tf.clip_by_norm(g, 1.0) for g in grads]`), which keeps
    the gradients aligned with their sources but not their None-ness.
    """
    flow = GradientFlow()
    _follow(model, expr, flow, _Walk(scope, elementwise))
    return flow


@dataclass(frozen=True)
class _Walk:
    scope: Scope
    elementwise: bool


def _follow(model: FileModel, expr: cst.BaseExpression, flow: GradientFlow, walk: _Walk) -> None:
    if isinstance(expr, cst.Call):
        gradient = _gradient_call(model, expr)
        if gradient is not None:
            flow.origins.append(gradient)
            return
        func = expr.func
        if isinstance(func, cst.Name) and func.value in ("zip", *_PASS_THROUGH_BUILTINS):
            first = argument_value(expr, 0, None)
            if first is not None:
                _follow(model, first, flow, walk)
                return
        if model.imports.qualify(func) in _NONE_SAFE_TRANSFORMS:
            _follow_none_safe(model, expr, flow, walk)
            return
    elif isinstance(expr, cst.Subscript) and _is_first_item(expr):
        inner = expr.value
        if (
            isinstance(inner, cst.Call)
            and model.imports.qualify(inner.func) in _NONE_SAFE_TRANSFORMS
        ):
            _follow_none_safe(model, inner, flow, walk)
            return
    elif isinstance(expr, (cst.List, cst.Tuple)):
        for part in elements(expr):
            _follow(model, part, flow, walk)
        return
    elif walk.elementwise and isinstance(expr, (cst.ListComp, cst.GeneratorExp)):
        iterated = _transformed_list(expr)
        if iterated is not None:
            _follow(model, iterated, flow, walk)
            return
    elif isinstance(expr, cst.Name):
        defs = model.defs_of(expr)
        if not defs:
            flow.opaque = True
        for d in defs:
            _follow_definition(model, d, flow, walk)
        return
    flow.opaque = True


def _follow_none_safe(model: FileModel, call: cst.Call, flow: GradientFlow, walk: _Walk) -> None:
    first = argument_value(call, 0, "t_list")
    if first is None:
        flow.opaque = True
    else:
        _follow(model, first, flow, walk)


def _follow_definition(model: FileModel, d: Def, flow: GradientFlow, walk: _Walk) -> None:
    if d in flow.definitions:
        return
    flow.definitions.add(d)
    if d.scope is not walk.scope or d.value is None:
        flow.opaque = True
    elif d.kind is DefKind.ASSIGN:
        _follow(model, d.value, flow, walk)
    elif d.kind is DefKind.UNPACK and isinstance(d.value, cst.Call):
        gradient = _gradient_call(model, d.value)
        if gradient is not None:
            flow.origins.append(gradient)
        elif model.imports.qualify(d.value.func) in _NONE_SAFE_TRANSFORMS and d.unpack_index[
            :1
        ] == (0,):
            _follow_none_safe(model, d.value, flow, walk)
        else:
            flow.opaque = True
    else:
        flow.opaque = True


def _transformed_list(comprehension: cst.ListComp | cst.GeneratorExp) -> cst.BaseExpression | None:
    """`grads` in `[f(g) for g in grads]`: one unfiltered clause over a plain loop variable."""
    clause = comprehension.for_in
    if clause.ifs or clause.inner_for_in is not None or not isinstance(clause.target, cst.Name):
        return None
    return clause.iter


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


@dataclass(frozen=True)
class Pairing:
    """The gradients and the variables an apply call zips together."""

    gradients: cst.BaseExpression
    variables: cst.BaseExpression


def applied_pairing(model: FileModel, apply: ApplyCall) -> Pairing | None:
    """What `apply` pairs: `apply_gradients(zip(grads, variables))` (also through `list`, a
    name, or a comprehension that keeps each pair together, filtered or not) or Keras 3's
    `apply(grads, variables)`. None when the pairing is built some other way."""
    if apply.method == "apply":
        grads = argument_value(apply.node, 0, "grads")
        variables = argument_value(apply.node, 1, "trainable_variables")
        if grads is None or variables is None:
            return None
        return Pairing(grads, variables)
    pairs = argument_value(apply.node, 0, "grads_and_vars")
    return _pairing(model, pairs, apply.scope, set()) if pairs is not None else None


def _pairing(
    model: FileModel, expr: cst.BaseExpression, scope: Scope, seen: set[Def]
) -> Pairing | None:
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name):
        if expr.func.value == "zip":
            return _zip_pairing(expr)
        if expr.func.value in _PASS_THROUGH_BUILTINS and len(expr.args) == 1:
            return _pairing(model, expr.args[0].value, scope, seen)
        return None
    if isinstance(expr, (cst.ListComp, cst.GeneratorExp)):
        return _comprehension_pairing(expr)
    if isinstance(expr, cst.Name):
        defs = model.defs_of(expr)
        if len(defs) != 1:
            return None
        (d,) = defs
        if d in seen or d.kind is not DefKind.ASSIGN or d.scope is not scope or d.value is None:
            return None
        seen.add(d)
        return _pairing(model, d.value, scope, seen)
    return None


def _zip_pairing(call: cst.Call) -> Pairing | None:
    args = call.args
    if len(args) != 2 or any(a.keyword is not None or a.star for a in args):
        return None
    return Pairing(args[0].value, args[1].value)


def _comprehension_pairing(comprehension: cst.ListComp | cst.GeneratorExp) -> Pairing | None:
    """`[(f(g), v) for g, v in zip(grads, variables) if ...]`: each pair stays together."""
    clause = comprehension.for_in
    target, element = clause.target, comprehension.elt
    if (
        clause.inner_for_in is not None
        or not isinstance(clause.iter, cst.Call)
        or not (isinstance(clause.iter.func, cst.Name) and clause.iter.func.value == "zip")
        or not isinstance(target, cst.Tuple)
        or not isinstance(element, cst.Tuple)
        or len(target.elements) != 2
        or len(element.elements) != 2
    ):
        return None
    grad, var = (e.value for e in target.elements)
    first, second = (e.value for e in element.elements)
    if not (isinstance(grad, cst.Name) and isinstance(var, cst.Name)):
        return None
    if not (isinstance(second, cst.Name) and second.value == var.value):
        return None
    mentioned = {n.value for n in names_in(first)}
    if grad.value not in mentioned or var.value in mentioned:
        return None
    return _zip_pairing(clause.iter)


def swapped_pairing(model: FileModel, apply: ApplyCall) -> TapeCall | None:
    """The gradient call whose gradients `apply` receives in the variables' place, when the
    pair is written the wrong way round (`apply_gradients(zip(variables, grads))`): the
    second element comes from exactly one gradient call and the first from none."""
    pairing = applied_pairing(model, apply)
    if pairing is None:
        return None
    first = gradients_of(model, pairing.gradients, apply.scope, elementwise=True)
    if first.origins:
        return None
    second = gradients_of(model, pairing.variables, apply.scope, elementwise=True)
    origins = {origin.node: origin for origin in second.origins}
    if second.opaque or len(origins) != 1:
        return None
    (origin,) = origins.values()
    sources = argument_value(origin.node, 1, "sources")
    if sources is None or model.module.code_for_node(sources) != model.module.code_for_node(
        pairing.gradients
    ):
        return None
    return origin
