"""SARIF 2.1.0, the format GitHub code scanning and other result viewers read.

One run; its driver lists every rule (id, name, short and full description, the rule's
documentation as markdown help, default level), and each diagnostic is a result pointing at
its rule by id and index. Paths relative to the current directory are relative URIs against
`%SRCROOT%` (the current directory, given in `originalUriBaseIds`), so code scanning resolves
them from the repository root; other paths are absolute `file://` URIs. Columns count Unicode
code points (`columnKind`), as Python does. The places a finding rests on (the gradient call
inside a helper of another module, the apply a helper makes) are its `relatedLocations`,
each with a physical location and a message, numbered from 1. A diagnostic with a fix
carries it as a SARIF fix (its edits as replacements), whether safe or unsafe; its
description says which.

Notebooks: a region's lines and columns are those of the `.ipynb` file's JSON text, where
the cell's source characters are (`tapelint.output.notebook_json`), since code scanning
reads them against the file; the region's `properties` keep the cell and the position in
it (`cell`, `cellLine`, `cellColumn`, and `cellEndLine`, `cellEndColumn` for a span). A
fix's replacements are edits of that JSON text too, their inserted text JSON-escaped, so
that applying them gives the notebook `tapelint check --fix` writes. When a position cannot
be placed in the file (it cannot be read, or is not the notebook that was checked), the
location has no region and its `properties` hold the cell position, and the result has no
fix.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote

import tapelint
from tapelint.findings.diagnostics import Diagnostic, Edit, Fix, Position, Related
from tapelint.findings.rule import Rule
from tapelint.linter.registry import all_rules
from tapelint.output.notebook_json import NotebookFiles

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SOURCE_ROOT = "%SRCROOT%"


def render(diagnostics: Sequence[Diagnostic], sources: Mapping[str, bytes] | None = None) -> str:
    """`sources`: the bytes of paths not to read from disk (standard input's)."""
    places = _Places(sources or {})
    rules = all_rules()
    index = {rule.code: i for i, rule in enumerate(rules)}
    log = {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "tapelint",
                        "version": tapelint.version(),
                        "rules": [_rule(rule) for rule in rules],
                    }
                },
                "originalUriBaseIds": {SOURCE_ROOT: {"uri": Path.cwd().as_uri() + "/"}},
                "columnKind": "unicodeCodePoints",
                "results": [_result(d, index, places) for d in diagnostics],
            }
        ],
    }
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"


def _rule(rule: type[Rule]) -> dict[str, Any]:
    documentation = rule.documentation()
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary()},
        "fullDescription": {"text": _what_it_does(documentation)},
        "helpUri": rule.docs_url(),
        "help": {"text": documentation, "markdown": documentation},
        "defaultConfiguration": {"level": rule.severity.value, "enabled": not rule.preview},
        "properties": {"tags": ["tensorflow", "gradient-tape"]},
    }


def _what_it_does(documentation: str) -> str:
    _, _, rest = documentation.partition("## What it does")
    section = rest.split("\n## ", 1)[0].strip()
    return " ".join(section.split()) or documentation


def _result(diagnostic: Diagnostic, index: dict[str, int], places: _Places) -> dict[str, Any]:
    location = {"artifactLocation": _artifact(diagnostic.path)}
    location |= places.location(diagnostic.path, diagnostic.cell, diagnostic.start, diagnostic.end)
    result: dict[str, Any] = {
        "ruleId": diagnostic.code,
        "level": diagnostic.severity.value,
        "message": {"text": diagnostic.message},
        "locations": [{"physicalLocation": location}],
    }
    if diagnostic.related:
        result["relatedLocations"] = [
            _related(related, number, places)
            for number, related in enumerate(diagnostic.related, 1)
        ]
    if diagnostic.code in index:
        result["ruleIndex"] = index[diagnostic.code]
    if diagnostic.fix is not None:
        fix = _fix(diagnostic.fix, diagnostic.path, places)
        if fix is not None:
            result["fixes"] = [fix]
    return result


def _related(related: Related, number: int, places: _Places) -> dict[str, Any]:
    start = Position(related.line, related.column)
    location = {"artifactLocation": _artifact(related.path)}
    location |= places.location(related.path, related.cell, start, start)
    return {"id": number, "physicalLocation": location, "message": {"text": related.message}}


class _Places:
    """Regions of plain files as they are; of notebooks, placed in the file's JSON text."""

    def __init__(self, sources: Mapping[str, bytes]) -> None:
        self._notebooks = NotebookFiles(sources)

    def location(
        self, path: str, cell: int | None, start: Position, end: Position
    ) -> dict[str, Any]:
        """`region` for a physical location, or, for a cell position that cannot be
        placed, `properties` with it."""
        if cell is None:
            return {"region": _region(start, end)}
        in_cell = {"cell": cell, "cellLine": start.line, "cellColumn": start.column}
        if end > start:
            in_cell |= {"cellEndLine": end.line, "cellEndColumn": end.column}
        placed = self.span(path, cell, start, end)
        if placed is None:
            return {"properties": in_cell}
        return {"region": {**_region(*placed), "properties": in_cell}}

    def span(
        self, path: str, cell: int, start: Position, end: Position
    ) -> tuple[Position, Position] | None:
        notebook = self._notebooks.get(path)
        return notebook.span(cell, start, end) if notebook is not None else None

    def replacement(self, path: str, edit: Edit) -> tuple[Position, Position, str] | None:
        """A notebook edit as an edit of its JSON text (`NotebookText.replacement`)."""
        notebook = self._notebooks.get(path)
        if notebook is None or edit.cell is None:
            return None
        return notebook.replacement(edit.cell, edit.start, edit.end, edit.content)


def _region(start: Position, end: Position) -> dict[str, int]:
    region = {"startLine": start.line, "startColumn": start.column}
    if end > start:
        region |= {"endLine": end.line, "endColumn": end.column}
    return region


def _artifact(path: str) -> dict[str, str]:
    if Path(path).is_absolute():
        return {"uri": Path(path).as_uri()}
    return {"uri": quote(PurePosixPath(path).as_posix()), "uriBaseId": SOURCE_ROOT}


def _fix(fix: Fix, path: str, places: _Places) -> dict[str, Any] | None:
    """The fix as replacements; None for a notebook edit that cannot be placed."""
    replacements = []
    for edit in fix.edits:
        replacement = _replacement(edit, path, places)
        if replacement is None:
            return None
        replacements.append(replacement)
    return {
        "description": {"text": f"{fix.title} ({fix.applicability.value} fix)"},
        "artifactChanges": [{"artifactLocation": _artifact(path), "replacements": replacements}],
    }


def _replacement(edit: Edit, path: str, places: _Places) -> dict[str, Any] | None:
    content = edit.content
    start, end = edit.start, edit.end
    in_cell: dict[str, Any] = {}
    if edit.cell is not None:
        placed = places.replacement(path, edit)
        if placed is None:
            return None
        in_cell = {"cell": edit.cell, "cellLine": start.line, "cellColumn": start.column}
        in_cell |= {"cellEndLine": end.line, "cellEndColumn": end.column}
        start, end, content = placed
    deleted: dict[str, Any] = {
        "startLine": start.line,
        "startColumn": start.column,
        "endLine": end.line,
        "endColumn": end.column,
    }
    if in_cell:
        deleted["properties"] = in_cell
    replacement: dict[str, Any] = {"deletedRegion": deleted}
    if content:
        replacement["insertedContent"] = {"text": content}
    return replacement
