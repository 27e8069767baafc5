"""pylint's parseable form (as ruff's `pylint` format): `path:line: [CODE] message`.

For tools that read pylint's output (reviewdog's and Jenkins' pylint parsers, editors'
problem matchers). The line is an integer, so a notebook diagnostic's line is the line of
the `.ipynb` file's JSON text where its source is, and its message starts with the cell,
line and column in the notebook (`tapelint.output.file_positions`); a position that cannot
be placed in the file is given as line 1.
"""

from collections.abc import Mapping, Sequence

from tapelint.findings.diagnostics import Diagnostic
from tapelint.output.file_positions import FilePlaces


def render(diagnostics: Sequence[Diagnostic], sources: Mapping[str, bytes] | None = None) -> str:
    """`sources`: the bytes of paths not to read from disk (standard input's)."""
    places = FilePlaces(sources)
    lines = []
    for diagnostic in diagnostics:
        place = places.of(diagnostic)
        line = place.span[0].line if place.span is not None else 1
        message = " ".join(place.message.splitlines())  # one line a finding, whatever it quotes
        lines.append(f"{diagnostic.path}:{line}: [{diagnostic.code}] {message}\n")
    return "".join(lines)
