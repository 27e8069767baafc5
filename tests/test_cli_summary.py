"""The summary line on stderr: `All checks passed!` on a clean run, and a hint when the only
fixes left are unsafe ones (`--diff`, `--fix`)."""

from __future__ import annotations

from pathlib import Path

from tests.cli_helpers import CLEAN, PERSISTENT_ONCE, UNFILTERED, run_cli, write


def test_a_clean_run_says_all_checks_passed(project: Path) -> None:
    write(project, "train.py", CLEAN)
    for output_format in ("concise", "full", "grouped", "text"):
        result = run_cli("check", "--output-format", output_format)
        assert (result.exit_code, result.stdout) == (0, "")
        assert result.stderr == "All checks passed!\n"


def test_no_summary_after_a_machine_format_or_with_quiet(project: Path) -> None:
    write(project, "train.py", CLEAN)
    for args in (("--output-format", "sarif"), ("--output-format", "github"), ("-q",)):
        assert run_cli("check", *args).stderr == ""


def test_a_run_with_an_error_does_not_say_all_checks_passed(project: Path) -> None:
    result = run_cli("check", "missing.py")
    assert result.exit_code == 2
    assert result.stderr == "error: missing.py: no such file or directory\n"


def test_diff_when_every_fix_is_unsafe_says_how_many_unsafe_fixes_there_are(
    project: Path,
) -> None:
    write(project, "train.py", UNFILTERED)
    result = run_cli("check", "--diff")
    assert (result.exit_code, result.stdout) == (0, "")
    assert result.stderr == "No problems would be fixed (1 fix available with --unsafe-fixes).\n"
    unsafe = run_cli("check", "--diff", "--unsafe-fixes")
    assert unsafe.exit_code == 1 and unsafe.stdout.startswith("--- train.py\n")
    assert unsafe.stderr == "Would fix 1 problem in 1 file.\n"


def test_diff_with_safe_and_unsafe_fixes_counts_both(project: Path) -> None:
    write(project, "a.py", PERSISTENT_ONCE)
    write(project, "b.py", UNFILTERED)
    write(project, "c.py", UNFILTERED)
    result = run_cli("check", "--diff")
    assert result.exit_code == 1
    assert result.stderr == (
        "Would fix 1 problem in 1 file (2 fixes available with --unsafe-fixes).\n"
    )


def test_fix_when_every_fix_is_unsafe_says_so(project: Path) -> None:
    path = write(project, "train.py", UNFILTERED)
    result = run_cli("check", "--fix")
    assert result.exit_code == 1
    assert path.read_text() == UNFILTERED
    assert result.stderr == "Found 1 problem in 1 file (1 more fixable with --unsafe-fixes).\n"


def test_a_run_that_finds_no_file_warns_before_all_checks_passed(project: Path) -> None:
    write(project, "notes.txt", "not Python\n")
    result = run_cli("check")
    assert (result.exit_code, result.stdout) == (0, "")
    assert result.stderr == (
        "warning: no Python files or notebooks found under the given paths\nAll checks passed!\n"
    )
