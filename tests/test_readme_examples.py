"""Every `$ tapelint check ...` example in the README prints what the README shows."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = re.findall(
    r"```text\n\$ tapelint (check [^\n]+)\n(.*?)```",
    (ROOT / "README.md").read_text(encoding="utf-8"),
    flags=re.DOTALL,
)


def test_the_readme_has_examples() -> None:
    assert len(EXAMPLES) >= 3


@pytest.mark.parametrize(("command", "output"), EXAMPLES, ids=[c for c, _ in EXAMPLES])
def test_example_output_is_what_tapelint_prints(command: str, output: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tapelint", *command.split(), "-q"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert result.stdout == output
