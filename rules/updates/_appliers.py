"""Calls that hand gradients to a function which applies them with no None check.

`update_weights(grads)`, where the summary of `update_weights` (in this module or another
module of the project) says that its parameter reaches an optimizer's `apply_gradients`
unfiltered, possibly through more helpers: the call is where the raw gradients enter that
path, so TAP401 reports it there, with the apply (and each helper on the way) as related
locations.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from tapelint.semantic.calls.callees import argument_for, callee_of, keyed_arguments
from tapelint.semantic.file_model.model import FileModel, Scope
from tapelint.semantic.project_model.summaries import Site


@dataclass(frozen=True)
class HelperApply:
    node: cst.Call  # the call that hands the gradients on
    argument: cst.BaseExpression  # what it hands on
    scope: Scope
    stmt: cst.CSTNode | None
    # Each way the argument reaches an apply: the sites of the helpers' calls on the way,
    # the apply last.
    chains: tuple[tuple[Site, ...], ...]


def helper_applies(model: FileModel) -> Iterator[HelperApply]:
    index = model.index
    if index is None:
        return
    for site in model.calls:
        callee = callee_of(model, site.node)
        if callee is None:
            continue
        applies = index.applies(callee.target)
        summary = index.function(callee.target) if applies else None
        if summary is None:
            continue
        arguments = dict(keyed_arguments(site.node, callee))
        for param, chains in sorted(applies.items()):
            argument = argument_for(summary.params, param, arguments)
            if argument is not None:
                yield HelperApply(site.node, argument.value, site.scope, site.stmt, chains)
