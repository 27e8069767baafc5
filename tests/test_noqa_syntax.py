"""Rule names go in `# tapelint: ignore[...]`, which neither ruff nor flake8 misreads (real
ruff and real flake8 here); `# noqa: NAME` is still honoured; `--ignore-noqa`."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from tests.cli_helpers import LOSS_OUTSIDE, run_cli, write

GRADIENT_CALL = "    return tape.gradient(loss, model.trainable_variables)"  # TAP101, line 8


def with_comment(comment: str) -> str:
    return LOSS_OUTSIDE.replace(GRADIENT_CALL, f"{GRADIENT_CALL}  {comment}")


def test_tapelint_ignore_takes_rule_names_and_codes(project: Path) -> None:
    write(project, "by_name.py", with_comment("# tapelint: ignore[loss-outside-tape]"))
    write(project, "by_code.py", with_comment("# tapelint: ignore[TAP101]"))
    write(project, "other.py", with_comment("# tapelint: ignore[persistent-tape-not-released]"))
    result = run_cli("check")
    assert result.codes() == [("other.py", "TAP101")]


def test_a_rule_name_in_noqa_is_still_honoured(project: Path) -> None:
    write(project, "train.py", with_comment("# noqa: loss-outside-tape"))
    assert run_cli("check").codes() == []


def test_ignore_noqa_reports_what_every_comment_silences(project: Path) -> None:
    write(project, "line.py", with_comment("# noqa: TAP101"))
    write(project, "own.py", with_comment("# tapelint: ignore[loss-outside-tape]"))
    write(project, "whole.py", "# tapelint: noqa\n" + LOSS_OUTSIDE)
    assert run_cli("check").codes() == []
    result = run_cli("check", "--ignore-noqa")
    assert result.codes() == [("line.py", "TAP101"), ("own.py", "TAP101"), ("whole.py", "TAP101")]


# An unused import (F401 for both tools) on a line that also holds the comment.
def _unused_import(comment: str) -> str:
    return f"import os  {comment}\n"


def test_ruff_neither_warns_about_nor_obeys_the_tapelint_comment(tmp_path: Path) -> None:
    ruff = shutil.which("ruff")
    assert ruff is not None, "ruff is a test dependency"

    def run(comment: str) -> subprocess.CompletedProcess[str]:
        write(tmp_path, "m.py", _unused_import(comment))
        command = [ruff, "check", "--isolated", "--select", "F401", "--output-format", "concise"]
        return subprocess.run(
            [*command, "m.py"], cwd=tmp_path, capture_output=True, text=True, check=False
        )

    new = run("# tapelint: ignore[loss-outside-tape]")
    assert "F401" in new.stdout
    assert "noqa" not in new.stderr, new.stderr
    old = run("# noqa: loss-outside-tape")  # the form this replaces: ruff warns
    assert "Invalid `# noqa` directive" in old.stderr


def test_flake8_does_not_take_the_tapelint_comment_for_a_blanket_noqa(tmp_path: Path) -> None:
    def run(comment: str) -> str:
        write(tmp_path, "m.py", _unused_import(comment))
        return subprocess.run(
            [sys.executable, "-m", "flake8", "--isolated", "--select", "F401", "m.py"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            check=False,
        ).stdout

    assert "F401" in run("# tapelint: ignore[loss-outside-tape]")
    assert run("# noqa: loss-outside-tape") == ""  # the old form silenced every code
