"""Limits on every input format (issue 30): nesting and size that would exhaust Python's
stack or the machine's memory, and paths that are not regular files, end as one finding or
one message about that input, never as an internal error or a hang. Notebooks, source
files (plain and percent-format), standard input, the config file and the result cache;
real files, FIFOs and devices, and real processes where the old behaviour was a hang."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tapelint.cli import cli
from tapelint.settings.bounded_read import read_regular_file
from tapelint.settings.config import MAX_CONFIG_BYTES
from tests.cli_helpers import LOSS_OUTSIDE, Run, run_cli, run_subprocess, write

# The notebook of the audit: 200,000 nested `[` in a cell's metadata, and a trigger word.
DEEP_NOTEBOOK = (
    '{"cells": [{"cell_type": "code", "source": "GradientTape", "metadata": '
    + "[" * 200_000
    + "]" * 200_000
    + "}]}"
)
# A statement nested more deeply than Python's parser accepts.
DEEP_CODE = (
    "import tensorflow as tf\n\nTape = tf.GradientTape\nx = "
    + "(" * 5_000
    + "1"
    + ")" * 5_000
    + "\n"
)


def _stdin(data: str, *args: str) -> Run:
    result = CliRunner().invoke(cli, ["check", "--no-cache", *args], input=data)
    return Run(result.exit_code, result.stdout, result.stderr)


def test_a_notebook_nested_200000_levels_deep_is_tap002_and_the_run_goes_on(project):
    write(project, "deep.ipynb", DEEP_NOTEBOOK)
    write(project, "train.py", LOSS_OUTSIDE)
    result = run_cli("check", "--no-cache", "--jobs", "1")
    assert result.exit_code == 1, result.stderr
    assert result.stdout.splitlines()[0] == (
        "deep.ipynb:1:1: TAP002 not a notebook: its JSON is nested too deeply"
    )
    assert result.codes()[1] == ("train.py", "TAP101")
    assert "internal error" not in result.stderr


def test_a_deep_notebook_on_standard_input_is_tap002():
    result = _stdin(DEEP_NOTEBOOK, "--stdin-filename", "deep.ipynb")
    assert (result.exit_code, result.stdout) == (
        1,
        "deep.ipynb:1:1: TAP002 not a notebook: its JSON is nested too deeply\n",
    )


def test_deep_code_on_standard_input_is_tap001():
    result = _stdin(DEEP_CODE, "-")
    assert result.exit_code == 1
    assert result.stdout.startswith("-:4:") and " TAP001 cannot parse: " in result.stdout


def test_deep_code_in_a_percent_format_cell_is_tap001_and_the_run_goes_on(project):
    write(project, "cells.py", "# %%\nimport tensorflow as tf\n\n# %%\n" + DEEP_CODE)
    write(project, "train.py", LOSS_OUTSIDE)
    result = run_cli("check", "--no-cache", "--jobs", "1")
    assert result.codes() == [("cells.py", "TAP001"), ("train.py", "TAP101")]
    assert "internal error" not in result.stderr


def test_a_file_with_a_utf8_bom_and_another_coding_cookie_is_tap001(project):
    # Python refuses it: "SyntaxError: encoding problem: iso-8859-1 with BOM".
    cookie = "# -*- coding: latin-1 -*-\n"
    write(project, "train.py", "")
    (project / "train.py").write_bytes(b"\xef\xbb\xbf" + (cookie + LOSS_OUTSIDE).encode())
    write(project, "second.py", "#!/usr/bin/env python\n# vim: set fileencoding=cp1252 :\n")
    with (project / "second.py").open("ab") as file:
        file.write(LOSS_OUTSIDE.encode())
    data = (project / "second.py").read_bytes()
    (project / "second.py").write_bytes(b"\xef\xbb\xbf" + data)
    result = run_cli("check", "--no-cache")
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        "second.py:2:1: TAP001 cannot parse: the file starts with a UTF-8 byte order mark "
        "but declares cp1252",
        "train.py:1:1: TAP001 cannot parse: the file starts with a UTF-8 byte order mark "
        "but declares iso-8859-1",
    ]


@pytest.mark.parametrize("cookie", ["", "# -*- coding: utf-8 -*-\n", "# coding=utf_8\n"])
def test_a_utf8_bom_with_a_utf8_cookie_or_none_is_checked(project, cookie):
    write(project, "train.py", "")
    (project / "train.py").write_bytes(b"\xef\xbb\xbf" + (cookie + LOSS_OUTSIDE).encode())
    assert [code for _, code in run_cli("check", "--no-cache").codes()] == ["TAP101"]


# ---------------------------------------------------------------------- the config file
def test_a_config_nested_too_deeply_is_a_config_error(project):
    write(project, "pyproject.toml", "[tool.tapelint]\nselect = " + "[" * 100_000 + "]" * 100_000)
    write(project, "train.py", LOSS_OUTSIDE)
    result = run_cli("check", "--no-cache")
    assert result.exit_code == 2
    assert (
        result.stderr == f"error: {project / 'pyproject.toml'}: invalid TOML: nested too deeply\n"
    )


def test_a_config_that_is_not_utf8_is_a_config_error(project):
    (project / "pyproject.toml").write_bytes(b'[tool.tapelint]\nselect = ["\xff"]\n')
    result = run_cli("check", "--no-cache")
    assert result.exit_code == 2
    assert "pyproject.toml: invalid TOML: not UTF-8" in result.stderr


def test_a_config_file_over_the_size_limit_is_not_read(project):
    config = project / "big.toml"
    with config.open("wb") as file:  # sparse: no disk used
        file.truncate(MAX_CONFIG_BYTES + 1)
    write(project, "train.py", LOSS_OUTSIDE)
    result = run_cli("check", "--no-cache", "--config", "big.toml")
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: {config}: cannot read: larger than {MAX_CONFIG_BYTES:,} bytes\n"
    )


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs")
def test_a_fifo_named_pyproject_toml_above_the_project_is_passed_over(tmp_path):
    os.mkfifo(tmp_path / "pyproject.toml")  # nothing ever writes to it: reading would block
    project = tmp_path / "project"
    write(project, "train.py", LOSS_OUTSIDE)
    result = run_subprocess("check", "--no-cache", cwd=project, timeout=120)
    assert result.exit_code == 1, result.stderr
    assert [code for _, code in result.codes()] == ["TAP101"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs")
def test_a_fifo_given_as_the_config_is_a_config_error(tmp_path):
    os.mkfifo(tmp_path / "settings.toml")
    write(tmp_path, "train.py", LOSS_OUTSIDE)
    result = run_subprocess("check", "--config", "settings.toml", cwd=tmp_path, timeout=120)
    assert result.exit_code == 2
    assert result.stderr.endswith("settings.toml: cannot read: not a regular file\n")


# ---------------------------------------------------------------------- the result cache
def _warm_cache(root: Path) -> tuple[Run, list[Path]]:
    write(root, "train.py", LOSS_OUTSIDE)
    write(root, "helper.py", LOSS_OUTSIDE.replace("train_step", "helper_step"))
    cold = run_subprocess("check", "--cache-dir", "cache", cwd=root)
    entries = sorted((root / "cache" / "entries").iterdir())
    assert entries, "the first run stored nothing"
    return cold, entries


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="FIFOs and /dev/zero")
@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_a_cache_entry_that_is_a_fifo_or_a_device_is_a_miss(tmp_path, kind):
    cold, entries = _warm_cache(tmp_path)
    for entry in entries:
        entry.unlink()
        if kind == "fifo":
            os.mkfifo(entry)
        else:
            entry.symlink_to("/dev/zero")
    # The old reader blocked on the FIFO forever, and read /dev/zero until memory ran out.
    warm = run_subprocess("check", "--cache-dir", "cache", cwd=tmp_path, timeout=120)
    assert (warm.exit_code, warm.stdout, warm.stderr) == (cold.exit_code, cold.stdout, cold.stderr)
    assert all(entry.is_file() and not entry.is_symlink() for entry in entries)  # rewritten


def test_a_cache_entry_over_the_size_limit_is_a_miss_and_is_not_read(tmp_path):
    cold, entries = _warm_cache(tmp_path)
    for entry in entries:
        text = entry.read_bytes()
        with entry.open("ab") as file:  # the entry, then a sparse tail of 64 MiB of NULs
            file.truncate(64 * 1024 * 1024 + len(text))
    warm = run_subprocess("check", "--cache-dir", "cache", cwd=tmp_path)
    assert (warm.exit_code, warm.stdout, warm.stderr) == (cold.exit_code, cold.stdout, cold.stderr)
    assert all(entry.stat().st_size < 1024 * 1024 for entry in entries)  # rewritten


def test_bounded_reading_stops_at_the_limit_whatever_the_file_says(tmp_path):
    small = tmp_path / "small.json"
    small.write_bytes(b"x" * 10)
    assert read_regular_file(small, 10) == b"x" * 10
    with pytest.raises(OSError, match="larger than 9 bytes"):
        read_regular_file(small, 9)
    with pytest.raises(OSError):
        read_regular_file(tmp_path, 10)
    if Path("/dev/zero").exists():
        with pytest.raises(OSError, match="not a regular file"):
            read_regular_file(Path("/dev/zero"), 10)
