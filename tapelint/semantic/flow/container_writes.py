"""What a name's container receives without being rebound: item stores and list growth.

A list or dict bound to a name (`grads = {}`, `grads = []`) is filled by writes that bind
nothing: `grads[key] = value` (also as a target of unpacking: `grads[key], norm =
tf.clip_by_global_norm(grads[key], c)`), `grads.append(value)`, `grads.insert(i, value)`
and `grads.extend(values)`. A value follower reads the container as what its binding holds
joined with these writes, and one item of it (`grads[key]`) as the items written.

Writes are found in the scope of the binding, wherever they sit in it (a loop fills the
container before the read, in source order or not); a write in a nested function is not
one. Keys are compared only when both are literals: `grads["critic"]` does not read what
`grads["actor"] = ...` stored.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from weakref import WeakKeyDictionary

import libcst as cst

from tapelint.semantic.file_model.model import Def, FileModel

_GROWERS = {"append": 0, "insert": 1, "extend": 0}


class WriteKind(Enum):
    ITEM = "item"  # the value is one item: `c[k] = v`, `c.append(v)`, `c.insert(i, v)`
    ITEMS = "items"  # the value's elements are items: `c.extend(vs)`


@dataclass(frozen=True)
class Write:
    node: cst.CSTNode  # the subscript target or the call that writes
    kind: WriteKind
    value: cst.BaseExpression
    # For a store that is a target of unpacking (`c[k], n = f(...)`): its place in the value.
    part: tuple[int, ...] = ()
    key: cst.BaseExpression | None = None  # the subscript of an item store

    def matches(self, key: cst.BaseExpression | None) -> bool:
        """Whether this write may store the item read with `key` (None: any item)."""
        if key is None or self.key is None:
            return True
        mine, theirs = _literal(self.key), _literal(key)
        return mine is None or theirs is None or mine == theirs


_WRITES: WeakKeyDictionary[FileModel, dict[Def, list[Write]]] = WeakKeyDictionary()


def writes_into(model: FileModel, d: Def) -> list[Write]:
    """The writes into the container `d` binds, in `d`'s scope (see the module docstring)."""
    index = _WRITES.get(model)
    if index is None:
        index = _index(model)
        _WRITES[model] = index
    return index.get(d, [])


def is_empty_container(expr: cst.BaseExpression | None) -> bool:
    """`{}`, `[]`, `dict()`, `list()`: a container that holds only what is written into it."""
    if isinstance(expr, (cst.Dict, cst.List)):
        return not expr.elements
    return (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Name)
        and expr.func.value in {"dict", "list"}
        and not expr.args
    )


def subscript_key(subscript: cst.Subscript) -> cst.BaseExpression | None:
    """The key of `c[key]`, or None for a slice or several indices."""
    if len(subscript.slice) != 1 or not isinstance(subscript.slice[0].slice, cst.Index):
        return None
    return subscript.slice[0].slice.value


def _index(model: FileModel) -> dict[Def, list[Write]]:
    index: dict[Def, list[Write]] = {}
    for use in model.uses_by_node.values():
        if not isinstance(use.node, cst.Name) or not isinstance(use.stmt, cst.SimpleStatementLine):
            continue
        for small in use.stmt.body:
            for write in _writes_through(use.node, small):
                for d in use.defs:
                    if d.scope is use.scope:
                        index.setdefault(d, []).append(write)
    return index


def _writes_through(name: cst.Name, small: cst.BaseSmallStatement) -> list[Write]:
    if isinstance(small, cst.Assign):
        found: list[Write] = []
        for target in small.targets:
            found += _stores(name, target.target, small.value, ())
        return found
    if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
        call = small.value
        func = call.func
        if (
            isinstance(func, cst.Attribute)
            and func.value is name
            and func.attr.value in _GROWERS
            and len(call.args) == _GROWERS[func.attr.value] + 1
            and all(arg.keyword is None and not arg.star for arg in call.args)
        ):
            kind = WriteKind.ITEMS if func.attr.value == "extend" else WriteKind.ITEM
            return [Write(call, kind, call.args[-1].value)]
    return []


def _stores(
    name: cst.Name, target: cst.BaseExpression, value: cst.BaseExpression, part: tuple[int, ...]
) -> list[Write]:
    if isinstance(target, cst.Subscript) and target.value is name:
        key = subscript_key(target)
        return [Write(target, WriteKind.ITEM, value, part, key)] if key is not None else []
    if isinstance(target, (cst.Tuple, cst.List)):
        found: list[Write] = []
        for i, element in enumerate(target.elements):
            if not isinstance(element, cst.StarredElement):
                found += _stores(name, element.value, value, (*part, i))
        return found
    return []


def _literal(expr: cst.BaseExpression) -> str | int | None:
    if isinstance(expr, cst.SimpleString):
        return str(expr.evaluated_value)
    if isinstance(expr, cst.Integer):
        return int(expr.value)
    return None
