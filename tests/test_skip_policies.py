"""Skips by policy are visible: the summary counts them, `--show-files` says why, and a
setting turns each policy off (`skip-older-copies`, `skip-vendored-frameworks`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli_helpers import LOSS_OUTSIDE, run_cli, write

COPIES = ["train_BACKUP.py", "train (1).py", "archive/train.py"]


@pytest.fixture
def stale(project: Path) -> Path:
    """The audit's repro: a live `train.py` and three older copies of it."""
    for name in ["train.py", *COPIES]:
        write(project, name, LOSS_OUTSIDE)
    return project


def checked(result) -> list[str]:
    return sorted(path for path, _ in result.codes())


def test_the_summary_counts_the_files_skipped_by_policy(stale: Path) -> None:
    result = run_cli("check", "--output-format", "concise")
    assert result.exit_code == 1
    assert result.stderr.splitlines()[-1] == (
        "Found 1 problem in 1 file. 3 skipped by policy (--show-files says why)."
    )


def test_show_files_says_why_each_file_was_skipped(stale: Path) -> None:
    result = run_cli("check", "--show-files")
    assert result.exit_code == 0
    assert result.stdout == "train.py\n"
    assert sorted(result.stderr.splitlines()) == [
        "skipped archive/train.py: an older copy of train.py",
        "skipped train (1).py: an older copy of train.py",
        "skipped train_BACKUP.py: an older copy of train.py",
    ]


def test_skip_older_copies_false_checks_them(stale: Path) -> None:
    write(stale, "pyproject.toml", "[tool.tapelint]\nskip-older-copies = false\n")
    result = run_cli("check")
    assert checked(result) == sorted(["train.py", *COPIES])
    assert result.stderr.splitlines()[-1] == "Found 4 problems in 4 files."


def test_skip_vendored_frameworks_false_checks_a_framework_tree(project: Path) -> None:
    for name in ["python/eager/backprop_test.py", "core/BUILD.py"]:
        write(project, f"third_party/tensorflow/{name}", LOSS_OUTSIDE)
    write(project, "train.py", LOSS_OUTSIDE)
    shown = run_cli("check", "--show-files")
    assert shown.stderr == (
        "skipped third_party/tensorflow: a copy of tensorflow's own source tree\n"
    )
    result = run_cli("check", "--config", "skip-vendored-frameworks = false")
    assert checked(result) == [
        "third_party/tensorflow/core/BUILD.py",
        "third_party/tensorflow/python/eager/backprop_test.py",
        "train.py",
    ]


def test_a_skip_setting_must_be_true_or_false(project: Path) -> None:
    write(project, "pyproject.toml", '[tool.tapelint]\nskip-older-copies = "no"\n')
    result = run_cli("check")
    assert result.exit_code == 2
    assert "tool.tapelint.skip-older-copies: expected true or false" in result.stderr
