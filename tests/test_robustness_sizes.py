"""Bounded work on large files (issue 20): a file larger than `max-file-size`, or whose code
would make more tokens than tapelint parses, is TAP001 without a libcst parse; the other
files are checked as usual."""

from __future__ import annotations

import libcst
import pytest

from tapelint.linter import engine
from tapelint.parsing.slicer import MAX_PARSE_TOKENS
from tapelint.settings.config import DEFAULT_MAX_FILE_SIZE
from tests.cli_helpers import LOSS_OUTSIDE, run_cli, write

TAPE = "import tensorflow as tf\n\nTape = tf.GradientTape\n"


@pytest.fixture
def parsed(monkeypatch):
    """The sizes of the sources libcst parses."""
    sizes: list[int] = []
    original = libcst.parse_module

    def parse_module(source, *args, **kwargs):
        sizes.append(len(source))
        return original(source, *args, **kwargs)

    monkeypatch.setattr(engine.cst, "parse_module", parse_module)
    return sizes


def test_a_file_over_the_default_size_limit_is_tap001_and_not_parsed(project, parsed):
    data = TAPE + 'WEIGHTS = "' + "0" * DEFAULT_MAX_FILE_SIZE + '"\n'
    write(project, "weights.py", data)
    write(project, "train.py", LOSS_OUTSIDE)
    result = run_cli("check", "--no-cache", "--jobs", "1")  # parses counted here
    assert result.exit_code == 1
    train, weights = result.stdout.splitlines()
    size = len(data.encode())
    assert weights == (
        f"weights.py:1:1: TAP001 cannot parse: {size:,} bytes, "
        f"more than max-file-size ({DEFAULT_MAX_FILE_SIZE:,})"
    )
    assert train.startswith("train.py:8:12: TAP101 ")
    assert max(parsed) < 10_000  # only train.py was parsed


def test_max_file_size_is_a_setting(project, parsed):
    write(project, "pyproject.toml", "[tool.tapelint]\nmax-file-size = 1_000\n")
    write(project, "train.py", LOSS_OUTSIDE + "\n# " + "x" * 1_000 + "\n")
    write(project, "small.py", LOSS_OUTSIDE)
    result = run_cli("check", "--no-cache", "--jobs", "1")  # parses counted here
    assert result.codes() == [("small.py", "TAP101"), ("train.py", "TAP001")]
    assert "more than max-file-size (1,000)" in result.stdout
    assert len(parsed) == 1


@pytest.mark.parametrize("value", ["0", "-5", '"4MB"', "true", "1.5"])
def test_a_max_file_size_that_is_not_a_positive_integer_is_a_config_error(project, value):
    write(project, "pyproject.toml", f"[tool.tapelint]\nmax-file-size = {value}\n")
    write(project, "train.py", LOSS_OUTSIDE)
    result = run_cli("check", "--no-cache")
    assert result.exit_code == 2
    assert "max-file-size: expected a positive number of bytes" in result.stderr


def test_a_data_literal_with_more_tokens_than_tapelint_parses_is_tap001(project, parsed):
    elements = MAX_PARSE_TOKENS // 2 + 1_000  # a number and a comma each
    data = TAPE + "VOCABULARY = [" + "0, " * elements + "]\n"
    assert len(data) < DEFAULT_MAX_FILE_SIZE
    write(project, "vocabulary.py", data)
    write(project, "train.py", LOSS_OUTSIDE)
    result = run_cli("check", "--no-cache", "--jobs", "1")  # parses counted here
    assert result.exit_code == 1
    train, vocabulary = result.stdout.splitlines()
    assert vocabulary == (
        "vocabulary.py:1:1: TAP001 cannot parse: "
        f"more than {MAX_PARSE_TOKENS:,} tokens of code to parse (a large data literal?)"
    )
    assert train.startswith("train.py:8:12: TAP101 ")
    assert max(parsed) < 10_000
