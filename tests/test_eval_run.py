"""`eval/run.py`, the real-repository evaluation, on a tiny repository made here: no network.

The repository is a git repository with one commit; its bare clone is the "mirror" the script
materialises from. tapelint runs for real; the expected positions are found by searching the
source for the lines, never taken from tapelint's output.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

EVAL_DIR = Path(__file__).resolve().parents[1] / "eval"
sys.path.insert(0, str(EVAL_DIR))

import run as eval_run  # noqa: E402
from tapelint_eval.labels import Finding, Label, LabelError, load_labels, match  # noqa: E402
from tapelint_eval.materialise import MAX_FILE_BYTES  # noqa: E402

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


def _column_of(text: str, needle: str) -> int:
    line = text.splitlines()[_line_of(text, needle) - 1]
    return line.index(needle) + 1


def _git(*arguments: str, cwd: Path) -> str:
    return subprocess.run(
        ["git", *arguments], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture
def world(tmp_path: Path) -> dict:
    """A repository `acme/trainer` with `train.py` (and more files), committed and mirrored."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "train.py").write_text(TRAIN)
    (work / "README.md").write_text("not read by tapelint, not materialised\n")
    # 4 MiB of Python that would be flagged: left out, as the snapshot store leaves it out.
    padding = "# padding\n" * (MAX_FILE_BYTES // 10 + 1)
    (work / "huge.py").write_text(TRAIN + padding)
    _git("init", "--quiet", cwd=work)
    _git("add", ".", cwd=work)
    _git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "--quiet", "-m", "x", cwd=work)
    commit = _git("rev-parse", "HEAD", cwd=work)
    mirror = tmp_path / "mirror"
    _git("clone", "--quiet", "--bare", str(work), str(mirror / "acme+trainer"), cwd=tmp_path)
    manifest = tmp_path / "repos.toml"
    manifest.write_text(
        f'[[repo]]\nname = "acme/trainer"\ncommit = "{commit}"\n'
        'kind = "research"\nwhy = "a test repository"\n'
    )
    return {
        "manifest": manifest,
        "labels": tmp_path / "labels.jsonl",
        "mirror": mirror,
        "cache": tmp_path / "cache",
    }


def _label(needle: str, code: str, verdict: str, **changes) -> dict:
    record = {
        "repo": "acme/trainer",
        "path": "train.py",
        "cell": None,
        "line": _line_of(TRAIN, needle),
        "column": _column_of(TRAIN, needle),
        "code": code,
        "label": verdict,
        "reason": "because",
    }
    return record | changes


def _write_labels(path: Path, records: list[dict]) -> None:
    path.write_text("".join(json.dumps(record) + "\n" for record in records))


def _run(world: dict, capsys: pytest.CaptureFixture, *extra: str) -> tuple[int, str, str]:
    status = eval_run.main(
        [
            "--manifest",
            str(world["manifest"]),
            "--labels",
            str(world["labels"]),
            "--cache-dir",
            str(world["cache"]),
            "--mirror",
            str(world["mirror"]),
            "--quiet",
            *extra,
        ]
    )
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_counts_labelled_new_lost_and_gone_findings(world, capsys):
    _write_labels(
        world["labels"],
        [
            _label("tape.gradient", "TAP101", "right"),
            # A right finding tapelint no longer reports (recall lost) ...
            _label("pred = model(x)", "TAP101", "right"),
            # ... and noise it no longer reports.
            _label("loss = tf.reduce_mean", "TAP401", "low-value"),
        ],
    )
    status, out, _ = _run(world, capsys, "--json")
    assert status == 0
    result = json.loads(out)
    tap101, tap401 = result["rules"]["TAP101"], result["rules"]["TAP401"]
    assert (tap101["findings"], tap101["right"], tap101["precision"], tap101["lost"]) == (
        1,
        1,
        1.0,
        1,
    )
    assert (tap401["findings"], tap401["unlabelled"], tap401["precision"], tap401["gone"]) == (
        1,
        1,
        None,
        1,
    )
    [new] = result["new"]
    assert new["code"] == "TAP401"
    assert new["line"] == _line_of(TRAIN, "optimizer.apply_gradients")
    assert "apply_gradients" in new["source"]
    [lost] = result["lost"]
    assert lost["line"] == _line_of(TRAIN, "pred = model(x)")
    # huge.py is not materialised, so nothing of it is reported.
    assert {finding["path"] for finding in result["new"]} == {"train.py"}


def test_large_files_are_left_out_of_the_tree(world, capsys):
    _write_labels(world["labels"], [])
    _run(world, capsys, "--json")
    [tree] = list((world["cache"] / "trees").iterdir())
    assert (tree / "train.py").read_text() == TRAIN
    assert not (tree / "huge.py").exists()
    assert not (tree / "README.md").exists()


def test_text_table_marks_a_rule_below_the_threshold(world, capsys):
    _write_labels(
        world["labels"],
        [
            _label("tape.gradient", "TAP101", "wrong"),
            _label("optimizer.apply_gradients", "TAP401", "right"),
        ],
    )
    status, out, _ = _run(world, capsys)
    assert status == 0
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line.startswith("TAP")}
    assert rows["TAP101"][1:7] == ["1", "0", "1", "0", "0", "0.00"]
    assert rows["TAP101"][-1] == "yes"
    assert rows["TAP401"][1:7] == ["1", "1", "0", "0", "0", "1.00"]
    assert rows["TAP401"][-1] != "yes"
    assert "New since labelling (unlabelled): 0" in out


def test_new_stubs_are_written_for_unlabelled_findings(world, capsys, tmp_path):
    _write_labels(world["labels"], [_label("tape.gradient", "TAP101", "right")])
    stubs = tmp_path / "stubs.jsonl"
    _run(world, capsys, "--new-stubs", str(stubs))
    [stub] = [json.loads(line) for line in stubs.read_text().splitlines()]
    assert stub["code"] == "TAP401"
    assert stub["line"] == _line_of(TRAIN, "optimizer.apply_gradients")
    with pytest.raises(LabelError):  # a stub is not a label until someone fills it in
        load_labels(stubs)


def test_a_tapelint_config_above_the_cache_is_an_error(world, capsys, tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.tapelint]\nignore = ["TAP401"]\n')
    _write_labels(world["labels"], [])
    status, _, err = _run(world, capsys)
    assert status == 1
    assert f"would read the [tool.tapelint] of {tmp_path / 'pyproject.toml'}" in err


def _finding(line: int, column: int, code: str = "TAP201") -> Finding:
    return Finding("a/b", "x.py", None, line, column, code, "message")


def _label_at(line: int, column: int, verdict: str, code: str = "TAP201") -> Label:
    return Label("a/b", "x.py", None, line, column, code, verdict, "reason")


def test_match_prefers_the_exact_column_then_the_same_line():
    first, second = _finding(3, 10), _finding(3, 20)
    labels = [_label_at(3, 20, "wrong"), _label_at(3, 7, "right")]
    matching = match([first, second], labels)
    verdicts = {finding.column: label.label for finding, label in matching.labelled}
    assert verdicts == {20: "wrong", 10: "right"}
    assert matching.unlabelled == [] and matching.unmatched_labels == []


def test_one_label_answers_one_finding_only():
    matching = match([_finding(3, 10), _finding(3, 20)], [_label_at(3, 10, "right")])
    assert [f.column for f in matching.unlabelled] == [20]
    # Also when the column moved: one label of the line, two findings on it.
    moved = match([_finding(3, 10), _finding(3, 20)], [_label_at(3, 5, "right")])
    assert len(moved.labelled) == 1 and len(moved.unlabelled) == 1


def test_labels_of_another_code_or_cell_do_not_match():
    label = _label_at(3, 10, "right", code="TAP101")
    notebook_finding = Finding("a/b", "x.py", 2, 3, 10, "TAP201", "message")
    matching = match([_finding(3, 10), notebook_finding], [label])
    assert len(matching.unlabelled) == 2
    assert matching.unmatched_labels == [label]


@pytest.mark.parametrize(
    ("change", "complaint"),
    [
        ({"label": "maybe"}, "`label` must be one of"),
        ({"reason": ""}, "`reason` must be a non-empty string"),
        ({"line": 0}, "`line` must be a positive integer"),
        ({"cell": "2"}, "`cell` must be null or a positive integer"),
        ({"extra": 1}, "unknown keys"),
    ],
)
def test_a_bad_label_is_rejected_with_its_line(tmp_path, change, complaint):
    good = {
        "repo": "a/b",
        "path": "x.py",
        "cell": None,
        "line": 3,
        "column": 1,
        "code": "TAP101",
        "label": "right",
        "reason": "r",
    }
    path = tmp_path / "labels.jsonl"
    _write_labels(path, [good, good | {"line": 4} | change])
    with pytest.raises(LabelError, match=complaint) as raised:
        load_labels(path)
    assert f"{path}:2:" in str(raised.value)


def test_a_duplicate_label_is_rejected(tmp_path):
    record = _label("tape.gradient", "TAP101", "right")
    path = tmp_path / "labels.jsonl"
    _write_labels(path, [record, record | {"label": "wrong"}])
    with pytest.raises(LabelError, match="a second label"):
        load_labels(path)


def test_all_reads_the_tuned_set_every_batch_and_the_later_labels():
    options = eval_run._parser().parse_args(["--all"])
    manifests, label_files = eval_run._inputs(options)
    batches = sorted((EVAL_DIR / "first-look").glob("[0-9][0-9][0-9]"))
    assert manifests == [EVAL_DIR / "repos.toml", *(b / "repos.toml" for b in batches)]
    assert label_files[0] == EVAL_DIR / "labels.jsonl"
    assert label_files[-1] == EVAL_DIR / "first-look" / "later.jsonl"
    repos = [repo.name for path in manifests for repo in eval_run.load_manifest(path)]
    assert len(repos) == len(set(repos))  # no repository is in two manifests
    labelled = {label.repo for path in label_files for label in load_labels(path)}
    assert labelled <= set(repos)
