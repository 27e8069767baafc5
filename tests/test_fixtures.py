"""Every rule fixture matches its `# expect:` markers both ways; clean/ stays silent."""

from __future__ import annotations

from pathlib import Path

import pytest

from tapelint.linter.engine import Linter
from tapelint.linter.notebooks.notebook import check_notebook
from tapelint.linter.registry import all_rules
from tests.fixture_markers import (
    FIXTURES,
    asks_preview,
    clean_files,
    expected,
    expected_in_notebook,
    notebook_files,
    rule_fixture_files,
)

DEFAULT_RULES = [r for r in all_rules() if not r.preview]
ALL_RULES = list(all_rules())


def _rules_for(path: Path) -> list:
    """Every on-by-default rule, plus the directory's own rule when it is in preview."""
    own = path.parent.name
    return DEFAULT_RULES + [r for r in ALL_RULES if r.preview and r.code == own]


def _notebook_rules(path: Path) -> list:
    """Every on-by-default rule, plus the preview rules the notebook's markers expect."""
    named = {code for _, _, code, _ in expected_in_notebook(path)}
    return DEFAULT_RULES + [r for r in ALL_RULES if r.preview and r.code in named]


def _ids(paths: list[Path]) -> list[str]:
    return [str(p.relative_to(FIXTURES)) for p in paths]


@pytest.mark.parametrize("path", rule_fixture_files(), ids=_ids(rule_fixture_files()))
def test_rule_fixture_matches_markers(path: Path) -> None:
    linter = Linter(_rules_for(path), preview=asks_preview(path))
    diagnostics = linter.check_bytes(path.read_bytes(), str(path))
    markers = expected(path)
    pinned = {(line, code): column for line, code, column in markers if column is not None}
    want = {(line, code) for line, code, _ in markers}
    got = {(d.start.line, d.code) for d in diagnostics}
    assert got == want, "\n".join(
        [f"missing: {sorted(want - got)}", f"unexpected: {sorted(got - want)}"]
        + [f"  {d.start.line}:{d.start.column} {d.code} {d.message}" for d in diagnostics]
    )
    for d in diagnostics:
        column = pinned.get((d.start.line, d.code))
        assert column is None or column == d.start.column


@pytest.mark.parametrize("path", rule_fixture_files(), ids=_ids(rule_fixture_files()))
def test_fixture_names_state_intent(path: Path) -> None:
    own_code = path.parent.name
    codes = {code for _, code, _ in expected(path)}
    if path.name.startswith("flag_"):
        assert own_code in codes
    else:
        assert path.name.startswith("ok_"), "fixture files are named flag_*.py or ok_*.py"
        assert own_code not in codes


@pytest.mark.parametrize("path", clean_files(), ids=_ids(clean_files()))
def test_clean_program_has_no_diagnostic(path: Path) -> None:
    diagnostics = Linter(ALL_RULES, preview=True).check_bytes(path.read_bytes(), str(path))
    assert diagnostics == [], "\n".join(
        f"{d.start.line}:{d.start.column} {d.code} {d.message}" for d in diagnostics
    )


def test_every_rule_has_enough_fixtures() -> None:
    for rule in all_rules():
        if rule.engine_reported:
            continue
        folder = FIXTURES / rule.code
        flagged = list(folder.glob("flag_*.py"))
        look_alikes = list(folder.glob("ok_*.py"))
        assert len(flagged) >= 8, f"{rule.code}: {len(flagged)} flagged fixtures"
        assert len(look_alikes) >= 8, f"{rule.code}: {len(look_alikes)} look-alikes"


def test_clean_corpus_is_large_enough() -> None:
    assert len(clean_files()) >= 15


@pytest.mark.parametrize("path", notebook_files(), ids=_ids(notebook_files()))
def test_notebook_fixture_matches_markers(path: Path) -> None:
    """Markers sit in code cells; a finding must be reported at (cell, line) both ways. The
    preview rules the markers name run too, as for a rule's own fixtures."""
    linter = Linter(_notebook_rules(path), preview=asks_preview(path))
    diagnostics = check_notebook(linter, path.read_bytes(), str(path))
    markers = expected_in_notebook(path)
    want = {(cell, line, code) for cell, line, code, _ in markers}
    got = {(d.cell, d.start.line, d.code) for d in diagnostics}
    assert got == want, "\n".join(
        [f"missing: {sorted(want - got)}", f"unexpected: {sorted(got - want)}"]
        + [f"  cell {d.cell}:{d.start.line}:{d.start.column} {d.code}" for d in diagnostics]
    )
    pinned = {(c, line, code): col for c, line, code, col in markers if col is not None}
    for d in diagnostics:
        column = pinned.get((d.cell, d.start.line, d.code))
        assert column is None or column == d.start.column


@pytest.mark.parametrize("path", notebook_files(), ids=_ids(notebook_files()))
def test_notebook_fixture_names_state_intent(path: Path) -> None:
    """flag_* notebooks expect findings; ok_* look-alikes are silent with every rule on."""
    if path.name.startswith("flag_"):
        assert expected_in_notebook(path)
    else:
        assert path.name.startswith("ok_"), "notebook fixtures are named flag_* or ok_*"
        everything = Linter(ALL_RULES, preview=True)
        assert check_notebook(everything, path.read_bytes(), str(path)) == []
