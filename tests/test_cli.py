"""`tapelint check`, `rule`, `rules` and `--version`: exit codes, selection, output formats."""

from __future__ import annotations

import importlib.metadata
import json

import pytest

from tapelint.findings.diagnostics import Diagnostic, Position, Severity
from tapelint.linter.engine import Linter
from tapelint.linter.registry import all_rules
from tapelint.output import json as json_output
from tapelint.output import text as text_output
from tests.cli_helpers import (
    CLEAN,
    LOSS_OUTSIDE,
    NOT_RELEASED,
    PERSISTENT_ONCE,
    UNFILTERED,
    run_cli,
    run_subprocess,
    write,
)


@pytest.fixture
def mixed(project):
    """Four files, one diagnostic each: TAP101, TAP102, TAP103, TAP401."""
    write(project, "a_loss.py", LOSS_OUTSIDE)
    write(project, "b_persistent.py", PERSISTENT_ONCE)
    write(project, "c_release.py", NOT_RELEASED)
    write(project, "d_apply.py", UNFILTERED)
    return project


def test_clean_code_exits_0_and_says_all_checks_passed_on_stderr(project):
    write(project, "train.py", CLEAN)
    result = run_cli("check")
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "All checks passed!\n")
    quiet = run_cli("check", "-q")
    assert (quiet.exit_code, quiet.stdout, quiet.stderr) == (0, "", "")
    as_json = run_cli("check", "--output-format", "json")
    assert (as_json.stdout, as_json.stderr) == ("[]\n", "")


def test_text_format_is_flake8_form_with_a_summary_on_stderr(project):
    write(project, "train.py", LOSS_OUTSIDE)
    result = run_cli("check")
    assert result.exit_code == 1
    (line,) = result.stdout.splitlines()
    assert line.startswith("train.py:8:12: TAP101 `loss` is computed after the `with` block")
    assert result.stderr == "Found 1 problem in 1 file.\n"


def test_output_is_sorted_by_path_then_position(mixed):
    write(
        mixed, "sub/a.py", LOSS_OUTSIDE + "\n" + UNFILTERED.replace("import tensorflow as tf\n", "")
    )
    result = run_cli("check")
    assert result.codes() == [
        ("a_loss.py", "TAP101"),
        ("b_persistent.py", "TAP102"),
        ("c_release.py", "TAP103"),
        ("d_apply.py", "TAP401"),
        ("sub/a.py", "TAP101"),
        ("sub/a.py", "TAP401"),
    ]
    assert result.stderr == (
        "Found 6 problems in 5 files (2 fixable with --fix; 2 more fixable with --unsafe-fixes).\n"
    )


def test_exit_zero_reports_but_exits_0(project):
    write(project, "train.py", LOSS_OUTSIDE)
    result = run_cli("check", "--exit-zero")
    assert result.exit_code == 0
    assert "TAP101" in result.stdout


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("TAP101", {"TAP101"}),
        ("TAP1", {"TAP101", "TAP102", "TAP103"}),
        ("TAP10", {"TAP101", "TAP102", "TAP103"}),
        ("tap4", {"TAP401"}),
        ("unnecessary-persistent-tape", {"TAP102"}),
        ("ALL", {"TAP101", "TAP102", "TAP103", "TAP401"}),
        ("TAP101,TAP401", {"TAP101", "TAP401"}),
    ],
)
def test_select(mixed, selector, expected):
    result = run_cli("check", "--select", selector)
    assert {code for _, code in result.codes()} == expected
    assert result.exit_code == 1


def test_select_is_repeatable_and_extend_select_adds(mixed):
    result = run_cli("check", "--select", "TAP101", "--select", "TAP102")
    assert {code for _, code in result.codes()} == {"TAP101", "TAP102"}
    result = run_cli("check", "--select", "TAP101", "--extend-select", "TAP4")
    assert {code for _, code in result.codes()} == {"TAP101", "TAP401"}


def test_ignore_removes_rules_by_code_prefix_or_name(mixed):
    result = run_cli("check", "--ignore", "TAP1", "--ignore", "unfiltered-apply-gradients")
    assert (result.exit_code, result.stdout) == (0, "")
    result = run_cli("check", "--ignore", "TAP101,TAP103")
    assert {code for _, code in result.codes()} == {"TAP102", "TAP401"}


def test_selecting_nothing_that_applies_exits_0(mixed):
    result = run_cli("check", "--select", "TAP301")
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "All checks passed!\n")


@pytest.mark.parametrize(
    ("option", "selector", "suggestion"),
    [
        ("--select", "TAP19", "TAP101"),
        ("--ignore", "loss-outside-tap", "loss-outside-tape"),
        ("--extend-select", "TAP9", None),
        ("--select", "E501", "TAP501"),
    ],
)
def test_unknown_selector_is_a_usage_error(mixed, option, selector, suggestion):
    result = run_cli("check", option, selector)
    assert result.exit_code == 2
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"error: {option}: unknown rule selector {selector!r}")
    if suggestion:
        assert f"did you mean {suggestion}" in line
    else:
        assert "expected a rule code" in line


def test_bad_option_is_one_error_line_with_exit_2(project):
    result = run_cli("check", "--no-such-option")
    assert result.exit_code == 2
    assert result.stderr.splitlines() == ["error: No such option '--no-such-option'."]


def test_json_output_shape_and_values(mixed):
    result = run_cli("check", "--output-format", "json", "a_loss.py", "b_persistent.py")
    assert result.exit_code == 1
    assert result.stderr == ""  # no summary in JSON mode
    loss, persistent = json.loads(result.stdout)
    keys = {"path", "line", "column", "end_line", "end_column", "code", "name", "severity"}
    keys |= {"message", "url", "fix", "related"}
    assert set(loss) == set(persistent) == keys
    assert loss == {
        "path": "a_loss.py",
        "line": 8,
        "column": 12,
        "end_line": 8,
        "end_column": 58,
        "code": "TAP101",
        "name": "loss-outside-tape",
        "severity": "error",
        "message": loss["message"],
        "url": "https://tapelint.readthedocs.io/rules/TAP101/",
        "fix": None,
        "related": [],
    }
    assert loss["message"].startswith("`loss` is computed after the `with` block of `tape`")
    assert (persistent["code"], persistent["severity"]) == ("TAP102", "warning")
    assert (persistent["line"], persistent["column"]) == (5, 26)
    assert persistent["fix"] == {
        "title": "Remove `persistent=True`",
        "applicability": "safe",
        "edits": [
            {
                "line": 5,
                "column": 10,
                "end_line": 5,
                "end_column": 42,
                "content": "tf.GradientTape()",
            }
        ],
    }


def test_json_output_of_a_clean_run_is_an_empty_list(project):
    write(project, "train.py", CLEAN)
    result = run_cli("check", "--output-format", "json")
    assert (result.exit_code, json.loads(result.stdout), result.stderr) == (0, [], "")


def test_quiet_prints_diagnostics_without_summary(project):
    write(project, "train.py", LOSS_OUTSIDE)
    result = run_cli("check", "--quiet")
    assert (result.exit_code, result.stderr) == (1, "")
    assert "TAP101" in result.stdout


def test_paths_outside_the_current_directory_are_shown_absolute(tmp_path, monkeypatch):
    (tmp_path / "here").mkdir()
    target = write(tmp_path, "elsewhere/train.py", LOSS_OUTSIDE)
    monkeypatch.chdir(tmp_path / "here")
    result = run_cli("check", str(target))
    assert result.stdout.startswith(f"{target}:8:12: TAP101 ")
    result = run_cli("check", "../elsewhere")
    assert result.stdout.startswith(f"{target}:8:12: TAP101 ")


def test_an_internal_error_in_one_file_is_one_line_and_the_run_goes_on(mixed, monkeypatch):
    original = Linter.analyze_bytes

    def broken(self, data, path, context=None):
        if path == "b_persistent.py":
            raise RuntimeError("boom")
        return original(self, data, path, context)

    monkeypatch.setattr(Linter, "analyze_bytes", broken)
    result = run_cli("check")
    assert result.exit_code == 2
    assert "error: b_persistent.py: internal error: RuntimeError: boom" in result.stderr
    assert "Traceback" not in result.stderr
    assert [path for path, _ in result.codes()] == ["a_loss.py", "c_release.py", "d_apply.py"]


def test_rule_prints_header_and_documentation():
    result = run_cli("rule", "TAP101")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0] == "TAP101 loss-outside-tape (error, on by default)"
    assert lines[1] == ""
    assert "## What it does" in result.stdout
    assert "## Why is this bad?" in result.stdout


def test_rule_by_name():
    result = run_cli("rule", "unnecessary-persistent-tape")
    assert result.exit_code == 0
    assert result.stdout.splitlines()[0] == (
        "TAP102 unnecessary-persistent-tape (warning, on by default)"
    )
    assert "## Fix safety" in result.stdout


def test_rule_of_a_preview_rule_says_so(monkeypatch):
    monkeypatch.setattr(all_rules()[-1], "preview", True)
    rule = all_rules()[-1]
    result = run_cli("rule", rule.code)
    assert (
        result.stdout.splitlines()[0] == f"{rule.code} {rule.name} ({rule.severity.value}, preview)"
    )


def test_unknown_rule_exits_2_with_close_matches():
    result = run_cli("rule", "TAP11")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.startswith("error: unknown rule 'TAP11'; did you mean TAP101")
    result = run_cli("rule", "loss-outside")
    assert "did you mean loss-outside-tape?" in result.stderr
    result = run_cli("rule", "xyzzy")
    assert result.stderr == "error: unknown rule 'xyzzy'; see `tapelint rules`\n"


def test_rules_lists_every_rule_in_a_table():
    result = run_cli("rules")
    assert result.exit_code == 0
    header, *rows = result.stdout.splitlines()
    assert header.split() == ["code", "name", "severity", "default", "summary"]
    assert len(rows) == len(all_rules())
    for row, rule in zip(rows, all_rules(), strict=True):
        code, name, severity, default, *summary = row.split()
        expected_default = "preview" if rule.preview else "on"
        assert (code, name, severity, default) == (
            rule.code,
            rule.name,
            rule.severity,
            expected_default,
        )
        assert rule.summary().startswith(" ".join(summary))
        assert " ".join(summary).endswith(".")


def test_version():
    result = run_cli("--version")
    assert result.exit_code == 0
    assert result.stdout == f"tapelint {importlib.metadata.version('tapelint')}\n"


def test_python_dash_m_runs_the_cli(project):
    write(project, "train.py", LOSS_OUTSIDE)
    result = run_subprocess("check", cwd=project)
    assert result.exit_code == 1
    assert result.stdout.startswith("train.py:8:12: TAP101 ")
    assert run_subprocess("--version", cwd=project).stdout.startswith("tapelint ")


def test_renderers_show_a_notebook_cell():
    diagnostic = Diagnostic(
        "nb.ipynb", Position(4, 9), Position(4, 20), "TAP101", "loss-outside-tape",
        Severity.ERROR, "message", cell=3,
    )  # fmt: skip
    assert text_output.render([diagnostic]) == "nb.ipynb:cell 3:4:9: TAP101 message\n"
    (rendered,) = json.loads(json_output.render([diagnostic]))
    assert (rendered["cell"], rendered["line"], rendered["column"]) == (3, 4, 9)
