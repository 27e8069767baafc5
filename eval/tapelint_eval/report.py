"""Per-rule and per-repository counts of a run against the labels, and how they are printed.

Precision is right / labelled findings: a finding nobody labelled yet is counted apart
(`unlabelled`), not guessed. A label no finding answers to any more is *lost* when it was
`right` (recall went down) and *gone* when it was `wrong` or `low-value` (noise went away).
Labels of rules that did not run (a preview rule without `--preview`) and of repositories that
were not checked count for nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tapelint_eval.labels import Finding, Label, Matching, match


@dataclass
class Counts:
    findings: int = 0
    right: int = 0
    wrong: int = 0
    low_value: int = 0
    unlabelled: int = 0
    lost: int = 0  # labelled right, no longer reported
    gone: int = 0  # labelled wrong or low-value, no longer reported

    @property
    def labelled(self) -> int:
        return self.right + self.wrong + self.low_value

    @property
    def precision(self) -> float | None:
        return self.right / self.labelled if self.labelled else None

    def add(self, verdict: str | None) -> None:
        self.findings += 1
        if verdict is None:
            self.unlabelled += 1
        elif verdict == "right":
            self.right += 1
        elif verdict == "wrong":
            self.wrong += 1
        else:
            self.low_value += 1


@dataclass
class Report:
    threshold: float
    rules: dict[str, Counts]  # code -> counts, for every rule that ran
    preview_codes: frozenset[str]
    repos: dict[str, Counts]  # owner/name -> counts, for every repository checked
    total: Counts
    matching: Matching
    lost: list[Label] = field(default_factory=list)
    gone: list[Label] = field(default_factory=list)

    def below_threshold(self, code: str) -> bool:
        precision = self.rules[code].precision
        return precision is not None and precision < self.threshold


def build_report(
    findings: list[Finding],
    labels: list[Label],
    checked_repos: list[str],
    codes_run: list[str],
    preview_codes: frozenset[str],
    threshold: float,
) -> Report:
    ran = set(codes_run)
    checked = set(checked_repos)
    relevant = [label for label in labels if label.repo in checked and label.code in ran]
    matching = match(findings, relevant)
    rules = {code: Counts() for code in sorted(ran | {f.code for f in findings})}
    repos = {name: Counts() for name in checked_repos}
    total = Counts()
    for finding, label in matching.labelled:
        for counts in (rules[finding.code], repos[finding.repo], total):
            counts.add(label.label)
    for finding in matching.unlabelled:
        for counts in (rules[finding.code], repos[finding.repo], total):
            counts.add(None)
    lost = [label for label in matching.unmatched_labels if label.label == "right"]
    gone = [label for label in matching.unmatched_labels if label.label != "right"]
    for label in lost:
        for counts in (rules[label.code], repos[label.repo], total):
            counts.lost += 1
    for label in gone:
        for counts in (rules[label.code], repos[label.repo], total):
            counts.gone += 1
    return Report(threshold, rules, preview_codes, repos, total, matching, lost, gone)


_COLUMNS = ("findings", "right", "wrong", "low-value", "unlabelled", "precision", "lost", "gone")


def _cells(counts: Counts) -> list[str]:
    precision = counts.precision
    return [
        str(counts.findings),
        str(counts.right),
        str(counts.wrong),
        str(counts.low_value),
        str(counts.unlabelled),
        "-" if precision is None else f"{precision:.2f}",
        str(counts.lost),
        str(counts.gone),
    ]


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]

    def line(row: list[str]) -> str:
        first = row[0].ljust(widths[0])
        rest = (cell.rjust(width) for cell, width in zip(row[1:], widths[1:], strict=True))
        return "  ".join([first, *rest]).rstrip()

    return [line(header), *(line(row) for row in rows)]


def rule_table(report: Report) -> list[str]:
    header = ["rule", *_COLUMNS, f"below {report.threshold:g}"]
    rows = []
    for code, counts in report.rules.items():
        name = f"{code} (preview)" if code in report.preview_codes else code
        below = "yes" if report.below_threshold(code) else ""
        rows.append([name, *_cells(counts), below])
    rows.append(["all", *_cells(report.total), ""])
    return _table(header, rows)


def repo_table(report: Report) -> list[str]:
    header = ["repository", *_COLUMNS]
    rows = [[name, *_cells(counts)] for name, counts in report.repos.items()]
    return _table(header, rows)


def counts_json(counts: Counts) -> dict[str, Any]:
    return {
        "findings": counts.findings,
        "right": counts.right,
        "wrong": counts.wrong,
        "low_value": counts.low_value,
        "unlabelled": counts.unlabelled,
        "precision": counts.precision,
        "lost": counts.lost,
        "gone": counts.gone,
    }
