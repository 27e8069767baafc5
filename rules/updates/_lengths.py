"""Do the gradients and the variables an apply call zips certainly differ in length, or sit
out of step? (TAP402)

`zip` stops at the shorter list without a word. Gradients sliced one short of the
variables (`zip(grads[:-(n + 1)], model.trainable_variables)` where the gradient call's
sources are `model.trainable_variables + [w] + extra` and `n + 1` removes more than
`[w] + extra` holds) leave the last variables without an update; a slice that starts
elsewhere than where the variables sit among the sources pairs every variable with another
one's gradient.

A variable list is read as *segments*, each with an identity and a length: a variable list
of an object the analysis can pin down (`model.trainable_variables`, the same list as
`model.trainable_weights`), one element of a list literal, or a name bound once to a list
the code does not show (`extra = self.make_weights()`). A length is a symbolic sum: a
whole number plus counts of those lists, each count an *atom* that stands for the same
number wherever it is read. Slice bounds are read the same way: integer literals, `len(x)`
of a list read as above, names bound once to such a sum (`n = len(extra)`), `+`, `-` and
unary minus. A bound counts from the end only when it is certainly negative (`-(n + 1)`):
`-n` may be `-0`, which Python reads as the start, and is unknown.

Two findings, each certain from the code alone:

- *short*: the variables' length minus the gradients' is a whole number above zero (every
  count cancels out): the last variables get no gradient. Clamping of a slice by Python
  only shortens it, so this holds whatever the counts are, as long as the variable list
  is not empty (an apply with no variables does nothing, and is taken not to be written);
- *shifted*: the variables are a run of the sources' segments, and the gradients start a
  whole number of places away from where that run starts: each pair joins one variable
  with another variable's gradient.

*Aligned*, the look-alike: the slice starts where the variables sit and holds at least as
many gradients (`zip(grads[:-(n + 1)], model.trainable_variables)` and
`zip(grads[-(n + 1):], [w] + extra)` with `n = len(extra)`).

Decisions (precision first): every name on the way (the gradient list, the sources, the
lists counted, the bounds) must be bound once, and a list must never be changed in the
file (`append`, `extend`, `insert`, `pop`, `remove`, `clear`, `del`, `+=`); a count is
taken to be the same wherever it is read (a model's trainable variables read before and
after a part of it is unfrozen are not told apart); a slice with a step, a starred
element, a comprehension and any call other than `len`, `list` and `tuple` are unknown.
"""

from __future__ import annotations

import re
from collections.abc import Hashable
from dataclasses import dataclass
from functools import lru_cache

import libcst as cst

from tapelint.semantic.file_model.expressions import argument_value
from tapelint.semantic.file_model.model import Def, DefKind, FileModel, TapeCall
from tapelint.semantic.flow.watching import names_rebound_elsewhere

from ._identity import TRAINABLE_LISTS, object_identity

_MAX_DEPTH = 8
_LISTED = TRAINABLE_LISTS | {"variables", "weights"}
_COPIES = frozenset({"list", "tuple"})


@dataclass(frozen=True)
class Count:
    """A symbolic whole number: `constant` plus each atom times its coefficient."""

    constant: int
    terms: tuple[tuple[Hashable, int], ...] = ()

    @staticmethod
    def of(atom: Hashable) -> Count:
        return Count(0, ((atom, 1),))

    def __add__(self, other: Count) -> Count:
        terms = dict(self.terms)
        for atom, factor in other.terms:
            terms[atom] = terms.get(atom, 0) + factor
        kept = tuple((atom, factor) for atom, factor in terms.items() if factor)
        return Count(self.constant + other.constant, kept)

    def __neg__(self) -> Count:
        return Count(-self.constant, tuple((atom, -factor) for atom, factor in self.terms))

    def __sub__(self, other: Count) -> Count:
        return self + -other

    def at_least(self, bound: int) -> bool:
        """Certainly at least `bound`, whatever each count (never negative) is."""
        return self.constant >= bound and all(factor > 0 for _, factor in self.terms)

    def whole(self) -> int | None:
        """The number, when every count cancels out."""
        return None if self.terms else self.constant


@dataclass(frozen=True)
class Segment:
    identity: Hashable
    length: Count


@dataclass(frozen=True)
class Layout:
    """How an apply's gradients line up with its variables. `short`: how many variables
    get no gradient; `shift`: how many places the gradients start after (or, negative,
    before) the variables' place among the sources; None where the code does not show."""

    sliced: bool
    short: int | None
    shift: int | None
    aligned: bool


def zip_layout(
    model: FileModel, gradients: cst.BaseExpression, variables: cst.BaseExpression
) -> Layout | None:
    """How `gradients` (the result of one `tape.gradient` call, whole or sliced) line up
    with `variables`; None when the lists or the slice cannot be read."""
    taken = _taken(model, gradients, 0)
    if taken is None:
        return None
    origin, sliced, lower, upper = taken
    sources = argument_value(origin.node, 1, "sources")
    if sources is None:
        return None
    source_segments = _segments(model, sources, 0)
    variable_segments = _segments(model, variables, 0)
    if source_segments is None or variable_segments is None:
        return None
    total = _length(source_segments)
    start = Count(0) if lower is None else _bound(model, lower, total)
    stop = total if upper is None else _bound(model, upper, total)
    if start is None or stop is None:
        return None
    wanted = _length(variable_segments)
    missing = (wanted - (stop - start)).whole()
    short = missing if missing is not None and missing > 0 else None
    place = _place(source_segments, variable_segments)
    exact = start.at_least(0) and (total - start).at_least(0)
    shift = (start - place).whole() if place is not None and exact else None
    aligned = shift == 0 and (stop - start - wanted).at_least(0)
    return Layout(sliced, short, shift if shift else None, aligned)


# The gradient call, whether its result is sliced, and the slice's bounds.
_Taken = tuple[TapeCall, bool, cst.BaseExpression | None, cst.BaseExpression | None]


def _taken(model: FileModel, expr: cst.BaseExpression, depth: int) -> _Taken | None:
    """The gradient call whose result `expr` is, whole or sliced once without a step;
    through names bound once, `list(...)` and comprehensions that keep one entry per
    gradient."""
    if depth > _MAX_DEPTH:
        return None
    if isinstance(expr, cst.Call):
        call = model.tape_call_at(expr)
        if call is not None and call.method == "gradient":
            return call, False, None, None
    if isinstance(expr, cst.Subscript) and len(expr.slice) == 1:
        part = expr.slice[0].slice
        if not isinstance(part, cst.Slice) or part.step is not None:
            return None
        whole = _taken(model, expr.value, depth + 1)
        if whole is None or whole[1]:
            return None
        return whole[0], True, part.lower, part.upper
    if isinstance(expr, cst.ListComp):
        return _taken_by_comprehension(model, expr, depth)
    inner = _unwrapped(model, expr, depth)
    return _taken(model, inner, depth + 1) if inner is not None else None


def _taken_by_comprehension(
    model: FileModel, comprehension: cst.ListComp, depth: int
) -> _Taken | None:
    """A comprehension that keeps one entry per gradient (`[g if g is not None else
    tf.zeros_like(v) for g, v in zip(grads, variables)]`, no filter): the whole list again,
    when it goes over the gradients alone or zipped with their own sources."""
    clause = comprehension.for_in
    if clause.ifs or clause.inner_for_in is not None or clause.asynchronous is not None:
        return None
    over, beside = clause.iter, None
    if isinstance(over, cst.Call) and _is_zip(model, over):
        over, beside = (arg.value for arg in over.args)
    whole = _taken(model, over, depth + 1)
    if whole is None or whole[1]:
        return None
    if beside is not None:  # zipped with the call's own sources: one entry per gradient
        sources = argument_value(whole[0].node, 1, "sources")
        walked = _segments(model, beside, depth + 1)
        wanted = _segments(model, sources, depth + 1) if sources is not None else None
        if walked is None or wanted is None or _keys(walked) != _keys(wanted):
            return None
    return whole


def _is_zip(model: FileModel, call: cst.Call) -> bool:
    func = call.func
    return (
        isinstance(func, cst.Name)
        and func.value == "zip"
        and not model.defs_of(func)
        and len(call.args) == 2
        and all(not arg.star and arg.keyword is None for arg in call.args)
    )


def _keys(segments: list[Segment]) -> list[Hashable]:
    return [segment.identity for segment in segments]


def _unwrapped(model: FileModel, expr: cst.BaseExpression, depth: int) -> cst.BaseExpression | None:
    """What a name bound once (and never changed) or a `list(...)` copy holds."""
    if isinstance(expr, cst.Call) and _is_copy(model, expr):
        return expr.args[0].value
    if isinstance(expr, cst.Name):
        d = _bound_once(model, expr)
        return d.value if d is not None else None
    return None


def _is_copy(model: FileModel, call: cst.Call) -> bool:
    func = call.func
    return (
        isinstance(func, cst.Name)
        and func.value in _COPIES
        and not model.defs_of(func)
        and len(call.args) == 1
        and not call.args[0].star
        and call.args[0].keyword is None
    )


def _bound_once(model: FileModel, name: cst.Name) -> Def | None:
    """The one assignment of `name` that reaches it, when the name is not rebound through
    `global` and the list it holds is never changed in the file."""
    defs = model.defs_of(name)
    if len(defs) != 1:
        return None
    (d,) = defs
    if d.kind is not DefKind.ASSIGN or d.value is None or d.unpack_index:
        return None
    if d.name in names_rebound_elsewhere(model) or _changed(model.source_text, d.name):
        return None
    return d


def _changed(text: str, name: str) -> bool:
    return _changes(name).search(text) is not None


@lru_cache(maxsize=64)
def _changes(name: str) -> re.Pattern[str]:
    escaped = re.escape(name)
    methods = "append|extend|insert|pop|remove|clear|sort|reverse"
    return re.compile(
        rf"\b{escaped}\s*\.\s*(?:{methods})\s*\(|\bdel\s+{escaped}\b|\b{escaped}\s*[-+*]=|"
        rf"\b{escaped}\s*\[[^\]]*\]\s*=(?!=)"
    )


def _segments(model: FileModel, expr: cst.BaseExpression, depth: int) -> list[Segment] | None:
    if depth > _MAX_DEPTH:
        return None
    if isinstance(expr, cst.Attribute) and expr.attr.value in _LISTED:
        owner = object_identity(model, expr.value)
        if owner is None:
            return None
        group = "trainable" if expr.attr.value in TRAINABLE_LISTS else "all"
        identity: Hashable = ("listed", group, owner)
        return [Segment(identity, Count.of(identity))]
    if isinstance(expr, (cst.List, cst.Tuple)):
        found = []
        for element in expr.elements:
            if isinstance(element, cst.StarredElement):
                return None
            identity = object_identity(model, element.value)
            if identity is None:  # an element no other can be shown to be
                identity = ("element", id(element))
            found.append(Segment(identity, Count(1)))
        return found
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
        left = _segments(model, expr.left, depth + 1)
        right = _segments(model, expr.right, depth + 1)
        return left + right if left is not None and right is not None else None
    if isinstance(expr, cst.Call) and _is_copy(model, expr):
        return _segments(model, expr.args[0].value, depth + 1)
    if isinstance(expr, cst.Name):
        d = _bound_once(model, expr)
        if d is None or d.value is None:
            return None
        segments = _segments(model, d.value, depth + 1)
        if segments is not None:
            return segments
        identity = ("list", d)
        return [Segment(identity, Count.of(identity))]
    return None


def _length(segments: list[Segment]) -> Count:
    total = Count(0)
    for segment in segments:
        total = total + segment.length
    return total


def _number(model: FileModel, expr: cst.BaseExpression, depth: int) -> Count | None:
    """A slice bound as a symbolic sum."""
    if depth > _MAX_DEPTH:
        return None
    if isinstance(expr, cst.Integer):
        return Count(int(expr.evaluated_value))
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        inner = _number(model, expr.expression, depth + 1)
        return -inner if inner is not None else None
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Add, cst.Subtract)):
        left = _number(model, expr.left, depth + 1)
        right = _number(model, expr.right, depth + 1)
        if left is None or right is None:
            return None
        return left + right if isinstance(expr.operator, cst.Add) else left - right
    if isinstance(expr, cst.Call) and _is_len(model, expr):
        counted = _segments(model, expr.args[0].value, depth + 1)
        return _length(counted) if counted is not None else None
    if isinstance(expr, cst.Name):
        d = _bound_once(model, expr)
        return _number(model, d.value, depth + 1) if d is not None and d.value else None
    return None


def _is_len(model: FileModel, call: cst.Call) -> bool:
    func = call.func
    return (
        isinstance(func, cst.Name)
        and func.value == "len"
        and not model.defs_of(func)
        and len(call.args) == 1
        and not call.args[0].star
    )


def _bound(model: FileModel, expr: cst.BaseExpression, total: Count) -> Count | None:
    """Where a slice bound points in a list of `total` items: from the start when it is
    certainly not negative, from the end when it certainly is."""
    value = _number(model, expr, 0)
    if value is None:
        return None
    if value.at_least(0):
        return value
    if (-value).at_least(1):
        return total + value
    return None


def _place(sources: list[Segment], variables: list[Segment]) -> Count | None:
    """Where `variables` sit among `sources`: the length of the segments before the one
    run of segments they are; None when they are no run of them, or several."""
    width = len(variables)
    keys = _keys(variables)
    starts = [
        index
        for index in range(len(sources) - width + 1)
        if _keys(sources[index : index + width]) == keys
    ]
    if width == 0 or len(starts) != 1:
        return None
    return _length(sources[: starts[0]])
