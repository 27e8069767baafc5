"""The module's classes and attribute stores as its whole text has them, read from `ast`.

The parse the rest of the model comes from may have left out methods that mention no
trigger (`source.relevant_source`): an `__init__` that sets `self.accumulator =
Accumulator()`, an override that filters None without naming a tape. What a method call on
an object resolves to depends on exactly those, so they are read from the whole text,
which the slicer parsed with `ast` already (`FileModel.text_tree`): no second parse.

For each class of the module (top level, or nested in a class; not in a function): the
expressions of its bases, the names its body binds (methods, assignments, imports: each
ends Python's look-up of a method there), and which of its methods are static or class
methods. For the whole module: every store, deletion or `setattr` of each attribute name,
with the class and method it is written in; how often each name is read, and how often as
the function of a call (a function whose every reference is a call has no other caller).
"""

from __future__ import annotations

import ast
from collections import Counter
from dataclasses import dataclass, field
from typing import TypeGuard
from weakref import WeakKeyDictionary

from tapelint.semantic.file_model.model import FileModel
from tapelint.semantic.project_model.module_bindings import module_bindings

# How `object` and the standard library's bases that define no method a project overrides
# are written: a class with only these bases has nothing above it to look a method up in.
_NO_METHODS = frozenset({"object", "abc.ABC", "ABC"})


@dataclass(frozen=True)
class ClassFacts:
    """One class: `name` is its local dotted name (`Outer.Inner`)."""

    name: str
    bases: tuple[ast.expr, ...]
    binds: frozenset[str]
    static: frozenset[str]  # methods decorated `@staticmethod`
    classmethods: frozenset[str]


@dataclass(frozen=True)
class AttributeStore:
    """A store (or deletion, `setattr`) of attribute `attr` on some object. `value` is the
    assigned expression for a plain `x.attr = value`, else None; `on_self`: the object is
    the first parameter of the method it is written in, a method of class `owner`."""

    attr: str
    value: ast.expr | None
    owner: str | None
    on_self: bool


@dataclass
class ModuleClasses:
    classes: dict[str, ClassFacts] = field(default_factory=dict)
    # Top-level names bound more than once (or both a class and something else).
    rebound: set[str] = field(default_factory=set)
    aliases: dict[str, str] = field(default_factory=dict)  # imported name -> qualified
    complete: bool = False  # False: the text did not parse (a notebook's IPython lines)

    def qualify(self, expr: ast.expr, module: str) -> str | None:
        """The qualified name of a class or module attribute written as `expr`: a class of
        this module (by a name bound once, at the top level), or an imported name and its
        attributes (`keras.Model`, `acc.Accumulator`)."""
        parts: list[str] = []
        while isinstance(expr, ast.Attribute):
            parts.append(expr.attr)
            expr = expr.value
        if not isinstance(expr, ast.Name):
            return None
        root = expr.id
        if root in self.rebound:
            return None
        if root in self.classes:
            head = f"{module}.{root}"
        elif root in self.aliases:
            head = self.aliases[root]
        else:
            return None
        return ".".join([head, *reversed(parts)])


@dataclass
class ModuleStores:
    """What the whole module does with attributes and names (one walk, made only when a
    question needs it)."""

    stores: dict[str, list[AttributeStore]] = field(default_factory=dict)
    loads: Counter[str] = field(default_factory=Counter)  # every read of a name
    called: Counter[str] = field(default_factory=Counter)  # reads that are a call's function


def module_classes(model: FileModel) -> ModuleClasses:
    """The classes of `model`'s module, read once per model (its top level and class
    bodies only)."""
    found = _CLASSES.get(model)
    if found is None:
        found = _CLASSES[model] = _classes(model)
    return found


def module_stores(model: FileModel) -> ModuleStores | None:
    """The attribute stores and name reads of `model`'s whole module, walked once per
    model; None when its text did not parse."""
    if model not in _STORES:
        tree = model.text_tree()
        found = None
        if tree is not None:
            found = ModuleStores()
            _Walker(found).visit(tree)
        _STORES[model] = found
    return _STORES[model]


def has_no_methods(written: str) -> bool:
    """Whether a base written this way (`object`, `abc.ABC`) defines no method to find."""
    return written in _NO_METHODS


_CLASSES: WeakKeyDictionary[FileModel, ModuleClasses] = WeakKeyDictionary()
_STORES: WeakKeyDictionary[FileModel, ModuleStores | None] = WeakKeyDictionary()


def _classes(model: FileModel) -> ModuleClasses:
    tree = model.text_tree()
    if tree is None:
        return ModuleClasses()
    found = ModuleClasses(complete=True)
    found.aliases = module_bindings(tree, model.module_name, is_package=model.is_package).aliases
    seen: Counter[str] = Counter()
    for node in tree.body:
        for name in _top_level_names(node):
            seen[name] += 1
        if isinstance(node, ast.ClassDef):
            _add_class(found, node, "")
    found.rebound = {name for name, count in seen.items() if count > 1}
    return found


def _add_class(found: ModuleClasses, node: ast.ClassDef, outer: str) -> None:
    name = f"{outer}.{node.name}" if outer else node.name
    found.classes[name] = ClassFacts(
        name=name,
        bases=tuple(node.bases),
        binds=_bound_in_body(node.body),
        static=frozenset(m.name for m in node.body if _decorated(m, "staticmethod")),
        classmethods=frozenset(m.name for m in node.body if _decorated(m, "classmethod")),
    )
    for member in node.body:
        if isinstance(member, ast.ClassDef):
            _add_class(found, member, name)


def _top_level_names(node: ast.stmt) -> list[str]:
    if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
        return [node.name]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [(a.asname or a.name).partition(".")[0] for a in node.names]
    targets: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
        targets = [node.target]
    return [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]


def _bound_in_body(body: list[ast.stmt]) -> frozenset[str]:
    """The names a class body binds at its own level (with its `if` / `try` blocks)."""
    names: set[str] = set()
    for node in body:
        if isinstance(node, (ast.If, ast.Try, ast.With, ast.For, ast.While)):
            inner = [*node.body, *getattr(node, "orelse", []), *getattr(node, "finalbody", [])]
            for handler in getattr(node, "handlers", []):
                inner += handler.body
            names |= _bound_in_body(inner)
            if isinstance(node, ast.For):
                names |= {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
            continue
        names.update(_top_level_names(node))
    return frozenset(names)


def _decorated(
    method: ast.stmt, decorator: str
) -> TypeGuard[ast.FunctionDef | ast.AsyncFunctionDef]:
    return isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
        isinstance(d, ast.Name) and d.id == decorator for d in method.decorator_list
    )


class _Walker(ast.NodeVisitor):
    """One walk over the whole tree: classes, attribute stores and name reads."""

    def __init__(self, found: ModuleStores) -> None:
        self.found = found
        self.classes: list[str] = []  # the enclosing classes' local names, innermost last
        self.in_function = 0
        # The method being walked: its class and its first parameter's name.
        self.method: tuple[str, str] | None = None

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for base in node.bases:
            self.visit(base)
        for decorator in node.decorator_list:
            self.visit(decorator)
        if self.in_function:  # a class inside a function: not one of the module's
            self._body(node.body, None)
            return
        name = ".".join([*self.classes, node.name])
        self.classes.append(name)
        self._body(node.body, name)
        self.classes.pop()

    def _body(self, body: list[ast.stmt], owner: str | None) -> None:
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and owner is not None:
                self._function(stmt, _first_parameter(stmt, owner))
            else:
                self.visit(stmt)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self._function(node, None)

    visit_AsyncFunctionDef = visit_FunctionDef

    def _function(
        self, node: ast.FunctionDef | ast.AsyncFunctionDef, method: tuple[str, str] | None
    ) -> None:
        for decorator in node.decorator_list:
            self.visit(decorator)
        self.visit(node.args)
        outer = self.method
        # A nested function sees the method's `self` unless it binds the name again.
        self.method = method if method is not None else _still_seen(outer, node)
        self.in_function += 1
        for stmt in node.body:
            self.visit(stmt)
        self.in_function -= 1
        self.method = outer

    def visit_Lambda(self, node: ast.Lambda) -> None:
        outer = self.method
        self.method = _still_seen(outer, node)
        self.generic_visit(node)
        self.method = outer

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load):
            self.found.loads[node.id] += 1

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name):
            self.found.called[func.id] += 1
            if func.id == "setattr" and len(node.args) >= 2:
                name = node.args[1]
                attr = name.value if isinstance(name, ast.Constant) else None
                # A computed name may set any attribute.
                self._store(attr if isinstance(attr, str) else "*", node.args[0], None)
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        single = len(node.targets) == 1 and isinstance(node.targets[0], ast.Attribute)
        for target in node.targets:
            self._targets(target, node.value if single else None)
        self.visit(node.value)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._targets(node.target, node.value)
        self.visit(node.annotation)
        if node.value is not None:
            self.visit(node.value)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._targets(node.target, None)
        self.visit(node.value)

    def visit_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            self._targets(target, None)

    def visit_For(self, node: ast.For | ast.AsyncFor) -> None:
        self._targets(node.target, None)
        self.generic_visit(node)

    visit_AsyncFor = visit_For

    def visit_withitem(self, node: ast.withitem) -> None:
        if node.optional_vars is not None:
            self._targets(node.optional_vars, None)
        self.generic_visit(node)

    def visit_comprehension(self, node: ast.comprehension) -> None:
        self._targets(node.target, None)
        self.generic_visit(node)

    def _targets(self, target: ast.expr, value: ast.expr | None) -> None:
        for node in ast.walk(target):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del)):
                self._store(node.attr, node.value, value if node is target else None)
                self.visit(node.value)
            elif isinstance(node, ast.Subscript):
                self.visit(node.value)
                self.visit(node.slice)

    def _store(self, attr: str, owner_expr: ast.expr, value: ast.expr | None) -> None:
        method = self.method
        on_self = (
            method is not None and isinstance(owner_expr, ast.Name) and owner_expr.id == method[1]
        )
        owner = method[0] if method is not None else None
        self.found.stores.setdefault(attr, []).append(AttributeStore(attr, value, owner, on_self))


def _first_parameter(
    node: ast.FunctionDef | ast.AsyncFunctionDef, owner: str
) -> tuple[str, str] | None:
    """(class, instance parameter) for a plain method; None for a static or class method."""
    if _decorated(node, "staticmethod") or _decorated(node, "classmethod"):
        return None
    params = [*node.args.posonlyargs, *node.args.args]
    return (owner, params[0].arg) if params else None


def _still_seen(
    method: tuple[str, str] | None, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
) -> tuple[str, str] | None:
    if method is None:
        return None
    args = node.args
    names = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
    names |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
    return None if method[1] in names else method
