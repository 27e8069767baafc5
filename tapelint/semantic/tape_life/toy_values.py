"""Does a tape record only toy values, tensors spelled out in the code and tiny by
construction?

Guides, docstrings and unit tests differentiate values written out in the source:
`x = tf.Variable(3.0)`, `w = tf.Variable(tf.random.normal((3, 2)))`,
`x = tf.constant([[1., 2., 3.]])`, `x = tf.random.normal([7, 5])`. What a tape holds after
recording those (even through a small layer) is a few hundred bytes: keeping it alive is not
worth a finding. A toy value is

- a number literal, or a list or tuple of them;
- `tf.constant`, `tf.Variable`, `tf.convert_to_tensor`, `np.array` or `np.asarray` of a toy
  value;
- a random or filled tensor whose shape is written out (`tf.random.normal([7, 5])`,
  `tf.zeros((3,))`, `np.random.rand(4, 2)`);
- arithmetic on toy values;

with at most `MAX_ELEMENTS` elements. A grid (`np.linspace(0, 1, 50)`) is not a toy value: its
size is a resolution that grows with the problem. A tape records only toy values when
every value its block reads from outside the block is toy; callees (a layer, a loss
function, `tf.square`) are not values, and a call without arguments (which may load data)
makes the recording not toy.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import libcst as cst

from tapelint.semantic.file_model.children import child_nodes
from tapelint.semantic.file_model.expressions import call_argument
from tapelint.semantic.file_model.model import Def, DefKind, FileModel, TapeInstance
from tapelint.semantic.project_model.names import is_numpy, is_tensorflow

MAX_ELEMENTS = 1000

_WRAPPERS = {  # callee -> (position, keyword) of the wrapped value
    "tensorflow.constant": (0, "value"),
    "tensorflow.Variable": (0, "initial_value"),
    "tensorflow.convert_to_tensor": (0, "value"),
    "numpy.array": (0, "object"),
    "numpy.asarray": (0, "a"),
}
_SHAPED = {  # callee -> (position, keyword) of the shape
    "tensorflow.random.normal": (0, "shape"),
    "tensorflow.random.uniform": (0, "shape"),
    "tensorflow.random.truncated_normal": (0, "shape"),
    "tensorflow.zeros": (0, "shape"),
    "tensorflow.ones": (0, "shape"),
    "numpy.zeros": (0, "shape"),
    "numpy.ones": (0, "shape"),
    "numpy.random.normal": (2, "size"),
    "numpy.random.uniform": (2, "size"),
}
_DIMENSIONS_AS_ARGUMENTS = frozenset({"numpy.random.rand", "numpy.random.randn"})
_CONSTANTS = frozenset({"True", "False", "None"})


def records_only_toy_values(model: FileModel, tape: TapeInstance) -> bool:
    """Every value the tape's blocks read from outside themselves is a toy value. For a
    tape a helper handed back, what its summary says of the helper's blocks, and no block
    of its own here."""
    if tape.handed_back is not None:
        return tape.handed_back.fact.toy and not tape.blocks
    sizes = _ToySizes(model)
    for block in tape.blocks:
        callees: set[cst.CSTNode] = set()
        for node in _nodes(block.body):
            if isinstance(node, cst.Call):
                root = _root(node.func)
                callees.add(root)
                if not node.args and not _is_library(model, node.func):
                    on_tape = any(d.tape is tape for d in model.defs_of(root))
                    if not on_tape:
                        return False
        for node in _nodes(block.body):
            if not isinstance(node, cst.Name) or node in callees or node.value in _CONSTANTS:
                continue
            use = model.uses_by_node.get(node)
            if use is None:
                continue  # not a read: an attribute's name, a keyword, a target
            if not use.defs:
                return False
            for d in use.defs:
                if d.tape is tape or d.kind in (DefKind.IMPORT, DefKind.DEFINITION):
                    continue
                if any(f.node is block for f in d.ctx):
                    continue  # computed in the block from what it reads
                if sizes.of_def(d) is None:
                    return False
    return bool(tape.blocks)


class _ToySizes:
    """Element counts of toy values (None: not a toy value), with memory."""

    def __init__(self, model: FileModel) -> None:
        self.model = model
        self._defs: dict[Def, int | None] = {}

    def of_def(self, d: Def) -> int | None:
        if d not in self._defs:
            self._defs[d] = None  # a cycle is not a toy value
            if d.kind is DefKind.ASSIGN and d.value is not None:
                self._defs[d] = self.of(d.value)
        return self._defs[d]

    def of(self, expr: cst.BaseExpression) -> int | None:
        size: int | None = None
        if isinstance(expr, (cst.Integer, cst.Float, cst.Imaginary)):
            size = 1
        elif isinstance(expr, cst.UnaryOperation):
            size = self.of(expr.expression)
        elif isinstance(expr, (cst.List, cst.Tuple)):
            size = _total(self.of(e.value) for e in expr.elements)
        elif isinstance(expr, cst.BinaryOperation):
            left, right = self.of(expr.left), self.of(expr.right)
            size = None if left is None or right is None else max(left, right)
        elif isinstance(expr, cst.Name):
            defs = self.model.defs_of(expr)
            sizes = [self.of_def(d) for d in defs]
            size = None if not sizes or None in sizes else max(s for s in sizes if s is not None)
        elif isinstance(expr, cst.Call):
            size = self._of_call(expr)
        return size if size is not None and size <= MAX_ELEMENTS else None

    def _of_call(self, call: cst.Call) -> int | None:
        qualified = self.model.imports.qualify(call.func) or ""
        if qualified in _WRAPPERS:
            arg = call_argument(call, *_WRAPPERS[qualified])
            return self.of(arg.value) if arg is not None else None
        if qualified in _SHAPED:
            arg = call_argument(call, *_SHAPED[qualified])
            return _shape_size(arg.value) if arg is not None else None
        if qualified in _DIMENSIONS_AS_ARGUMENTS:
            dims = [_shape_size(a.value) for a in call.args if a.keyword is None]
            return _product(dims) if dims else 1
        return None


def _shape_size(shape: cst.BaseExpression) -> int | None:
    """Elements of a tensor with a written-out shape: `7`, `[7, 5]`, `(3,)`."""
    if isinstance(shape, cst.Integer):
        return shape.evaluated_value
    if isinstance(shape, (cst.List, cst.Tuple)):
        return _product([_shape_size(e.value) for e in shape.elements])
    return None


def _product(sizes: list[int | None]) -> int | None:
    return None if None in sizes else math.prod(s for s in sizes if s is not None)


def _total(sizes: Iterator[int | None]) -> int | None:
    collected = list(sizes)
    return None if None in collected else sum(s for s in collected if s is not None)


def _is_library(model: FileModel, func: cst.BaseExpression) -> bool:
    qualified = model.imports.qualify(func)
    return is_tensorflow(qualified) or is_numpy(qualified)


def _root(func: cst.BaseExpression) -> cst.BaseExpression:
    while isinstance(func, cst.Attribute):
        func = func.value
    return func


def _nodes(body: cst.BaseSuite) -> Iterator[cst.CSTNode]:
    """Every node of a block, not entering nested definitions and lambdas."""
    pending: list[cst.CSTNode] = [body]
    while pending:
        node = pending.pop()
        yield node
        if not isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            pending.extend(child_nodes(node))
