"""Running `tapelint validate` on the runtime fixtures, once per fixture per test session.

Each fixture states what the run must show: `# verdict: CODE STATUS` on the reported line,
several separated by commas (STATUS is a verdict, `runtime` for a finding only the run made,
or `found` for either a confirmed static diagnostic or a runtime finding: rules that other
branches make static),
`# exit: N`, and optionally `# args: ...` (for the script), `# options: ...` (for `tapelint
validate`, e.g. `--preview`), `# timeout: SECONDS` and `# output: shown` (run without
`--quiet`: what the program prints reaches the run's stderr, as `--output-format json`
sends it there).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = ROOT / "fixtures" / "runtime"
KERAS2_STACK = Path(__file__).resolve().parent / "keras2_stack"
_VERDICTS = re.compile(r"#\s*verdict:\s*(.*)$")  # `TAP402 confirmed, TAP401 refuted`
_VERDICT = re.compile(r"(TAP\d{3})\s+([a-z-]+)")
_HEADER = re.compile(r"^#\s*(exit|args|options|timeout|output):\s*(.+)$")


@dataclass(frozen=True)
class Expectation:
    exit_code: int
    args: tuple[str, ...]
    options: tuple[str, ...]
    timeout: str | None
    output_shown: bool


@dataclass(frozen=True)
class Run:
    exit_code: int
    items: list[dict]
    stderr: str


def expectation(path: Path) -> Expectation:
    headers = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        match = _HEADER.match(line)
        if match:
            headers[match.group(1)] = match.group(2).strip()
    return Expectation(
        int(headers["exit"]),
        tuple(shlex.split(headers.get("args", ""))),
        tuple(shlex.split(headers.get("options", ""))),
        headers.get("timeout"),
        headers.get("output") == "shown",
    )


def expected_verdicts(paths: list[Path]) -> set[tuple[str, int, str, str]]:
    """{(file name, line, code, status)} from the markers of `paths`."""
    found = set()
    for path in paths:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            marker = _VERDICTS.search(line)
            if marker:
                for match in _VERDICT.finditer(marker.group(1)):
                    found.add((path.name, number, match.group(1), match.group(2)))
    return found


@cache
def validate(name: str, *, keras2: bool = False) -> Run:
    """`keras2`: on a Keras 2 stack, `tf_keras` as `keras` and as `tf.keras`."""
    env = None
    if keras2:
        paths = [str(KERAS2_STACK), os.environ.get("PYTHONPATH", "")]
        env = {
            **os.environ,
            "TF_USE_LEGACY_KERAS": "1",
            "PYTHONPATH": os.pathsep.join(path for path in paths if path),
        }
    script = RUNTIME / name
    expect = expectation(script)
    options = ["--output-format", "json", *expect.options]
    if not expect.output_shown:
        options.insert(0, "--quiet")
    if expect.timeout:
        options += ["--timeout", expect.timeout]
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "tapelint",
            "validate",
            *options,
            str(script.relative_to(ROOT)),
            *expect.args,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=env,
    )
    items = json.loads(result.stdout) if result.stdout.strip() else []
    return Run(result.returncode, items, result.stderr)


def observed_verdicts(run: Run) -> set[tuple[str, int, str, str]]:
    return {
        (
            Path(item["path"]).name,
            item["line"],
            item["code"],
            "runtime" if item["origin"] == "runtime" else item["runtime"],
        )
        for item in run.items
    }
