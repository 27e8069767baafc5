"""Which statements inside a tape's block do TensorFlow work the tape has no use for?

A statement is unrelated work when it runs a TensorFlow op (preprocessing, data loading,
noise, one-hot labels) on values that certainly do not depend on anything the tape watches.
"Certainly" is strict: only literals, the function's own parameters that are not gradient
sources, module constants, NumPy and TensorFlow ops on those, and `next(...)` of an
iterator count as independent. A model or layer call, a variable, an attribute (`self.w`),
a call of any other function, or a name this analysis cannot resolve counts as dependent.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TypeGuard

import libcst as cst

from tapelint.semantic.file_model.children import child_nodes
from tapelint.semantic.file_model.expressions import child_blocks, contains, names_in, statements
from tapelint.semantic.file_model.model import (
    Def,
    DefKind,
    FileModel,
    Scope,
    TapeInstance,
    Tri,
    is_recording,
)
from tapelint.semantic.flow.dataflow import Watched
from tapelint.semantic.project_model.names import is_numpy, is_tensorflow

from ._lifecycle import escapes

# TensorFlow calls that are not work worth moving: metadata, constants, identity, logging,
# and constructors of state or control flow (other rules speak about those).
_NOT_WORK = frozenset(
    {
        "tensorflow.shape",
        "tensorflow.size",
        "tensorflow.rank",
        "tensorflow.shape_n",
        "tensorflow.constant",
        "tensorflow.zeros",
        "tensorflow.ones",
        "tensorflow.fill",
        "tensorflow.zeros_like",
        "tensorflow.ones_like",
        "tensorflow.convert_to_tensor",
        "tensorflow.identity",
        "tensorflow.stop_gradient",
        "tensorflow.print",
    }
)
_NOT_OPS = frozenset(
    {
        "tensorflow.Variable",
        "tensorflow.GradientTape",
        "tensorflow.Module",
        "tensorflow.function",
        "tensorflow.py_function",
        "tensorflow.numpy_function",
        "tensorflow.custom_gradient",
    }
)
_LOG_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical"})
# Assertions on the inputs are checks, not work.
_CHECKS = ("tensorflow.debugging.", "tensorflow.assert_")
_KERAS_OPS = ("keras.ops.", "keras.random.")
_DATA_BUILTINS = frozenset(
    {"range", "len", "int", "float", "abs", "min", "max", "round", "zip", "enumerate", "list"}
    | {"tuple"}
)
# Methods of arrays and tensors that only convert or reshape the value they are called on.
_DATA_METHODS = frozenset({"astype", "reshape", "transpose", "squeeze", "flatten", "ravel", "copy"})
_METADATA_ATTRIBUTES = frozenset({"shape", "dtype", "ndim"})


def unrelated_work(model: FileModel, block: cst.With) -> cst.CSTNode | None:
    """The first statement in `block` (a `with` block that enters one or more tapes) that does
    TensorFlow work on values that certainly do not depend on what any tape recording it
    watches, or None. Nothing is reported when one of those tapes watches tensors explicitly,
    does not watch the variables it reads, escapes, or answers no gradient call in its own
    function: what it needs recorded is then not known."""
    tapes = _tapes_recording(model, block)
    if not tapes:
        return None
    watched: set[str] = set()
    for tape in tapes:
        if tape.watch_accessed_variables is not Tri.YES or escapes(model, tape):
            return None
        calls = model.calls_on(tape)
        if any(c.method == "watch" for c in calls):
            return None
        gradient_calls = [c for c in calls if c.is_gradient and c.scope is tape.scope]
        if not gradient_calls:
            return None
        for call in gradient_calls:
            watched |= Watched(model, call).names
    independence = _Independence(model, tapes[0].scope, watched)
    for stmt, loops in _recorded_statements(model, statements(block.body)):
        for small in stmt.body:
            if independence.unrelated(stmt, small) and not _tied_to_loop(model, small, loops):
                return small
    return None


def _tied_to_loop(
    model: FileModel, small: cst.BaseSmallStatement, loops: tuple[cst.CSTNode, ...]
) -> bool:
    """Whether `small` sits in a loop inside the block and reads a name that loop binds (its
    target, or a name assigned in its body): it runs once per iteration, between the watched
    work of the iterations (teacher forcing: `dec_input = tf.expand_dims(targ[:, t], 1)`),
    so it cannot move before the `with` block as it is."""
    if not loops:
        return False
    value = getattr(small, "value", None)
    if value is None:
        return False
    for name in names_in(value):
        for d in model.defs_of(name):
            if any(d.stmt is loop or contains(loop, d.stmt) for loop in loops):
                return True
    return False


def _tapes_recording(model: FileModel, block: cst.With) -> list[TapeInstance]:
    """The tapes `block` enters, and the tapes of enclosing blocks recording around them."""
    entered = [t for t in model.tapes if block in t.blocks]
    tapes = list(entered)
    for tape in entered:
        for frame in tape.ctx:
            outer = frame.tape
            if outer is not None and outer not in tapes and is_recording(tape.ctx, outer):
                tapes.append(outer)
    return tapes


def _recorded_statements(
    model: FileModel, body: Sequence[cst.CSTNode], loops: tuple[cst.CSTNode, ...] = ()
) -> Iterator[tuple[cst.SimpleStatementLine, tuple[cst.CSTNode, ...]]]:
    """The simple statements of a block, nested ones included, that the tape records:
    not under `stop_recording()`, not in another tape's block, not in a nested function.
    Each comes with the loops inside the block that enclose it."""
    for stmt in body:
        if isinstance(stmt, cst.SimpleStatementLine):
            yield stmt, loops
        elif not _leaves_the_recording(model, stmt):
            inner_loops = (*loops, stmt) if isinstance(stmt, (cst.For, cst.While)) else loops
            for inner in child_blocks(stmt):
                yield from _recorded_statements(model, inner, inner_loops)


def _leaves_the_recording(model: FileModel, node: cst.CSTNode) -> bool:
    """A nested definition (runs later), another tape's block (checked for that tape) or a
    `stop_recording()` block."""
    if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
        return True
    if not isinstance(node, cst.With):
        return False
    if any(node in t.blocks for t in model.tapes):
        return True
    for item in node.items:
        expr = item.item
        if isinstance(expr, cst.Call):
            call = model.tape_call_at(expr)
            if call is not None and call.method == "stop_recording":
                return True
    return False


class _Independence:
    def __init__(self, model: FileModel, scope: Scope, watched: set[str]) -> None:
        self.model = model
        self.scope = scope
        self.watched = watched
        self._defs: dict[Def, bool] = {}
        # A definition that reaches itself (`x = f(x)` in a loop) adds no dependence of its
        # own: while it is evaluated it counts as independent, and answers that assumed so
        # are not kept.
        self._visiting: set[Def] = set()
        self._assumed = False

    def unrelated(self, stmt: cst.SimpleStatementLine, small: cst.BaseSmallStatement) -> bool:
        if isinstance(small, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
            value = small.value
            targets = (
                [t.target for t in small.targets]
                if isinstance(small, cst.Assign)
                else [small.target]
            )
            if value is None or not all(_plain_names(t) for t in targets):
                return False
            bound = self.model.defs_by_stmt.get(stmt, [])
            if any(d.name in self.watched for d in bound):
                return False
            if isinstance(small, cst.AugAssign) and not self.independent(small.target):
                return False
        elif isinstance(small, cst.Expr) and not _is_logging(small.value):
            value = small.value
        else:
            return False
        return self._works(value) and self.independent(value)

    def _works(self, expr: cst.CSTNode) -> bool:
        """Whether evaluating `expr` certainly runs a TensorFlow op worth moving."""
        if isinstance(expr, cst.Lambda):
            return False
        if isinstance(expr, cst.Call):
            qualified = self.model.imports.qualify(expr.func)
            if _is_op(qualified) and not _is_check_or_metadata(qualified):
                return True
            if isinstance(expr.func, cst.Name) and expr.func.value == "next":
                return True
        return any(self._works(child) for child in child_nodes(expr))

    def independent(self, expr: cst.CSTNode) -> bool:
        """Certainly computed from nothing the tape watches (see the module docstring)."""
        if isinstance(expr, (cst.BaseNumber, cst.SimpleString, cst.ConcatenatedString)):
            return True
        if isinstance(expr, cst.Name):
            if expr.value in ("True", "False", "None"):
                return True
            if expr.value in self.watched:
                return False
            defs = self.model.defs_of(expr)
            return bool(defs) and all(self._def_independent(d) for d in defs)
        if isinstance(expr, cst.Attribute):
            if is_tensorflow(self.model.imports.qualify(expr)):
                return True  # `tf.float32`
            # `y.shape` of data is data; `tf.cast(y, pred.dtype)` is placed after `pred` on
            # purpose, so the metadata of a dependent value counts as dependent.
            return expr.attr.value in _METADATA_ATTRIBUTES and self.independent(expr.value)
        if isinstance(expr, cst.Call):
            return self._call_independent(expr)
        if isinstance(expr, cst.Subscript):
            return self.independent(expr.value) and all(
                self.independent(part) for part in expr.slice
            )
        if isinstance(
            expr,
            (
                cst.BinaryOperation,
                cst.UnaryOperation,
                cst.BooleanOperation,
                cst.Comparison,
                cst.ComparisonTarget,
                cst.IfExp,
                cst.Tuple,
                cst.List,
                cst.Element,
                cst.StarredElement,
                cst.SubscriptElement,
                cst.Index,
                cst.Slice,
                cst.Arg,
            ),
        ):
            return all(self.independent(c) for c in child_nodes(expr) if not _is_syntax(c))
        return False

    def _call_independent(self, call: cst.Call) -> bool:
        func = call.func
        qualified = self.model.imports.qualify(func)
        known = (
            _is_op(qualified)
            or is_numpy(qualified)
            or (isinstance(func, cst.Name) and func.value in _DATA_BUILTINS | {"next"})
        )
        if not known:
            return self._method_independent(call)
        if isinstance(func, cst.Name) and func.value == "next":
            return True  # the next batch from an iterator is data
        return all(self.independent(arg.value) for arg in call.args)

    def _method_independent(self, call: cst.Call) -> bool:
        func = call.func
        return (
            isinstance(func, cst.Attribute)
            and func.attr.value in _DATA_METHODS
            and self.independent(func.value)
            and all(self.independent(arg.value) for arg in call.args)
        )

    def _def_independent(self, d: Def) -> bool:
        cached = self._defs.get(d)
        if cached is not None:
            return cached
        if d in self._visiting:
            self._assumed = True
            return True
        self._visiting.add(d)
        outer_assumed, self._assumed = self._assumed, False
        result = self._evaluate(d)
        self._visiting.discard(d)
        if not result or not self._assumed:
            self._defs[d] = result
        self._assumed = outer_assumed or self._assumed
        return result

    def _evaluate(self, d: Def) -> bool:
        if d.name in self.watched:
            return False
        if d.kind is DefKind.PARAM:
            return d.scope is self.scope and d.name not in ("self", "cls")
        if d.kind in (DefKind.ASSIGN, DefKind.UNPACK, DefKind.FOR, DefKind.COMP):
            return d.value is not None and self.independent(d.value)
        if d.kind is DefKind.AUG:
            return d.value is not None and self.independent(d.value) and self.independent(d.target)
        return False


def _is_logging(expr: cst.BaseExpression) -> bool:
    """`print(...)` or `logger.info(...)`: output, whatever it computes on the way."""
    if not isinstance(expr, cst.Call):
        return False
    func = expr.func
    if isinstance(func, cst.Name):
        return func.value == "print"
    return isinstance(func, cst.Attribute) and func.attr.value in _LOG_METHODS


def _is_check_or_metadata(qualified: str) -> bool:
    return qualified in _NOT_WORK or qualified.startswith(_CHECKS)


def _is_op(qualified: str | None) -> TypeGuard[str]:
    if qualified is None or qualified in _NOT_OPS:
        return False
    return is_tensorflow(qualified) or qualified.startswith(_KERAS_OPS)


def _plain_names(target: cst.BaseExpression) -> bool:
    if isinstance(target, cst.Name):
        return True
    if isinstance(target, (cst.Tuple, cst.List)):
        return all(_plain_names(e.value) for e in target.elements)
    return False


def _is_syntax(node: cst.CSTNode) -> bool:
    """Operators, commas, brackets and whitespace among an expression's children."""
    return not isinstance(
        node,
        (
            cst.BaseExpression,
            cst.Element,
            cst.StarredElement,
            cst.SubscriptElement,
            cst.Index,
            cst.Slice,
            cst.Arg,
            cst.ComparisonTarget,
        ),
    )
