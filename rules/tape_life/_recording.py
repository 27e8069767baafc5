"""Was a gradient target computed while its tape recorded?

A call that may hand back its own argument is not a computation of its own: `tf.cast(x, d)`
returns `x` itself when `x` already has the dtype `d`, and `tf.convert_to_tensor(x)` returns
`x` when it is a tensor. Outside the block, such a call of a recorded value is therefore
unknown (a static pass rarely knows dtypes: `tf.cast(reduced, tensor.dtype)` after the block
is `reduced` itself), and of an unrecorded value still not recorded.

A target that is one of the call's own sources, or a value the tape watches, or a plain
alias of one (`y = x` with `x` watched, `tape.gradient([x, y], x)`), is not a computation:
its gradient with respect to itself is ones, however long ago it was made. It is unknown
here, never "computed before the tape started recording".

A tape a helper handed back (`out, tape = forward(x)`) recorded only inside the helper,
whose `with` blocks ended when it returned: what the caller computes from `out` is not
recorded, and is judged so when the caller neither enters the tape again nor hands it on.
What the helper returned itself (`loss, tape = forward(x)`) was computed where the caller
cannot see, and is unknown.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from tapelint.semantic.file_model.expressions import argument_value, computes, elements
from tapelint.semantic.file_model.model import (
    Def,
    DefKind,
    FileModel,
    FrameKind,
    TapeCall,
    TapeInstance,
    Tri,
    is_recording,
)
from tapelint.semantic.flow.watching import source_parts, watch_calls, watched_argument


@dataclass(frozen=True)
class RecordingAnswer:
    answer: Tri
    # For a NO: the target part that was not recorded, and when it was computed:
    # "before" the tape's block, "after" it, or "stopped" under `stop_recording()`; for a
    # tape a helper handed back, "handed" (after the helper returned it) or "before".
    part: cst.BaseExpression | None = None
    when: str | None = None


_UNKNOWN = RecordingAnswer(Tri.UNKNOWN)
_YES = RecordingAnswer(Tri.YES)


def target_recorded(model: FileModel, call: TapeCall) -> RecordingAnswer:
    """Whether every part of `call`'s target was computed while `call.tape` recorded."""
    tape = call.tape
    target = argument_value(call.node, 0, "target")
    if target is None or call.scope is not tape.scope or not _recording_known(model, tape):
        return _UNKNOWN
    own = _sources_and_watched(model, call)
    answers = [
        _expression_recorded(model, part, call, tape, set(), own) for part in elements(target)
    ]
    for answer in answers:
        if answer.answer is Tri.NO:
            return answer
    if answers and all(a.answer is Tri.YES for a in answers):
        return _YES
    return _UNKNOWN


def _expression_recorded(
    model: FileModel,
    expr: cst.BaseExpression,
    where: TapeCall | Def,
    tape: TapeInstance,
    seen: set[Def],
    own: frozenset[Def],
) -> RecordingAnswer:
    """`where` is what evaluates `expr`: the gradient call, or the definition it renames.
    `own`: the definitions of the call's sources and of what the tape watches."""
    if isinstance(expr, cst.Name):
        defs = model.defs_of(expr)
        if not defs or defs <= own:
            return _UNKNOWN
        # A number (`total = 0.0` before a loop that accumulates) has no gradient of its
        # own: it decides nothing either way, but it does not make the target recorded.
        answers = [
            _definition_recorded(model, d, tape, seen, own) for d in defs if not _binds_number(d)
        ]
        if answers and all(a.answer is Tri.NO for a in answers):
            return RecordingAnswer(Tri.NO, expr, answers[0].when)
        if len(answers) == len(defs) and all(a.answer is Tri.YES for a in answers):
            return _YES
        return _UNKNOWN
    if computes(expr, model.imports):
        if is_recording(where.ctx, tape):
            return _YES
        passed = _may_return_unchanged(model, expr)
        if passed is not None:
            answer = _expression_recorded(model, passed, where, tape, seen, own)
            return answer if answer.answer is Tri.NO else _UNKNOWN
        return RecordingAnswer(Tri.NO, expr, _when(model, where, tape))
    return _UNKNOWN


def _definition_recorded(
    model: FileModel, d: Def, tape: TapeInstance, seen: set[Def], own: frozenset[Def]
) -> RecordingAnswer:
    if d in seen or d.scope is not tape.scope:
        return _UNKNOWN
    if tape.handed_back is not None and d.value is tape.ctor:
        return _UNKNOWN  # computed by the helper, perhaps while the tape recorded
    seen.add(d)
    if d.kind is DefKind.ASSIGN and isinstance(d.value, cst.Name):
        # `total = loss` only renames: ask about what it renames.
        return _expression_recorded(model, d.value, d, tape, seen, own)
    if d.kind not in (DefKind.ASSIGN, DefKind.UNPACK, DefKind.AUG) or d.value is None:
        return _UNKNOWN
    if is_recording(d.ctx, tape):
        return _YES
    if d.kind is DefKind.ASSIGN and _may_return_unchanged(model, d.value) is not None:
        answer = _expression_recorded(model, d.value, d, tape, seen, own)
        return RecordingAnswer(answer.answer, None, answer.when)
    if d.kind is DefKind.AUG or computes(d.value, model.imports):
        return RecordingAnswer(Tri.NO, None, _when(model, d, tape))
    return _UNKNOWN


# What a caller may do with a tape a helper handed back and still not make it record.
_ASKING = frozenset({"del", "watch", "watched_variables", *TapeCall.GRADIENT_METHODS})

# callee -> (position, keyword) of the argument it may return unchanged
_MAY_RETURN_ARGUMENT = {
    "tensorflow.cast": (0, "x"),
    "tensorflow.dtypes.cast": (0, "x"),
    "tensorflow.convert_to_tensor": (0, "value"),
}


def _may_return_unchanged(model: FileModel, expr: cst.BaseExpression) -> cst.BaseExpression | None:
    """The argument of a call that may return it as it is (see the module's doc)."""
    if not isinstance(expr, cst.Call):
        return None
    spec = _MAY_RETURN_ARGUMENT.get(model.imports.qualify(expr.func) or "")
    return argument_value(expr, *spec) if spec is not None else None


def _sources_and_watched(model: FileModel, call: TapeCall) -> frozenset[Def]:
    """The definitions of the names `call` differentiates with respect to and of the names
    its tape watches (each a name, or an element of a written-out list or tuple)."""
    parts = list(source_parts(call))
    for watch in watch_calls(model, call.tape):
        argument = watched_argument(watch)
        if argument is not None:
            parts += elements(argument)
    defs: set[Def] = set()
    for part in parts:
        if isinstance(part, cst.Name):
            defs |= model.defs_of(part)
    return frozenset(defs)


def _recording_known(model: FileModel, tape: TapeInstance) -> bool:
    """Whether every place `tape` records is seen: always for a tape created here; for one
    a helper handed back, when this scope never enters it again and never hands it on (a
    function it is passed to may enter it)."""
    if tape.handed_back is None:
        return True
    uses = model.uses_of_tape(tape)
    return not tape.blocks and all(use.tape_role in _ASKING for use in uses)


def _binds_number(d: Def) -> bool:
    """`total = 0.0`, `loss = 0`, `acc = -1.0`: a plain assignment of a number literal."""
    value = d.value
    if isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Minus):
        value = value.expression
    return d.kind is DefKind.ASSIGN and isinstance(value, (cst.Integer, cst.Float))


def _when(model: FileModel, where: TapeCall | Def, tape: TapeInstance) -> str:
    if tape.handed_back is not None:
        before = model.written_before(where.stmt, tape.stmt)
        return "before" if before else "handed"
    if any(f.kind is FrameKind.STOP and f.tape is tape for f in where.ctx):
        return "stopped"
    if tape.blocks:
        # By the code's order: in a loop the walk's second pass re-enters the blocks, so
        # traversal orders do not say which side of a block a statement is on.
        if all(model.written_before(where.stmt, block) for block in tape.blocks):
            return "before"
        return "after"
    starts = [start for start, _ in tape.blocks.values()]
    if starts and where.order < min(starts):
        return "before"
    return "after"
