"""A `watch` that comes too late: the gradient target depends on a source only through values
computed from it before the tape watched it.

A tape records an operation when one of its inputs is watched *at that moment*: a variable it
accessed (unless `watch_accessed_variables=False`), a tensor already passed to its `watch`, or
the output of an operation it recorded. What it did not record is never recorded later.
Measured on TensorFlow 2.21, for `x = tf.constant(...)`:

- `y = x * x; tape.watch(x); loss = reduce_sum(y)`: the gradient for `x` is None;
- `xt = tf.concat([x, t], 1)` before the block (or in it, before `watch(x)`), then
  `u = net(xt)`: None, although the model's call is recorded;
- `u = net(x); tape.watch(x)`: a gradient. The model's variables made the tape record the
  call, and `x` is watched by the time the gradient is asked. So is `y = w * x` with `w` a
  variable, and `concat([x, t])` after `watch(t)`;
- `y = x * x; tape.watch(x); loss = y + 3 * x`: 3 where 2x + 3 is right. Not None, so not
  reported here: TAP201's meaning is a None gradient.

So a source (not a known `tf.Variable`: a parameter counts, since the tape is told to watch
it like a tensor) is reported when every path from it to the target goes through a value
computed from it while the tape could not record: before the tape's block, or in the block
before the first `watch` that covers it by operations whose inputs are certainly not watched
yet (the unwatched source, numbers, plain tensors, values computed the same way) and
certainly differentiable (arithmetic and the `tf` ops listed below, and functions of the file
that only compute their result from their arguments with those: `def features(x, t): return
tf.concat([x, t], 1)`). Anything else on the way (a call of a model, of another helper, a
variable, an attribute) may have been recorded, and is given the benefit of the doubt. Only
straight-line code is judged: a `watch` inside a loop of the block is not ordered with the
uses around it, and a tape entered more than once or handed to other code may be watched
elsewhere.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum

import libcst as cst

from tapelint.semantic.calls.callees import plain_function
from tapelint.semantic.file_model.expressions import argument_value, descendants, statements
from tapelint.semantic.file_model.model import (
    Def,
    DefKind,
    FileModel,
    FrameKind,
    TapeCall,
    TapeInstance,
    Tri,
    is_recording,
)
from tapelint.semantic.flow.dataflow import value_names_in
from tapelint.semantic.flow.watching import (
    covers,
    is_plain_tensor,
    may_be_watched_elsewhere,
    source_parts,
    watch_calls,
    watched_argument,
)

# Differentiable ops that compute from their tensor arguments only (no variables, no
# callables): run on values the tape does not watch, they are not recorded.
_DIFFERENTIABLE = frozenset(
    [
        f"tensorflow.{op}"
        for op in (
            "concat", "stack", "reshape", "expand_dims", "squeeze", "transpose", "tile",
            "identity", "add", "add_n", "subtract", "multiply", "divide",
            "matmul", "einsum", "square", "sqrt", "exp", "sin", "cos", "tan", "tanh", "sigmoid",
            "abs", "pow", "norm", "reduce_sum", "reduce_mean",
        )
    ]
    + [
        f"tensorflow.math.{op}"
        for op in (
            "add", "add_n", "subtract", "multiply", "divide", "square", "sqrt", "exp", "log",
            "log1p", "sin", "cos", "tan", "tanh", "sigmoid", "softplus", "abs", "pow",
            "reduce_sum", "reduce_mean",
        )
    ]
    + [f"tensorflow.nn.{op}" for op in ("relu", "sigmoid", "tanh", "softmax", "softplus", "elu")]
)  # fmt: skip
# Ops whose result carries no gradient from their arguments (and records nothing useful).
_NO_GRADIENT = frozenset(
    {
        "tensorflow.shape",
        "tensorflow.size",
        "tensorflow.rank",
        "tensorflow.stop_gradient",
        "tensorflow.zeros_like",
        "tensorflow.ones_like",
        "tensorflow.constant",
        "tensorflow.zeros",
        "tensorflow.ones",
        "tensorflow.fill",
        "tensorflow.linspace",
        "tensorflow.range",
    }
)
_METADATA_ATTRIBUTES = frozenset({"shape", "dtype", "ndim"})
_ARITHMETIC = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.Power, cst.MatrixMultiply)
_CONSTANT_NAMES = frozenset({"True", "False", "None"})


class _Path(Enum):
    LOST = "lost"  # through a value computed from the source while the tape did not record
    LIVE = "live"  # through an operation the tape recorded with the source as an input
    UNKNOWN = "unknown"


_NONE: frozenset[_Path] = frozenset()
_UNKNOWN = frozenset({_Path.UNKNOWN})
_LOST = frozenset({_Path.LOST})


@dataclass(frozen=True)
class LateWatch:
    source: cst.Name  # the source as written in the gradient call
    watch: TapeCall  # the first `watch` that covers it
    through: Def  # a value computed from it before that watch, on the way to the target
    before_block: bool  # `through` was computed before the tape's block


def sources_watched_too_late(model: FileModel, call: TapeCall) -> Iterator[LateWatch]:
    """Sources of `call` whose every path to the target was computed before its tape
    watched them, so that the gradient for them is None."""
    tape = call.tape
    target = argument_value(call.node, 0, "target")
    if not isinstance(target, cst.Name) or not _judged(model, tape):
        return
    watches = watch_calls(model, tape)
    for part in source_parts(call):
        # TAP201 is about tensors: a known `tf.Variable` is not judged. A source of unknown
        # kind (a parameter) is, since the tape is told to `watch` it like a tensor.
        if not isinstance(part, cst.Name) or is_plain_tensor(model, part, tape) is Tri.NO:
            continue
        first = _first_covering_watch(model, tape, part, watches)
        if first is None:
            continue
        paths = _Paths(model, tape, part, first)
        if paths.of_name(target) == _LOST and paths.lost:
            through = min(paths.lost, key=lambda d: d.order)
            yield LateWatch(part, first, through, not is_recording(through.ctx, tape))


def _judged(model: FileModel, tape: TapeInstance) -> bool:
    """A tape entered once, by the `with` that creates it, and not handed to other code."""
    return (
        len(tape.blocks) == 1
        and tape.stmt in tape.blocks
        and not may_be_watched_elsewhere(model, tape)
    )


def _first_covering_watch(
    model: FileModel, tape: TapeInstance, source: cst.Name, watches: list[TapeCall]
) -> TapeCall | None:
    """The earliest `watch` that may cover `source`, when one certainly does and the earliest
    is in straight-line code of the block."""
    covering = []
    for watch in watches:
        argument = watched_argument(watch)
        answer = covers(model, argument, source) if argument is not None else Tri.UNKNOWN
        if answer is not Tri.NO:
            covering.append((watch, answer))
    if not any(answer is Tri.YES for _, answer in covering):
        return None
    first = min((watch for watch, _ in covering), key=lambda w: w.order)
    return first if _straight_line(first.ctx, tape) else None


def _straight_line(ctx: tuple, tape: TapeInstance) -> bool:
    """Recording, and not inside a loop or comprehension of the tape's block."""
    if not is_recording(ctx, tape):
        return False
    inside = False
    for frame in ctx:
        if frame.tape is tape and frame.kind is FrameKind.TAPE:
            inside = True
        elif inside and frame.kind in (FrameKind.LOOP, FrameKind.COMPREHENSION):
            return False
    return True


class _Paths:
    """How the values of the tape's scope depend on one source, given its first watch."""

    def __init__(self, model: FileModel, tape: TapeInstance, source: cst.Name, watch: TapeCall):
        self.model = model
        self.tape = tape
        self.watch = watch
        self.source_defs = model.defs_of(source)
        self.source_is_tensor = (
            is_plain_tensor(model, source, tape) is Tri.YES
            or tape.watch_accessed_variables is Tri.NO
        )
        self.local = bool(self.source_defs) and all(d.scope is tape.scope for d in self.source_defs)
        self.block = next(iter(tape.blocks))
        self.helpers = _OpHelpers(model)
        self.lost: set[Def] = set()  # where the source entered a value the tape did not record
        self._paths: dict[Def, frozenset[_Path]] = {}
        self._unconnected: dict[Def, bool] = {}

    # ------------------------------------------------------------------ dependence
    def is_source(self, name: cst.Name, seen: frozenset[Def] = frozenset()) -> bool:
        """`name` holds the source itself: its definitions, or a plain alias of them
        (`inputs = x`, which computes nothing: watching `x` watches `inputs`)."""
        defs = self.model.defs_of(name)
        if defs == self.source_defs:
            return bool(defs)
        if not defs or defs & seen:
            return False
        return all(
            d.kind is DefKind.ASSIGN
            and isinstance(d.value, cst.Name)
            and self.is_source(d.value, seen | defs)
            for d in defs
        )

    def of_name(self, name: cst.Name) -> frozenset[_Path]:
        defs = self.model.defs_of(name)
        if not self.local:
            return _UNKNOWN
        if not defs:
            return _NONE  # a builtin or a star import: made elsewhere, not from the source
        if self.is_source(name):
            return frozenset({_Path.LIVE})  # read where the tape records it
        if defs & self.source_defs:
            return _UNKNOWN
        found: set[_Path] = set()
        for d in defs:
            found |= self._of_definition(d)
        return frozenset(found)

    def _of_definition(self, d: Def) -> frozenset[_Path]:
        cached = self._paths.get(d)
        if cached is not None:
            return cached
        self._paths[d] = _UNKNOWN  # cycles
        answer = self._definition_paths(d)
        self._paths[d] = answer
        return answer

    def _definition_paths(self, d: Def) -> frozenset[_Path]:
        if d.scope is not self.tape.scope or d.kind in (
            DefKind.PARAM,
            DefKind.DEFINITION,
            DefKind.IMPORT,
        ):
            return _NONE  # the source is local to the tape's scope: these cannot hold it
        if d.value is None:
            return _UNKNOWN
        if d.kind not in (DefKind.ASSIGN, DefKind.AUG):
            return _UNKNOWN if self._passed(d.value) else _NONE
        if self._not_recorded(d):
            found = self._held(d.value)
            if _Path.LOST in found and self._reads_source(d.value):
                self.lost.add(d)
        elif is_recording(d.ctx, self.tape):
            found = self._passed(d.value)
        else:
            return _UNKNOWN  # after the block or stopped: TAP101's question
        if d.kind is DefKind.AUG and isinstance(d.target, cst.Name):
            found = found | self.of_name(d.target)
        return found

    def _passed(self, value: cst.BaseExpression) -> frozenset[_Path]:
        """What an operation the tape may record passes on: every path of its operands, the
        source itself becoming a recorded (live) path."""
        found: set[_Path] = set()
        for name in _operands(value, self.model):
            found |= self.of_name(name)
        if self._may_read_source(value):
            found.add(_Path.UNKNOWN)
        return frozenset(found)

    def _may_read_source(self, value: cst.BaseExpression) -> bool:
        """Whether a call in `value` may read the source itself, so that a use after the
        watch hides in it: a function or lambda of the tape's scope (a closure over a local
        source); for a source of the module (a script, a notebook), anything of the file but
        an object a library made from none of the file's code (a method or a class of the
        file may read the global)."""
        module_level = isinstance(self.tape.scope.node, cst.Module)
        for node in _calls_in(value):
            root = node.func
            while isinstance(root, cst.Attribute):
                root = root.value
            if not isinstance(root, cst.Name):
                if module_level:
                    return True
                continue
            for d in self.model.defs_of(root):
                if d.kind is DefKind.IMPORT or d.scope is not self.tape.scope:
                    continue
                if d.kind is DefKind.DEFINITION or isinstance(d.value, cst.Lambda):
                    return True
                if module_level and not self._library_object(root):
                    return True
        return False

    def _library_object(self, name: cst.Name) -> bool:
        """An object a library made (`keras.Sequential([...])`, a Keras loss) from nothing
        of this file's code: its calls run the library's code, which cannot read the
        source."""
        defs = self.model.defs_of(name)
        return bool(defs) and all(
            d.kind is DefKind.ASSIGN
            and isinstance(d.value, cst.Call)
            and self.model.imports.qualify(d.value.func) is not None
            and not self._runs_own_code(d.value)
            for d in defs
        )

    def _runs_own_code(self, value: cst.BaseExpression) -> bool:
        """A lambda, or a function or class of the file, anywhere in `value`."""
        for node in _names(value):
            if any(d.kind is DefKind.DEFINITION for d in self.model.defs_of(node)):
                return True
        return any(isinstance(n, cst.Lambda) for n in descendants(value))

    def _reads_source(self, value: cst.BaseExpression) -> bool:
        return any(self.is_source(n) for n in _operands(value, self.model))

    # ------------------------------------------------------------------ recording
    def _not_recorded(self, d: Def) -> bool:
        """`d` ran while the tape could not record it: before its block, or in the block
        before the watch with no input the tape watched."""
        if not is_recording(d.ctx, self.tape):
            stopped = any(f.kind is FrameKind.STOP for f in d.ctx)
            return not stopped and self.model.written_before(d.stmt, self.block)
        if d.order > self.watch.order or not _straight_line(d.ctx, self.tape):
            return False
        return d.value is not None and not self._connected(d.value, d.order)

    def _held(self, value: cst.BaseExpression) -> frozenset[_Path]:
        """Paths through a value bound while the tape did not record: a display
        (`inputs = [x, idx, adj]`) holds its values and computes nothing, so the source in it
        is the very tensor a later watch watches (a live path); anything else is walked."""
        if not isinstance(value, (cst.List, cst.Tuple, cst.Dict)):
            return self._walk(value)
        found: frozenset[_Path] = _NONE
        for element in value.elements:
            held = getattr(element, "value", None)
            if isinstance(held, cst.Name) and self.is_source(held):
                found = found | {_Path.LIVE}
            elif held is not None:
                found = found | self._held(held)
        return found

    def _walk(self, expr: cst.BaseExpression) -> frozenset[_Path]:
        """Paths through a value computed while the tape did not record it: the source
        becomes a lost path. Only differentiable ops are followed; on anything else that
        depends on the source the path is unknown."""
        if isinstance(expr, cst.Name):
            if expr.value in _CONSTANT_NAMES:
                return _NONE
            if self.is_source(expr):
                return _LOST
            reached = self.of_name(expr)
            return _LOST if reached == _LOST else (_NONE if not reached else _UNKNOWN)
        if isinstance(expr, (cst.BaseNumber, cst.SimpleString)):
            return _NONE
        if isinstance(expr, cst.Call):
            return self._walk_call(expr)
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, _ARITHMETIC):
            return self._walk(expr.left) | self._walk(expr.right)
        if isinstance(expr, cst.UnaryOperation) and isinstance(
            expr.operator, (cst.Minus, cst.Plus)
        ):
            return self._walk(expr.expression)
        if isinstance(expr, cst.Subscript):
            return self._walk(expr.value)  # a slice is differentiable; its index carries none
        if isinstance(expr, (cst.List, cst.Tuple)):
            found: frozenset[_Path] = _NONE
            for element in expr.elements:
                found = found | self._walk(element.value)
            return found
        if isinstance(expr, cst.Attribute) and (
            expr.attr.value in _METADATA_ATTRIBUTES or _is_tensorflow(self.model, expr)
        ):
            return _NONE
        return _UNKNOWN if self._passed(expr) else _NONE

    def _walk_call(self, call: cst.Call) -> frozenset[_Path]:
        qualified = self.model.imports.qualify(call.func)
        if qualified in _NO_GRADIENT or (
            qualified is not None and qualified.startswith("tensorflow.random.")
        ):
            return _NONE
        if qualified in _DIFFERENTIABLE or self.helpers.computes_only(call):
            found: frozenset[_Path] = _NONE
            for arg in call.args:
                found = found | self._walk(arg.value)
            return found
        return _UNKNOWN if self._passed(call) else _NONE

    def _connected(self, expr: cst.BaseExpression, at: int) -> bool:
        """Whether an input of `expr` may be watched by the tape at traversal order `at`."""
        if isinstance(expr, cst.Name):
            return expr.value not in _CONSTANT_NAMES and not self._unconnected_name(expr, at)
        if isinstance(expr, (cst.BaseNumber, cst.SimpleString)):
            return False
        if isinstance(expr, cst.Call):
            qualified = self.model.imports.qualify(expr.func)
            known = (
                qualified in _DIFFERENTIABLE
                or qualified in _NO_GRADIENT
                or self.helpers.computes_only(expr)
            )
            if not known and not (qualified or "").startswith("tensorflow.random."):
                return True  # a model, a helper: may read variables
            return any(self._connected(arg.value, at) for arg in expr.args)
        if isinstance(expr, cst.BinaryOperation):
            return self._connected(expr.left, at) or self._connected(expr.right, at)
        if isinstance(expr, cst.UnaryOperation):
            return self._connected(expr.expression, at)
        if isinstance(expr, cst.Subscript):
            return self._connected(expr.value, at) or any(
                self._connected(name, at) for s in expr.slice for name in _names(s)
            )
        if isinstance(expr, (cst.List, cst.Tuple)):
            return any(self._connected(e.value, at) for e in expr.elements)
        if isinstance(expr, cst.Attribute):
            return not (expr.attr.value in _METADATA_ATTRIBUTES or _is_tensorflow(self.model, expr))
        return True

    def _unconnected_name(self, name: cst.Name, at: int) -> bool:
        """`name` holds a tensor the tape does not watch at `at`: the source itself (a plain
        tensor), a number, a plain tensor, or a value computed from such values while the
        tape did not record it; and no `watch` before `at` may cover it."""
        defs = self.model.defs_of(name)
        if not defs:
            return False
        if self.is_source(name):
            return self.source_is_tensor
        if defs & self.source_defs:
            return False
        if is_plain_tensor(self.model, name, self.tape) is not Tri.YES and not all(
            self._unconnected_definition(d) for d in defs
        ):
            return False
        return not any(
            watch.order < at and covers(self.model, argument, name) is not Tri.NO
            for watch in watch_calls(self.model, self.tape)
            if (argument := watched_argument(watch)) is not None
        )

    def _unconnected_definition(self, d: Def) -> bool:
        cached = self._unconnected.get(d)
        if cached is not None:
            return cached
        self._unconnected[d] = False  # cycles
        answer = False
        if d.kind is DefKind.ASSIGN and d.value is not None and d.scope is self.tape.scope:
            if _is_number(d.value):
                answer = True
            elif isinstance(d.value, cst.Name):
                answer = not self._connected(d.value, d.order)
            elif _computes_tensor(self.model, d.value) or (
                isinstance(d.value, cst.Call) and self.helpers.computes_only(d.value)
            ):
                # An op's result is a tensor, never a variable: unwatched unless it was
                # recorded (in the block, from a watched input).
                answer = not is_recording(d.ctx, self.tape) or self._not_recorded(d)
        self._unconnected[d] = answer
        return answer


class _OpHelpers:
    """Functions of the file that compute their result from their arguments with the
    differentiable ops only, like one of them: run on values the tape does not watch, they
    are not recorded either. A function called by its bare name, defined once, undecorated,
    whose body binds names and ends in its one `return`, every value made of its
    parameters, the names it bound, numbers, arithmetic, indexing, lists and tuples, and
    calls of the listed ops (keyword arguments included). Anything else (a model, a
    variable, a global, another helper) keeps the benefit of the doubt."""

    def __init__(self, model: FileModel) -> None:
        self.model = model
        self._answers: dict[cst.FunctionDef, bool] = {}

    def computes_only(self, call: cst.Call) -> bool:
        function = plain_function(self.model, call)
        if function is None:
            return False
        if function not in self._answers:
            self._answers[function] = self._only_ops(function)
        return self._answers[function]

    def _only_ops(self, function: cst.FunctionDef) -> bool:
        params = function.params
        if isinstance(params.star_arg, cst.Param) or params.star_kwarg is not None:
            return False  # `*args`, `**kwargs`
        known = {
            p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)
        }
        body = statements(function.body)
        if not body:
            return False
        for position, stmt in enumerate(body):
            if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
                return False
            small = stmt.body[0]
            last = position == len(body) - 1
            if last and isinstance(small, cst.Return) and small.value is not None:
                return self._op_value(small.value, known)
            if not isinstance(small, cst.Assign) or len(small.targets) != 1:
                return False
            target = small.targets[0].target
            if not isinstance(target, cst.Name) or not self._op_value(small.value, known):
                return False
            known.add(target.value)
        return False

    def _op_value(self, expr: cst.BaseExpression, known: set[str]) -> bool:
        if isinstance(expr, cst.Name):
            return expr.value in known
        if isinstance(expr, (cst.BaseNumber, cst.SimpleString)):
            return True
        if isinstance(expr, cst.BinaryOperation):
            return isinstance(expr.operator, _ARITHMETIC) and all(
                self._op_value(side, known) for side in (expr.left, expr.right)
            )
        if isinstance(expr, cst.UnaryOperation):
            return isinstance(expr.operator, (cst.Minus, cst.Plus)) and self._op_value(
                expr.expression, known
            )
        if isinstance(expr, (cst.List, cst.Tuple)):
            return all(
                isinstance(e, cst.Element) and self._op_value(e.value, known) for e in expr.elements
            )
        if isinstance(expr, cst.Subscript):
            return self._op_value(expr.value, known) and all(
                self._index(element.slice, known) for element in expr.slice
            )
        if isinstance(expr, cst.Call):
            return self.model.imports.qualify(expr.func) in _DIFFERENTIABLE and all(
                arg.star == "" and self._op_value(arg.value, known) for arg in expr.args
            )
        return False

    def _index(self, index: cst.BaseSlice, known: set[str]) -> bool:
        if isinstance(index, cst.Slice):
            parts = (index.lower, index.upper, index.step)
            return all(part is None or self._op_value(part, known) for part in parts)
        return isinstance(index, cst.Index) and self._op_value(index.value, known)


def _is_number(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        expr = expr.expression
    return isinstance(expr, (cst.Integer, cst.Float))


def _computes_tensor(model: FileModel, expr: cst.BaseExpression) -> bool:
    """Arithmetic, or a listed `tf` op: the result is a new tensor."""
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, _ARITHMETIC):
        return True
    if isinstance(expr, cst.Call):
        qualified = model.imports.qualify(expr.func)
        return qualified in _DIFFERENTIABLE or (qualified or "").startswith("tensorflow.random.")
    return False


def _is_tensorflow(model: FileModel, expr: cst.Attribute) -> bool:
    """`tf.float32` and the like: a constant of the TensorFlow module."""
    qualified = model.imports.qualify(expr)
    return qualified is not None and qualified.startswith("tensorflow.")


def _operands(value: cst.BaseExpression, model: FileModel) -> Iterator[cst.Name]:
    """The names `value` reads as values: not indices, not keyword names (`axis=`)."""
    keywords = {id(arg.keyword) for call in _calls_in(value) for arg in call.args if arg.keyword}
    return (n for n in value_names_in(value, model.imports) if id(n) not in keywords)


def _names(node: cst.CSTNode) -> Iterator[cst.Name]:
    return (n for n in descendants(node, skip=(cst.Lambda,)) if isinstance(n, cst.Name))


def _calls_in(node: cst.CSTNode) -> Iterator[cst.Call]:
    return (n for n in descendants(node, skip=(cst.Lambda,)) if isinstance(n, cst.Call))
