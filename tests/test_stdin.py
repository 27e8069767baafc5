"""`tapelint check --stdin-filename PATH -`: how editors call a linter."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from tapelint.cli import cli
from tests.cli_helpers import LOSS_OUTSIDE, NOT_RELEASED, UNFILTERED, Run, write
from tests.fixture_markers import FIXTURES


def run_stdin(source: str | bytes, *args: str) -> Run:
    result = CliRunner().invoke(cli, ["check", *args], input=source, catch_exceptions=False)
    return Run(result.exit_code, result.stdout, result.stderr)


def test_reports_with_the_given_path(project: Path) -> None:
    result = run_stdin(LOSS_OUTSIDE, "--stdin-filename", "src/train.py", "-")
    assert result.exit_code == 1
    assert result.stdout.startswith("src/train.py:8:12: TAP101 ")


def test_the_dash_may_be_left_out_and_without_a_name_the_path_is_dash(project: Path) -> None:
    assert run_stdin(LOSS_OUTSIDE, "--stdin-filename", "t.py").stdout.startswith("t.py:8:12: ")
    assert run_stdin(LOSS_OUTSIDE, "-").stdout.startswith("-:8:12: TAP101 ")


def test_config_and_per_file_ignores_apply_to_the_given_path(project: Path) -> None:
    write(
        project,
        "pyproject.toml",
        '[tool.tapelint]\nignore = ["TAP401"]\nper-file-ignores = { "tests/**" = ["TAP101"] }\n',
    )
    source = LOSS_OUTSIDE + "\n\n" + UNFILTERED.replace("import tensorflow as tf\n", "")
    source = source.replace("def train_step(model, optimizer", "def train_step2(model, optimizer")
    in_src = run_stdin(source, "--stdin-filename", "src/train.py", "-")
    assert [code for _, code in in_src.codes()] == ["TAP101"]  # TAP401 ignored by config
    in_tests = run_stdin(source, "--stdin-filename", "tests/test_train.py", "-")
    assert (in_tests.exit_code, in_tests.stdout) == (0, "")


def test_force_exclude_skips_an_excluded_path(project: Path) -> None:
    write(project, "pyproject.toml", '[tool.tapelint]\nextend-exclude = ["generated/"]\n')
    args = ("--stdin-filename", "generated/train.py", "-")
    assert run_stdin(LOSS_OUTSIDE, *args).exit_code == 1
    skipped = run_stdin(LOSS_OUTSIDE, "--force-exclude", *args)
    assert (skipped.exit_code, skipped.stdout) == (0, "")


def test_a_notebook_on_standard_input(project: Path) -> None:
    data = (FIXTURES / "notebooks" / "flag_loss_in_next_cell.ipynb").read_bytes()
    result = run_stdin(data, "--stdin-filename", "nb.ipynb", "--output-format", "json", "-")
    [diagnostic] = json.loads(result.stdout)
    assert (diagnostic["path"], diagnostic["cell"], diagnostic["line"]) == ("nb.ipynb", 4, 2)


def test_fix_prints_the_fixed_source_and_what_remains_on_stderr(project: Path) -> None:
    target = write(project, "train.py", NOT_RELEASED)
    result = run_stdin(NOT_RELEASED + UNFILTERED, "--stdin-filename", "train.py", "--fix", "-")
    assert "    del tape\n" in result.stdout
    assert result.stdout.startswith("import tensorflow as tf\n")
    assert "TAP103" not in result.stderr
    assert "train.py:" in result.stderr and "TAP401" in result.stderr
    assert result.exit_code == 1  # TAP401 remains (its fix is unsafe)
    assert target.read_text() == NOT_RELEASED  # the file itself is never written


def test_fix_with_nothing_to_fix_echoes_the_source(project: Path) -> None:
    result = run_stdin(LOSS_OUTSIDE, "--stdin-filename", "train.py", "--fix", "-")
    assert result.stdout == LOSS_OUTSIDE
    assert "TAP101" in result.stderr
    notebook = (FIXTURES / "notebooks" / "flag_loss_in_next_cell.ipynb").read_bytes()
    echoed = CliRunner().invoke(
        cli, ["check", "--stdin-filename", "nb.ipynb", "--fix", "-"], input=notebook
    )
    assert echoed.stdout_bytes == notebook


def test_diff_shows_the_fix_against_the_given_path(project: Path) -> None:
    result = run_stdin(NOT_RELEASED, "--stdin-filename", "train.py", "--diff", "-")
    assert result.exit_code == 1
    assert result.stdout.startswith("--- train.py\n+++ train.py\n")
    assert "+    del tape\n" in result.stdout


def test_standard_input_cannot_be_mixed_with_paths(project: Path) -> None:
    write(project, "a.py", LOSS_OUTSIDE)
    mixed = run_stdin(LOSS_OUTSIDE, "-", "a.py")
    assert mixed.exit_code == 2
    assert mixed.stderr.startswith("error: ") and "standard input" in mixed.stderr
    named = run_stdin(LOSS_OUTSIDE, "--stdin-filename", "x.py", "a.py")
    assert named.exit_code == 2 and "--stdin-filename" in named.stderr


def test_undecodable_standard_input_is_tap002(project: Path) -> None:
    result = run_stdin(b"# GradientTape \xff\xfe\n", "--stdin-filename", "x.py", "-")
    assert [code for _, code in result.codes()] == ["TAP002"]
