"""Each file's closest configuration, whoever checks it (the command from any directory,
flake8), `extend`, `--config` settings and `--isolated`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_helpers import LOSS_OUTSIDE, run_cli, write

# TAP201 at 5:22: the gradient of a plain tensor the tape never watched.
UNWATCHED = (
    "import tensorflow as tf\n"
    "w = tf.constant(3.0)\n"
    "with tf.GradientTape() as t2:\n"
    "    z = w * w\n"
    "print(t2.gradient(z, w))\n"
)


@pytest.fixture
def mono(project: Path) -> Path:
    """The issue's monorepo: a root config, and pkgA's own that ignores TAP201."""
    write(project, "pyproject.toml", "[tool.tapelint]\n")
    write(project, "pkgA/pyproject.toml", '[tool.tapelint]\nignore = ["TAP201"]\n')
    write(project, "pkgA/a.py", UNWATCHED)
    write(project, "b.py", UNWATCHED)
    return project


def test_a_check_at_the_root_uses_the_subprojects_config(mono: Path) -> None:
    result = run_cli("check", ".")
    assert result.exit_code == 1, result.stderr
    assert result.codes() == [("b.py", "TAP201")]


def test_a_check_inside_the_subproject_agrees(mono: Path, monkeypatch) -> None:
    monkeypatch.chdir(mono / "pkgA")
    result = run_cli("check", ".")
    assert result.exit_code == 0, result.stderr
    assert result.codes() == []
    # And from the root, naming the file.
    monkeypatch.chdir(mono)
    assert run_cli("check", "pkgA/a.py").codes() == []


def test_flake8_agrees_with_the_command(mono: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", "--select", "TAP", "."],
        cwd=mono,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.stderr == ""
    assert [line.split(" ")[0] for line in result.stdout.splitlines()] == ["./b.py:5:22:"]


def test_a_subprojects_excludes_apply_to_a_run_from_the_root(mono: Path) -> None:
    write(mono, "pkgA/pyproject.toml", '[tool.tapelint]\nextend-exclude = ["gen/"]\n')
    write(mono, "pkgA/gen/g.py", UNWATCHED)
    result = run_cli("check", ".")
    assert sorted(path for path, _ in result.codes()) == ["b.py", "pkgA/a.py"]


def test_a_tapelint_toml_holds_the_keys_at_its_top_level(mono: Path) -> None:
    # In one directory, tapelint.toml comes before pyproject.toml.
    write(mono, "tapelint.toml", 'ignore = ["TAP201"]\n')
    assert run_cli("check", ".").codes() == []


def test_extend_inherits_and_the_extending_file_wins(mono: Path) -> None:
    write(mono, "base.toml", 'ignore = ["TAP201"]\nselect = ["TAP1"]\n')
    write(
        mono, "pkgA/pyproject.toml", '[tool.tapelint]\nextend = "../base.toml"\nselect = ["TAP"]\n'
    )
    write(mono, "pkgA/train.py", LOSS_OUTSIDE)
    result = run_cli("check", ".")
    # pkgA: TAP201 ignored (from the base), TAP101 selected (its own select replaced the base's).
    assert result.codes() == [("b.py", "TAP201"), ("pkgA/train.py", "TAP101")]


def test_an_extend_cycle_is_a_config_error(mono: Path) -> None:
    write(mono, "pkgA/pyproject.toml", '[tool.tapelint]\nextend = "other.toml"\n')
    write(mono, "pkgA/other.toml", 'extend = "pyproject.toml"\n')
    result = run_cli("check", ".")
    assert result.exit_code == 2
    assert "extend: a cycle" in result.stderr


def test_config_takes_toml_settings_on_top_of_each_files_config(mono: Path) -> None:
    write(mono, "pkgA/train.py", LOSS_OUTSIDE)
    result = run_cli("check", "--config", 'ignore = ["TAP101"]', ".")
    # The key replaces each config's own: pkgA's `ignore = ["TAP201"]` too.
    assert result.codes() == [("b.py", "TAP201"), ("pkgA/a.py", "TAP201")]


def test_a_misspelt_key_in_config_settings_names_the_option(mono: Path) -> None:
    result = run_cli("check", "--config", 'ignor = ["TAP201"]', ".")
    assert result.exit_code == 2
    assert result.stderr == "error: --config: ignor: unknown key; did you mean ignore?\n"


def test_isolated_reads_no_config_file(mono: Path) -> None:
    result = run_cli("check", "--isolated", ".")
    assert result.codes() == [("b.py", "TAP201"), ("pkgA/a.py", "TAP201")]
    clash = run_cli("check", "--isolated", "--config", "pyproject.toml", ".")
    assert clash.exit_code == 2
    assert "--isolated" in clash.stderr
