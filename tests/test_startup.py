"""Start-up: `--version`, `--help` and shell completion do not import libcst or the rules.

The import graph is asserted, not the time (a shared machine's timings are noise); the
figures are in docs/performance.md, from `python3 bench/run.py --startup-only`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import tapelint

# What a start that only parses the command line must not load.
HEAVY = ("libcst", "tapelint.rules", "tapelint.linter.engine", "tapelint.cli.check")


def imported_by(*args: str, env: dict[str, str] | None = None) -> tuple[set[str], str]:
    """The modules a `tapelint ARGS` run imported (from `python3 -X importtime`), and what
    it printed."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "tapelint", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    modules = {
        line.rpartition("|")[2].strip()
        for line in result.stderr.splitlines()
        if line.startswith("import time:")
    }
    return modules, result.stdout


def heavy_in(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.startswith(HEAVY))


def test_importing_the_command_loads_neither_libcst_nor_the_rules():
    code = "import sys, tapelint.cli; print('\\n'.join(sys.modules))"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    modules = set(result.stdout.split())
    assert "tapelint.cli" in modules
    assert heavy_in(modules) == []


@pytest.mark.parametrize(
    "args", [("--version",), ("-V",), ("--help",), ("check", "--help"), ("rule", "--help")]
)
def test_version_and_help_load_neither_libcst_nor_the_rules(args):
    modules, printed = imported_by(*args)
    assert printed.startswith(("tapelint ", "Usage: tapelint"))
    assert heavy_in(modules) == []


def test_completing_an_option_loads_neither_libcst_nor_the_rules():
    modules, printed = imported_by(
        env={
            "_TAPELINT_COMPLETE": "bash_complete",
            "COMP_WORDS": "tapelint check --ou",
            "COMP_CWORD": "2",
        }
    )
    assert "--output-format" in printed
    assert heavy_in(modules) == []


def test_registering_the_flake8_plugin_loads_neither_libcst_nor_the_rules():
    # What flake8 does at start for every plugin, whatever it then selects: load the
    # `flake8.extension` entry point (and read the class's name and version).
    code = (
        "import sys\n"
        "from importlib.metadata import entry_points\n"
        "(plugin,) = [e for e in entry_points(group='flake8.extension') if e.name == 'TAP']\n"
        "checker = plugin.load()\n"
        "print(checker.name, checker.version)\n"
        "print('\\n'.join(sys.modules))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    name, *modules = result.stdout.split("\n")
    assert name.startswith("tapelint ")
    assert "tapelint.integrations.flake8_plugin" in modules
    assert heavy_in(set(modules)) == []


def test_the_version_is_pyprojects_and_printing_it_reads_no_distribution_metadata():
    pyproject = Path(__file__).resolve().parents[1] / "pyproject.toml"
    version = tomllib.loads(pyproject.read_text("utf-8"))["project"]["version"]
    assert tapelint.__version__ == version
    modules, printed = imported_by("-V")
    assert printed == f"tapelint {version}\n"
    assert "importlib.metadata" not in modules
