"""Which calls hand back a tape a helper created (`out, tape = self._forward(x)`)?

The model of a module is built before its summaries and the project index are known, so a
tape that a helper returns is at first no tape in the caller. These are the calls that hand
one back, for a second walk that binds the caller's name to a tape
(`build_model(..., handed_back=...)`). Only calls that can matter are looked up: the value
of an assignment whose name the module then asks for gradients (`tape.gradient(...)`,
`jacobian`, `batch_jacobian`) while the first walk knew no tape behind it. The helper is
found as every other summary is (`callees.callee_of` and the index: a function of this
module or of an earlier cell, a method through `self.`, a function of another module of
the project), and its summary says which part of its value is the tape
(`FunctionSummary.hands_back`, see `tape_life.handing_back`).
"""

from __future__ import annotations

import libcst as cst

from tapelint.semantic.calls.callees import callee_of, outside_project
from tapelint.semantic.file_model.model import DefKind, FileModel, HandedTape, TapeCall
from tapelint.semantic.project_model.summaries import WHOLE, ProjectIndex


def handed_tapes(model: FileModel, index: ProjectIndex) -> dict[cst.Call, dict[str, HandedTape]]:
    """The calls of `model` that hand back a tape, by the part of their value that holds
    it."""
    found: dict[cst.Call, dict[str, HandedTape]] = {}
    asked: set[tuple[cst.Call, str]] = set()
    for site in model.calls:
        func = site.node.func
        if not (
            isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Name)
            and func.attr.value in TapeCall.GRADIENT_METHODS
        ):
            continue
        if model.tape_call_at(site.node) is not None:
            continue  # a tape the first walk knew
        for d in model.defs_of(func.value):
            call = d.value
            if not isinstance(call, cst.Call):
                continue
            if d.kind is DefKind.ASSIGN and not d.unpack_index:
                part = WHOLE
            elif d.kind is DefKind.UNPACK and len(d.unpack_index) == 1:
                part = str(d.unpack_index[0])
            else:
                continue  # a starred or nested target, a loop variable, ...
            if (call, part) in asked:
                continue
            asked.add((call, part))
            handed = _handed_by(model, index, call, part)
            if handed is not None:
                found.setdefault(call, {})[part] = handed
    return found


def _handed_by(
    model: FileModel, index: ProjectIndex, call: cst.Call, part: str
) -> HandedTape | None:
    callee = callee_of(model, call)
    if callee is None or outside_project(callee.target):
        return None
    summary = index.function(callee.target)
    fact = summary.handed_back(part) if summary is not None else None
    return HandedTape(callee.target, fact) if fact is not None else None
