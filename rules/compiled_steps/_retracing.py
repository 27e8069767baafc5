"""When a `tf.function` is traced again and again: created anew per step, or called with a
Python value that changes every iteration.

A `tf.function` keeps its traces on the function object, keyed by the Python values of its
arguments (a tensor is keyed by dtype and shape only). So a function object created in every
iteration of a loop, or by every call of a function run per step, is traced at every call;
and an object that is reused still traces once per distinct Python number, string or list
it is given. Measured on TensorFlow 2.21: a loop counter passed as an argument traces once
per value, `reduce_retracing=True` does not change that (it relaxes tensor shapes, not Python
values), while `tf.constant(counter)` or an `input_signature` traces once.

Precision: a creation is reported only when the new object is called in the same iteration
(or the same call of the per-step function) where it was made, and either compiles nothing
that changes with the iteration (so it could be created once, before), or is called only
once per creation in a training step (a compiled step used once is never worth its trace).
A function compiled anew for each of several models and then run over a whole dataset, or
compiled afresh by graph-building code that iterates to a fixed point, is a legitimate
look-alike and stays silent. So are, because creating the function once would save no trace:
- a creation in a sweep (`sweeps.py`: a loop over cases written out in the code, such as
  `for dtype, dim in itertools.product(dtypes, dims):` in a test), one trace per case;
- a call that passes the new function a case value (`dim` from `[1, 2, 3]`), which needs its
  own trace whether the function is new or not;
- a function compiled per call of a function that then runs it over a loop of its own (a
  pass over a dataset), unless what it compiles is a training step: callers hand such a
  function a new model or split per call, while a step rebuilt per epoch trains the same
  variables with a new trace each time.
Python values are followed only when they certainly are Python numbers or strings: loop
counters of `range(...)` / `enumerate(...)`, counters incremented in the loop, and
arithmetic, f-strings, `int()`/`float()`/`str()` of those; not the variables or counters
of a sweep (a handful of values, each a case), and not a value the compiled function uses
to set a shape or pick an element (a slice bound, an index, `range(n)`, a `shape=`
argument), where each value is a different program on purpose.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass
from enum import Enum

import libcst as cst

from tapelint.semantic.calls.steps import (
    StepIndex,
    has_input_signature,
    innermost_loop,
    loop_nodes,
    self_attribute_assigned,
    tf_function_decorator,
    wrapped_function,
)
from tapelint.semantic.file_model.expressions import names_in
from tapelint.semantic.file_model.model import (
    CallSite,
    Context,
    Def,
    DefKind,
    FileModel,
    FrameKind,
    Scope,
)
from tapelint.semantic.project_model.names import dotted_name

from ._sweeps import is_case_value, is_sweep

_PYTHON_CONVERSIONS = frozenset({"int", "float", "str", "round", "abs", "bool"})
_COUNTING_ITERABLES = {"range": (), "enumerate": (0,)}  # builtin -> index of the counter


@dataclass(frozen=True)
class PerStepCreation:
    node: cst.CSTNode  # the decorator expression or the `tf.function(...)` call
    name: str | None  # the name the new function is bound to
    per_call_of: str | None  # the function run per step that creates it; None: a loop


@dataclass(frozen=True)
class CounterArgument:
    call: cst.Call
    argument: cst.BaseExpression
    counter: str  # the Python counter the argument changes with


@dataclass(frozen=True)
class _Creation:
    node: cst.CSTNode
    options: cst.CSTNode  # the decorator expression or the call, with its arguments
    definition: Def | None  # the name bound to the new function object
    ctx: Context
    scope: Scope
    function: cst.FunctionDef | None  # a decorated definition
    wrapped: cst.BaseExpression | None  # what `tf.function(...)` compiles
    attribute: str | None = None  # stored as `self.<attribute>`


def creations_per_step(model: FileModel, index: StepIndex) -> Iterator[PerStepCreation]:
    for creation in _creations(model):
        if index.is_compiled(creation.scope):
            continue  # created while an enclosing graph is traced: once per outer trace
        loop = innermost_loop(creation.ctx)
        if loop is not None:
            region: _LoopRegion | _FunctionRegion = _LoopRegion(creation.scope, loop.node)
            per_call_of = None
            per_step = index.is_training_loop(loop.node, creation.scope)
        else:
            owner = creation.scope.node
            if not isinstance(owner, cst.FunctionDef) or index.called_in_loop(owner) is None:
                continue
            region = _FunctionRegion(creation.scope)
            per_call_of = owner.name.value
            per_step = index.is_step(owner)
        calls = [site for site in _calls_of(model, creation, index) if region.contains(site)]
        if not calls:
            continue  # stored, returned or passed on: what happens to it is unknown
        if loop is not None and all(is_sweep(model, node) for node in loop_nodes(creation.ctx)):
            continue  # one per case of a sweep: a handful of traces, each for its case
        if any(_passes_case_value(model, site, region) for site in calls):
            continue  # traced for each case's value anyway: creating it once saves nothing
        repeats = any(region.repeats(site) for site in calls)
        if _depends_on_region(model, index, creation, region) and (not per_step or repeats):
            # It compiles something new each time: legitimate for a function per model
            # (or per trial) run many times, or for graph-building code outside training.
            continue
        if per_call_of is not None and repeats and not _compiles_a_step(model, index, creation):
            # Run over a loop of its own (a dataset) in each call: a pass over data, whose
            # callers hand it a new model or split each time; one trace per pass.
            continue
        name = creation.definition.name if creation.definition is not None else None
        if name is None and creation.attribute is not None:
            name = f"self.{creation.attribute}"
        yield PerStepCreation(creation.node, name, per_call_of)


def counter_arguments(model: FileModel, index: StepIndex) -> Iterator[CounterArgument]:
    for site in model.calls:
        if innermost_loop(site.ctx) is None or index.is_compiled(site.scope):
            continue
        compiled = index.compiled_callee(site)
        if compiled is None or has_input_signature(compiled.options):
            continue
        values = _PythonValues(model, site)
        for position, arg in enumerate(site.node.args):
            if arg.star:
                continue
            value = values.of(arg.value)
            if value.kind is not _Kind.VARYING or value.counter is None:
                continue
            if compiled.function is not None and _sets_a_shape(
                model, compiled.function, _parameter_of(compiled.function, site.node, position)
            ):
                continue  # each value is a different program: its trace is the point
            yield CounterArgument(site.node, arg.value, value.counter)
            break


def varying_counter(model: FileModel, site: CallSite, name: cst.Name) -> cst.CSTNode | None:
    """Where a loop around `site` changes the Python number `name` holds (its `+=`, or the
    `for` that counts it), when every value `name` may hold is a Python value and one of
    them changes with a loop enclosing the call: what a compiled function reading `name`
    as a global would need to see anew on every call (TAP503)."""
    value = _PythonValues(model, site)._name(name)
    if value.kind is not _Kind.VARYING:
        return None
    loops = loop_nodes(site.ctx)
    for d in sorted(model.defs_of(name), key=lambda d: d.order):
        if d.scope is site.scope and (
            any(loop in loops for loop in loop_nodes(d.ctx)) or d.stmt in loops
        ):
            return d.stmt
    return None


# ---------------------------------------------------------------------- creations
def _creations(model: FileModel) -> Iterator[_Creation]:
    for scope in model.scopes:
        node = scope.node
        if not isinstance(node, cst.FunctionDef):
            continue
        decorator = tf_function_decorator(model, node)
        if decorator is None:
            continue
        name_def = next(
            (
                d
                for d in model.defs_by_stmt.get(node, [])
                if d.kind is DefKind.DEFINITION and d.target is node.name
            ),
            None,
        )
        if name_def is not None:
            yield _Creation(
                decorator.decorator,
                decorator.decorator,
                name_def,
                name_def.ctx,
                name_def.scope,
                node,
                None,
            )
    for site in model.calls:
        wrapped = wrapped_function(site)
        if wrapped is None:
            continue
        bound = next(
            (
                d
                for d in model.defs_by_stmt.get(site.stmt, [])
                if d.kind is DefKind.ASSIGN and d.value is site.node and not d.unpack_index
            ),
            None,
        )
        yield _Creation(
            site.node,
            site.node,
            bound,
            site.ctx,
            site.scope,
            None,
            wrapped,
            self_attribute_assigned(site),
        )


def _calls_of(model: FileModel, creation: _Creation, index: StepIndex) -> list[CallSite]:
    """Calls of the new function: directly, through the name it is bound to, or through
    `self.name` when it is stored there (`self.step = tf.function(self._step)`)."""
    calls = list(index.calls_with_callee(creation.node))
    if creation.definition is not None:
        calls.extend(index.calls_of(creation.definition))
    elif creation.attribute is not None:
        target = f"self.{creation.attribute}"
        calls.extend(
            site
            for site in model.calls
            if site.scope is creation.scope and dotted_name(site.node.func) == target
        )
    return calls


class _LoopRegion:
    """One iteration of a loop of a scope."""

    def __init__(self, scope: Scope, loop: cst.CSTNode) -> None:
        self.scope, self.loop = scope, loop

    def contains(self, site: CallSite) -> bool:
        return site.scope is self.scope and self.loop in loop_nodes(site.ctx)

    def repeats(self, site: CallSite) -> bool:
        repeating = _repeating(site.ctx)
        return repeating.index(self.loop) < len(repeating) - 1

    def binds(self, d: Def) -> bool:
        return d.scope is self.scope and self.loop in loop_nodes(d.ctx)


class _FunctionRegion:
    """One call of a function."""

    def __init__(self, scope: Scope) -> None:
        self.scope = scope

    def contains(self, site: CallSite) -> bool:
        return site.scope is self.scope

    def repeats(self, site: CallSite) -> bool:
        return bool(_repeating(site.ctx))

    def binds(self, d: Def) -> bool:
        return d.scope is self.scope


def _repeating(ctx: Context) -> list[cst.CSTNode]:
    """The loops and comprehensions a point runs in, outermost first."""
    kinds = (FrameKind.LOOP, FrameKind.COMPREHENSION)
    return [frame.node for frame in ctx if frame.kind in kinds]


def _depends_on_region(
    model: FileModel, index: StepIndex, creation: _Creation, region: _LoopRegion | _FunctionRegion
) -> bool:
    """Whether what the new function compiles changes from one iteration (or call) to the
    next: it wraps something bound there, its body reads a name bound there, or its options
    do (`tf.function(step, jit_compile=flag)` for each `flag`)."""
    options = creation.options
    if isinstance(options, cst.Call):
        for arg in options.args:
            if arg.value is creation.wrapped:
                continue
            if any(region.binds(d) for n in names_in(arg.value) for d in model.defs_of(n)):
                return True
    if creation.function is not None:
        return _reads_region(model, index, creation.function, region)
    wrapped = creation.wrapped
    while isinstance(wrapped, cst.Attribute):
        wrapped = wrapped.value
    if not isinstance(wrapped, cst.Name):
        return True  # `tf.function(make_step(model))`, a lambda: cannot tell
    for d in model.defs_of(wrapped):
        if not region.binds(d):
            continue
        if d.kind is DefKind.DEFINITION and isinstance(d.stmt, cst.FunctionDef):
            if _reads_region(model, index, d.stmt, region):
                return True
        else:
            return True
    return False


def _reads_region(
    model: FileModel,
    index: StepIndex,
    function: cst.FunctionDef,
    region: _LoopRegion | _FunctionRegion,
) -> bool:
    scope = index.scope_of(function)
    for use in model.uses_by_node.values():
        if use.scope is not scope:
            continue
        for d in use.defs:
            if region.binds(d) and d.stmt is not function:
                return True
    return False


def _passes_case_value(
    model: FileModel, site: CallSite, region: _LoopRegion | _FunctionRegion
) -> bool:
    """Whether the call gives the new function a case value of a sweep of this region
    (`for dtype, dim in itertools.product(dtypes, [1, 2, 3]): tf.function(f)(dtype, dim)`)."""
    for arg in site.node.args:
        if arg.star or not isinstance(arg.value, cst.Name):
            continue
        defs = model.defs_of(arg.value)
        if defs and all(region.binds(d) and is_case_value(model, d) for d in defs):
            return True
    return False


def _compiles_a_step(model: FileModel, index: StepIndex, creation: _Creation) -> bool:
    """Whether the new function is a training step of this file (unknown: no)."""
    if creation.function is not None:
        return index.is_step(creation.function)
    if not isinstance(creation.wrapped, cst.Name):
        return False
    return any(
        d.kind is DefKind.DEFINITION
        and isinstance(d.stmt, cst.FunctionDef)
        and index.is_step(d.stmt)
        for d in model.defs_of(creation.wrapped)
    )


# ---------------------------------------------------------------------- shapes
# Keyword arguments that take a shape: `shape=`, `sample_shape=`, `tf.fill(dims=)`,
# `tf.tile(multiples=)`. (Not `*_size`: `step_size=` is a value.)
_SHAPE_KEYWORDS = ("shape", "dims", "multiples")
# TensorFlow calls whose positional argument at this index is a shape (`tf.zeros((n, g, g))`,
# `tf.reshape(x, [-1, g])`).
_SHAPE_POSITIONS = {
    "tensorflow.zeros": 0,
    "tensorflow.ones": 0,
    "tensorflow.fill": 0,
    "tensorflow.eye": 0,
    "tensorflow.random.normal": 0,
    "tensorflow.random.uniform": 0,
    "tensorflow.random.truncated_normal": 0,
    "tensorflow.random.stateless_normal": 0,
    "tensorflow.random.stateless_uniform": 0,
    "tensorflow.reshape": 1,
    "tensorflow.broadcast_to": 1,
    "tensorflow.tile": 1,
    "tensorflow.linspace": 2,
    "tensorflow.one_hot": 1,
}


def _parameter_of(function: cst.FunctionDef, call: cst.Call, position: int) -> str | None:
    """The name of the parameter of `function` that the argument at `position` binds."""
    arg = call.args[position]
    if arg.keyword is not None:
        return arg.keyword.value
    params = [*function.params.posonly_params, *function.params.params]
    bound_self = (
        isinstance(call.func, cst.Attribute)
        and bool(params)
        and params[0].name.value in ("self", "cls")
    )
    index = position + (1 if bound_self else 0)
    return params[index].name.value if index < len(params) else None


def _sets_a_shape(model: FileModel, function: cst.FunctionDef, parameter: str | None) -> bool:
    """Whether `function` uses `parameter` to decide the shape or the structure of what it
    computes: in a slice bound (`draws[-n // 2:]`), as an index (`variables[i]`: a Python list
    takes no tensor, and each value picks another element), as the length of a Python loop
    (`range(n)`, unrolled while tracing), in a shape keyword (`shape=[n, 3]`, `sample_shape=`,
    `dims=`, `multiples=`), or in the shape a TensorFlow call takes by position (`tf.zeros((n,
    g, g))`, `tf.reshape(x, [-1, g])`, `tf.one_hot(labels, depth)`). Each value then builds a
    different graph on purpose; as a tensor it would leave the shape unknown while tracing,
    which XLA (`jit_compile=True`) refuses."""
    if parameter is None:
        return False
    finder = _ShapeUses(model, parameter)
    function.body.visit(finder)
    return finder.found


class _ShapeUses(cst.CSTVisitor):
    def __init__(self, model: FileModel, parameter: str) -> None:
        self.model = model
        self.parameter = parameter
        self.found = False

    def _mentions(self, node: cst.CSTNode | None) -> bool:
        return node is not None and any(name.value == self.parameter for name in names_in(node))

    def visit_Slice(self, node: cst.Slice) -> None:
        if any(self._mentions(part) for part in (node.lower, node.upper, node.step)):
            self.found = True

    def visit_Index(self, node: cst.Index) -> None:
        # `variables[i]`: a Python list or tuple takes only a Python index, and each value
        # picks another element (another variable, another layer) to trace.
        if self._mentions(node.value):
            self.found = True

    def visit_Call(self, node: cst.Call) -> None:
        is_range = isinstance(node.func, cst.Name) and node.func.value == "range"
        if is_range and any(self._mentions(arg.value) for arg in node.args):
            self.found = True
        for arg in node.args:
            keyword = arg.keyword.value if arg.keyword is not None else ""
            if keyword.endswith(_SHAPE_KEYWORDS) and self._mentions(arg.value):
                self.found = True
        position = _SHAPE_POSITIONS.get(self.model.imports.qualify(node.func) or "")
        positional = [arg.value for arg in node.args if arg.keyword is None and not arg.star]
        if (
            position is not None
            and position < len(positional)
            and self._mentions(positional[position])
        ):
            self.found = True


# ---------------------------------------------------------------------- Python values
class _Kind(Enum):
    UNKNOWN = "unknown"  # a tensor, or anything not certainly a Python value
    CONSTANT = "constant"  # a Python value that is the same in every iteration
    VARYING = "varying"  # a Python value that changes with a loop counter


@dataclass(frozen=True)
class _Value:
    kind: _Kind
    counter: str | None = None


_UNKNOWN = _Value(_Kind.UNKNOWN)
_CONSTANT = _Value(_Kind.CONSTANT)


def _all_of(values: list[_Value]) -> _Value:
    """An expression built from all of these: unknown if any part is."""
    if any(v.kind is _Kind.UNKNOWN for v in values):
        return _UNKNOWN
    return next((v for v in values if v.kind is _Kind.VARYING), _CONSTANT)


class _PythonValues:
    """Whether expressions at a call are Python values changing with a counter of a loop
    that encloses the call."""

    def __init__(self, model: FileModel, site: CallSite) -> None:
        self.model = model
        self.site = site
        self.loops = loop_nodes(site.ctx)
        self.seen: set[Def] = set()

    def of(self, expr: cst.BaseExpression) -> _Value:
        if isinstance(expr, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString)):
            return _CONSTANT
        if isinstance(expr, cst.ConcatenatedString):
            return _CONSTANT
        if isinstance(expr, cst.Name):
            return self._name(expr)
        if isinstance(expr, cst.BinaryOperation):
            return _all_of([self.of(expr.left), self.of(expr.right)])
        if isinstance(expr, cst.UnaryOperation):
            return self.of(expr.expression)
        if isinstance(expr, cst.FormattedString):
            return _all_of(
                [
                    self.of(part.expression)
                    for part in expr.parts
                    if isinstance(part, cst.FormattedStringExpression)
                ]
            )
        if isinstance(expr, (cst.List, cst.Tuple)):
            # A structure is traced leaf by leaf: one changing Python leaf is enough.
            parts = [self.of(element.value) for element in expr.elements]
            varying = next((v for v in parts if v.kind is _Kind.VARYING), None)
            return varying or _all_of(parts)
        if (
            isinstance(expr, cst.Call)
            and self._is_builtin(expr.func, _PYTHON_CONVERSIONS)
            and len(expr.args) == 1
            and not expr.args[0].star
            and expr.args[0].keyword is None
        ):
            return self.of(expr.args[0].value)
        return _UNKNOWN

    def _is_builtin(self, func: cst.BaseExpression, names: Collection[str]) -> bool:
        return (
            isinstance(func, cst.Name)
            and func.value in names
            and not self.model.defs_of(func)
            and self.model.imports.qualify(func) is None
        )

    def _name(self, name: cst.Name) -> _Value:
        defs = self.model.defs_of(name)
        if not defs:
            return _CONSTANT if name.value in ("True", "False", "None") else _UNKNOWN
        # A name that may hold any of these values is as unknown as the least known one.
        return _all_of([self._definition(d) for d in defs])

    def _definition(self, d: Def) -> _Value:
        if d in self.seen:
            return _CONSTANT  # a cycle through `+=` in a loop adds nothing new
        self.seen.add(d)
        if d.kind is DefKind.FOR and isinstance(d.stmt, cst.For) and is_sweep(self.model, d.stmt):
            return _UNKNOWN  # a sweep's variable or counter: a handful of values, each a case
        if d.kind is DefKind.FOR and isinstance(d.value, cst.Call):
            counter_index = _COUNTING_ITERABLES.get(_callee_name(d.value))
            if (
                counter_index is None
                or d.unpack_index != counter_index
                or not self._is_builtin(d.value.func, _COUNTING_ITERABLES)
            ):
                return _UNKNOWN
            return self._varying_if(d, d.stmt in self.loops)
        if d.kind is DefKind.ASSIGN and d.value is not None and not d.unpack_index:
            return self.of(d.value)
        if d.kind is DefKind.AUG and d.value is not None:
            use = self.model.uses_by_node.get(d.target)
            before = [self._definition(p) for p in (use.defs if use else ()) if p is not d]
            value = _all_of([*before, self.of(d.value)])
            if value.kind is _Kind.UNKNOWN or not before:
                return _UNKNOWN
            in_loop = any(loop in self.loops for loop in loop_nodes(d.ctx))
            return self._varying_if(d, in_loop) if value.kind is _Kind.CONSTANT else value
        return _UNKNOWN

    def _varying_if(self, d: Def, varies: bool) -> _Value:
        if varies and d.scope is self.site.scope:
            return _Value(_Kind.VARYING, d.name)
        return _CONSTANT


def _callee_name(call: cst.Call) -> str:
    return call.func.value if isinstance(call.func, cst.Name) else ""
