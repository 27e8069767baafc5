"""Each rule's runtime check, judged on events from a real run (fixtures/runtime/scenarios.py
under the probe), for the rules whose static half is not needed to exercise the check."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

from tapelint.validate.checks import CHECKS
from tapelint.validate.launch import probe_environment
from tapelint.validate.observations import Observations, read_events
from tapelint.validate.verdict import Site
from tests.validate.runs import RUNTIME

SCENARIOS = RUNTIME / "scenarios.py"
CRASH = RUNTIME / "scenarios_crash.py"  # ends with an uncaught error on purpose
_SITE = re.compile(r"#\s*site:\s*(TAP\d{3})\s+([a-z-]+)")


def _sites() -> list[tuple[str, int, str, str]]:
    found = []
    for script in (SCENARIOS, CRASH):
        lines = script.read_text(encoding="utf-8").splitlines()
        found += [
            (script.name, number, m.group(1), m.group(2))
            for number, line in enumerate(lines, start=1)
            if (m := _SITE.search(line))
        ]
    return found


@cache
def _observations(script: Path, scratch: str) -> Observations:
    Path(scratch).mkdir(parents=True, exist_ok=True)
    events = Path(scratch) / "events.jsonl"
    env = probe_environment(events, max_steps=1000)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    result = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300
    )
    assert (result.returncode != 0) == (script == CRASH), result.stderr[-3000:]
    return read_events(events, Path.cwd())


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> str:
    return os.fspath(tmp_path_factory.mktemp("scenarios"))


@pytest.mark.parametrize(("script", "line", "code", "status"), _sites(), ids=lambda v: str(v))
def test_check_judges_the_scenario(
    scratch: str, script: str, line: int, code: str, status: str
) -> None:
    path = RUNTIME / script
    observations = _observations(path, os.path.join(scratch, path.stem))
    verdict = CHECKS[code].judge(Site(str(path.resolve()), line, line), observations)
    assert verdict.status.value == status, verdict.evidence


def test_every_rule_of_the_catalogue_has_a_check() -> None:
    # The codes with a "runtime confirmation" in the project's rule catalogue (RULES.md).
    expected = {f"TAP{n}" for n in (101, 102, 103, 104, 105, 106, 201, 202, 203, 204, 301)}
    expected |= {f"TAP{n}" for n in (302, 303, 401, 402, 403, 501, 502)}
    assert set(CHECKS) == expected
