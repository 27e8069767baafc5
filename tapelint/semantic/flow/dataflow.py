"""Which values derive from what the tape watches, and which flow into a gradient target."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from tapelint.semantic.file_model.children import child_nodes
from tapelint.semantic.file_model.conversions import PREDICT_METHODS
from tapelint.semantic.file_model.expressions import argument_value, contains, elements, names_in
from tapelint.semantic.file_model.model import (
    Def,
    DefKind,
    FileModel,
    NumpyCall,
    Scope,
    TapeCall,
    is_recording,
)
from tapelint.semantic.project_model.names import ImportTable, dotted_name, is_tensorflow

# Attributes and calls that yield metadata (shapes, sizes, dtypes) or cut the gradient on
# purpose: what comes out of them carries no gradient to lose.
_METADATA_ATTRIBUTES = frozenset({"shape", "dtype", "ndim", "name", "device", "get_shape"})
_METADATA_CALLS = frozenset(
    {
        "tensorflow.shape",
        "tensorflow.size",
        "tensorflow.rank",
        "tensorflow.shape_n",
        "tensorflow.stop_gradient",
        "keras.ops.shape",
        "keras.ops.stop_gradient",
    }
)
_METADATA_BUILTINS = frozenset({"len", "isinstance", "type", "id"})
_VARIABLE_LISTS = frozenset({"trainable_variables", "trainable_weights", "variables", "weights"})


class Watched:
    """What a gradient call's tape watches: named values, and objects whose calls use them."""

    def __init__(self, model: FileModel, call: TapeCall) -> None:
        self.model = model
        self.tape = call.tape
        self.scope = call.tape.scope
        self.names: set[str] = set()  # dotted names: `w`, `self.kernel`
        self.callables: set[str] = set()  # dotted names of models/layers: `model`, `self`
        self._derived: dict[Def, bool] = {}
        self.methods = _methods_of_enclosing_class(model, call)
        sources = argument_value(call.node, 1, "sources")
        if sources is not None:
            self._add_sources(sources, set())
        # What the gradient is taken with respect to (not what else the tape watches).
        self.source_names = frozenset(self.names)
        self.source_callables = frozenset(self.callables)
        for other in model.calls_on(call.tape):
            if other.method == "watch":
                watched = argument_value(other.node, 0, "tensor")
                if watched is not None:
                    for part in elements(watched):
                        self._add_name(part)

    def _add_name(self, expr: cst.BaseExpression) -> None:
        dotted = dotted_name(expr)
        if dotted is not None:
            self.names.add(dotted)

    def _add_sources(self, expr: cst.BaseExpression, seen: set[Def]) -> None:
        if isinstance(expr, cst.BinaryOperation):
            self._add_sources(expr.left, seen)
            self._add_sources(expr.right, seen)
            return
        for part in elements(expr):
            if isinstance(part, cst.Attribute):
                owner = dotted_name(part.value)
                if owner is not None:
                    self.callables.add(owner)
                if part.attr.value in _VARIABLE_LISTS:
                    continue
            self._add_name(part)
            if isinstance(part, cst.Name):
                for d in self.model.defs_of(part):
                    if d not in seen and d.kind is DefKind.ASSIGN and d.value is not None:
                        seen.add(d)
                        self._add_sources(d.value, seen)

    def derives(self, expr: cst.CSTNode) -> bool:
        """Whether `expr` is computed from a watched value (through any op but metadata) by
        operations the tape records. A name bound while the tape was not recording (before
        its block, in an earlier iteration, under `stop_recording()`) holds a value the tape
        knows nothing about, however it was computed (an action chosen from an earlier model
        output): no gradient of the tape runs through it."""
        if isinstance(expr, cst.Name):
            if expr.value in self.names:
                return True
            return any(self._def_derives(d) for d in self.model.defs_of(expr))
        if isinstance(expr, cst.Attribute):
            if expr.attr.value in _METADATA_ATTRIBUTES:
                return False
            if dotted_name(expr) in self.names:
                return True
            return self.derives(expr.value)
        if isinstance(expr, cst.Call):
            func = expr.func
            if dotted_name(func) in self.callables or self._is_submodel(func):
                return True
            qualified = self.model.imports.qualify(func)
            if qualified in _METADATA_CALLS:
                return False
            if qualified == "tensorflow.Variable":
                return True
            if isinstance(func, cst.Name) and func.value in _METADATA_BUILTINS:
                return False
            return self.derives(func) or any(self.derives(a.value) for a in expr.args)
        if isinstance(expr, (cst.Lambda, cst.BaseNumber, cst.SimpleString)):
            return False
        return any(self.derives(child) for child in child_nodes(expr))

    def _is_submodel(self, func: cst.BaseExpression) -> bool:
        """`self.encoder` when `self`'s variables are watched: an attribute of a watched model
        that is called holds a layer or sub-model (a method of the class is not one)."""
        if not isinstance(func, cst.Attribute):
            return False
        owner = dotted_name(func.value)
        if owner not in self.callables:
            return False
        return not (owner == "self" and func.attr.value in self.methods)

    def _def_derives(self, d: Def) -> bool:
        cached = self._derived.get(d)
        if cached is not None:
            return cached
        self._derived[d] = False  # cycles (loops, `x = f(x)`) resolve to "not derived"
        result = False
        if (
            d.scope is self.scope
            and d.value is not None
            and d.kind is not DefKind.PARAM
            and is_recording(d.ctx, self.tape)
        ):
            unpacked = self._unpacked_derives(d) if d.kind is DefKind.UNPACK else None
            result = self.derives(d.value) if unpacked is None else unpacked
            if not result and d.kind is DefKind.AUG:
                result = self.derives(d.target)
        self._derived[d] = result
        return result

    def _unpacked_derives(self, d: Def) -> bool | None:
        """One element of an unpacked value (`x_in, y_in = ...`): a written-out tuple holds
        its elements, each derived or not on its own (`images, labels = x, y`). A call of
        anything but TensorFlow or a watched model returns elements nobody here knows the
        making of: the labels a preprocessing helper returns beside the preprocessed inputs
        (`x, y = self._preprocess(x_watched, y)`) are not computed from those inputs, so
        such an element is not taken for derived. None: decide on the whole value."""
        element = d.bound_value()
        if element is not None:
            return self.derives(element)
        value = d.value
        if not isinstance(value, cst.Call):
            return None
        func = value.func
        if dotted_name(func) in self.callables or self._is_submodel(func):
            return None  # `logits, features = model(x)`: a watched model's outputs
        qualified = self.model.imports.qualify(func)
        if qualified is not None and (is_tensorflow(qualified) or qualified.startswith("keras.")):
            return None  # `a, b = tf.split(x, 2)`: TensorFlow ops compute from their operands
        return False


def _methods_of_enclosing_class(model: FileModel, call: TapeCall) -> set[str]:
    parent = call.tape.scope.parent
    if parent is None or not isinstance(parent.node, cst.ClassDef):
        return set()
    return {
        name
        for name, defs in model.scope_defs[parent].items()
        if any(d.kind is DefKind.DEFINITION for d in defs)
    }


def target_definitions(model: FileModel, call: TapeCall, *, values_only: bool = False) -> set[Def]:
    """Every definition in the tape's scope that the gradient target is computed from.
    With `values_only`, names read only as indices (`pred[0][i]`, `tf.gather(x, i)`) are not
    followed: an index selects which values are differentiated, it carries no gradient."""
    target = argument_value(call.node, 0, "target")
    closure: set[Def] = set()
    if target is None:
        return closure

    def read(node: cst.CSTNode) -> Iterator[cst.Name]:
        return value_names_in(node, model.imports) if values_only else names_in(node)

    pending = list(read(target))
    while pending:
        name = pending.pop()
        for d in model.defs_of(name):
            if d in closure or d.scope is not call.tape.scope:
                continue
            closure.add(d)
            if d.value is not None:
                pending.extend(read(d.value))
            if d.kind is DefKind.AUG and isinstance(d.target, cst.Name):
                pending.append(d.target)
    return closure


# Calls whose operand at (position, keyword) is an index: it selects, it carries no gradient.
_INDEX_ARGUMENTS = {
    "tensorflow.gather": (1, "indices"),
    "tensorflow.gather_nd": (1, "indices"),
    "tensorflow.one_hot": (0, "indices"),
    "keras.ops.take": (1, "indices"),
    "keras.ops.one_hot": (0, "x"),
}


def index_positions(node: cst.CSTNode, imports: ImportTable | None = None) -> Iterator[cst.CSTNode]:
    """The sub-expressions of `node` that are used as indices: subscript slices
    (`x[i]`, `x[:, i]`), and the index operands of `tf.gather` / `tf.one_hot` when `imports`
    can qualify the call."""
    pending = [node]
    while pending:
        current = pending.pop()
        if isinstance(current, cst.Lambda):
            continue
        if isinstance(current, cst.Subscript):
            yield from current.slice
            pending.append(current.value)
            continue
        if isinstance(current, cst.Call) and imports is not None:
            qualified = imports.qualify(current.func)
            position = _INDEX_ARGUMENTS.get(qualified) if qualified is not None else None
            if position is not None:
                index = argument_value(current, *position)
                if index is not None:
                    yield index
                pending.extend(arg.value for arg in current.args if arg.value is not index)
                pending.append(current.func)
                continue
        pending.extend(child_nodes(current))


def value_names_in(node: cst.CSTNode, imports: ImportTable | None = None) -> Iterator[cst.Name]:
    """Like `names_in`, but not the names read only as indices (see `index_positions`)."""
    skipped = {id(n) for index in index_positions(node, imports) for n in names_in(index)}
    return (n for n in names_in(node) if id(n) not in skipped)


def _in_index_position(model: FileModel, stmt: cst.CSTNode, node: cst.CSTNode) -> bool:
    """Whether `node` sits inside an index of its statement (`pred[np.argmax(...)]`)."""
    return any(contains(index, node) for index in index_positions(stmt, model.imports))


def _leaves_tensorflow(model: FileModel, numpy_call: NumpyCall) -> bool:
    """Whether the conversion certainly drops the value out of TensorFlow. For
    `tf.py_function`, only when the Python function it runs (defined in this module) converts
    to NumPy itself; an unknown function is given the benefit of the doubt."""
    if numpy_call.function is None:
        return True
    if not isinstance(numpy_call.function, cst.Name):
        return isinstance(numpy_call.function, cst.Lambda) and _converts_in(
            model, numpy_call.function
        )
    for d in model.defs_of(numpy_call.function):
        body = d.stmt if d.kind is DefKind.DEFINITION else d.value
        if isinstance(body, (cst.FunctionDef, cst.Lambda)) and _converts_in(model, body):
            return True
    return False


def _converts_in(model: FileModel, function: cst.CSTNode) -> bool:
    return any(_inside(n.scope, function) for n in model.numpy_calls)


def _inside(scope: Scope | None, node: cst.CSTNode) -> bool:
    while scope is not None:
        if scope.node is node:
            return True
        scope = scope.parent
    return False


def numpy_on_path(model: FileModel, call: TapeCall) -> list[NumpyCall]:
    """NumPy conversions inside the tape's block, of watched-derived values, that feed the
    gradient target of `call`. None for a tape a helper handed back: what it watched and
    recorded there is not seen."""
    tape = call.tape
    if tape.handed_back is not None:
        return []
    candidates = [
        n
        for n in model.numpy_calls_in(tape.scope)
        if n.scope is tape.scope
        and n.feeds_value
        and is_recording(n.ctx, tape)
        and _leaves_tensorflow(model, n)
    ]
    if not candidates:
        return []
    closure = target_definitions(model, call, values_only=True)
    watched = Watched(model, call)
    found = []
    for numpy_call in candidates:
        defined_here = model.defs_by_stmt.get(numpy_call.stmt, [])
        if not any(d in closure for d in defined_here):
            continue
        if _in_index_position(model, numpy_call.stmt, numpy_call.node):
            continue
        if _is_predict(numpy_call):
            if _predicts_with_watched_model(model, watched, numpy_call):
                found.append(numpy_call)
            continue
        if any(watched.derives(operand) for operand in numpy_call.operands):
            found.append(numpy_call)
    # `np.square(pred.numpy() - y)` leaves TensorFlow once: report the innermost conversion.
    return [
        n
        for n in found
        if not any(other.node is not n.node and contains(n.node, other.node) for other in found)
    ]


def _is_predict(numpy_call: NumpyCall) -> bool:
    func = numpy_call.node.func
    return isinstance(func, cst.Attribute) and func.attr.value in PREDICT_METHODS


def _predicts_with_watched_model(model: FileModel, watched: Watched, numpy_call: NumpyCall) -> bool:
    """`value_net.predict_on_batch(states)` where the gradient is taken with respect to
    `value_net`'s variables: Keras runs the model outside the tape and returns NumPy. Not
    when the file defines its own `predict` (a wrapper whose result is not known)."""
    func = numpy_call.node.func
    assert isinstance(func, cst.Attribute)
    if func.attr.value in _defined_function_names(model):
        return False
    owner = dotted_name(func.value)
    return owner is not None and owner in watched.source_callables


def _defined_function_names(model: FileModel) -> set[str]:
    return {s.node.name.value for s in model.scopes if isinstance(s.node, cst.FunctionDef)}
