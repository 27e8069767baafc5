"""What users read never mentions the project's internal source notes ("seed 000", "the
seeds"): the README, the CHANGELOG, the documentation pages, and each rule's documentation
as `tapelint rule` prints it. `tf.random` seeds and Keras' seed generators are ordinary
TensorFlow words and stay allowed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from tapelint.cli import cli
from tapelint.linter.registry import all_rules

ROOT = Path(__file__).resolve().parent.parent
SOURCE_NOTES = re.compile(r"\bseeds?\s+\d{3}|\bthe seeds\b|\bseeds?\s*:|\(seeds?\b", re.IGNORECASE)
PAGES = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").rglob("*.md"))]


def test_the_pattern_finds_source_notes_and_leaves_tensorflow_seeds_alone() -> None:
    for note in ('Seed 000: "Filter them"', "(seed 004: ...)", "The seeds ask", "(seeds: x)"):
        assert SOURCE_NOTES.search(note), note
    for word in ("tf.random.set_seed(0)", "seed=42", "whose seed generator state"):
        assert not SOURCE_NOTES.search(word), word


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_no_page_mentions_source_notes(page: Path) -> None:
    found = SOURCE_NOTES.findall(page.read_text(encoding="utf-8"))
    assert not found, found


@pytest.mark.parametrize("rule", all_rules(), ids=[r.code for r in all_rules()])
def test_no_rule_documentation_mentions_source_notes(rule) -> None:
    result = CliRunner().invoke(cli, ["rule", rule.code])
    assert result.exit_code == 0, result.output
    printed = result.output
    assert rule.code in printed
    assert not SOURCE_NOTES.findall(printed)
