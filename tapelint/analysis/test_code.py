"""Is code part of a test suite? Decided from the file's path and the class a function is in.

A test module is named like pytest's and unittest's defaults (`test_*.py`, `*_test.py`,
`*_tests.py`, `conftest.py`), is a test-support module (`test_util.py`,
`integration_test_utils.py`, `testing_utils.py`) or sits in a directory named `test`,
`tests`, `testing` or `*_test(s)` (`integration_test/`); a method of a class derived from
a `...TestCase` (`tf.test.TestCase`, `unittest.TestCase`, `parameterized.TestCase`) is test
code wherever it is.

Tests run a training step once to check that it runs, on models where every variable is
connected by construction, so a rule that reports what *may* go wrong some day (TAP401's
None gradients) asks for evidence there: see `disconnection`.
"""

from __future__ import annotations

import re

import libcst as cst

from tapelint.analysis.model import FileModel, Scope
from tapelint.analysis.names import dotted_name

_TEST_PATH = re.compile(
    r"(?:^|/)(?:tests?|testing|[^/]*_tests?)/"
    r"|(?:^|/)(?:test_[^/]*|[^/]*_tests?|conftest|(?:[^/]*_)?test(?:ing)?_utils?)\.py$"
)


def is_test_path(path: str) -> bool:
    """Whether a file's path names a test module (`-` for stdin is not one)."""
    return bool(_TEST_PATH.search(path.replace("\\", "/")))


def is_test_code(model: FileModel, scope: Scope) -> bool:
    """Whether code in `scope` belongs to a test suite: the file is a test module, or the
    scope is (inside) a method of a `TestCase` class."""
    if model.is_test_file:
        return True
    current: Scope | None = scope
    while current is not None:
        node = current.node
        if isinstance(node, cst.ClassDef) and any(
            (dotted_name(base.value) or "").endswith("TestCase") for base in node.bases
        ):
            return True
        current = current.parent
    return False
