"""tapelint's own repository passes `tapelint check .` (its benchmarks train models too)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_tapelint_check_of_its_own_repository_finds_nothing(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "tapelint", "check", "--cache-dir", str(tmp_path), "."],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert (result.returncode, result.stdout) == (0, ""), result.stdout + result.stderr
