"""Which parameters of a function go through an op that raises on None, with no None guard:
the fact a caller needs to know that handing raw gradients to the function raises.

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
from weakref import WeakKeyDictionary

import libcst as cst

from tapelint.semantic.file_model.expressions import names_in
from tapelint.semantic.file_model.model import Def, DefKind, FileModel, Scope, Use
from tapelint.semantic.gradient_routes.gradients import GradientFlow, gradients_of, handles_none
from tapelint.semantic.gradient_routes.transforms import (
    first_op_on,
    is_mapping,
    mapped_arguments,
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
    model: FileModel, scope: Scope, calls: list[cst.Call], *, itself: bool
) -> list[ParameterTransform]:
    """The transforms of function `scope`'s parameters; `calls`: the calls it makes itself
    (where a mapping call may be); with `itself`, of the parameters themselves too (what
    only a function mapped over gradients needs: `mapped_functions`)."""
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
    for index, param in enumerate(_parameters(model, scope, function) if itself else ()):
        if param is not None:
            op = _own_op(model, function, param)
            if op is not None:
                found.setdefault((index, False), ParameterTransform(index, False, op))
    return sorted(found.values(), key=lambda t: (t.param, not t.each))


def mapped_functions(model: FileModel) -> frozenset[str]:
    """The names of the functions this module maps (`tf.nest.map_structure(add_noise, g)`,
    `map(self.scale, g)`): only they need the facts of their parameters themselves in the
    module's own summary. (A function of another module is read again for them when a
    check asks: `tapelint.project.transformers`.)"""
    found: set[str] = set()
    for site in model.calls:
        if not is_mapping(model, site.node):
            continue
        function = mapped_arguments(site.node)[0]
        if isinstance(function, cst.Name):
            found.add(function.value)
        elif isinstance(function, cst.Attribute):
            found.add(function.attr.value)
    return frozenset(found)


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
    body tests it. Only the statements that read it are looked at (a test of it reads it),
    and of a compound statement only its header: its body's statements read it themselves."""
    if none_tested(model, d):
        return None
    statements = _reading(model, d)
    headers = [header for stmt in statements for header in _headers(stmt)]
    tests = [stmt.test for stmt in statements if isinstance(stmt, (cst.If, cst.While))]
    tests += [test for header in headers for test in tests_in(header)]
    if any(d in model.defs_of(name) for test in tests for name in names_in(test)):
        return None
    for stmt in statements:
        if _in_try(model, stmt, function):
            continue  # a `try` may catch what a None raises
        for header in _headers(stmt):
            op = first_op_on(model, header, d)
            if op is not None:
                return op
    return None


def _reading(model: FileModel, d: Def) -> list[cst.CSTNode]:
    """The statements of `d`'s own scope that read parameter `d`, in the walk's order."""
    found: dict[cst.CSTNode, None] = {}
    for use in _uses_of_parameters(model).get(d, []):
        if use.scope is d.scope:
            found.setdefault(use.stmt)
    return list(found)


def _headers(stmt: cst.CSTNode) -> list[cst.CSTNode]:
    """What of a statement runs where it stands: a simple statement, or a compound
    statement's test, iterable or items (its blocks are statements of their own)."""
    if isinstance(stmt, (cst.If, cst.While)):
        return [stmt.test]
    if isinstance(stmt, cst.For):
        return [stmt.iter]
    if isinstance(stmt, cst.With):
        return [item.item for item in stmt.items]
    if isinstance(stmt, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
        return [stmt]
    return []


def _in_try(model: FileModel, stmt: cst.CSTNode, function: cst.FunctionDef) -> bool:
    current: cst.CSTNode = stmt
    while current is not function:
        parent = model.stmt_parent.get(current)
        if parent is None:
            return False
        current = parent[0]
        if isinstance(current, (cst.Try, cst.TryStar)):
            return True
    return False


_USES: WeakKeyDictionary[FileModel, dict[Def, list[Use]]] = WeakKeyDictionary()


def _uses_of_parameters(model: FileModel) -> dict[Def, list[Use]]:
    """Each parameter's uses, from the model's index of uses (one pass per module)."""
    found = _USES.get(model)
    if found is None:
        found = {}
        for use in model.uses_by_node.values():
            for d in use.defs:
                if d.kind is DefKind.PARAM:
                    found.setdefault(d, []).append(use)
        for uses in found.values():
            uses.sort(key=lambda use: use.order)
        _USES[model] = found
    return found
