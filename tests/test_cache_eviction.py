"""The result cache is bounded: opening a cache over its cap removes the entries written
longest ago (tapelint/run/cache.py, Size)."""

from __future__ import annotations

import os
from pathlib import Path

from tapelint.run.cache import ResultCache
from tapelint.settings.config import Settings


def fill(entries: Path, count: int) -> list[Path]:
    """`count` entries, the first written longest ago."""
    entries.mkdir(parents=True, exist_ok=True)
    paths = []
    for n in range(count):
        path = entries / f"{n:064x}"
        path.write_text("{}")
        os.utime(path, ns=(n * 10**9, n * 10**9))
        paths.append(path)
    return paths


def test_a_cache_over_its_cap_keeps_the_newest_three_quarters(tmp_path):
    paths = fill(tmp_path / "entries", 25)
    ResultCache.open(tmp_path, Settings(root=tmp_path), max_entries=20)
    assert sorted(p.name for p in (tmp_path / "entries").iterdir()) == [p.name for p in paths[10:]]


def test_a_cache_within_its_cap_is_left_alone(tmp_path):
    paths = fill(tmp_path / "entries", 20)
    ResultCache.open(tmp_path, Settings(root=tmp_path), max_entries=20)
    assert len(list((tmp_path / "entries").iterdir())) == len(paths)
