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


@pytest.fixture
def two_files(project: Path) -> Path:
    write(project, "a_loss.py", LOSS_OUTSIDE)
    write(project, "b_release.py", NOT_RELEASED)
    return project


def test_every_rule_message_is_a_problem_then_advice() -> None:
    """Over every fixture, each finding of a rule (not of the engine) splits into a problem
    and advice that together are the message; each such rule is seen at least once."""
    result = subprocess.run(
        [sys.executable, "-m", "tapelint", "check", "fixtures", *ALL_RULES, *AS_JSON],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    found = json.loads(result.stdout)
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


def _on_a_terminal(*args: str, cwd: Path) -> str:
    """What `tapelint ARGS` prints to a terminal (a real pseudo-terminal as its stdout)."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "tapelint", *args],
        cwd=cwd,
        stdout=follower,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "TAPELINT_NO_CACHE": "1"},
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
