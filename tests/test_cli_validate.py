"""`tapelint validate` on the command line: `-q` as `check` takes it, and usage errors that
suggest only what would work."""

from __future__ import annotations

from pathlib import Path

from tests.cli_helpers import run_cli


def test_dash_q_is_quiet_not_the_program(project: Path) -> None:
    result = run_cli("validate", "-q", "missing.py")
    assert result.exit_code == 2
    assert result.stderr == "error: missing.py: no such script\n"


def test_an_unknown_option_is_named_and_not_run_as_a_program(project: Path) -> None:
    result = run_cli("validate", "--quit", "train.py")
    assert result.exit_code == 2
    assert result.stderr == "error: no such option: --quit (see `tapelint validate --help`)\n"
    assert "-- --quit" not in result.stderr


def test_a_program_on_path_is_suggested_after_dash_dash(project: Path) -> None:
    result = run_cli("validate", "python3", "train.py")
    assert result.exit_code == 2
    assert result.stderr == (
        "error: python3: no such script; to run a command, put it after `--` "
        "(`tapelint validate -- python3 train.py`)\n"
    )
