"""Signs, in a tape's block, that some variables the gradient asks for may not reach the
loss: the evidence TAP401 asks for in test code.

The sign is a model output thrown away while the tape records: `prediction, _ = model(x)`
(any target named `_` or starting with `_`), or one output taken from a call of a model or
of a function of the file (`model(x)[0]`, `self.net(x)[0]`; a TensorFlow function's result,
`tf.shape(x)[0]`, is not an output). The head that computed what was thrown away then gets a
None gradient when its variables are among the sources.
"""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from tapelint.semantic.file_model.children import child_nodes
from tapelint.semantic.file_model.expressions import statements
from tapelint.semantic.file_model.model import FileModel, TapeInstance


def discarded_output(model: FileModel, tape: TapeInstance) -> cst.CSTNode | None:
    """The first place in the tape's blocks that throws a model output away, if any."""
    for block in tape.blocks:
        for node in _nodes(block.body):
            if _discards(model, node):
                return node
    return None


def _nodes(body: cst.BaseSuite) -> Iterator[cst.CSTNode]:
    """Every node of a block, not entering nested functions, classes and lambdas."""
    pending: list[cst.CSTNode] = list(statements(body))
    while pending:
        node = pending.pop(0)
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        yield node
        pending.extend(child_nodes(node))


def _discards(model: FileModel, node: cst.CSTNode) -> bool:
    if isinstance(node, cst.Assign) and isinstance(node.value, cst.Call):
        return any(
            isinstance(target.target, (cst.Tuple, cst.List)) and _has_throwaway(target.target)
            for target in node.targets
        )
    if isinstance(node, cst.Subscript) and isinstance(node.value, cst.Call):
        return model.imports.qualify(node.value.func) is None and _is_integer_index(node)
    return False


def _has_throwaway(target: cst.BaseExpression) -> bool:
    if isinstance(target, (cst.Tuple, cst.List)):
        return any(_has_throwaway(element.value) for element in target.elements)
    if isinstance(target, cst.StarredElement):
        return _has_throwaway(target.value)
    return isinstance(target, cst.Name) and target.value.startswith("_")


def _is_integer_index(subscript: cst.Subscript) -> bool:
    if len(subscript.slice) != 1:
        return False
    index = subscript.slice[0].slice
    return isinstance(index, cst.Index) and isinstance(index.value, cst.Integer)
