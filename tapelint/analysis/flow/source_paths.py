"""Where a gradient source is read under another spelling: the paths that stand for it in
the tape's scope and in the functions and models its values are handed to.

A source written as a name may be an entry of a container (`W1 = parameters["W1"]`), and
the model may read it from there (`forward_propagation(X, parameters)`, whose body reads
`parameters["W1"]`). A path is a spelling of the source as a string: `W1`,
`parameters['W1']`, `self.log_alpha`. Handing a path's root to a function of the file
renames it to the parameter it lands in (`parameters['W1']` becomes `params['W1']` in
`def forward(X, params)`), so the function's returns can be walked for the same source.

Used by `differentiability` only where counting a source as used can only make a rule
more quiet (the "every source feeds the loss" evidence of TAP401 and TAP403).
"""

from __future__ import annotations

import re

import libcst as cst

from tapelint.analysis.calls.callees import plain_function
from tapelint.analysis.file_model.expressions import argument_value
from tapelint.analysis.file_model.model import DefKind, FileModel, Scope
from tapelint.analysis.project_model.names import dotted_name

_FUNCTIONAL_MODELS = frozenset({"keras.Model", "keras.models.Model"})


def subscript_path(expr: cst.BaseExpression) -> str | None:
    """`parameters['W1']` for `parameters["W1"]`: a name (or dotted name) indexed by one
    string literal."""
    if not isinstance(expr, cst.Subscript) or len(expr.slice) != 1:
        return None
    index = expr.slice[0].slice
    if not isinstance(index, cst.Index) or not isinstance(index.value, cst.SimpleString):
        return None
    root = dotted_name(expr.value)
    key = index.value.evaluated_value
    if root is None or not isinstance(key, str):
        return None
    return f"{root}[{key!r}]"


def entry_aliases(model: FileModel, source: cst.BaseExpression) -> frozenset[str]:
    """The container entry a source name is bound to once (`W1 = parameters["W1"]`), when
    the module neither writes to the container nor calls a method on it
    (`parameters["W1"] = ...`, `parameters.update(...)`), so both spellings hold the same
    variable."""
    if not isinstance(source, cst.Name):
        return frozenset()
    defs = list(model.defs_of(source))
    if len(defs) != 1 or defs[0].kind is not DefKind.ASSIGN or defs[0].value is None:
        return frozenset()
    path = subscript_path(defs[0].value)
    if path is None:
        return frozenset()
    root = path.partition("[")[0]
    if mutation_pattern(root).search(model.source_text):
        return frozenset()
    return frozenset({path})


def mutation_pattern(name: str) -> re.Pattern[str]:
    """`name.append(...)`, `name.update(...)`, `name[key] = ...`: the container's contents
    are not what its definition shows."""
    return re.compile(rf"\b{re.escape(name)}\s*(\.\s*\w+\s*\(|\[[^\]\n]*\]\s*=(?!=))")


def renamed_in_callee(
    model: FileModel, call: cst.Call, paths: frozenset[str]
) -> tuple[cst.FunctionDef, frozenset[str]] | None:
    """The function of the file `call` runs, with the paths it receives the source under:
    a path's root handed to one of its parameters (`forward(X, parameters)` with the path
    `parameters['W1']` gives `params['W1']` in `def forward(x, params)`). None when the
    call runs no such function or hands it no path's root."""
    function = plain_function(model, call)
    if function is None:
        return None
    parameters = function.params
    positional = [p.name.value for p in (*parameters.posonly_params, *parameters.params)]
    keywords = {p.name.value for p in (*positional_params(parameters), *parameters.kwonly_params)}
    renamed: set[str] = set()
    index = 0
    for arg in call.args:
        if arg.star:
            return None
        if arg.keyword is not None:
            target = arg.keyword.value if arg.keyword.value in keywords else None
        else:
            target = positional[index] if index < len(positional) else None
            index += 1
        root = dotted_name(arg.value) if isinstance(arg.value, cst.Name) else None
        if target is None or root is None:
            continue
        for path in paths:
            rest = _rest_after_root(path, root)
            if rest is not None:
                renamed.add(target + rest)
    return (function, frozenset(renamed)) if renamed else None


def positional_params(parameters: cst.Parameters) -> tuple[cst.Param, ...]:
    return (*parameters.posonly_params, *parameters.params)


def _rest_after_root(path: str, root: str) -> str | None:
    """`['W1']` for `parameters['W1']` and root `parameters`; None when `path` is not
    rooted there (a path equal to the root is the source itself, followed otherwise)."""
    if path.startswith(root) and path[len(root) : len(root) + 1] in ("[", "."):
        return path[len(root) :]
    return None


def functional_outputs(
    model: FileModel, func: cst.BaseExpression
) -> tuple[cst.BaseExpression, Scope] | None:
    """`outputs` of `model = keras.Model(inputs, outputs)` when that one binding is what
    `func` names, with the scope of the binding: calling the model computes its outputs
    from the layers they were built with."""
    if not isinstance(func, cst.Name):
        return None
    defs = list(model.defs_of(func))
    if len(defs) != 1 or defs[0].kind is not DefKind.ASSIGN:
        return None
    value = defs[0].value
    if not isinstance(value, cst.Call):
        return None
    if model.imports.qualify(value.func) not in _FUNCTIONAL_MODELS:
        return None
    outputs = argument_value(value, 1, "outputs")
    return (outputs, defs[0].scope) if outputs is not None else None


def scope_of_function(model: FileModel, function: cst.FunctionDef) -> Scope | None:
    return next((scope for scope in model.scopes if scope.node is function), None)


def lambda_parameters(node: cst.Lambda) -> frozenset[str]:
    parameters = node.params
    every = (
        *parameters.posonly_params,
        *parameters.params,
        *parameters.kwonly_params,
        *(p for p in (parameters.star_arg, parameters.star_kwarg) if isinstance(p, cst.Param)),
    )
    return frozenset(p.name.value for p in every)
