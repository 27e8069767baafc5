"""`full`, as ruff's: each diagnostic with the code it points at and what to do.

    TAP401 `apply_gradients` receives gradients straight from `tape.gradient` without a None check
     --> train.py:8:5
      |
    8 |     optimizer.apply_gradients(zip(grads, model.trainable_variables))
      |     ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
    help: filter out None gradients (`if g is not None`) and report the variables that got none

The first line is the `concise` one's headline (`[*]` when the enabled fixes can fix it).
The excerpt shows the lines the finding spans (at most `MAX_LINES`), underlined on its first
line, from the file as it is when the output is printed (see `snippets`); a file that cannot
be read gets no excerpt. `note:` lines name the other places the finding rests on, `fix:` the
fix and whether it is safe. A blank line follows each diagnostic. Tabs show as four spaces.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tapelint.findings.diagnostics import Diagnostic, Related
from tapelint.linter.messages import split
from tapelint.output.concise import headline
from tapelint.output.snippets import SourceLines
from tapelint.output.style import PLAIN, Style
from tapelint.output.text import location

MAX_LINES = 3
_TAB = "    "


def render(
    diagnostics: Sequence[Diagnostic],
    *,
    unsafe: bool = False,
    sources: Mapping[str, bytes] | None = None,
    style: Style = PLAIN,
) -> str:
    """`sources`: the bytes of paths not to read from disk (standard input's)."""
    lines = SourceLines(sources)
    return "".join(_diagnostic(d, lines, unsafe=unsafe, style=style) for d in diagnostics)


def _diagnostic(diagnostic: Diagnostic, lines: SourceLines, *, unsafe: bool, style: Style) -> str:
    arrow = style.gutter(" -->")
    out = [headline(diagnostic, unsafe=unsafe, style=style), f"{arrow} {location(diagnostic)}"]
    out.extend(_excerpt(diagnostic, lines, style))
    advice = split(diagnostic).advice
    if advice:
        out.append(f"{style.label('help:')} {advice}")
    out.extend(f"{style.label('note:')} {_related(related)}" for related in diagnostic.related)
    if diagnostic.fix is not None:
        fix = diagnostic.fix
        out.append(f"{style.label('fix:')} {fix.title} ({fix.applicability.value})")
    return "".join(f"{line}\n" for line in out) + "\n"


def _excerpt(diagnostic: Diagnostic, lines: SourceLines, style: Style) -> list[str]:
    start, end = diagnostic.start, diagnostic.end
    last = min(max(end.line, start.line), start.line + MAX_LINES - 1)
    numbered = [(n, lines.line(diagnostic, n)) for n in range(start.line, last + 1)]
    shown = [(n, text) for n, text in numbered if text is not None]
    if not shown or shown[0][0] != start.line:
        return []
    width = len(str(shown[-1][0]))
    blank = style.gutter(f"{'':>{width}} |")
    out = [blank]
    for number, text in shown:
        code = text.replace(chr(9), _TAB).rstrip()
        out.append(f"{style.gutter(f'{number:>{width}} |')} {code}".rstrip())
        if number == start.line:
            stop = end.column if end.line == number else None
            carets = _underline(text, start.column, stop)
            spaces = len(carets) - len(carets.lstrip())
            painted = carets[:spaces] + style.carets(carets[spaces:], diagnostic.severity)
            out.append(f"{blank} {painted}")
    if end.line > last:
        out.append(f"{blank} ...")
    return out


def _underline(text: str, column: int, stop: int | None) -> str:
    """Carets under `text` from `column` to `stop` (exclusive; None: the end of the line),
    at least one."""
    before = text[: column - 1].replace("\t", _TAB)
    stop = len(text) + 1 if stop is None else stop
    width = len(text[column - 1 : stop - 1].replace("\t", _TAB))
    return " " * len(before) + "^" * max(width, 1)


def _related(related: Related) -> str:
    cell = f"cell {related.cell}:" if related.cell is not None else ""
    return f"{related.message} ({related.path}:{cell}{related.line}:{related.column})"
