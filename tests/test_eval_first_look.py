"""eval/first_look.py: the first-look figures come from each batch's labels, per batch and
cumulatively, and every committed batch is readable."""

from __future__ import annotations

import json
import sys
from pathlib import Path

EVAL_DIR = Path(__file__).resolve().parents[1] / "eval"
sys.path.insert(0, str(EVAL_DIR))

import first_look  # noqa: E402


def _batch(root: Path, name: str, labels: list[str]) -> None:
    directory = root / name
    directory.mkdir(parents=True)
    (directory / "batch.toml").write_text(f'labelled_at = "{"a" * 40}"\n')
    (directory / "repos.toml").write_text(
        '[[repo]]\nname = "o/r"\ncommit = "' + "b" * 40 + '"\nkind = "k"\nwhy = "w"\n'
    )
    with (directory / "labels.jsonl").open("w") as stream:
        for line, label in enumerate(labels, start=1):
            record = {
                "repo": "o/r",
                "path": "a.py",
                "cell": None,
                "line": line,
                "column": 1,
                "code": "TAP401",
                "label": label,
                "reason": "r",
            }
            stream.write(json.dumps(record) + "\n")


def test_each_batch_and_all_batches(tmp_path, capsys):
    _batch(tmp_path, "001", ["right", "wrong", "low-value", "right"])
    _batch(tmp_path, "002", ["right", "right", "low-value"])
    assert first_look.main(["--batches", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "| 001 (at `aaaaaaa`) | 1 | 4 | 2 | 1 | 1 | 0.50 |" in out
    assert "| 002 (at `aaaaaaa`) | 1 | 3 | 2 | 0 | 1 | 0.67 |" in out
    assert "| all first looks | 2 | 7 | 4 | 1 | 2 | 0.57 |" in out


def test_a_batch_without_its_commit_is_refused(tmp_path, capsys):
    _batch(tmp_path, "001", ["right"])
    (tmp_path / "001" / "batch.toml").write_text("")
    assert first_look.main(["--batches", str(tmp_path)]) == 2
    assert "labelled_at" in capsys.readouterr().err


def test_the_committed_batches_are_complete():
    batches = first_look.load_batches(first_look.BATCHES)
    assert len(batches) >= 2
    for batch in batches:
        assert len(batch.repos) >= 8, batch.name
        labelled = {label.repo for label in batch.labels}
        assert labelled <= {repo.name for repo in batch.repos}, batch.name
        assert all(label.reason for label in batch.labels), batch.name
