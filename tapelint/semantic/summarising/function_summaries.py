"""A module's summaries, from its tape model alone (see `summaries` for what they say).

For each function and method: the flow of each `return` (the whole value, or each element
of a returned tuple), the parameters that reach an optimizer's apply with no None check
on the way, the parameters handed on, unfiltered, to a named function, the parameters
it always asks for gradients (`spending`), the parameters it runs an op that raises on
None on, unguarded (`parameter_transforms`), the Keras model it builds
(`keras_builders`), and the tapes it hands back (`handing_back`). Flows are
followed as `gradients.gradients_of` follows them in a check, with parameters as places
the flow may come from and calls of named functions kept symbolic, so a module's summary
depends on its own text only. Only functions with a fact are kept: a caller that finds no
summary knows nothing, which is what an empty one would say.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

import libcst as cst

from tapelint.semantic.calls.callees import (
    Callee,
    callee_of,
    keyed_arguments,
    local_name,
    outside_project,
)
from tapelint.semantic.calls.spending import spent_parameters
from tapelint.semantic.file_model.class_facts import has_no_methods, module_classes
from tapelint.semantic.file_model.expressions import in_execution_order, statements
from tapelint.semantic.file_model.model import (
    ApplyCall,
    CallSite,
    FileModel,
    Scope,
    TapeCall,
    Tri,
)
from tapelint.semantic.flow.differentiability import no_gradient_lost_silently
from tapelint.semantic.gradient_routes.gradients import (
    GradientFlow,
    PendingCall,
    applied_gradients,
    gradients_of,
    handles_none,
)
from tapelint.semantic.gradient_routes.optimizers import gradient_applies
from tapelint.semantic.gradient_routes.parameter_transforms import (
    mapped_functions,
    parameter_transforms,
)
from tapelint.semantic.project_model.module_bindings import module_bindings
from tapelint.semantic.project_model.names import absolute
from tapelint.semantic.project_model.summaries import (
    WHOLE,
    Applied,
    CallResult,
    Flow,
    Forward,
    FunctionSummary,
    HandedBack,
    ModuleSummary,
    Site,
    Spent,
    Transformed,
)
from tapelint.semantic.summarising.keras_builders import Builders
from tapelint.semantic.tape_life.handing_back import tapes_handed_back
from tapelint.semantic.tape_life.toy_values import records_only_toy_values

# Where a node of the module is as reported: (line, column, cell, path). The path is None
# for the module's own file; a notebook's program also holds the code of files its cells run
# (tapelint.linter.notebooks.program_files), whose nodes are placed in those files.
Locate = Callable[[cst.CSTNode], tuple[int, int, int | None, str | None]]


def summarize(
    model: FileModel, path: str, locate: Locate, *, every_parameter: bool = False
) -> ModuleSummary:
    """The summary of `model`'s module; `path` and `locate` place its sites. What a
    function runs on its parameters themselves (not on their elements) is said of the
    functions the module maps over structures, or with `every_parameter` of all."""
    builder = _Summarizer(model, path, locate, None if every_parameter else mapped_functions(model))
    scopes = {
        name: scope
        for scope in model.scopes
        if isinstance(scope.node, cst.FunctionDef)
        and (name := local_name(model, scope.node)) is not None
    }
    candidates = {name: builder.forward_candidates(scope) for name, scope in scopes.items()}
    applies = {name: builder.applies(scope) for name, scope in scopes.items()}
    kept = _forwards_that_can_apply(model.module_name, candidates, applies)
    functions: dict[str, FunctionSummary] = {}
    for name, scope in scopes.items():
        summary = builder.function(scope, applies[name], kept[name])
        if summary.has_facts:
            functions[name] = summary
    aliases = {name: _absolute(model, target) for name, target in model.imports.aliases().items()}
    # What it binds the names it imports to (nothing imports a notebook; a module with
    # nothing to parse binds nothing the analysis saw).
    tree = model.text_tree() if model.module.body and not model.is_notebook else None
    bindings = (
        module_bindings(tree, model.module_name, is_package=model.is_package, imported=aliases)
        if tree is not None
        else None
    )
    bases, classes = _classes(model)
    return ModuleSummary(
        module=model.module_name,
        functions=functions,
        aliases=aliases,
        star_imports=tuple(_absolute(model, m) for m in model.imports.star_modules),
        bases=bases,
        classes=classes,
        alternatives=bindings.alternatives if bindings is not None else {},
        exports=bindings.exports if bindings is not None else None,
    )


def builder_summary(
    model: FileModel, defined: cst.FunctionDef | cst.ClassDef
) -> FunctionSummary | None:
    """The summary of a function of a module that has no other fact to give (no trigger,
    or its definition was cut out of the module's parse): what it builds, if it builds a
    Keras model or layer. For a class, what constructing it builds: an instance, if the
    class is a Keras model or layer subclass."""
    if isinstance(defined, cst.ClassDef):
        built = Builders(model).instance_of(defined)
        return FunctionSummary((), builds=built) if built else None
    built = Builders(model).built_by(defined)
    return FunctionSummary(_parameter_names(defined), builds=built) if built else None


@dataclass(frozen=True)
class _Candidate:
    """A parameter handed on, unfiltered, to argument `key` of `callee` by `call`."""

    param: int
    callee: Callee
    key: str
    call: cst.Call


def _forwards_that_can_apply(
    module: str,
    candidates: dict[str, list[_Candidate]],
    applies: dict[str, list[Applied]],
) -> dict[str, list[_Candidate]]:
    """The forwards worth a fact: to a function of another module (whose summary is not
    known here), or to one of this module that applies, itself or through its own kept
    forwards. Most functions hand their parameters to helpers that never apply gradients."""
    prefix = f"{module}."
    applying = {name for name, found in applies.items() if found}
    changed = True
    while changed:
        changed = False
        for name, found in candidates.items():
            if name in applying:
                continue
            for candidate in found:
                target = candidate.callee.target
                local = target[len(prefix) :] if target.startswith(prefix) else None
                if local is None or local not in candidates or local in applying:
                    applying.add(name)
                    changed = True
                    break
    return {
        name: [
            c
            for c in found
            if not c.callee.target.startswith(prefix)
            or c.callee.target[len(prefix) :] not in candidates
            or c.callee.target[len(prefix) :] in applying
        ]
        for name, found in candidates.items()
    }


class _Summarizer:
    def __init__(
        self, model: FileModel, path: str, locate: Locate, mapped: frozenset[str] | None
    ) -> None:
        self.model = model
        self.mapped = mapped  # the functions whose parameters themselves count (None: all)
        self.path = path
        self.locate = locate
        self._applies_by_scope: dict[Scope, list[ApplyCall]] = {}
        for apply in gradient_applies(model):
            self._applies_by_scope.setdefault(apply.scope, []).append(apply)
        self._calls_by_scope: dict[Scope, list[CallSite]] = {}
        for site in model.calls:
            self._calls_by_scope.setdefault(site.scope, []).append(site)
        self._builders = Builders(model)
        # Only a function that creates a named tape can hand one back.
        self._with_tapes = {tape.scope for tape in model.tapes if tape.name is not None}

    def function(
        self, scope: Scope, applies: list[Applied], forwards: list[_Candidate]
    ) -> FunctionSummary:
        function = scope.node
        assert isinstance(function, cst.FunctionDef)
        params = _parameter_names(function)
        return FunctionSummary(
            params=params,
            returns=self._returns(scope, function),
            applies=tuple(applies),
            forwards=tuple(self._forward(candidate, function) for candidate in forwards),
            spends=self._spends(scope, function, params),
            builds=self._builders.built_by(function),
            transforms=self._transforms(scope, function),
            hands_back=self._hands_back(scope, function),
        )

    def _transforms(self, scope: Scope, function: cst.FunctionDef) -> tuple[Transformed, ...]:
        calls = [site.node for site in self._calls_by_scope.get(scope, [])]
        return tuple(
            Transformed(
                found.param,
                found.each,
                self._site(found.op, f"`{_code(self.model, found.op)}`", function),
            )
            for found in parameter_transforms(
                self.model,
                scope,
                calls,
                itself=self.mapped is None or function.name.value in self.mapped,
            )
        )

    def _hands_back(self, scope: Scope, function: cst.FunctionDef) -> tuple[HandedBack, ...]:
        if scope not in self._with_tapes:
            return ()
        return tuple(
            HandedBack(
                handed.part,
                {Tri.YES: True, Tri.NO: False}.get(handed.tape.persistent),
                handed.tape.max_calls,
                records_only_toy_values(self.model, handed.tape),
                self._site(handed.tape.ctor, f"`{handed.tape.name}`", function),
            )
            for handed in tapes_handed_back(self.model, scope)
        )

    def _spends(
        self, scope: Scope, function: cst.FunctionDef, params: tuple[str, ...]
    ) -> tuple[Spent, ...]:
        calls = (site.node for site in self._calls_by_scope.get(scope, []))
        spent = spent_parameters(self.model, scope, params, calls)
        return tuple(
            Spent(
                index, self._site(spent[name], f"`{_spelled(self.model, spent[name])}`", function)
            )
            for index, name in enumerate(params)
            if name in spent
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
    def applies(self, scope: Scope) -> list[Applied]:
        function = scope.node
        assert isinstance(function, cst.FunctionDef)
        found: list[Applied] = []
        for apply in self._applies_by_scope.get(scope, []):
            flow = applied_gradients(self.model, apply, summary=True)
            if flow.opaque or not flow.params or handles_none(self.model, flow, apply.stmt):
                continue
            site = self._site(apply.node, f"`{_spelled(self.model, apply.node)}`", function)
            found += [Applied(param, site) for param in sorted(flow.params)]
        return found

    def forward_candidates(self, scope: Scope) -> list[_Candidate]:
        function = scope.node
        assert isinstance(function, cst.FunctionDef)
        found: list[_Candidate] = []
        params = set(_parameter_names(function))
        for site in self._calls_by_scope.get(scope, []):
            if not any(_names_a_parameter(arg.value, params) for arg in site.node.args):
                continue  # hands on nothing that could come from a parameter
            callee = callee_of(self.model, site.node)
            if callee is None or outside_project(callee.target):
                continue
            for key, arg in keyed_arguments(site.node, callee):
                flow = gradients_of(self.model, arg.value, scope, summary=True)
                if flow.opaque or not flow.params or flow.origins or flow.calls:
                    continue
                if handles_none(self.model, flow, site.stmt):
                    continue
                found += [
                    _Candidate(param, callee, key, site.node) for param in sorted(flow.params)
                ]
        return found

    def _forward(self, candidate: _Candidate, function: cst.FunctionDef) -> Forward:
        label = f"`{_spelled(self.model, candidate.call)}`"
        where = self._site(candidate.call, label, function)
        return Forward(candidate.param, candidate.callee.target, candidate.key, where)

    # ------------------------------------------------------------------ conversion
    def _flow(self, flow: GradientFlow, function: cst.FunctionDef) -> Flow:
        return Flow(
            raw=tuple(
                [
                    self._raw_site(origin)
                    for origin in flow.origins
                    if not no_gradient_lost_silently(self.model, origin)
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
        line, column, cell, path = self.locate(node)
        if function is not None:
            label = f"{label} in `{function.name.value}`"
        return Site(path or self.path, line, column, label, cell)


def _names_a_parameter(value: cst.BaseExpression, params: set[str]) -> bool:
    """`grads`, `grads[:n]`, `list(grads)`: an argument that may pass a parameter on."""
    if isinstance(value, cst.Subscript):
        value = value.value
    elif isinstance(value, cst.Call) and value.args:
        value = value.args[0].value
    return isinstance(value, cst.Name) and value.value in params


def _parameter_names(function: cst.FunctionDef) -> tuple[str, ...]:
    params = function.params
    return tuple(
        p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)
    )


def _returns(function: cst.FunctionDef) -> list[cst.Return]:
    """The `return` statements of `function` itself, not of functions nested in it."""
    return [
        small
        for stmt in in_execution_order(statements(function.body))
        if isinstance(stmt, (cst.SimpleStatementLine, cst.SimpleStatementSuite))
        for small in stmt.body
        if isinstance(small, cst.Return)
    ]


def _owner_name(scope: Scope | None) -> str | None:
    while scope is not None:
        if isinstance(scope.node, cst.FunctionDef):
            return scope.node.name.value
        scope = scope.parent
    return None


def _code(model: FileModel, node: cst.CSTNode) -> str:
    return " ".join(model.module.code_for_node(node).split())


def _spelled(model: FileModel, call: cst.Call) -> str:
    return " ".join(model.module.code_for_node(call.func).split())


def _absolute(model: FileModel, qualified: str) -> str:
    return absolute(qualified, model.module_name, is_package=model.is_package)


def _classes(model: FileModel) -> tuple[dict[str, tuple[str, ...]], dict[str, tuple[str, ...]]]:
    """Each class of the module with the qualified names of its bases (`""` for one the
    module cannot name; `object` left out), and with the names its body binds: from the
    whole text, since the parse may have left out an override that names no tape."""
    facts = module_classes(model)
    bases: dict[str, tuple[str, ...]] = {}
    for name, found in facts.classes.items():
        bases[name] = tuple(
            facts.qualify(base, model.module_name) or ""
            for base in found.bases
            if not has_no_methods(ast.unparse(base))
        )
    return bases, {name: tuple(sorted(found.binds)) for name, found in facts.classes.items()}
