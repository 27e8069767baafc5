"""Which class an object is an instance of, for a method called on it: by qualified name.

Known exactly (the method is that class's, found up its bases by `ProjectIndex`):
- a name every binding of which constructs one class of the project (`agent = Agent()`,
  with `Agent` defined in the module or imported from the project);
- a parameter of a nested function, or of a notebook's function, that every call passes
  such an object. Only there is every call site known: nothing can import a nested
  function or a notebook's. Every reference to the function must be a call (one passed as a
  value may be called from anywhere); in a notebook, the whole text is counted, since the
  parse may have left out a function that calls it;
- `self.attr` in a method of a class, when every store of an attribute named `attr` in the
  whole module is `self.attr = Cls()` in a method of that class and its body binds no
  `attr` of its own (`self.accumulator = GradientAccumulator()` in `__init__`).

Known up to subclasses: a parameter annotated with a class of the project (`solver:
Solver`). The annotation admits an object of `Solver` itself, whose method is then the
one the call runs, so a raw-gradient fact of `Solver.grad` is a bug for some call the
annotation allows; but a subclass that overrides the method may be the one meant, and
then it is not. So the method stays unknown when a class derived from `Solver` in the
caller's module (asked here) or in `Solver`'s own module (asked by `ProjectIndex`, the
target being `Solver+.grad`) binds the method itself. A subclass in a third module that
neither leads to is not seen: the annotation is taken at its word there. A class of the
module defined inside a function, a string or subscripted annotation (`"Solver"`,
`Optional[Solver]`) and a class outside the project (`keras.Model`: what its methods do is
the library table's) are not resolved.

Not resolved: an object passed to a module-level function of a `.py` file (another module
may import it and pass anything), an attribute assigned anywhere else (`trainer.acc = ...`,
`setattr`, a second constructor), an attribute of anything but `self`, and any class not
named by a plain name or dotted name.
"""

from __future__ import annotations

import ast
from weakref import WeakKeyDictionary

import libcst as cst

from tapelint.semantic.file_model.class_facts import (
    ClassFacts,
    ModuleClasses,
    has_no_methods,
    module_classes,
    module_stores,
)
from tapelint.semantic.file_model.expressions import certain_argument
from tapelint.semantic.file_model.model import Def, DefKind, FileModel, Scope, Use
from tapelint.semantic.project_model.names import absolute


def object_class(
    model: FileModel, owner: cst.BaseExpression, enclosing: str | None
) -> tuple[str, bool] | None:
    """(qualified class, open) of the object `owner` a method is called on, `open` when it
    may be of a subclass; `enclosing`: the local name of the class whose method the call
    is in, if any."""
    if isinstance(owner, cst.Attribute):
        value = owner.value
        if isinstance(value, cst.Name) and value.value == "self" and enclosing is not None:
            found = _attribute_class(model, enclosing, owner.attr.value)
            return (found, False) if found is not None else None
        return None
    if not isinstance(owner, cst.Name):
        return None
    defs = model.defs_of(owner)
    if len(defs) == 1:
        (d,) = defs
        if d.kind is DefKind.PARAM:
            annotation = d.annotation()
            if annotation is not None:
                found = _annotated_class(model, annotation)
                return (found, True) if found is not None else None
            found = _passed_class(model, d)
            return (found, False) if found is not None else None
    classes = {_constructed(model, d) for d in defs}
    if len(classes) == 1:
        (found,) = classes
        return (found, False) if found is not None else None
    return None


def module_class(model: FileModel, expr: cst.BaseExpression) -> str | None:
    """The qualified name of a class written as `expr`: a class defined at the top of this
    module, or an imported name of the project (which the index may find to be a class)."""
    if isinstance(expr, cst.Name):
        defs = model.defs_of(expr)
        if len(defs) == 1:
            (d,) = defs
            if (
                d.kind is DefKind.DEFINITION
                and isinstance(d.stmt, cst.ClassDef)
                and d.scope.is_module
            ):
                return f"{model.module_name}.{d.stmt.name.value}"
    qualified = model.imports.qualify(expr)
    if qualified is None:
        return None
    return absolute(qualified, model.module_name, is_package=model.is_package)


def _annotated_class(model: FileModel, annotation: cst.BaseExpression) -> str | None:
    """The class an annotation names: the walk records no uses in annotations, so a plain
    name is looked up among the module's own top-level bindings."""
    if not isinstance(annotation, cst.Name):
        return module_class(model, annotation)
    scope = next((scope for scope in model.scopes if scope.is_module), None)
    defs = model.scope_defs.get(scope, {}).get(annotation.value, []) if scope else []
    if len(defs) != 1 or annotation.value in module_classes(model).rebound:
        return None
    (d,) = defs
    if d.kind is DefKind.DEFINITION and isinstance(d.stmt, cst.ClassDef):
        return f"{model.module_name}.{annotation.value}"
    if d.kind is DefKind.IMPORT:
        return module_class(model, annotation)
    return None


def is_static(model: FileModel, qualified: str, method: str) -> bool:
    """Whether `method` of class `qualified`, a class of this module, is a static method."""
    facts = _local_facts(model, qualified)
    return facts is not None and method in facts.static


def is_class_method(model: FileModel, qualified: str, method: str) -> bool:
    facts = _local_facts(model, qualified)
    return facts is not None and method in facts.classmethods


def overridden_here(model: FileModel, qualified: str, method: str) -> bool:
    """Whether a class of this module derived from class `qualified` binds `method` (or
    the module's text could not be read to tell)."""
    classes = module_classes(model)
    if not classes.complete:
        return True
    module = model.module_name
    derived: dict[str, bool] = {}

    def derives(name: str) -> bool:
        if name not in derived:
            derived[name] = False  # a cycle derives from nothing
            for base in classes.classes[name].bases:
                written = classes.qualify(base, module)
                if written is None:
                    continue
                inside = written.startswith(f"{module}.")
                local = written[len(module) + 1 :] if inside else ""
                if written == qualified or (local in classes.classes and derives(local)):
                    derived[name] = True
                    break
        return derived[name]

    return any(
        method in facts.binds and f"{module}.{name}" != qualified and derives(name)
        for name, facts in classes.classes.items()
    )


def _local_facts(model: FileModel, qualified: str) -> ClassFacts | None:
    prefix = f"{model.module_name}."
    if not qualified.startswith(prefix):
        return None
    return module_classes(model).classes.get(qualified[len(prefix) :])


def _constructed(model: FileModel, d: Def) -> str | None:
    """The class `Cls` when `d` binds the name to `Cls(...)`."""
    value = d.value
    if d.kind is not DefKind.ASSIGN or d.unpack_index or not isinstance(value, cst.Call):
        return None
    return module_class(model, value.func)


def _attribute_class(model: FileModel, enclosing: str, attr: str) -> str | None:
    """The class every store of `attr` in the module constructs, when each is `self.attr =
    Cls()` in a method of class `enclosing`. A store on `self` in a method of a class that
    cannot share objects with `enclosing` (neither derives from the other, and all its
    bases are known: `_related_classes`) is about that class's objects and does not count."""
    classes = module_classes(model)
    stores = module_stores(model)
    facts = classes.classes.get(enclosing)
    if stores is None or facts is None or attr in facts.binds or "*" in stores.stores:
        return None
    found: set[str | None] = set()
    related = _related_classes(classes, enclosing)
    for store in stores.stores.get(attr, ()):
        value = store.value
        if store.on_self and store.owner not in related:
            continue  # another class's own objects: never an object of `enclosing`
        if not store.on_self or store.owner != enclosing or not isinstance(value, ast.Call):
            return None
        found.add(classes.qualify(value.func, model.module_name))
    if len(found) != 1:
        return None
    (qualified,) = found
    return qualified


def _related_classes(classes: ModuleClasses, enclosing: str) -> set[str | None]:
    """The classes of the module whose methods may run on an object of `enclosing`: itself,
    its bases and the classes derived from it, in the module; a class with a base the
    module does not define (an import may derive from `enclosing` too), a nested class,
    and None (a store outside any class) as well."""

    def bases(name: str) -> list[str | None]:
        facts = classes.classes.get(name)
        written = [ast.unparse(base) for base in facts.bases] if facts else []
        return [b if b in classes.classes else None for b in written if not has_no_methods(b)]

    def ancestors(name: str) -> set[str | None]:
        found: set[str | None] = set()
        pending: list[str | None] = [name]
        while pending:
            current = pending.pop()
            if current in found:
                continue
            found.add(current)
            if current is not None:
                pending.extend(bases(current))
        return found

    related: set[str | None] = {None}
    for name in classes.classes:
        above = ancestors(name)
        if "." in name or None in above or enclosing in above or name in ancestors(enclosing):
            related.add(name)
    return related


# ---------------------------------------------------------------------- call sites
def _passed_class(model: FileModel, param: Def) -> str | None:
    """The class every call of the parameter's function passes it an instance of, when
    every call site is known (a nested function, a notebook's function)."""
    function = param.stmt
    if not isinstance(function, cst.FunctionDef):
        return None
    scope = _definition_scope(model, function)
    if scope is None:
        return None
    nested = isinstance(scope.node, cst.FunctionDef)
    if not nested and not (model.is_notebook and scope.is_module):
        return None
    definition = _only_definition(model, function, scope)
    if definition is None:
        return None
    calls = _calls_of(model, definition)
    if not calls:
        return None
    if not nested:  # a notebook's: count what the parse may have left out
        stores = module_stores(model)
        name = function.name.value
        if stores is None or not stores.loads[name] == stores.called[name] == len(calls):
            return None
    position, keyword = _parameter_place(function, param.name)
    classes: set[str | None] = set()
    for call in calls:
        argument = certain_argument(call, position, keyword)
        if argument is None:
            return None
        classes.add(_argument_class(model, argument))
    if len(classes) != 1:
        return None
    (found,) = classes
    return found


def _argument_class(model: FileModel, argument: cst.BaseExpression) -> str | None:
    if isinstance(argument, cst.Call):
        return module_class(model, argument.func)
    if isinstance(argument, cst.Name):
        defs = model.defs_of(argument)
        classes = {_constructed(model, d) for d in defs}
        if len(classes) == 1:
            (found,) = classes
            return found
    return None


def _definition_scope(model: FileModel, function: cst.FunctionDef) -> Scope | None:
    """The scope the `def` statement runs in (None for a method: called on objects)."""
    for scope in model.scopes:
        if scope.node is function:
            parent = scope.parent
            if parent is None or isinstance(parent.node, cst.ClassDef):
                return None
            return parent
    return None


def _only_definition(model: FileModel, function: cst.FunctionDef, scope: Scope) -> Def | None:
    """The `def`'s binding of its name, when nothing else in its scope binds the name."""
    defs = model.scope_defs.get(scope, {}).get(function.name.value, [])
    if len(defs) != 1 or defs[0].stmt is not function or defs[0].kind is not DefKind.DEFINITION:
        return None
    return defs[0]


def _calls_of(model: FileModel, definition: Def) -> list[cst.Call] | None:
    """The calls of the function `definition` binds, when every reference to it is the
    function of a call that nothing else may bind (None otherwise)."""
    index = _references(model)
    calls: list[cst.Call] = []
    for use in index.uses.get(definition, ()):
        call = index.calls.get(use.node)
        if call is None or use.defs != frozenset({definition}):
            return None
        calls.append(call)
    return calls


class _References:
    def __init__(self, model: FileModel) -> None:
        self.uses: dict[Def, list[Use]] = {}
        for use in model.uses_by_node.values():
            for d in use.defs:
                if d.kind is DefKind.DEFINITION:
                    self.uses.setdefault(d, []).append(use)
        self.calls = {site.node.func: site.node for site in model.calls}


_REFERENCES: WeakKeyDictionary[FileModel, _References] = WeakKeyDictionary()


def _references(model: FileModel) -> _References:
    found = _REFERENCES.get(model)
    if found is None:
        found = _REFERENCES[model] = _References(model)
    return found


def _parameter_place(function: cst.FunctionDef, name: str) -> tuple[int | None, str | None]:
    """The position a call passes parameter `name` at (None for keyword-only), and the
    keyword it may be passed by (None for positional-only)."""
    params = function.params
    positional = [p.name.value for p in (*params.posonly_params, *params.params)]
    if name in positional:
        keyword = None if name in [p.name.value for p in params.posonly_params] else name
        return positional.index(name), keyword
    return None, name


def _argument(
    call: cst.Call, position: int | None, keyword: str | None
) -> cst.BaseExpression | None:
    """What `call` passes at `position` or as `keyword`; None when that is not certain
    (nothing passed, or `*args` / `**kwargs` may pass it)."""
    index = 0
    for arg in call.args:
        if arg.star:
            return None
        if arg.keyword is not None:
            if arg.keyword.value == keyword:
                return arg.value
        elif index == position:
            return arg.value
        else:
            index += 1
    return None
