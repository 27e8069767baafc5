"""Calls that hand a tape to a helper which always asks it for gradients.

`grads = compute_grads(tape, loss, model)` spends a non-persistent `tape` as surely as
`tape.gradient(...)` would, when the helper's summary says that it asks that parameter for
gradients on every path (`spending`). The helper is found the way every other summary is:
in this module, through `self.`, or in another module of the project through the index.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from tapelint.semantic.calls.callees import argument_for, callee_of, keyed_arguments
from tapelint.semantic.file_model.model import Context, FileModel, TapeInstance
from tapelint.semantic.project_model.summaries import Site


@dataclass(frozen=True)
class HandOff:
    node: cst.Call  # the helper's call
    stmt: cst.CSTNode | None
    order: int  # the traversal order of the tape's name among the call's arguments
    spent_at: Site  # where the helper asks the tape for gradients
    ctx: Context  # the frames around the call


def tape_handoffs(model: FileModel, tape: TapeInstance) -> Iterator[HandOff]:
    """The calls in `tape`'s own scope that hand it to a helper that spends it."""
    index = model.index
    if index is None:
        return
    passed = {
        id(use.node): use
        for use in model.uses_of_tape(tape)
        if use.tape_role is None and use.scope is tape.scope
    }
    if not passed:
        return
    for site in model.calls:
        if site.scope is not tape.scope:
            continue
        arguments = [arg for arg in site.node.args if id(arg.value) in passed]
        if not arguments:
            continue
        callee = callee_of(model, site.node)
        summary = index.function(callee.target) if callee is not None else None
        if callee is None or summary is None or not summary.spends:
            continue
        keyed = dict(keyed_arguments(site.node, callee))
        for spent in summary.spends:
            argument = argument_for(summary.params, spent.param, keyed)
            if argument is not None and argument in arguments:
                use = passed[id(argument.value)]
                yield HandOff(site.node, site.stmt, use.order, spent.site, site.ctx)
                break
