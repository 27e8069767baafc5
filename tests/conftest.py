from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty directory that is the current directory for the test."""
    monkeypatch.chdir(tmp_path)
    return tmp_path
