"""First-look precision: what tapelint printed on repositories nobody here had read before.

    python eval/first_look.py                          # each batch as labelled, and cumulative
    python eval/first_look.py --now --mirror /work/.mirror   # and what main prints there now

A batch (`eval/first-look/NNN/`) holds a manifest (`repos.toml`), the labels of every finding
that main printed there *before* any rule was changed for it (`labels.jsonl`), and the commit
that was run (`batch.toml`: `labelled_at`). The first-look figure of a batch is computed from
its labels alone: every label is one finding of that first run, so it never moves when a later
fix makes the batch look better. Labels may be corrected (with the reason in the label), never
rewritten to flatter a fix.

`--now` runs this interpreter's tapelint over each batch and over the tuned evaluation
(`eval/repos.toml`), as `eval/run.py` does, and prints the figures of the current code next to
the first look: labelled findings still reported, findings no label covers (new since the
batch), and right findings lost. Exit status: 0; 1 when a repository could not be checked; 2
for an unusable batch.
"""

from __future__ import annotations

import argparse
import os
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

from tapelint_eval.labels import Label, LabelError, load_labels
from tapelint_eval.lint import LintError, run_tapelint
from tapelint_eval.manifest import ManifestError, Repo, load_manifest
from tapelint_eval.materialise import MaterialiseError, materialise
from tapelint_eval.report import Counts, Report, build_report

from tapelint.linter.registry import all_rules

HERE = Path(__file__).resolve().parent
BATCHES = HERE / "first-look"


@dataclass(frozen=True)
class Batch:
    name: str
    labelled_at: str
    repos: list[Repo]
    labels: list[Label]


def load_batches(root: Path) -> list[Batch]:
    batches = []
    for directory in sorted(path for path in root.iterdir() if path.is_dir()):
        meta = tomllib.loads((directory / "batch.toml").read_text(encoding="utf-8"))
        batches.append(
            Batch(
                name=directory.name,
                labelled_at=str(meta["labelled_at"]),
                repos=load_manifest(directory / "repos.toml"),
                labels=load_labels(directory / "labels.jsonl"),
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


def _row(name: str, repos: int, counts: Counts) -> str:
    return (
        f"| {name} | {repos} | {counts.findings} | {counts.right} | {counts.wrong} | "
        f"{counts.low_value} | {_useful(counts)} |"
    )


def first_look_table(batches: list[Batch]) -> list[str]:
    lines = [
        "| batch | repositories | findings | right | wrong | low-value | useful |",
        "|---|---|---|---|---|---|---|",
    ]
    total = Counts()
    for batch in batches:
        counts = first_look_counts(batch.labels)
        lines.append(_row(f"{batch.name} (at `{batch.labelled_at[:7]}`)", len(batch.repos), counts))
        for field in ("findings", "right", "wrong", "low_value"):
            setattr(total, field, getattr(total, field) + getattr(counts, field))
    lines.append(_row("all first looks", sum(len(b.repos) for b in batches), total))
    return lines


def _run(repos: list[Repo], labels: list[Label], options: argparse.Namespace) -> Report:
    codes = [rule.code for rule in all_rules() if not rule.preview]
    findings, checked = [], []
    for repo in repos:
        print(f"{repo.name} @ {repo.commit[:12]}", file=sys.stderr, flush=True)
        try:
            tree = materialise(repo, options.cache_dir, options.mirror)
            findings += run_tapelint(repo.name, tree.root, preview=False)
        except (MaterialiseError, LintError) as error:
            options.errors.append(f"{repo.name}: {error}")
            continue
        checked.append(repo.name)
    return build_report(findings, labels, checked, codes, frozenset(), 0.9)


def now_table(batches: list[Batch], options: argparse.Namespace) -> list[str]:
    lines = [
        "| set | findings now | right | wrong | low-value | not yet labelled | useful "
        "(of labelled) | right lost |",
        "|---|---|---|---|---|---|---|---|",
    ]
    sets = [(f"first look {b.name}", b.repos, b.labels) for b in batches]
    sets.append(
        (
            "tuned (eval/repos.toml)",
            load_manifest(HERE / "repos.toml"),
            load_labels(HERE / "labels.jsonl"),
        )
    )
    for name, repos, labels in sets:
        report = _run(repos, labels, options)
        t = report.total
        lines.append(
            f"| {name} | {t.findings} | {t.right} | {t.wrong} | {t.low_value} | "
            f"{t.unlabelled} | {_useful(t)} | {len(report.lost)} |"
        )
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
        "--cache-dir",
        type=lambda text: Path(text).expanduser(),
        default=Path(
            os.environ.get("TAPELINT_EVAL_CACHE") or "~/.cache/tapelint-eval"
        ).expanduser(),
    )
    options = parser.parse_args(argv)
    options.errors = []
    try:
        batches = load_batches(options.batches)
    except (OSError, KeyError, tomllib.TOMLDecodeError, ManifestError, LabelError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print("First look (each batch as labelled, before any fix it led to):\n")
    print("\n".join(first_look_table(batches)))
    if options.now:
        print("\nNow (this interpreter's tapelint, default rules):\n")
        print("\n".join(now_table(batches, options)))
    for error in options.errors:
        print(f"error: {error}", file=sys.stderr)
    return 1 if options.errors else 0


if __name__ == "__main__":
    sys.exit(main())
