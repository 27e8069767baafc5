"""Which function a call runs, by qualified name: the name the project index knows it by.

Resolved: a function or class of this module (by its definition, `module.f`,
`module.Class.method`, `module.outer.inner` for a nested function), an imported name
(`from .utils import grad`, `import pkg.utils as u; u.grad(...)`), `self.method(...)`
inside a class and `Class.method(...)` through a class of this module (the index follows
the class's bases), `obj.method(...)` on an object whose class `objects` knows, and, in a
module that star-imports, a name bound nowhere else (the index looks it up in the
star-imported modules). Anything else (an attribute of an unknown object, a lambda) has no
name.

A static method takes no instance and a class method called through its class takes the
class: `bound` says so for the methods of this module's classes. One inherited from
another module's class is keyed as a plain method is (the module cannot see its decorator).
"""

from __future__ import annotations

import builtins
import sys
from dataclasses import dataclass
from weakref import WeakKeyDictionary

import libcst as cst

from tapelint.semantic.calls.objects import (
    is_class_method,
    is_static,
    object_class,
    overridden_here,
)
from tapelint.semantic.file_model.model import CallSite, Def, DefKind, FileModel, Scope
from tapelint.semantic.project_model.names import absolute
from tapelint.semantic.project_model.summaries import OPEN

_BUILTINS = frozenset(dir(builtins))
# Top-level packages whose functions never have a summary of the project's (the library
# table's are found through calls, not forwards).
_ELSEWHERE = frozenset(
    {*sys.stdlib_module_names, "tensorflow", "keras", "numpy", "jax", "torch", "scipy", "absl"}
)


@dataclass(frozen=True)
class Callee:
    target: str  # the qualified name
    bound: bool  # called on an instance (`self.m(x)`): argument 0 is parameter 1


def callee_of(model: FileModel, call: cst.Call) -> Callee | None:
    func = call.func
    if isinstance(func, cst.Name):
        return _named(model, func)
    if not isinstance(func, cst.Attribute):
        return None
    qualified = model.imports.qualify(func)
    if qualified is not None:
        return Callee(_absolute(model, qualified), bound=False)
    return _method_callee(model, call, func.value, func.attr.value)


def _method_callee(
    model: FileModel, call: cst.Call, owner: cst.BaseExpression, method: str
) -> Callee | None:
    """`self.m(...)`, `Cls.m(...)` for a class of the module, and `obj.m(...)` on an object
    whose class is known (`objects`). A static method takes no instance; a class method
    called through its class takes the class."""
    enclosing = _enclosing_class(model, call)
    if isinstance(owner, cst.Name) and owner.value == "self":
        if enclosing is None:
            return None
        cls = qualified_name(model, enclosing)
        return Callee(f"{cls}.{method}", bound=not is_static(model, cls, method))
    through = _class_called(model, owner)
    if through is not None:
        return Callee(f"{through}.{method}", bound=is_class_method(model, through, method))
    local = local_name(model, enclosing) if enclosing is not None else None
    found = object_class(model, owner, local)
    if found is None or outside_project(found[0]):
        return None
    cls, open_ = found
    if open_ and overridden_here(model, cls, method):
        return None
    target = f"{cls}{OPEN}.{method}" if open_ else f"{cls}.{method}"
    return Callee(target, bound=not is_static(model, cls, method))


def _class_called(model: FileModel, owner: cst.BaseExpression) -> str | None:
    """The class of this module a method is called through (`Executor.clip(...)`)."""
    if not isinstance(owner, cst.Name):
        return None
    defs = model.defs_of(owner)
    if len(defs) != 1:
        return None
    (d,) = defs
    if d.kind is not DefKind.DEFINITION or not isinstance(d.stmt, cst.ClassDef):
        return None
    return qualified_name(model, d.stmt)


def outside_project(target: str) -> bool:
    """Whether a qualified name is of a package that is never the project's (the standard
    library, TensorFlow, Keras, NumPy, ...): the index holds no summary for it."""
    return target.partition(".")[0] in _ELSEWHERE


def plain_function(model: FileModel, call: cst.Call) -> cst.FunctionDef | None:
    """The function of this file that a call by its bare name runs, when that is certain
    and the call returns what its body returns: one `def` binds the name, with no decorator
    (a cache, say, hands back the same object every time) and not `async`."""
    if not isinstance(call.func, cst.Name):
        return None
    defs = model.defs_of(call.func)
    if len(defs) != 1:
        return None
    (definition,) = defs
    function = definition.stmt
    if definition.kind is not DefKind.DEFINITION or not isinstance(function, cst.FunctionDef):
        return None
    if function.decorators or function.asynchronous is not None:
        return None
    return function


def only_called_here(model: FileModel, function: cst.FunctionDef) -> bool:
    """Whether only this file can call `function`: a function of a notebook or of a script
    (a module with an `if __name__ == "__main__":` block is run, not imported), or a
    nested or private one (`_forward`, `Trainer._step`). A public function of a library
    module may be called from elsewhere with anything."""
    if model.is_notebook or any(
        isinstance(stmt, cst.If) and "__main__" in model.module.code_for_node(stmt.test)
        for stmt in model.module.body
    ):
        return True
    name = local_name(model, function) or ""
    return any(part.startswith("_") and not part.startswith("__") for part in name.split("."))


def calls_of(model: FileModel, function: cst.FunctionDef) -> list[tuple[cst.Call, Callee]]:
    """The calls of this file that run `function`, a function or method of the file, by
    its qualified name (`f(...)`, `self.f(...)`, `agent.f(...)`)."""
    return _names(model).calls_by_target(model).get(qualified_name(model, function), [])


def keyed_arguments(call: cst.Call, callee: Callee) -> list[tuple[str, cst.Arg]]:
    """The call's arguments keyed as a summary's parameters are: by position (counting the
    instance of a bound method call) or by keyword; `*args` / `**kwargs` are left out."""
    keyed: list[tuple[str, cst.Arg]] = []
    position = 1 if callee.bound else 0
    for arg in call.args:
        if arg.keyword is not None:
            keyed.append((arg.keyword.value, arg))
        elif not arg.star:
            keyed.append((str(position), arg))
            position += 1
    return keyed


def argument_for(
    params: tuple[str, ...], param: int, arguments: dict[str, cst.Arg]
) -> cst.Arg | None:
    """The argument a call gives parameter `param` of a function with these parameters."""
    if str(param) in arguments:
        return arguments[str(param)]
    if param < len(params):
        return arguments.get(params[param])
    return None


def arguments_passed(model: FileModel, d: Def) -> list[cst.BaseExpression | None] | None:
    """What each call of this file passes to parameter `d` of a function of the file (None
    for a call that passes nothing there), or None when `d` is not such a parameter."""
    function = d.stmt
    if d.kind is not DefKind.PARAM or not isinstance(function, cst.FunctionDef):
        return None
    params = function.params
    names = tuple(
        p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)
    )
    if d.name not in names:
        return None
    index = names.index(d.name)
    passed: list[cst.BaseExpression | None] = []
    for call, callee in calls_of(model, function):
        argument = argument_for(names, index, dict(keyed_arguments(call, callee)))
        passed.append(argument.value if argument is not None else None)
    return passed


def qualified_name(model: FileModel, node: cst.CSTNode) -> str:
    """`module.Class.method` for a function or class defined in this module."""
    return f"{model.module_name}.{_local_names(model).get(node, '?')}"


def local_name(model: FileModel, node: cst.CSTNode) -> str | None:
    """`Class.method` for a function or class of this module, without the module."""
    return _local_names(model).get(node)


def _named(model: FileModel, name: cst.Name) -> Callee | None:
    defs = model.defs_of(name)
    if not defs:
        if model.imports.star_modules and name.value not in _BUILTINS:
            return Callee(f"{model.module_name}.{name.value}", bound=False)
        return None
    if all(d.kind is DefKind.IMPORT for d in defs):
        qualified = model.imports.qualify(name)
        return Callee(_absolute(model, qualified), bound=False) if qualified else None
    made = {d.stmt for d in defs if d.kind is DefKind.DEFINITION}
    if len(made) != 1 or len(made) != len(defs):
        return None
    (definition,) = made
    if not isinstance(definition, cst.FunctionDef):
        return None
    return Callee(qualified_name(model, definition), bound=False)


def _absolute(model: FileModel, qualified: str) -> str:
    return absolute(qualified, model.module_name, is_package=model.is_package)


def _enclosing_class(model: FileModel, call: cst.Call) -> cst.ClassDef | None:
    """The class of the method `self` belongs to at `call`: the innermost function whose
    parent is a class, past nested functions and lambdas (which see the method's `self`)."""
    site = call_site(model, call)
    scope: Scope | None = site.scope if site is not None else None
    while scope is not None:
        parent = scope.parent
        if (
            isinstance(scope.node, cst.FunctionDef)
            and parent is not None
            and isinstance(parent.node, cst.ClassDef)
        ):
            return parent.node
        scope = parent
    return None


def instance_class(model: FileModel, name: cst.Name) -> cst.ClassDef | None:
    """The one class of this module every binding of `name` is an instance of."""
    classes: set[cst.ClassDef] = set()
    for d in model.defs_of(name):
        value = d.value
        if d.kind is not DefKind.ASSIGN or d.unpack_index or not isinstance(value, cst.Call):
            return None
        if not isinstance(value.func, cst.Name):
            return None
        made = [
            c.stmt
            for c in model.defs_of(value.func)
            if c.kind is DefKind.DEFINITION and isinstance(c.stmt, cst.ClassDef)
        ]
        if len(made) != 1:
            return None
        classes.add(made[0])
    return classes.pop() if len(classes) == 1 else None


class _Names:
    def __init__(self, model: FileModel) -> None:
        self.local: dict[cst.CSTNode, str] = {}
        for scope in model.scopes:
            node = scope.node
            if not isinstance(node, (cst.FunctionDef, cst.ClassDef)):
                continue
            parts = [node.name.value]
            parent = scope.parent
            while parent is not None and isinstance(parent.node, (cst.FunctionDef, cst.ClassDef)):
                parts.append(parent.node.name.value)
                parent = parent.parent
            self.local[node] = ".".join(reversed(parts))
        self.sites = {site.node: site for site in model.calls}
        # No reference to the model: it is this object's key in a WeakKeyDictionary, which
        # a reference from the value would keep alive for good (a leak per check).
        self._by_target: dict[str, list[tuple[cst.Call, Callee]]] | None = None

    def calls_by_target(self, model: FileModel) -> dict[str, list[tuple[cst.Call, Callee]]]:
        """The calls of the file by the qualified name of what they call."""
        if self._by_target is None:
            self._by_target = {}
            for site in model.calls:
                callee = callee_of(model, site.node)
                if callee is not None:
                    self._by_target.setdefault(callee.target, []).append((site.node, callee))
        return self._by_target


_NAMES: WeakKeyDictionary[FileModel, _Names] = WeakKeyDictionary()


def _names(model: FileModel) -> _Names:
    found = _NAMES.get(model)
    if found is None:
        found = _NAMES[model] = _Names(model)
    return found


def _local_names(model: FileModel) -> dict[cst.CSTNode, str]:
    return _names(model).local


def call_site(model: FileModel, call: cst.Call) -> CallSite | None:
    """The site the model recorded for `call`."""
    return _names(model).sites.get(call)


def referenced_callee(
    model: FileModel, reference: cst.BaseExpression, at: cst.Call
) -> Callee | None:
    """The function a reference names when it is handed on rather than called (`add_noise`
    or `self.add_noise` given to `tf.nest.map_structure` at call `at`): what `callee_of`
    resolves for a call of it written there."""
    if (
        isinstance(reference, cst.Attribute)
        and isinstance(reference.value, cst.Name)
        and reference.value.value == "self"
        and model.imports.qualify(reference) is None
    ):
        cls = _enclosing_class(model, at)
        if cls is None:
            return None
        return Callee(f"{qualified_name(model, cls)}.{reference.attr.value}", bound=True)
    return callee_of(model, cst.Call(func=reference))
