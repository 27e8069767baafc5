"""What a tape watches: is a gradient source a plain tensor, and did the tape watch it?

A tape records an operation only when one of its inputs is watched: a trainable variable it
accessed (unless `watch_accessed_variables=False`) or a value passed to *its own* `watch`.
Another tape's `watch` does not count (measured on TensorFlow 2.21: an inner tape's gradient
for a tensor only the outer tape watched is None).

Answers are three-valued. A source is a plain tensor only when every definition reaching it
says so; a `watch` call covers a source unless its argument is shown not to contain it; a tape
handed to other code (a helper, a return, an attribute) may be watched there, so nothing is
concluded about it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

import libcst as cst

from tapelint.semantic.file_model.expressions import argument_value, elements, names_in
from tapelint.semantic.file_model.model import (
    Def,
    DefKind,
    FileModel,
    TapeCall,
    TapeInstance,
    Tri,
    is_recording,
)
from tapelint.semantic.project_model.names import dotted_name, is_numpy

# Calls that build a tensor from nothing differentiable: never connected to any tape.
_TENSOR_FACTORIES = frozenset(
    {
        "tensorflow.constant",
        "tensorflow.zeros",
        "tensorflow.ones",
        "tensorflow.fill",
        "tensorflow.eye",
        "tensorflow.linspace",
        "tensorflow.range",
    }
)
# `tf.random.*` functions that do not return a tensor.
_RANDOM_NOT_TENSORS = frozenset(
    {
        "set_seed",
        "get_global_generator",
        "set_global_generator",
        "create_rng_state",
    }
)
# Ops that rearrange or cast their tensor operand (the first argument, or a list of them):
# outside the recording, plain in, plain out.
_RESHAPING = frozenset(
    {
        "tensorflow.reshape",
        "tensorflow.expand_dims",
        "tensorflow.squeeze",
        "tensorflow.cast",
        "tensorflow.identity",
        "tensorflow.transpose",
        "tensorflow.stack",
        "tensorflow.concat",
    }
)
_ARITHMETIC = (
    cst.Add,
    cst.Subtract,
    cst.Multiply,
    cst.Divide,
    cst.FloorDivide,
    cst.Power,
    cst.MatrixMultiply,
    cst.Modulo,
)
_SOURCE_KEYWORD = {"gradient": "sources", "jacobian": "sources", "batch_jacobian": "source"}


def source_argument(call: TapeCall) -> cst.BaseExpression | None:
    return argument_value(call.node, 1, _SOURCE_KEYWORD.get(call.method, "sources"))


def source_parts(call: TapeCall) -> list[cst.BaseExpression]:
    """The sources as written: the argument, or the items of a list, tuple or dict literal."""
    sources = source_argument(call)
    if sources is None:
        return []
    if isinstance(sources, (cst.List, cst.Tuple)):
        return [e.value for e in sources.elements]
    if isinstance(sources, cst.Dict):
        return [e.value for e in sources.elements if isinstance(e, cst.DictElement)]
    return [sources]


def may_be_watched_elsewhere(model: FileModel, tape: TapeInstance) -> bool:
    """Whether code this analysis does not see may call the tape's `watch`: the tape is
    passed to a call, returned, stored, lives on an attribute, or was handed back by the
    helper that recorded on it."""
    if tape.name is None or "." in tape.name or tape.handed_back is not None:
        return True
    return any(use.tape_role is None for use in model.uses_of_tape(tape))


def watch_calls(model: FileModel, tape: TapeInstance) -> list[TapeCall]:
    return [c for c in model.calls_on(tape) if c.method == "watch"]


def watched_argument(call: TapeCall) -> cst.BaseExpression | None:
    return argument_value(call.node, 0, "tensor")


# ---------------------------------------------------------------------- plain tensors
def is_plain_tensor(model: FileModel, expr: cst.BaseExpression, tape: TapeInstance) -> Tri:
    """YES when `expr` (a source of a gradient call on `tape`) certainly holds a tensor that
    is not a `tf.Variable` and that `tape` did not compute from anything it watches."""
    return _PlainTensors(model, tape).name(expr)


class _PlainTensors:
    def __init__(self, model: FileModel, tape: TapeInstance) -> None:
        self.model = model
        self.tape = tape
        self._memo: dict[Def, Tri] = {}
        self._rebound = names_rebound_elsewhere(model)

    def name(self, expr: cst.BaseExpression) -> Tri:
        if not isinstance(expr, cst.Name):
            return Tri.UNKNOWN
        defs = self.model.defs_of(expr)
        if not defs or expr.value in self._rebound:
            return Tri.UNKNOWN
        return _all([self._definition(d) for d in defs])

    def _definition(self, d: Def) -> Tri:
        cached = self._memo.get(d)
        if cached is not None:
            return cached
        self._memo[d] = Tri.UNKNOWN  # cycles through a loop's back edge
        answer = Tri.UNKNOWN
        if d.kind is DefKind.ASSIGN and d.value is not None:
            answer = self._value(d.value, is_recording(d.ctx, self.tape))
        self._memo[d] = answer
        return answer

    def _value(self, expr: cst.BaseExpression, recording: bool) -> Tri:
        """`recording`: whether the tape recorded where the value was computed; an op run
        then may be connected to a watched input, so only factories count as plain."""
        if isinstance(expr, cst.Call):
            return self._call(expr, recording)
        if isinstance(expr, cst.Name):
            return self.name(expr)  # an alias is the same object
        if recording:
            return Tri.UNKNOWN
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, _ARITHMETIC):
            return self._arithmetic([expr.left, expr.right])
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
            return self._arithmetic([expr.expression])
        if isinstance(expr, cst.Subscript):  # `tf.linspace(-1.0, 1.0, 100)[:, None]`
            return Tri.YES if self._value(expr.value, False) is Tri.YES else Tri.UNKNOWN
        return Tri.UNKNOWN

    def _arithmetic(self, operands: list[cst.BaseExpression]) -> Tri:
        """Arithmetic outside the recording gives a plain tensor when an operand is a tensor
        (plain or a variable: `tf.Variable(2.0) + 1.0` is a tensor) and the others are
        tensors or numbers."""
        tensors = 0
        for operand in operands:
            if isinstance(operand, (cst.Integer, cst.Float)):
                continue
            if not (self._is_variable(operand) or self._value(operand, False) is Tri.YES):
                return Tri.UNKNOWN
            tensors += 1
        return Tri.YES if tensors else Tri.UNKNOWN

    def _is_variable(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, cst.Call):
            return self.model.imports.qualify(expr.func) == "tensorflow.Variable"
        if isinstance(expr, cst.Name):
            defs = self.model.defs_of(expr)
            return bool(defs) and all(
                d.kind is DefKind.ASSIGN and d.value is not None and self._is_variable(d.value)
                for d in defs
            )
        return False

    def _call(self, call: cst.Call, recording: bool) -> Tri:
        qualified = self.model.imports.qualify(call.func)
        if qualified is None:
            return Tri.UNKNOWN
        if qualified in _TENSOR_FACTORIES or is_numpy(qualified):
            return Tri.YES
        if qualified.startswith("tensorflow.random."):
            function = qualified.removeprefix("tensorflow.random.")
            if "." in function or not function[:1].islower() or function in _RANDOM_NOT_TENSORS:
                return Tri.UNKNOWN
            return Tri.YES
        if qualified in _RESHAPING and not recording:
            operand = argument_value(call, 0, None)
            parts = elements(operand) if operand is not None else []
            if parts and all(self._value(p, False) is Tri.YES for p in parts):
                return Tri.YES
            return Tri.UNKNOWN
        if qualified == "tensorflow.convert_to_tensor":
            # Inside the recording, converting a variable reads it: the result is connected.
            return Tri.UNKNOWN if recording else Tri.YES
        if qualified == "tensorflow.Variable":
            return Tri.NO
        return Tri.UNKNOWN


def _all(answers: list[Tri]) -> Tri:
    if answers and all(a is Tri.YES for a in answers):
        return Tri.YES
    if answers and all(a is Tri.NO for a in answers):
        return Tri.NO
    return Tri.UNKNOWN


_GLOBAL_STATEMENT = re.compile(r"\b(?:global|nonlocal)\s+([\w \t,]+)")


def names_rebound_elsewhere(model: FileModel) -> frozenset[str]:
    """Names some function rebinds through `global` / `nonlocal`: they may hold anything."""
    return _rebound_in(model.source_text)


@lru_cache(maxsize=4)
def _rebound_in(text: str) -> frozenset[str]:
    return frozenset(
        name.strip() for names in _GLOBAL_STATEMENT.findall(text) for name in names.split(",")
    )


# ---------------------------------------------------------------------- watch coverage
def covers(model: FileModel, argument: cst.BaseExpression, source: cst.BaseExpression) -> Tri:
    """Whether watching `argument` watches (part of) `source`.

    Both sides are taken apart into atoms: list and tuple literals, and names bound only to
    them, stand for their items. YES when an atom of each side is the same name or attribute
    (through plain aliases such as `inputs = x`); NO when every pair of atoms is shown to be
    different objects; UNKNOWN otherwise.
    """
    watched = _atoms(model, argument, set())
    sources = _atoms(model, source, set())
    if watched is None or sources is None:
        return Tri.UNKNOWN
    answers = [_same_object(model, w, s) for w in watched for s in sources]
    if Tri.YES in answers:
        return Tri.YES
    return Tri.NO if all(a is Tri.NO for a in answers) else Tri.UNKNOWN


def _atoms(
    model: FileModel, expr: cst.BaseExpression, seen: set[Def]
) -> list[cst.BaseExpression] | None:
    """The single values `expr` holds, or None when a part cannot be taken apart."""
    if isinstance(expr, (cst.List, cst.Tuple)):
        atoms: list[cst.BaseExpression] = []
        for element in expr.elements:
            if not isinstance(element, cst.Element):
                return None  # `*rest`
            inner = _atoms(model, element.value, seen)
            if inner is None:
                return None
            atoms.extend(inner)
        return atoms
    if isinstance(expr, cst.Name):
        defs = model.defs_of(expr)
        written = [
            d.value
            for d in defs
            if d.kind is DefKind.ASSIGN and isinstance(d.value, (cst.List, cst.Tuple))
        ]
        if defs and len(written) == len(defs):
            if defs & seen:
                return None
            seen |= defs
            atoms = []
            for value in written:
                inner = _atoms(model, value, seen)
                if inner is None:
                    return None
                atoms.extend(inner)
            return atoms
    return [expr]


def _same_object(model: FileModel, a: cst.BaseExpression, b: cst.BaseExpression) -> Tri:
    a, b = _alias_root(model, a), _alias_root(model, b)
    if _same_reference(a, b):
        return Tri.YES
    kind_a, kind_b = _fresh_kind(model, a), _fresh_kind(model, b)
    if kind_a is not None and kind_b is not None:
        return Tri.NO  # two names, each bound only to a new object of its own
    # A variable list (`model.trainable_variables`) cannot hold a freshly made tensor.
    if (kind_a == "tensor" and isinstance(b, cst.Attribute)) or (
        kind_b == "tensor" and isinstance(a, cst.Attribute)
    ):
        return Tri.NO
    return Tri.UNKNOWN


def _alias_root(model: FileModel, expr: cst.BaseExpression) -> cst.BaseExpression:
    """`x` for `inputs` after `inputs = x` (every definition the same plain alias)."""
    seen: set[str] = set()
    while isinstance(expr, cst.Name) and expr.value not in seen:
        seen.add(expr.value)
        defs = model.defs_of(expr)
        aliases = [
            d.value for d in defs if d.kind is DefKind.ASSIGN and isinstance(d.value, cst.Name)
        ]
        if not defs or len(aliases) != len(defs) or len({a.value for a in aliases}) != 1:
            break
        expr = aliases[0]
    return expr


def _fresh_kind(model: FileModel, expr: cst.BaseExpression) -> str | None:
    """ "variable" or "tensor" when `expr` is a name bound only to newly made objects (by
    `tf.Variable(...)` or a tensor factory), else None."""
    if not isinstance(expr, cst.Name):
        return None
    kinds = set()
    for d in model.defs_of(expr):
        if d.kind is not DefKind.ASSIGN or not isinstance(d.value, cst.Call):
            return None
        qualified = model.imports.qualify(d.value.func)
        if qualified == "tensorflow.Variable":
            kinds.add("variable")
        elif qualified is not None and (
            qualified in _TENSOR_FACTORIES or qualified.startswith("tensorflow.random.")
        ):
            kinds.add("tensor")
        else:
            return None
    return kinds.pop() if len(kinds) == 1 else None


def _same_reference(a: cst.BaseExpression, b: cst.BaseExpression) -> bool:
    if isinstance(a, cst.Name) and isinstance(b, cst.Name):
        return a.value == b.value
    if isinstance(a, cst.Attribute) and isinstance(b, cst.Attribute):
        return a.attr.value == b.attr.value and _same_reference(a.value, b.value)
    return False


# ------------------------------------------------- sources the tape never watched
@dataclass(frozen=True)
class UnwatchedSource:
    source: cst.Name
    # A NumPy array: `gradient` raises AttributeError for it rather than returning None, and
    # `watch` refuses it; it has to become a tensor first.
    numpy_array: bool = False
    # Its place in a literal list or tuple of sources (None: the sources are not one).
    position: int | None = None


def unwatched_sources(model: FileModel, call: TapeCall) -> Iterator[UnwatchedSource]:
    """Sources of `call` that are plain tensors its tape never watches.

    Any covering `watch` on the tape counts, wherever it is in the block. A watch after the
    source's use loses the operations before it only when nothing else made the tape record
    them: measured on TensorFlow 2.21, `u = net(points); tape.watch(points)` still gives a
    gradient for `points`, because the model's variables made the tape record the call.
    """
    tape = call.tape
    parts = [p for p in source_parts(call) if isinstance(p, cst.Name)]
    if not parts or may_be_watched_elsewhere(model, tape):
        return
    arguments = [watched_argument(watch) for watch in watch_calls(model, tape)]
    listed = source_argument(call)
    positions: dict[cst.CSTNode, int] = {}
    if isinstance(listed, cst.List | cst.Tuple) and not any(
        isinstance(e, cst.StarredElement) for e in listed.elements
    ):
        positions = {e.value: i for i, e in enumerate(listed.elements)}
    for part in parts:
        if is_plain_tensor(model, part, tape) is not Tri.YES:
            continue
        if all(a is not None and covers(model, a, part) is Tri.NO for a in arguments):
            yield UnwatchedSource(part, is_numpy_array(model, part), positions.get(part))


def is_numpy_array(model: FileModel, name: cst.Name) -> bool:
    """Every definition of `name` is a NumPy call (or an alias of one)."""
    defs = model.defs_of(name)
    for d in defs:
        value = d.value
        if isinstance(value, cst.Name):
            if not is_numpy_array(model, value):
                return False
        elif not (isinstance(value, cst.Call) and is_numpy(model.imports.qualify(value.func))):
            return False
    return bool(defs)


# ------------------------------------------- tapes that watch nothing by themselves
def never_watched_call(model: FileModel, tape: TapeInstance) -> TapeCall | None:
    """For a tape created with `watch_accessed_variables=False`: a gradient call none of
    whose sources the tape can have watched (so every gradient it returns is None), unless
    every source is a plain tensor (`unwatched_sources` reports those one by one)."""
    if tape.watch_accessed_variables is not Tri.NO or may_be_watched_elsewhere(model, tape):
        return None
    watches = watch_calls(model, tape)
    for call in model.calls_on(tape):
        if not call.is_gradient:
            continue
        parts = source_parts(call)
        if not parts:
            continue
        if all(is_plain_tensor(model, p, tape) is Tri.YES for p in parts):
            continue
        if all(_never_watched(model, tape, p, watches) for p in parts):
            return call
    return None


def _never_watched(
    model: FileModel, tape: TapeInstance, source: cst.BaseExpression, watches: list[TapeCall]
) -> bool:
    if not watches:
        return True  # the tape watches nothing at all, so it records nothing
    if not _computed_outside_recording(model, tape, source):
        return False  # a value computed in the block may derive from a watched one
    for watch in watches:
        argument = watched_argument(watch)
        if argument is None:
            return False
        if covers(model, argument, source) is Tri.NO:
            continue
        if not _watches_only_inputs(model, tape, argument, source):
            return False
    return True


_VARIABLE_LIST_ATTRIBUTES = frozenset(
    {"trainable_variables", "trainable_weights", "variables", "weights"}
)


def _watches_only_inputs(
    model: FileModel, tape: TapeInstance, argument: cst.BaseExpression, source: cst.BaseExpression
) -> bool:
    """Whether `argument` holds only data, where `source` is the variable list of models
    (`net.trainable_variables`): every atom the `watch` is given is a tensor an op made
    (`interpolated = real + alpha * (fake - real)`), or is fed to one of those models as
    input (`net(tf.concat([x, t], 1))`), which a model's own variables never are. The
    gradient-penalty and PINN shape: an outer tape that watches only the inputs, asked for
    the model's variables."""
    owners = _variable_list_owners(model, source, set())
    atoms = _atoms(model, argument, set())
    if not owners or atoms is None:
        return False
    fed = None
    for atom in atoms:
        if not isinstance(atom, cst.Name):
            return False
        if _computed_tensor(model, atom):
            continue
        if fed is None:
            fed = _fed_to(model, tape, owners)
        if model.defs_of(atom) not in fed:
            return False
    return True


def _variable_list_owners(
    model: FileModel, expr: cst.BaseExpression, seen: set[Def]
) -> set[str] | None:
    """`{"net"}` for `net.trainable_variables`, also through `+` and names bound only to such
    lists; None when `expr` is anything else."""
    if isinstance(expr, cst.Attribute) and expr.attr.value in _VARIABLE_LIST_ATTRIBUTES:
        owner = dotted_name(expr.value)
        return {owner} if owner is not None else None
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
        left = _variable_list_owners(model, expr.left, seen)
        right = _variable_list_owners(model, expr.right, seen)
        return left | right if left is not None and right is not None else None
    if isinstance(expr, cst.Name):
        defs = model.defs_of(expr)
        if not defs or defs & seen:
            return None
        seen |= defs
        owners: set[str] = set()
        for d in defs:
            found = (
                _variable_list_owners(model, d.value, seen)
                if d.kind is DefKind.ASSIGN and d.value is not None
                else None
            )
            if found is None:
                return None
            owners |= found
        return owners
    return None


def _computed_tensor(model: FileModel, name: cst.Name) -> bool:
    """Every definition of `name` is arithmetic or a tensor op: a new tensor, never a
    variable (`tf.Variable(...)` is not one of these)."""
    defs = model.defs_of(name)
    return bool(defs) and all(
        d.kind is DefKind.ASSIGN and d.value is not None and _makes_tensor(model, d.value)
        for d in defs
    )


def _makes_tensor(model: FileModel, value: cst.BaseExpression) -> bool:
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, _ARITHMETIC):
        # `a.trainable_variables + b.trainable_variables` joins two lists of variables.
        return _variable_list_owners(model, value, set()) is None
    if isinstance(value, cst.Call):
        # Not `tf.cast`: to the dtype it already has, it returns its operand, a variable
        # included (measured on TensorFlow 2.21).
        qualified = model.imports.qualify(value.func)
        return qualified is not None and (
            qualified in _TENSOR_FACTORIES
            or (qualified in _RESHAPING and qualified != "tensorflow.cast")
            or qualified.startswith("tensorflow.random.")
        )
    return False


def _fed_to(model: FileModel, tape: TapeInstance, owners: set[str]) -> list[frozenset[Def]]:
    """The definitions of every name whose value is passed, directly or through values
    computed from it in the tape's scope, to a call of one of `owners` (`net(...)`)."""
    pending: list[cst.Name] = []
    for site in model.calls:
        if site.scope is tape.scope and dotted_name(site.node.func) in owners:
            for arg in site.node.args:
                pending.extend(names_in(arg.value))
    fed: list[frozenset[Def]] = []
    seen: set[Def] = set()
    while pending:
        name = pending.pop()
        defs = model.defs_of(name)
        fed.append(defs)
        for d in defs:
            if d in seen or d.scope is not tape.scope or d.value is None:
                continue
            seen.add(d)
            if d.kind is DefKind.ASSIGN:
                pending.extend(names_in(d.value))
    return fed


def _computed_outside_recording(
    model: FileModel, tape: TapeInstance, source: cst.BaseExpression
) -> bool:
    """Every part of the source is a name bound only while the tape did not record, or an
    attribute such as `model.trainable_variables` (never computed by the tape)."""
    atoms = _atoms(model, source, set())
    if atoms is None:
        return False
    for atom in atoms:
        if isinstance(atom, cst.Attribute):
            continue
        if not isinstance(atom, cst.Name):
            return False
        defs = model.defs_of(atom)
        if not defs or any(d.kind is DefKind.OTHER or is_recording(d.ctx, tape) for d in defs):
            return False
    return True
