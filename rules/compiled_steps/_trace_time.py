"""Python values a compiled step computes or reads while it is traced, that are meant to
change on every call: the trace freezes them.

A `tf.function` runs its Python body only while it traces; every later call runs the graph,
with whatever Python computed during the trace baked in as a constant (measured on
TensorFlow 2.21: `@tf.function def f(x): return x + np.random.rand()` returns the same value
on every call; a global counter or `self.batch_idx` that the loop increments reads 0 on
every call; `losses.append(loss)` inside the function adds one symbolic tensor per trace,
not one per call). A Keras `train_step` / `test_step` / `predict_step` override is compiled
the same way by `fit`, which calls it on every batch.

What is reported, inside a compiled function that is called again and again with its trace
reused:
- a call of NumPy's or Python's randomness (`np.random.rand()`, `np.random.shuffle(idx)`,
  `random.random()`), in the function's own body or in a function of the file it calls;
- a read of a Python number that the loop calling the function changes between calls: a
  module-level name (`step += 1`, `for epoch in range(n)` around the call) or an attribute
  of `self` that the calling method's loop changes (`self.batch_idx += 1`), when every value
  it is ever given is a Python number;
- an `append` / `extend` onto a list made outside the function (a module-level name, an
  attribute of `self` that is only ever set to a list) of a value the function computes.

Precision: the function must certainly be called again with its trace reused: a Keras step
override (which `fit` calls per batch), or a `tf.function` called in a loop of eager code
(directly, or through a name bound before that loop to a factory's result that returns it),
with neither `tf.config.run_functions_eagerly(...)` nor `run_eagerly=` in the file; a
function that TAP501 shows traced again on every call (`retracing`) runs its Python every
time, and is left alone. Silent too: TensorFlow's own randomness (`tf.random.*`, a
`tf.random.Generator`), seeding (`np.random.seed`), values that only go to `print`,
logging or `tf.print` (a deliberate trace-time message), randomness that makes an initial
value (`tf.Variable(np.random.randn(...))`, under `tf.init_scope()` or an `is None` guard:
meant to run once), values constant for the run (a hyperparameter set once in `__init__`,
a module constant), a constant appended (`traces.append(1)`, how tests count traces) or
an append under a condition,
code nested in the function (a lambda, a function handed to `tf.py_function` or
`tf.numpy_function`, which run per call), and test code.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import Enum

import libcst as cst

from tapelint.semantic.calls.steps import (
    StepIndex,
    innermost_loop,
    loop_nodes,
    tf_function_decorator,
    under_condition,
    wrapped_function,
)
from tapelint.semantic.file_model.class_facts import module_stores
from tapelint.semantic.file_model.expressions import (
    NESTED_CODE,
    contains,
    descendants,
    names_in,
    returns_of,
)
from tapelint.semantic.file_model.model import CallSite, DefKind, FileModel, Scope
from tapelint.semantic.file_model.test_code import is_test_code
from tapelint.semantic.project_model.names import dotted_name

from ._graph_building import GraphBuilding
from ._retracing import (
    counter_arguments,
    creations_per_step,
    varying_counter,
)
from ._sweeps import is_case_value

_KERAS_STEPS = frozenset({"train_step", "test_step", "predict_step"})
# What NumPy's and Python's random modules draw with (not `seed`, state or generators).
_NUMPY_DRAWS = frozenset(
    {
        "rand", "randn", "randint", "random", "random_sample", "ranf", "sample", "choice",
        "shuffle", "permutation", "uniform", "normal", "standard_normal", "binomial",
        "poisson", "beta", "gamma", "exponential", "laplace", "logistic", "lognormal",
        "multinomial", "multivariate_normal", "dirichlet", "geometric", "gumbel", "bytes",
        "random_integers", "rayleigh", "triangular", "standard_cauchy", "standard_t",
        "standard_gamma", "standard_exponential", "chisquare", "hypergeometric",
        "negative_binomial", "pareto", "power", "vonmises", "wald", "weibull", "zipf",
        "logseries",
    }
)  # fmt: skip
_PYTHON_DRAWS = frozenset(
    {
        "random", "uniform", "randint", "randrange", "choice", "choices", "shuffle",
        "sample", "gauss", "normalvariate", "betavariate", "expovariate", "gammavariate",
        "lognormvariate", "triangular", "vonmisesvariate", "paretovariate",
        "weibullvariate", "getrandbits", "randbytes", "binomialvariate",
    }
)  # fmt: skip
_OUTPUT = frozenset({"print", "tensorflow.print", "absl.logging", "logging"})
_INITIAL_VALUES = ("tensorflow.Variable", "tensorflow.constant_initializer")
_LIST_METHODS = frozenset({"append", "extend"})
_HELPER_DEPTH = 3
_EAGER_SWITCHES = re.compile(r"\brun_(?:functions_)?eagerly\b")


class FrozenKind(Enum):
    RANDOM = "random"  # NumPy or Python randomness drawn while tracing
    LOOP_STATE = "loop-state"  # a Python number the calling loop changes between calls
    APPEND = "append"  # a list outside the function grown once per trace


@dataclass(frozen=True)
class FrozenValue:
    node: cst.CSTNode  # the read or call inside the compiled function
    kind: FrozenKind
    function: str  # the compiled function's name
    value: cst.CSTNode  # what is frozen: the randomness call (maybe in a helper), the read
    helper: str | None = None  # the function of the file that draws, called at `node`
    changed_by: cst.CSTNode | None = None  # the loop statement that changes the value


def frozen_values(model: FileModel) -> Iterator[FrozenValue]:
    if _runs_eagerly(model):
        return  # compiled functions may run eagerly: every call runs the Python
    index = StepIndex(model)
    compiled = [
        scope
        for scope in model.scopes
        if isinstance(scope.node, cst.FunctionDef) and index.is_compiled(scope)
    ]
    if not compiled:
        return
    finder = _Finder(model, index)
    for scope in compiled:
        function = scope.node
        if not isinstance(function, cst.FunctionDef) or is_test_code(model, scope):
            continue
        calls = finder.repeated_calls(scope, function)
        if calls is None:
            continue
        yield from finder.in_function(scope, function, calls)


def _runs_eagerly(model: FileModel) -> bool:
    """Whether the file may turn compilation off: `tf.config.run_functions_eagerly(...)`,
    `run_eagerly=` (Keras' `compile`), or `model.run_eagerly = ...`, with anything but a
    literal `False`. Read from the whole text (the code may sit in a function the slicer
    cut), and only when the words are there at all."""
    if not _EAGER_SWITCHES.search(model.source_text):
        return False
    tree = model.text_tree()
    if tree is None:
        return True  # cannot tell: assume it may
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name == "run_functions_eagerly" and not _all_false(node.args[:1]):
                return True
            if any(k.arg == "run_eagerly" and not _all_false([k.value]) for k in node.keywords):
                return True
        elif (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Attribute) and t.attr == "run_eagerly" for t in node.targets)
            and not _all_false([node.value])
        ):
            return True
    return False


def _all_false(values: list[ast.expr]) -> bool:
    return bool(values) and all(isinstance(v, ast.Constant) and v.value is False for v in values)


class _Finder:
    def __init__(self, model: FileModel, index: StepIndex) -> None:
        self.model = model
        self.index = index
        self.graphs = GraphBuilding(model)
        self._calls_by_scope: dict[Scope, list[CallSite]] = {}
        for site in model.calls:
            self._calls_by_scope.setdefault(site.scope, []).append(site)
        self._uses_by_scope: dict[Scope, list[cst.Name]] | None = None
        self._retraced: set[cst.FunctionDef] | None = None

    # ------------------------------------------------------------ compiled and repeated
    def repeated_calls(self, scope: Scope, function: cst.FunctionDef) -> list[CallSite] | None:
        """The eager calls in loops that run `function`'s reused trace ([] for a Keras step
        override, which `fit` calls); None when it is not compiled, not certainly called
        again, or traced again on every call."""
        if scope.parent is not None and self.index.is_compiled(scope.parent):
            return None  # nested in compiled code: traced with it, or handed to py_function
        if not self.index.is_compiled(scope):
            return None
        if (
            function.name.value in _KERAS_STEPS
            and _in_class(scope)
            and scope.is_compiled
            and tf_function_decorator(self.model, function) is None
        ):
            return []  # a Keras override: `fit` calls it on every batch
        calls = [
            site
            for site in [*self.index.calls_of_function(function), *self._made_by_factory(scope)]
            if innermost_loop(site.ctx) is not None and not self.index.is_compiled(site.scope)
        ]
        if not calls or function in self._retraced_functions():
            return None
        if any(self._passes_case_value(site) for site in calls):
            return None  # a sweep's case value: one trace per case, each run afresh
        return calls

    def _made_by_factory(self, scope: Scope) -> list[CallSite]:
        """Calls of a nested function that the function around it returns on every path
        (`def make_step(obj): @tf.function def step(): ...; return step`), through names
        bound only to calls of that factory (`step_fn = make_step(obj)`, `step_fn()`)."""
        factory = scope.parent.node if scope.parent is not None else None
        if not isinstance(factory, cst.FunctionDef) or not isinstance(scope.node, cst.FunctionDef):
            return []
        returns = list(returns_of(factory))
        name = scope.node.name.value
        if not returns or not all(
            isinstance(r.value, cst.Name) and r.value.value == name for r in returns
        ):
            return []
        made = {
            d
            for site in self.index.calls_of_function(factory)
            for d in self.model.defs_by_stmt.get(site.stmt, [])
            if d.kind is DefKind.ASSIGN and d.value is site.node
        }
        calls: list[CallSite] = []
        for d in made:
            for site in self.index.calls_of(d):
                defs = self.model.defs_of(site.node.func)
                loop = innermost_loop(site.ctx)
                if loop is not None and any(loop.node in loop_nodes(m.ctx) for m in defs):
                    return []  # made anew in the iteration that calls it: traced anew
                if defs and defs <= made and site not in calls:
                    calls.append(site)
        return calls

    def _passes_case_value(self, site: CallSite) -> bool:
        for arg in site.node.args:
            if isinstance(arg.value, cst.Name):
                defs = self.model.defs_of(arg.value)
                if defs and all(is_case_value(self.model, d) for d in defs):
                    return True
        return False

    def _retraced_functions(self) -> set[cst.FunctionDef]:
        """The compiled functions TAP501 shows traced on every call."""
        if self._retraced is None:
            found: set[cst.FunctionDef] = set()
            for creation in creations_per_step(self.model, self.index):
                found.update(self._compiled_at(creation.node))
            for argument in counter_arguments(self.model, self.index):
                site = self.index.call_site(argument.call)
                found.update(self.index.callees(site) or () if site is not None else ())
            self._retraced = found
        return self._retraced

    def _compiled_at(self, node: cst.CSTNode) -> list[cst.FunctionDef]:
        for scope in self.model.scopes:
            function = scope.node
            if isinstance(function, cst.FunctionDef) and any(
                d.decorator is node for d in function.decorators
            ):
                return [function]
        site = self.index.call_site(node) if isinstance(node, cst.Call) else None
        wrapped = wrapped_function(site) if site is not None else None
        if not isinstance(wrapped, cst.Name):
            return []
        return [
            d.stmt
            for d in self.model.defs_of(wrapped)
            if d.kind is DefKind.DEFINITION and isinstance(d.stmt, cst.FunctionDef)
        ]

    # ------------------------------------------------------------ what is frozen
    def in_function(
        self, scope: Scope, function: cst.FunctionDef, calls: list[CallSite]
    ) -> Iterator[FrozenValue]:
        name = function.name.value
        for site in self._calls_by_scope.get(scope, []):
            if self._ignored(site):
                continue
            if _is_draw(site.qualified):
                yield FrozenValue(site.node, FrozenKind.RANDOM, name, site.node)
                continue
            drawn = self._helper_draw(site, {function})
            if drawn is not None:
                helper, draw = drawn
                yield FrozenValue(site.node, FrozenKind.RANDOM, name, draw, helper)
                continue
            appended = self._outer_append(scope, function, site)
            if appended is not None:
                yield FrozenValue(site.node, FrozenKind.APPEND, name, appended)
        yield from self._loop_state(scope, function, calls)

    def _ignored(self, site: CallSite) -> bool:
        """Inside output, an initial value, `tf.init_scope()`, or an `is None` guard."""
        if self.graphs.lifted(site):
            return True
        for outer in self.model.calls_in(site.stmt):
            qualified = outer.qualified or dotted_name(outer.node.func) or ""
            if outer.node is site.node or not contains(outer.node, site.node):
                continue
            if qualified in _OUTPUT or qualified.startswith(("logging.", "absl.logging.")):
                return True
            if qualified.startswith(_INITIAL_VALUES) or qualified.endswith("add_weight"):
                return True
        return self._under_none_guard(site)

    def _under_none_guard(self, site: CallSite) -> bool:
        stmt = site.stmt
        while True:
            parent = self.model.stmt_parent.get(stmt)
            if parent is None or isinstance(parent[0], cst.FunctionDef):
                return False
            owner = parent[0]
            if isinstance(owner, cst.If) and "None" in self.model.module.code_for_node(owner.test):
                return True
            stmt = owner

    def _helper_draw(
        self, site: CallSite, seen: set[cst.FunctionDef], depth: int = 0
    ) -> tuple[str, cst.Call] | None:
        """(helper, the draw) when `site` calls functions of this file, not compiled
        themselves, one of which draws NumPy or Python randomness (through its own calls,
        up to a few levels)."""
        if depth >= _HELPER_DEPTH:
            return None
        for helper in self.index.callees(site) or ():
            scope = self.index.scope_of(helper)
            if helper in seen or scope is None or self.index.is_compiled(scope):
                continue
            seen.add(helper)
            for inner in self._calls_by_scope.get(scope, []):
                if self._ignored(inner):
                    continue
                if _is_draw(inner.qualified):
                    return helper.name.value, inner.node
                deeper = self._helper_draw(inner, seen, depth + 1)
                if deeper is not None:
                    return helper.name.value, deeper[1]
        return None

    def _outer_append(
        self, scope: Scope, function: cst.FunctionDef, site: CallSite
    ) -> cst.BaseExpression | None:
        """The list, made outside the function, that `site` appends a computed value to, on
        every path through the function (an append under a condition may be a lazy build
        on the first trace)."""
        func = site.node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value in _LIST_METHODS):
            return None
        if under_condition(self.model, site.stmt, function):
            return None
        if len(site.node.args) != 1 or not self._computed_here(scope, site.node.args[0].value):
            return None
        target = func.value
        if isinstance(target, cst.Name):
            defs = self.model.defs_of(target)
            if defs and all(d.scope is not scope and _is_new_list(d.value) for d in defs):
                return target
            return None
        attribute = _self_attribute(target)
        owner = _class_name(scope)
        if attribute is None or owner is None:
            return None
        if self._attribute_values(owner, attribute, _is_list_ast):
            return target
        return None

    def _computed_here(self, scope: Scope, value: cst.BaseExpression) -> bool:
        """A value that the function computes (names one of its locals or parameters), not
        a constant or a message."""
        if isinstance(value, (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString)):
            return False
        return any(d.scope is scope for name in names_in(value) for d in self.model.defs_of(name))

    def _loop_state(
        self, scope: Scope, function: cst.FunctionDef, calls: list[CallSite]
    ) -> Iterator[FrozenValue]:
        name = function.name.value
        reported: set[str] = set()
        for use in self._names_read(scope):
            if use.value in reported or self._read_for_output(use):
                continue
            defs = self.model.defs_of(use)
            if not defs or any(d.scope is scope for d in defs):
                continue
            for site in calls:
                changed = varying_counter(self.model, site, use)
                if changed is not None:
                    reported.add(use.value)
                    yield FrozenValue(use, FrozenKind.LOOP_STATE, name, use, changed_by=changed)
                    break
        owner = _class_name(scope)
        if owner is None:
            return
        changes: dict[str, cst.CSTNode] = {}
        for site in calls:
            for loop in loop_nodes(site.ctx):
                _attribute_changes(loop, changes)
        if not changes:
            return
        for read in _self_reads(function):
            attribute = read.attr.value
            if attribute not in changes or attribute in reported:
                continue
            if self._read_for_output(read):
                continue
            if self._attribute_values(owner, attribute, _is_number_ast, augmented=True):
                reported.add(attribute)
                yield FrozenValue(
                    read, FrozenKind.LOOP_STATE, name, read, changed_by=changes[attribute]
                )

    def _names_read(self, scope: Scope) -> list[cst.Name]:
        if self._uses_by_scope is None:
            self._uses_by_scope = {}
            for node, use in self.model.uses_by_node.items():
                if isinstance(node, cst.Name):
                    self._uses_by_scope.setdefault(use.scope, []).append(node)
        return self._uses_by_scope.get(scope, [])

    def _read_for_output(self, read: cst.CSTNode) -> bool:
        stmt = self.model.stmt_of.get(read)
        for outer in self.model.calls_in(stmt) if stmt is not None else ():
            qualified = outer.qualified or dotted_name(outer.node.func) or ""
            if contains(outer.node, read) and (
                qualified in _OUTPUT or qualified.startswith(("logging.", "absl.logging."))
            ):
                return True
        return False

    def _attribute_values(
        self,
        owner: str,
        attribute: str,
        check: Callable[[ast.expr], bool],
        augmented: bool = False,
    ) -> bool:
        """Every store of `attribute` in the module is on `self` in class `owner` and gives
        it a value `check` accepts (an augmented assignment, when `augmented`)."""
        stores = module_stores(self.model)
        if stores is None:
            return False
        found = stores.stores.get(attribute, [])
        if not found or stores.stores.get("*"):
            return False
        for store in found:
            if not store.on_self or store.owner != owner:
                return False
            if store.value is None:
                if not augmented:
                    return False
            elif not check(store.value):
                return False
        return any(store.value is not None for store in found)


def _attribute_changes(loop: cst.CSTNode, found: dict[str, cst.CSTNode]) -> None:
    """`self.attr += n` (or `self.attr = <not a number>`) in a loop's body, not in nested
    code: what changes the attribute from one iteration to the next. (`self.attr = 0`
    resets it to the same value each time.)"""
    for node in descendants(loop, skip=NESTED_CODE):
        if isinstance(node, cst.AugAssign):
            targets = [node.target]
        elif isinstance(node, cst.Assign) and not isinstance(node.value, cst.BaseNumber):
            targets = [target.target for target in node.targets]
        else:
            continue
        for target in targets:
            attribute = _self_attribute(target)
            if attribute is not None:
                found.setdefault(attribute, node)


def _self_reads(function: cst.FunctionDef) -> list[cst.Attribute]:
    """The reads of `self.<name>` in a method's own body (not in nested code)."""
    stores: set[cst.CSTNode] = set()
    reads: list[cst.Attribute] = []
    for node in descendants(function.body, skip=NESTED_CODE):
        if isinstance(node, (cst.AssignTarget, cst.AugAssign)):
            stores.add(node.target)
        elif (
            isinstance(node, cst.Attribute)
            and node not in stores
            and _self_attribute(node) is not None
        ):
            reads.append(node)
    return reads


def _self_attribute(node: cst.CSTNode) -> str | None:
    if (
        isinstance(node, cst.Attribute)
        and isinstance(node.value, cst.Name)
        and node.value.value == "self"
    ):
        return node.attr.value
    return None


def _in_class(scope: Scope) -> bool:
    return scope.parent is not None and isinstance(scope.parent.node, cst.ClassDef)


def _class_name(scope: Scope) -> str | None:
    return scope.parent.node.name.value if _in_class(scope) else None  # type: ignore[union-attr]


def _is_draw(qualified: str | None) -> bool:
    module, _, draw = (qualified or "").rpartition(".")
    return (module == "numpy.random" and draw in _NUMPY_DRAWS) or (
        module == "random" and draw in _PYTHON_DRAWS
    )


def _is_new_list(value: cst.BaseExpression | None) -> bool:
    if isinstance(value, cst.List):
        return True
    return (
        isinstance(value, cst.Call)
        and isinstance(value.func, cst.Name)
        and value.func.value == "list"
        and not value.args
    )


def _is_list_ast(value: ast.expr) -> bool:
    if isinstance(value, ast.List):
        return True
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id == "list"
        and not value.args
    )


def _is_number_ast(value: ast.expr) -> bool:
    return (
        isinstance(value, ast.Constant)
        and isinstance(value.value, (int, float))
        and not isinstance(value.value, bool)
    )
