from __future__ import annotations

from pathlib import Path

import pytest

from tapelint.run import parallel


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


@pytest.fixture
def pools(monkeypatch):
    """Records the worker count of every pool a run starts (the pool itself is real)."""
    started: list[int] = []
    original = parallel.ProcessPoolExecutor

    def recording(workers, **kwargs):
        started.append(workers)
        return original(workers, **kwargs)

    monkeypatch.setattr(parallel, "ProcessPoolExecutor", recording)
    return started
