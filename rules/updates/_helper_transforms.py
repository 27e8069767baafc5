"""Calls that hand a raw gradient list to a function of the project which runs an op that
raises on None on each gradient (TAP403), known from the function's summary
(`parameter_transforms`), in this module, another module or an earlier notebook cell:

- `scale_all(grads, s)`, `self.accumulate(grads)`, `agent.accumulate(grads)`: any call
  `callees.callee_of` resolves, handing the list to a parameter whose elements the
  function transforms one by one;
- `tf.nest.map_structure(add_noise, grads)` (or `map`): the function, named rather than
  written as a lambda, is called with each gradient, and transforms its parameter itself.

The list must be raw as `transforms.raw_list` says: this file's gradient calls over a list
of sources, every path followed, no None handling on the way, and the list itself (not
one gradient of it, not its pairs). The call is where None enters the helper, so TAP403
reports it there, naming the helper's op as the related place.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from tapelint.semantic.calls.callees import (
    Callee,
    argument_for,
    callee_of,
    keyed_arguments,
    outside_project,
    referenced_callee,
)
from tapelint.semantic.file_model.model import CallSite, FileModel, TapeCall
from tapelint.semantic.gradient_routes.gradients import gradients_of
from tapelint.semantic.gradient_routes.transforms import (
    is_mapping,
    mapped_arguments,
    raises_on_none,
    raw_list,
)
from tapelint.semantic.project_model.summaries import ProjectIndex, Site


@dataclass(frozen=True)
class HelperTransform:
    node: cst.Call  # the call that hands the gradients on
    helper: cst.BaseExpression  # the function, as the call spells it
    origin: TapeCall  # the gradient call the list comes from
    site: Site  # the helper's op


def helper_transforms(model: FileModel) -> Iterator[HelperTransform]:
    index = model.index
    if index is None or not model.gradient_calls:
        return  # a raw list comes from a gradient call of this file
    for site in model.calls:
        if is_mapping(model, site.node):
            yield from _mapped(model, index, site)
        else:
            yield from _handed(model, index, site)


def _handed(model: FileModel, index: ProjectIndex, site: CallSite) -> Iterator[HelperTransform]:
    """`helper(grads)`: the raw list handed to a parameter transformed element by element."""
    raw: list[tuple[str, TapeCall]] = []
    callee: Callee | None = None
    for argument in site.node.args:
        if not _may_be_a_list(argument.value):
            continue
        callee = callee or callee_of(model, site.node)
        if callee is None or outside_project(callee.target):
            return
        flow = gradients_of(model, argument.value, site.scope)
        if raw_list(model, flow):
            keys = [key for key, arg in keyed_arguments(site.node, callee) if arg is argument]
            raw += [(key, flow.origins[0]) for key in keys]
    if not raw or callee is None:
        return
    transforms = [t for t in index.transforms(callee.target) if t.each]
    summary = index.function(callee.target) if transforms else None
    if summary is None:
        return
    by_key = dict(raw)
    arguments = dict(keyed_arguments(site.node, callee))
    for transform in transforms:
        handed = argument_for(summary.params, transform.param, arguments)
        key = next((k for k, arg in arguments.items() if arg is handed), None)
        if key is not None and key in by_key:
            yield HelperTransform(site.node, site.node.func, by_key[key], transform.site)
            return


def _mapped(model: FileModel, index: ProjectIndex, site: CallSite) -> Iterator[HelperTransform]:
    """`tf.nest.map_structure(add_noise, grads)`: each gradient handed to the parameter the
    structure maps to, which the function transforms itself."""
    function, *structures = mapped_arguments(site.node)
    if isinstance(function, cst.Lambda) or raises_on_none(model, function):
        return  # judged where the lambda or the op is (`transforms`)
    raw: dict[int, TapeCall] = {}
    for position, structure in enumerate(structures):
        flow = gradients_of(model, structure, site.scope)
        if raw_list(model, flow):
            raw[position] = flow.origins[0]
    if not raw:
        return
    callee = referenced_callee(model, function, site.node)
    if callee is None or outside_project(callee.target):
        return
    shift = 1 if callee.bound else 0
    for transform in index.transforms(callee.target):
        if not transform.each and transform.param - shift in raw:
            origin = raw[transform.param - shift]
            yield HelperTransform(site.node, function, origin, transform.site)
            return


def _may_be_a_list(value: cst.BaseExpression) -> bool:
    """`grads`, `grads[:n]`, `list(grads)`: an argument that may hand a name's gradient
    list on (a cheap test before its flow is followed)."""
    if isinstance(value, cst.Subscript):
        value = value.value
    elif isinstance(value, cst.Call) and len(value.args) == 1:
        value = value.args[0].value
    return isinstance(value, cst.Name)
