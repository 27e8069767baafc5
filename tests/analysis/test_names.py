import libcst as cst
import pytest

from tapelint.semantic.project_model.names import ImportTable, is_gradient_tape


def _table(source: str) -> ImportTable:
    table = ImportTable()
    for stmt in cst.parse_module(source).body:
        for small in stmt.body:
            if isinstance(small, cst.Import):
                table.add_import(small)
            elif isinstance(small, cst.ImportFrom):
                table.add_import_from(small)
    return table


@pytest.mark.parametrize(
    ("imports", "expression", "qualified"),
    [
        ("import tensorflow as tf", "tf.GradientTape", "tensorflow.GradientTape"),
        ("import tensorflow", "tensorflow.GradientTape", "tensorflow.GradientTape"),
        ("from tensorflow import GradientTape as GT", "GT", "tensorflow.GradientTape"),
        ("import tensorflow.compat.v2 as tf", "tf.GradientTape", "tensorflow.GradientTape"),
        ("import tensorflow as tf", "tf.keras.optimizers.Adam", "keras.optimizers.Adam"),
        ("from tensorflow import keras", "keras.optimizers.SGD", "keras.optimizers.SGD"),
        ("import keras", "keras.optimizers.SGD", "keras.optimizers.SGD"),
        ("import numpy as onp", "onp.mean", "numpy.mean"),
        (
            "import tensorflow.experimental.numpy as np",
            "np.mean",
            "tensorflow.experimental.numpy.mean",
        ),
        ("import tensorflow as tf", "np.mean", None),
    ],
)
def test_qualify_resolves_through_imports(imports, expression, qualified):
    assert _table(imports).qualify(cst.parse_expression(expression)) == qualified


@pytest.mark.parametrize(
    ("name", "is_tape"),
    [
        ("tensorflow.GradientTape", True),
        ("tensorflow.autodiff.GradientTape", True),
        ("tensorflow.python.eager.backprop.GradientTape", True),
        ("torch.GradientTape", False),
        ("tensorflow.GradientTapeFactory", False),
        (None, False),
    ],
)
def test_gradient_tape_recognised_by_qualified_name(name, is_tape):
    assert is_gradient_tape(name) is is_tape
