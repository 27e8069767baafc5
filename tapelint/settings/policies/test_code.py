"""Test code is not training code: which files are tests, and which rules stay quiet there.

The policy in full: a file whose path names a test module (`is_test_path`) is test code, and
so is a definition that names itself a test or sits in a `TestCase`, wherever it is
(`tapelint.semantic.file_model.test_code`). The rules about what a tape or a compiled step
costs, and about how well a model trains, stay quiet in test code while the default
`per-file-ignores` hold (`DEFAULT_PER_FILE_IGNORES`; `tapelint.run.per_file.Linters` applies
the same codes to tests kept in other files); the rules about results that are wrong run
everywhere. A rule that reports what *may* go wrong asks test code for evidence
(`tapelint.rules.updates`).
"""

from __future__ import annotations

import re

# A test's tape records a few toy values once, so the rules about what a tape or a compiled
# step costs (TAP102, TAP103, TAP104, TAP106, TAP107, TAP501), and about how well a model
# trains (TAP203's None gradients of non-trainable state, TAP303's training flag), have nothing
# worth a test author's time to say there. The rules about results that are wrong (TAP101,
# TAP105, TAP201, TAP301, TAP401 ...) still run in tests. The patterns are pytest's and
# unittest's naming defaults, test-support modules (`test_util.py`, `testing_utils.py`) and
# test directories (the same convention as `is_test_path` below). Like any
# `per-file-ignores`, setting the key replaces them (`per-file-ignores = {}` checks tests like
# the rest), and `extend-per-file-ignores` on the command line adds to them.
TEST_CODE_IGNORES = (
    "TAP102",
    "TAP103",
    "TAP104",
    "TAP106",
    "TAP107",
    "TAP203",
    "TAP303",
    "TAP501",
)
DEFAULT_PER_FILE_IGNORES: tuple[tuple[str, tuple[str, ...]], ...] = tuple(
    (pattern, TEST_CODE_IGNORES)
    for pattern in (
        "test_*.py",
        "*_test.py",
        "*_tests.py",
        "conftest.py",
        "test_util.py",
        "test_utils.py",
        "testing_util.py",
        "testing_utils.py",
        "*_test_util.py",
        "*_test_utils.py",
        "test/",
        "tests/",
        "testing/",
        "*_test/",
        "*_tests/",
    )
)

_TEST_PATH = re.compile(
    r"(?:^|/)(?:tests?|testing|[^/]*_tests?)/"
    r"|(?:^|/)(?:test_[^/]*|[^/]*_tests?|conftest|(?:[^/]*_)?test(?:ing)?_utils?)\.py$"
)


def is_test_path(path: str) -> bool:
    """Whether a file's path names a test module (`-` for stdin is not one)."""
    return bool(_TEST_PATH.search(path.replace("\\", "/")))
