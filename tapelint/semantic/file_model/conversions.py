"""Which calls convert a value to NumPy (leaving TensorFlow, and so the tape)."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from tapelint.semantic.file_model.expressions import argument_value, call_argument
from tapelint.semantic.project_model.names import dotted_name, is_numpy

_NUMPY_METHODS = frozenset({"numpy", "item", "tolist"})
# Keras inference entry points: they run the model outside the caller's tape and return
# NumPy arrays. The operand is the model they are called on.
PREDICT_METHODS = frozenset({"predict", "predict_on_batch"})
_BRIDGES = {
    # qualified name -> (position, keyword) of the tensor operand
    "tensorflow.numpy_function": (1, "inp"),
    "tensorflow.py_function": (1, "inp"),
    "keras.ops.convert_to_numpy": (0, "x"),
}


@dataclass(frozen=True)
class Conversion:
    description: str  # how it is spelled, for messages: `np.mean()`, `.numpy()`
    operands: tuple[cst.BaseExpression, ...]  # the values converted
    # For `tf.py_function`: the Python function it runs (differentiable if that function
    # sticks to TensorFlow ops).
    function: cst.BaseExpression | None = None


def numpy_conversion(
    node: cst.Call, qualified: str | None, *, builtins_shadowed: bool
) -> Conversion | None:
    """`np.*(...)`, `tf.numpy_function`, `tf.py_function`, `float(x)` / `int(x)`,
    `x.numpy()` / `x.item()` / `x.tolist()`, `model.predict(x)` / `model.predict_on_batch(x)`
    (whether `model` is a Keras model is decided where the conversion is judged); None for
    any other call."""
    func = node.func
    if is_numpy(qualified):
        return Conversion(f"{dotted_name(func)}()", tuple(arg.value for arg in node.args))
    if qualified in _BRIDGES:
        position, keyword = _BRIDGES[qualified]
        arg = call_argument(node, position, keyword)
        if arg is None:
            return None
        function = argument_value(node, 0, "func") if qualified.endswith("py_function") else None
        return Conversion(f"{dotted_name(func)}()", (arg.value,), function)
    if (
        isinstance(func, cst.Name)
        and func.value in ("float", "int")
        and len(node.args) == 1
        and not builtins_shadowed
    ):
        return Conversion(f"{func.value}()", (node.args[0].value,))
    if isinstance(func, cst.Attribute) and func.attr.value in _NUMPY_METHODS and not node.args:
        return Conversion(f".{func.attr.value}()", (func.value,))
    if (
        isinstance(func, cst.Attribute)
        and func.attr.value in PREDICT_METHODS
        and node.args
        and not (isinstance(func.value, cst.Name) and func.value.value in ("self", "cls"))
    ):
        return Conversion(f".{func.attr.value}()", (func.value,))
    return None
