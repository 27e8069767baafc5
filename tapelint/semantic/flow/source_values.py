"""Is a gradient source one value (one variable or tensor), not a list of them?

With one source a None gradient cannot pass unnoticed (a Keras optimizer raises "No
gradients provided for any variable"), so it matters when a source
written as a name or an attribute holds exactly one value. It does when every binding gives
one:

- a constructor of one value (`tf.Variable(...)`, `tf.constant(...)`, `tf.random.*`);
- a call of a function of the file that only returns such a constructor
  (`def init_weight(shape): return tf.Variable(...)`, also through a local bound once:
  `weight = tf.Variable(...); return weight`);
- for a name, a parameter that its function never iterates over (`zip(grads, name)`,
  `for v in name`);
- for an attribute (`self.log_alpha`, `gate.a1` with `gate = Gate(...)` an instance of a
  class of the file), every `self.<attribute> = ...` in the class's methods, and every
  `gate.a1 = ...` in the file: one of the above, or a parameter of the method that every
  construction of the class in the file passes one value (`Gate(a1=a1)`, `a1` a
  `tf.Variable`). An augmented assignment, a tuple target or a class the file does not
  define once makes the attribute unknown.

The class's methods are read from the file's text with Python's `ast`: `__init__` and
methods without a tape are usually cut out before the parse (`tapelint.parsing.slicer`).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

import libcst as cst

from tapelint.semantic.file_model.expressions import argument_for_parameter
from tapelint.semantic.file_model.model import DefKind, FileModel, Scope

ONE_VALUE_CONSTRUCTORS = frozenset(
    {
        "tensorflow.Variable",
        "keras.Variable",
        "tensorflow.constant",
        "tensorflow.convert_to_tensor",
        "tensorflow.zeros",
        "tensorflow.ones",
    }
)


def is_one_value(model: FileModel, name: cst.Name, scope: Scope) -> bool:
    """`name` holds one variable or tensor on every binding that reaches it."""
    defs = list(model.defs_of(name))
    if not defs:
        return False
    for d in defs:
        if d.kind is DefKind.PARAM:
            if _iterated(model, name.value, scope):
                return False
            continue
        if d.kind is not DefKind.ASSIGN or not isinstance(d.value, cst.Call):
            return False
        if not _makes_one_value(model, d.value):
            return False
    return True


def attribute_is_one_value(model: FileModel, attribute: cst.Attribute) -> bool:
    """`self.log_alpha` or `gate.a1` holds one variable: see the module's docstring."""
    owner = attribute.value
    if not isinstance(owner, cst.Name):
        return False
    class_name = _class_of_instance(model, owner)
    if class_name is None:
        return False
    name = attribute.attr.value
    values = list(_self_assignments(model, class_name, name))
    values += _instance_assignments(model, class_name, name)
    return bool(values) and all(
        value is not None and _value_is_one(model, class_name, value) for value in values
    )


def _makes_one_value(model: FileModel, call: cst.Call) -> bool:
    qualified = model.imports.qualify(call.func) or ""
    if qualified in ONE_VALUE_CONSTRUCTORS or qualified.startswith("tensorflow.random."):
        return True
    if not isinstance(call.func, cst.Name):
        return False
    defs = list(model.defs_of(call.func))
    module_scope = model.scopes[0]
    if (
        len(defs) != 1
        or defs[0].kind is not DefKind.DEFINITION
        or defs[0].scope is not module_scope
    ):
        return False
    function = _module_function(model, call.func.value)
    return function is not None and _returns_one_value(model, function)


def _returns_one_value(model: FileModel, function: ast.FunctionDef) -> bool:
    """Every `return` of a function gives a constructor of one value, directly or through a
    local bound once to one; no decorator (a cache hands back the same object) and no
    `yield`."""
    if function.decorator_list or any(
        isinstance(n, (ast.Yield, ast.YieldFrom)) for n in ast.walk(function)
    ):
        return False
    returns = [n for n in _own_nodes(function) if isinstance(n, ast.Return)]
    if not returns:
        return False
    for node in returns:
        value = node.value
        if isinstance(value, ast.Name):
            bound = [
                n
                for n in _own_nodes(function)
                if isinstance(n, ast.Name) and n.id == value.id and not isinstance(n.ctx, ast.Load)
            ]
            assignments = [
                n
                for n in _own_nodes(function)
                if isinstance(n, ast.Assign)
                and len(n.targets) == 1
                and isinstance(n.targets[0], ast.Name)
                and n.targets[0].id == value.id
            ]
            if len(bound) != 1 or len(assignments) != 1:
                return False
            value = assignments[0].value
        if not (isinstance(value, ast.Call) and _is_constructor_text(model, value)):
            return False
    return True


def _is_constructor_text(model: FileModel, call: ast.Call) -> bool:
    try:
        func = cst.parse_expression(ast.unparse(call.func))
    except cst.ParserSyntaxError:
        return False
    qualified = model.imports.qualify(func) or ""
    return qualified in ONE_VALUE_CONSTRUCTORS or qualified.startswith("tensorflow.random.")


def _value_is_one(model: FileModel, class_name: str, value: tuple[ast.expr, str | None]) -> bool:
    """An attribute's assigned value (with the method's parameter it names, if it is one)."""
    expr, parameter = value
    if parameter is not None:
        passed = _constructor_arguments(model, class_name, parameter)
        return bool(passed) and all(
            arg is not None and _cst_is_one(model, arg, scope) for arg, scope in passed
        )
    if isinstance(expr, ast.Call):
        if _is_constructor_text(model, expr):
            return True
        if isinstance(expr.func, ast.Name):
            function = _module_function(model, expr.func.id)
            return function is not None and _returns_one_value(model, function)
    return False


def _cst_is_one(model: FileModel, expr: cst.BaseExpression, scope: Scope) -> bool:
    if isinstance(expr, cst.Name):
        return is_one_value(model, expr, scope)
    return isinstance(expr, cst.Call) and _makes_one_value(model, expr)


def _class_of_instance(model: FileModel, owner: cst.Name) -> str | None:
    """The name of the module-level class `owner` is an instance of: `self` in one of its
    methods, or a name every binding of which constructs it (`gate = Gate(...)`)."""
    defs = list(model.defs_of(owner))
    if not defs:
        return None
    if owner.value == "self" and all(d.kind is DefKind.PARAM for d in defs):
        classes = {_enclosing_class_name(d.scope) for d in defs}
        found = classes.pop() if len(classes) == 1 else None
        return found
    names: set[str] = set()
    for d in defs:
        value = d.value
        if d.kind is not DefKind.ASSIGN or not isinstance(value, cst.Call):
            return None
        if not isinstance(value.func, cst.Name) or _module_class(model, value.func.value) is None:
            return None
        made = list(model.defs_of(value.func))
        if len(made) != 1 or not isinstance(made[0].stmt, cst.ClassDef):
            return None
        names.add(value.func.value)
    return names.pop() if len(names) == 1 else None


def _enclosing_class_name(scope: Scope) -> str | None:
    """The name of the module-level class whose method `scope` is."""
    parent = scope.parent
    if (
        isinstance(scope.node, cst.FunctionDef)
        and parent is not None
        and isinstance(parent.node, cst.ClassDef)
        and parent.parent is not None
        and parent.parent.parent is None
    ):
        return parent.node.name.value
    return None


def _self_assignments(
    model: FileModel, class_name: str, attribute: str
) -> Iterator[tuple[ast.expr, str | None] | None]:
    """What the class's methods assign to `self.<attribute>`, each with the method's
    parameter it names (None: another expression); None for a binding that is not a plain
    `=` of one target."""
    cls = _module_class(model, class_name)
    if cls is None:
        yield None
        return
    for method in cls.body:
        if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        arguments = method.args
        positional = [*arguments.posonlyargs, *arguments.args]
        parameters = {a.arg for a in (*positional[1:], *arguments.kwonlyargs)}
        for node in _own_nodes(method):
            for target, value in _bindings(node):
                if not _names_self_attribute(target, attribute):
                    continue
                if value is None or not isinstance(target, ast.Attribute):
                    yield None
                elif isinstance(value, ast.Name):
                    yield (value, value.id) if value.id in parameters else None
                else:
                    yield (value, None)


def _bindings(node: ast.AST) -> list[tuple[ast.expr, ast.expr | None]]:
    """The targets a statement binds, each with its value when it is a plain `=` of one
    target (None otherwise)."""
    if isinstance(node, ast.Assign):
        value = node.value if len(node.targets) == 1 else None
        return [(target, value) for target in node.targets]
    if isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor)):
        return [(node.target, None)]
    if isinstance(node, (ast.With, ast.AsyncWith)):
        return [(i.optional_vars, None) for i in node.items if i.optional_vars is not None]
    return []


def _instance_assignments(
    model: FileModel, class_name: str, attribute: str
) -> list[tuple[ast.expr, str | None] | None]:
    """`gate.a1 = ...` outside the class: unknown (an instance's attribute set from
    outside is not followed)."""
    found: list[tuple[ast.expr, str | None] | None] = []
    tree = model.text_tree()
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if (
                    isinstance(target, ast.Attribute)
                    and target.attr == attribute
                    and not (isinstance(target.value, ast.Name) and target.value.id == "self")
                ):
                    found.append(None)
    return found


def _names_self_attribute(target: ast.AST, attribute: str) -> bool:
    return any(
        isinstance(node, ast.Attribute)
        and node.attr == attribute
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
        and isinstance(node.ctx, ast.Store)
        for node in ast.walk(target)
    )


def _constructor_arguments(
    model: FileModel, class_name: str, parameter: str
) -> list[tuple[cst.BaseExpression | None, Scope]]:
    """What each construction of the class in the file passes to `__init__`'s `parameter`
    (None: nothing, or it cannot be told), with the scope of the call."""
    cls = _module_class(model, class_name)
    init = (
        next(
            (m for m in cls.body if isinstance(m, ast.FunctionDef) and m.name == "__init__"),
            None,
        )
        if cls is not None
        else None
    )
    if init is None:
        return []
    positional = [a.arg for a in (*init.args.posonlyargs, *init.args.args)][1:]
    found: list[tuple[cst.BaseExpression | None, Scope]] = []
    for site in model.calls:
        func = site.node.func
        if not (isinstance(func, cst.Name) and func.value == class_name):
            continue
        if not any(isinstance(d.stmt, cst.ClassDef) for d in model.defs_of(func)):
            continue
        found.append((argument_for_parameter(site.node, positional, parameter), site.scope))
    return found


def _module_class(model: FileModel, name: str) -> ast.ClassDef | None:
    found = _module_definitions(model, name)
    return found if isinstance(found, ast.ClassDef) else None


def _module_function(model: FileModel, name: str) -> ast.FunctionDef | None:
    found = _module_definitions(model, name)
    return found if isinstance(found, ast.FunctionDef) else None


def _module_definitions(model: FileModel, name: str) -> ast.AST | None:
    """The one top-level definition (or assignment) named `name` in the file's text, or
    None when there is not exactly one."""
    tree = model.text_tree()
    if tree is None:
        return None
    found: list[ast.AST] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name == name:
                found.append(node)
        elif any(
            isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
            for n in ast.walk(node)
        ):
            found.append(node)
    return found[0] if len(found) == 1 else None


def _own_nodes(function: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.AST]:
    """The nodes of a function, not those of functions, lambdas or classes nested in it."""
    pending: list[ast.AST] = list(function.body)
    while pending:
        node = pending.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            pending.extend(ast.iter_child_nodes(node))


def _iterated(model: FileModel, name: str, scope: Scope) -> bool:
    for site in model.calls:
        func = site.node.func
        zipped = site.scope is scope and isinstance(func, cst.Name) and func.value == "zip"
        if zipped and any(
            isinstance(a.value, cst.Name) and a.value.value == name for a in site.node.args
        ):
            return True
    return any(
        d.kind in (DefKind.FOR, DefKind.COMP)
        and isinstance(d.value, cst.Name)
        and d.value.value == name
        for defs in model.scope_defs.get(scope, {}).values()
        for d in defs
    )
