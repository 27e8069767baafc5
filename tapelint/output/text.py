"""flake8's form, one diagnostic a line: `path:line:col: CODE message` (1-based).

A notebook diagnostic names its cell: `nb.ipynb:cell 3:4:9: CODE message`.
"""

from collections.abc import Sequence

from tapelint.findings.diagnostics import Diagnostic
from tapelint.linter.fixer import applicable
from tapelint.output.style import PLAIN, Style


def render(diagnostics: Sequence[Diagnostic], style: Style = PLAIN) -> str:
    return "".join(f"{line(diagnostic, style=style)}\n" for diagnostic in diagnostics)


def render_marking_fixable(
    diagnostics: Sequence[Diagnostic], *, unsafe: bool, style: Style = PLAIN
) -> str:
    """`render`, with `[*]` after the code of each finding the enabled fixes can fix (ruff's
    mark; `--show-fixes`)."""
    return "".join(
        f"{line(d, mark=fix_mark(d, unsafe=unsafe, style=style), style=style)}\n"
        for d in diagnostics
    )


def fix_mark(diagnostic: Diagnostic, *, unsafe: bool, style: Style = PLAIN) -> str:
    """`[*] ` when the enabled fixes can fix `diagnostic`, else nothing."""
    return f"{style.mark('[*]')} " if applicable(diagnostic.fix, unsafe=unsafe) else ""


def line(diagnostic: Diagnostic, *, mark: str = "", style: Style = PLAIN) -> str:
    code = style.code(diagnostic.code, diagnostic.severity)
    return f"{location(diagnostic, style)}: {code} {mark}{diagnostic.message}"


def location(diagnostic: Diagnostic, style: Style = PLAIN) -> str:
    """`path:line:col`, or `path:cell N:line:col` in a notebook."""
    cell = f"cell {diagnostic.cell}:" if diagnostic.cell is not None else ""
    position = f"{cell}{diagnostic.start.line}:{diagnostic.start.column}"
    return f"{style.path(diagnostic.path)}:{position}"


def render_annotated(items: Sequence[tuple[Diagnostic, str]]) -> str:
    """Each diagnostic's line followed by a note (`tapelint validate`'s verdicts)."""
    return "".join(f"{line(diagnostic)} {note}\n" for diagnostic, note in items)
