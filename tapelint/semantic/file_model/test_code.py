"""Is code part of a test suite? Decided from the file's path and the class a function is in.

A test module is named like pytest's and unittest's defaults (`test_*.py`, `*_test.py`,
`*_tests.py`, `conftest.py`), is a test-support module (`test_util.py`,
`integration_test_utils.py`, `testing_utils.py`) or sits in a directory named `test`,
`tests`, `testing` or `*_test(s)` (`integration_test/`). Wherever it is, a method of a class
derived from a `...TestCase` (`tf.test.TestCase`, `unittest.TestCase`,
`parameterized.TestCase`) is test code, and so is a definition that names itself a test:
a class or function named `Test...` (`TestWaveAct`: a module's own self-checks, run from its
`__main__` block), or a function named `test...` that asserts something (a pytest-style test
kept beside the code). A lowercase `test...` function without an `assert` is more often an
evaluation loop (`def test(model, dataset)`), and Keras's own `test_step` and
`test_on_batch` are evaluation steps, so neither is test code.

Tests run a training step once to check that it runs, on models where every variable is
connected by construction, so a rule that reports what *may* go wrong some day (a None
gradient applied unfiltered) asks for evidence there (`tapelint.rules.updates`).
"""

from __future__ import annotations

import re

import libcst as cst

from tapelint.semantic.file_model.model import FileModel, Scope
from tapelint.semantic.project_model.names import dotted_name

# `Test` then a capital, a digit or `_`: not `Tester`, `Testbed` or `TestimonyModel`.
_CAPITALISED_TEST = re.compile(r"Test(?:[A-Z0-9_]|$)")
_KERAS_EVALUATION = frozenset({"test_step", "test_on_batch", "test_function"})


def is_test_code(model: FileModel, scope: Scope) -> bool:
    """Whether code in `scope` belongs to a test suite: the file is a test module, or the
    scope is (inside) a definition that is a test (see the module's docstring). Never, when
    the configuration checks tests like other code (`FileModel.tests_relaxed`)."""
    if not model.tests_relaxed:
        return False
    if model.is_test_file:
        return True
    current: Scope | None = scope
    while current is not None:
        if isinstance(current.node, cst.FunctionDef | cst.ClassDef) and is_test_definition(
            current.node
        ):
            return True
        current = current.parent
    return False


def in_test_definition(model: FileModel, node: cst.CSTNode) -> bool:
    """Whether `node` lies inside a definition that is a test, in any file (a test module's
    own code is matched by its path instead:
    `tapelint.settings.policies.test_code.is_test_path`)."""
    path = model.statement_path(node) or ()
    return any(
        isinstance(stmt, cst.FunctionDef | cst.ClassDef) and is_test_definition(stmt)
        for stmt in path
    )


def is_test_definition(node: cst.FunctionDef | cst.ClassDef) -> bool:
    """A `TestCase` class, a `Test...` class or function, or a `test...` function that
    asserts (see the module's docstring)."""
    name = node.name.value
    if isinstance(node, cst.ClassDef):
        return bool(_CAPITALISED_TEST.match(name)) or any(
            (dotted_name(base.value) or "").endswith("TestCase") for base in node.bases
        )
    if _CAPITALISED_TEST.match(name):
        return True
    return name.startswith("test") and name not in _KERAS_EVALUATION and _asserts(node.body)


def _asserts(body: cst.BaseSuite) -> bool:
    """Whether a function's own body (not a nested definition's) has an `assert`."""
    finder = _AssertFinder()
    body.visit(finder)
    return finder.found


class _AssertFinder(cst.CSTVisitor):
    def __init__(self) -> None:
        self.found = False

    def visit_Assert(self, node: cst.Assert) -> bool:
        self.found = True
        return False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False
