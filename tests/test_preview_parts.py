"""A part of a rule still in preview (`Finding.preview`) is reported only in preview mode:
the TAP402 fixtures that ask for preview lose exactly their preview findings without it."""

from __future__ import annotations

from pathlib import Path

import pytest
from tapelint.rules.updates.gradient_variable_mismatch import LENGTHS_IN_PREVIEW

from tapelint.linter.engine import Linter
from tapelint.linter.registry import all_rules, rule_by_code_or_name
from tests.fixture_markers import FIXTURES, asks_preview, expected

DEFAULT_RULES = [r for r in all_rules() if not r.preview]
LENGTH_FIXTURES = sorted(p for p in (FIXTURES / "TAP402").glob("flag_*.py") if asks_preview(p))


def _found(path: Path, *, preview: bool) -> set[tuple[int, str]]:
    diagnostics = Linter(DEFAULT_RULES, preview=preview).check_bytes(path.read_bytes(), str(path))
    return {(d.start.line, d.code) for d in diagnostics}


def test_there_are_length_fixtures() -> None:
    assert len(LENGTH_FIXTURES) >= 4


@pytest.mark.parametrize("path", LENGTH_FIXTURES, ids=[p.name for p in LENGTH_FIXTURES])
def test_lengths_are_reported_only_in_preview_while_in_preview(path: Path) -> None:
    with_preview = _found(path, preview=True)
    assert with_preview == {(line, code) for line, code, _ in expected(path)}
    lengths = {(line, code) for line, code in with_preview if code == "TAP402"}
    assert lengths
    without = _found(path, preview=False)
    if LENGTHS_IN_PREVIEW:
        assert without == with_preview - lengths
    else:
        assert without == with_preview


def test_the_rule_stays_a_default_rule() -> None:
    rule = rule_by_code_or_name("TAP402")
    assert rule is not None and not rule.preview
