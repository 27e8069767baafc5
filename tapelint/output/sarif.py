"""SARIF 2.1.0, the format GitHub code scanning and other result viewers read.

One run; its driver lists every rule (id, name, short and full description, the rule's
documentation as markdown help, default level), and each diagnostic is a result pointing at
its rule by id and index. Paths relative to the current directory are relative URIs against
`%SRCROOT%` (the current directory, given in `originalUriBaseIds`), so code scanning resolves
them from the repository root; other paths are absolute `file://` URIs. Columns count Unicode
code points (`columnKind`), as Python does. A notebook diagnostic's lines are lines within its
cell, and the region's `properties.cell` says which cell. The places a finding rests on (the
gradient call inside a helper of another module, the apply a helper makes) are its
`relatedLocations`, each with a physical location and a message, numbered from 1. A diagnostic
with a fix carries it as a SARIF fix (its edits as replacements), whether safe or unsafe; its
description says which.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote

import tapelint
from tapelint.diagnostics import Diagnostic, Edit, Fix, Position, Related
from tapelint.registry import all_rules
from tapelint.rule import Rule

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SOURCE_ROOT = "%SRCROOT%"


def render(diagnostics: Sequence[Diagnostic]) -> str:
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
                "results": [_result(d, index) for d in diagnostics],
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
        "help": {"text": documentation, "markdown": documentation},
        "defaultConfiguration": {"level": rule.severity.value, "enabled": not rule.preview},
        "properties": {"tags": ["tensorflow", "gradient-tape"]},
    }


def _what_it_does(documentation: str) -> str:
    _, _, rest = documentation.partition("## What it does")
    section = rest.split("\n## ", 1)[0].strip()
    return " ".join(section.split()) or documentation


def _result(diagnostic: Diagnostic, index: dict[str, int]) -> dict[str, Any]:
    region = _region(diagnostic.start, diagnostic.end)
    if diagnostic.cell is not None:
        region["properties"] = {"cell": diagnostic.cell}
    result: dict[str, Any] = {
        "ruleId": diagnostic.code,
        "level": diagnostic.severity.value,
        "message": {"text": diagnostic.message},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": _artifact(diagnostic.path),
                    "region": region,
                }
            }
        ],
    }
    if diagnostic.related:
        result["relatedLocations"] = [
            _related(related, number) for number, related in enumerate(diagnostic.related, 1)
        ]
    if diagnostic.code in index:
        result["ruleIndex"] = index[diagnostic.code]
    if diagnostic.fix is not None:
        result["fixes"] = [_fix(diagnostic.fix, diagnostic.path)]
    return result


def _related(related: Related, number: int) -> dict[str, Any]:
    region: dict[str, Any] = {"startLine": related.line, "startColumn": related.column}
    if related.cell is not None:
        region["properties"] = {"cell": related.cell}
    return {
        "id": number,
        "physicalLocation": {"artifactLocation": _artifact(related.path), "region": region},
        "message": {"text": related.message},
    }


def _region(start: Position, end: Position) -> dict[str, int]:
    region = {"startLine": start.line, "startColumn": start.column}
    if end > start:
        region |= {"endLine": end.line, "endColumn": end.column}
    return region


def _artifact(path: str) -> dict[str, str]:
    if Path(path).is_absolute():
        return {"uri": Path(path).as_uri()}
    return {"uri": quote(PurePosixPath(path).as_posix()), "uriBaseId": SOURCE_ROOT}


def _fix(fix: Fix, path: str) -> dict[str, Any]:
    return {
        "description": {"text": f"{fix.title} ({fix.applicability.value} fix)"},
        "artifactChanges": [
            {
                "artifactLocation": _artifact(path),
                "replacements": [_replacement(edit) for edit in fix.edits],
            }
        ],
    }


def _replacement(edit: Edit) -> dict[str, Any]:
    deleted: dict[str, Any] = {
        "startLine": edit.start.line,
        "startColumn": edit.start.column,
        "endLine": edit.end.line,
        "endColumn": edit.end.column,
    }
    if edit.cell is not None:
        deleted["properties"] = {"cell": edit.cell}
    replacement: dict[str, Any] = {"deletedRegion": deleted}
    if edit.content:
        replacement["insertedContent"] = {"text": edit.content}
    return replacement
