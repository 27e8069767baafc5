"""Each rule's runtime check, judged on events from a real run (fixtures/runtime/scenarios.py
under the probe) at sites where only a static false positive could put a diagnostic: the
refutations the end-to-end scripts cannot show."""

from __future__ import annotations

import json
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
    expected |= {f"TAP{n}" for n in (301, 302, 303, 304, 401, 402, 403, 404, 501, 502, 503)}
    assert set(CHECKS) == expected


def _judged(tmp_path: Path, code: str, site: Site, *events: dict) -> tuple[str, str]:
    path = tmp_path / "events.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    verdict = CHECKS[code](site, read_events(path, tmp_path))
    return verdict.status.value, verdict.evidence


def test_an_unused_tape_is_judged_by_the_operations_it_recorded(tmp_path: Path) -> None:
    """TAP107: a tape created at the `with` line that served no call over its life; when
    the run did not count operations (TAP107 was not validated from the start), nothing is
    known of what it recorded."""
    site = Site(str((tmp_path / "train.py").resolve()), 3, 5)
    tape = {"kind": "tape", "pid": 1, "tape": 7, "persistent": False, "traced": False}
    tape["at"] = [["train.py", 3, 3, 5]]
    end = {"kind": "tape-end", "pid": 1, "tape": 7, "calls": 0, "alive": False, "traced": False}
    assert _judged(tmp_path, "TAP107", site, tape, {**end, "ops": 12}) == (
        "confirmed",
        "the tape served no call and recorded 12 operations",
    )
    assert _judged(tmp_path, "TAP107", site, tape, {**end, "ops": None})[0] == "inconclusive"
    assert _judged(tmp_path, "TAP107", site, tape, {**end, "ops": 0})[0] == "refuted"
    gradient = {"kind": "gradient", "pid": 1, "tape": 7, "at": [["train.py", 6, 6, 1]]}
    assert _judged(tmp_path, "TAP107", site, tape, gradient)[0] == "refuted"
    assert _judged(tmp_path, "TAP107", site, {**tape, "traced": True})[0] == "inconclusive"
