"""`tapelint check --show-fixes`: the fixes applied per file and code, or the fixable findings."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.cli_helpers import (
    LOSS_OUTSIDE,
    NOT_RELEASED,
    PERSISTENT_ONCE_INSIDE,
    run_cli,
    write,
)
from tests.fixture_markers import FIXTURES


@pytest.fixture
def fixable(project: Path) -> Path:
    """TAP103 with a safe fix (4:5), TAP102 with an unsafe one (5:26), TAP101 with none (8:12)."""
    write(project, "a_release.py", NOT_RELEASED)
    write(project, "b_persistent.py", PERSISTENT_ONCE_INSIDE)
    write(project, "c_loss.py", LOSS_OUTSIDE)
    return project


def findings(stdout: str) -> list[str]:
    """`path:line:col: CODE` and the `[*]` mark when there is one, per finding line."""
    found = []
    for line in stdout.splitlines():
        if ": TAP" in line:
            location, _, rest = line.partition(": ")
            code, mark = rest.split(" ")[:2]
            found.append(f"{location}: {code}{' [*]' if mark == '[*]' else ''}")
    return found


def test_check_marks_what_fix_would_fix_and_counts_the_hidden_unsafe_fixes(fixable: Path) -> None:
    result = run_cli("check", "--show-fixes")
    assert result.exit_code == 1
    assert findings(result.stdout) == [
        "a_release.py:4:5: TAP103 [*]",
        "b_persistent.py:5:26: TAP102",
        "c_loss.py:8:12: TAP101",
    ]
    assert result.stdout.endswith(
        "\n[*] 1 fixable with the --fix option "
        "(1 hidden fix can be enabled with the --unsafe-fixes option).\n"
    )


def test_with_unsafe_fixes_the_unsafe_ones_are_marked_and_counted(fixable: Path) -> None:
    result = run_cli("check", "--show-fixes", "--unsafe-fixes")
    assert findings(result.stdout)[:2] == [
        "a_release.py:4:5: TAP103 [*]",
        "b_persistent.py:5:26: TAP102 [*]",
    ]
    assert result.stdout.endswith("\n[*] 2 fixable with the --fix option.\n")


def test_only_unsafe_fixes_says_none_is_available_without_the_option(project: Path) -> None:
    write(project, "b_persistent.py", PERSISTENT_ONCE_INSIDE)
    result = run_cli("check", "--show-fixes")
    assert result.stdout.endswith(
        "\nNo fixes available (1 hidden fix can be enabled with the --unsafe-fixes option).\n"
    )


def test_nothing_fixable_adds_nothing(project: Path) -> None:
    write(project, "c_loss.py", LOSS_OUTSIDE)
    assert run_cli("check", "--show-fixes").stdout == run_cli("check").stdout


def test_fix_lists_the_fixes_applied_per_file_and_code(fixable: Path) -> None:
    twice = NOT_RELEASED + NOT_RELEASED.replace("import tensorflow as tf\n", "")
    write(fixable, "d_twice.py", twice)
    result = run_cli("check", "--fix", "--unsafe-fixes", "--show-fixes")
    assert result.exit_code == 1  # the TAP101 has no fix
    assert findings(result.stdout) == ["c_loss.py:8:12: TAP101"]
    assert result.stdout.split("\n", 1)[1] == (
        "\n"
        "Fixed 4 problems:\n"
        "- a_release.py:\n"
        "    1 x TAP103 (persistent-tape-not-released)\n"
        "- b_persistent.py:\n"
        "    1 x TAP102 (unnecessary-persistent-tape)\n"
        "- d_twice.py:\n"
        "    2 x TAP103 (persistent-tape-not-released)\n"
    )
    assert "Found 5 problems in 4 files (4 fixed, 1 remaining)." in result.stderr


def test_diff_lists_what_would_be_fixed_on_stderr(fixable: Path) -> None:
    result = run_cli("check", "--diff", "--show-fixes")
    assert result.stdout.startswith("--- a_release.py\n+++ a_release.py\n")
    assert "Would fix" not in result.stdout
    assert (
        "\nWould fix 1 problem:\n- a_release.py:\n    1 x TAP103 (persistent-tape-not-released)\n"
    ) in result.stderr
    assert (fixable / "a_release.py").read_text() == NOT_RELEASED


def test_a_notebook_fix_is_listed_under_the_notebook(project: Path) -> None:
    shutil.copy(FIXTURES / "notebooks" / "flag_persistent_tape_left_alive.ipynb", "nb.ipynb")
    result = run_cli("check", "--fix", "--show-fixes")
    assert result.stdout == (
        "\nFixed 1 problem:\n- nb.ipynb:\n    1 x TAP103 (persistent-tape-not-released)\n"
    )


def test_machine_readable_output_stays_alone_on_stdout(fixable: Path) -> None:
    result = run_cli("check", "--show-fixes", "--output-format", "json")
    assert [d["code"] for d in json.loads(result.stdout)] == ["TAP103", "TAP102", "TAP101"]
    assert "[*] 1 fixable with the --fix option" in result.stderr
