"""`concise`, one short line a diagnostic: `path:line:col: CODE [*] problem`.

As the `text` format, without the advice (`full` prints it), and with ruff's `[*]` after the
code of each finding that the enabled fixes can fix. A notebook diagnostic names its cell:
`nb.ipynb:cell 3:4:9: CODE problem`.
"""

from collections.abc import Sequence

from tapelint.findings.diagnostics import Diagnostic
from tapelint.linter.messages import split
from tapelint.output.style import PLAIN, Style
from tapelint.output.text import fix_mark, location


def render(diagnostics: Sequence[Diagnostic], *, unsafe: bool = False, style: Style = PLAIN) -> str:
    return "".join(
        f"{location(d, style)}: {headline(d, unsafe=unsafe, style=style)}\n" for d in diagnostics
    )


def headline(diagnostic: Diagnostic, *, unsafe: bool, style: Style = PLAIN) -> str:
    """`CODE [*] problem`: the code, the fixable mark and the problem alone."""
    code = style.code(diagnostic.code, diagnostic.severity)
    mark = fix_mark(diagnostic, unsafe=unsafe, style=style)
    return f"{code} {mark}{split(diagnostic).problem}"
