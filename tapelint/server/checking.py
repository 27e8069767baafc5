"""Checking and fixing a snapshot, through the path `tapelint check --stdin-filename` takes.

The buffer goes to `runner.run_stdin` as the bytes an editor would pipe to that command,
named as the document's file, with `force_exclude` (an excluded file yields nothing, as for
the pre-commit hook): the same configuration, selection, per-file-ignores, noqa and
notebook handling, so the server reports exactly what the command prints for the same
buffer. Imports are resolved in the document's `Project` (`projects`), which the server
keeps between checks. The linters are cheap to create (under 0.1 ms), so nothing is gained
by keeping them between checks; what costs is the parse and analysis of the file itself.
"""

from __future__ import annotations

import io
import json
import os
import tokenize
from dataclasses import dataclass

from tapelint.findings.diagnostics import Diagnostic
from tapelint.linter.engine import decode_source
from tapelint.run.runner import Options, run_stdin
from tapelint.run.workspace import Project
from tapelint.server.documents import Snapshot
from tapelint.server.projects import Projects
from tapelint.settings.config import Settings

# For tests only: a check of a document whose text contains this variable's value raises
# an internal error, as a bug in the engine would, so that tests can see the server survive
# one without patching it.
FAULT_VARIABLE = "TAPELINT_SERVER_TEST_FAULT"


class CheckFault(RuntimeError):
    """The error FAULT_VARIABLE provokes."""


class CheckFailed(RuntimeError):
    """tapelint could not check the document: the internal errors the command would print
    (`error: FILE: internal error: ...`). Raised, so that the document is not shown as
    clean: the server logs it as it logs any internal error (`linting`)."""


def check(snapshot: Snapshot, settings: Settings, project: Project) -> list[Diagnostic]:
    """The diagnostics of the snapshot; for a notebook each has the cell it is in. Its
    imports are resolved in `project`, which holds the open documents' text. Raises
    CheckFailed when the command would report an internal error for it."""
    _provoke_fault(snapshot)
    options = Options(force_exclude=True)
    result = run_stdin(_data(snapshot), str(snapshot.path), settings, options, project)
    _raise_errors(result.report.errors)
    return result.report.diagnostics


def _raise_errors(errors: list[str]) -> None:
    if errors:
        raise CheckFailed("; ".join(errors))


@dataclass(frozen=True)
class FixedTexts:
    texts: dict[str, str]  # document URI (a notebook's cell) -> its fixed text; changed ones
    problem: str | None = None  # why the fixes could not be applied


def fix_safely(snapshot: Snapshot, settings: Settings, projects: Projects) -> FixedTexts:
    """Every safe fix applied (with `tapelint check --fix`'s passes and checks). On the
    checking thread, which alone uses the projects."""
    _provoke_fault(snapshot)
    data = _data(snapshot)
    options = Options(force_exclude=True, fix=True)
    project = projects.for_settings(settings)
    result = run_stdin(data, str(snapshot.path), settings, options, project)
    _raise_errors(result.report.errors)
    problem = "; ".join(result.report.warnings) or None
    if result.fixed_source is None or result.fixed_source == data:
        return FixedTexts({}, problem)
    if snapshot.cells is None:
        fixed = decode_source(result.fixed_source)
        if snapshot.text.startswith("\ufeff"):
            fixed = "\ufeff" + fixed
        return FixedTexts({snapshot.uri: fixed})
    cells = json.loads(result.fixed_source)["cells"]
    texts = {}
    for cell, fixed_cell in zip(snapshot.cells, cells, strict=True):
        source = fixed_cell["source"]
        source = "".join(source) if isinstance(source, list) else source
        if source != cell.text:
            texts[cell.uri] = source
    return FixedTexts(texts)


def _data(snapshot: Snapshot) -> bytes:
    if snapshot.cells is not None:
        return snapshot.notebook_json()
    return _encode(snapshot.text)


def _encode(text: str) -> bytes:
    """The text as the file's bytes: in the encoding its coding cookie names, else UTF-8."""
    utf8 = text.encode("utf-8", "surrogatepass")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(utf8).readline)
        return text.encode(encoding)
    except (SyntaxError, LookupError, UnicodeEncodeError):
        return utf8  # decoding it then reports what the command would: TAP002


def _provoke_fault(snapshot: Snapshot) -> None:
    marker = os.environ.get(FAULT_VARIABLE)
    if not marker:
        return
    texts = [snapshot.text] if snapshot.cells is None else [c.text for c in snapshot.cells]
    if any(marker in text for text in texts):
        raise CheckFault(f"{FAULT_VARIABLE} found in {snapshot.uri}")
