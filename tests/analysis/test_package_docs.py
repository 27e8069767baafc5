"""The analysis package's docstring is its map: it names every module, and only those."""

from __future__ import annotations

import re
from pathlib import Path

import tapelint.analysis


def test_every_analysis_module_has_its_line_in_the_package_docstring():
    listed = set(re.findall(r"^- `(\w+)`:", tapelint.analysis.__doc__ or "", re.MULTILINE))
    package = Path(tapelint.analysis.__file__).parent
    modules = {p.stem for p in package.glob("*.py") if p.stem != "__init__"}
    assert listed == modules
