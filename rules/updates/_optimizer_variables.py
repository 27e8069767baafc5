"""Which updates hand a Keras 3 optimizer variables it was not built with? (TAP404)

A Keras 3 optimizer builds its state for the variables of its first update, and refuses any
other variable afterwards: `ValueError: Unknown variable ... This optimizer can only be
called for the variables it was originally built with` (measured on TensorFlow 2.21 with
Keras 3.15; an update of a subset of them is accepted, and `optimizer.build(...)` on an
optimizer that has already updated does nothing). An *update* here is
`opt.apply_gradients(zip(grads, m.trainable_variables))` or `opt.apply(grads,
m.trainable_variables)` (`gradient_routes.optimizers`), or a call of a function of the file
that makes one with its parameters on every call (`train(model_b, optimizer)`); `m` is a
name, and `opt` a name bound once to a Keras 3 optimizer's constructor.

Three shapes are reported, at the update that brings the new variables:

- *another model*: an update of `b`'s variables that certainly runs after one of `a`'s,
  with the same optimizer: later in the same code (a later notebook cell, the second
  model's step after the first's), and not under an `if`, `while` or `try` of its own;
- *a loop over models*: `for m in (a, b):` (or a name bound once to such a list) around
  the update of `m`'s variables, the optimizer made before the loop;
- *unfreezing*: `part.trainable = True` on the model or on a part of it (a name its
  construction mentions, `model.layers[i]`, `model.get_layer(...)`) that was frozen
  (`part.trainable = False`, or built with `trainable=False`) before an earlier update of
  the model's variables: either written between two updates, or inside the epoch loop
  around the update under `if epoch == K` (`>=`, `>`) with `K` a number above zero, so
  that the first epochs update the frozen set.

Two models are two sets of variables only when neither is part of the other: each is
bound once to a Keras constructor or builder (`keras_objects`), and neither's
construction mentions the other's name (nor does the file's function that builds it).

Not reported (decided): legacy Keras 2 files (`tf_keras`, `TF_USE_LEGACY_KERAS`) and
TensorFlow Addons' optimizers, which accept new variables or are not Keras 3's; an
optimizer bound anew for each model (per cell, or inside the loop); one that the file
builds (`opt.build(...)`) or hands to `compile`, which `fit` then builds (unknown);
models made inside the loop around the update (TAP502's: a model rebuilt while the
optimizer persists); anything the analysis cannot pin down (attributes, a model passed
in, `models[i]`, a condition it cannot read).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from tapelint.semantic.file_model.expressions import argument_for_parameter, every_name
from tapelint.semantic.file_model.model import Def, DefKind, FileModel, Scope
from tapelint.semantic.gradient_routes.gradients import applied_pairing
from tapelint.semantic.gradient_routes.optimizers import gradient_applies
from tapelint.semantic.keras.keras_objects import KerasObjects, uses_legacy_keras

from ._identity import TRAINABLE_LISTS

_KERAS3_NAMESPACES = ("keras.optimizers.", "tensorflow.optimizers.")
# Statements around an update that may skip it: the update then does not certainly run.
_MAY_SKIP = (cst.If, cst.While, cst.Try, cst.TryStar, cst.Match)
_RANGE = "range"


@dataclass(frozen=True)
class Update:
    """An update of an optimizer, where it is written: the apply call, or the call of a
    function of the file that applies its parameters."""

    node: cst.Call
    stmt: cst.CSTNode
    scope: Scope
    optimizer: Def
    owner: cst.Name  # `m` in `m.trainable_variables`, read where the update is written


@dataclass(frozen=True)
class NewVariables:
    """An update handing its optimizer variables it was not built with."""

    update: Update
    # "model": another model's (`earlier` names the model updated before); "loop": the
    # loop's next model (`earlier` is the first, `owner` the loop's name); "unfrozen":
    # `earlier` is the part unfrozen by `statement`.
    kind: str
    earlier: str
    statement: cst.CSTNode | None = None


def new_variables(model: FileModel) -> Iterator[NewVariables]:
    """The updates that hand a Keras 3 optimizer variables it was not built with."""
    if not model.apply_calls or uses_legacy_keras(model):
        return
    facts = _Facts(model)
    updates = facts.updates()
    if not updates:
        return
    reported: set[cst.Call] = set()
    for found in (*facts.other_models(updates), *facts.loops(updates), *facts.unfrozen(updates)):
        if found.update.node not in reported:
            reported.add(found.update.node)
            yield found


class _Facts:
    def __init__(self, model: FileModel) -> None:
        self.model = model
        self.keras = KerasObjects(model)

    # ------------------------------------------------------------------ updates
    def updates(self) -> list[Update]:
        found: list[Update] = []
        helpers: dict[cst.FunctionDef, list[tuple[str, str]]] = {}
        for apply in gradient_applies(self.model):
            pairing = applied_pairing(self.model, apply)
            func = apply.node.func
            if pairing is None or not isinstance(func, cst.Attribute):
                continue
            owner = self._owner(pairing.variables)
            if owner is None or not isinstance(func.value, cst.Name):
                continue
            optimizer = self.only_def(func.value)
            if optimizer is not None and self._is_keras3_optimizer(optimizer):
                found.append(Update(apply.node, apply.stmt, apply.scope, optimizer, owner))
            parameters = self._parameters_applied(apply.stmt, apply.scope, func.value, owner)
            if parameters is not None:
                helpers.setdefault(parameters[0], []).append(parameters[1])
        for function, pairs in helpers.items():
            found.extend(self._helper_calls(function, pairs))
        return found

    def _owner(self, variables: cst.BaseExpression) -> cst.Name | None:
        """`m` when `variables` is `m.trainable_variables` (also through a name bound to
        it once)."""
        if isinstance(variables, cst.Name):
            d = self.only_def(variables)
            if d is None or d.kind is not DefKind.ASSIGN or d.value is None:
                return None
            variables = d.value
        if (
            isinstance(variables, cst.Attribute)
            and variables.attr.value in TRAINABLE_LISTS
            and isinstance(variables.value, cst.Name)
        ):
            return variables.value
        return None

    def only_def(self, name: cst.Name) -> Def | None:
        defs = self.model.defs_of(name)
        return next(iter(defs)) if len(defs) == 1 else None

    def _is_keras3_optimizer(self, d: Def) -> bool:
        """Bound once to a Keras 3 optimizer's constructor (`keras.optimizers.Adam(...)`,
        `tf.keras.optimizers.SGD(...)`), never built nor handed to `compile`."""
        value = d.bound_value()
        if d.kind is not DefKind.ASSIGN or not isinstance(value, cst.Call):
            return False
        qualified = self.model.imports.qualify(value.func) or ""
        last = qualified.rsplit(".", 1)[-1]
        if not qualified.startswith(_KERAS3_NAMESPACES) or not last[:1].isupper():
            return False
        if ".legacy." in qualified or ".schedules." in qualified:
            return False
        return not _built_elsewhere(self.model.source_text, d.name)

    def _parameters_applied(
        self, stmt: cst.CSTNode, scope: Scope, receiver: cst.Name, owner: cst.Name
    ) -> tuple[cst.FunctionDef, tuple[str, str]] | None:
        """(function, (optimizer parameter, model parameter)) when the update is made on
        every call of a function of the file with two of its parameters."""
        function = scope.node
        if not isinstance(function, cst.FunctionDef) or scope.is_compiled:
            return None
        defs = [self.only_def(receiver), self.only_def(owner)]
        if any(d is None or d.kind is not DefKind.PARAM or d.scope is not scope for d in defs):
            return None
        if not _always_runs(self.model, stmt, function):
            return None
        return function, (receiver.value, owner.value)

    def _helper_calls(
        self, function: cst.FunctionDef, pairs: list[tuple[str, str]]
    ) -> Iterator[Update]:
        for site in self.model.calls:
            func = site.node.func
            if not isinstance(func, cst.Name):
                continue
            made = self.model.defs_of(func)
            if len(made) != 1 or next(iter(made)).stmt is not function:
                continue
            for optimizer_parameter, owner_parameter in pairs:
                optimizer = _argument(site.node, function, optimizer_parameter)
                owner = _argument(site.node, function, owner_parameter)
                if not isinstance(optimizer, cst.Name) or not isinstance(owner, cst.Name):
                    continue
                d = self.only_def(optimizer)
                if d is not None and self._is_keras3_optimizer(d):
                    yield Update(site.node, site.stmt, site.scope, d, owner)

    # ------------------------------------------------------------------ another model
    def other_models(self, updates: list[Update]) -> Iterator[NewVariables]:
        for first in updates:
            for second in updates:
                if first is second or first.optimizer is not second.optimizer:
                    continue
                if first.scope is not second.scope:
                    continue
                if not _runs_before(self.model, first.stmt, second.stmt):
                    continue
                if self._distinct_models(first.owner, second.owner):
                    yield NewVariables(second, "model", first.owner.value)

    def _distinct_models(self, first: cst.Name, second: cst.Name) -> bool:
        """Two models bound once each to a Keras construction, neither mentioning the
        other: two sets of variables."""
        a, b = self.only_def(first), self.only_def(second)
        if a is None or b is None or a is b:
            return False
        for d in (a, b):
            value = d.bound_value()
            if d.kind is not DefKind.ASSIGN or not isinstance(value, cst.Call):
                return False
            if isinstance(value.func, cst.Name) and not _builds_anew(self.model, value.func.value):
                return False
        if self.keras.origins(first) is None or self.keras.origins(second) is None:
            return False
        return not self._mentions(a, b.name) and not self._mentions(b, a.name)

    def _mentions(self, d: Def, name: str) -> bool:
        """Whether the construction bound by `d` (or the file's function it calls) names
        `name`."""
        value = d.bound_value()
        assert value is not None
        text = self.model.module.code_for_node(value)
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Name):
            text += _function_text(self.model, value.func.value)
        return re.search(rf"\b{re.escape(name)}\b", text) is not None

    # ------------------------------------------------------------------ a loop over models
    def loops(self, updates: list[Update]) -> Iterator[NewVariables]:
        for update in updates:
            d = self.only_def(update.owner)
            loop = d.stmt if d is not None and d.kind is DefKind.FOR else None
            if not isinstance(loop, cst.For) or not isinstance(loop.target, cst.Name):
                continue
            if update.optimizer.stmt is loop or _inside(self.model, update.optimizer.stmt, loop):
                continue  # an optimizer per model
            models = self._listed_models(loop.iter)
            if models is None or len(models) < 2:
                continue
            if self._distinct_models(models[0], models[1]):
                yield NewVariables(update, "loop", models[0].value)

    def _listed_models(self, iterable: cst.BaseExpression) -> list[cst.Name] | None:
        if isinstance(iterable, cst.Name):
            d = self.only_def(iterable)
            if d is None or d.kind is not DefKind.ASSIGN or d.value is None:
                return None
            if len(self.model.scope_defs.get(d.scope, {}).get(d.name, [])) != 1:
                return None
            iterable = d.value
        if not isinstance(iterable, (cst.List, cst.Tuple)):
            return None
        names = [e.value for e in iterable.elements]
        if not all(isinstance(n, cst.Name) for n in names):
            return None
        return names  # type: ignore[return-value]

    # ------------------------------------------------------------------ unfreezing
    def unfrozen(self, updates: list[Update]) -> Iterator[NewVariables]:
        if ".trainable" not in self.model.source_text:
            return
        settings = list(_trainable_settings(self.model))
        thawed = [(stmt, target) for stmt, target, value in settings if value]
        if not thawed:
            return
        for update in updates:
            owner = self.only_def(update.owner)
            if owner is None:
                continue
            for stmt, target in thawed:
                if not self._part_of(target, owner):
                    continue
                thawed_after_an_update = self._thawed_between(
                    update, stmt, updates
                ) or self._thawed_in_loop(update, stmt)
                if thawed_after_an_update and self._was_frozen(
                    target, settings, update, updates, stmt
                ):
                    part = self.model.module.code_for_node(target)
                    yield NewVariables(update, "unfrozen", part, stmt)
                    break

    def _part_of(self, target: cst.BaseExpression, owner: Def) -> bool:
        """`model` itself, something reached from it (`model.layers[i]`,
        `model.get_layer(...)`), or a name its construction reads (also through the names
        that reads: `x = base(inputs)`, `model = keras.Model(inputs, head(x))`)."""
        if isinstance(target, cst.Name):
            part = self.only_def(target)
            return part is not None and (part is owner or self._reads(owner, part, 0))
        root = target
        while isinstance(root, (cst.Subscript, cst.Call, cst.Attribute)):
            root = root.func if isinstance(root, cst.Call) else root.value
        return isinstance(root, cst.Name) and self.only_def(root) is owner

    def _reads(self, d: Def, part: Def, depth: int) -> bool:
        value = d.bound_value()
        if depth > 3 or value is None:
            return False
        for inner in every_name(value):
            found = self.only_def(inner)
            if found is part:
                return True
            if found is not None and found is not d and self._reads(found, part, depth + 1):
                return True
        return False

    def _thawed_between(self, update: Update, stmt: cst.CSTNode, updates: list[Update]) -> bool:
        """An update of the same model and optimizer certainly ran before `stmt`, and
        `update` comes after it."""
        if not self.model.written_before(stmt, update.stmt):
            return False
        for earlier in updates:
            if earlier.optimizer is not update.optimizer or earlier.scope is not update.scope:
                continue
            if self.only_def(earlier.owner) is not self.only_def(update.owner):
                continue
            if _runs_before(self.model, earlier.stmt, stmt):
                return True
        return False

    def _thawed_in_loop(self, update: Update, stmt: cst.CSTNode) -> bool:
        """`stmt` sits in the epoch loop around the update, under `if epoch == K` (`>=`,
        `>`) with `K` above zero, and the optimizer is made before that loop."""
        path = self.model.statement_path(stmt)
        if path is None:
            return False
        for index, holder in enumerate(path):
            if not isinstance(holder, cst.If) or index == 0:
                continue
            loop = path[index - 1]
            if not isinstance(loop, cst.For) or not _counts_from_zero(self.model, loop):
                continue
            if not _inside(self.model, update.stmt, loop) or not _later_epoch(holder.test, loop):
                continue
            if _inside(self.model, update.optimizer.stmt, loop):
                return False
            return _always_runs(self.model, update.stmt, loop)
        return False

    def _was_frozen(
        self,
        target: cst.BaseExpression,
        settings: list[tuple[cst.CSTNode, cst.BaseExpression, bool]],
        update: Update,
        updates: list[Update],
        thawing: cst.CSTNode,
    ) -> bool:
        """Whether `target` was frozen when the optimizer made its first update: frozen by
        a statement that runs before it (or built with `trainable=False`), and not set
        trainable again before it by another statement than `thawing`."""
        first = update.stmt
        for other in updates:
            if other.optimizer is update.optimizer and self.model.written_before(other.stmt, first):
                first = other.stmt
        text = self.model.module.code_for_node(target)
        frozen = _built_frozen(self, target)
        for stmt, setting, value in settings:
            if self.model.module.code_for_node(setting) != text:
                continue
            if value and stmt is not thawing and self.model.written_before(stmt, first):
                return False
            if not value and _runs_before(self.model, stmt, first):
                frozen = True
        return frozen


def _built_frozen(facts: _Facts, target: cst.BaseExpression) -> bool:
    """A name bound to a construction with `trainable=False`."""
    d = facts.only_def(target) if isinstance(target, cst.Name) else None
    value = d.bound_value() if d is not None else None
    return isinstance(value, cst.Call) and any(
        arg.keyword is not None
        and arg.keyword.value == "trainable"
        and isinstance(arg.value, cst.Name)
        and arg.value.value == "False"
        for arg in value.args
    )


def _trainable_settings(
    model: FileModel,
) -> Iterator[tuple[cst.CSTNode, cst.BaseExpression, bool]]:
    """(statement, object, value) for each `object.trainable = True/False`."""
    for stmt in model.stmt_parent:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if not isinstance(small, cst.Assign) or len(small.targets) != 1:
                continue
            target, value = small.targets[0].target, small.value
            if (
                isinstance(target, cst.Attribute)
                and target.attr.value == "trainable"
                and isinstance(value, cst.Name)
                and value.value in ("True", "False")
            ):
                yield stmt, target.value, value.value == "True"


def _runs_before(model: FileModel, first: cst.CSTNode, second: cst.CSTNode) -> bool:
    """`first` is written before `second` and runs whenever the code around both does: no
    `if`, `while`, `try` or `match` of its own on the way to it."""
    if not model.written_before(first, second):
        return False
    path, other = model.statement_path(first), model.statement_path(second)
    if path is None or other is None:
        return False
    shared = 0
    while shared < min(len(path), len(other)) and path[shared] is other[shared]:
        shared += 1
    return not any(isinstance(stmt, _MAY_SKIP) for stmt in path[shared:-1])


def _always_runs(model: FileModel, stmt: cst.CSTNode, around: cst.CSTNode) -> bool:
    """`stmt` runs whenever `around` (a function or a loop holding it) runs its body."""
    path = model.statement_path(stmt)
    if path is None:
        return False
    inner = path[path.index(around) + 1 : -1] if around in path else None
    if inner is None:
        return False
    return not any(isinstance(s, _MAY_SKIP) for s in inner)


def _inside(model: FileModel, stmt: cst.CSTNode, holder: cst.CSTNode) -> bool:
    path = model.statement_path(stmt)
    return path is not None and holder in path and path[-1] is not holder


def _counts_from_zero(model: FileModel, loop: cst.For) -> bool:
    """`for epoch in range(n)` (or `range(0, n)`)."""
    iterable = loop.iter
    if not (isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name)):
        return False
    if iterable.func.value != _RANGE or model.defs_of(iterable.func):
        return False
    args = iterable.args
    if len(args) == 1:
        return True
    first = args[0].value if args else None
    return len(args) == 2 and isinstance(first, cst.Integer) and first.evaluated_value == 0


def _later_epoch(test: cst.BaseExpression, loop: cst.For) -> bool:
    """`epoch == K`, `epoch >= K` (K above zero) or `epoch > K` (K at least zero), where
    `epoch` is the loop's variable: false on the first pass."""
    target = loop.target
    if not isinstance(target, cst.Name) or not isinstance(test, cst.Comparison):
        return False
    if len(test.comparisons) != 1:
        return False
    (comparison,) = test.comparisons
    left, right = test.left, comparison.comparator
    if not (isinstance(left, cst.Name) and left.value == target.value):
        return False
    if not isinstance(right, cst.Integer):
        return False
    bound = int(right.evaluated_value)
    if isinstance(comparison.operator, (cst.Equal, cst.GreaterThanEqual)):
        return bound >= 1
    return isinstance(comparison.operator, cst.GreaterThan) and bound >= 0


def _argument(
    call: cst.Call, function: cst.FunctionDef, parameter: str
) -> cst.BaseExpression | None:
    """What `call` passes for `parameter` of `function`; None with `*args` or `**kwargs`."""
    params = function.params
    positional = [p.name.value for p in (*params.posonly_params, *params.params)]
    return argument_for_parameter(call, positional, parameter)


def _built_elsewhere(text: str, name: str) -> bool:
    """`name.build(...)`, or `name` handed to a `compile(...)` call."""
    escaped = re.escape(name)
    return (
        re.search(rf"\b{escaped}\s*\.\s*build\s*\(", text) is not None
        or re.search(rf"\bcompile\s*\([^)]*\b{escaped}\b", text) is not None
    )


def _builds_anew(model: FileModel, name: str) -> bool:
    """Whether the file's top-level function `name` (if it is one) returns a new object on
    every call: undecorated, no `global`, and each `return` a call or a local name assigned
    from a call (`model = keras.Sequential(); model.add(...); return model`). A function
    that hands out a module-level model would give two names one model."""
    tree = model.text_tree()
    function = next(
        (
            node
            for node in (tree.body if tree is not None else [])
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name
        ),
        None,
    )
    if function is None:
        return True  # a class, or an imported builder: each call constructs
    if function.decorator_list:
        return False
    made: set[str] = set()
    returns: list[ast.expr | None] = []
    for node in ast.walk(function):
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            return False
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            made.update(t.id for t in node.targets if isinstance(t, ast.Name))
        if isinstance(node, ast.Return):
            returns.append(node.value)
    return bool(returns) and all(
        isinstance(value, ast.Call) or (isinstance(value, ast.Name) and value.id in made)
        for value in returns
    )


def _function_text(model: FileModel, name: str) -> str:
    """The source of the file's top-level function `name`, from the whole text (the parse
    may have cut it); empty when there is none."""
    tree = model.text_tree()
    if tree is None:
        return ""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return ast.get_source_segment(model.source_text, node) or ""
    return ""
