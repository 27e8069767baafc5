"""Which code belongs to a test suite, and the evidence TAP401 asks for there."""

from __future__ import annotations

import libcst as cst
import pytest
from tapelint.rules.updates._disconnection import discarded_output

from tapelint.semantic.file_model.test_code import is_test_code
from tapelint.settings.policies.test_code import is_test_path
from tests.analysis.helpers import code, model_of


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("tests/train.py", True),
        ("pkg/test/helpers.py", True),
        ("src/testing/fakes.py", True),
        ("test_train.py", True),
        ("pkg/model_test.py", True),
        ("pkg/model_tests.py", True),
        ("conftest.py", True),
        ("C:\\repo\\tests\\train.py", True),
        ("train.py", False),
        ("pkg/testbed.py", False),
        ("latest/train.py", False),
        ("contest.py", False),
        ("attest_test_data/train.py", False),
        ("-", False),
    ],
)
def test_test_paths(path, expected):
    assert is_test_path(path) is expected


def test_testcase_methods_are_test_code_in_any_module():
    model = model_of(
        "import tensorflow as tf\n"
        "class StepTest(tf.test.TestCase):\n"
        "    def test_step(self):\n"
        "        f = lambda: 1\n"
        "def train():\n"
        "    pass\n"
    )
    functions = {s.node.name.value: s for s in model.scopes if isinstance(s.node, cst.FunctionDef)}
    assert is_test_code(model, functions["test_step"])
    assert not is_test_code(model, functions["train"])
    (inner,) = [s for s in model.scopes if isinstance(s.node, cst.Lambda)]
    assert is_test_code(model, inner)


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        ("    main, _ = model(x)\n    loss = main\n", "main, _ = model(x)"),
        ("    main, *_rest = model(x)\n    loss = main\n", "main, *_rest = model(x)"),
        ("    loss = tf.reduce_sum(model(x)[0])\n", "model(x)[0]"),
        ("    main, aux = model(x)\n    loss = main + aux\n", None),
        ("    _loss = model(x)\n    loss = _loss\n", None),
        ("    n = tf.shape(x)[0]\n    loss = model(x) * n\n", None),
    ],
)
def test_discarded_outputs(block, expected):
    model = model_of(
        "import tensorflow as tf\n"
        "with tf.GradientTape() as tape:\n"
        + block
        + "g = tape.gradient(loss, model.trainable_variables)\n"
    )
    (tape,) = model.tapes
    found = discarded_output(model, tape)
    assert (code(model, found) if found is not None else None) == expected


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("def TestWaveAct():\n    pass\n", True),
        ("def Test_layer():\n    pass\n", True),
        ("class TestLayers:\n    def check(self):\n        pass\n", True),
        ("def test_shapes():\n    assert True\n", True),
        ("def test(model, data):\n    return model(data)\n", False),
        ("def test_step(model, x):\n    assert x is not None\n", False),
        ("def test_accuracy(model, data):\n    def inner():\n        assert data\n", False),
        ("def Tester():\n    pass\n", False),
        ("class Testbed:\n    pass\n", False),
        ("def contest():\n    assert True\n", False),
    ],
)
def test_definitions_that_name_themselves_tests(source, expected):
    model = model_of("import tensorflow as tf\n" + source)
    scopes = [s for s in model.scopes if isinstance(s.node, cst.FunctionDef | cst.ClassDef)]
    assert is_test_code(model, scopes[0]) is expected
