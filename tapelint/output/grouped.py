"""`grouped`, as ruff's: the diagnostics of each file under its path, one concise line each,
`line:col` aligned, and a blank line after each file.

    train.py:
      8:5  TAP401 `apply_gradients` receives gradients straight from ...
      12:9 TAP103 [*] persistent tape `tape` is not released after its last use ...

A notebook diagnostic's position names its cell: `cell 3:4:9`.
"""

from collections.abc import Sequence
from itertools import groupby

from tapelint.findings.diagnostics import Diagnostic
from tapelint.output.concise import headline
from tapelint.output.style import PLAIN, Style


def render(diagnostics: Sequence[Diagnostic], *, unsafe: bool = False, style: Style = PLAIN) -> str:
    parts = []
    for path, group in groupby(diagnostics, key=lambda d: d.path):
        found = list(group)
        positions = [_position(d) for d in found]
        width = max(len(position) for position in positions)
        parts.append(f"{style.path(path)}:\n")
        parts.extend(
            f"  {position:<{width}} {headline(d, unsafe=unsafe, style=style)}\n"
            for position, d in zip(positions, found, strict=True)
        )
        parts.append("\n")
    return "".join(parts)


def _position(diagnostic: Diagnostic) -> str:
    cell = f"cell {diagnostic.cell}:" if diagnostic.cell is not None else ""
    return f"{cell}{diagnostic.start.line}:{diagnostic.start.column}"
