"""Where the gradients of a `tape.gradient` call go, and whether None is handled on the way.

A gradient list is followed through what repackages it without looking at its entries,
each of which keeps a None a None: names and assignments, unpacking (`g1, g2 = grads`),
slices and indexing (`grads[:n]`, `grads[i]`), `list(...)` / `tuple(...)`, list `+`,
`zip(grads, variables)` (its first argument) and pairs written out (`[(grads[0], v0)]`,
`[(g, v) for g, v in zip(grads, variables)]`), `tf.cond` whose branches are lambdas (the
flow of each branch's value: `tf.cond(p, lambda: grads, lambda: clipped)`; TensorFlow
returns a None entry of a branch's list as None, eager and in a `tf.function`), and calls
of functions whose summary says
what they return (`project_model.summaries`): helpers of the project that return raw
gradients or pass their argument through, and the library table's entries
(`tf.clip_by_global_norm`, `tf.nest.flatten`, TF-Agents' `clip_gradient_norms`).

A per-gradient comprehension (`[tf.clip_by_norm(g, 1.0) for g in grads]`) or a filter
ends that path: `transforms` judges the transform, and a filter is None handling. A name
bound on several paths is followed on each, so a transform or a filter on one branch leaves
the raw list reaching the apply on the other. Anything else on a path (an unknown function,
an attribute, a parameter) makes that path `opaque`, and an opaque flow is never reported;
but unknown does not erase what another branch certainly holds (`_join`): a raw branch
beside an unknown one is raw. A container a name holds is followed through what is written
into it (`flow.container_writes`: `grads[key] = ...`, `append`, `extend`), whole or one
item at a time (`grads[key]`).

In a summary (`summary=True`), a parameter is a place the flow comes from too (`params`),
and a call of a named function is kept as a symbolic `CallResult` for the project index
to resolve; in a check, the index answers for the callee at once (`external`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import libcst as cst

from tapelint.semantic.calls.callees import Callee, argument_for, callee_of, keyed_arguments
from tapelint.semantic.file_model.children import child_nodes
from tapelint.semantic.file_model.expressions import argument_value, elements, names_in
from tapelint.semantic.file_model.model import ApplyCall, Def, DefKind, FileModel, Scope, TapeCall
from tapelint.semantic.flow.container_writes import (
    Write,
    WriteKind,
    is_empty_container,
    subscript_key,
    writes_into,
)
from tapelint.semantic.project_model.names import is_gradient_tape
from tapelint.semantic.project_model.summaries import WHOLE, ProjectIndex, Site

_PASS_THROUGH_BUILTINS = frozenset({"list", "tuple"})
_COND = "tensorflow.cond"
_LIBRARY_ONLY = ProjectIndex()


@dataclass(frozen=True)
class PendingCall:
    """A call of a named function whose result part `part` the flow passes through, with
    the flows of its arguments (by position, "0", or keyword): resolved by the index."""

    callee: Callee
    part: str
    args: tuple[tuple[str, GradientFlow], ...]


@dataclass
class GradientFlow:
    """Where an expression's gradients come from, through repackaging only."""

    origins: list[TapeCall] = field(default_factory=list)  # gradient calls of this file
    # `tape.gradient(...)` on a tape the function receives as a parameter (`tape` in its
    # name, or annotated `tf.GradientTape`): raw gradients of the caller's tape.
    received: list[cst.Call] = field(default_factory=list)
    external: list[Site] = field(default_factory=list)  # raw gradients a callee returns
    params: set[int] = field(default_factory=set)  # summary: parameters passed through
    calls: list[PendingCall] = field(default_factory=list)  # summary: callees passed through
    definitions: set[Def] = field(default_factory=set)
    opaque: bool = False  # some path goes through something this analysis does not follow
    # Some path hands on something else than the gradient list itself: one gradient picked
    # out of it (`grads[0]`, `dw, db = grads`), whose rows a loop would walk, or its pairs
    # (`zip(grads, variables)`), whose elements are tuples. Neither is a list of gradients
    # that a helper or a mapped function gets one by one.
    repackaged: bool = False

    @property
    def is_raw(self) -> bool:
        """Gradients of a gradient call certainly reach here, and every path is followed."""
        return bool(self.origins or self.received or self.external) and not self.opaque

    def add(self, other: GradientFlow) -> None:
        self.origins += [o for o in other.origins if o not in self.origins]
        self.received += [c for c in other.received if c not in self.received]
        self.external += [s for s in other.external if s not in self.external]
        self.params |= other.params
        self.calls += other.calls
        self.definitions |= other.definitions
        self.opaque = self.opaque or other.opaque
        self.repackaged = self.repackaged or other.repackaged


def applied_gradients(model: FileModel, apply: ApplyCall, *, summary: bool = False) -> GradientFlow:
    keyword = "grads_and_vars" if apply.method == "apply_gradients" else "grads"
    argument = argument_value(apply.node, 0, keyword)
    if argument is None:
        return GradientFlow(opaque=True)
    pairs = apply.method == "apply_gradients"
    return gradients_of(model, argument, apply.scope, summary=summary, pairs=pairs)


def gradients_of(
    model: FileModel,
    expr: cst.BaseExpression,
    scope: Scope,
    *,
    elementwise: bool = False,
    summary: bool = False,
    pairs: bool = False,
) -> GradientFlow:
    """The gradient calls whose gradients `expr` (evaluated in `scope`) holds, one for one.

    With `elementwise`, a comprehension that transforms each gradient without filtering
    (`[tf.clip_by_norm(g, 1.0) for g in grads]`) is followed too: it keeps the gradients
    aligned with their sources but not their None-ness. With `pairs`, `expr` is a list of
    (gradient, variable) pairs, and only the gradient of each written-out pair is followed.
    """
    flow = GradientFlow()
    _follow(model, expr, flow, _Walk(scope, elementwise, summary, pairs, set()))
    return flow


def _certain(flow: GradientFlow) -> bool:
    """Every path of `flow` is followed, and it holds something: gradients, or (in a
    summary) a parameter or a callee's result."""
    return not flow.opaque and bool(
        flow.origins or flow.received or flow.external or flow.params or flow.calls
    )


def _join(flow: GradientFlow, branches: list[GradientFlow]) -> None:
    """Add what one of `branches` holds, whichever runs. Unknown does not erase what
    another branch certainly holds: when one branch is followed to its end with gradients
    in it, the branches that were not followed add only their definitions (so that a None
    check on them is still seen); otherwise every branch is added, unknown included."""
    keep = any(_certain(branch) for branch in branches)
    for branch in branches:
        if keep and branch.opaque:
            flow.definitions |= branch.definitions
        else:
            flow.add(branch)


@dataclass(frozen=True)
class _Walk:
    scope: Scope
    elementwise: bool
    summary: bool
    pairs: bool
    # The definitions and container writes being followed, from the walk's start to where
    # it is (also through the argument flows it computes): a name defined from itself
    # (`x = f(x)` in a loop) is not followed into itself again. Only the path counts, never
    # what another branch or another argument's flow followed before: what is found must
    # not depend on the order in which definitions are met.
    visiting: set[object]
    # What each definition holds, once followed without cutting a cycle short (a cut result
    # depends on the path that led there, so it is not kept): a name read on many paths is
    # followed once.
    memo: dict[tuple[object, ...], GradientFlow] = field(default_factory=dict)
    cuts: list[int] = field(default_factory=lambda: [0])

    def plain(self) -> _Walk:
        return replace(self, pairs=False)

    def argument(self) -> _Walk:
        return replace(self, elementwise=False, pairs=False)


def _follow(model: FileModel, expr: cst.BaseExpression, flow: GradientFlow, walk: _Walk) -> None:
    if isinstance(expr, cst.Call):
        _follow_call(model, expr, WHOLE, flow, walk)
    elif isinstance(expr, cst.Subscript):
        _follow_subscript(model, expr, flow, walk)
    elif isinstance(expr, (cst.List, cst.Tuple)):
        for part in elements(expr):
            if walk.pairs and isinstance(part, cst.Tuple) and len(part.elements) == 2:
                part = part.elements[0].value
            _follow(model, part, flow, walk.plain() if walk.pairs else walk)
    elif isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
        _follow(model, expr.left, flow, walk)
        _follow(model, expr.right, flow, walk)
    elif isinstance(expr, (cst.ListComp, cst.GeneratorExp)):
        _follow_comprehension(model, expr, flow, walk)
    elif isinstance(expr, cst.IfExp):
        _join(flow, [_branch(model, part, walk) for part in (expr.body, expr.orelse)])
    elif isinstance(expr, cst.Name):
        defs = model.defs_of(expr)
        if not defs:
            flow.opaque = True
        _join(flow, [_definition_flow(model, d, walk) for d in sorted(defs, key=_order)])
    else:
        flow.opaque = True


def _follow_call(
    model: FileModel, call: cst.Call, part: str, flow: GradientFlow, walk: _Walk
) -> None:
    # A part of a gradient call's result (`dw, db = tape.gradient(loss, [w, b])`) is one of
    # its gradients, raw as the list is.
    gradient = _gradient_call(model, call)
    if gradient is not None:
        flow.origins.append(gradient)
        flow.repackaged = flow.repackaged or part != WHOLE
        return
    func = call.func
    if part == WHOLE and model.imports.qualify(func) == _COND:
        _follow_cond(model, call, flow, walk)
        return
    if _on_received_tape(model, call):
        flow.received.append(call)
        return
    if isinstance(func, cst.Name) and is_builtin(model, func):
        if func.value == "zip" and part == WHOLE:
            first = argument_value(call, 0, None)
            if first is not None:
                flow.repackaged = True
                _follow(model, first, flow, walk.plain())
                return
        if func.value in _PASS_THROUGH_BUILTINS and len(call.args) == 1 and part == WHOLE:
            _follow(model, call.args[0].value, flow, walk)
            return
    callee = callee_of(model, call)
    if callee is None:
        flow.opaque = True
    elif walk.summary:
        arguments = tuple(
            (key, _argument_flow(model, arg.value, walk))
            for key, arg in keyed_arguments(call, callee)
        )
        flow.calls.append(PendingCall(callee, part, arguments))
    else:
        _resolve_call(model, call, callee, part, flow, walk)


def _follow_cond(model: FileModel, call: cst.Call, flow: GradientFlow, walk: _Walk) -> None:
    """`tf.cond(pred, lambda: a, lambda: b)` is `a` or `b`: each branch's value is followed
    where the lambda is (it reads the enclosing function's names as a closure does), and
    the two are joined as branches are. A branch that is not a lambda without parameters
    leaves the whole call unfollowed."""
    branches = []
    for position, keyword in ((1, "true_fn"), (2, "false_fn")):
        branch = argument_value(call, position, keyword)
        scope = _lambda_scope(model, branch)
        if scope is None:
            flow.opaque = True  # a function value: the call is not followed at all
            return
        assert isinstance(branch, cst.Lambda)
        branches.append(_branch(model, branch.body, replace(walk, scope=scope)))
    _join(flow, branches)


def _branch(model: FileModel, expr: cst.BaseExpression, walk: _Walk) -> GradientFlow:
    flow = GradientFlow()
    _follow(model, expr, flow, walk)
    return flow


def _lambda_scope(model: FileModel, branch: cst.BaseExpression | None) -> Scope | None:
    if not isinstance(branch, cst.Lambda) or _has_parameters(branch):
        return None
    return next((scope for scope in model.scopes if scope.node is branch), None)


def _has_parameters(function: cst.Lambda) -> bool:
    params = function.params
    listed = params.params or params.posonly_params or params.kwonly_params
    return bool(listed) or isinstance(params.star_arg, cst.Param) or params.star_kwarg is not None


def _argument_flow(model: FileModel, expr: cst.BaseExpression, walk: _Walk) -> GradientFlow:
    flow = GradientFlow()
    _follow(model, expr, flow, walk.argument())
    return flow


def _resolve_call(
    model: FileModel, call: cst.Call, callee: Callee, part: str, flow: GradientFlow, walk: _Walk
) -> None:
    """What the index says `callee` returns for `part`, its parameters mapped to the flows
    of the call's arguments."""
    index = model.index or _LIBRARY_ONLY
    returned = index.returns(callee.target, part)
    summary = index.function(callee.target)
    if returned is None or summary is None:
        flow.opaque = True
        return
    flow.external += [site for site in returned.raw if site not in flow.external]
    flow.opaque = flow.opaque or returned.opaque
    arguments = dict(keyed_arguments(call, callee))
    for param in returned.params:
        argument = argument_for(summary.params, param, arguments)
        if argument is None:
            flow.opaque = True
        else:
            _follow(model, argument.value, flow, walk.plain())


def _follow_subscript(
    model: FileModel, subscript: cst.Subscript, flow: GradientFlow, walk: _Walk
) -> None:
    """`grads[:n]`, `grads[i]` (one gradient, which may be None), and the first item of a
    call's result (`tf.clip_by_global_norm(grads, 1.0)[0]`)."""
    value = subscript.value
    index = _integer_index(subscript)
    if isinstance(value, cst.Call) and index is not None:
        _follow_call(model, value, str(index), flow, walk)
        return
    key = subscript_key(subscript)
    if isinstance(value, cst.Name) and key is not None:
        # One item of what the name holds: the items written into a container
        # (`grads[key] = tape.gradient(...)`), or an item of a list (`grads[i]`).
        defs = model.defs_of(value)
        if not defs:
            flow.opaque = True
        ordered = sorted(defs, key=_order)
        items = [_definition_flow(model, d, walk.plain(), key, item=True) for d in ordered]
        _join(flow, items)
        return
    if len(subscript.slice) == 1 and (
        index is not None or isinstance(subscript.slice[0].slice, cst.Slice)
    ):
        flow.repackaged = flow.repackaged or index is not None
        _follow(model, value, flow, walk.plain())
        return
    flow.opaque = True


def _follow_comprehension(
    model: FileModel,
    comprehension: cst.ListComp | cst.GeneratorExp,
    flow: GradientFlow,
    walk: _Walk,
) -> None:
    """A comprehension over a gradient list. Pairs kept together (`[(g, v) for g, v in
    zip(grads, variables)]`, also when a test on the variable leaves some out) pass the
    gradients through, and with `elementwise` so does a transform of each gradient. A
    filter of None (`if g is not None`) or a transform ends the path with nothing raw on it:
    the filter is None handling, and `transforms` judges the transform. Anything else is opaque."""
    clause = comprehension.for_in
    if clause.inner_for_in is not None:
        flow.opaque = True
        return
    gradient = _gradient_variable(comprehension)
    tests = [condition.test for condition in clause.ifs]
    tested = gradient is not None and any(
        gradient in {n.value for n in names_in(test)} for test in tests
    )
    if tested:
        if not all(_is_none_test(test, gradient) for test in tests if gradient in _names(test)):
            flow.opaque = True
        return  # a filter of None: nothing raw passes
    element = comprehension.elt
    if isinstance(element, cst.Name) and element.value == gradient and not tests:
        _follow(model, clause.iter, flow, walk.plain())  # `[g for g in grads]`
    elif walk.pairs and _keeps_pairs(comprehension):
        flow.repackaged = True
        _follow(model, clause.iter, flow, walk.plain())
    elif walk.elementwise and isinstance(clause.target, cst.Name) and not tests:
        _follow(model, clause.iter, flow, walk)
    elif gradient is None:
        flow.opaque = True
    # else: a transform of each gradient; `transforms` judges it, and nothing raw passes


def _gradient_variable(comprehension: cst.ListComp | cst.GeneratorExp) -> str | None:
    """The loop variable that holds one gradient: `g` in `for g in grads` and in
    `for g, v in zip(grads, variables)`."""
    target = comprehension.for_in.target
    if isinstance(target, cst.Name):
        return target.value
    if isinstance(target, cst.Tuple) and target.elements:
        first = target.elements[0].value
        if isinstance(first, cst.Name):
            return first.value
    return None


def _names(expr: cst.BaseExpression) -> set[str]:
    return {n.value for n in names_in(expr)}


def _is_none_test(test: cst.BaseExpression, variable: str) -> bool:
    """`g is not None` / `g != None` (also with `and` around it)."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return _is_none_test(test.left, variable) or _is_none_test(test.right, variable)
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    (target,) = test.comparisons
    sides = (test.left, target.comparator)
    return (
        isinstance(target.operator, (cst.IsNot, cst.NotEqual))
        and any(isinstance(s, cst.Name) and s.value == variable for s in sides)
        and any(isinstance(s, cst.Name) and s.value == "None" for s in sides)
    )


def _keeps_pairs(comprehension: cst.ListComp | cst.GeneratorExp) -> bool:
    """`(g, v) for g, v in ...`: each pair is rebuilt as it was."""
    target, element = comprehension.for_in.target, comprehension.elt
    if not (isinstance(target, cst.Tuple) and isinstance(element, cst.Tuple)):
        return False
    names = [e.value for e in target.elements]
    built = [e.value for e in element.elements]
    return (
        len(names) == len(built) == 2
        and all(isinstance(n, cst.Name) for n in (*names, *built))
        and [n.value for n in names] == [b.value for b in built]  # type: ignore[attr-defined]
    )


def _order(d: Def) -> int:
    return d.order


def _definition_flow(
    model: FileModel,
    d: Def,
    walk: _Walk,
    key: cst.BaseExpression | None = None,
    *,
    item: bool = False,
) -> GradientFlow:
    """What the name `d` binds holds (with `item`, one item of it, read with `key`): its
    value joined with what is written into it (`container_writes`)."""
    memo_key = (d, item, _literal_key(key), walk.pairs, walk.elementwise, id(walk.scope))
    cached = walk.memo.get(memo_key)
    if cached is not None:
        return cached
    flow = GradientFlow(definitions={d})
    if d in walk.visiting:
        walk.cuts[0] += 1
        return flow
    cuts = walk.cuts[0]
    walk.visiting.add(d)
    try:
        writes = writes_into(model, d)
        container = is_empty_container(d.bound_value())
        branches = []
        if not container:
            held = GradientFlow()
            _follow_value(model, d, held, walk)
            held.repackaged = held.repackaged or item
            branches.append(held)
        branches += [
            _write_flow(model, write, walk, item=item)
            for write in writes
            if not item or write.matches(key)
        ]
        _join(flow, branches)
    finally:
        walk.visiting.discard(d)
    if walk.cuts[0] == cuts:
        walk.memo[memo_key] = flow
    return flow


def _literal_key(key: cst.BaseExpression | None) -> str | None:
    return key.value if isinstance(key, (cst.SimpleString, cst.Integer)) else None


def _write_flow(model: FileModel, write: Write, walk: _Walk, *, item: bool) -> GradientFlow:
    """What `write` puts into its container: the whole container holds it (one item, or the
    items of an `extend`), one item read of it is it (or an item of what `extend` added)."""
    flow = GradientFlow()
    if write.node in walk.visiting:
        walk.cuts[0] += 1
        return flow
    walk.visiting.add(write.node)
    try:
        value: cst.BaseExpression | None = write.value
        for index in write.part[1:]:
            value = _element(value, index)
        if write.part and isinstance(value, cst.Call):
            _follow_call(model, value, str(write.part[-1]), flow, walk.plain())
            return flow
        if write.part:
            value = _element(value, write.part[-1])
        if value is None:
            flow.opaque = True
        elif walk.pairs and write.kind is WriteKind.ITEM and _is_pair(value):
            assert isinstance(value, cst.Tuple)
            _follow(model, value.elements[0].value, flow, walk.plain())
        else:
            _follow(model, value, flow, walk if write.kind is WriteKind.ITEMS else walk.plain())
        flow.repackaged = flow.repackaged or (item and write.kind is WriteKind.ITEMS)
    finally:
        walk.visiting.discard(write.node)
    return flow


def _element(value: cst.BaseExpression | None, index: int) -> cst.BaseExpression | None:
    if not isinstance(value, (cst.Tuple, cst.List)) or index >= len(value.elements):
        return None
    element = value.elements[index]
    return None if isinstance(element, cst.StarredElement) else element.value


def _is_pair(value: cst.BaseExpression) -> bool:
    return isinstance(value, cst.Tuple) and len(value.elements) == 2


def _follow_value(model: FileModel, d: Def, flow: GradientFlow, walk: _Walk) -> None:
    if d.scope is not walk.scope and _encloses(d.scope, walk.scope):
        # A closure's read of the enclosing function's name (`def optimize():
        # apply(grads)` inside the step that computed `grads`): followed there.
        walk = replace(walk, scope=d.scope)
    if d.scope is not walk.scope:
        flow.opaque = True
    elif d.kind is DefKind.PARAM:
        index = _param_index(d)
        if walk.summary and index is not None:
            flow.params.add(index)
        else:
            flow.opaque = True
    elif d.value is None:
        flow.opaque = True
    elif d.kind is DefKind.ASSIGN:
        _follow(model, d.value, flow, walk)
    elif d.kind is DefKind.UNPACK and isinstance(d.value, cst.Call) and len(d.unpack_index) == 1:
        _follow_call(model, d.value, str(d.unpack_index[0]), flow, walk)
    elif d.kind is DefKind.UNPACK and isinstance(d.value, cst.Name):
        flow.repackaged = True
        _follow(model, d.value, flow, walk.plain())  # `g1, g2 = grads`: each is a gradient
    else:
        flow.opaque = True


def _encloses(outer: Scope, inner: Scope) -> bool:
    """`inner` is a function or lambda defined (at any depth) inside function `outer`."""
    if not isinstance(outer.node, cst.FunctionDef):
        return False  # module globals may be rebound anywhere before the call
    scope = inner.parent
    while scope is not None:
        if scope is outer:
            return True
        scope = scope.parent
    return False


def _param_index(d: Def) -> int | None:
    function = d.stmt
    if not isinstance(function, cst.FunctionDef):
        return None
    params = function.params
    ordered = [*params.posonly_params, *params.params, *params.kwonly_params]
    for index, param in enumerate(ordered):
        if param.name is d.target:
            return index
    return None


_BUILTIN_MODULES = ("builtins", "six.moves", "future.builtins", "past.builtins")


def is_builtin(model: FileModel, name: cst.Name) -> bool:
    """The builtin of that name: not rebound, or imported from a compatibility module
    (`from six.moves import zip`)."""
    defs = model.defs_of(name)
    if not defs:
        return True
    qualified = model.imports.qualify(name)
    return all(d.kind is DefKind.IMPORT for d in defs) and qualified in {
        f"{module}.{name.value}" for module in _BUILTIN_MODULES
    }


def _on_received_tape(model: FileModel, call: cst.Call) -> bool:
    """`tape.gradient(target, sources)` where `tape` is a parameter of the function that
    is named as a tape (`tape`, `outer_tape`) or annotated `tf.GradientTape`."""
    func = call.func
    if not (
        isinstance(func, cst.Attribute)
        and func.attr.value == "gradient"
        and isinstance(func.value, cst.Name)
        and len(call.args) >= 2
    ):
        return False
    defs = model.defs_of(func.value)
    return bool(defs) and all(d.kind is DefKind.PARAM and _names_a_tape(model, d) for d in defs)


def _names_a_tape(model: FileModel, d: Def) -> bool:
    if "tape" in d.name.lower():
        return True
    function = d.stmt
    if not isinstance(function, cst.FunctionDef):
        return False
    params = function.params
    for param in (*params.posonly_params, *params.params, *params.kwonly_params):
        if param.name is d.target and param.annotation is not None:
            return is_gradient_tape(model.imports.qualify(param.annotation.annotation))
    return False


def _gradient_call(model: FileModel, node: cst.Call) -> TapeCall | None:
    call = model.tape_call_at(node)
    return call if call is not None and call.method == "gradient" else None


def _integer_index(subscript: cst.Subscript) -> int | None:
    if len(subscript.slice) != 1:
        return None
    index = subscript.slice[0].slice
    if isinstance(index, cst.Index) and isinstance(index.value, cst.Integer):
        return int(index.value.value)
    return None


def handles_none(model: FileModel, flow: GradientFlow, at: cst.CSTNode | None = None) -> bool:
    """Whether None gradients are dealt with between the gradient calls and `at` (the
    statement that uses the gradients; None: anywhere in the scope): `unconnected_gradients
    =ZERO`, or a None test on the gradients or on a loop/comprehension variable that
    iterates over them (a filter, a replacement, a check that raises or logs).

    With `at`, a test counts only where it guards the list that reaches `at`: before it,
    on every path to it (not under an `if` of its own), and not only around debugging or
    summaries (`if g is not None: tf.debugging.check_numerics(g, ...)`).
    """
    for origin in flow.origins:
        unconnected = argument_value(origin.node, 3, "unconnected_gradients")
        if unconnected is not None and _means_zero(unconnected):
            return True
    gradient_defs = set(flow.definitions)
    for origin in flow.origins:
        gradient_defs.update(model.defs_by_stmt.get(origin.stmt, []))
    scopes = {origin.scope for origin in flow.origins} | {d.scope for d in flow.definitions}
    for check in (c for scope in scopes for c in model.none_checks_in(scope)):
        if not _tests_gradients(model, check.subject, gradient_defs):
            continue
        if at is None or _guards(model, check.subject, at):
            return True
    return False


def _tests_gradients(model: FileModel, subject: cst.Name, gradient_defs: set[Def]) -> bool:
    for d in model.defs_of(subject):
        if d in gradient_defs:
            return True
        if d.kind in (DefKind.FOR, DefKind.COMP) and d.value is not None:
            iterated = {i for name in names_in(d.value) for i in model.defs_of(name)}
            if iterated & gradient_defs:
                return True
    return False


def _guards(model: FileModel, subject: cst.Name, at: cst.CSTNode) -> bool:
    checking = _statement_holding(model, subject)
    if checking is None:
        return False
    path = model.statement_path(checking)
    target = model.statement_path(at)
    if path is None or target is None:
        return False
    shared = 0
    while shared < min(len(path), len(target)) and path[shared] is target[shared]:
        shared += 1
    if shared >= len(path):
        return True  # the use runs inside the check's statement: `if g is not None: use`
    if shared >= len(target):
        return False  # the check runs inside the use's statement
    first, second = path[shared], target[shared]
    first_place, second_place = model.stmt_parent.get(first), model.stmt_parent.get(second)
    if first_place is None or second_place is None or first_place[1] is not second_place[1]:
        return False  # different blocks: `try` and `except`, `if` and `else`
    if first_place[2] >= second_place[2]:
        return False  # after the use
    for stmt in path[shared:]:
        if isinstance(stmt, cst.If) and not _holds(stmt.test, subject):
            return False  # on one branch only
        if isinstance(stmt, cst.If) and _only_debugging(model, stmt):
            return False
    return True


def _statement_holding(model: FileModel, node: cst.CSTNode) -> cst.CSTNode | None:
    use = model.uses_by_node.get(node)
    return use.stmt if use is not None else None


def _holds(tree: cst.CSTNode, node: cst.CSTNode) -> bool:
    if tree is node:
        return True
    return any(_holds(child, node) for child in child_nodes(tree))


_DEBUGGING = ("tensorflow.debugging.", "tensorflow.summary.")


def _only_debugging(model: FileModel, stmt: cst.If) -> bool:
    """An `if` whose body only checks or summarises (`tf.debugging.check_numerics(g)`)."""
    calls = [
        small.value
        for line in (stmt.body.body if isinstance(stmt.body, cst.IndentedBlock) else ())
        if isinstance(line, cst.SimpleStatementLine)
        for small in line.body
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call)
    ]
    body = stmt.body.body if isinstance(stmt.body, cst.IndentedBlock) else ()
    if not calls or len(calls) != len(body) or stmt.orelse is not None:
        return False
    return all((model.imports.qualify(call.func) or "").startswith(_DEBUGGING) for call in calls)


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


def applies_one_variable(model: FileModel, apply: ApplyCall) -> bool:
    """`opt.apply_gradients(zip([grad], [weights]))` or `opt.apply_gradients([(grad,
    weights)])`: one variable, written out in the apply. A None there makes the Keras
    optimizer raise, as with one source in the gradient call
    (`differentiability.no_gradient_lost_silently`)."""
    pairs = argument_value(apply.node, 0, "grads_and_vars")
    if isinstance(pairs, (cst.List, cst.Tuple)) and len(pairs.elements) == 1:
        (only,) = pairs.elements
        written_pair = isinstance(only.value, cst.Tuple) and len(only.value.elements) == 2
        if written_pair and not isinstance(only, cst.StarredElement):
            return True
    pairing = applied_pairing(model, apply)
    variables = pairing.variables if pairing is not None else None
    return isinstance(variables, (cst.List, cst.Tuple)) and len(variables.elements) == 1


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
