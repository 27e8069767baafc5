"""`.py` files in the percent format: cells marked by `# %%` lines.

VS Code, Spyder, PyCharm and Jupytext run such a file cell by cell, through IPython, which
takes a cell's common leading indentation off before running it (a cell copied out of a
loop keeps its indentation and runs). So a file whose only parse errors are the indentation
of such cells runs the way its owner runs it, and a TAP001 would tell the owner nothing.

It is not analysed either: its cells are not one Python program, and positions in
dedented cells are not worth the machinery for files that are scratch notebooks. What its
cells do with tapes is not reported.
"""

from __future__ import annotations

import ast
import itertools
import re
import textwrap

_MARKER = re.compile(r"^#\s*%%", re.MULTILINE)


def runs_as_cells(text: str) -> bool:
    """Whether `text` is a percent-format file every cell of which parses once its common
    indentation is taken off (the file itself does not parse)."""
    starts = [m.start() for m in _MARKER.finditer(text)]
    if not starts:
        return False
    bounds = [0, *starts, len(text)]
    for start, end in itertools.pairwise(bounds):
        marker, _, body = text[start:end].partition("\n")
        cell = body if _MARKER.match(marker) else text[start:end]
        try:
            ast.parse(textwrap.dedent(cell))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return False
    return True
