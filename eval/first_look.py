"""First-look precision: what tapelint printed on repositories nobody here had read before.

    python eval/first_look.py                          # each batch as labelled, and cumulative
    python eval/first_look.py --now --mirror /work/.mirror   # and what main prints there now

A batch (`eval/first-look/NNN/`) holds a manifest (`repos.toml`), the labels of every finding
that main printed there *before* any rule was changed for it (`labels.jsonl`), and the commit
that was run (`batch.toml`: `labelled_at`). The first-look figure of a batch is computed from
its labels alone: every label is one finding of that first run, so it never moves when a later
fix makes the batch look better. Labels may be corrected (with the reason in the label), never
rewritten to flatter a fix.

A batch read for misses also holds `misses.jsonl` (see `tapelint_eval/misses.py`). Its recall
is right findings of the default rules / (those + its misses that are not `borderline`);
cumulative recall sums the batches that have a misses file, and only those.

`--now` runs this interpreter's tapelint over each batch and over the tuned evaluation
(`eval/repos.toml`), as `eval/run.py` does, and prints the figures of the current code next to
the first look: labelled findings still reported, findings no label covers (new since the
batch), right findings lost, and which misses the current code reports (its code at the miss's
path, cell and line). Recall now is (labelled right findings still reported + misses now
found) / (the first look's right findings + counted misses): a new finding nobody labelled
counts for nothing. `--dev-set DIR` measures a miss list laid out like `../shared/recall/`
(`repos.tsv`, `misses.jsonl`) the same way. Exit status: 0; 1 when a repository could not be
checked; 2 for an unusable batch or miss list.
"""

from __future__ import annotations

import argparse
import os
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

from tapelint_eval.labels import Finding, Label, LabelError, load_labels
from tapelint_eval.lint import LintError, run_tapelint
from tapelint_eval.manifest import ManifestError, Repo, load_manifest, load_repos_tsv
from tapelint_eval.materialise import MaterialiseError, materialise
from tapelint_eval.misses import (
    Miss,
    MissError,
    Recall,
    found_misses,
    load_misses,
    recall_by_rule,
    total,
)
from tapelint_eval.report import Counts, Report, build_report

from tapelint.linter.registry import all_rules

HERE = Path(__file__).resolve().parent
BATCHES = HERE / "first-look"
DEFAULT_CODES = frozenset(rule.code for rule in all_rules() if not rule.preview)


@dataclass(frozen=True)
class Batch:
    name: str
    labelled_at: str
    repos: list[Repo]
    labels: list[Label]
    misses: list[Miss] | None  # None: the batch was not read for misses

    def recall(self) -> Recall | None:
        if self.misses is None:
            return None
        return total(recall_by_rule(self.labels, self.misses, DEFAULT_CODES))


def load_batches(root: Path) -> list[Batch]:
    batches = []
    for directory in sorted(path for path in root.iterdir() if path.is_dir()):
        meta = tomllib.loads((directory / "batch.toml").read_text(encoding="utf-8"))
        misses_file = directory / "misses.jsonl"
        batches.append(
            Batch(
                name=directory.name,
                labelled_at=str(meta["labelled_at"]),
                repos=load_manifest(directory / "repos.toml"),
                labels=load_labels(directory / "labels.jsonl"),
                misses=load_misses(misses_file) if misses_file.is_file() else None,
            )
        )
    return batches


def first_look_counts(labels: list[Label]) -> Counts:
    """The batch as it was labelled: one finding per label."""
    counts = Counts()
    for label in labels:
        counts.add(label.label)
    return counts


def _useful(counts: Counts) -> str:
    return "-" if counts.precision is None else f"{counts.precision:.2f}"


def _fraction(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _recall_cells(recall: Recall | None) -> str:
    if recall is None:
        return " - | - |"
    return f" {recall.missed} | {_fraction(recall.value)} |"


def _row(name: str, repos: int, counts: Counts, recall: Recall | None) -> str:
    return (
        f"| {name} | {repos} | {counts.findings} | {counts.right} | {counts.wrong} | "
        f"{counts.low_value} | {_useful(counts)} |{_recall_cells(recall)}"
    )


def first_look_table(batches: list[Batch]) -> list[str]:
    """Each batch as labelled, with its recall when it was read for misses (`misses` counts
    those that are not `borderline`), and all batches: precision over every batch, recall over
    the batches read for misses."""
    lines = [
        "| batch | repositories | findings | right | wrong | low-value | useful | misses "
        "| recall |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    counts_all = Counts()
    recall_all: Recall | None = None
    for batch in batches:
        counts = first_look_counts(batch.labels)
        recall = batch.recall()
        name = f"{batch.name} (at `{batch.labelled_at[:7]}`)"
        lines.append(_row(name, len(batch.repos), counts, recall))
        for field in ("findings", "right", "wrong", "low_value"):
            setattr(counts_all, field, getattr(counts_all, field) + getattr(counts, field))
        if recall is not None:
            recall_all = recall_all or Recall()
            recall_all += recall
    repos = sum(len(b.repos) for b in batches)
    lines.append(_row("all first looks", repos, counts_all, recall_all))
    return lines


def recall_table(batches: list[Batch]) -> list[str]:
    """Recall per rule over the batches read for misses (none: no table)."""
    read = [(b.name, b.labels, misses) for b in batches if (misses := b.misses) is not None]
    if not read:
        return []
    rules: dict[str, Recall] = {}
    for _, labels, misses in read:
        for code, recall in recall_by_rule(labels, misses, DEFAULT_CODES).items():
            rules.setdefault(code, Recall())
            rules[code] += recall
    lines = [
        f"Recall by rule over the batches read for misses ({', '.join(r[0] for r in read)}):",
        "",
        "| rule | right | misses | recall |",
        "|---|---|---|---|",
    ]
    for code, recall in sorted(rules.items()):
        lines.append(f"| {code} | {recall.found} | {recall.missed} | {_fraction(recall.value)} |")
    all_rules_recall = total(rules)
    lines.append(
        f"| all | {all_rules_recall.found} | {all_rules_recall.missed} | "
        f"{_fraction(all_rules_recall.value)} |"
    )
    return lines


def _findings(repos: list[Repo], options: argparse.Namespace) -> tuple[list[Finding], list[str]]:
    """The default rules' findings of this interpreter's tapelint over `repos`, and the names
    of the repositories it checked (a failure is recorded in `options.errors`)."""
    findings: list[Finding] = []
    checked: list[str] = []
    for repo in repos:
        print(f"{repo.name} @ {repo.commit[:12]}", file=sys.stderr, flush=True)
        try:
            tree = materialise(repo, options.cache_dir, options.mirror)
            findings += run_tapelint(repo.name, tree.root, preview=False)
        except (MaterialiseError, LintError) as error:
            options.errors.append(f"{repo.name}: {error}")
            continue
        checked.append(repo.name)
    return findings, checked


def _recall_now(batch: Batch, report: Report, found: list[Miss]) -> Recall | None:
    """(labelled right findings still reported + misses now found) over the first look's right
    findings and counted misses."""
    first = batch.recall()
    if first is None:
        return None
    found_now = report.total.right + sum(1 for miss in found if miss.counted)
    return Recall(found=found_now, missed=first.found + first.missed - found_now)


def _found_cells(batch_misses: list[Miss] | None, found: list[Miss]) -> str:
    if batch_misses is None:
        return "-"
    return f"{sum(m.counted for m in found)} of {sum(m.counted for m in batch_misses)}"


def now_table(
    batches: list[Batch],
    options: argparse.Namespace,
    tuned: tuple[Path, Path] | None = (HERE / "repos.toml", HERE / "labels.jsonl"),
) -> list[str]:
    """The current code over every batch (and the tuned set, when given as manifest and
    labels): precision of what it prints, and which misses it now finds."""
    lines = [
        "| set | findings now | right | wrong | low-value | not yet labelled | useful "
        "(of labelled) | right lost | misses found | recall now |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    sets: list[tuple[str, list[Repo], list[Label], Batch | None]] = [
        (f"first look {b.name}", b.repos, b.labels, b) for b in batches
    ]
    if tuned is not None:
        manifest, labels = tuned
        sets.append(("tuned (eval/repos.toml)", load_manifest(manifest), load_labels(labels), None))
    found_all: list[Miss] = []
    recall_all: Recall | None = None
    for name, repos, labels, batch in sets:
        findings, checked = _findings(repos, options)
        report = build_report(findings, labels, checked, sorted(DEFAULT_CODES), frozenset(), 0.9)
        misses = batch.misses if batch is not None else None
        found = found_misses(misses, findings) if misses is not None else []
        recall = _recall_now(batch, report, found) if batch is not None else None
        if recall is not None:
            recall_all = recall_all or Recall()
            recall_all += recall
        found_all += found
        t = report.total
        lines.append(
            f"| {name} | {t.findings} | {t.right} | {t.wrong} | {t.low_value} | "
            f"{t.unlabelled} | {_useful(t)} | {len(report.lost)} | "
            f"{_found_cells(misses, found)} | {_fraction(recall.value if recall else None)} |"
        )
    lines.append(f"\nRecall now over the batches read for misses: {_recall_text(recall_all)}")
    lines += _found_list("Misses the current code finds", found_all)
    return lines


def _recall_text(recall: Recall | None) -> str:
    if recall is None:
        return "- (no batch was read for misses)"
    return f"{_fraction(recall.value)} ({recall.found} of {recall.found + recall.missed})"


def _found_list(title: str, found: list[Miss]) -> list[str]:
    if not found:
        return [f"{title}: none"]
    lines = [f"{title}:"]
    for miss in found:
        lines.append(f"  {miss.where()} {miss.code} ({miss.tag})")
    return lines


def dev_set_lines(directory: Path, options: argparse.Namespace) -> list[str]:
    """How many misses of a miss list laid out like `../shared/recall/` the current code
    finds, per set and in all (`borderline` ones apart), and which."""
    repos = load_repos_tsv(directory / "repos.tsv")
    misses = load_misses(directory / "misses.jsonl")
    findings, _ = _findings(repos, options)
    found = found_misses(misses, findings)
    groups = sorted({miss.group or "-" for miss in misses})
    lines = [
        f"Miss list {directory}: found now, of the misses that are not borderline:",
        "",
        "| set | misses | found | borderline found |",
        "|---|---|---|---|",
    ]
    for group in [*groups, None]:
        chosen = [m for m in misses if group is None or (m.group or "-") == group]
        hits = [m for m in found if group is None or (m.group or "-") == group]
        counted = sum(m.counted for m in chosen)
        counted_hits = sum(m.counted for m in hits)
        borderline = f"{len(hits) - counted_hits} of {len(chosen) - counted}"
        lines.append(f"| {group or 'all'} | {counted} | {counted_hits} | {borderline} |")
    lines += ["", *_found_list("Found", found)]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="eval/first_look.py",
        description=__doc__,
        formatter_class=argparse.RawTextHelpFormatter,
    )
    parser.add_argument("--batches", type=Path, default=BATCHES)
    parser.add_argument(
        "--now",
        action="store_true",
        help="also run the current tapelint over every batch and the tuned set",
    )
    default_mirror = os.environ.get("TAPELINT_EVAL_MIRROR")
    parser.add_argument(
        "--mirror", type=Path, default=Path(default_mirror) if default_mirror else None
    )
    parser.add_argument(
        "--dev-set",
        type=Path,
        metavar="DIR",
        help="also measure a miss list laid out like ../shared/recall/ (repos.tsv, misses.jsonl)",
    )
    parser.add_argument(
        "--cache-dir",
        type=lambda text: Path(text).expanduser(),
        default=Path(
            os.environ.get("TAPELINT_EVAL_CACHE") or "~/.cache/tapelint-eval"
        ).expanduser(),
    )
    options = parser.parse_args(argv)
    options.errors = []
    unusable = (OSError, KeyError, tomllib.TOMLDecodeError, ManifestError, LabelError, MissError)
    try:
        batches = load_batches(options.batches)
    except unusable as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print("First look (each batch as labelled, before any fix it led to):\n")
    print("\n".join(first_look_table(batches)))
    by_rule = recall_table(batches)
    if by_rule:
        print("\n" + "\n".join(by_rule))
    if options.now:
        print("\nNow (this interpreter's tapelint, default rules):\n")
        print("\n".join(now_table(batches, options)))
    if options.dev_set is not None:
        try:
            lines = dev_set_lines(options.dev_set, options)
        except unusable as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
        print("\n" + "\n".join(lines))
    for error in options.errors:
        print(f"error: {error}", file=sys.stderr)
    return 1 if options.errors else 0


if __name__ == "__main__":
    sys.exit(main())
