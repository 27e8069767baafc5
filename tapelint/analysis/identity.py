"""Whether two expressions certainly denote different variable lists.

Used to check that gradients are applied to the variables they were computed for. The answer
is YES only when the analysis can show it; aliases it cannot see through make it "don't know":

- a name is followed through plain assignments (`g_vars = generator.trainable_variables`);
  a name with several reaching definitions is unknown;
- objects are different when they are different parameters of a function, different
  constructions (`gen = make_generator()`, `disc = make_discriminator()`), or different
  attributes of one object (`self.generator`, `self.discriminator`) that the file never
  assigns from each other or from the same expression;
- `m.trainable_variables` and `m.trainable_weights` are the same list; `m.variables` or
  `m.weights` compared with a trainable list is unknown (a model without non-trainable state
  has equal lists);
- literal lists (`[w, b]`) differ when they differ in length, order or an element; a sum
  of lists differs when one of its parts does.
"""

from __future__ import annotations

import re

import libcst as cst

from tapelint.analysis.model import Def, DefKind, FileModel
from tapelint.analysis.names import dotted_name

_TRAINABLE = frozenset({"trainable_variables", "trainable_weights"})
_ALL = frozenset({"variables", "weights"})
_MAX_DEPTH = 8

# Normal forms: ("owned", group, object) for `object.trainable_variables`, ("list", objects)
# for a literal list, ("concat", left, right) for `a + b`; objects are ("def", Def) or
# ("attr", root object, attribute path).
_Form = tuple


def variable_lists_differ(
    model: FileModel, first: cst.BaseExpression, second: cst.BaseExpression
) -> bool:
    """Whether `first` and `second` certainly denote different lists of variables."""
    a = _variable_list(model, first, 0)
    b = _variable_list(model, second, 0)
    return a is not None and b is not None and _differ(model, a, b)


def _variable_list(model: FileModel, expr: cst.BaseExpression, depth: int) -> _Form | None:
    if depth > _MAX_DEPTH:
        return None
    if isinstance(expr, cst.Attribute) and expr.attr.value in _TRAINABLE | _ALL:
        owner = _object(model, expr.value, depth + 1)
        if owner is None:
            return None
        group = "trainable" if expr.attr.value in _TRAINABLE else "all"
        return ("owned", group, owner)
    if isinstance(expr, (cst.List, cst.Tuple)):
        parts = []
        for element in expr.elements:
            if isinstance(element, cst.StarredElement):
                return None
            part = _object(model, element.value, depth + 1)
            if part is None:
                return None
            parts.append(part)
        return ("list", tuple(parts))
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
        left = _variable_list(model, expr.left, depth + 1)
        right = _variable_list(model, expr.right, depth + 1)
        if left is None or right is None:
            return None
        return ("concat", left, right)
    if isinstance(expr, cst.Name):
        d = _only_assignment(model, expr)
        if d is not None and d.value is not None:
            return _variable_list(model, d.value, depth + 1)
    return None


def _object(model: FileModel, expr: cst.BaseExpression, depth: int) -> _Form | None:
    """An identity for the object `expr` denotes, or None when it cannot be pinned down."""
    if depth > _MAX_DEPTH:
        return None
    if isinstance(expr, cst.Name):
        defs = model.defs_of(expr)
        if len(defs) != 1:
            return None
        (d,) = defs
        if d.kind in (DefKind.PARAM, DefKind.DEFINITION, DefKind.IMPORT):
            return ("def", d)
        if d.kind is DefKind.ASSIGN and isinstance(d.value, cst.Call):
            return ("def", d)
        if d.kind is DefKind.ASSIGN and isinstance(d.value, (cst.Name, cst.Attribute)):
            return _object(model, d.value, depth + 1)
        return None
    if isinstance(expr, cst.Attribute):
        root = expr
        path: list[str] = []
        while isinstance(root, cst.Attribute):
            path.append(root.attr.value)
            root = root.value
        owner = _object(model, root, depth + 1)
        if owner is None:
            return None
        return ("attr", owner, ".".join(reversed(path)), dotted_name(expr))
    return None


def _only_assignment(model: FileModel, name: cst.Name) -> Def | None:
    defs = model.defs_of(name)
    if len(defs) != 1:
        return None
    (d,) = defs
    return d if d.kind is DefKind.ASSIGN else None


def _differ(model: FileModel, a: _Form, b: _Form) -> bool:
    if a == b:
        return False
    if a[0] == "owned" and b[0] == "owned":
        return a[1] == b[1] and _objects_differ(model, a[2], b[2])
    if a[0] == "list" and b[0] == "list":
        if len(a[1]) != len(b[1]):
            return True
        return any(_objects_differ(model, x, y) for x, y in zip(a[1], b[1], strict=True))
    if a[0] == "concat" and b[0] == "concat":
        return _differ(model, a[1], b[1]) or _differ(model, a[2], b[2])
    return False


def _objects_differ(model: FileModel, a: _Form, b: _Form) -> bool:
    if a == b:
        return False
    if a[0] == "def" and b[0] == "def":
        return True
    if a[0] == "attr" and b[0] == "attr":
        if a[1] != b[1]:
            return False  # different roots: one may hold the other's object
        return not _may_alias(model.source_text, a[3], b[3])
    return False


def _may_alias(text: str, first: str | None, second: str | None) -> bool:
    """Whether the file assigns one attribute from the other, or both from the same
    expression (`self.target = self.online`, `self.a = net` and `self.b = net`)."""
    if first is None or second is None:
        return True
    first_values = _assigned_values(text, first)
    second_values = _assigned_values(text, second)
    if first_values & second_values:
        return True
    last_first, last_second = first.rsplit(".", 1)[-1], second.rsplit(".", 1)[-1]
    return any(v.endswith("." + last_second) for v in first_values) or any(
        v.endswith("." + last_first) for v in second_values
    )


def _assigned_values(text: str, dotted: str) -> set[str]:
    attribute = re.escape(dotted.rsplit(".", 1)[-1])
    pattern = rf"\.{attribute}\s*=(?!=)\s*([^\n#]+)"
    return {" ".join(value.split()) for value in re.findall(pattern, text)}
