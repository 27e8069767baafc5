"""The README's Quick start: exactly two commands, the second the one CI runs (`.ci/run`), and
the bundled example finds, and then confirms at runtime, the four problems the README
promises."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = "examples/quickstart.py"
PROMISED = ["TAP502", "TAP102", "TAP303", "TAP401"]


def quick_start_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Quick start\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```\w*\n(.*?)```", section, flags=re.DOTALL)
    lines = (line.strip() for block in blocks for line in block.splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def test_the_quick_start_has_two_commands_the_second_what_ci_runs() -> None:
    install_and_try, install_and_test = quick_start_commands()
    assert f"tapelint check {EXAMPLE}" in install_and_try
    assert f"tapelint validate {EXAMPLE}" in install_and_try
    ci = [
        line
        for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
        if line and not line.startswith("#") and "pytest" in line
    ]
    assert ci == [install_and_test]


def test_both_quick_start_commands_install_the_same_tensorflow() -> None:
    install_and_try, install_and_test = quick_start_commands()
    pins = [
        re.findall(r"'(tensorflow[\w-]*==[\d.]+)'", c) for c in (install_and_try, install_and_test)
    ]
    assert pins[0] == pins[1] and len(pins[0]) == 1


def tapelint(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tapelint", *args, "--output-format", "json", EXAMPLE],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
        check=False,
    )


def test_the_example_has_the_four_promised_findings() -> None:
    result = tapelint("check")
    assert result.returncode == 1, result.stderr
    assert [finding["code"] for finding in json.loads(result.stdout)] == PROMISED


def test_the_validator_confirms_all_four() -> None:
    result = tapelint("validate")
    assert result.returncode == 1, result.stderr
    findings = json.loads(result.stdout)
    assert [(f["code"], f["runtime"]) for f in findings] == [(c, "confirmed") for c in PROMISED]
    unused_head = next(f for f in findings if f["code"] == "TAP401")["cost"]["text"]
    assert "unused_head/kernel, unused_head/bias" in unused_head
