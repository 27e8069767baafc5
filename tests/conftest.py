from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty directory that is the current directory for the test."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    """Each test gets a result cache of its own, outside the directories it inspects (and
    outside the repository when a test runs tapelint there). Cache tests unset it."""
    monkeypatch.setenv("TAPELINT_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
