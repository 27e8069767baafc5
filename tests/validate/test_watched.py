"""Which files the probe watches for exceptions before the run: the given scripts and the
modules they import from their own directory trees, found by reading their imports."""

from __future__ import annotations

from pathlib import Path

from tapelint.validate.watched import local_modules


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_local_imports_are_followed_transitively(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "train.py": "import os\nimport helpers\nfrom models import net\nfrom data.loader import load\n",
            "helpers.py": "from . import unused_relative\nimport losses\n",
            "losses.py": "import numpy as np\n",
            "models/__init__.py": "",
            "models/net.py": "from .layers import block\n",
            "models/layers.py": "",
            "data/__init__.py": "",
            "data/loader.py": "",
            "unrelated.py": "import helpers\n",
            "broken.py": "def (:\n",
        },
    )
    found = {
        Path(p).relative_to(tmp_path).as_posix()
        for p in local_modules([str(tmp_path / "train.py")])
    }
    assert found == {
        "helpers.py",
        "losses.py",
        "models/__init__.py",
        "models/net.py",
        "models/layers.py",
        "data/__init__.py",
        "data/loader.py",
    }


def test_scripts_that_cannot_be_read_or_parsed_import_nothing(tmp_path: Path) -> None:
    _write(tmp_path, {"broken.py": "def (:\n", "notes.txt": "import helpers\n"})
    paths = [str(tmp_path / "broken.py"), str(tmp_path / "notes.txt"), str(tmp_path / "missing.py")]
    assert local_modules(paths) == []
