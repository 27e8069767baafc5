"""Whether a gradient target keeps a differentiable path to what it is differentiated for.

For each source of a gradient call (a watched name such as `w`, or a model whose variables
are the sources, with its sub-models), the target's computation is walked backwards through
the tape's scope and classified:

- DIFF: some path from the source to the target runs through differentiable ops only;
- CUT: the target depends on the source, but every path goes through an op without a
  gradient (`argmax`, `round`, a comparison, a cast to an integer or bool, `tf.where` with
  constant branches, `stop_gradient`): the gradient is None (zeros for `sign`);
- CONST: the target does not depend on the source at all;
- UNKNOWN: something the analysis cannot see may connect them (a call of a function it
  does not know with no differentiable argument, an attribute of the model, a cycle).

A non-differentiable op that only masks or weights a differentiable term
(`mask * loss`, `tf.where(p > 0, a, b)`) leaves the target DIFF, so it is never reported.
The ops where a DIFF operand becomes CUT ("breaks") are reported, when the whole target is CUT
and the break ran while the tape recorded.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from weakref import WeakKeyDictionary

import libcst as cst

from tapelint.semantic.file_model.children import child_nodes
from tapelint.semantic.file_model.expressions import (
    NESTED_CODE,
    argument_value,
    descendants,
    elements,
    returns_of,
    statements,
)
from tapelint.semantic.file_model.model import (
    Def,
    DefKind,
    FileModel,
    Scope,
    TapeCall,
    is_recording,
)
from tapelint.semantic.flow.dataflow import Watched, target_definitions
from tapelint.semantic.flow.source_paths import (
    entry_aliases,
    functional_outputs,
    lambda_parameters,
    mutation_pattern,
    renamed_in_callee,
    renamed_in_instance_call,
    scope_of_function,
    subscript_path,
)
from tapelint.semantic.flow.source_values import attribute_is_one_value, is_one_value
from tapelint.semantic.project_model.names import dotted_name, is_numpy, is_tensorflow


class Reach(IntEnum):
    """Ordered so that combining operands is `max`: one DIFF operand makes the result DIFF."""

    CONST = 0
    CUT = 1
    UNKNOWN = 2
    DIFF = 3


@dataclass(frozen=True)
class PathBreak:
    node: cst.CSTNode  # the op without a gradient
    kind: str  # a key of `BREAK_REASONS`
    source: str  # what the gradient is taken for: `w`, or `model` for its variables
    source_is_model: bool
    call: TapeCall


BREAK_REASONS = {
    "index": "returns indices, which have no gradient",
    "step": "is piecewise constant, which has no gradient",
    "comparison": "returns booleans, which have no gradient",
    "cast": "casts to an integer or bool dtype, which has no gradient",
    "where": "selects between constants, which have no gradient",
    "stop_gradient": "blocks the gradient",
}

_INDEX_OPS = frozenset(
    f"{module}.{op}"
    for module in ("tensorflow", "tensorflow.math", "keras.ops", "keras.backend")
    for op in ("argmax", "argmin")
)
_STEP_OPS = frozenset(
    f"{module}.{op}"
    for module in ("tensorflow", "tensorflow.math", "keras.ops", "keras.backend")
    for op in ("round", "rint", "sign", "floor", "ceil", "floordiv")
)
_COMPARISON_OPS = frozenset(
    f"{module}.{op}"
    for module in ("tensorflow", "tensorflow.math", "keras.ops", "keras.backend")
    for op in (
        "equal",
        "not_equal",
        "greater",
        "greater_equal",
        "less",
        "less_equal",
        "is_nan",
        "is_inf",
        "is_finite",
    )
)
_CAST_OPS = frozenset(
    {
        "tensorflow.cast",
        "tensorflow.dtypes.cast",
        "tensorflow.saturate_cast",
        "tensorflow.dtypes.saturate_cast",
        "keras.ops.cast",
        "keras.backend.cast",
    }
)
_STOP_OPS = frozenset(
    {"tensorflow.stop_gradient", "keras.ops.stop_gradient", "keras.backend.stop_gradient"}
)
_WHERE_OPS = frozenset({"tensorflow.where", "keras.ops.where"})
_METADATA_OPS = frozenset(
    {
        "tensorflow.shape",
        "tensorflow.size",
        "tensorflow.rank",
        "tensorflow.shape_n",
        "keras.ops.shape",
    }
)
_NON_FLOAT_DTYPES = frozenset(
    {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool"}
)
_METADATA_ATTRIBUTES = frozenset({"shape", "dtype", "ndim", "name", "device", "get_shape"})
_CONSTANT_BUILTINS = frozenset({"len", "isinstance", "type", "id", "range", "print"})
_NUMBER_BUILTINS = frozenset({"float", "int", "bool", "complex"})
_CONVERSION_METHODS = frozenset({"numpy", "item", "tolist"})
_PASSING_BUILTINS = frozenset({"abs", "sum", "min", "max", "list", "tuple", "zip", "reversed"})
_PURE_CALLABLE_MODULES = ("keras.losses.", "keras.metrics.")
_NUMERIC_COMPARISONS = (
    cst.LessThan,
    cst.GreaterThan,
    cst.LessThanEqual,
    cst.GreaterThanEqual,
    cst.Equal,
    cst.NotEqual,
)


def path_breaks(model: FileModel, call: TapeCall) -> list[PathBreak]:
    """The ops that cut every path from one of `call`'s sources to its target (none known
    for a tape a helper handed back: the paths it recorded there are not seen)."""
    target = argument_value(call.node, 0, "target")
    if target is None or call.tape.handed_back is not None:
        return []
    watched = Watched(model, call)
    origins = [(name, False) for name in sorted(watched.source_names)]
    origins += [(owner, True) for owner in sorted(watched.source_callables)]
    found: list[PathBreak] = []
    for origin, is_model in origins:
        walk = _Walk(model, call, watched, origin, is_model)
        if walk.reach(target) is Reach.CUT:
            found += walk.breaks
    return found


def every_source_reaches(model: FileModel, call: TapeCall) -> bool:
    """Whether no gradient of the call can be None: its sources are `tape.watched_variables()`
    (the variables the tape saw read), or they are named one by one (`w`, `[w, b]`, `image`)
    and the target certainly depends on each through differentiable ops. A function of the
    file called on the way that reads a source as a global (`def model(x): return W * x + b`)
    counts as using it."""
    target = argument_value(call.node, 0, "target")
    sources = argument_value(call.node, 1, "sources")
    if target is None or sources is None:
        return False
    if _is_watched_variables(model, sources, call):
        return True
    sources = _written_out_list(model, sources)
    parts = list(elements(sources))
    if isinstance(sources, cst.Name):
        if not is_one_value(model, sources, call.scope):
            return False  # a name that may hold a list of variables
        parts = [sources]
    elif not isinstance(sources, (cst.List, cst.Tuple)):
        return False
    # Each element of a list written out is one variable: `w`, `self._log_alpha`.
    names = [dotted_name(part) for part in parts]
    if not names or None in names:
        return False
    watched = Watched(model, call)
    return all(
        _Walk(
            model, call, watched, name, False, globals_read=True, aliases=entry_aliases(model, part)
        ).reach(target)
        is Reach.DIFF
        for name, part in zip(names, parts, strict=True)
        if name is not None
    )


def no_gradient_lost_silently(model: FileModel, call: TapeCall) -> bool:
    """Whether a None gradient of the call cannot pass unnoticed: no gradient can be None
    (`every_source_reaches`), or the call has one source (`[patch]`, a single watched
    tensor) that the target may read. With one source there is nothing partial to filter: a
    Keras optimizer raises "No gradients provided for any variable" when its only gradient is
    None (measured on TensorFlow 2.21), and an op on that gradient raises at once. A single
    source the target certainly does not read is still a wiring mistake worth reporting."""
    if every_source_reaches(model, call):
        return True
    source = _one_source(model, call)
    target = argument_value(call.node, 0, "target")
    if source is None or target is None:
        return False
    walk = _Walk(model, call, Watched(model, call), source, False, globals_read=True)
    return walk.reach(target) >= Reach.UNKNOWN


def _one_source(model: FileModel, call: TapeCall) -> str | None:
    """The name of the call's only source (`[self._patch]`, `x`), if it has one."""
    sources = argument_value(call.node, 1, "sources")
    if sources is None:
        return None
    sources = _written_out_list(model, sources)
    if isinstance(sources, (cst.List, cst.Tuple)):
        parts = list(elements(sources))
        return dotted_name(parts[0]) if len(parts) == 1 else None
    if isinstance(sources, cst.Name) and is_one_value(model, sources, call.scope):
        return sources.value
    if isinstance(sources, cst.Attribute) and attribute_is_one_value(model, sources):
        return dotted_name(sources)  # `gate.a1`, `self.log_alpha`
    return None


def _written_out_list(model: FileModel, sources: cst.BaseExpression) -> cst.BaseExpression:
    """The list a name is bound to once (`alpha_variable = [self._log_alpha]`), else `sources`."""
    if not isinstance(sources, cst.Name):
        return sources
    defs = model.defs_of(sources)
    if len(defs) != 1:
        return sources
    (d,) = defs
    if d.kind is DefKind.ASSIGN and isinstance(d.value, (cst.List, cst.Tuple)):
        return d.value
    return sources


def _is_watched_variables(model: FileModel, sources: cst.BaseExpression, call: TapeCall) -> bool:
    """`tape.watched_variables()` of the call's own tape, or a name bound only to it."""
    if isinstance(sources, cst.Name):
        defs = model.defs_of(sources)
        if len(defs) != 1:
            return False
        (d,) = defs
        if d.kind is not DefKind.ASSIGN or d.value is None:
            return False
        sources = d.value
    if not (isinstance(sources, cst.Call) and isinstance(sources.func, cst.Attribute)):
        return False
    if sources.func.attr.value != "watched_variables":
        return False
    if not any(call.tape is d.tape for d in model.defs_of(sources.func.value)):
        return False
    return _block_only_computes_target(model, call)


def _block_only_computes_target(model: FileModel, call: TapeCall) -> bool:
    """Whether every variable the tape watched can be one the target reads: no explicit
    `watch` (a watched variable the loss never uses gets None, measured on TensorFlow 2.21),
    and each statement of the tape's blocks is an assignment the target is computed from
    (a variable read by anything else, a metric or a second output, gets None too). Not
    for a tape a helper handed back, whose blocks are the helper's."""
    if call.tape.handed_back is not None:
        return False
    if any(other.method == "watch" for other in model.calls_on(call.tape)):
        return False
    closure = target_definitions(model, call)
    for block in call.tape.blocks:
        body = statements(block.body)
        for line in body:
            if not isinstance(line, cst.SimpleStatementLine):
                return False
            for small in line.body:
                if not isinstance(small, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
                    return False
            defs = model.defs_by_stmt.get(line, [])
            if not defs or not all(d in closure for d in defs):
                return False
    return True


_MAX_DEPTH = 4  # functions and models followed into, one inside another


class _Walk:
    """Classifies expressions of the tape's scope with respect to one source."""

    def __init__(
        self,
        model: FileModel,
        call: TapeCall,
        watched: Watched,
        origin: str,
        is_model: bool,
        *,
        globals_read: bool = False,
        aliases: frozenset[str] = frozenset(),
        scope: Scope | None = None,
        depth: int = 0,
    ) -> None:
        # A function of the file that reads the source as a global uses it, and so do the
        # functions, functional models and layers it is handed to (`source_paths`): asked
        # only where counting it as used can only make the rule more quiet.
        self.globals_read = globals_read
        self.model = model
        self.call = call
        self.watched = watched
        self.origin = origin
        self.is_model = is_model
        self.scope = scope or call.tape.scope
        # Other spellings of the source in this scope (`parameters['W1']` for `W1`).
        self.paths = frozenset({origin, *aliases})
        self.depth = depth
        self.breaks: list[PathBreak] = []
        self._reach: dict[Def, Reach] = {}
        self._evaluating: list[Def] = []

    # ------------------------------------------------------------------ expressions
    def reach(self, expr: cst.CSTNode) -> Reach:
        if isinstance(expr, cst.Name):
            return self._name(expr)
        if isinstance(expr, cst.Attribute):
            return self._attribute(expr)
        if isinstance(expr, cst.Call):
            return self._call(expr)
        if isinstance(expr, (cst.BaseNumber, cst.BaseString, cst.Ellipsis)):
            return Reach.CONST
        if isinstance(expr, cst.Lambda):
            return self._lambda(expr)
        if isinstance(expr, cst.Comparison):
            return self._comparison(expr)
        if isinstance(expr, cst.BinaryOperation):
            operands = [self.reach(expr.left), self.reach(expr.right)]
            if isinstance(expr.operator, cst.FloorDivide):
                return self._cut(expr, "step", operands)
            return max(operands)
        if isinstance(expr, cst.UnaryOperation):
            inner = self.reach(expr.expression)
            return min(inner, Reach.CUT) if isinstance(expr.operator, cst.Not) else inner
        if isinstance(expr, cst.Subscript):
            if not self.is_model and subscript_path(expr) in self.paths:
                return Reach.DIFF  # `parameters["W1"]`, the source itself
            index = max((self.reach(e.slice) for e in expr.slice), default=Reach.CONST)
            return max(self.reach(expr.value), min(index, Reach.CUT))
        if isinstance(expr, cst.IfExp):
            return max(self.reach(expr.body), self.reach(expr.orelse))
        if isinstance(expr, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
            return self._comprehension(expr)
        return max((self.reach(child) for child in child_nodes(expr)), default=Reach.CONST)

    def _name(self, name: cst.Name) -> Reach:
        if name.value in self.paths:
            # A watched tensor; a model passed along as a value may be used anywhere.
            return Reach.UNKNOWN if self.is_model else Reach.DIFF
        return max((self._definition(d) for d in self.model.defs_of(name)), default=Reach.CONST)

    def _attribute(self, attribute: cst.Attribute) -> Reach:
        if attribute.attr.value in _METADATA_ATTRIBUTES:
            return Reach.CONST
        dotted = dotted_name(attribute)
        if dotted is not None and not self.is_model and dotted in self.paths:
            return Reach.DIFF
        assigned = self._assigned_earlier_in_block(attribute, dotted)
        if assigned is not None:
            return self.reach(assigned)
        root = attribute.value
        while isinstance(root, cst.Attribute):
            root = root.value
        if dotted_name(root) in self.watched.source_callables:
            return Reach.UNKNOWN  # `self.kernel`, `model.layers[0].kernel`: maybe a variable
        reach = self.reach(attribute.value)
        if reach is Reach.CONST and not self._is_module(root):
            # State of an object (`self.total`, `config.weight`) may have been set from the
            # source elsewhere; only a module's attributes (`tf.float32`) are constants.
            return Reach.UNKNOWN
        return reach

    def _assigned_earlier_in_block(
        self, attribute: cst.Attribute, dotted: str | None
    ) -> cst.BaseExpression | None:
        """The value of `self.mask = ...` when that is the one assignment of the attribute
        in the function, made by a statement of the tape's block before the one that reads
        it: the read gets that value, recorded by this tape."""
        if dotted is None or not dotted.startswith("self.") or self.is_model:
            return None
        if not isinstance(self.scope.node, cst.FunctionDef):
            return None
        assignments = _self_assignments(self.model, self.scope.node).get(dotted, [])
        if len(assignments) != 1 or not isinstance(assignments[0], cst.Assign):
            return None
        assignment = assignments[0]
        for block in self.call.tape.blocks:
            body = statements(block.body)
            order = {id(line): i for i, line in enumerate(body)}
            holder = next((line for line in body if assignment in child_nodes(line)), None)
            reader = next(
                (line for line in body if any(n is attribute for n in descendants(line))), None
            )
            if holder is not None and reader is not None and order[id(holder)] < order[id(reader)]:
                return assignment.value
        return None

    def _is_module(self, root: cst.BaseExpression) -> bool:
        if not isinstance(root, cst.Name):
            return False
        defs = self.model.defs_of(root)
        if defs:
            return all(d.kind is DefKind.IMPORT for d in defs)
        return self.model.imports.qualify(root) is not None

    def _comparison(self, node: cst.Comparison) -> Reach:
        operands = [self.reach(node.left), *(self.reach(c.comparator) for c in node.comparisons)]
        if all(isinstance(c.operator, _NUMERIC_COMPARISONS) for c in node.comparisons):
            return self._cut(node, "comparison", operands)
        return min(max(operands), Reach.CUT)

    def _comprehension(
        self, node: cst.ListComp | cst.SetComp | cst.GeneratorExp | cst.DictComp
    ) -> Reach:
        parts = [node.key, node.value] if isinstance(node, cst.DictComp) else [node.elt]
        return max(self.reach(part) for part in parts)

    def _call(self, call: cst.Call) -> Reach:
        func = call.func
        if self._calls_origin(func):
            return Reach.DIFF
        arguments = [arg.value for arg in call.args]
        qualified = self.model.imports.qualify(func)
        if qualified is not None and (is_tensorflow(qualified) or qualified.startswith("keras.")):
            return self._tensorflow_call(call, qualified, arguments)
        if isinstance(func, cst.Name) and not self.model.defs_of(func):
            if func.value in _CONSTANT_BUILTINS:
                return Reach.CONST
            if func.value in _PASSING_BUILTINS:
                return max((self.reach(a) for a in arguments), default=Reach.CONST)
        if self._is_pure_callable(func):
            return max((self.reach(a) for a in arguments), default=Reach.CONST)
        if self._leaves_tensorflow(call, qualified):
            # NumPy, `float(t)`, `t.numpy()`: a value that depends on the source but carries no
            # gradient (the conversion itself is a fact of its own: `model.numpy_calls`).
            operands = [self.reach(a) for a in arguments]
            if isinstance(func, cst.Attribute):
                operands.append(self.reach(func.value))
            return Reach.CUT if max(operands, default=Reach.CONST) >= Reach.CUT else Reach.CONST
        if self.globals_read and (
            self._reads_origin_as_global(func) or self._method_reads_origin(func)
        ):
            return Reach.DIFF
        if self.globals_read and self._method_ignores_origin(func):
            return max((self.reach(a) for a in arguments), default=Reach.CONST)
        if self.globals_read and self._followed(call) is Reach.DIFF:
            return Reach.DIFF
        # A function or object this analysis does not know: it may use the source itself.
        operands = [self.reach(a) for a in arguments]
        if isinstance(func, cst.Attribute):
            operands.append(self.reach(func.value))
        elif isinstance(func, cst.Call):  # `tf.keras.layers.Lambda(fn)(x)`
            operands.append(self.reach(func))
        return Reach.DIFF if Reach.DIFF in operands else Reach.UNKNOWN

    def _lambda(self, node: cst.Lambda) -> Reach:
        """A lambda handed to `tf.map_fn` or a `Lambda` layer may use the source; with
        `globals_read`, one whose body certainly does (`lambda x: x @ w + b`) uses it."""
        if not self.globals_read or self._root() in lambda_parameters(node):
            return Reach.UNKNOWN
        return Reach.DIFF if self.reach(node.body) is Reach.DIFF else Reach.UNKNOWN

    def _root(self) -> str:
        return self.origin.partition(".")[0].partition("[")[0]

    def _followed(self, call: cst.Call) -> Reach | None:
        """A call this walk can look into: a functional model (`model(x)` computes its
        `outputs`), a function of the file handed the container that holds the source
        (`forward(X, parameters)`), or an instance of a class of the file that holds it
        (`gate(x)`, its `call` reading `self.a1`), walked over every `return`."""
        if self.depth >= _MAX_DEPTH:
            return None
        outputs = functional_outputs(self.model, call.func)
        if outputs is not None:
            expr, scope = outputs
            if scope is self.scope:
                return self.reach(expr)
            if self._reads_same_names(scope):
                return self._elsewhere(scope, self.paths).reach(expr)
            return None
        model = self.model
        renamed = renamed_in_callee(model, call, self.paths)
        if renamed is None:
            forward = renamed_in_instance_call(model, call, self.paths)
            if forward is None or not self._reads_same_names(forward.bound_in):
                return None
            renamed, model = (forward.function, forward.paths), forward.model
        function, paths = renamed
        callee = scope_of_function(model, function)
        returned = [r.value for r in returns_of(function)]
        if callee is None or not returned or None in returned:
            return None
        walk = self._elsewhere(callee, paths, model)
        found = [walk.reach(value) for value in returned if value is not None]
        return Reach.DIFF if all(r is Reach.DIFF for r in found) else None

    def _elsewhere(
        self, scope: Scope, paths: frozenset[str], model: FileModel | None = None
    ) -> _Walk:
        """A walk of the same source, spelled `paths`, over the bindings of `scope` (of
        `model`, a method read back from the text, when given)."""
        origin = sorted(paths)[0]
        return _Walk(
            model or self.model,
            self.call,
            self.watched,
            origin,
            False,
            globals_read=True,
            aliases=paths,
            scope=scope,
            depth=self.depth + 1,
        )

    def _reads_same_names(self, scope: Scope) -> bool:
        """Whether names read in `scope` mean what they mean here: it is this walk's
        scope, or the module's, and the source's root name is bound at module level and
        not in this walk's scope (a global both read)."""
        if scope is self.scope:
            return True
        root = self._root()
        module = self.model.scopes[0]
        return (
            scope is module
            and root in self.model.scope_defs.get(module, {})
            and (self.scope is module or root not in self.model.scope_defs.get(self.scope, {}))
        )

    def _tensorflow_call(
        self, call: cst.Call, qualified: str, arguments: list[cst.BaseExpression]
    ) -> Reach:
        if qualified in _METADATA_OPS:
            return Reach.CONST
        if qualified in _WHERE_OPS:
            return self._where(call)
        if qualified in _CAST_OPS:
            value = argument_value(call, 0, "x")
            dtype = argument_value(call, 1, "dtype")
            operand = self.reach(value) if value is not None else Reach.CONST
            if dtype is not None and _is_non_float_dtype(dtype):
                return self._cut(call, "cast", [operand])
            return operand
        operands = [self.reach(a) for a in arguments]
        if isinstance(call.func, cst.Call):  # `tf.keras.layers.Dense(4)(x)`
            operands.append(self.reach(call.func))
        for kind, ops in (
            ("index", _INDEX_OPS),
            ("step", _STEP_OPS),
            ("comparison", _COMPARISON_OPS),
            ("stop_gradient", _STOP_OPS),
        ):
            if qualified in ops:
                return self._cut(call, kind, operands)
        return max(operands, default=Reach.CONST)

    def _where(self, call: cst.Call) -> Reach:
        condition = argument_value(call, 0, "condition")
        chosen = [argument_value(call, 1, "x"), argument_value(call, 2, "y")]
        test = self.reach(condition) if condition is not None else Reach.CONST
        if any(branch is None for branch in chosen):  # `tf.where(c)`: indices
            return self._cut(call, "index", [test])
        values = max(self.reach(branch) for branch in chosen if branch is not None)
        if values is Reach.DIFF:
            return Reach.DIFF
        if test is Reach.DIFF:
            return self._cut(call, "where", [test])
        return max(values, min(test, Reach.CUT))

    def _cut(self, node: cst.CSTNode, kind: str, operands: list[Reach]) -> Reach:
        """An op without a gradient: what flows in stops here."""
        if Reach.DIFF in operands:
            evaluating = self._evaluating[-1] if self._evaluating else None
            if evaluating is not None and is_recording(evaluating.ctx, self.call.tape):
                self.breaks.append(PathBreak(node, kind, self.origin, self.is_model, self.call))
        return Reach.CUT if any(r is not Reach.CONST for r in operands) else Reach.CONST

    def _mutated_container(self, d: Def) -> bool:
        value = d.value
        is_container = isinstance(value, _CONTAINERS) or (
            isinstance(value, cst.Call)
            and isinstance(value.func, cst.Name)
            and value.func.value in ("list", "dict", "set")
        )
        return is_container and bool(mutation_pattern(d.name).search(self.model.source_text))

    def _calls_origin(self, func: cst.BaseExpression) -> bool:
        """A call of the source model, or of a layer or sub-model stored on it."""
        if not self.is_model:
            return False
        if dotted_name(func) == self.origin:
            return True
        if not isinstance(func, cst.Attribute) or dotted_name(func.value) != self.origin:
            return False
        return not (self.origin == "self" and func.attr.value in self.watched.methods)

    def _reads_origin_as_global(self, func: cst.BaseExpression) -> bool:
        """A function (or lambda) of this module that reads the source by name from an
        enclosing scope (a global, or a closure's variable), not a name of its own."""
        if not isinstance(func, cst.Name):
            return False
        reads = _outer_reads(self.model)
        for d in self.model.defs_of(func):
            function = d.stmt if d.kind is DefKind.DEFINITION else d.value
            if function is not None and self.origin in reads.get(function, ()):
                return True
        return False

    def _leaves_tensorflow(self, call: cst.Call, qualified: str | None) -> bool:
        """A NumPy function, a Python number conversion or a tensor's `.numpy()`: what it
        returns is no tensor the tape can differentiate through."""
        func = call.func
        if qualified is not None and is_numpy(qualified):
            return True
        if isinstance(func, cst.Name) and not self.model.defs_of(func):
            return func.value in _NUMBER_BUILTINS
        return isinstance(func, cst.Attribute) and func.attr.value in _CONVERSION_METHODS

    def _own_method(self, func: cst.BaseExpression) -> str | None:
        """`m` of `self.m`, when the tape's own class defines a method `m`."""
        if not isinstance(func, cst.Attribute) or dotted_name(func.value) != "self":
            return None
        owner = self.scope.parent
        if owner is None or not isinstance(owner.node, cst.ClassDef):
            return None
        return func.attr.value if _methods_of(self.model, owner).get(func.attr.value) else None

    def _method_reads_origin(self, func: cst.BaseExpression) -> bool:
        """`self.alpha_loss(...)`, a method of the tape's own class that reads the source
        attribute (`self._log_alpha`) itself or through the methods of the class it calls
        (`self._loss` calling `self._predictions`, which reads `self._patch`)."""
        method, owner = self._own_method(func), self.scope.parent
        if method is None or owner is None or not self.origin.startswith("self."):
            return False
        return self.origin in _mentioned_through_methods(self.model, owner, method)

    def _method_ignores_origin(self, func: cst.BaseExpression) -> bool:
        """A method of the tape's own class that never mentions the source attribute, nor do
        the methods of the class it calls: it sees the source only through its arguments."""
        method, owner = self._own_method(func), self.scope.parent
        if method is None or owner is None or not self.origin.startswith("self."):
            return False
        return self.origin not in _mentioned_through_methods(self.model, owner, method)

    def _is_pure_callable(self, func: cst.BaseExpression) -> bool:
        """A Keras loss or metric object (`bce = tf.keras.losses.BinaryCrossentropy()`):
        a function of its arguments only."""
        if not isinstance(func, cst.Name):
            return False
        defs = self.model.defs_of(func)
        return bool(defs) and all(
            d.kind is DefKind.ASSIGN
            and isinstance(d.value, cst.Call)
            and (self.model.imports.qualify(d.value.func) or "").startswith(_PURE_CALLABLE_MODULES)
            for d in defs
        )

    # ------------------------------------------------------------------ definitions
    def _definition(self, d: Def) -> Reach:
        cached = self._reach.get(d)
        if cached is not None:
            return cached
        if d.kind is DefKind.DEFINITION:
            return Reach.UNKNOWN  # a function passed along may use the source when called
        if d.scope is not self.scope or d.kind in (DefKind.PARAM, DefKind.IMPORT):
            return Reach.CONST
        if d.value is None or d.kind is DefKind.OTHER or self._mutated_container(d):
            return Reach.UNKNOWN
        # A definition that depends on itself (a loop, `x = f(x)`) is not decided on the way.
        self._reach[d] = Reach.UNKNOWN
        self._evaluating.append(d)
        result = self.reach(d.value)
        if d.kind is DefKind.AUG:
            result = max(result, self.reach(d.target))
        self._evaluating.pop()
        self._reach[d] = result
        return result


_CONTAINERS = (cst.List, cst.Dict, cst.Set, cst.ListComp, cst.DictComp, cst.SetComp)


def _is_non_float_dtype(dtype: cst.BaseExpression) -> bool:
    if isinstance(dtype, cst.SimpleString):
        return dtype.evaluated_value in _NON_FLOAT_DTYPES
    dotted = dotted_name(dtype)
    return dotted is not None and dotted.rsplit(".", 1)[-1] in _NON_FLOAT_DTYPES


_OUTER_READS: WeakKeyDictionary[FileModel, dict[cst.CSTNode, set[str]]] = WeakKeyDictionary()


_SELF_READS: WeakKeyDictionary[FileModel, dict[cst.FunctionDef, frozenset[str]]] = (
    WeakKeyDictionary()
)


def _self_attributes_read(model: FileModel, method: cst.FunctionDef) -> frozenset[str]:
    """The `self.name` attributes a method mentions (built once per method)."""
    per_model = _SELF_READS.setdefault(model, {})
    found = per_model.get(method)
    if found is None:
        collector = _SelfAttributes()
        method.visit(collector)
        found = per_model[method] = frozenset(collector.names)
    return found


_SELF_ASSIGNMENTS: WeakKeyDictionary[
    FileModel, dict[cst.FunctionDef, dict[str, list[cst.BaseSmallStatement]]]
] = WeakKeyDictionary()


def _self_assignments(
    model: FileModel, function: cst.FunctionDef
) -> dict[str, list[cst.BaseSmallStatement]]:
    """The assignments in a function (outside the code it nests) by each dotted target they
    bind, `self.mask` included: one walk per function, where each attribute read of a tape's
    block used to walk the function again."""
    per_model = _SELF_ASSIGNMENTS.setdefault(model, {})
    found = per_model.get(function)
    if found is None:
        found = per_model[function] = {}
        for node in descendants(function.body, skip=NESTED_CODE):
            if isinstance(node, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
                targets = {dotted_name(t) for t in _assignment_targets(node)}
                for dotted in targets:
                    if dotted is not None:
                        found.setdefault(dotted, []).append(node)
    return found


def _assignment_targets(
    node: cst.Assign | cst.AugAssign | cst.AnnAssign,
) -> list[cst.BaseExpression]:
    if isinstance(node, cst.Assign):
        return [target.target for target in node.targets]
    return [node.target]


def _methods_of(model: FileModel, owner: Scope) -> dict[str, list[cst.FunctionDef]]:
    """The methods a class scope defines, by name."""
    found: dict[str, list[cst.FunctionDef]] = {}
    for name, defs in model.scope_defs[owner].items():
        methods = [
            d.stmt
            for d in defs
            if d.kind is DefKind.DEFINITION and isinstance(d.stmt, cst.FunctionDef)
        ]
        if methods:
            found[name] = methods
    return found


def _mentioned_through_methods(model: FileModel, owner: Scope, method: str) -> frozenset[str]:
    """The `self.name` attributes that method `method` of the class mentions, with those of
    every method of the class it reaches through `self.other(...)`, transitively."""
    methods = _methods_of(model, owner)
    mentioned: set[str] = set()
    pending, seen = [method], set()
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        for function in methods.get(name, ()):
            reads = _self_attributes_read(model, function)
            mentioned |= reads
            pending += [read[len("self.") :] for read in reads if read[len("self.") :] in methods]
    return frozenset(mentioned)


class _SelfAttributes(cst.CSTVisitor):
    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if isinstance(node.value, cst.Name) and node.value.value == "self":
            self.names.add(f"self.{node.attr.value}")


def _outer_reads(model: FileModel) -> dict[cst.CSTNode, set[str]]:
    """For each function and lambda of the module, the names it reads that are bound in an
    enclosing scope (built once per model, from the uses the walk recorded)."""
    found = _OUTER_READS.get(model)
    if found is None:
        found = {}
        for use in model.uses_by_node.values():
            if isinstance(use.node, cst.Name) and any(d.scope is not use.scope for d in use.defs):
                found.setdefault(use.scope.node, set()).add(use.node.value)
        _OUTER_READS[model] = found
    return found
