"""Compiled functions, training steps and training loops: where a step runs again and again.

- A *`tf.function`* is a function decorated with `tf.function` (any spelling the imports
  resolve to it), or the result of a `tf.function(f)` call.
- A *training step* is a function of this file whose own body, outside any loop of its own,
  opens a gradient tape or calls `apply_gradients`: each call is one step. A function whose
  tape sits in a loop of its own trains for an epoch (or a whole run) per call, and is not a
  step: that keeps a loop over folds or trials, which calls such a function, from looking
  like a loop over steps.
- A *training loop* is a `for` / `while` loop that runs a step in its own iteration: a tape
  opened, `apply_gradients` called, or a training step called directly in its body, not in
  a loop nested inside it. An epoch loop around a batch loop is therefore not one; only the
  batch loop is.

Calls are resolved inside this file only: a plain name to the functions it may be bound to
(including `step = tf.function(fn)`); `self.name(...)` to the method of the enclosing class,
or to what `self.name = tf.function(...)` compiles when the class assigns it once;
`agent.name(...)` to the method of the one class of this file `agent` is an instance of.
Everything else is unknown, and unknown never makes a loop a training loop.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import libcst as cst

from tapelint.semantic.calls.callees import instance_class
from tapelint.semantic.file_model.expressions import argument_value, decorator_callee, statements
from tapelint.semantic.file_model.model import (
    CallSite,
    Context,
    Def,
    DefKind,
    FileModel,
    Frame,
    FrameKind,
    Scope,
)
from tapelint.semantic.project_model.names import dotted_name, is_tf_function

_STEP_METHODS = frozenset({"apply_gradients"})


def innermost_loop(ctx: Context) -> Frame | None:
    """The innermost `for` / `while` frame of a context (comprehensions do not count)."""
    for frame in reversed(ctx):
        if frame.kind is FrameKind.LOOP:
            return frame
    return None


def loop_nodes(ctx: Context) -> list[cst.CSTNode]:
    return [frame.node for frame in ctx if frame.kind is FrameKind.LOOP]


def tf_function_decorator(model: FileModel, node: cst.FunctionDef) -> cst.Decorator | None:
    for decorator in node.decorators:
        if is_tf_function(model.imports.qualify(decorator_callee(decorator.decorator))):
            return decorator
    return None


def wrapped_function(site: CallSite) -> cst.BaseExpression | None:
    """What a `tf.function(f, ...)` call compiles; None for `tf.function(jit_compile=True)`
    (a decorator factory) or for any other call."""
    if not is_tf_function(site.qualified):
        return None
    return argument_value(site.node, 0, "func")


def has_input_signature(options: cst.BaseExpression | cst.Call | None) -> bool:
    """Whether a `tf.function(...)` call or decorator fixes the signature (then Python values
    are converted to tensors of that signature instead of being traced as constants)."""
    if not isinstance(options, cst.Call):
        return False
    return argument_value(options, 1, "input_signature") is not None


@dataclass
class CompiledFunction:
    """A `tf.function`: a decorated definition or a `tf.function(f)` call."""

    options: cst.BaseExpression  # the decorator expression or the call: its arguments
    function: cst.FunctionDef | None  # the Python function it compiles, when in this file


@dataclass
class StepIndex:
    """Questions about the functions, calls and loops of one file, answered from indexes
    built once per file."""

    model: FileModel
    _scope_of: dict[cst.CSTNode, Scope] = field(default_factory=dict)
    _calls_of_def: dict[Def, list[CallSite]] = field(default_factory=dict)
    _calls_of_node: dict[cst.CSTNode, list[CallSite]] = field(default_factory=dict)
    _wrapped_by: dict[cst.FunctionDef, list[CallSite]] = field(default_factory=dict)
    _step_scopes: set[Scope] = field(default_factory=set)
    _calls_of_function: dict[cst.FunctionDef, list[CallSite]] | None = None
    _training_loops_of: dict[Scope, set[cst.CSTNode]] = field(default_factory=dict)
    # (class, attribute) -> the `self.attribute = tf.function(...)` calls in its methods
    _attribute_creations: dict[tuple[cst.ClassDef, str], list[CallSite]] = field(
        default_factory=dict
    )

    def __post_init__(self) -> None:
        model = self.model
        self._scope_of = {scope.node: scope for scope in model.scopes}
        for site in model.calls:
            func = site.node.func
            self._calls_of_node.setdefault(func, []).append(site)
            if isinstance(func, cst.Name):
                for d in model.defs_of(func):
                    self._calls_of_def.setdefault(d, []).append(site)
            wrapped = wrapped_function(site)
            if isinstance(wrapped, cst.Name):
                for function in self._functions_named(wrapped):
                    self._wrapped_by.setdefault(function, []).append(site)
            owner = _enclosing_class(site.scope) if wrapped is not None else None
            if owner is None:
                continue
            attribute = self_attribute_assigned(site)
            if attribute is not None:
                self._attribute_creations.setdefault((owner, attribute), []).append(site)
            if isinstance(wrapped, cst.Attribute) and dotted_name(wrapped.value) == "self":
                method = _method_of(owner, wrapped.attr.value)
                if method is not None:  # `tf.function(self._step)` compiles the method
                    self._wrapped_by.setdefault(method, []).append(site)
        for tape in model.tapes:
            if innermost_loop(tape.ctx) is None:
                self._step_scopes.add(tape.scope)
        for site in model.calls:
            func = site.node.func
            if (
                isinstance(func, cst.Attribute)
                and func.attr.value in _STEP_METHODS
                and innermost_loop(site.ctx) is None
            ):
                self._step_scopes.add(site.scope)

    # ------------------------------------------------------------------ functions
    def scope_of(self, node: cst.CSTNode) -> Scope | None:
        return self._scope_of.get(node)

    def is_compiled(self, scope: Scope | None) -> bool:
        """Whether code in `scope` runs only while a graph is traced: the scope, or one that
        encloses it, is a `tf.function` or a Keras `train_step`-like override."""
        while scope is not None:
            if scope.is_compiled:
                return True
            if isinstance(scope.node, cst.FunctionDef) and self._wrapped_by.get(scope.node):
                return True
            scope = scope.parent
        return False

    def is_step(self, function: cst.FunctionDef) -> bool:
        return self.scope_of(function) in self._step_scopes

    def callees(self, site: CallSite) -> list[cst.FunctionDef] | None:
        """The functions of this file a call runs, when every binding of its callee is known
        (through `step = tf.function(fn)` to `fn`); None when any is not."""
        func = site.node.func
        if isinstance(func, cst.Name):
            defs = self.model.defs_of(func)
            found: list[cst.FunctionDef] = []
            for d in defs:
                resolved = self._function_bound_by(d)
                if resolved is None:
                    return None
                found.extend(resolved)
            return found or None
        method = self._method_called_on_self(site)
        if method is not None:
            return [method]
        compiled = self._compiled_attribute(site)
        if compiled is not None and compiled.function is not None:
            return [compiled.function]
        return None

    def calls_of(self, d: Def) -> list[CallSite]:
        """Calls whose callee is a plain name that `d` may be bound to."""
        return self._calls_of_def.get(d, [])

    def calls_with_callee(self, node: cst.CSTNode) -> list[CallSite]:
        """Calls whose callee expression is exactly `node` (`tf.function(f)(x)`)."""
        return self._calls_of_node.get(node, [])

    def calls_of_function(self, function: cst.FunctionDef) -> list[CallSite]:
        """Calls in this file that certainly or possibly run `function`."""
        if self._calls_of_function is None:
            self._calls_of_function = {}
            for site in self.model.calls:
                for callee in self.callees(site) or ():
                    self._calls_of_function.setdefault(callee, []).append(site)
        return self._calls_of_function.get(function, [])

    def compiled_callee(self, site: CallSite) -> CompiledFunction | None:
        """The `tf.function` a call certainly runs, or None when that is not known."""
        func = site.node.func
        if isinstance(func, cst.Name):
            return self._compiled_bound_to(func)
        method = self._method_called_on_self(site)
        if method is None:
            return self._compiled_attribute(site)
        decorator = tf_function_decorator(self.model, method)
        if decorator is None:
            return None
        return CompiledFunction(decorator.decorator, method)

    def _compiled_bound_to(self, name: cst.Name) -> CompiledFunction | None:
        """Every binding of `name` is a `tf.function`; a plain definition that one of them
        wraps (`step = tf.function(step)`) is the same function seen before it was wrapped."""
        defs = self.model.defs_of(name)
        compiled: list[CompiledFunction] = []
        plain: list[cst.FunctionDef] = []
        for d in defs:
            found = self.compiled_bound_by(d)
            if found is not None:
                compiled.append(found)
            elif d.kind is DefKind.DEFINITION and isinstance(d.stmt, cst.FunctionDef):
                plain.append(d.stmt)
            else:
                return None
        if len(compiled) != 1:
            return None
        if any(function is not compiled[0].function for function in plain):
            return None
        return compiled[0]

    def compiled_bound_by(self, d: Def) -> CompiledFunction | None:
        """The `tf.function` a definition binds, if it binds one."""
        if d.kind is DefKind.DEFINITION and isinstance(d.stmt, cst.FunctionDef):
            decorator = tf_function_decorator(self.model, d.stmt)
            if decorator is not None:
                return CompiledFunction(decorator.decorator, d.stmt)
        elif d.kind is DefKind.ASSIGN and isinstance(d.value, cst.Call):
            site = self.call_site(d.value)
            wrapped = wrapped_function(site) if site is not None else None
            if wrapped is not None:
                function = None
                if isinstance(wrapped, cst.Name):
                    functions = self._functions_named(wrapped)
                    function = functions[0] if len(functions) == 1 else None
                return CompiledFunction(d.value, function)
        return None

    def call_site(self, node: cst.Call) -> CallSite | None:
        for site in self._calls_of_node.get(node.func, []):
            if site.node is node:
                return site
        return None

    def _function_bound_by(self, d: Def) -> list[cst.FunctionDef] | None:
        if d.kind is DefKind.DEFINITION and isinstance(d.stmt, cst.FunctionDef):
            return [d.stmt]
        compiled = self.compiled_bound_by(d)
        if compiled is not None and compiled.function is not None:
            return [compiled.function]
        return None

    def _functions_named(self, name: cst.Name) -> list[cst.FunctionDef]:
        return [
            d.stmt
            for d in self.model.defs_of(name)
            if d.kind is DefKind.DEFINITION and isinstance(d.stmt, cst.FunctionDef)
        ]

    def _self_member(self, site: CallSite) -> tuple[cst.ClassDef, str] | None:
        """For `self.name(...)` inside a method: the method's class and `name`."""
        func = site.node.func
        if not (
            isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Name)
            and func.value.value == "self"
        ):
            return None
        owner = _enclosing_class(site.scope)
        return (owner, func.attr.value) if owner is not None else None

    def _method_called_on_self(self, site: CallSite) -> cst.FunctionDef | None:
        """`self.name(...)` inside a method: the method `name` of the same class; and
        `agent.name(...)` where every binding of `agent` is an instance of one class of
        this file (`agent = Agent(env)`)."""
        member = self._self_member(site) or self._instance_member(site)
        return _method_of(*member) if member is not None else None

    def _instance_member(self, site: CallSite) -> tuple[cst.ClassDef, str] | None:
        func = site.node.func
        if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name)):
            return None
        owner = instance_class(self.model, func.value)
        return (owner, func.attr.value) if owner is not None else None

    def _compiled_attribute(self, site: CallSite) -> CompiledFunction | None:
        """`self.name(...)` where the class assigns `self.name = tf.function(...)` once, and
        nothing else to `self.name` anywhere in the file."""
        member = self._self_member(site)
        if member is None:
            return None
        owner, attribute = member
        found = self._attribute_creations.get((owner, attribute), [])
        if len(found) != 1:
            return None
        assignments = re.findall(
            rf"\bself\.{re.escape(attribute)}\s*(?:[-+*/@%&|^]|//|\*\*|<<|>>)?=(?!=)",
            self.model.source_text,
        )
        if len(assignments) != 1:
            return None
        wrapped = wrapped_function(found[0])
        function = None
        if isinstance(wrapped, cst.Attribute) and dotted_name(wrapped.value) == "self":
            function = _method_of(owner, wrapped.attr.value)
        elif isinstance(wrapped, cst.Name):
            functions = self._functions_named(wrapped)
            function = functions[0] if len(functions) == 1 else None
        return CompiledFunction(found[0].node, function)

    # ------------------------------------------------------------------ loops
    def runs_step_directly(self, site: CallSite) -> bool:
        """Whether a call is itself a training step: `apply_gradients`, or a call of a
        function of this file that is a step (every function it may run is one)."""
        func = site.node.func
        if isinstance(func, cst.Attribute) and func.attr.value in _STEP_METHODS:
            return True
        callees = self.callees(site)
        if not callees:
            return False
        return all(self.is_step(function) for function in callees)

    def is_training_loop(self, loop: cst.CSTNode, scope: Scope) -> bool:
        """Whether `loop` (a `for`/`while` of `scope`) runs a training step in its own
        iteration, not only in a loop nested inside it."""
        return loop in self._training_loops(scope)

    def _training_loops(self, scope: Scope) -> set[cst.CSTNode]:
        found = self._training_loops_of.get(scope)
        if found is None:
            found = set()
            for tape in self.model.tapes:
                frame = innermost_loop(tape.ctx)
                if tape.scope is scope and frame is not None:
                    found.add(frame.node)
            for site in self.model.calls:
                frame = innermost_loop(site.ctx)
                if site.scope is scope and frame is not None and self.runs_step_directly(site):
                    found.add(frame.node)
            self._training_loops_of[scope] = found
        return found

    def called_in_loop(self, function: cst.FunctionDef) -> CallSite | None:
        """A call of `function` in a loop of code that runs eagerly, if there is one."""
        for site in self.calls_of_function(function):
            if innermost_loop(site.ctx) is not None and not self.is_compiled(site.scope):
                return site
        return None


def under_condition(model: FileModel, stmt: cst.CSTNode | None, stop: cst.CSTNode) -> bool:
    """Whether `stmt` runs only on some paths between `stop` (a loop or a scope node that
    encloses it) and itself: inside an `if`/`elif`/`else`, a `match` case, an `except` or
    `else` of a `try`. A lazy-initialisation guard (`if self.v is None:`) is such a path."""
    while stmt is not None and stmt is not stop:
        parent = model.stmt_parent.get(stmt)
        if parent is None:
            return False
        owner = parent[0]
        if owner is stop:
            return False
        if isinstance(owner, (cst.If, cst.Match)):
            return True
        if isinstance(owner, (cst.Try, cst.TryStar)) and not _always_runs(stmt, owner):
            return True
        stmt = owner
    return False


def with_items_around(model: FileModel, stmt: cst.CSTNode | None) -> list[cst.WithItem]:
    """The items of every `with` statement whose block holds `stmt`, innermost first,
    through enclosing functions too."""
    items: list[cst.WithItem] = []
    while stmt is not None:
        parent = model.stmt_parent.get(stmt)
        if parent is None:
            break
        owner = parent[0]
        if isinstance(owner, cst.With):
            items.extend(owner.items)
        stmt = owner
    return items


def _always_runs(stmt: cst.CSTNode, owner: cst.Try | cst.TryStar) -> bool:
    """Whether `stmt` sits in the `try` body or the `finally` of `owner`."""
    blocks = [statements(owner.body)]
    if owner.finalbody is not None:
        blocks.append(statements(owner.finalbody.body))
    return any(stmt is member for block in blocks for member in block)


def _enclosing_class(scope: Scope | None) -> cst.ClassDef | None:
    """The class of the method that `scope` is (or is a lambda inside), if any."""
    while scope is not None and not isinstance(scope.node, cst.FunctionDef):
        scope = scope.parent
    owner = scope.parent if scope is not None else None
    return owner.node if owner is not None and isinstance(owner.node, cst.ClassDef) else None


def _method_of(owner: cst.ClassDef, name: str) -> cst.FunctionDef | None:
    for stmt in statements(owner.body):
        if isinstance(stmt, cst.FunctionDef) and stmt.name.value == name:
            return stmt
    return None


def self_attribute_assigned(site: CallSite) -> str | None:
    """`name` when the call's statement is `self.name = <the call>`."""
    stmt = site.stmt
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
        return None
    assign = stmt.body[0]
    if not isinstance(assign, cst.Assign) or assign.value is not site.node:
        return None
    targets = [dotted_name(t.target) or "" for t in assign.targets]
    if len(targets) != 1 or not targets[0].startswith("self.") or targets[0].count(".") != 1:
        return None
    return targets[0].removeprefix("self.")
