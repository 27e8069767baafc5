"""A JSON list with one object per diagnostic (`json`), or one object a line (`json-lines`);
positions 1-based, ends exclusive. docs/output-formats.md documents the keys for users.

Keys: path, line, column, end_line, end_column, code, name, severity, message, url (the
rule's page on the documentation site, as SARIF's `helpUri`; null for a code no rule has),
fix (null or {title, applicability, edits: [{line, column, end_line, end_column, content}]}),
related (the
other places the finding rests on: [{path, line, column, message}], each with `cell` when
it is in a notebook; empty for most findings), and `cell` only for a notebook diagnostic
(and on each of its edits: a fix may edit another cell).
"""

import json
from collections.abc import Sequence
from typing import Any

from tapelint.findings.diagnostics import Diagnostic, Edit, Fix, Related
from tapelint.linter.registry import rule_by_code_or_name


def render(diagnostics: Sequence[Diagnostic]) -> str:
    return json.dumps([_diagnostic(d) for d in diagnostics], indent=2, ensure_ascii=False) + "\n"


def render_lines(diagnostics: Sequence[Diagnostic]) -> str:
    """`json-lines`: the same objects, one a line, for tools that read a stream."""
    return "".join(f"{json.dumps(_diagnostic(d), ensure_ascii=False)}\n" for d in diagnostics)


def url(code: str) -> str | None:
    """The rule's page on the documentation site (`Rule.docs_url`)."""
    rule = rule_by_code_or_name(code)
    return rule.docs_url() if rule is not None else None


def _diagnostic(diagnostic: Diagnostic) -> dict[str, Any]:
    result: dict[str, Any] = {
        "path": diagnostic.path,
        "line": diagnostic.start.line,
        "column": diagnostic.start.column,
        "end_line": diagnostic.end.line,
        "end_column": diagnostic.end.column,
        "code": diagnostic.code,
        "name": diagnostic.name,
        "severity": diagnostic.severity.value,
        "message": diagnostic.message,
        "url": url(diagnostic.code),
        "fix": _fix(diagnostic.fix) if diagnostic.fix is not None else None,
        "related": [_related(related) for related in diagnostic.related],
    }
    if diagnostic.cell is not None:
        result["cell"] = diagnostic.cell
    return result


def _related(related: Related) -> dict[str, Any]:
    result: dict[str, Any] = {
        "path": related.path,
        "line": related.line,
        "column": related.column,
        "message": related.message,
    }
    if related.cell is not None:
        result["cell"] = related.cell
    return result


def _fix(fix: Fix) -> dict[str, Any]:
    return {
        "title": fix.title,
        "applicability": fix.applicability.value,
        "edits": [_edit(edit) for edit in fix.edits],
    }


def _edit(edit: Edit) -> dict[str, Any]:
    result: dict[str, Any] = {
        "line": edit.start.line,
        "column": edit.start.column,
        "end_line": edit.end.line,
        "end_column": edit.end.column,
        "content": edit.content,
    }
    if edit.cell is not None:
        result["cell"] = edit.cell
    return result


def render_annotated(items: Sequence[tuple[Diagnostic, dict[str, Any]]]) -> str:
    """The same objects with extra keys (`tapelint validate` adds `runtime`, `origin`,
    `evidence`)."""
    objects = [{**_diagnostic(diagnostic), **extra} for diagnostic, extra in items]
    return json.dumps(objects, indent=2, ensure_ascii=False) + "\n"
