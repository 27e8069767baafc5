"""GitHub Actions workflow commands: each diagnostic becomes an annotation on the pull
request (`::error` for error-severity rules, `::warning` for warning-severity ones).

`::error file=train.py,line=16,col=13,endLine=16,endColumn=60,title=TAP101::message`

A notebook diagnostic names only the file: its lines are lines within a cell, which GitHub
would place on the notebook's JSON, so the cell, line and column go into the message instead.
Values are escaped as the runner expects (`%`, CR and LF everywhere; `:` and `,` in properties).
"""

from collections.abc import Sequence

from tapelint.diagnostics import Diagnostic


def render(diagnostics: Sequence[Diagnostic]) -> str:
    return "".join(f"{_annotation(diagnostic)}\n" for diagnostic in diagnostics)


def _annotation(diagnostic: Diagnostic) -> str:
    properties = {"file": diagnostic.path}
    message = diagnostic.message
    start, end = diagnostic.start, diagnostic.end
    if diagnostic.cell is None:
        properties |= {"line": str(start.line), "col": str(start.column)}
        if end > start:
            properties |= {"endLine": str(end.line), "endColumn": str(end.column)}
    else:
        message = f"cell {diagnostic.cell}, line {start.line}, column {start.column}: {message}"
    properties["title"] = diagnostic.code
    joined = ",".join(f"{key}={_escape_property(value)}" for key, value in properties.items())
    return f"::{diagnostic.severity.value} {joined}::{_escape_data(message)}"


def _escape_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(value: str) -> str:
    return _escape_data(value).replace(":", "%3A").replace(",", "%2C")
