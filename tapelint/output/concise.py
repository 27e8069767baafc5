"""`concise`, one short line a diagnostic: `path:line:col: CODE [*] problem`.

As the `text` format, without the advice (`full` prints it), and with ruff's `[*]` after the
code of each finding that the enabled fixes can fix. A notebook diagnostic names its cell:
`nb.ipynb:cell 3:4:9: CODE problem`.
"""

from collections.abc import Sequence

from tapelint.findings.diagnostics import Diagnostic
from tapelint.linter.fixer import applicable
from tapelint.linter.messages import split
from tapelint.output.text import location


def render(diagnostics: Sequence[Diagnostic], *, unsafe: bool = False) -> str:
    return "".join(f"{location(d)}: {headline(d, unsafe=unsafe)}\n" for d in diagnostics)


def headline(diagnostic: Diagnostic, *, unsafe: bool) -> str:
    """`CODE [*] problem`: the code, the fixable mark and the problem alone."""
    mark = "[*] " if applicable(diagnostic.fix, unsafe=unsafe) else ""
    return f"{diagnostic.code} {mark}{split(diagnostic).problem}"
