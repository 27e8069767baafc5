"""Each rule's runtime check, judged on events from a real run (fixtures/runtime/scenarios.py
under the probe) at sites where only a static false positive could put a diagnostic: the
refutations the end-to-end scripts cannot show."""

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
_SITE = re.compile(r"#\s*site:\s*(TAP\d{3})\s+([a-z-]+)")


def _sites() -> list[tuple[int, str, str]]:
    lines = SCENARIOS.read_text(encoding="utf-8").splitlines()
    return [
        (number, m.group(1), m.group(2))
        for number, line in enumerate(lines, start=1)
        if (m := _SITE.search(line))
    ]


@cache
def _observations(scratch: str) -> Observations:
    events = Path(scratch) / "events.jsonl"
    codes = frozenset(code for _, code, _ in _sites())
    env = probe_environment(events, max_steps=1000, codes=codes)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    result = subprocess.run(
        [sys.executable, str(SCENARIOS)], env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return read_events(events, Path.cwd())


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> str:
    return os.fspath(tmp_path_factory.mktemp("scenarios"))


@pytest.mark.parametrize(("line", "code", "status"), _sites(), ids=lambda v: str(v))
def test_check_judges_the_scenario(scratch: str, line: int, code: str, status: str) -> None:
    verdict = CHECKS[code](Site(str(SCENARIOS.resolve()), line, line), _observations(scratch))
    assert verdict.status.value == status, verdict.evidence


def test_every_rule_of_the_catalogue_has_a_check() -> None:
    # The codes with a "runtime confirmation" in the project's rule catalogue (RULES.md).
    expected = {f"TAP{n}" for n in (101, 102, 103, 104, 105, 106, 107, 201, 202, 203, 204)}
    expected |= {f"TAP{n}" for n in (301, 302, 303, 304, 401, 402, 403, 501, 502)}
    assert set(CHECKS) == expected
