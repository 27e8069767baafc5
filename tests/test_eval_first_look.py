"""eval/first_look.py: the first-look figures come from each batch's labels (and, for a batch
read for misses, its misses), per batch and cumulatively; `--now` and `--dev-set` say which
misses the current code finds; every committed batch is readable."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

EVAL_DIR = Path(__file__).resolve().parents[1] / "eval"
sys.path.insert(0, str(EVAL_DIR))

import first_look  # noqa: E402
from tapelint_eval.labels import Finding  # noqa: E402
from tapelint_eval.misses import Miss, found_misses  # noqa: E402


def _batch(
    root: Path,
    name: str,
    labels: list[str],
    codes: list[str] | None = None,
    misses: list[dict] | None = None,
    repo: str = "o/r",
    commit: str = "b" * 40,
) -> Path:
    directory = root / name
    directory.mkdir(parents=True)
    (directory / "batch.toml").write_text(f'labelled_at = "{"a" * 40}"\n')
    (directory / "repos.toml").write_text(
        f'[[repo]]\nname = "{repo}"\ncommit = "{commit}"\nkind = "k"\nwhy = "w"\n'
    )
    codes = codes or ["TAP401"] * len(labels)
    with (directory / "labels.jsonl").open("w") as stream:
        for line, (label, code) in enumerate(zip(labels, codes, strict=True), start=1):
            record = {
                "repo": repo,
                "path": "a.py",
                "cell": None,
                "line": line,
                "column": 1,
                "code": code,
                "label": label,
                "reason": "r",
            }
            stream.write(json.dumps(record) + "\n")
    if misses is not None:
        (directory / "misses.jsonl").write_text("".join(json.dumps(m) + "\n" for m in misses))
    return directory


def _miss(line: int, code: str = "TAP401", tag: str = "gap", **changes) -> dict:
    record = {
        "repo": "o/r",
        "path": "b.py",
        "cell": None,
        "line": line,
        "code": code,
        "tag": tag,
        "reason": "r",
        "readme_explains": False,
    }
    return record | changes


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


def test_recall_per_batch_and_over_the_batches_read_for_misses(tmp_path, capsys):
    _batch(tmp_path, "001", ["right", "wrong"])
    # A preview rule's right finding counts for precision, not for recall.
    _batch(
        tmp_path,
        "002",
        ["right", "right", "right", "right", "low-value"],
        codes=["TAP401", "TAP401", "TAP401", "TAP106", "TAP401"],
        misses=[_miss(1), _miss(2, code="TAP303", tag="design limit"), _miss(3, tag="borderline")],
    )
    _batch(tmp_path, "003", ["right", "right"], misses=[])
    assert first_look.main(["--batches", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "| 001 (at `aaaaaaa`) | 1 | 2 | 1 | 1 | 0 | 0.50 | - | - |" in out
    assert "| 002 (at `aaaaaaa`) | 1 | 5 | 4 | 0 | 1 | 0.80 | 2 | 0.60 |" in out
    assert "| 003 (at `aaaaaaa`) | 1 | 2 | 2 | 0 | 0 | 1.00 | 0 | 1.00 |" in out
    assert "| all first looks | 3 | 9 | 7 | 1 | 1 | 0.78 | 2 | 0.71 |" in out
    assert "read for misses (002, 003)" in out
    assert "| TAP303 | 0 | 1 | 0.00 |" in out
    assert "| TAP401 | 5 | 1 | 0.83 |" in out
    assert "| all | 5 | 2 | 0.71 |" in out


def test_no_recall_without_a_batch_read_for_misses(tmp_path, capsys):
    _batch(tmp_path, "001", ["right"])
    assert first_look.main(["--batches", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "| all first looks | 1 | 1 | 1 | 0 | 0 | 1.00 | - | - |" in out
    assert "Recall by rule" not in out


@pytest.mark.parametrize(
    ("change", "complaint"),
    [
        ({"tag": "maybe"}, "`tag` must be one of"),
        ({"line": 0}, "`line` must be a positive integer"),
        ({"readme_explains": "no"}, "`readme_explains`"),
        ({"column": 3}, "unknown keys"),
    ],
)
def test_an_unusable_miss_is_refused(tmp_path, capsys, change, complaint):
    _batch(tmp_path, "001", ["right"], misses=[_miss(1) | change])
    assert first_look.main(["--batches", str(tmp_path)]) == 2
    assert complaint in capsys.readouterr().err


def test_a_miss_listed_twice_is_refused(tmp_path, capsys):
    _batch(tmp_path, "001", ["right"], misses=[_miss(1), _miss(1, tag="borderline")])
    assert first_look.main(["--batches", str(tmp_path)]) == 2
    assert "listed twice" in capsys.readouterr().err


def test_a_miss_is_found_by_its_code_path_cell_and_line():
    miss = Miss("o/r", "n.ipynb", 3, 7, "TAP303", "gap", "r")

    def finding(**changes) -> Finding:
        fields = {"repo": "o/r", "path": "n.ipynb", "cell": 3, "line": 7, "column": 12}
        return Finding(**(fields | changes), code="TAP303", message="m")

    assert found_misses([miss], [finding(column=1)]) == [miss]
    for other in ({"cell": 4}, {"line": 8}, {"path": "m.ipynb"}, {"repo": "o/s"}):
        assert found_misses([miss], [finding(**other)]) == [], other
    other_code = Finding("o/r", "n.ipynb", 3, 7, 12, "TAP401", "m")
    assert found_misses([miss], [other_code]) == []


TRAIN = """\
import tensorflow as tf

model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
optimizer = tf.keras.optimizers.Adam()


def step(x, y):
    with tf.GradientTape() as tape:
        pred = model(x)
        loss = tf.reduce_mean((pred - y) ** 2)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
"""


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def _git(*arguments: str, cwd: Path) -> str:
    return subprocess.run(
        ["git", *arguments], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture
def mirrored(tmp_path: Path) -> dict:
    """`acme/trainer` with `train.py`, committed and mirrored as the snapshot store keeps it;
    two misses there: TAP401 at the apply (which tapelint reports: a miss the current code
    finds) and TAP303 at the model call (a model without dropout: never reported)."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "train.py").write_text(TRAIN)
    _git("init", "--quiet", cwd=work)
    _git("add", ".", cwd=work)
    _git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "--quiet", "-m", "x", cwd=work)
    commit = _git("rev-parse", "HEAD", cwd=work)
    mirror = tmp_path / "mirror"
    _git("clone", "--quiet", "--bare", str(work), str(mirror / "acme+trainer"), cwd=tmp_path)
    common = {"repo": "acme/trainer", "path": "train.py"}
    apply_miss = _miss(_line_of(TRAIN, "apply_gradients"), **common)
    call_miss = _miss(_line_of(TRAIN, "pred = model(x)"), code="TAP303", **common)
    return {
        "commit": commit,
        "mirror": mirror,
        "cache": tmp_path / "cache",
        "misses": [apply_miss, call_miss],
    }


def test_now_says_which_misses_the_current_code_finds(tmp_path, mirrored):
    batches_dir = tmp_path / "batches"
    _batch(
        batches_dir,
        "001",
        [],
        misses=mirrored["misses"],
        repo="acme/trainer",
        commit=mirrored["commit"],
    )
    batches = first_look.load_batches(batches_dir)
    options = argparse.Namespace(cache_dir=mirrored["cache"], mirror=mirrored["mirror"], errors=[])
    lines = first_look.now_table(batches, options, tuned=None)
    assert options.errors == []
    text = "\n".join(lines)
    # One finding, unlabelled; 1 of the 2 misses found; recall now 1 / (0 right + 2 misses).
    assert "| first look 001 | 1 | 0 | 0 | 0 | 1 | - | 0 | 1 of 2 | 0.50 |" in text
    apply_line = _line_of(TRAIN, "apply_gradients")
    assert f"  acme/trainer:train.py:{apply_line} TAP401 (gap)" in lines
    assert not any("TAP303 (" in line for line in lines)


def test_dev_set_counts_the_misses_found_per_set(tmp_path, mirrored, capsys):
    dev = tmp_path / "dev"
    dev.mkdir()
    (dev / "repos.tsv").write_text(
        f"set\trepo\tcommit\nturn-3\tacme/trainer\t{mirrored['commit']}\n"
    )
    apply_miss, call_miss = mirrored["misses"]
    records = [
        {k: v for k, v in apply_miss.items() if k != "readme_explains"} | {"set": "turn-3"},
        {k: v for k, v in call_miss.items() if k != "readme_explains"} | {"set": "issue-11"},
    ]
    (dev / "misses.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    batches_dir = tmp_path / "batches"
    _batch(batches_dir, "001", ["right"])
    arguments = ["--batches", str(batches_dir), "--dev-set", str(dev)]
    arguments += ["--mirror", str(mirrored["mirror"]), "--cache-dir", str(mirrored["cache"])]
    assert first_look.main(arguments) == 0
    out = capsys.readouterr().out
    assert "| issue-11 | 1 | 0 | 0 of 0 |" in out
    assert "| turn-3 | 1 | 1 | 0 of 0 |" in out
    assert "| all | 2 | 1 | 0 of 0 |" in out
    assert f"acme/trainer:train.py:{_line_of(TRAIN, 'apply_gradients')} TAP401 (gap)" in out


def test_the_committed_batches_are_complete():
    batches = first_look.load_batches(first_look.BATCHES)
    assert len(batches) >= 2
    for batch in batches:
        assert len(batch.repos) >= 8, batch.name
        names = {repo.name for repo in batch.repos}
        labelled = {label.repo for label in batch.labels}
        assert labelled <= names, batch.name
        assert all(label.reason for label in batch.labels), batch.name
        if batch.misses is not None:
            assert {miss.repo for miss in batch.misses} <= names, batch.name
            assert all(miss.readme_explains is not None for miss in batch.misses), batch.name
    assert any(batch.misses is not None for batch in batches)
