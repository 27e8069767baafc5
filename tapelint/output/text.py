"""flake8's form, one diagnostic a line: `path:line:col: CODE message` (1-based).

A notebook diagnostic names its cell: `nb.ipynb:cell 3:4:9: CODE message`.
"""

from collections.abc import Sequence

from tapelint.findings.diagnostics import Diagnostic
from tapelint.linter.fixer import applicable


def render(diagnostics: Sequence[Diagnostic]) -> str:
    return "".join(f"{line(diagnostic)}\n" for diagnostic in diagnostics)


def render_marking_fixable(diagnostics: Sequence[Diagnostic], *, unsafe: bool) -> str:
    """`render`, with `[*]` after the code of each finding the enabled fixes can fix (ruff's
    mark; `--show-fixes`)."""
    return "".join(
        f"{line(d, mark='[*] ' if applicable(d.fix, unsafe=unsafe) else '')}\n" for d in diagnostics
    )


def line(diagnostic: Diagnostic, *, mark: str = "") -> str:
    return f"{location(diagnostic)}: {diagnostic.code} {mark}{diagnostic.message}"


def location(diagnostic: Diagnostic) -> str:
    """`path:line:col`, or `path:cell N:line:col` in a notebook."""
    cell = f"cell {diagnostic.cell}:" if diagnostic.cell is not None else ""
    return f"{diagnostic.path}:{cell}{diagnostic.start.line}:{diagnostic.start.column}"


def render_annotated(items: Sequence[tuple[Diagnostic, str]]) -> str:
    """Each diagnostic's line followed by a note (`tapelint validate`'s verdicts)."""
    return "".join(f"{line(diagnostic)} {note}\n" for diagnostic, note in items)
