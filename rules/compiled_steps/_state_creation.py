"""Which constructions of training state (see `constructors`) are rebuilt by a repeated
step while the same variables go on training, or create variables in compiled code.

Compiled code (a `tf.function`, a Keras `train_step` override): TensorFlow 2.21 raises
`ValueError: tf.function only supports singleton tf.Variables created on the first call`
as soon as a creation runs unguarded, on the very first call (the function is traced
again to check). Reported are the constructions that really create variables there: a
`tf.Variable`, a Keras optimizer (its constructor creates variables), a TF1 optimizer with
slots that the function applies, and a model or layer that is built there (called,
`build()`, `fit`/`predict`, or built by its constructor: see `constructors`). An unbuilt
model, a slot-less TF1 optimizer and an unapplied one create nothing.

Eager code: a construction repeats in

- a *training loop*, a loop that runs a step in its own iteration (LOOP);
- a loop around a training loop (OUTER_LOOP: an optimizer rebuilt per epoch, a model per
  fold);
- a training step, a function that runs one step per call, called in a loop (STEP);
- a function that runs a training loop of its own, called in a loop (RUN:
  `train_one_epoch(model)` per epoch).

For an optimizer, the loop around the training loop (or calling such a function) must
count passes (`for epoch in range(n)`, `while`) and keep the set of trained variables (no
`.trainable =` in it): a new optimizer per case or stage (`for lr in lrs`, progressive
unfreezing) is often deliberate, and Keras 3 requires one for new variables. A new model
or layer for an optimizer that persists is a mistake in any loop.

It is then reported only when `repetition` shows that it restarts state the same variables
keep training with: an optimizer whose application (in the repetition, or a function it
calls) trains something that persists across repetitions; a model or layer trained by an
optimizer that persists (Keras 3 then raises `Unknown variable` as the new variables reach
it). A repetition that builds both what it trains and its optimizer is a fresh case (a
fold, a trial, a test case per dtype): silent. So are, in eager code, slot-less optimizers
(they reset nothing), a `tf.Variable` (often a deliberate fresh value, such as an
adversarial perturbation), a model that receives another's weights right away
(`set_weights`, `load_weights`: a copy, as in meta-learning), and a construction that runs
only on some paths (under an `if`, a lazy-initialisation guard such as `if self.v is
None:`, in a `match` case or an `except`).

Everywhere: nothing under `with tf.init_scope():`, nothing in code that builds a graph once
(`graph_building`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import Enum

import libcst as cst

from tapelint.semantic.calls.steps import (
    StepIndex,
    innermost_loop,
    under_condition,
    with_items_around,
)
from tapelint.semantic.file_model.children import child_nodes
from tapelint.semantic.file_model.model import CallSite, DefKind, FileModel, Scope
from tapelint.semantic.keras.keras_objects import RUNNING_METHODS

from ._constructors import Constructors, StateKind, calls_inside
from ._graph_building import GraphBuilding
from ._repetition import (
    Binding,
    Operand,
    Persistence,
    Repetitions,
    binding_of,
    counts_passes,
)

_COPY_METHODS = frozenset({"set_weights", "load_weights"})
# Methods that build a model or layer (create its weights) when called.
_BUILDING_METHODS = RUNNING_METHODS | {"build", "__call__"}
_APPLYING_METHODS = frozenset({"apply_gradients", "minimize", "apply"})


class Where(Enum):
    COMPILED = "compiled"  # inside a `tf.function` (or a Keras `train_step`)
    LOOP = "loop"  # in the body of a training loop
    OUTER_LOOP = "outer loop"  # in the body of a loop that runs a training loop per pass
    STEP = "step"  # in a training-step function that is called in a loop
    RUN = "run"  # in a function that runs a training loop, called in a loop


@dataclass(frozen=True)
class StateInStep:
    node: cst.Call
    kind: StateKind
    where: Where
    function: str | None  # the compiled function or the repeated function, by name
    built: cst.Call  # the construction: `node` itself, or the one a helper `node` calls returns


@dataclass(frozen=True)
class _Repetition:
    unit: cst.CSTNode  # the loop, or the function
    scope: Scope  # the scope whose code `unit` is
    where: Where


def state_created_per_step(model: FileModel, index: StepIndex) -> Iterator[StateInStep]:
    """Each construction that a repeated step runs; layers built in the arguments of a model
    built per step (`Sequential([Dense(...)])`, or `head = Dense(...)` then
    `Sequential([base, head])`) are part of that one finding."""
    found = list(_Finder(model, index).per_step())
    nested = {inner for state in found for inner in calls_inside(state.node.args)}
    parts = {
        d
        for state in found
        for name in _names_and_attributes(state.node.args)
        if isinstance(name, cst.Name)
        for d in model.defs_of(name)
    }
    for state in found:
        site = index.call_site(state.node)
        binding = binding_of(model, site) if site is not None else None
        if state.node in nested or (binding is not None and binding.definition in parts):
            continue
        yield state


class _Finder:
    def __init__(self, model: FileModel, index: StepIndex) -> None:
        self.model = model
        self.index = index
        self.constructors = Constructors(model)
        self.graph = GraphBuilding(model)
        self.repetitions = Repetitions(model, index)

    def per_step(self) -> Iterator[StateInStep]:
        for site in self.model.calls:
            kind = self.constructors.kind(site)
            if kind is None or self.graph.lifted(site) or self.graph.builds_graph(site):
                continue
            scope = site.scope
            if self.index.is_compiled(scope):
                if (
                    not under_condition(self.model, site.stmt, scope.node)
                    and self._creates_variables(site, kind)
                    and not self._only_called_expecting_errors(scope)
                ):
                    yield StateInStep(
                        site.node,
                        kind,
                        Where.COMPILED,
                        _function_name(scope),
                        self.constructors.construction(site).node,
                    )
                continue
            if kind is StateKind.VARIABLE or _gets_copied_weights(self.model, site):
                continue
            if kind is StateKind.OPTIMIZER and self.constructors.is_slotless_optimizer(site):
                continue
            binding = binding_of(self.model, site)
            repetition = self._repetition(site, kind)
            if binding is None or repetition is None:
                continue
            if self._restarts_trained_state(kind, binding, repetition):
                name = (
                    repetition.unit.name.value
                    if isinstance(repetition.unit, cst.FunctionDef)
                    else None
                )
                yield StateInStep(
                    site.node,
                    kind,
                    repetition.where,
                    name,
                    self.constructors.construction(site).node,
                )

    # ------------------------------------------------------------------ eager code
    def _repetition(self, site: CallSite, kind: StateKind) -> _Repetition | None:
        """The loop or function that runs the construction again and again, if any. Around
        a training loop, a new optimizer per pass is a mistake only in a loop that counts
        passes and keeps the set of trained variables; a new model or layer for a kept
        optimizer is one in any loop."""
        loop = innermost_loop(site.ctx)
        if loop is not None:
            if under_condition(self.model, site.stmt, loop.node):
                return None
            if self.index.is_training_loop(loop.node, site.scope):
                return _Repetition(loop.node, site.scope, Where.LOOP)
            if self._repeats_passes(loop.node, kind):
                return _Repetition(loop.node, site.scope, Where.OUTER_LOOP)
            return None
        function = site.scope.node
        if not isinstance(function, cst.FunctionDef) or under_condition(
            self.model, site.stmt, function
        ):
            return None
        loops = [
            loop
            for caller, loop in self.repetitions.callers_in_loops(function)
            if not self.graph.builds_graph(caller)
        ]
        if self.index.is_step(function) and loops:
            return _Repetition(function, site.scope, Where.STEP)
        if any(self._repeats_passes(loop, kind) for loop in loops) and (
            kind is not StateKind.OPTIMIZER or not self.repetitions.changes_trainability(function)
        ):
            return _Repetition(function, site.scope, Where.RUN)
        return None

    def _repeats_passes(self, loop: cst.CSTNode, kind: StateKind) -> bool:
        if kind is not StateKind.OPTIMIZER:
            return True
        return counts_passes(loop) and not self.repetitions.changes_trainability(loop)

    def _restarts_trained_state(
        self, kind: StateKind, binding: Binding, repetition: _Repetition
    ) -> bool:
        applications = self.repetitions.applications(repetition.unit, repetition.scope)
        if kind is StateKind.OPTIMIZER:
            return any(
                operand.persistence is Persistence.PERSISTS
                for application in applications
                if binding.holds(application.optimizer)
                for operand in application.trained
            )
        return any(
            application.optimizer.persistence is Persistence.PERSISTS
            and not self._slotless_v1(application.optimizer)
            for application in applications
            if any(binding.holds(operand) for operand in application.trained)
        )

    def _slotless_v1(self, optimizer: Operand) -> bool:
        """A kept TF1 `GradientDescentOptimizer` applies to any variables it is given."""
        for d in optimizer.defs:
            if d.kind is DefKind.ASSIGN and isinstance(d.value, cst.Call):
                site = self.index.call_site(d.value)
                if (
                    site is not None
                    and self.constructors.is_v1_optimizer(site)
                    and self.constructors.is_slotless_optimizer(site)
                ):
                    return True
        return False

    # ------------------------------------------------------------------ compiled code
    def _creates_variables(self, site: CallSite, kind: StateKind) -> bool:
        """Whether a construction in compiled code creates variables there."""
        if kind is StateKind.VARIABLE:
            return True
        if kind is StateKind.OPTIMIZER:
            if not self.constructors.is_v1_optimizer(site):
                return True
            if self.constructors.is_slotless_optimizer(site):
                return False
            return self._used(site, _APPLYING_METHODS, 0)
        return self.constructors.builds_at_construction(site) or self._used(
            site, _BUILDING_METHODS, 0
        )

    def _only_called_expecting_errors(self, scope: Scope) -> bool:
        """Whether every call of the function is made in a block that expects an error
        (`with pytest.raises(ValueError):`, `self.assertRaises...`, `assert_raises`): code
        that demonstrates or tests TensorFlow's refusal."""
        function = _function_of(scope)
        if function is None:
            return False
        calls = self.index.calls_of_function(function)
        return bool(calls) and all(
            any(_expects_error(item.item) for item in with_items_around(self.model, c.stmt))
            for c in calls
        )

    def _used(self, site: CallSite, methods: frozenset[str], depth: int) -> bool:
        """Whether the function calls what `site` builds, or one of `methods` on it: right
        away (`Dense(3)(x)`), through the name it is bound to, or as a part of a model that
        is itself built there."""
        if self.index.calls_with_callee(site.node):
            return True
        binding = binding_of(self.model, site)
        if binding is None or depth > 2:
            return False
        for other in self.model.calls:
            if other.scope is not site.scope or other is site:
                continue
            func = other.node.func
            if self._is_bound(func, binding) or (
                isinstance(func, cst.Attribute)
                and func.attr.value in methods
                and self._is_bound(func.value, binding)
            ):
                return True
            if (
                self.constructors.kind(other) in (StateKind.MODEL, StateKind.LAYER)
                and any(self._is_bound(n, binding) for n in _names_and_attributes(other.node.args))
                and self._used(other, methods, depth + 1)
            ):
                return True
        return False

    def _is_bound(self, expr: cst.BaseExpression, binding: Binding) -> bool:
        if binding.definition is not None and isinstance(expr, cst.Name):
            return binding.definition in self.model.defs_of(expr)
        if binding.attribute is not None and isinstance(expr, cst.Attribute):
            return self.model.module.code_for_node(expr) == binding.attribute
        return False


def _names_and_attributes(nodes: Sequence[cst.CSTNode]) -> Iterator[cst.BaseExpression]:
    pending = list(nodes)
    while pending:
        node = pending.pop()
        if isinstance(node, (cst.Name, cst.Attribute)):
            yield node
        pending.extend(child_nodes(node))


def _function_of(scope: Scope | None) -> cst.FunctionDef | None:
    while scope is not None:
        if isinstance(scope.node, cst.FunctionDef):
            return scope.node
        scope = scope.parent
    return None


def _function_name(scope: Scope | None) -> str | None:
    function = _function_of(scope)
    return function.name.value if function is not None else None


def _expects_error(expr: cst.BaseExpression) -> bool:
    """`pytest.raises(...)`, `self.assertRaises(...)`, `self.assertRaisesRegex(...)`,
    `assert_raises(...)`."""
    if not isinstance(expr, cst.Call):
        return False
    func = expr.func
    name = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", "")
    return isinstance(name, str) and "raises" in name.lower()


def _gets_copied_weights(model: FileModel, site: CallSite) -> bool:
    """`copy = Model(...); copy.set_weights(model.get_weights())`: the statement builds a
    copy (layers in its arguments included), not new state."""
    bound = {
        d
        for d in model.defs_by_stmt.get(site.stmt, [])
        if d.kind is DefKind.ASSIGN and not d.unpack_index
    }
    if not bound:
        return False
    for other in model.calls:
        func = other.node.func
        if (
            other.scope is site.scope
            and isinstance(func, cst.Attribute)
            and func.attr.value in _COPY_METHODS
            and isinstance(func.value, cst.Name)
            and bound & model.defs_of(func.value)
        ):
            return True
    return False
