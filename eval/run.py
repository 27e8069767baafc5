"""Run tapelint over the pinned repositories of `repos.toml` and compare with `labels.jsonl`.

    python eval/run.py --mirror /work/.mirror        # from local snapshots (else GitHub)
    python eval/run.py --preview --json              # preview rules too; machine-readable
    python eval/run.py --all --mirror /work/.mirror  # the tuned set and every first look

Each repository is materialised at its commit in the cache (default ~/.cache/tapelint-eval,
`--cache-dir` or TAPELINT_EVAL_CACHE), tapelint is run from its root with this interpreter
(`-m tapelint check . --output-format json --no-cache --exit-zero`), and the findings are
matched with the labels. Printed: a per-rule table (precision = right / labelled), the same
per repository, the findings new since labelling with their source line, and the
labelled-right findings no longer reported. Exit status: 0 when every repository was checked,
whatever the precision; 1 when one could not be (the others are still reported); 2 for a
usage error or an unusable manifest or labels file. See eval/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from tapelint_eval.labels import Finding, Label, LabelError, key_fields, load_labels, stub_for
from tapelint_eval.lint import LintError, run_tapelint
from tapelint_eval.manifest import ManifestError, Repo, load_manifest
from tapelint_eval.materialise import MaterialiseError, Tree, materialise
from tapelint_eval.report import Report, build_report, counts_json, repo_table, rule_table
from tapelint_eval.source import excerpt, source_lines

from tapelint.linter.registry import all_rules

HERE = Path(__file__).resolve().parent


def main(argv: list[str] | None = None) -> int:
    options = _parser().parse_args(argv)
    try:
        manifests, label_files = _inputs(options)
        repos = [repo for path in manifests for repo in load_manifest(path)]
        labels = [label for path in label_files for label in load_labels(path)]
    except (ManifestError, LabelError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if options.repo:
        unknown = sorted(set(options.repo) - {repo.name for repo in repos})
        if unknown:
            print(f"error: not in the manifest: {', '.join(unknown)}", file=sys.stderr)
            return 2
        repos = [repo for repo in repos if repo.name in options.repo]

    trees: dict[str, Tree] = {}
    findings: list[Finding] = []
    errors: list[str] = []
    for repo in repos:
        _progress(options, f"{repo.name} @ {repo.commit[:12]}")
        try:
            tree = materialise(repo, options.cache_dir, options.mirror)
            findings += run_tapelint(repo.name, tree.root, options.preview)
        except (MaterialiseError, LintError) as error:
            errors.append(f"{repo.name}: {error}")
            continue
        trees[repo.name] = tree

    rules = all_rules()
    preview_codes = frozenset(rule.code for rule in rules if rule.preview)
    codes_run = [rule.code for rule in rules if options.preview or not rule.preview]
    findings.sort(key=lambda f: (f.repo, f.path, f.cell or 0, f.line, f.column, f.code))
    report = build_report(
        findings, labels, list(trees), codes_run, preview_codes, options.threshold
    )
    if options.new_stubs is not None:
        _write_stubs(options.new_stubs, report.matching.unlabelled)
    if options.json:
        print(json.dumps(_as_json(report, repos, trees, errors), indent=2))
    else:
        _print_text(report, trees, errors, options.context)
    return 1 if errors else 0


def _inputs(options: argparse.Namespace) -> tuple[list[Path], list[Path]]:
    """The manifests and labels files to read: the options', or with `--all` the tuned set's
    and every first-look batch's, with the labels of what later commits reported in the
    first-look repositories (`first-look/later.jsonl`: a batch itself is never relabelled)."""
    if not options.all:
        return [options.manifest], [options.labels]
    batches = sorted(p for p in (HERE / "first-look").iterdir() if (p / "repos.toml").is_file())
    manifests = [HERE / "repos.toml", *(batch / "repos.toml" for batch in batches)]
    labels = [HERE / "labels.jsonl", *(batch / "labels.jsonl" for batch in batches)]
    later = HERE / "first-look" / "later.jsonl"
    return manifests, [*labels, *([later] if later.is_file() else [])]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="eval/run.py", description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    default_cache = os.environ.get("TAPELINT_EVAL_CACHE") or "~/.cache/tapelint-eval"
    default_mirror = os.environ.get("TAPELINT_EVAL_MIRROR")
    parser.add_argument("--manifest", type=Path, default=HERE / "repos.toml")
    parser.add_argument("--labels", type=Path, default=HERE / "labels.jsonl")
    parser.add_argument(
        "--cache-dir",
        type=lambda text: Path(text).expanduser(),
        default=Path(default_cache).expanduser(),
        help="where repositories are materialised (env TAPELINT_EVAL_CACHE; "
        "default ~/.cache/tapelint-eval)",
    )
    parser.add_argument(
        "--mirror",
        type=Path,
        default=Path(default_mirror) if default_mirror else None,
        help="a directory of bare git mirrors, MIRROR/owner+name[/repo] "
        "(env TAPELINT_EVAL_MIRROR); repositories not found there are fetched from GitHub",
    )
    parser.add_argument(
        "--all",
        action="store_true",
        help="every repository, the tuned set and every first-look batch, with all their "
        "labels (instead of --manifest and --labels)",
    )
    parser.add_argument("--preview", action="store_true", help="run the preview rules too")
    parser.add_argument("--repo", action="append", help="only this owner/name (repeatable)")
    parser.add_argument(
        "--threshold", type=float, default=0.9, help="precision a rule must reach (0.9)"
    )
    parser.add_argument(
        "--context", type=int, default=0, help="lines of source around each new finding"
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    parser.add_argument(
        "--new-stubs",
        type=Path,
        help="write a labels-file line for each unlabelled finding to this file, to complete "
        "by hand and append to labels.jsonl",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
    return parser


def _progress(options: argparse.Namespace, text: str) -> None:
    if not options.quiet:
        print(text, file=sys.stderr, flush=True)


def _print_text(report: Report, trees: dict[str, Tree], errors: list[str], context: int) -> None:
    print("\n".join(rule_table(report)))
    print()
    print("\n".join(repo_table(report)))
    unlabelled = report.matching.unlabelled
    print(f"\nNew since labelling (unlabelled): {len(unlabelled)}")
    for finding in unlabelled:
        print(f"  {finding.where()} {finding.code} {finding.message}")
        lines = source_lines(trees[finding.repo].root, finding.path, finding.cell)
        for number, text in excerpt(lines, finding.line, context):
            marker = ">" if number == finding.line else " "
            print(f"    {marker}{number:5d} | {text}")
    print(f"\nLost (labelled right, no longer reported): {len(report.lost)}")
    for label in report.lost:
        print(f"  {label.where()} {label.code}  [{label.reason}]")
    print(f"\nGone (labelled wrong or low-value, no longer reported): {len(report.gone)}")
    for label in report.gone:
        print(f"  {label.where()} {label.code} {label.label}  [{label.reason}]")
    left_out = {name: tree.left_out for name, tree in trees.items() if tree.left_out}
    if left_out:
        listed = ", ".join(f"{name} {count}" for name, count in left_out.items())
        print(f"\nFiles of 4 MiB or more left out: {listed}")
    for error in errors:
        print(f"error: {error}", file=sys.stderr)


def _as_json(
    report: Report, repos: list[Repo], trees: dict[str, Tree], errors: list[str]
) -> dict[str, Any]:
    def finding_json(finding: Finding) -> dict[str, Any]:
        lines = source_lines(trees[finding.repo].root, finding.path, finding.cell)
        text = lines[finding.line - 1] if 0 < finding.line <= len(lines) else None
        return key_fields(finding) | {"message": finding.message, "source": text}

    def label_json(label: Label) -> dict[str, Any]:
        return key_fields(label) | {"label": label.label, "reason": label.reason}

    return {
        "threshold": report.threshold,
        "rules": {
            code: counts_json(counts)
            | {"preview": code in report.preview_codes, "below": report.below_threshold(code)}
            for code, counts in report.rules.items()
        },
        "repos": {
            repo.name: {"commit": repo.commit, "checked": repo.name in trees}
            | (counts_json(report.repos[repo.name]) if repo.name in report.repos else {})
            for repo in repos
        },
        "total": counts_json(report.total),
        "new": [finding_json(finding) for finding in report.matching.unlabelled],
        "lost": [label_json(label) for label in report.lost],
        "gone": [label_json(label) for label in report.gone],
        "errors": errors,
    }


def _write_stubs(path: Path, findings: list[Finding]) -> None:
    with path.open("w", encoding="utf-8") as stream:
        for finding in findings:
            stream.write(json.dumps(stub_for(finding)) + "\n")


if __name__ == "__main__":
    sys.exit(main())
