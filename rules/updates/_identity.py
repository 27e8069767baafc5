"""Whether two expressions certainly denote different variable lists.

Used to check that gradients are applied to the variables they were computed for. The answer
is YES only when the analysis can show it; aliases it cannot see through make it "don't know":

- a name is followed through plain assignments (`g_vars = generator.trainable_variables`);
  a name with several reaching definitions is unknown;
- objects are different when they are different parameters of a function, different
  constructions (`gen = make_generator()`, `disc = make_discriminator()`, and two calls of
  one factory or class: `student, teacher = make_net(), make_net()`), or different
  attributes of one object (`self.generator`, `self.discriminator`) that the file never
  assigns from each other or from the same value. Each call makes its own object, so two
  calls are two values; one call bound to two names (`a = b = make_net()`) is one. Not a
  construction: an accessor (`models.get("a")`, `copy.copy(m)`, `getattr(...)`), and a
  function of the file that may hand out a shared object (decorated, such as with
  `functools.lru_cache`, or declaring `global`);
- `m.trainable_variables` and `m.trainable_weights` are the same list; `m.variables` or
  `m.weights` compared with a trainable list of the same object is unknown here (a model
  without non-trainable state has equal lists: `same_object_lists` hands the two to a rule
  that can ask what the object holds), and compared with any list of a different object
  differs, as two trainable lists of different objects do;
- literal lists (`[w, b]`) differ when they differ in length, order or an element; a sum
  of lists differs when one of its parts does.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Hashable
from functools import lru_cache

import libcst as cst

from tapelint.semantic.file_model.expressions import descendants
from tapelint.semantic.file_model.model import Def, DefKind, FileModel
from tapelint.semantic.flow.watching import names_rebound_elsewhere
from tapelint.semantic.project_model.names import dotted_name

TRAINABLE_LISTS = frozenset({"trainable_variables", "trainable_weights"})
_ALL = frozenset({"variables", "weights"})
_MAX_DEPTH = 8
# Calls that hand out an object that already exists.
_ACCESSORS = frozenset(
    {
        "get",
        "pop",
        "setdefault",
        "popitem",
        "__getitem__",
        "copy",
        "getattr",
        "next",
        "iter",
        "vars",
        "get_layer",
    }
)

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
    if isinstance(expr, cst.Attribute) and expr.attr.value in TRAINABLE_LISTS | _ALL:
        owner = _object(model, expr.value, depth + 1)
        if owner is None:
            return None
        return ("owned", _group(expr), owner)
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


def same_object_lists(
    model: FileModel, first: cst.BaseExpression, second: cst.BaseExpression
) -> tuple[cst.Attribute, cst.Attribute] | None:
    """When `first` and `second` are variable lists of one object written with different
    attributes (`m.trainable_variables` and `m.variables`, also through names bound to
    them), the two attributes; else None."""
    a, b = _list_attribute(model, first, 0), _list_attribute(model, second, 0)
    if a is None or b is None or _group(a) == _group(b):
        return None
    owner = _object(model, a.value, 1)
    return (a, b) if owner is not None and owner == _object(model, b.value, 1) else None


def _list_attribute(model: FileModel, expr: cst.BaseExpression, depth: int) -> cst.Attribute | None:
    """The `X.trainable_variables` (or another variable list) that `expr` is, through plain
    assignments."""
    if depth > _MAX_DEPTH:
        return None
    if isinstance(expr, cst.Attribute) and expr.attr.value in TRAINABLE_LISTS | _ALL:
        return expr
    if isinstance(expr, cst.Name):
        d = _only_assignment(model, expr)
        if d is not None and d.value is not None:
            return _list_attribute(model, d.value, depth + 1)
    return None


def _group(attribute: cst.Attribute) -> str:
    return "trainable" if attribute.attr.value in TRAINABLE_LISTS else "all"


def _object(model: FileModel, expr: cst.BaseExpression, depth: int) -> _Form | None:
    """An identity for the object `expr` denotes, or None when it cannot be pinned down."""
    if depth > _MAX_DEPTH:
        return None
    if isinstance(expr, cst.Name):
        defs = model.defs_of(expr)
        if len(defs) != 1 or expr.value in names_rebound_elsewhere(model):
            return None
        (d,) = defs
        if d.kind in (DefKind.PARAM, DefKind.DEFINITION, DefKind.IMPORT):
            return ("def", d)
        value = d.bound_value()
        if isinstance(value, cst.Call):
            # One object per call: `a = b = make()` binds one, `a, b = make(), make()` two.
            return ("call", id(value)) if _constructs(model, value) else None
        if isinstance(value, (cst.Name, cst.Attribute)):
            return _object(model, value, depth + 1)
        return None
    if isinstance(expr, cst.Attribute):
        root: cst.BaseExpression = expr
        path: list[str] = []
        while isinstance(root, cst.Attribute):
            path.append(root.attr.value)
            root = root.value
        owner = _object(model, root, depth + 1)
        if owner is None:
            return None
        return ("attr", owner, ".".join(reversed(path)), dotted_name(expr))
    return None


def object_identity(model: FileModel, expr: cst.BaseExpression) -> Hashable | None:
    """An identity for the object `expr` denotes (two expressions with equal identities
    denote one object), or None when it cannot be pinned down (see the module's docs)."""
    return _object(model, expr, 0)


def _constructs(model: FileModel, call: cst.Call) -> bool:
    """Whether `call` certainly makes a new object (see the module's docs)."""
    func = call.func
    if isinstance(func, cst.Attribute):
        return func.attr.value not in _ACCESSORS
    if isinstance(func, cst.Name):
        return func.value not in _ACCESSORS and func.value not in _shared_factories(
            model.source_text
        )
    return True


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
        return _objects_differ(model, a[2], b[2])
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
    if a[0] == b[0] and a[0] in ("def", "call"):
        return True  # two parameters, definitions or imports; two calls that construct
    if a[0] == "attr" and b[0] == "attr":
        if a[1] != b[1]:
            return False  # different roots: one may hold the other's object
        return not _may_alias(model.source_text, a[3], b[3])
    return False


def _may_alias(text: str, first: str | None, second: str | None) -> bool:
    """Whether the file assigns one attribute from the other, or both from the same value
    (`self.target = self.online`, `self.a = net` and `self.b = net`, `self.a = self.b =
    make()`), or from a call that takes the other (`copy.copy(self.online)`). Two calls
    that construct (`self.online = make_net()`, `self.target = make_net()`) are two
    objects. Read from the whole text, since methods that never mention a tape are not
    parsed (see `tapelint.parsing.slicer`)."""
    if first is None or second is None:
        return True
    assigned = _attribute_assignments(text)
    if assigned is None:
        return True
    last_first, last_second = first.rsplit(".", 1)[-1], second.rsplit(".", 1)[-1]
    first_values = assigned.get(last_first, set())
    second_values = assigned.get(last_second, set())
    if first_values & second_values:
        return True
    return any(_mentions(v, last_second) for v in first_values) or any(
        _mentions(v, last_first) for v in second_values
    )


def _mentions(value: str, attribute: str) -> bool:
    return re.search(rf"\.{re.escape(attribute)}\b", value) is not None


@lru_cache(maxsize=4)
def _attribute_assignments(text: str) -> dict[str, set[str]] | None:
    """For each attribute name, what the file assigns to `<anything>.<name>`: the value's
    source, or for a call that constructs, that call's position and the source of its
    arguments (one object per call). None when the text does not parse."""
    tree = _parsed(text)
    if tree is None:
        return None
    shared = _shared_factories(text)
    assigned: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            pairs = [(target, node.value) for target in node.targets]
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            pairs = [(node.target, node.value)]
        else:
            continue
        for target, value in pairs:
            for attribute, part in _attribute_targets(target, value):
                assigned.setdefault(attribute, set()).add(_value_key(part, shared))
    return assigned


def _attribute_targets(target: ast.expr, value: ast.expr | None) -> list[tuple[str, ast.expr]]:
    """`(name, value)` for each `x.name` a target binds; the value is the matching element
    of a literal tuple (`self.a, self.b = make(), make()`), or else the whole value."""
    if isinstance(target, ast.Attribute) and value is not None:
        return [(target.attr, value)]
    if isinstance(target, (ast.Tuple, ast.List)) and value is not None:
        elements = value.elts if isinstance(value, (ast.Tuple, ast.List)) else None
        found = []
        for index, element in enumerate(target.elts):
            part = elements[index] if elements is not None and index < len(elements) else value
            found.extend(_attribute_targets(element, part))
        return found
    return []


def _value_key(value: ast.expr, shared: frozenset[str]) -> str:
    text = ast.unparse(value)
    if isinstance(value, ast.Call) and _ast_constructs(value, shared):
        # Position makes every call its own value; the text keeps what it takes.
        return f"call@{value.lineno}:{value.col_offset} {text}"
    return text


def _ast_constructs(call: ast.Call, shared: frozenset[str]) -> bool:
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr not in _ACCESSORS
    if isinstance(func, ast.Name):
        return func.id not in _ACCESSORS and func.id not in shared
    return True


@lru_cache(maxsize=4)
def _shared_factories(text: str) -> frozenset[str]:
    """Functions of the file that may return one object to several callers: decorated
    (`functools.lru_cache`) or declaring `global`."""
    tree = _parsed(text)
    if tree is None:
        return frozenset()
    return frozenset(
        node.name
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and (
            node.decorator_list
            or any(isinstance(inner, (ast.Global, ast.Nonlocal)) for inner in ast.walk(node))
        )
    )


@lru_cache(maxsize=4)
def _parsed(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError):
        return None


def kept_in_sync(
    model: FileModel, sources: cst.BaseExpression, applied: cst.BaseExpression
) -> bool:
    """Whether the model whose variables the gradients were computed for is reset from the
    model they are applied to (`local.set_weights(global_model.get_weights())`): an A3C
    worker's local copy, whose gradients update the shared model on purpose. The other
    direction (`target.set_weights(online.get_weights())`, a DQN's target network) is no
    such copy: gradients of the online network applied to the target are a bug."""
    copy, shared = _owner(model, sources, 0), _owner(model, applied, 0)
    if copy is None or shared is None or copy == shared:
        return False
    for site in model.calls:
        func = site.node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "set_weights"):
            continue
        if dotted_name(func.value) != copy or not site.node.args:
            continue
        value = site.node.args[0].value
        if any(dotted_name(node) == shared for node in descendants(value)):
            return True
    return False


def _owner(model: FileModel, expr: cst.BaseExpression, depth: int) -> str | None:
    """The dotted name of the model whose variable list `expr` is (`self.local_model` for
    `self.local_model.trainable_variables`, through plain assignments)."""
    if depth > _MAX_DEPTH:
        return None
    if isinstance(expr, cst.Attribute) and expr.attr.value in TRAINABLE_LISTS | _ALL:
        return dotted_name(expr.value)
    if isinstance(expr, cst.Name):
        d = _only_assignment(model, expr)
        if d is not None and d.value is not None:
            return _owner(model, d.value, depth + 1)
    return None
