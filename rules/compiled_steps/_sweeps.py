"""Sweeps: loops over a handful of cases written out in the code.

A *sweep* is a `for` loop whose iterable the reader can count in the code: a list, tuple or
set display (`for lr in [0.1, 0.01]:`), a name bound only to such a display and never
changed in place (`dims = [1, 2, 3]`), or `enumerate`, `sorted`, `reversed`, `list`,
`tuple` of one, `zip` with one among its arguments (it stops at the shortest), and
`itertools.product` of nothing else. Each iteration is one case of a test or an
experiment (a dtype, a dimension, a learning rate, a model size), not a step of training.

A counted loop is never a sweep, whatever its bound: `for epoch in range(5):` is how epochs
and steps are counted, and `while` loops run until something happens.

A *case value* is a loop variable drawn from a written-out collection of Python constants
(numbers, strings, `True`/`False`/`None`, dotted names such as `tf.float32`, tuples of
these), also when the loop pairs that collection with something else
(`itertools.product(supported_dtypes(), [1, 2, 3])` gives `dim` its case values): a Python
value that changes from one case to the next, which `tf.function` traces once per value.
"""

from __future__ import annotations

import libcst as cst

from tapelint.semantic.file_model.model import Def, DefKind, FileModel

_ONE_COLLECTION = frozenset({"enumerate", "sorted", "reversed", "list", "tuple"})
_ZIP = "zip"
_PRODUCT = "itertools.product"
_IN_PLACE_CHANGES = frozenset(
    {"append", "extend", "insert", "add", "update", "remove", "pop", "clear", "discard"}
)
_Display = cst.List | cst.Tuple | cst.Set


def is_sweep(model: FileModel, loop: cst.CSTNode) -> bool:
    """Whether `loop` is a `for` loop over a collection written out in the code."""
    return isinstance(loop, cst.For) and _Sweeps(model).collection(loop.iter)


def is_case_value(model: FileModel, d: Def) -> bool:
    """Whether `d` is a sweep's loop variable whose every value is a Python constant."""
    if d.kind is not DefKind.FOR or d.value is None:
        return False
    return _Sweeps(model).constants(d.value, d.unpack_index)


class _Sweeps:
    def __init__(self, model: FileModel) -> None:
        self.model = model

    def collection(self, expr: cst.BaseExpression) -> bool:
        """Whether iterating `expr` runs over a written-out collection."""
        if isinstance(expr, _Display):
            return bool(expr.elements) and not _starred(expr)
        if isinstance(expr, cst.Name):
            displays = self._displays_bound_to(expr)
            return displays is not None and all(self.collection(d) for d in displays)
        if not isinstance(expr, cst.Call) or any(a.star or a.keyword for a in expr.args):
            return False
        collections = [self.collection(a.value) for a in expr.args]
        callee = self._callee(expr)
        if callee in _ONE_COLLECTION:
            return bool(collections) and collections[0]
        if callee == _ZIP:
            return any(collections)
        if callee == _PRODUCT:
            return bool(collections) and all(collections)
        return False

    def constants(self, expr: cst.BaseExpression, index: tuple[int, ...]) -> bool:
        """Whether every item that iterating `expr` yields is, at `index` (the loop target's
        position in a tuple target), a Python constant."""
        if isinstance(expr, _Display):
            return self.collection(expr) and all(
                _constant_at(e.value, index) for e in expr.elements
            )
        if isinstance(expr, cst.Name):
            displays = self._displays_bound_to(expr)
            return bool(displays) and all(self.constants(d, index) for d in displays or ())
        if not isinstance(expr, cst.Call) or any(a.star or a.keyword for a in expr.args):
            return False
        args = [a.value for a in expr.args]
        callee = self._callee(expr)
        if callee == "enumerate" and len(args) == 1:
            if not index:
                return False  # the (counter, item) pair: not one constant
            return self.collection(args[0]) if index[0] == 0 else self.constants(args[0], index[1:])
        if callee in _ONE_COLLECTION and len(args) == 1:
            return self.constants(args[0], index)
        if callee in (_ZIP, _PRODUCT) and index and index[0] < len(args):
            return self.constants(args[index[0]], index[1:])
        return False

    def _callee(self, call: cst.Call) -> str | None:
        func = call.func
        if isinstance(func, cst.Name) and not self.model.defs_of(func):
            qualified = self.model.imports.qualify(func)
            return qualified if qualified is not None else func.value
        return self.model.imports.qualify(func)

    def _displays_bound_to(self, name: cst.Name) -> list[_Display] | None:
        """The displays a name may hold, when it holds nothing else and is never changed in
        place (`cases.append(...)`); None otherwise."""
        defs = self.model.defs_of(name)
        if not defs:
            return None
        displays: list[_Display] = []
        for d in defs:
            if d.kind is not DefKind.ASSIGN or d.unpack_index or not isinstance(d.value, _Display):
                return None
            displays.append(d.value)
        if self._changed_in_place(defs):
            return None
        return displays

    def _changed_in_place(self, defs: frozenset[Def]) -> bool:
        for site in self.model.calls:
            func = site.node.func
            if (
                isinstance(func, cst.Attribute)
                and func.attr.value in _IN_PLACE_CHANGES
                and isinstance(func.value, cst.Name)
                and self.model.defs_of(func.value) & defs
            ):
                return True
        return False


def _starred(display: _Display) -> bool:
    return any(isinstance(e, cst.StarredElement) for e in display.elements)


def _constant_at(expr: cst.BaseExpression, index: tuple[int, ...]) -> bool:
    if not index:
        return _constant(expr)
    if isinstance(expr, (cst.Tuple, cst.List)) and index[0] < len(expr.elements):
        element = expr.elements[index[0]]
        return not isinstance(element, cst.StarredElement) and _constant_at(
            element.value, index[1:]
        )
    return False


def _constant(expr: cst.BaseExpression) -> bool:
    if isinstance(
        expr,
        (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString),
    ):
        return True
    if isinstance(expr, cst.Name):
        return expr.value in ("True", "False", "None")
    if isinstance(expr, cst.Attribute):  # `tf.float32`, an enum member
        return isinstance(expr.value, (cst.Name, cst.Attribute)) and _dotted(expr.value)
    if isinstance(expr, cst.UnaryOperation):
        return isinstance(expr.expression, (cst.Integer, cst.Float, cst.Imaginary))
    if isinstance(expr, (cst.Tuple, cst.List)):
        return not _starred(expr) and all(_constant(e.value) for e in expr.elements)
    return False


def _dotted(expr: cst.BaseExpression) -> bool:
    while isinstance(expr, cst.Attribute):
        expr = expr.value
    return isinstance(expr, cst.Name)
