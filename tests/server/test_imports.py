"""The language server never imports TensorFlow (nor NumPy): checking a training file and a
notebook through the server's own checking path, in a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.cli_helpers import LOSS_OUTSIDE

ROOT = Path(__file__).resolve().parents[2]


def test_the_server_never_imports_tensorflow(tmp_path: Path) -> None:
    notebook = ROOT / "fixtures" / "notebooks" / "flag_loss_in_next_cell.ipynb"
    script = f"""
import json, sys
from pathlib import Path
from tapelint.settings.config import Settings
from tapelint.server.protocol import build_server
from tapelint.run.workspace import Project
from tapelint.server.checking import check
from tapelint.server.documents import Cell, Snapshot

build_server()
root = Path({str(tmp_path)!r})
settings = Settings(root=root)
project = Project(settings, watch_disk=True)
found = check(Snapshot("file:///t.py", 1, root / "t.py", text={LOSS_OUTSIDE!r}), settings, project)
assert [d.code for d in found] == ["TAP101"], found
cells = json.loads(Path({str(notebook)!r}).read_text())["cells"]
cells = tuple(
    Cell(f"cell{{n}}", c["cell_type"], "".join(c["source"]), 1) for n, c in enumerate(cells)
)
found = check(Snapshot("file:///n.ipynb", 1, root / "n.ipynb", cells=cells), settings, project)
assert [(d.code, d.cell) for d in found] == [("TAP101", 4)], found
assert "tensorflow" not in sys.modules, "tensorflow was imported"
assert "numpy" not in sys.modules, "numpy was imported"
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
