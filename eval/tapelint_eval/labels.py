"""`labels.jsonl`: a person's verdict on each finding, and matching verdicts to findings.

A finding is keyed by repository, path, notebook cell (None for a `.py` file), line and code;
commits are pinned, so lines are stable. The column is recorded too, because one line can
carry two findings of one code (two unwatched sources in one `tape.gradient` call). Matching
tries the exact column first and then, for what is left, any label of the same line and code,
so a rule that moves its report within the line keeps its labels.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tapelint_eval.jsonl import records

VERDICTS = ("right", "wrong", "low-value")
_REQUIRED = ("repo", "path", "cell", "line", "column", "code", "label", "reason")
_OPTIONAL = ("pattern",)


class LabelError(ValueError):
    """The labels file cannot be used as it is; the message says which line and why."""


@dataclass(frozen=True)
class _Located:
    """The keys of a finding or a label."""

    repo: str
    path: str  # POSIX, relative to the repository root
    cell: int | None
    line: int
    column: int
    code: str

    @property
    def line_key(self) -> tuple[str, str, int | None, int, str]:
        return (self.repo, self.path, self.cell, self.line, self.code)

    @property
    def exact_key(self) -> tuple[str, str, int | None, int, str, int]:
        return (*self.line_key, self.column)

    def where(self) -> str:
        cell = f":cell {self.cell}" if self.cell is not None else ""
        return f"{self.repo}:{self.path}{cell}:{self.line}:{self.column}"


@dataclass(frozen=True)
class Finding(_Located):
    message: str


@dataclass(frozen=True)
class Label(_Located):
    label: str  # one of VERDICTS
    reason: str
    pattern: str | None = None  # a short name for the shape of code, to group labels by


def load_labels(path: Path) -> list[Label]:
    labels: list[Label] = []
    seen: set[tuple[Any, ...]] = set()
    for where, record in records(path, LabelError):
        label = _label_from(record, where)
        if label.exact_key in seen:
            raise LabelError(f"{where}: a second label for {label.where()} {label.code}")
        seen.add(label.exact_key)
        labels.append(label)
    return labels


def _label_from(record: Any, where: str) -> Label:
    if not isinstance(record, dict):
        raise LabelError(f"{where}: expected a JSON object")
    missing = [key for key in _REQUIRED if key not in record]
    if missing:
        raise LabelError(f"{where}: missing {', '.join(missing)}")
    unknown = set(record) - set(_REQUIRED) - set(_OPTIONAL)
    if unknown:
        raise LabelError(f"{where}: unknown keys {sorted(unknown)}")
    for key in ("repo", "path", "code", "reason"):
        if not isinstance(record[key], str) or not record[key].strip():
            raise LabelError(f"{where}: `{key}` must be a non-empty string")
    for key in ("line", "column"):
        if not _is_int(record[key]) or record[key] < 1:
            raise LabelError(f"{where}: `{key}` must be a positive integer")
    if record["cell"] is not None and (not _is_int(record["cell"]) or record["cell"] < 1):
        raise LabelError(f"{where}: `cell` must be null or a positive integer")
    if record["label"] not in VERDICTS:
        raise LabelError(f"{where}: `label` must be one of {', '.join(VERDICTS)}")
    pattern = record.get("pattern")
    if pattern is not None and (not isinstance(pattern, str) or not pattern.strip()):
        raise LabelError(f"{where}: `pattern`, when given, must be a non-empty string")
    return Label(**{key: record[key] for key in _REQUIRED}, pattern=pattern)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class Matching:
    labelled: list[tuple[Finding, Label]]
    unlabelled: list[Finding]
    unmatched_labels: list[Label]  # labels no current finding answers to


def match(findings: list[Finding], labels: list[Label]) -> Matching:
    by_exact = {label.exact_key: label for label in labels}
    used: set[int] = set()
    labelled: list[tuple[Finding, Label]] = []
    waiting: list[Finding] = []
    for finding in findings:
        label = by_exact.get(finding.exact_key)
        if label is not None and id(label) not in used:
            used.add(id(label))
            labelled.append((finding, label))
        else:
            waiting.append(finding)
    spare: dict[tuple[Any, ...], list[Label]] = defaultdict(list)
    for label in labels:
        if id(label) not in used:
            spare[label.line_key].append(label)
    unlabelled: list[Finding] = []
    for finding in waiting:
        candidates = spare.get(finding.line_key)
        if candidates:
            label = candidates.pop(0)
            used.add(id(label))
            labelled.append((finding, label))
        else:
            unlabelled.append(finding)
    unmatched = [label for label in labels if id(label) not in used]
    return Matching(labelled, unlabelled, unmatched)


def key_fields(located: Finding | Label) -> dict[str, Any]:
    """The fields that key a finding or a label, as the labels file spells them."""
    return {
        "repo": located.repo,
        "path": located.path,
        "cell": located.cell,
        "line": located.line,
        "column": located.column,
        "code": located.code,
    }


def stub_for(finding: Finding) -> dict[str, Any]:
    """A labels-file record for a new finding, to be completed by hand (`label`, `reason`)."""
    return key_fields(finding) | {
        "label": "TODO: right | wrong | low-value",
        "reason": "TODO: why, in terms of the code",
    }
