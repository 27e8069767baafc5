"""`--output-format concise|full|grouped`, which one is the default, and the message
convention they rest on (`tapelint.linter.messages`: problem, then advice after the last `; `)."""

from __future__ import annotations

import json
import os
import pty
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from tapelint.cli import cli
from tapelint.findings.diagnostics import Diagnostic, Position, Severity
from tapelint.linter.messages import split
from tapelint.linter.registry import all_rules
from tests.cli_helpers import LOSS_OUTSIDE, NOT_RELEASED, run_cli, write

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
LOSS_PROBLEM = (
    "`loss` is computed after the `with` block of `tape` ended, so `tape.gradient` returns "
    "None for it"
)
LOSS_ADVICE = "compute it inside the tape's `with` block"
ALL_RULES = ("--select", "ALL", "--preview")
AS_JSON = ("--output-format", "json", "--no-cache")
_COLOUR_VARIABLES = {"NO_COLOR", "FORCE_COLOR", "CLICOLOR_FORCE", "TERM"}
ANSI = "\x1b["


@pytest.fixture
def two_files(project: Path) -> Path:
    write(project, "a_loss.py", LOSS_OUTSIDE)
    write(project, "b_release.py", NOT_RELEASED)
    return project


@pytest.fixture(scope="module")
def fixture_findings() -> list[dict]:
    """Every rule's findings over every fixture, as JSON (one run for the tests below)."""
    result = subprocess.run(
        [sys.executable, "-m", "tapelint", "check", "fixtures", *ALL_RULES, *AS_JSON],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    return json.loads(result.stdout)


def test_every_rule_message_is_a_problem_then_advice(fixture_findings: list[dict]) -> None:
    """Over every fixture, each finding of a rule (not of the engine) splits into a problem
    and advice that together are the message; each such rule is seen at least once."""
    found = fixture_findings
    seen = set()
    for item in found:
        diagnostic = Diagnostic(
            path=item["path"],
            start=Position(item["line"], item["column"]),
            end=Position(item["end_line"], item["end_column"]),
            code=item["code"],
            name=item["name"],
            severity=Severity(item["severity"]),
            message=item["message"],
        )
        message = split(diagnostic)
        if item["code"] in {"TAP001", "TAP002"}:
            assert message.advice is None
            continue
        assert message.advice, item
        assert message.problem, item
        assert f"{message.problem}; {message.advice}" == item["message"]
        assert message.advice[0].islower(), item  # an instruction, not a second sentence
        seen.add(item["code"])
    rule_codes = {rule.code for rule in all_rules() if not rule.engine_reported}
    assert seen == rule_codes


def test_a_semicolon_inside_quoted_code_does_not_split() -> None:
    diagnostic = Diagnostic(
        path="a.py",
        start=Position(1, 1),
        end=Position(1, 2),
        code="TAP106",
        name="unrelated-work-in-tape",
        severity=Severity.WARNING,
        message="`x = f('a; b')` does not depend on the tape; move it before the `with` block",
    )
    message = split(diagnostic)
    assert message.problem == "`x = f('a; b')` does not depend on the tape"
    assert message.advice == "move it before the `with` block"


def test_concise_is_one_short_line_without_the_advice(two_files: Path) -> None:
    result = run_cli("check", "--output-format", "concise")
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0] == f"a_loss.py:8:12: TAP101 {LOSS_PROBLEM}"
    assert lines[1].startswith("b_release.py:4:5: TAP103 [*] persistent tape `tape` is not")
    assert len(lines) == 2
    assert all(LOSS_ADVICE not in line and "; " not in line for line in lines)
    assert result.stderr.startswith("Found 2 problems in 2 files")


def test_text_keeps_the_whole_message(two_files: Path) -> None:
    result = run_cli("check", "--output-format", "text")
    assert result.stdout.splitlines()[0] == (
        f"a_loss.py:8:12: TAP101 {LOSS_PROBLEM}; {LOSS_ADVICE}"
    )


def test_full_shows_the_code_the_advice_and_the_fix(two_files: Path) -> None:
    result = run_cli("check", "--output-format", "full")
    assert result.exit_code == 1
    first, second = result.stdout.split("\n\n")[:2]
    assert first.splitlines() == [
        f"TAP101 {LOSS_PROBLEM}",
        " --> a_loss.py:8:12",
        "  |",
        "8 |     return tape.gradient(loss, model.trainable_variables)",
        "  |            ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        f"help: {LOSS_ADVICE}",
    ]
    lines = second.splitlines()
    assert lines[0].startswith("TAP103 [*] persistent tape `tape`")
    assert lines[1] == " --> b_release.py:4:5"
    # A span over two lines: both shown, the first underlined from its start.
    assert lines[3] == "4 |     with tf.GradientTape(persistent=True) as tape:"
    assert lines[4] == "  |     " + "^" * len("with tf.GradientTape(persistent=True) as tape:")
    assert lines[5] == "5 |         loss = tf.reduce_mean(model(x))"
    assert lines[6] == "help: add `del tape` after its last gradient call"
    assert lines[7] == "fix: Insert `del tape` after its last use (safe)"


def test_full_of_standard_input_shows_the_source_read(project: Path) -> None:
    write(project, "train.py", "# the file on disk is not what is checked\n")
    result = CliRunner().invoke(
        cli,
        ["check", "--output-format", "full", "--stdin-filename", "train.py"],
        input=LOSS_OUTSIDE,
    )
    assert " --> train.py:8:12" in result.stdout
    assert "8 |     return tape.gradient(loss, model.trainable_variables)" in result.stdout


def test_full_of_a_notebook_shows_the_cell_line(project: Path) -> None:
    shutil.copy(FIXTURES / "notebooks" / "flag_persistent_tape_left_alive.ipynb", "nb.ipynb")
    result = run_cli("check", "--output-format", "full")
    lines = result.stdout.splitlines()
    assert lines[1] == " --> nb.ipynb:cell 2:1:1"
    cell = json.loads(Path("nb.ipynb").read_text())["cells"][1]["source"]
    first = (cell if isinstance(cell, str) else "".join(cell)).splitlines()[0]
    assert lines[3] == f"1 | {first}"


def test_grouped_puts_each_files_findings_under_its_path(two_files: Path) -> None:
    write(two_files, "c_loss.py", LOSS_OUTSIDE + "\n\n" + LOSS_OUTSIDE.split("\n", 1)[1])
    result = run_cli("check", "--output-format", "grouped")
    assert result.stdout.split("\n\n")[:2] == [
        f"a_loss.py:\n  8:12 TAP101 {LOSS_PROBLEM}",
        "b_release.py:\n  4:5 TAP103 [*] persistent tape `tape` is not released after its "
        "last use and is still alive while `model.evaluate(...)` runs",
    ]
    c_lines = result.stdout.split("\n\n")[2].splitlines()
    assert c_lines == [
        "c_loss.py:",
        f"  8:12  TAP101 {LOSS_PROBLEM}",
        f"  17:12 TAP101 {LOSS_PROBLEM}",
    ]


def test_the_format_can_come_from_the_environment(two_files: Path, monkeypatch) -> None:
    monkeypatch.setenv("TAPELINT_OUTPUT_FORMAT", "grouped")
    assert run_cli("check").stdout.startswith("a_loss.py:\n  8:12 TAP101 ")


def _on_a_terminal(*args: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    """What `tapelint ARGS` prints to a terminal (a real pseudo-terminal as its stdout);
    `env`: more environment variables (default: NO_COLOR, for the words alone)."""
    leader, follower = pty.openpty()
    colour = {key: value for key, value in os.environ.items() if key not in _COLOUR_VARIABLES}
    process = subprocess.Popen(
        [sys.executable, "-m", "tapelint", *args],
        cwd=cwd,
        stdout=follower,
        stderr=subprocess.DEVNULL,
        env={**colour, "TAPELINT_NO_CACHE": "1", **({"NO_COLOR": "1"} if env is None else env)},
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the other end closed: the process is done
            break
        if not chunk:
            break
        chunks.append(chunk)
    process.wait(timeout=60)
    os.close(leader)
    return b"".join(chunks).decode().replace("\r\n", "\n")


def test_concise_is_the_default_on_a_terminal_and_text_elsewhere(two_files: Path) -> None:
    assert _on_a_terminal("check", "-q", cwd=two_files).splitlines()[0] == (
        f"a_loss.py:8:12: TAP101 {LOSS_PROBLEM}"
    )
    piped = subprocess.run(
        [sys.executable, "-m", "tapelint", "check", "-q"],
        cwd=two_files,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert piped.stdout.splitlines()[0] == f"a_loss.py:8:12: TAP101 {LOSS_PROBLEM}; {LOSS_ADVICE}"


def test_rules_json_lists_every_rule(fixture_findings: list[dict]) -> None:
    result = run_cli("rules", "--output-format", "json")
    assert result.exit_code == 0
    listed = json.loads(result.stdout)
    assert [item["code"] for item in listed] == [rule.code for rule in all_rules()]
    for item, rule in zip(listed, all_rules(), strict=True):
        assert item == {
            "code": rule.code,
            "name": rule.name,
            "severity": rule.severity.value,
            "preview": rule.preview,
            "fixable": rule.fixable,
            "url": f"https://tapelint.readthedocs.io/rules/{rule.code}/",
            "summary": rule.summary(),
        }
    # `fixable` is what the rules do: exactly the rules whose findings over the fixtures
    # come with a fix.
    with_fixes = {item["code"] for item in fixture_findings if item["fix"] is not None}
    assert with_fixes == {item["code"] for item in listed if item["fixable"]}
    assert run_cli("rules").stdout.startswith("code ")  # the table stays the default


# Colour (`--color`, NO_COLOR, FORCE_COLOR, CLICOLOR_FORCE; tapelint.output.style)


def test_color_always_colours_the_formats_for_people(two_files: Path) -> None:
    for output_format in ("concise", "full", "grouped", "text"):
        plain = run_cli("check", "--output-format", output_format)
        coloured = run_cli("check", "--output-format", output_format, "--color", "always")
        assert ANSI not in plain.stdout + plain.stderr
        assert ANSI in coloured.stdout and ANSI in coloured.stderr  # findings and summary
        # The same words, only coloured.
        assert click.unstyle(coloured.stdout) == plain.stdout
        assert click.unstyle(coloured.stderr) == plain.stderr
    concise = run_cli("check", "--output-format", "concise", "--color", "always").stdout
    assert concise.splitlines()[0] == (
        f"\x1b[1ma_loss.py\x1b[0m:8:12: \x1b[31m\x1b[1mTAP101\x1b[0m {LOSS_PROBLEM}"
    )
    fixable = run_cli("check", "--output-format", "concise", "--color", "always").stdout
    assert "\x1b[33m\x1b[1mTAP103\x1b[0m \x1b[36m[*]\x1b[0m " in fixable  # a warning, fixable


def test_color_never_colours_the_formats_for_programs(two_files: Path) -> None:
    for output_format in ("json", "json-lines", "sarif", "github", "gitlab", "junit", "pylint"):
        result = run_cli("check", "--output-format", output_format, "--color", "always")
        assert ANSI not in result.stdout, output_format
    assert json.loads(run_cli("check", "--output-format", "json", "--color", "always").stdout)


def test_color_on_a_terminal_unless_turned_off(two_files: Path) -> None:
    assert ANSI in _on_a_terminal("check", "-q", cwd=two_files, env={})
    assert ANSI not in _on_a_terminal("check", "-q", "--color", "never", cwd=two_files, env={})
    assert ANSI not in _on_a_terminal("check", "-q", cwd=two_files, env={"NO_COLOR": "1"})
    assert ANSI not in _on_a_terminal("check", "-q", cwd=two_files, env={"TERM": "dumb"})
    # NO_COLOR is the user's default; the command line's --color always wins over it.
    forced = _on_a_terminal("check", "-q", "--color", "always", cwd=two_files)
    assert ANSI in forced


def _piped(*args: str, env: dict[str, str]) -> str:
    colour = {key: value for key, value in os.environ.items() if key not in _COLOUR_VARIABLES}
    result = subprocess.run(
        [sys.executable, "-m", "tapelint", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**colour, **env},
    )
    return result.stdout + result.stderr


def test_color_auto_through_a_pipe_is_plain_unless_forced(two_files: Path) -> None:
    check = ("check", "--output-format", "concise")
    assert ANSI not in _piped(*check, env={})
    assert ANSI in _piped(*check, env={"FORCE_COLOR": "1"})
    assert ANSI in _piped(*check, env={"CLICOLOR_FORCE": "1"})
    assert ANSI not in _piped(*check, env={"CLICOLOR_FORCE": "0"})
    assert ANSI not in _piped(*check, env={"FORCE_COLOR": ""})
    assert ANSI not in _piped(*check, env={"FORCE_COLOR": "1", "NO_COLOR": "1"})
