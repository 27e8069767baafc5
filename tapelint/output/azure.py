"""Azure Pipelines logging commands: each diagnostic becomes an issue on the run's summary
and in its log.

    ##vso[task.logissue type=error;sourcepath=/w/a.py;linenumber=8;columnnumber=12;code=TAP101;]msg

`type` is the rule's severity (`error` or `warning`). The path is absolute, as Azure's
documentation asks of file paths in logging commands. A notebook diagnostic's line and column
are those of the `.ipynb` file's JSON text where its source is, and its message starts with
the cell, line and column in the notebook (`tapelint.output.file_positions`); when that
cannot be placed, the command names only the file. Values are escaped as Azure's own task
library does: `%` as `%AZP25`, CR and LF as `%0D` and `%0A`, and in properties `;` and `]`
as `%3B` and `%5D`.
"""

from collections.abc import Mapping, Sequence
from pathlib import Path

from tapelint.findings.diagnostics import Diagnostic
from tapelint.output.file_positions import FilePlaces


def render(diagnostics: Sequence[Diagnostic], sources: Mapping[str, bytes] | None = None) -> str:
    """`sources`: the bytes of paths not to read from disk (standard input's)."""
    places = FilePlaces(sources)
    return "".join(f"{_command(diagnostic, places)}\n" for diagnostic in diagnostics)


def _command(diagnostic: Diagnostic, places: FilePlaces) -> str:
    place = places.of(diagnostic)
    properties = {
        "type": diagnostic.severity.value,
        "sourcepath": str(Path(diagnostic.path).absolute()),
    }
    if place.span is not None:
        start = place.span[0]
        properties |= {"linenumber": str(start.line), "columnnumber": str(start.column)}
    properties["code"] = diagnostic.code
    joined = "".join(f"{key}={_escape_property(value)};" for key, value in properties.items())
    return f"##vso[task.logissue {joined}]{_escape_data(place.message)}"


def _escape_data(value: str) -> str:
    return value.replace("%", "%AZP25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(value: str) -> str:
    return _escape_data(value).replace("]", "%5D").replace(";", "%3B")
