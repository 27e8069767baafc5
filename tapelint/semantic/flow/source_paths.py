"""Where a gradient source is read under another spelling: the paths that stand for it in
the tape's scope and in the functions and models its values are handed to.

A source written as a name may be an entry of a container (`W1 = parameters["W1"]`), and
the model may read it from there (`forward_propagation(X, parameters)`, whose body reads
`parameters["W1"]`). A path is a spelling of the source as a string: `W1`,
`parameters['W1']`, `self.log_alpha`. Handing a path's root to a function of the file
renames it to the parameter it lands in (`parameters['W1']` becomes `params['W1']` in
`def forward(X, params)`), so the function's returns can be walked for the same source.

Used by `differentiability` only where counting a source as used can only make a rule
more quiet (the evidence that every source feeds the loss).
"""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass
from weakref import WeakKeyDictionary

import libcst as cst

from tapelint.semantic.calls.callees import plain_function
from tapelint.semantic.calls.objects import object_class
from tapelint.semantic.file_model.builder import build_model
from tapelint.semantic.file_model.expressions import argument_value, decorator_callee
from tapelint.semantic.file_model.model import DefKind, FileModel, Scope
from tapelint.semantic.project_model.names import dotted_name

_FUNCTIONAL_MODELS = frozenset({"keras.Model", "keras.models.Model"})


def subscript_path(expr: cst.BaseExpression) -> str | None:
    """`parameters['W1']` for `parameters["W1"]`: a name (or dotted name) indexed by one
    string literal."""
    if not isinstance(expr, cst.Subscript) or len(expr.slice) != 1:
        return None
    index = expr.slice[0].slice
    if not isinstance(index, cst.Index) or not isinstance(index.value, cst.SimpleString):
        return None
    root = dotted_name(expr.value)
    key = index.value.evaluated_value
    if root is None or not isinstance(key, str):
        return None
    return f"{root}[{key!r}]"


def entry_aliases(model: FileModel, source: cst.BaseExpression) -> frozenset[str]:
    """The container entry a source name is bound to once (`W1 = parameters["W1"]`), when
    the module neither writes to the container nor calls a method on it
    (`parameters["W1"] = ...`, `parameters.update(...)`), so both spellings hold the same
    variable."""
    if not isinstance(source, cst.Name):
        return frozenset()
    defs = list(model.defs_of(source))
    if len(defs) != 1 or defs[0].kind is not DefKind.ASSIGN or defs[0].value is None:
        return frozenset()
    value = defs[0].value
    path = subscript_path(value)
    if path is None or not isinstance(value, cst.Subscript):
        return frozenset()
    root = path.partition("[")[0]
    if isinstance(value.value, cst.Name) and not _bound_once(model, value.value):
        return frozenset()  # `parameters` rebound: its entry may be another variable
    if mutation_pattern(root).search(model.source_text):
        return frozenset()
    return frozenset({path})


def _bound_once(model: FileModel, name: cst.Name) -> bool:
    """One binding reaches `name`, and its scope binds the name nowhere else."""
    defs = list(model.defs_of(name))
    if len(defs) != 1:
        return False
    return len(model.scope_defs.get(defs[0].scope, {}).get(name.value, [])) == 1


def mutation_pattern(name: str) -> re.Pattern[str]:
    """`name.append(...)`, `name.update(...)`, `name[key] = ...`: the container's contents
    are not what its definition shows."""
    return re.compile(rf"\b{re.escape(name)}\s*(\.\s*\w+\s*\(|\[[^\]\n]*\]\s*=(?!=))")


def renamed_in_callee(
    model: FileModel, call: cst.Call, paths: frozenset[str]
) -> tuple[cst.FunctionDef, frozenset[str]] | None:
    """The function of the file `call` runs, with the paths it receives the source under:
    a path's root handed to one of its parameters (`forward(X, parameters)` with the path
    `parameters['W1']` gives `params['W1']` in `def forward(x, params)`). None when the
    call runs no such function or hands it no path's root."""
    function = _function_called(model, call)
    scope = scope_of_function(model, function) if function is not None else None
    if function is None or scope is None:
        return None
    parameters = function.params
    positional = [p.name.value for p in (*parameters.posonly_params, *parameters.params)]
    keywords = {p.name.value for p in (*positional_params(parameters), *parameters.kwonly_params)}
    renamed: set[str] = set()
    index = 0
    for arg in call.args:
        if arg.star:
            return None
        if arg.keyword is not None:
            target = arg.keyword.value if arg.keyword.value in keywords else None
        else:
            target = positional[index] if index < len(positional) else None
            index += 1
        root = dotted_name(arg.value) if isinstance(arg.value, cst.Name) else None
        if target is None or root is None or len(model.scope_defs[scope].get(target, [])) != 1:
            continue  # a parameter the function rebinds may not hold what it was handed
        for path in paths:
            rest = _rest_after_root(path, root)
            if rest is not None:
                renamed.add(target + rest)
    return (function, frozenset(renamed)) if renamed else None


def _function_called(model: FileModel, call: cst.Call) -> cst.FunctionDef | None:
    """The function of the file a call by its bare name runs (`callees.plain_function`),
    also when it is compiled with `@tf.function`, which computes the same values."""
    function = plain_function(model, call)
    if function is not None or not isinstance(call.func, cst.Name):
        return function
    defs = list(model.defs_of(call.func))
    if len(defs) != 1 or defs[0].kind is not DefKind.DEFINITION:
        return None
    found = defs[0].stmt
    if not isinstance(found, cst.FunctionDef) or found.asynchronous is not None:
        return None
    compiled = all(
        model.imports.qualify(decorator_callee(d.decorator)) == "tensorflow.function"
        for d in found.decorators
    )
    return found if compiled else None


def positional_params(parameters: cst.Parameters) -> tuple[cst.Param, ...]:
    return (*parameters.posonly_params, *parameters.params)


def _rest_after_root(path: str, root: str) -> str | None:
    """`['W1']` for `parameters['W1']` and root `parameters`; None when `path` is not
    rooted there (a path equal to the root is the source itself, followed otherwise)."""
    if path.startswith(root) and path[len(root) : len(root) + 1] in ("[", "."):
        return path[len(root) :]
    return None


@dataclass(frozen=True)
class Forward:
    """The `call` of a layer instance, as the walk reads it."""

    function: cst.FunctionDef
    paths: frozenset[str]  # how it spells the source: `self.a1`
    bound_in: Scope  # the scope that binds the instance, where the constructor's names are
    model: FileModel  # the model `function` belongs to (a method read back from the text)


def renamed_in_instance_call(
    model: FileModel, call: cst.Call, paths: frozenset[str]
) -> Forward | None:
    """`gate(x)` with `gate = Gate(a1=a1, b1=b1)` bound once, `Gate` a class of the file:
    its forward method (`call`, or `__call__` for a class that has no `call`), with the
    paths it reads the source under (`gate.a1` is `self.a1` there; `a1` handed to
    `__init__`'s parameter `a1`, which `__init__` stores as `self.a1 = a1`, is `self.a1`
    too), and the scope that binds `gate`. Also `model(x)` with `model` a parameter that
    every call of its (nested or notebook) function passes an instance of one class of the
    file (`calls.objects`): `model.W1` is `self.W1` in its forward method."""
    func = call.func
    if not isinstance(func, cst.Name):
        return None
    defs = list(model.defs_of(func))
    if len(defs) != 1:
        return None
    if defs[0].kind is DefKind.PARAM:
        return _parameter_instance_call(model, func, defs[0].scope, paths)
    if defs[0].kind is not DefKind.ASSIGN:
        return None
    made = defs[0].value
    if not isinstance(made, cst.Call) or not isinstance(made.func, cst.Name):
        return None
    classes = [d.stmt for d in model.defs_of(made.func)]
    if len(classes) != 1 or not isinstance(classes[0], cst.ClassDef):
        return None
    cls = classes[0]
    found = _parsed_call(model, cls) or _call_from_text(model, cls.name.value)
    if found is None:
        return None
    forward, owner = found
    stored = _stored_parameters(model, cls.name.value)
    renamed = _attribute_paths(paths, func.value)
    for arg in made.args:
        if arg.keyword is None or not isinstance(arg.value, cst.Name):
            continue
        attribute = stored.get(arg.keyword.value)
        for path in paths:
            if attribute is not None and path == arg.value.value:
                renamed.add(f"self.{attribute}")
    return Forward(forward, frozenset(renamed), defs[0].scope, owner) if renamed else None


def _parameter_instance_call(
    model: FileModel, func: cst.Name, scope: Scope, paths: frozenset[str]
) -> Forward | None:
    """`model(x)` for a parameter whose class every call site agrees on, exactly (an
    annotation admits subclasses, whose forward method may differ: not followed)."""
    known = object_class(model, func, None)
    if known is None or known[1]:
        return None
    qualified = known[0]
    prefix = f"{model.module_name}."
    if not qualified.startswith(prefix) or "." in qualified[len(prefix) :]:
        return None
    found = _call_from_text(model, qualified[len(prefix) :])
    renamed = _attribute_paths(paths, func.value)
    if found is None or not renamed:
        return None
    forward, owner = found
    return Forward(forward, frozenset(renamed), scope, owner)


def _attribute_paths(paths: frozenset[str], root: str) -> set[str]:
    """The paths under `root`'s attributes spelled on `self` (`gate.a1` is `self.a1`)."""
    renamed: set[str] = set()
    for path in paths:
        rest = _rest_after_root(path, root)
        if rest is not None and rest.startswith("."):
            renamed.add("self" + rest)
    return renamed


def _parsed_call(model: FileModel, cls: cst.ClassDef) -> tuple[cst.FunctionDef, FileModel] | None:
    methods = {stmt.name.value: stmt for stmt in cls.body.body if isinstance(stmt, cst.FunctionDef)}
    forward = methods.get("call") or methods.get("__call__")
    return (forward, model) if forward is not None else None


_TEXT_CALLS: WeakKeyDictionary[FileModel, dict[str, tuple[cst.FunctionDef, FileModel] | None]] = (
    WeakKeyDictionary()
)


def _call_from_text(model: FileModel, class_name: str) -> tuple[cst.FunctionDef, FileModel] | None:
    """The class's forward method (`call`, else `__call__`) read back from the file's text
    when it was cut out before the parse (`tapelint.parsing.slicer`): parsed on its own, in a class
    of its own, with the module's imports (its names resolve as the module's do); once per
    class."""
    per_model = _TEXT_CALLS.setdefault(model, {})
    if class_name in per_model:
        return per_model[class_name]
    per_model[class_name] = None
    tree = model.text_tree()
    classes = [
        node
        for node in (tree.body if tree is not None else [])
        if isinstance(node, ast.ClassDef) and node.name == class_name
    ]
    methods = [
        m for m in (classes[0].body if len(classes) == 1 else []) if isinstance(m, ast.FunctionDef)
    ]
    forward = [m for m in methods if m.name == "call"] or [
        m for m in methods if m.name == "__call__"
    ]
    if len(forward) != 1:
        return None
    text = f"class {class_name}:\n" + textwrap.indent(ast.unparse(forward[0]), "    ") + "\n"
    try:
        owner = build_model(cst.parse_module(text), module_name=model.module_name)
    except cst.ParserSyntaxError:
        return None
    owner.imports = model.imports
    function = next((s.node for s in owner.scopes if isinstance(s.node, cst.FunctionDef)), None)
    if function is not None:
        per_model[class_name] = (function, owner)
    return per_model[class_name]


def _stored_parameters(model: FileModel, class_name: str) -> dict[str, str]:
    """`__init__`'s parameters that it stores as they are (`self.a1 = a1`), by parameter,
    with the attribute; read from the file's text (`__init__` is usually cut out)."""
    tree = model.text_tree()
    classes = [
        node
        for node in (tree.body if tree is not None else [])
        if isinstance(node, ast.ClassDef) and node.name == class_name
    ]
    if len(classes) != 1:
        return {}
    init = next(
        (m for m in classes[0].body if isinstance(m, ast.FunctionDef) and m.name == "__init__"),
        None,
    )
    if init is None:
        return {}
    parameters = {a.arg for a in (*init.args.args[1:], *init.args.kwonlyargs)}
    stored: dict[str, list[str]] = {}
    rebound: set[str] = set()
    for node in ast.walk(init):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            rebound.add(node.id)
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            continue
        target, value = node.targets[0], node.value
        if (
            isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name)
            and target.value.id == "self"
            and isinstance(value, ast.Name)
            and value.id in parameters
        ):
            stored.setdefault(value.id, []).append(target.attr)
    # An attribute bound anywhere else (another method, `gate.a1 = ...` outside the class)
    # may hold something else when `call` reads it.
    bound = [
        node.attr
        for node in ast.walk(classes[0] if tree is None else tree)
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del))
    ]
    return {
        parameter: attributes[0]
        for parameter, attributes in stored.items()
        if len(attributes) == 1 and parameter not in rebound and bound.count(attributes[0]) == 1
    }


def functional_outputs(
    model: FileModel, func: cst.BaseExpression
) -> tuple[cst.BaseExpression, Scope] | None:
    """`outputs` of `model = keras.Model(inputs, outputs)` when that one binding is what
    `func` names, with the scope of the binding: calling the model computes its outputs
    from the layers they were built with."""
    if not isinstance(func, cst.Name):
        return None
    defs = list(model.defs_of(func))
    if len(defs) != 1 or defs[0].kind is not DefKind.ASSIGN:
        return None
    value = defs[0].value
    if not isinstance(value, cst.Call):
        return None
    if model.imports.qualify(value.func) not in _FUNCTIONAL_MODELS:
        return None
    outputs = argument_value(value, 1, "outputs")
    return (outputs, defs[0].scope) if outputs is not None else None


def scope_of_function(model: FileModel, function: cst.FunctionDef) -> Scope | None:
    return next((scope for scope in model.scopes if scope.node is function), None)


def lambda_parameters(node: cst.Lambda) -> frozenset[str]:
    parameters = node.params
    every = (
        *parameters.posonly_params,
        *parameters.params,
        *parameters.kwonly_params,
        *(p for p in (parameters.star_arg, parameters.star_kwarg) if isinstance(p, cst.Param)),
    )
    return frozenset(p.name.value for p in every)
