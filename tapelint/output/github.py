"""GitHub Actions workflow commands: each diagnostic becomes an annotation on the pull
request (`::error` for error-severity rules, `::warning` for warning-severity ones).

`::error file=train.py,line=16,col=13,endLine=16,endColumn=60,title=TAP101::message`

A notebook diagnostic's line and column are those of the `.ipynb` file's JSON text that
holds its source (`tapelint.output.file_positions`), which is what GitHub reads them against,
and its message starts with the cell, line and column in the cell. When that position
cannot be placed in the file, the annotation names only the file.
Values are escaped as the runner expects (`%`, CR and LF everywhere; `:` and `,` in properties).
"""

from collections.abc import Mapping, Sequence

from tapelint.findings.diagnostics import Diagnostic
from tapelint.output.file_positions import FilePlaces


def render(diagnostics: Sequence[Diagnostic], sources: Mapping[str, bytes] | None = None) -> str:
    """`sources`: the bytes of paths not to read from disk (standard input's)."""
    places = FilePlaces(sources)
    return "".join(f"{_annotation(diagnostic, places)}\n" for diagnostic in diagnostics)


def _annotation(diagnostic: Diagnostic, places: FilePlaces) -> str:
    properties = {"file": diagnostic.path}
    place = places.of(diagnostic)
    if place.span is not None:
        start, end = place.span
        properties |= {"line": str(start.line), "col": str(start.column)}
        if end > start:
            properties |= {"endLine": str(end.line), "endColumn": str(end.column)}
    properties["title"] = diagnostic.code
    joined = ",".join(f"{key}={_escape_property(value)}" for key, value in properties.items())
    return f"::{diagnostic.severity.value} {joined}::{_escape_data(place.message)}"


def _escape_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(value: str) -> str:
    return _escape_data(value).replace(":", "%3A").replace(",", "%2C")
