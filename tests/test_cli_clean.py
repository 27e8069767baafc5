"""`tapelint clean`: removes the result cache `check` made, and nothing else."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli_helpers import LOSS_OUTSIDE, run_cli, write


@pytest.fixture
def own_cache(project: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The project's default cache, .tapelint_cache in the project root."""
    monkeypatch.delenv("TAPELINT_CACHE_DIR", raising=False)
    write(project, "train.py", LOSS_OUTSIDE)
    return project / ".tapelint_cache"


def test_clean_removes_the_cache_check_made(own_cache: Path) -> None:
    run_cli("check")
    assert any((own_cache / "entries").iterdir())
    result = run_cli("clean")
    assert (result.exit_code, result.stdout) == (0, "")
    assert result.stderr == f"Removed {own_cache}\n"
    assert not own_cache.exists()
    again = run_cli("clean")
    assert (again.exit_code, again.stderr) == (0, f"No cache at {own_cache}\n")


def test_clean_follows_the_configs_cache_dir(own_cache: Path, project: Path) -> None:
    write(project, "pyproject.toml", '[tool.tapelint]\ncache-dir = "build/lint-cache"\n')
    run_cli("check")
    assert (project / "build" / "lint-cache" / "CACHEDIR.TAG").exists()
    assert run_cli("clean").exit_code == 0
    assert not (project / "build" / "lint-cache").exists()
    assert (project / "build").exists()


def test_clean_with_cache_dir(own_cache: Path, project: Path) -> None:
    run_cli("check", "--cache-dir", "elsewhere")
    assert run_cli("clean", "--cache-dir", "elsewhere").exit_code == 0
    assert not (project / "elsewhere").exists()


def test_clean_refuses_a_directory_tapelint_did_not_make(own_cache: Path, project: Path) -> None:
    keep = write(project, "docs/index.md", "# mine\n")
    result = run_cli("clean", "--cache-dir", "docs")
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {project / 'docs'}: not removed: it is not a cache")
    assert keep.read_text() == "# mine\n"
