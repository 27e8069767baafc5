"""Which parameters of a function go through an op that raises on None, with no None guard:
the fact a caller needs to know that handing raw gradients to the function raises (TAP403).

Two shapes, judged as `transforms` judges a transform over a gradient list in place:

- each element: a loop or comprehension walks the parameter (`def scale(grads, s): return
  [g * s for g in grads]`, also `zip(grads, self.accumulated)` or `enumerate(grads)`), or
  `tf.nest.map_structure` / `map` maps a lambda over it, and the element goes through an
  op with no None test on it. `scale(grads)` then raises on the first None gradient.
- the parameter itself: it is an operand of arithmetic or an argument of a TensorFlow call
  (`def add_noise(g): return g + tf.random.normal(tf.shape(g))`) in the function's own
  body, which tests it nowhere (`None if g is None else ...`, `isinstance(g, ...)`) and
  not inside a `try`. `tf.nest.map_structure(add_noise, grads)` calls it with each
  gradient, None included. (Handed a whole list, `g * 2` repeats it and `g + h` joins
  lists: nothing is claimed of a direct call then.)

A parameter the function filters first (`[g for g in grads if g is not None]`) or tests for
None anywhere in it has no fact. An op inside a nested function or lambda is not the
function's own (a lambda mapped over the parameter is the exception above).
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from tapelint.analysis.file_model.expressions import names_in, statements
from tapelint.analysis.file_model.model import Def, DefKind, FileModel, Scope
from tapelint.analysis.gradient_routes.gradients import GradientFlow, gradients_of, handles_none
from tapelint.analysis.gradient_routes.transforms import (
    first_op_on,
    is_mapping,
    mapped_lambda_op,
    none_tested,
    tests_in,
    unguarded_loop_op,
    walked_list,
)


@dataclass(frozen=True)
class ParameterTransform:
    param: int  # the parameter's position
    each: bool  # each of its elements (True) or the parameter itself (False)
    op: cst.BaseExpression  # the first op that raises on None


def parameter_transforms(
    model: FileModel, scope: Scope, calls: list[cst.Call]
) -> list[ParameterTransform]:
    """The transforms of function `scope`'s parameters; `calls`: the calls it makes itself
    (where a mapping call may be)."""
    function = scope.node
    if not isinstance(function, cst.FunctionDef):
        return []
    found: dict[tuple[int, bool], ParameterTransform] = {}
    for defs in model.scope_defs.get(scope, {}).values():
        for d in defs:
            for transform in _of_loop(model, d, scope):
                found.setdefault((transform.param, True), transform)
    for call in calls:
        for transform in _of_mapping(model, call, scope):
            found.setdefault((transform.param, True), transform)
    for index, d in enumerate(_parameters(model, scope, function)):
        if d is not None:
            op = _own_op(model, function, d)
            if op is not None:
                found.setdefault((index, False), ParameterTransform(index, False, op))
    return sorted(found.values(), key=lambda t: (t.param, not t.each))


def _of_loop(model: FileModel, d: Def, scope: Scope) -> list[ParameterTransform]:
    listed = walked_list(d)
    if listed is None:
        return []
    flow = gradients_of(model, listed, scope, summary=True)
    param = _only_parameter(model, flow)
    if param is None:
        return []
    op = unguarded_loop_op(model, d)
    return [ParameterTransform(param, True, op)] if op is not None else []


def _of_mapping(model: FileModel, call: cst.Call, scope: Scope) -> list[ParameterTransform]:
    if not is_mapping(model, call):
        return []
    lambdas = {s.node: s for s in model.scopes if s.parent is scope}
    found = mapped_lambda_op(
        model,
        call,
        scope,
        lambdas,
        lambda flow: _only_parameter(model, flow) is not None,
        summary=True,
    )
    if found is None:
        return []
    op, flow, _ = found
    param = _only_parameter(model, flow)
    return [ParameterTransform(param, True, op)] if param is not None else []


def _only_parameter(model: FileModel, flow: GradientFlow) -> int | None:
    """The one parameter `flow` passes on as it is (the list itself, every path followed,
    no None handling on the way), if that is all it holds."""
    if flow.opaque or flow.repackaged or flow.origins or flow.received or flow.calls:
        return None
    if len(flow.params) != 1 or handles_none(model, flow):
        return None
    return next(iter(flow.params))


def _parameters(model: FileModel, scope: Scope, function: cst.FunctionDef) -> list[Def | None]:
    """Each parameter's definition, in order (None for one the model did not record)."""
    params = function.params
    defs = model.scope_defs.get(scope, {})
    found: list[Def | None] = []
    for param in (*params.posonly_params, *params.params, *params.kwonly_params):
        found.append(
            next(
                (
                    d
                    for d in defs.get(param.name.value, [])
                    if d.kind is DefKind.PARAM and d.target is param.name
                ),
                None,
            )
        )
    return found


def _own_op(model: FileModel, function: cst.FunctionDef, d: Def) -> cst.BaseExpression | None:
    """The first op of the function's own body on parameter `d` itself, when nothing in the
    body tests it."""
    if none_tested(model, d):
        return None
    body = statements(function.body)
    tests = [test for stmt in body for test in tests_in(stmt)]
    if any(d in model.defs_of(name) for test in tests for name in names_in(test)):
        return None
    for stmt in body:
        op = first_op_on(model, stmt, d)
        if op is not None:
            return op
    return None
