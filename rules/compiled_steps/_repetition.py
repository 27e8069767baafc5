"""What one repetition trains: the optimizers applied in one iteration of a loop (or one call
of a function that a loop calls), what each applies to, and whether each of them is the same
object in every repetition.

A *repetition* is the body of a `for`/`while` loop, or a function of this file. In it, an
*application* is `opt.apply_gradients(pairs)`, Keras 3's `opt.apply(grads, variables)` or
`opt.minimize(loss, var_list)`, made by the repetition itself or by a function of this file
that it calls (two levels deep; a callee's parameters are read as the call's arguments).
What an application trains is read from the variables it pairs (`zip(grads, variables)`,
through names, `list(...)`, comprehensions and literal pairs), or, when the pairs are built
some other way (a helper), from the sources of the gradient calls of the same repetition.

Each operand (the optimizer, and each object whose variables are trained: `model` in
`model.trainable_variables`, `w` in `[w, b]`, `self.q` in `self.q.trainable_variables`) is:

- FRESH when the repetition binds it anew: assigned in the loop's body or bound by its own
  `for` target; a local variable of the function; `self.x` assigned in the repetition;
- PERSISTS when it is bound only before the repetition starts: a module-level or enclosing
  name, or a parameter of the function that holds the loop; for a function, an argument (or
  for `self`, the receiver) that some loop calling it binds before the loop;
- UNKNOWN otherwise: a function's result, `models[i]`, a name without a definition.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from enum import Enum

import libcst as cst

from tapelint.semantic.calls.steps import StepIndex, innermost_loop, self_attribute_assigned
from tapelint.semantic.file_model.expressions import argument_value, call_argument, child_blocks
from tapelint.semantic.file_model.model import ApplyCall, CallSite, Def, DefKind, FileModel, Scope
from tapelint.semantic.gradient_routes.gradients import applied_pairing
from tapelint.semantic.keras.keras_objects import VARIABLE_LISTS
from tapelint.semantic.project_model.names import dotted_name

_MINIMIZE = "minimize"
_MAX_CALL_DEPTH = 2
_MAX_NAME_DEPTH = 4
# Iterables that count passes (epochs) rather than list cases: `range(...)`, `trange(...)`,
# `itertools.count()`, also through `enumerate(...)` and progress bars.
_COUNTERS = frozenset({"range", "trange", "count"})
_WRAPPERS = frozenset({"enumerate", "tqdm", "tqdm_notebook", "iter"})
# `tf.nest.flatten(x)` and `list(x)` hold the variables of `x`.
_SAME_VARIABLES = frozenset({"list", "tuple", "sorted"})
_FLATTEN = frozenset({"tensorflow.nest.flatten"})
_SETS_TRAINABLE = re.compile(r"\.trainable\s*=(?!=)")


class Persistence(Enum):
    FRESH = "fresh"
    PERSISTS = "persists"
    UNKNOWN = "unknown"


def combined(found: Iterable[Persistence]) -> Persistence:
    """PERSISTS when any operand persists (it is then shown for that one), FRESH when all
    are fresh, else UNKNOWN."""
    found = list(found)
    if Persistence.PERSISTS in found:
        return Persistence.PERSISTS
    if found and all(p is Persistence.FRESH for p in found):
        return Persistence.FRESH
    return Persistence.UNKNOWN


@dataclass(frozen=True)
class Operand:
    """An optimizer, or an object whose variables are trained, as the repetition sees it."""

    defs: frozenset[Def]  # the bindings of its root name, in the repetition's own code
    attribute: str | None  # `self.q` when it is an attribute of an object
    persistence: Persistence


_UNKNOWN = Operand(frozenset(), None, Persistence.UNKNOWN)


@dataclass(frozen=True)
class Application:
    node: cst.Call
    optimizer: Operand
    trained: tuple[Operand, ...]


@dataclass(frozen=True)
class Binding:
    """What a constructor's result is bound to: a name, or an attribute of `self`."""

    definition: Def | None
    attribute: str | None

    def holds(self, operand: Operand) -> bool:
        if self.definition is not None and self.definition in operand.defs:
            return True
        return self.attribute is not None and operand.attribute == self.attribute


def binding_of(model: FileModel, site: CallSite) -> Binding | None:
    """`name = <call>` or `self.name = <call>`; None for anything else."""
    defs = [
        d
        for d in model.defs_by_stmt.get(site.stmt, [])
        if d.kind is DefKind.ASSIGN and not d.unpack_index and d.value is site.node
    ]
    if len(defs) == 1:
        return Binding(defs[0], None)
    attribute = self_attribute_assigned(site)
    return Binding(None, f"self.{attribute}") if attribute is not None else None


@dataclass(frozen=True)
class _Place:
    """Where an expression is read: the repetition's own code, or a function it calls
    (through `call`, made in `caller`)."""

    unit: cst.CSTNode  # the loop or function that repeats, or the callee
    scope: Scope
    call: CallSite | None = None
    caller: _Place | None = None

    def depth(self) -> int:
        return 0 if self.caller is None else 1 + self.caller.depth()


class Repetitions:
    """Applications and persistence, for the repetitions of one file; cached per unit."""

    def __init__(self, model: FileModel, index: StepIndex) -> None:
        self.model = model
        self.index = index
        self._calls_by_scope: dict[Scope, list[CallSite]] = {}
        for site in model.calls:
            self._calls_by_scope.setdefault(site.scope, []).append(site)
        self._applies = {apply.node: apply for apply in model.apply_calls}
        self._applications: dict[cst.CSTNode, list[Application]] = {}
        self._assigned: dict[cst.CSTNode, set[str]] = {}
        self._sets_trainable = _SETS_TRAINABLE.search(model.source_text) is not None

    # ------------------------------------------------------------------ applications
    def applications(self, unit: cst.CSTNode, scope: Scope) -> list[Application]:
        """Every application one repetition of `unit` (a loop of `scope`, or the function
        that `scope` is) makes, itself or through the functions it calls."""
        found = self._applications.get(unit)
        if found is None:
            found = list(self._applications_at(_Place(unit, scope)))
            self._applications[unit] = found
        return found

    def _applications_at(self, place: _Place) -> Iterable[Application]:
        for site in self._calls_in(place.unit, place.scope):
            if self._is_application(site):
                yield self._application(site, place)
            elif place.depth() < _MAX_CALL_DEPTH:
                for callee in self.index.callees(site) or ():
                    callee_scope = self.index.scope_of(callee)
                    if callee_scope is None or self._on_path(callee, place):
                        continue
                    yield from self._applications_at(_Place(callee, callee_scope, site, place))

    def _is_application(self, site: CallSite) -> bool:
        """`x.apply_gradients(...)`, `x.apply(grads, variables)`, `x.minimize(...)` on an
        object (not `dataset.apply(fn)`, not a module's `minimize` function)."""
        func = site.node.func
        if not isinstance(func, cst.Attribute) or site.qualified is not None:
            return False
        apply = self._applies.get(site.node)
        if apply is not None:
            return apply.method != "apply" or len(site.node.args) >= 2
        return func.attr.value == _MINIMIZE

    def _calls_in(self, unit: cst.CSTNode, scope: Scope) -> list[CallSite]:
        calls = self._calls_by_scope.get(scope, [])
        if isinstance(unit, cst.FunctionDef):
            return calls
        return [site for site in calls if any(frame.node is unit for frame in site.ctx)]

    @staticmethod
    def _on_path(function: cst.CSTNode, place: _Place | None) -> bool:
        while place is not None:
            if place.unit is function:
                return True
            place = place.caller
        return False

    def _application(self, site: CallSite, place: _Place) -> Application:
        func = site.node.func
        assert isinstance(func, cst.Attribute)
        optimizer = _merged(self._operands(func.value, place))
        objects: list[cst.BaseExpression] = []
        for variables in self._trained_lists(site, place):
            objects.extend(self._objects(variables, site.scope, 0))
        trained = tuple(op for obj in objects for op in self._operands(obj, place))
        return Application(site.node, optimizer, trained)

    def _trained_lists(self, site: CallSite, place: _Place) -> list[cst.BaseExpression]:
        """The variable lists an application trains."""
        call = site.node
        apply = self._applies.get(call)
        if apply is None:  # minimize(loss, var_list): TF1's second argument is global_step
            var_list = argument_value(call, 1, "var_list")
            if var_list is None or "global_step" in (self.model.module.code_for_node(var_list)):
                return []
            return [var_list]
        pairing = applied_pairing(self.model, apply)
        if pairing is not None:
            return [pairing.variables]
        if apply.method == "apply":
            return []
        pairs = argument_value(call, 0, "grads_and_vars")
        if isinstance(pairs, (cst.List, cst.Tuple)) and all(
            isinstance(e.value, cst.Tuple) and len(e.value.elements) == 2 for e in pairs.elements
        ):
            return [e.value.elements[1].value for e in pairs.elements]  # type: ignore[attr-defined]
        return self._gradient_sources(apply, place)

    def _gradient_sources(self, apply: ApplyCall, place: _Place) -> list[cst.BaseExpression]:
        """The sources of the gradient calls made with the application, in the same code of
        the repetition."""
        sources = []
        for call in self.model.gradient_calls:
            if call.scope is not apply.scope:
                continue
            if not isinstance(place.unit, cst.FunctionDef) and not any(
                frame.node is place.unit for frame in call.ctx
            ):
                continue
            source = argument_value(call.node, 1, "sources")
            if source is not None:
                sources.append(source)
        return sources

    def _objects(
        self, expr: cst.BaseExpression, scope: Scope, depth: int
    ) -> list[cst.BaseExpression]:
        """The objects whose variables a variable list holds: `model` for
        `model.trainable_variables`, `w` and `b` for `[w, b]`."""
        if depth > _MAX_NAME_DEPTH:
            return [expr]
        if isinstance(expr, cst.Attribute) and expr.attr.value in VARIABLE_LISTS:
            return [expr.value]
        if isinstance(expr, (cst.List, cst.Tuple)):
            found: list[cst.BaseExpression] = []
            for element in expr.elements:
                found.extend(self._objects(element.value, scope, depth + 1))
            return found
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
            return self._objects(expr.left, scope, depth + 1) + self._objects(
                expr.right, scope, depth + 1
            )
        if isinstance(expr, (cst.ListComp, cst.GeneratorExp)):
            return self._objects(expr.for_in.iter, scope, depth + 1)
        if isinstance(expr, cst.Call) and expr.args and self._keeps_variables(expr.func):
            return self._objects(expr.args[0].value, scope, depth + 1)
        if isinstance(expr, cst.Name):
            defs = self.model.defs_of(expr)
            if len(defs) == 1:
                (d,) = defs
                if (
                    d.kind is DefKind.ASSIGN
                    and not d.unpack_index
                    and d.scope is scope
                    and d.value is not None
                    and _is_variable_list(d.value)
                ):
                    return self._objects(d.value, scope, depth + 1)
        return [expr]

    def _keeps_variables(self, func: cst.BaseExpression) -> bool:
        """`list(x)`, `tuple(x)`, `tf.nest.flatten(x)`: the variables of `x`."""
        if isinstance(func, cst.Name) and func.value in _SAME_VARIABLES:
            return True
        return self.model.imports.qualify(func) in _FLATTEN

    # ------------------------------------------------------------------ persistence
    def _operands(self, obj: cst.BaseExpression, place: _Place) -> list[Operand]:
        root = self._root(obj)
        if root is None:
            return [_UNKNOWN]
        name, attribute = root
        return self._operands_of(name.value, self.model.defs_of(name), attribute, place)

    def _operands_of(
        self, name: str, defs: frozenset[Def], attribute: str | None, place: _Place
    ) -> list[Operand]:
        key = f"{name}.{attribute}" if attribute is not None else None
        if place.call is None or place.caller is None:
            return [Operand(defs, key, self._persistence(defs, key, place))]
        # In a function the repetition calls: parameters are the call's arguments.
        if key is not None and key in self._assignments(place.unit):
            return [Operand(frozenset(), None, Persistence.FRESH)]
        local = [d for d in defs if d.scope is place.scope]
        if not defs:
            return [_UNKNOWN]
        if not local:  # a global or a closure: read the same way in the caller
            return self._operands_of(name, defs, attribute, place.caller)
        if any(d.kind is not DefKind.PARAM for d in local):
            return [Operand(frozenset(), None, Persistence.FRESH)]
        assert isinstance(place.unit, cst.FunctionDef)
        argument = self._argument(place.call, place.unit, local[0].name)
        return self._argument_operands(argument, attribute, place.caller)

    def _argument_operands(
        self, argument: cst.BaseExpression | None, attribute: str | None, place: _Place
    ) -> list[Operand]:
        """The operands a parameter stands for, read at the call in `place`."""
        if argument is None:
            return [_UNKNOWN]
        if attribute is not None:  # `self.q` in the callee: `agent.q` at the call
            root = self._root(argument)
            if root is None:
                return [_UNKNOWN]
            name, inner = root
            return self._operands_of(
                name.value, self.model.defs_of(name), inner or attribute, place
            )
        objects = self._objects(argument, place.scope, 0)
        return [op for obj in objects for op in self._operands(obj, place)]

    def _root(self, expr: cst.BaseExpression) -> tuple[cst.Name, str | None] | None:
        """The name an object is reached from, with the first attribute taken from it:
        `model` -> (model, None), `self.q.layers[0]` -> (self, "q"), `m.get_layer("x")` ->
        (m, None). None for a function's result (`tf.Variable(...)`, `make()`) or an index
        that is not a literal."""
        attribute: str | None = None
        node: cst.BaseExpression = expr
        while True:
            if isinstance(node, cst.Name):
                return node, attribute
            if isinstance(node, cst.Attribute):
                attribute = node.attr.value
                node = node.value
            elif (
                isinstance(node, cst.Call)
                and isinstance(node.func, cst.Attribute)
                and self.model.imports.qualify(node.func) is None
            ):
                attribute = None
                node = node.func.value
            elif isinstance(node, cst.Subscript) and _literal_index(node):
                node = node.value
            else:
                return None

    def _persistence(self, defs: frozenset[Def], key: str | None, place: _Place) -> Persistence:
        unit = place.unit
        if key is not None and key in self._assignments(unit):
            return Persistence.FRESH
        if not defs:
            return Persistence.UNKNOWN
        if isinstance(unit, cst.FunctionDef):
            local = [d for d in defs if d.scope is place.scope]
            if any(d.kind is not DefKind.PARAM for d in local):
                return Persistence.FRESH
            if local:
                return self._through_callers(unit, local[0].name, key)
            return Persistence.PERSISTS
        if any(
            d.scope is place.scope and (d.stmt is unit or any(f.node is unit for f in d.ctx))
            for d in defs
        ):
            return Persistence.FRESH
        return Persistence.PERSISTS

    def _through_callers(
        self, function: cst.FunctionDef, parameter: str, key: str | None
    ) -> Persistence:
        """How a parameter's object persists from call to call, read at the calls made in
        eager loops: an argument bound before the calling loop is the same every time."""
        attribute = (key.partition(".")[2] or None) if key is not None else None
        found = []
        for site, loop in self.callers_in_loops(function):
            argument = self._argument(site, function, parameter)
            operands = self._argument_operands(argument, attribute, _Place(loop, site.scope))
            found.append(combined(op.persistence for op in operands))
        return combined(found)

    def callers_in_loops(self, function: cst.FunctionDef) -> list[tuple[CallSite, cst.CSTNode]]:
        """The calls of `function` made in a loop of code that runs eagerly, each with its
        innermost loop."""
        found = []
        for site in self.index.calls_of_function(function):
            loop = innermost_loop(site.ctx)
            if loop is not None and not self.index.is_compiled(site.scope):
                found.append((site, loop.node))
        return found

    def _argument(
        self, site: CallSite, function: cst.FunctionDef, parameter: str
    ) -> cst.BaseExpression | None:
        """What a call passes for `parameter` of `function`: the receiver for a method's
        `self` (`agent` in `agent.learn(x)`); None when `*args` make it unknowable."""
        call = site.node
        if any(arg.star for arg in call.args):
            return None
        params = function.params
        positional = [p.name.value for p in (*params.posonly_params, *params.params)]
        scope = self.index.scope_of(function)
        is_method = (
            scope is not None
            and scope.parent is not None
            and isinstance(scope.parent.node, cst.ClassDef)
            and not any(dotted_name(d.decorator) == "staticmethod" for d in function.decorators)
        )
        if is_method and isinstance(call.func, cst.Attribute) and positional:
            if parameter == positional[0]:
                return call.func.value
            positional = positional[1:]
        position = positional.index(parameter) if parameter in positional else -1
        arg = call_argument(call, position, parameter)
        return arg.value if arg is not None else None

    def _assignments(self, unit: cst.CSTNode) -> set[str]:
        """The dotted targets (`self.q`) assigned anywhere in `unit`."""
        found = self._assigned.get(unit)
        if found is None:
            found = set()
            for target in _assignment_targets(unit):
                dotted = dotted_name(target)
                if dotted is not None and "." in dotted:
                    found.add(dotted)
            self._assigned[unit] = found
        return found

    def changes_trainability(self, node: cst.CSTNode) -> bool:
        """`changes_trainability`, answered at once for a file that never assigns a
        `.trainable`."""
        return self._sets_trainable and changes_trainability(node)


def counts_passes(loop: cst.CSTNode) -> bool:
    """Whether a loop counts passes (`for epoch in range(n)`, `while`), rather than going
    through cases, folds, stages or datasets."""
    if isinstance(loop, cst.While):
        return True
    if not isinstance(loop, cst.For):
        return False
    iterable = loop.iter
    while isinstance(iterable, cst.Call) and iterable.args and _last(iterable.func) in _WRAPPERS:
        iterable = iterable.args[0].value
    return isinstance(iterable, cst.Call) and _last(iterable.func) in _COUNTERS


def changes_trainability(node: cst.CSTNode) -> bool:
    """Whether code sets some `.trainable` (progressive unfreezing): a new optimizer for the
    new set of variables is then what Keras 3 requires."""
    return any(
        isinstance(target, cst.Attribute) and target.attr.value == "trainable"
        for target in _assignment_targets(node)
    )


def _assignment_targets(node: cst.CSTNode) -> Iterator[cst.BaseExpression]:
    """The targets assigned by the statements in a loop's or a function's blocks, at any
    depth (walking statements, not expressions: libcst's node children are costly)."""
    pending: list[cst.CSTNode] = [stmt for block in child_blocks(node) for stmt in block]
    while pending:
        stmt = pending.pop()
        if isinstance(stmt, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            for small in stmt.body:
                if isinstance(small, cst.Assign):
                    for target in small.targets:
                        yield from _target_elements(target.target)
                elif isinstance(small, (cst.AnnAssign, cst.AugAssign)):
                    yield from _target_elements(small.target)
        else:
            pending.extend(inner for block in child_blocks(stmt) for inner in block)


def _last(func: cst.BaseExpression) -> str | None:
    if isinstance(func, cst.Name):
        return func.value
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return None


def _target_elements(target: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(target, (cst.Tuple, cst.List)):
        return [e for element in target.elements for e in _target_elements(element.value)]
    return [target]


def _literal_index(node: cst.Subscript) -> bool:
    if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
        return False
    value = node.slice[0].slice.value
    if isinstance(value, cst.UnaryOperation):
        value = value.expression
    return isinstance(value, (cst.Integer, cst.SimpleString))


def _is_variable_list(expr: cst.BaseExpression) -> bool:
    """Whether an assigned value is itself a list of variables to look into."""
    if isinstance(expr, cst.Attribute):
        return expr.attr.value in VARIABLE_LISTS
    if isinstance(expr, cst.Call):
        return isinstance(expr.func, cst.Name) and expr.func.value in _SAME_VARIABLES
    return isinstance(
        expr, (cst.List, cst.Tuple, cst.BinaryOperation, cst.ListComp, cst.GeneratorExp)
    )


def _merged(operands: list[Operand]) -> Operand:
    if len(operands) == 1:
        return operands[0]
    attributes = {op.attribute for op in operands}
    return Operand(
        frozenset(d for op in operands for d in op.defs),
        attributes.pop() if len(attributes) == 1 else None,
        combined(op.persistence for op in operands),
    )
