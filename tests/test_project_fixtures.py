"""Every multi-file project under fixtures/projects/ matches its `# expect:` markers both ways
when checked as a whole from its root, and each of its files checked alone (as pre-commit
and editors check them) reports what the whole run reports for it. A project is checked with
the default rules and the preview rules its markers expect; an `ok_` look-alike with every
rule on, preview included."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tapelint.linter.registry import all_rules
from tapelint.run.runner import Options, run
from tapelint.settings.config import Settings, load_settings
from tests.fixture_markers import FIXTURES, expected, expected_in_notebook

PROJECTS = sorted(p for p in (FIXTURES / "projects").iterdir() if p.is_dir())
PREVIEW = frozenset(rule.code for rule in all_rules() if rule.preview)


def _settings(root: Path) -> Settings:
    """The project's own `[tool.tapelint]` if it has one, with the preview rules its markers
    name; an `ok_` look-alike with every rule on (preview included)."""
    config = root / "pyproject.toml"
    settings = load_settings(config) if config.exists() else Settings(root=root)
    named = {code for _, _, _, code in _markers(root)}
    return settings.override(
        extend_select=sorted(named & PREVIEW), preview=root.name.startswith("ok_")
    )


def _check(root: Path, *paths: str) -> set[tuple[str, int | None, int, str]]:
    """(path, cell, line, code) of each diagnostic, checking `paths` from `root`: with the
    project's own `[tool.tapelint]` if it has one, the preview rules its markers name, and
    for an `ok_` look-alike with every rule on (preview included), as for notebooks."""
    os.chdir(root)
    report = run(paths, _settings(root), Options())
    assert report.errors == []
    return {(d.path, d.cell, d.start.line, d.code) for d in report.diagnostics}


def _files(root: Path) -> list[Path]:
    return sorted(
        p for p in root.rglob("*") if p.suffix in (".py", ".ipynb") and "__pycache__" not in p.parts
    )


def _markers(root: Path) -> set[tuple[str, int | None, int, str]]:
    found = set()
    for path in _files(root):
        relative = path.relative_to(root).as_posix()
        if path.suffix == ".ipynb":
            found |= {(relative, c, line, code) for c, line, code, _ in expected_in_notebook(path)}
        else:
            found |= {(relative, None, line, code) for line, code, _ in expected(path)}
    return found


@pytest.mark.parametrize("root", PROJECTS, ids=[p.name for p in PROJECTS])
def test_project_matches_its_markers(root: Path, monkeypatch) -> None:
    monkeypatch.chdir(root)
    got = _check(root, ".")
    want = _markers(root)
    assert got == want, f"missing: {sorted(want - got)}\nunexpected: {sorted(got - want)}"
    if root.name.startswith("ok_"):
        assert not want, "an ok_ project is a look-alike: it expects no finding"
    else:
        assert want, "a project fixture expects at least one finding"


@pytest.mark.parametrize("root", PROJECTS, ids=[p.name for p in PROJECTS])
def test_each_file_alone_reports_what_the_whole_run_reports(root: Path, monkeypatch) -> None:
    monkeypatch.chdir(root)
    whole = _check(root, ".")
    for path in _files(root):
        relative = path.relative_to(root).as_posix()
        alone = _check(root, relative)
        assert alone == {d for d in whole if d[0] == relative}, relative
