"""Test code is not training code: by default the cost and training-quality rules are
ignored in test files (config.DEFAULT_PER_FILE_IGNORES), the correctness rules are not, and
setting `per-file-ignores` replaces the default, as any per-file-ignores does."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tapelint.settings.config import load_settings
from tapelint.settings.globs import Globs
from tapelint.settings.policies.test_code import (
    DEFAULT_PER_FILE_IGNORES,
    TEST_CODE_IGNORES,
    is_test_path,
)

# A persistent tape asked once over a model (TAP102) and an unwatched constant (TAP201).
STEP = """\
import tensorflow as tf


def model_gradients(model, x):
    with tf.GradientTape(persistent=True) as tape:
        y = tf.reduce_sum(model(x))
    return tape.gradient(y, model.trainable_variables)


def input_gradient():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(x * x)
    return tape.gradient(y, x)
"""


def _codes(root: Path) -> dict[str, set[str]]:
    process = subprocess.run(
        [
            sys.executable,
            "-m",
            "tapelint",
            "check",
            ".",
            "--no-cache",
            "--exit-zero",
            "--output-format",
            "json",
        ],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    found: dict[str, set[str]] = {}
    for record in json.loads(process.stdout):
        found.setdefault(Path(record["path"]).as_posix(), set()).add(record["code"])
    return found


@pytest.mark.parametrize(
    "path", ["tests/test_grad.py", "pkg/grad_test.py", "integration_test/grad.py", "conftest.py"]
)
def test_cost_rules_are_quiet_in_test_code(tmp_path, path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / path).write_text(STEP)
    (tmp_path / "train.py").write_text(STEP)
    codes = _codes(tmp_path)
    assert codes["train.py"] == {"TAP102", "TAP201"}
    assert codes[path] == {"TAP201"}  # the correctness rule still runs there


def test_setting_per_file_ignores_replaces_the_default(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.tapelint]\nper-file-ignores = {}\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_grad.py").write_text(STEP)
    assert _codes(tmp_path)["tests/test_grad.py"] == {"TAP102", "TAP201"}


# The repro: a test whose persistent tape over toy values answers one gradient call.
TOY_TEST = """\
import tensorflow as tf


def test_gradient():
    x = tf.Variable(1.0)
    with tf.GradientTape(persistent=True) as tape:
        y = x * x
    assert tape.gradient(y, x) == 2.0
"""


def test_an_empty_per_file_ignores_checks_a_tests_toy_tape_like_other_code(tmp_path):
    """`per-file-ignores = {}` turns off the test policy in the analysis too, not only the
    ignores: a toy tape in a test (file or function) is reported as it is elsewhere."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_train.py").write_text(TOY_TEST)
    (tmp_path / "train.py").write_text(TOY_TEST.replace("test_gradient", "check_gradient"))
    (tmp_path / "lib.py").write_text(TOY_TEST)  # a pytest-style test kept beside the code
    assert "tests/test_train.py" not in _codes(tmp_path)  # by default, quiet in tests
    (tmp_path / "pyproject.toml").write_text("[tool.tapelint]\nper-file-ignores = {}\n")
    codes = _codes(tmp_path)
    assert codes["train.py"] == {"TAP102"}
    assert codes["tests/test_train.py"] == {"TAP102"}
    assert codes["lib.py"] == {"TAP102"}


def test_the_default_is_what_settings_start_from(tmp_path):
    config = tmp_path / "pyproject.toml"
    config.write_text("[tool.tapelint]\npreview = false\n")
    assert load_settings(config).per_file_ignores == DEFAULT_PER_FILE_IGNORES
    assert {codes for _, codes in DEFAULT_PER_FILE_IGNORES} == {TEST_CODE_IGNORES}


@pytest.mark.parametrize(
    "path",
    [
        "tests/a.py",
        "pkg/test/a.py",
        "pkg/testing/a.py",
        "integration_test/models/bert.py",
        "pkg/unit_tests/a.py",
        "test_train.py",
        "pkg/train_test.py",
        "pkg/train_tests.py",
        "conftest.py",
        "pkg/test_util.py",
        "tf_keras/dtensor/integration_test_utils.py",
        "pkg/testing_utils.py",
        "train.py",
        "pkg/latest_util.py",
        "pkg/contest.py",
        "pkg/attest/a.py",
        "pkg/testimony.py",
    ],
)
def test_the_default_ignores_cover_exactly_the_test_paths(path):
    """The default per-file-ignores and the test-code evidence of TAP401 (`is_test_path`)
    name the same files test code."""
    globs = Globs([pattern for pattern, _ in DEFAULT_PER_FILE_IGNORES])
    assert globs.match(path) == is_test_path(path)


# The same step written as a module's own self-test, and as a pytest-style test kept beside
# the code; an evaluation function called `test` that asserts nothing is not a test.
SELF_TESTS = """\
import tensorflow as tf


def TestModelGradients(model, x):
    with tf.GradientTape(persistent=True) as tape:
        y = tf.reduce_sum(model(x))
    return tape.gradient(y, model.trainable_variables)


def test_model_gradients(model, x):
    with tf.GradientTape(persistent=True) as tape:
        y = tf.reduce_sum(model(x))
    assert tape.gradient(y, model.trainable_variables)


def test(model, x):
    with tf.GradientTape(persistent=True) as tape:
        y = tf.reduce_sum(model(x))
    return tape.gradient(y, model.trainable_variables)
"""


CHECK = ("-m", "tapelint", "check", "--no-cache", "--exit-zero", "--output-format", "json")


def _lines_of(root: Path, path: str, code: str) -> list[int]:
    process = subprocess.run(
        [sys.executable, *CHECK, "--select", code, path],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    return sorted(record["line"] for record in json.loads(process.stdout))


def test_cost_rules_are_quiet_in_tests_written_in_other_modules(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (tmp_path / "layers.py").write_text(SELF_TESTS)
    assert _lines_of(tmp_path, "layers.py", "TAP102") == [17]  # only `test`, no assert


def test_setting_per_file_ignores_checks_tests_in_other_modules_too(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.tapelint]\nper-file-ignores = {}\n")
    (tmp_path / "layers.py").write_text(SELF_TESTS)
    assert _lines_of(tmp_path, "layers.py", "TAP102") == [5, 11, 17]
