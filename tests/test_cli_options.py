"""The `check` options a ruff user reaches for: --output-file, --show-files, --show-settings,
--fix-only, --exit-non-zero-on-fix, --unfixable, and --exclude / --extend-exclude /
--per-file-ignores on the command line."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from tests.cli_helpers import (
    LOSS_OUTSIDE,
    NOT_RELEASED,
    PERSISTENT_ONCE,
    UNFILTERED,
    run_cli,
    write,
)


@pytest.fixture
def tree(project: Path) -> Path:
    write(project, "train.py", LOSS_OUTSIDE)
    write(project, "tools/apply.py", UNFILTERED)
    write(project, "generated/step.py", LOSS_OUTSIDE)
    return project


def test_output_file_gets_the_findings_and_stderr_the_summary(tree: Path) -> None:
    result = run_cli("check", "--output-file", "reports/findings.txt")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == "Found 3 problems in 3 files (1 more fixable with --unsafe-fixes).\n"
    written = (tree / "reports" / "findings.txt").read_text()
    assert written == run_cli("check", "-q").stdout
    assert written.splitlines()[0].startswith("generated/step.py:8:12: TAP101 ")


def test_output_file_in_json(tree: Path) -> None:
    run_cli("check", "--output-format", "json", "-o", "out.json")
    assert (tree / "out.json").read_text() == run_cli("check", "--output-format", "json").stdout


def test_an_output_file_that_cannot_be_written_is_one_error(tree: Path) -> None:
    write(tree, "blocker", "a file where a directory should be\n")
    result = run_cli("check", "--output-file", "blocker/out.txt")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: blocker/out.txt: cannot write the output file: ")


def test_show_files_lists_what_a_check_reads_and_checks_nothing(tree: Path) -> None:
    write(tree, "notes.txt", "not Python\n")
    write(tree, ".venv/lib/site.py", LOSS_OUTSIDE)
    result = run_cli("check", "--show-files")
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout.splitlines() == ["generated/step.py", "tools/apply.py", "train.py"]
    excluded = run_cli("check", "--show-files", "--extend-exclude", "generated,tools")
    assert excluded.stdout.splitlines() == ["train.py"]


def test_show_files_of_a_missing_path_is_an_error(tree: Path) -> None:
    result = run_cli("check", "--show-files", "train.py", "nowhere.py")
    assert result.exit_code == 2
    assert result.stdout == "train.py\n"
    assert result.stderr == "error: nowhere.py: no such file or directory\n"


def test_show_settings_is_toml_with_the_command_line_applied(tree: Path) -> None:
    write(
        tree,
        "pyproject.toml",
        '[tool.tapelint]\nignore = ["TAP3"]\n[tool.tapelint.per-file-ignores]\n'
        '"tools/*" = ["TAP401"]\n',
    )
    result = run_cli(
        "check", "--show-settings", "--extend-select", "TAP502", "--unfixable", "TAP103"
    )
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout.startswith(f"# from {tree.resolve() / 'pyproject.toml'}\n")
    settings = tomllib.loads(result.stdout)["tool"]["tapelint"]
    assert settings["ignore"] == ["TAP3"]
    assert settings["extend-select"] == ["TAP502"]
    assert settings["unfixable"] == ["TAP103"]
    assert settings["per-file-ignores"] == {"tools/*": ["TAP401"]}
    assert settings["select"] == ["ALL"]
    assert ".venv" in settings["exclude"]
    rules = result.stdout.splitlines()[-1]
    assert rules.startswith("# rules that run: ") and "TAP101, TAP102, TAP103" in rules
    assert "TAP301" not in rules
    for_file = run_cli("check", "--show-settings", "tools/apply.py").stdout.splitlines()[-1]
    assert for_file.startswith("# rules that run on tools/apply.py: ") and "TAP101" in for_file
    assert "TAP401" not in for_file and "TAP402" in for_file


def test_exclude_replaces_the_configs_and_extend_exclude_adds(tree: Path) -> None:
    write(tree, "pyproject.toml", '[tool.tapelint]\nexclude = ["generated"]\n')
    assert [path for path, _ in run_cli("check").codes()] == ["tools/apply.py", "train.py"]
    replaced = run_cli("check", "--exclude", "tools")
    assert [path for path, _ in replaced.codes()] == ["generated/step.py", "train.py"]
    added = run_cli("check", "--extend-exclude", "tools")
    assert [path for path, _ in added.codes()] == ["train.py"]


def test_per_file_ignores_on_the_command_line(tree: Path) -> None:
    write(tree, "pyproject.toml", '[tool.tapelint.per-file-ignores]\n"train.py" = ["TAP1"]\n')
    assert run_cli("check").codes() == [
        ("generated/step.py", "TAP101"),
        ("tools/apply.py", "TAP401"),
    ]
    replaced = run_cli("check", "--per-file-ignores", "tools/*:TAP401,generated/*:TAP101")
    assert replaced.codes() == [("train.py", "TAP101")]
    extended = run_cli("check", "--extend-per-file-ignores", "tools/*:TAP4")
    assert extended.codes() == [("generated/step.py", "TAP101")]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("TAP401", "--per-file-ignores: expected GLOB:SELECTORS, got 'TAP401'"),
        ("tools/*:", "--per-file-ignores: no rule selector after 'tools/*'"),
        ("tools/*:TAP999", "--per-file-ignores: unknown rule selector 'TAP999'"),
    ],
)
def test_a_malformed_per_file_ignore_is_a_usage_error(tree: Path, value, message) -> None:
    result = run_cli("check", "--per-file-ignores", value)
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {message}")


def test_fix_only_fixes_and_does_not_report_what_remains(project: Path) -> None:
    fixable = write(project, "a.py", NOT_RELEASED)
    write(project, "b.py", LOSS_OUTSIDE)
    result = run_cli("check", "--fix-only")
    assert (result.exit_code, result.stdout) == (0, "")
    assert result.stderr == "Fixed 1 problem.\n"
    assert "del tape" in fixable.read_text()
    again = run_cli("check", "--fix-only")
    assert (again.exit_code, again.stdout, again.stderr) == (0, "", "")
    assert run_cli("check").codes() == [("b.py", "TAP101")]


def test_fix_only_says_when_unsafe_fixes_were_left_out(project: Path) -> None:
    write(project, "train.py", UNFILTERED)
    result = run_cli("check", "--fix-only")
    assert (result.exit_code, result.stdout) == (0, "")
    assert result.stderr == "No problems fixed (1 fix available with --unsafe-fixes).\n"


def test_exit_non_zero_on_fix(project: Path) -> None:
    write(project, "a.py", PERSISTENT_ONCE)
    result = run_cli("check", "--fix", "--exit-non-zero-on-fix")
    assert result.exit_code == 1
    assert result.stderr == "Found 1 problem in 1 file (1 fixed, 0 remaining).\n"
    nothing_to_fix = run_cli("check", "--fix", "--exit-non-zero-on-fix")
    assert nothing_to_fix.exit_code == 0
    write(project, "b.py", PERSISTENT_ONCE)
    assert run_cli("check", "--fix-only", "--exit-non-zero-on-fix").exit_code == 1
    write(project, "c.py", PERSISTENT_ONCE)
    assert run_cli("check", "--fix", "--exit-non-zero-on-fix", "--exit-zero").exit_code == 0


def test_unfixable_reports_the_finding_without_its_fix(project: Path) -> None:
    path = write(project, "a.py", PERSISTENT_ONCE)
    result = run_cli("check", "--fix", "--unfixable", "TAP102")
    assert result.exit_code == 1
    assert result.codes() == [("a.py", "TAP102")]
    assert result.stderr == "Found 1 problem in 1 file.\n"  # not "fixable with --fix"
    assert path.read_text() == PERSISTENT_ONCE
    marked = run_cli(
        "check", "--output-format", "concise", "--unfixable", "unnecessary-persistent-tape"
    )
    assert "[*]" not in marked.stdout
    assert "[*]" in run_cli("check", "--output-format", "concise").stdout
    assert "--unfixable: unknown rule selector" in run_cli("check", "--unfixable", "X1").stderr


def test_unfixable_in_the_config(project: Path) -> None:
    path = write(project, "a.py", PERSISTENT_ONCE)
    write(project, "pyproject.toml", '[tool.tapelint]\nunfixable = ["TAP1"]\n')
    assert run_cli("check", "--fix").exit_code == 1
    assert path.read_text() == PERSISTENT_ONCE


def test_a_bad_output_format_names_the_environment_variable_only_when_it_came_from_there(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    given = run_cli("check", "--output-format", "gitlb", ".")
    assert given.exit_code == 2
    assert given.stderr.startswith("error: Invalid value for '--output-format': 'gitlb' is not")
    monkeypatch.setenv("TAPELINT_OUTPUT_FORMAT", "gitlb")
    from_env = run_cli("check", ".")
    assert from_env.exit_code == 2
    assert from_env.stderr.startswith(
        "error: Invalid value for '--output-format' "
        "(from the environment variable TAPELINT_OUTPUT_FORMAT): 'gitlb' is not"
    )
