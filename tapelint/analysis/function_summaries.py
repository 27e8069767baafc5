"""A module's summaries, from its tape model alone (see `summaries` for what they say).

For each function and method: the flow of each `return` (the whole value, or each element
of a returned tuple), the parameters that reach an optimizer's apply with no None check
on the way, and the parameters handed on, unfiltered, to a named function. Flows are
followed as `gradients.gradients_of` follows them in a check, with parameters as places
the flow may come from and calls of named functions kept symbolic, so a module's summary
depends on its own text only. Only functions with a fact are kept: a caller that finds no
summary knows nothing, which is what an empty one would say.
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from tapelint.analysis.callees import callee_of, keyed_arguments, local_name, qualified_name
from tapelint.analysis.differentiability import every_source_reaches
from tapelint.analysis.expressions import names_in, statements
from tapelint.analysis.gradients import (
    GradientFlow,
    PendingCall,
    applied_gradients,
    gradients_of,
    handles_none,
)
from tapelint.analysis.model import ApplyCall, CallSite, DefKind, FileModel, Scope, TapeCall
from tapelint.analysis.names import absolute
from tapelint.analysis.optimizers import gradient_applies
from tapelint.analysis.summaries import (
    WHOLE,
    Applied,
    CallResult,
    Flow,
    Forward,
    FunctionSummary,
    ModuleSummary,
    Site,
)

# Where a node of the module is in the file as reported: (line, column, cell).
Locate = Callable[[cst.CSTNode], tuple[int, int, int | None]]


def summarize(model: FileModel, path: str, locate: Locate) -> ModuleSummary:
    """The summary of `model`'s module; `path` and `locate` place its sites."""
    builder = _Summarizer(model, path, locate)
    functions: dict[str, FunctionSummary] = {}
    for scope in model.scopes:
        if isinstance(scope.node, cst.FunctionDef):
            summary = builder.function(scope)
            name = local_name(model, scope.node)
            if summary.has_facts and name is not None:
                functions[name] = summary
    return ModuleSummary(
        module=model.module_name,
        functions=functions,
        aliases={
            name: _absolute(model, target) for name, target in model.imports.aliases().items()
        },
        star_imports=tuple(_absolute(model, m) for m in model.imports.star_modules),
        bases=_bases(model),
    )


class _Summarizer:
    def __init__(self, model: FileModel, path: str, locate: Locate) -> None:
        self.model = model
        self.path = path
        self.locate = locate
        self._applies_by_scope: dict[Scope, list[ApplyCall]] = {}
        for apply in gradient_applies(model):
            self._applies_by_scope.setdefault(apply.scope, []).append(apply)
        self._calls_by_scope: dict[Scope, list[CallSite]] = {}
        for site in model.calls:
            self._calls_by_scope.setdefault(site.scope, []).append(site)

    def function(self, scope: Scope) -> FunctionSummary:
        function = scope.node
        assert isinstance(function, cst.FunctionDef)
        return FunctionSummary(
            params=_parameter_names(function),
            returns=self._returns(scope, function),
            applies=tuple(self._applies(scope, function)),
            forwards=tuple(self._forwards(scope, function)),
        )

    # ------------------------------------------------------------------ returns
    def _returns(self, scope: Scope, function: cst.FunctionDef) -> tuple[tuple[str, Flow], ...]:
        parts: dict[str, Flow] = {}
        for returned in _returns(function):
            value = returned.value
            if value is None:
                continue
            if isinstance(value, cst.Tuple):
                for index, element in enumerate(value.elements):
                    self._add(parts, str(index), element.value, scope, function)
            else:
                self._add(parts, WHOLE, value, scope, function)
        return tuple(sorted(parts.items()))

    def _add(
        self,
        parts: dict[str, Flow],
        part: str,
        value: cst.BaseExpression,
        scope: Scope,
        function: cst.FunctionDef,
    ) -> None:
        flow = gradients_of(self.model, value, scope, summary=True)
        if handles_none(self.model, flow):
            flow = GradientFlow()
        converted = self._flow(flow, function)
        parts[part] = parts[part].join(converted) if part in parts else converted

    # ------------------------------------------------------------------ applies, forwards
    def _applies(self, scope: Scope, function: cst.FunctionDef) -> list[Applied]:
        found: list[Applied] = []
        for apply in self._applies_by_scope.get(scope, []):
            flow = applied_gradients(self.model, apply, summary=True)
            if flow.opaque or not flow.params or handles_none(self.model, flow, apply.stmt):
                continue
            site = self._site(apply.node, f"`{_spelled(self.model, apply.node)}`", function)
            found += [Applied(param, site) for param in sorted(flow.params)]
        return found

    def _forwards(self, scope: Scope, function: cst.FunctionDef) -> list[Forward]:
        found: list[Forward] = []
        params = set(_parameter_names(function))
        for site in self._calls_by_scope.get(scope, []):
            if not any(name.value in params for name in names_in(site.node)):
                continue  # hands on nothing that could come from a parameter
            callee = callee_of(self.model, site.node)
            if callee is None:
                continue
            for key, arg in keyed_arguments(site.node, callee):
                flow = gradients_of(self.model, arg.value, scope, summary=True)
                if flow.opaque or not flow.params or flow.origins or flow.calls:
                    continue
                if handles_none(self.model, flow, site.stmt):
                    continue
                label = f"`{_spelled(self.model, site.node)}`"
                where = self._site(site.node, label, function)
                found += [
                    Forward(param, callee.target, key, where) for param in sorted(flow.params)
                ]
        return found

    # ------------------------------------------------------------------ conversion
    def _flow(self, flow: GradientFlow, function: cst.FunctionDef) -> Flow:
        return Flow(
            raw=tuple(
                [
                    self._raw_site(origin)
                    for origin in flow.origins
                    if not every_source_reaches(self.model, origin)
                ]
                + [self._received_site(call, function) for call in flow.received]
            ),
            params=tuple(sorted(flow.params)),
            calls=tuple(self._call(call, function) for call in flow.calls),
            opaque=flow.opaque,
        )

    def _call(self, call: PendingCall, function: cst.FunctionDef) -> CallResult:
        return CallResult(
            call.callee.target,
            call.part,
            tuple((key, self._flow(flow, function)) for key, flow in call.args),
        )

    def _raw_site(self, origin: TapeCall) -> Site:
        tape = origin.tape.name or "tape"
        owner = _owner_name(origin.scope)
        where = f" in `{owner}`" if owner else ""
        return self._site(origin.node, f"`{tape}.{origin.method}`{where}", None)

    def _received_site(self, call: cst.Call, function: cst.FunctionDef) -> Site:
        return self._site(call, f"`{_spelled(self.model, call)}`", function)

    def _site(self, node: cst.CSTNode, label: str, function: cst.FunctionDef | None) -> Site:
        line, column, cell = self.locate(node)
        if function is not None:
            label = f"{label} in `{function.name.value}`"
        return Site(self.path, line, column, label, cell)


def _parameter_names(function: cst.FunctionDef) -> tuple[str, ...]:
    params = function.params
    return tuple(
        p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)
    )


def _returns(function: cst.FunctionDef) -> list[cst.Return]:
    """The `return` statements of `function` itself, not of functions nested in it."""
    found: list[cst.Return] = []
    pending: list[cst.CSTNode] = list(statements(function.body))
    while pending:
        node = pending.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(node, cst.Return):
            found.append(node)
        pending.extend(node.children)
    return found


def _owner_name(scope: Scope | None) -> str | None:
    while scope is not None and not isinstance(scope.node, cst.FunctionDef):
        scope = scope.parent
    return scope.node.name.value if scope is not None else None


def _spelled(model: FileModel, call: cst.Call) -> str:
    return " ".join(model.module.code_for_node(call.func).split())


def _absolute(model: FileModel, qualified: str) -> str:
    return absolute(qualified, model.module_name, is_package=model.is_package)


def _bases(model: FileModel) -> dict[str, tuple[str, ...]]:
    """Each class of the module, with the qualified names of its bases."""
    found: dict[str, tuple[str, ...]] = {}
    for scope in model.scopes:
        node = scope.node
        if not isinstance(node, cst.ClassDef):
            continue
        name = local_name(model, node)
        bases: list[str] = []
        for base in node.bases:
            qualified = model.imports.qualify(base.value)
            if qualified is not None:
                bases.append(_absolute(model, qualified))
            elif isinstance(base.value, cst.Name):
                local = [
                    d.stmt
                    for d in model.defs_of(base.value)
                    if d.kind is DefKind.DEFINITION and isinstance(d.stmt, cst.ClassDef)
                ]
                if len(local) == 1:
                    bases.append(qualified_name(model, local[0]))
        if name is not None and bases:
            found[name] = tuple(bases)
    return found
