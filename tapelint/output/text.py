"""flake8's form, one diagnostic a line: `path:line:col: CODE message` (1-based).

A notebook diagnostic names its cell: `nb.ipynb:cell 3:4:9: CODE message`.
"""

from collections.abc import Sequence

from tapelint.diagnostics import Diagnostic


def render(diagnostics: Sequence[Diagnostic]) -> str:
    return "".join(f"{line(diagnostic)}\n" for diagnostic in diagnostics)


def line(diagnostic: Diagnostic) -> str:
    cell = f"cell {diagnostic.cell}:" if diagnostic.cell is not None else ""
    where = f"{diagnostic.path}:{cell}{diagnostic.start.line}:{diagnostic.start.column}"
    return f"{where}: {diagnostic.code} {diagnostic.message}"


def render_annotated(items: Sequence[tuple[Diagnostic, str]]) -> str:
    """Each diagnostic's line followed by a note (`tapelint validate`'s verdicts)."""
    return "".join(f"{line(diagnostic)} {note}\n" for diagnostic, note in items)
