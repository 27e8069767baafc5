"""`[tool.tapelint]` settings: discovery, `--config`, validation, and what each key does."""

from __future__ import annotations

import textwrap

import pytest

from tapelint.linter.registry import rule_by_code_or_name
from tests.cli_helpers import (
    LOSS_OUTSIDE,
    NOT_RELEASED,
    PERSISTENT_ONCE,
    UNFILTERED,
    run_cli,
    write,
)


def pyproject(root, body: str, name: str = "pyproject.toml"):
    return write(root, name, textwrap.dedent(body))


def codes(result) -> set[str]:
    return {code for _, code in result.codes()}


def test_pyproject_is_found_upward_from_the_current_directory(project, monkeypatch):
    pyproject(project, '[tool.tapelint]\nselect = ["TAP102"]\n')
    # A nearer pyproject.toml without a [tool.tapelint] table is not the config.
    pyproject(project / "pkg", '[project]\nname = "pkg"\n')
    write(project, "pkg/deep/train.py", LOSS_OUTSIDE + PERSISTENT_ONCE)
    monkeypatch.chdir(project / "pkg" / "deep")
    result = run_cli("check")
    assert result.codes() == [("train.py", "TAP102")]


def test_without_config_the_defaults_apply(project):
    write(project, "train.py", LOSS_OUTSIDE + PERSISTENT_ONCE)
    assert codes(run_cli("check")) == {"TAP101", "TAP102"}


def test_config_option_takes_a_pyproject(project):
    pyproject(project / "conf", '[tool.tapelint]\nignore = ["TAP101"]\n')
    write(project, "train.py", LOSS_OUTSIDE + PERSISTENT_ONCE)
    assert codes(run_cli("check", "--config", "conf/pyproject.toml")) == {"TAP102"}


def test_config_option_takes_a_plain_toml_with_top_level_keys(project):
    pyproject(project, 'ignore = ["loss-outside-tape"]\n', name="tapelint.toml")
    # Given --config, a pyproject.toml in the directory is not read.
    pyproject(project, '[tool.tapelint]\nselect = ["TAP101"]\n')
    write(project, "train.py", LOSS_OUTSIDE + PERSISTENT_ONCE)
    assert codes(run_cli("check", "--config", "tapelint.toml")) == {"TAP102"}


def test_missing_config_file_is_an_error(project):
    result = run_cli("check", "--config", "nope.toml")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: ")
    assert "nope.toml: cannot read: No such file or directory" in result.stderr


def test_unknown_key_exits_2_naming_file_and_key(project):
    config = pyproject(project, '[tool.tapelint]\nselct = ["TAP101"]\n')
    write(project, "train.py", LOSS_OUTSIDE)
    result = run_cli("check")
    assert result.exit_code == 2
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line == f"error: {config}: tool.tapelint.selct: unknown key; did you mean select?"


def test_a_key_like_no_other_lists_the_keys(project):
    pyproject(project, "[tool.tapelint]\nzzz = 1\n")
    result = run_cli("check")
    assert result.exit_code == 2
    assert "tool.tapelint.zzz: unknown key; expected one of select, extend-select" in result.stderr


def test_tool_table_in_a_plain_toml_gets_a_hint(project):
    pyproject(project, '[tool.tapelint]\nselect = ["TAP101"]\n', name="other.toml")
    result = run_cli("check", "--config", "other.toml")
    assert result.exit_code == 2
    assert "other.toml: tool: unknown key" in result.stderr
    assert "top level" in result.stderr


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('select = "TAP101"', "tool.tapelint.select: expected a list of strings, got a string"),
        ("ignore = [101]", "tool.tapelint.ignore: expected a list of strings, got a list"),
        ('exclude = "build"', "tool.tapelint.exclude: expected a list of strings"),
        ("preview = 1", "tool.tapelint.preview: expected true or false, got an integer"),
        ('per-file-ignores = ["x"]', "tool.tapelint.per-file-ignores: expected a table"),
        (
            'per-file-ignores = { "tests/*" = "TAP101" }',
            "tool.tapelint.per-file-ignores.'tests/*': expected a list of strings",
        ),
    ],
)
def test_wrong_type_exits_2(project, body, message):
    config = pyproject(project, f"[tool.tapelint]\n{body}\n")
    result = run_cli("check")
    assert result.exit_code == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"error: {config}: ")
    assert message in line


@pytest.mark.parametrize("key", ["select", "extend-select", "ignore"])
def test_unknown_selector_in_config_exits_2(project, key):
    pyproject(project, f'[tool.tapelint]\n{key} = ["TAP1", "TAP109"]\n')
    result = run_cli("check")
    assert result.exit_code == 2
    assert f"tool.tapelint.{key}: unknown rule selector 'TAP109'; did you mean" in result.stderr


def test_unknown_selector_in_per_file_ignores_exits_2(project):
    pyproject(project, '[tool.tapelint.per-file-ignores]\n"tests/*" = ["loss-outside"]\n')
    result = run_cli("check")
    assert result.exit_code == 2
    assert "per-file-ignores.'tests/*': unknown rule selector 'loss-outside'" in result.stderr
    assert "did you mean loss-outside-tape?" in result.stderr


def test_invalid_toml_exits_2(project):
    config = pyproject(project, "[tool.tapelint\nselect = 1\n")
    result = run_cli("check")
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {config}: invalid TOML: ")


def test_per_file_ignores(project):
    pyproject(
        project,
        """\
        [tool.tapelint.per-file-ignores]
        "tests/*" = ["TAP101"]
        "legacy_*.py" = ["unnecessary-persistent-tape", "TAP4"]
        """,
    )
    both = LOSS_OUTSIDE + PERSISTENT_ONCE
    write(project, "tests/test_step.py", both)
    write(project, "src/legacy_train.py", both + UNFILTERED)
    write(project, "src/train.py", both)
    result = run_cli("check")
    assert result.codes() == [
        ("src/legacy_train.py", "TAP101"),
        ("src/train.py", "TAP101"),
        ("src/train.py", "TAP102"),
        ("tests/test_step.py", "TAP102"),
    ]


def test_per_file_ignores_are_relative_to_the_config_directory(project, monkeypatch):
    pyproject(project, '[tool.tapelint.per-file-ignores]\n"src/gen/*.py" = ["ALL"]\n')
    write(project, "src/gen/model.py", LOSS_OUTSIDE)
    write(project, "src/model.py", LOSS_OUTSIDE)
    monkeypatch.chdir(project / "src")
    assert run_cli("check").codes() == [("model.py", "TAP101")]


def test_exclude_replaces_the_default_excludes(project):
    pyproject(project, '[tool.tapelint]\nexclude = ["generated"]\n')
    write(project, "generated/model.py", LOSS_OUTSIDE)
    write(project, "venv/lib/model.py", LOSS_OUTSIDE)
    assert [path for path, _ in run_cli("check").codes()] == ["venv/lib/model.py"]


def test_extend_exclude_adds_to_the_default_excludes(project):
    pyproject(project, '[tool.tapelint]\nextend-exclude = ["generated", "src/old_*.py"]\n')
    write(project, "generated/model.py", LOSS_OUTSIDE)
    write(project, "venv/lib/model.py", LOSS_OUTSIDE)
    write(project, "src/old_train.py", LOSS_OUTSIDE)
    write(project, "src/train.py", LOSS_OUTSIDE)
    assert [path for path, _ in run_cli("check").codes()] == ["src/train.py"]


def test_anchored_exclude_is_relative_to_the_config_directory(project, monkeypatch):
    pyproject(project, '[tool.tapelint]\nextend-exclude = ["/pkg/gen/"]\n')
    write(project, "pkg/gen/a.py", LOSS_OUTSIDE)
    write(project, "pkg/other/gen/b.py", LOSS_OUTSIDE)
    monkeypatch.chdir(project / "pkg")
    assert [path for path, _ in run_cli("check").codes()] == ["other/gen/b.py"]


def test_leading_dot_slash_anchors_a_pattern(project):
    pyproject(project, '[tool.tapelint]\nextend-exclude = ["./gen"]\n')
    write(project, "gen/a.py", LOSS_OUTSIDE)
    write(project, "src/gen/b.py", LOSS_OUTSIDE)
    assert [path for path, _ in run_cli("check").codes()] == ["src/gen/b.py"]


@pytest.fixture
def preview_rule(monkeypatch):
    """Pretend TAP401 is a preview rule (no rule is in preview today)."""
    monkeypatch.setattr(rule_by_code_or_name("TAP401"), "preview", True)


@pytest.mark.parametrize(
    ("config", "args", "selected"),
    [
        ("", (), False),
        ("", ("--preview",), True),
        ("preview = true", (), True),
        ("", ("--select", "TAP4"), False),
        ("", ("--select", "ALL"), False),
        ("", ("--select", "ALL", "--preview"), True),
        ("", ("--select", "TAP401"), True),
        ("", ("--extend-select", "unfiltered-apply-gradients"), True),
        ('select = ["TAP401"]', (), True),
        ("preview = true", ("--ignore", "TAP4"), False),
    ],
)
def test_preview_rules_run_only_when_named_or_in_preview_mode(
    project, preview_rule, config, args, selected
):
    pyproject(project, f"[tool.tapelint]\n{config}\n")
    write(project, "train.py", UNFILTERED)
    assert ("TAP401" in codes(run_cli("check", *args))) is selected


def test_command_line_overrides_config(project):
    pyproject(
        project,
        """\
        [tool.tapelint]
        select = ["TAP101"]
        extend-select = ["TAP103"]
        ignore = ["TAP401"]
        """,
    )
    write(project, "a.py", LOSS_OUTSIDE)
    write(project, "b.py", PERSISTENT_ONCE)
    write(project, "c.py", NOT_RELEASED)
    write(project, "d.py", UNFILTERED)
    assert codes(run_cli("check")) == {"TAP101", "TAP103"}
    # --select replaces `select`; the config's extend-select still adds, its ignore still holds.
    assert codes(run_cli("check", "--select", "TAP102,TAP401")) == {"TAP102", "TAP103"}
    assert codes(run_cli("check", "--extend-select", "TAP102")) == {"TAP101", "TAP102", "TAP103"}
    assert codes(run_cli("check", "--ignore", "TAP103")) == {"TAP101"}
