"""Per-gradient transforms over a raw gradient list, and whether they are guarded against None.

A transform is an op applied to each gradient of a list that comes straight from
`tape.gradient` (through the paths `gradients.gradients_of` follows): in a comprehension
(`[tf.clip_by_norm(g, 1.0) for g in grads]`), a `for` loop over the list (also over
`zip(grads, variables)` or `enumerate(grads)`), or a lambda mapped over it
(`tf.nest.map_structure(lambda g: g / n, grads)`, which calls it with None too, or `map`).
The op is arithmetic on the gradient (`g * scale`) or a TensorFlow / Keras call that takes
it (`tf.clip_by_norm(g, c)`, `tf.math.l2_normalize(g)`); both raise on None (so do
`tf.identity` and `tf.convert_to_tensor`, measured on TensorFlow 2.21). A call of a
function TensorFlow does not define (`helper_transforms` asks the project's summaries about
those), building a tuple `(g, v)`, `tf.clip_by_global_norm` or a `tf.nest` function (both
None-safe) is not one, and neither is an op inside a `try`. The list is raw as `raw_list`
says: not one gradient picked out of it, nor its pairs. A TensorFlow op mapped over the
list as a function reference (`tf.nest.map_structure(tf.add, grads, accumulated)`) is one
too.

Guarded means: the gradients come from `unconnected_gradients=ZERO` (never None), every
source is named and reaches the target (`tape.gradient(loss, [w1, b1])` with a loss computed
from both: no gradient can be None), a None test
on the gradients or on the loop variable exists (`if g is not None`, `None if g is None else
...`, `if g is None: continue`, a check that raises), or a test of the loop variable selects
the branch the op runs in (`isinstance(g, tf.IndexedSlices)`).

Decided: a transform that runs only for variables a test picks (`if "bias" in v.name:
g = g * 2`, a comprehension filtered on the variable, `g * m if v.name in multipliers else
g`) is not a transform of the raw list. The author singled out variables they know, which
the loss reaches (layer-wise learning-rate multipliers, weight-decay exclusions); their
None is a wiring change the author would see first. A transform of every gradient after a
test that only skips some (`if v.name in frozen: continue`) is still one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import libcst as cst

from tapelint.semantic.file_model.children import child_nodes
from tapelint.semantic.file_model.expressions import (
    argument_value,
    names_in,
    statements,
)
from tapelint.semantic.file_model.model import Def, DefKind, FileModel, FrameKind, Scope, TapeCall
from tapelint.semantic.flow.differentiability import no_gradient_lost_silently
from tapelint.semantic.gradient_routes.gradients import GradientFlow, gradients_of, handles_none
from tapelint.semantic.project_model.names import is_tensorflow

_NONE_SAFE = frozenset({"tensorflow.clip_by_global_norm"})
_MAPPERS = frozenset({"tensorflow.nest.map_structure"})
_NEST = "tensorflow.nest."
_ITERATION_WRAPPERS = frozenset({"list", "tuple", "iter", "reversed"})
_VARIABLE_LISTS = frozenset({"trainable_variables", "trainable_weights", "variables", "weights"})


@dataclass(frozen=True)
class Transform:
    node: cst.BaseExpression  # the op that raises on a None gradient
    origin: TapeCall  # the gradient call the list comes from
    variable: str  # the loop variable that holds one gradient


def unguarded_transforms(model: FileModel) -> list[Transform]:
    found: list[Transform] = []
    for defs_by_name in model.scope_defs.values():
        for defs in defs_by_name.values():
            for d in defs:
                transform = _unguarded(model, d)
                if transform is not None:
                    found.append(transform)
    found += _unguarded_maps(model)
    return found


def _unguarded_maps(model: FileModel) -> list[Transform]:
    """`tf.nest.map_structure(lambda g: g * s, grads)` and `map(lambda g: ..., grads)`: the
    function is called with each gradient, None included. Only statements that read a name
    bound to a gradient call's result are searched."""
    gradient_defs = {
        d for call in model.gradient_calls for d in model.defs_by_stmt.get(call.stmt, [])
    }
    if not gradient_defs:
        return []
    lambdas: dict[cst.CSTNode, Scope] = {
        scope.node: scope for scope in model.scopes if isinstance(scope.node, cst.Lambda)
    }
    found: list[Transform] = []
    searched: set[int] = set()
    for use in list(model.uses_by_node.values()):
        if id(use.stmt) in searched or not use.defs & gradient_defs:
            continue
        searched.add(id(use.stmt))
        for site in model.calls_in(use.stmt):
            transform = _unguarded_map(model, site.node, use.scope, lambdas)
            if transform is not None:
                found.append(transform)
    return found


def _unguarded_map(
    model: FileModel, call: cst.Call, scope: Scope, lambdas: dict[cst.CSTNode, Scope]
) -> Transform | None:
    if not is_mapping(model, call):
        return None
    positional = mapped_arguments(call)
    if raises_on_none(model, positional[0]):
        # `tf.nest.map_structure(tf.add, grads, accumulated)`: the op itself is mapped.
        return _mapped_op(model, call, positional[1:], scope)
    found = mapped_lambda_op(model, call, scope, lambdas, lambda flow: raw_list(model, flow))
    if found is None:
        return None
    op, flow, variable = found
    return Transform(op, flow.origins[0], variable)


def is_mapping(model: FileModel, call: cst.Call) -> bool:
    """`tf.nest.map_structure(f, s, ...)` or the builtin `map(f, s, ...)`: `f` is called with
    each element of the structures, None included."""
    func = call.func
    builtin_map = isinstance(func, cst.Name) and func.value == "map" and not model.defs_of(func)
    if not builtin_map and model.imports.qualify(func) not in _MAPPERS:
        return False
    return len(mapped_arguments(call)) >= 2


def mapped_arguments(call: cst.Call) -> list[cst.BaseExpression]:
    """A mapping call's positional arguments: the function, then the structures."""
    return [arg.value for arg in call.args if arg.keyword is None and not arg.star]


def mapped_lambda_op(
    model: FileModel,
    call: cst.Call,
    scope: Scope,
    lambdas: dict[cst.CSTNode, Scope],
    accepted: Callable[[GradientFlow], bool],
    *,
    summary: bool = False,
) -> tuple[cst.BaseExpression, GradientFlow, str] | None:
    """The first unguarded op of the lambda a mapping call (in `scope`) maps, on a
    parameter whose structure's flow (`gradients_of`, with `summary`) is `accepted`: the
    op, that flow, and the parameter's name."""
    positional = mapped_arguments(call)
    function = positional[0]
    if not isinstance(function, cst.Lambda):
        return None
    parameters = function.params.params
    lambda_scope = lambdas.get(function)
    if lambda_scope is None or len(parameters) < len(positional) - 1:
        return None
    for parameter, structure in zip(parameters, positional[1:], strict=False):
        flow = gradients_of(model, structure, scope, summary=summary)
        if not accepted(flow):
            continue
        defs = model.scope_defs[lambda_scope].get(parameter.name.value, [])
        if len(defs) != 1 or none_tested(model, defs[0]):
            continue
        tests = list(tests_in(function.body))
        if any(defs[0] in model.defs_of(name) for test in tests for name in names_in(test)):
            continue
        op = first_op_on(model, function.body, defs[0])
        if op is not None:
            return op, flow, parameter.name.value
    return None


def _mapped_op(
    model: FileModel, call: cst.Call, structures: list[cst.BaseExpression], scope: Scope
) -> Transform | None:
    """A TensorFlow op mapped over a raw gradient list: it is called with each None."""
    for structure in structures:
        flow = gradients_of(model, structure, scope)
        if raw_list(model, flow):
            return Transform(call, flow.origins[0], "g")
    return None


def _unguarded(model: FileModel, d: Def) -> Transform | None:
    """The transform of the gradient that loop variable `d` holds, if it is unguarded."""
    indexed = indexed_list(model, d)
    listed = indexed or walked_list(d)
    if listed is None:
        return None
    flow = gradients_of(model, listed, d.scope)
    if not raw_list(model, flow):
        return None
    op = unguarded_loop_op(model, d)
    if op is None:
        return None
    return Transform(op, flow.origins[0], f"{indexed.value}[{d.name}]" if indexed else d.name)


def indexed_list(model: FileModel, d: Def) -> cst.Name | None:
    """`grads` for the index of `for i in range(len(grads))`: the loop reads each gradient
    as `grads[i]` (and may rewrite it in place, `grads[i] = tf.clip_by_norm(grads[i], c)`)."""
    if d.kind is not DefKind.FOR or d.unpack_index or not isinstance(d.target, cst.Name):
        return None
    ranged = _builtin_call(model, d.value, "range")
    if ranged is None or len(ranged.args) != 1:
        return None
    measured = _builtin_call(model, ranged.args[0].value, "len")
    if measured is None or len(measured.args) != 1:
        return None
    listed = measured.args[0].value
    return listed if isinstance(listed, cst.Name) else None


def _builtin_call(model: FileModel, expr: cst.BaseExpression | None, name: str) -> cst.Call | None:
    """`expr` when it calls the builtin `name` (not rebound here) with positional arguments."""
    if (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Name)
        and expr.func.value == name
        and not model.defs_of(expr.func)
        and all(arg.keyword is None and not arg.star for arg in expr.args)
    ):
        return expr
    return None


def walked_list(d: Def) -> cst.BaseExpression | None:
    """The list whose elements loop (or comprehension) variable `d` takes one by one."""
    if d.kind not in (DefKind.COMP, DefKind.FOR) or d.value is None:
        return None
    if not isinstance(d.target, cst.Name):
        return None
    return _iterated_list(d.value, d.unpack_index)


def raw_list(model: FileModel, flow: GradientFlow) -> bool:
    """Whether `flow` is a raw gradient list of this file's gradient calls, one gradient per
    source, that may hold None: every path followed, the list itself (not one gradient of
    it, not its pairs), and no None handling on the way."""
    if flow.opaque or not flow.origins or flow.repackaged:
        return False
    if not all(_sources_are_a_list(model, origin) for origin in flow.origins):
        return False
    return not _cannot_be_none(model, flow)


def unguarded_loop_op(model: FileModel, d: Def) -> cst.BaseExpression | None:
    """The first op that loop variable `d` goes through with no None guard: no None test
    of it, no test reading it in the loop, and not only for variables a test picks."""
    if none_tested(model, d):
        return None
    loop = _loop_body(d)
    if loop is None:
        return None
    body, filters = loop
    tests = [*filters, *(test for part in body for test in tests_in(part))]
    if any(d in model.defs_of(name) for test in tests for name in names_in(test)):
        return None
    selectors = _paired_variables(model, d)
    if any(_reads(model, test, selectors) for test in filters):
        return None
    for part in body:
        op = first_op_on(model, part, d, selectors)
        if op is not None:
            return op
    return None


def _paired_variables(model: FileModel, d: Def) -> frozenset[Def]:
    """The other names the loop binds along with the gradient: `v` in
    `for g, v in zip(grads, variables)`, `i` in `enumerate(grads)`."""
    return frozenset(
        other
        for others in model.scope_defs[d.scope].values()
        for other in others
        if other is not d and other.kind is d.kind and other.value is d.value
    )


def _reads(model: FileModel, test: cst.BaseExpression, defs: frozenset[Def]) -> bool:
    return any(defs & set(model.defs_of(name)) for name in names_in(test))


def _cannot_be_none(model: FileModel, flow: GradientFlow) -> bool:
    """None is handled on the way, or no gradient can be None: each gradient call's sources
    are named one by one and the target depends on all of them (`[w1, b1, w2, b2]`), or it
    has one source, whose None gradient leaves the step nothing to train and raises at the
    first op anyway (`[-g for g in tape.gradient(loss, [patch])]`)."""
    return handles_none(model, flow) or all(
        no_gradient_lost_silently(model, origin) for origin in flow.origins
    )


def _sources_are_a_list(model: FileModel, origin: TapeCall) -> bool:
    """Whether the gradient call returns a list: its sources are a list or tuple, a model's
    variables, a sum of lists, or a name bound to one (or a parameter). For one tensor or
    variable it returns one gradient, and iterating over it walks the tensor's rows."""
    sources = argument_value(origin.node, 1, "sources")
    return sources is not None and _is_list(model, sources, 0)


def _is_list(model: FileModel, expr: cst.BaseExpression, depth: int) -> bool:
    if isinstance(expr, (cst.List, cst.Tuple, cst.ListComp)):
        return True
    if isinstance(expr, cst.Attribute):
        return expr.attr.value in _VARIABLE_LISTS
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
        return _is_list(model, expr.left, depth + 1) or _is_list(model, expr.right, depth + 1)
    if isinstance(expr, cst.Name) and depth < 4:
        defs = model.defs_of(expr)
        return bool(defs) and all(
            d.kind is DefKind.PARAM
            or (
                d.kind is DefKind.ASSIGN
                and d.value is not None
                and _is_list(model, d.value, depth + 1)
            )
            for d in defs
        )
    return False


def _iterated_list(
    iterated: cst.BaseExpression, index: tuple[int, ...]
) -> cst.BaseExpression | None:
    """Which list a loop variable walks: `grads` for `g in grads`, `g, v in zip(grads, vs)`
    (position 0) and `i, g in enumerate(grads)`."""
    while (
        isinstance(iterated, cst.Call)
        and isinstance(iterated.func, cst.Name)
        and iterated.func.value in _ITERATION_WRAPPERS
        and len(iterated.args) == 1
    ):
        iterated = iterated.args[0].value
    if not index:
        if (
            isinstance(iterated, cst.Call)
            and isinstance(iterated.func, cst.Name)
            and iterated.func.value in ("zip", "enumerate")
        ):
            return None
        return iterated
    if len(index) != 1 or not isinstance(iterated, cst.Call):
        return None
    func = iterated.func
    args = iterated.args
    if any(a.keyword is not None or a.star for a in args) or not isinstance(func, cst.Name):
        return None
    if func.value == "zip" and index[0] < len(args):
        return args[index[0]].value
    if func.value == "enumerate" and index[0] == 1 and len(args) == 1:
        return args[0].value
    return None


def _loop_body(d: Def) -> tuple[list[cst.CSTNode], list[cst.BaseExpression]] | None:
    """The code that runs once per element, and the comprehension's filters: a
    comprehension's element, or a `for` statement's body."""
    if d.kind is DefKind.COMP:
        frame = d.ctx[-1] if d.ctx else None
        if frame is None or frame.kind is not FrameKind.COMPREHENSION:
            return None
        comprehension = frame.node
        if not isinstance(comprehension, (cst.BaseSimpleComp, cst.DictComp)):
            return None  # not taken: the builder gives a comprehension frame its comprehension
        parts: list[cst.CSTNode] = []
        if isinstance(comprehension, cst.DictComp):
            parts += [comprehension.key, comprehension.value]
        else:
            parts.append(comprehension.elt)
        filters: list[cst.BaseExpression] = []
        clause: cst.CompFor | None = comprehension.for_in
        while clause is not None:
            filters += [condition.test for condition in clause.ifs]
            clause = clause.inner_for_in
        return parts, filters
    if isinstance(d.stmt, cst.For):
        return list(statements(d.stmt.body)), []
    return None


def none_tested(model: FileModel, d: Def) -> bool:
    return any(d in model.defs_of(check.subject) for check in model.none_checks_in(d.scope))


def tests_in(node: cst.CSTNode) -> Iterator[cst.BaseExpression]:
    """The tests in `node` (`if`, `while`, conditional expressions, `assert`): when one reads
    the loop variable, the code it guards may never see a None."""
    if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
        return
    if isinstance(node, (cst.If, cst.While, cst.IfExp, cst.Assert, cst.CompIf)):
        yield node.test
    for child in child_nodes(node):
        yield from tests_in(child)


def first_op_on(
    model: FileModel, node: cst.CSTNode, d: Def, selectors: frozenset[Def] = frozenset()
) -> cst.BaseExpression | None:
    """The first (outermost, then leftmost) op in `node` that takes the loop variable itself
    as an operand, outside the branches of a test that reads one of `selectors` (the
    variable paired with the gradient: `if "bias" in v.name: g = g * 2` transforms the
    gradients of the variables it picks, not the raw list)."""
    if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda, cst.Try)):
        return None  # a `try` may catch what a None raises
    if isinstance(node, (cst.If, cst.IfExp)) and _reads(model, node.test, selectors):
        return None
    if isinstance(node, cst.BinaryOperation) and (
        _is_variable(model, node.left, d) or _is_variable(model, node.right, d)
    ):
        return node
    if (
        isinstance(node, cst.UnaryOperation)
        and not isinstance(node.operator, cst.Not)
        and _is_variable(model, node.expression, d)
    ):
        return node
    if (
        isinstance(node, cst.Call)
        and raises_on_none(model, node.func)
        and any(_is_variable(model, arg.value, d) for arg in node.args)
    ):
        return node
    for child in child_nodes(node):
        found = first_op_on(model, child, d, selectors)
        if found is not None:
            return found
    return None


def raises_on_none(model: FileModel, func: cst.BaseExpression) -> bool:
    """A TensorFlow or Keras function (not `tf.clip_by_global_norm`, nor `tf.nest`'s, which
    take None as a leaf of a structure): it raises on None."""
    qualified = model.imports.qualify(func)
    if qualified is None or qualified in _NONE_SAFE or qualified.startswith(_NEST):
        return False
    return is_tensorflow(qualified) or qualified.startswith("keras.")


def _is_variable(model: FileModel, expr: cst.BaseExpression, d: Def) -> bool:
    """`expr` is the gradient `d` holds: the loop variable, or `grads[i]` for the index
    of `for i in range(len(grads))`."""
    if isinstance(expr, cst.Name):
        return d in model.defs_of(expr)
    if not isinstance(expr, cst.Subscript) or not isinstance(expr.value, cst.Name):
        return False
    indexed = indexed_list(model, d)
    key = expr.slice[0].slice if len(expr.slice) == 1 else None
    return (
        indexed is not None
        and expr.value.value == indexed.value
        and isinstance(key, cst.Index)
        and isinstance(key.value, cst.Name)
        and d in model.defs_of(key.value)
    )
