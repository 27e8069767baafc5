"""`tapelint check --add-noqa`: a `# noqa: CODE` for every current finding.

A repository adopts tapelint in one commit this way, and from then on sees only new findings.
Decisions (ruff's `--add-noqa`, made to fit tapelint's suppression):

- The comment goes where tapelint reads it (tapelint.linter.suppression): on the finding's line, or,
  when that line cannot end in a comment (it ends inside a multi-line string or with a
  backslash continuation), on the line where the string or continuation ends. A finding on a
  multi-line call is reported on the call's first line, which can end in a comment.
- A new comment goes at the end of the line after two spaces, after any comment already there
  (`# type: ignore  # noqa: TAP401`); the line's trailing whitespace goes.
- A noqa already on the line keeps its codes and gets the new ones added after them:
  `# noqa: E501` becomes `# noqa: E501, TAP401`. They go right after the last flake8-style
  code of its list, so flake8 (which reads codes only, with at most one space after the
  colon) reads them too; explanations after the codes stay after them. A bare `# noqa`
  already silences everything.
- TAP001 (the file or cell does not parse) and TAP002 (it cannot be read) get no comment: the
  place of a comment cannot be known in code that does not tokenise, and such a file is not
  an adoption question. They are left as warnings.
- Nothing is written unless the result is known good: every changed line must silence its
  codes when read back, the file must still parse (each changed cell of a notebook must still
  be a cell IPython runs), and linting it again must find none of the silenced findings.
  Otherwise the file is left as it was, with a warning. Files are written atomically in their
  own encoding and line ends; a notebook keeps everything but the changed cells' `source`
  byte for byte.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from tapelint.findings.diagnostics import Diagnostic
from tapelint.linter.engine import decode_source
from tapelint.linter.fixer import FixError, encode_like
from tapelint.linter.notebooks.notebook import NotebookError, read_notebook, with_cell_sources
from tapelint.linter.suppression import LINE_NOQA, CommentSites, comment_sites, silences
from tapelint.output.text import location
from tapelint.parsing.slicer import SyntaxProblem
from tapelint.sources.ipython_input import cell_code

# Findings about the file itself, which a noqa comment is not for.
UNSILENCEABLE = frozenset({"TAP001", "TAP002"})
_FILE_PROBLEM = "fix the file, or exclude it"
_BLANKS = " \t"
Skipped = list[tuple[Diagnostic, str]]  # findings left without a comment, and why
_FLAKE8_CODES = re.compile(r"[A-Za-z]+[0-9]+(?:[,\s]+[A-Za-z]+[0-9]+)*")


@dataclass
class Annotated:
    """What adding noqa comments to one file came to."""

    data: bytes | None = None  # the new file, None when nothing is to be written
    added: int = 0  # lines given a new or extended noqa
    remaining: list[Diagnostic] = field(default_factory=list)  # findings not silenced
    warnings: list[str] = field(default_factory=list)


def annotate(
    data: bytes,
    diagnostics: Sequence[Diagnostic],
    lint: Callable[[bytes], list[Diagnostic]],
    *,
    notebook: bool,
) -> Annotated:
    """The file `data` with a noqa for each of `diagnostics`, checked by `lint`ing it again."""
    result = Annotated()
    wanted = [d for d in diagnostics if d.code not in UNSILENCEABLE]
    skipped: Skipped = [(d, _FILE_PROBLEM) for d in diagnostics if d.code in UNSILENCEABLE]
    new_data, added = data, 0
    try:
        if wanted:
            new_data, added, not_added = (_notebook if notebook else _python)(data, wanted)
            if added:
                _verify(new_data, wanted, not_added, lint)
            skipped.extend(not_added)
    except (FixError, NotebookError) as error:
        display = wanted[0].path
        result.warnings.append(f"{display}: no noqa comments added: {error}; file left unchanged")
        added = 0
        skipped.extend((d, "") for d in wanted)
    for diagnostic, reason in skipped:
        result.remaining.append(diagnostic)
        if reason:
            result.warnings.append(
                f"{location(diagnostic)}: {diagnostic.code} gets no noqa comment: {reason}"
            )
    if added:
        result.data, result.added = new_data, added
    return result


def _verify(
    data: bytes,
    wanted: list[Diagnostic],
    skipped: Skipped,
    lint: Callable[[bytes], list[Diagnostic]],
) -> None:
    """Raise FixError unless linting `data` finds none of the findings silenced."""
    silenced = {_key(d) for d in wanted} - {_key(d) for d, _ in skipped}
    still = [d for d in lint(data) if _key(d) in silenced]
    if still:
        raise FixError(f"the comment would not silence {location(still[0])}: {still[0].code}")


def _key(diagnostic: Diagnostic) -> tuple[object, ...]:
    return (diagnostic.code, diagnostic.cell, diagnostic.start, diagnostic.message)


# ------------------------------------------------------------------ files


def _python(data: bytes, wanted: list[Diagnostic]) -> tuple[bytes, int, Skipped]:
    text = decode_source(data)
    if "\r" in text.replace("\r\n", ""):
        raise FixError("the file has carriage-return-only line ends")
    sites = comment_sites(text)
    if sites is None:
        raise FixError("the file does not tokenize")
    lines = text.split("\n")
    added, skipped = _add(lines, [0] * len(lines), sites, wanted)
    if not added:
        return data, 0, skipped
    new_text = "\n".join(lines)
    try:
        ast.parse(new_text)
    except (SyntaxError, ValueError) as error:
        raise FixError(f"the file would not parse any more ({error})") from None
    return encode_like(data, new_text), added, skipped


def _notebook(data: bytes, wanted: list[Diagnostic]) -> tuple[bytes, int, Skipped]:
    program = read_notebook(data)
    if program is None:
        return data, 0, []
    by_cell: dict[int, list[Diagnostic]] = defaultdict(list)
    for diagnostic in wanted:
        by_cell[diagnostic.cell or 0].append(diagnostic)
    sources: dict[int, str] = {}
    added = 0
    skipped: Skipped = []
    for number, found in sorted(by_cell.items()):
        cell = program.cell(number)
        sites = (
            comment_sites("".join(f"{line}\n" for line in cell.lines))
            if cell is not None and cell.editable
            else None
        )
        if cell is None or sites is None:
            skipped.extend((d, "its cell is not read as Python") for d in found)
            continue
        lines = list(cell.originals)
        shifts = [len(cut) for cut in cell.code.removed]
        cell_added, cell_skipped = _add(lines, shifts, sites, found)
        skipped.extend(cell_skipped)
        if not cell_added:
            continue
        if isinstance(cell_code(lines, cell.magics), SyntaxProblem):
            raise FixError(f"cell {number} would not run any more")
        sources[number] = "\n".join(lines) + ("\n" if cell.source.endswith("\n") else "")
        added += cell_added
    if not sources:
        return data, 0, skipped
    return with_cell_sources(data, sources), added, skipped


# ------------------------------------------------------------------ lines


def noqa_line(text: str, diagnostic: Diagnostic) -> tuple[int, str] | None:
    """The line (1-based) of `text` that takes `diagnostic`'s noqa comment (its own, or
    where a multi-line string or continuation it is in ends), with the comment added as
    `--add-noqa` adds it; None when the text does not tokenize or nothing would silence it
    (a bare `# noqa` already does)."""
    sites = comment_sites(text)
    if sites is None:
        return None
    number = sites.noqa_line(diagnostic.start.line)
    lines = text.split("\n")
    if not 1 <= number <= len(lines):
        return None
    old = lines[number - 1]
    new = _with_codes(old, sites.comments.get(number), [diagnostic])
    if new == old or not silences(new, diagnostic):
        return None
    return number, new


def _add(
    lines: list[str], shifts: Sequence[int], sites: CommentSites, wanted: list[Diagnostic]
) -> tuple[int, Skipped]:
    """Add the noqa comments for `wanted` to `lines` (in place); how many lines changed, and
    the findings left without one. `shifts` are what each line has in front of the text
    `sites` describes (the indentation IPython removes from a notebook cell)."""
    targets: dict[int, list[Diagnostic]] = defaultdict(list)
    for diagnostic in wanted:
        targets[sites.noqa_line(diagnostic.start.line)].append(diagnostic)
    added = 0
    skipped: Skipped = []
    for number, found in sorted(targets.items()):
        if not 1 <= number <= len(lines):
            skipped.extend((d, "its line is not in the file") for d in found)
            continue
        old = lines[number - 1]
        comment = sites.comments.get(number)
        new = _with_codes(old, comment + shifts[number - 1] if comment is not None else None, found)
        missed = [d for d in found if not silences(new, d)]
        if missed:
            reason = "a `# noqa` earlier on its line (in a string?) hides a comment at its end"
            skipped.extend((d, reason) for d in found)
            continue
        if new != old:
            lines[number - 1] = new
            added += 1
    return added, skipped


def _with_codes(line: str, comment: int | None, found: list[Diagnostic]) -> str:
    """`line` with `found`'s codes in its noqa, or a new noqa comment at its end."""
    body, end = (line[:-1], "\r") if line.endswith("\r") else (line, "")
    codes = ", ".join(sorted({d.code for d in found if not silences(body, d)}))
    if not codes:
        return line
    existing = LINE_NOQA.search(body, comment) if comment is not None else None
    if existing is None:
        return f"{body.rstrip(_BLANKS)}  # noqa: {codes}{end}"
    if existing.group("codes") is None:
        return line  # a bare noqa (never here: it silences everything)
    listed = _FLAKE8_CODES.match(body, existing.start("codes"))
    at = listed.end() if listed is not None else existing.end("codes")
    return f"{body[:at]}, {codes}{body[at:]}{end}"
