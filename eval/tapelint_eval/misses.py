"""`misses.jsonl`: places where a rule should have reported and tapelint printed nothing.

A first-look batch reads its findings (`labels.jsonl`) and, since batch 025, the tape code of
its repositories for misses. One miss a line: `repo`, `path`, `cell` (null for a `.py` file),
`line` (where the rule would report), `code`, `tag`, `reason`, and `readme_explains` (whether
the README's "How it decides" explains the silence). The development set in
`../shared/recall/` has the same lines with a `set` instead of `readme_explains`.

`tag` is `gap` (nothing explains the silence), `design limit` (the README or the docs it links
say tapelint does not follow that) or `borderline` (a careful engineer could argue either way:
not counted either way). A miss is *found* when a run reports its code at its path, cell and
line; the column is not recorded, because a miss was never reported.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tapelint_eval.jsonl import records
from tapelint_eval.labels import Finding, Label

TAGS = ("gap", "design limit", "borderline")
_REQUIRED = ("repo", "path", "cell", "line", "code", "tag", "reason")
_OPTIONAL = ("readme_explains", "set")


class MissError(ValueError):
    """The misses file cannot be used as it is; the message says which line and why."""


@dataclass(frozen=True)
class Miss:
    repo: str
    path: str  # POSIX, relative to the repository root
    cell: int | None
    line: int
    code: str
    tag: str  # one of TAGS
    reason: str
    readme_explains: bool | None = None
    group: str | None = None  # the development set's `set` (`issue-11`, `turn-3`)

    @property
    def key(self) -> tuple[str, str, int | None, int, str]:
        return (self.repo, self.path, self.cell, self.line, self.code)

    @property
    def counted(self) -> bool:
        return self.tag != "borderline"

    def where(self) -> str:
        cell = f":cell {self.cell}" if self.cell is not None else ""
        return f"{self.repo}:{self.path}{cell}:{self.line}"


def load_misses(path: Path) -> list[Miss]:
    misses: list[Miss] = []
    seen: set[tuple[Any, ...]] = set()
    for where, record in records(path, MissError):
        miss = _miss_from(record, where)
        if miss.key in seen:
            raise MissError(f"{where}: {miss.where()} {miss.code} is listed twice")
        seen.add(miss.key)
        misses.append(miss)
    return misses


def _miss_from(record: Any, where: str) -> Miss:
    if not isinstance(record, dict):
        raise MissError(f"{where}: expected a JSON object")
    missing = [key for key in _REQUIRED if key not in record]
    if missing:
        raise MissError(f"{where}: missing {', '.join(missing)}")
    unknown = set(record) - set(_REQUIRED) - set(_OPTIONAL)
    if unknown:
        raise MissError(f"{where}: unknown keys {sorted(unknown)}")
    for key in ("repo", "path", "code", "reason"):
        if not isinstance(record[key], str) or not record[key].strip():
            raise MissError(f"{where}: `{key}` must be a non-empty string")
    if not _is_int(record["line"]) or record["line"] < 1:
        raise MissError(f"{where}: `line` must be a positive integer")
    if record["cell"] is not None and (not _is_int(record["cell"]) or record["cell"] < 1):
        raise MissError(f"{where}: `cell` must be null or a positive integer")
    if record["tag"] not in TAGS:
        raise MissError(f"{where}: `tag` must be one of {', '.join(TAGS)}")
    explains = record.get("readme_explains")
    if explains is not None and not isinstance(explains, bool):
        raise MissError(f"{where}: `readme_explains`, when given, must be true or false")
    group = record.get("set")
    if group is not None and (not isinstance(group, str) or not group.strip()):
        raise MissError(f"{where}: `set`, when given, must be a non-empty string")
    fields = {key: record[key] for key in _REQUIRED}
    return Miss(**fields, readme_explains=explains, group=group)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def found_misses(misses: list[Miss], findings: list[Finding]) -> list[Miss]:
    """The misses a run now reports: its code at its path, cell and line."""
    reported = {finding.line_key for finding in findings}
    return [miss for miss in misses if miss.key in reported]


@dataclass
class Recall:
    """Found over found plus missed; `found` counts right findings (or misses now found)."""

    found: int = 0
    missed: int = 0

    @property
    def value(self) -> float | None:
        total = self.found + self.missed
        return self.found / total if total else None

    def __iadd__(self, other: Recall) -> Recall:
        self.found += other.found
        self.missed += other.missed
        return self


def recall_by_rule(
    labels: list[Label], misses: list[Miss], codes: frozenset[str]
) -> dict[str, Recall]:
    """A batch's recall per rule, as it was read: its right findings of the rules in `codes`
    (the default rules) against its misses of those rules that are not `borderline`."""
    rules: dict[str, Recall] = {}
    for label in labels:
        if label.label == "right" and label.code in codes:
            rules.setdefault(label.code, Recall()).found += 1
    for miss in misses:
        if miss.counted and miss.code in codes:
            rules.setdefault(miss.code, Recall()).missed += 1
    return dict(sorted(rules.items()))


def total(recalls: dict[str, Recall]) -> Recall:
    result = Recall()
    for recall in recalls.values():
        result += recall
    return result
