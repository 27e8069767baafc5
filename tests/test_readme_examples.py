"""Every `$ tapelint check ...` example in the README and the documentation pages prints what
the page shows, as a terminal shows it: the examples are what a person sees, so they run with
the output format a terminal gets by default (`concise`) unless they name another."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# What `tapelint check` prints by default when standard output is a terminal.
TERMINAL = {**os.environ, "TAPELINT_OUTPUT_FORMAT": "concise"}
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
EXAMPLE = re.compile(r"```text\n\$ tapelint (check [^\n]+)\n(.*?)```", flags=re.DOTALL)
EXAMPLES = [
    (page.relative_to(ROOT).as_posix(), command, output)
    for page in PAGES
    for command, output in EXAMPLE.findall(page.read_text(encoding="utf-8"))
]


def test_the_readme_and_the_docs_have_examples() -> None:
    pages = [page for page, _, _ in EXAMPLES]
    assert "README.md" in pages
    assert len(EXAMPLES) >= 3


@pytest.mark.parametrize(
    ("page", "command", "output"), EXAMPLES, ids=[f"{p}: {c}" for p, c, _ in EXAMPLES]
)
def test_example_output_is_what_tapelint_prints(page: str, command: str, output: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tapelint", *command.split(), "-q"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=TERMINAL,
        timeout=120,
        check=False,
    )
    assert result.stdout == output


def test_the_readme_source_is_the_example_it_checks() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    [source] = re.findall(r"```python\n(def train_step.*?)```", readme, flags=re.DOTALL)
    assert source in (ROOT / "examples" / "train_step.py").read_text(encoding="utf-8")
