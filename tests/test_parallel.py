"""The process pool: the same output as `--jobs 1`, in the same order, fixes included, and a
worker that dies is an error for its file, not a hang."""

from __future__ import annotations

import os

from tapelint.linter.engine import Linter
from tapelint.run import parallel
from tests.cli_helpers import (
    CLEAN,
    LOSS_OUTSIDE,
    NOT_RELEASED,
    PERSISTENT_ONCE,
    UNFILTERED,
    run_cli,
    run_subprocess,
    write,
)

SNIPPETS = [LOSS_OUTSIDE, PERSISTENT_ONCE, NOT_RELEASED, UNFILTERED, CLEAN]


def padding(lines: int) -> str:
    """Code without a tape, so files are big enough for a pool."""
    return "".join(f"\n\ndef helper_{n}(x):\n    return x + {n}\n" for n in range(lines // 4))


def make_repository(root, files: int = 40) -> None:
    """Enough source to parse that the default run uses a pool (see POOL_MIN_BYTES)."""
    for n in range(files):
        write(root, f"pkg{n % 3}/mod_{n:02d}.py", SNIPPETS[n % len(SNIPPETS)] + padding(600))
    write(root, "broken.py", "import tensorflow as tf\nwith tf.GradientTape() as t\n")
    write(root, "plain.py", "x = 1\n")
    os.mkfifo(root / "pipe.py")
    total = sum(p.stat().st_size for p in root.rglob("mod_*.py"))
    assert total > parallel.POOL_MIN_BYTES


def test_parallel_run_prints_exactly_what_jobs_1_prints(project, pools):
    make_repository(project)
    serial = run_cli("check", "--no-cache", "--jobs", "1")
    assert pools == []
    parallel_run = run_cli("check", "--no-cache", "--jobs", "2")
    assert pools == [2]
    assert parallel_run.exit_code == serial.exit_code == 1
    assert parallel_run.stdout == serial.stdout
    assert parallel_run.stderr == serial.stderr
    codes = {code for _, code in serial.codes()}
    assert codes == {"TAP001", "TAP002", "TAP101", "TAP102", "TAP103", "TAP401"}


def test_default_parallel_process_matches_jobs_1_process(project):
    make_repository(project)
    default = run_subprocess("check", "--no-cache", "--output-format", "json", cwd=project)
    serial = run_subprocess("check", "--no-cache", "-j1", "--output-format", "json", cwd=project)
    assert (default.exit_code, default.stdout, default.stderr) == (
        serial.exit_code,
        serial.stdout,
        serial.stderr,
    )
    assert default.stdout.count('"code"') == 34


def test_few_small_files_are_checked_without_a_pool(project, pools):
    write(project, "a.py", LOSS_OUTSIDE)
    write(project, "b.py", PERSISTENT_ONCE)
    assert run_cli("check", "--no-cache", "--jobs", "2").exit_code == 1
    assert pools == []


def test_a_warm_run_parses_nothing_and_prints_what_the_cold_run_printed(
    project, pools, monkeypatch
):
    make_repository(project)
    cold = run_cli("check", "--jobs", "2")

    def parsing(self, data, path, context=None):
        raise AssertionError(f"{path} parsed again")

    monkeypatch.setattr(Linter, "analyze_bytes", parsing)
    warm = run_cli("check", "--jobs", "2")
    assert pools == [2]  # the cold run's: a warm one reads its answers without a pool
    assert (warm.exit_code, warm.stdout, warm.stderr) == (cold.exit_code, cold.stdout, cold.stderr)


def test_edited_files_are_parsed_in_a_pool_and_print_what_an_uncached_run_prints(project, pools):
    make_repository(project)
    run_cli("check", "--jobs", "2")  # fills the cache
    for path in project.rglob("mod_*.py"):
        path.write_text(path.read_text() + "# edited\n")
    edited = run_cli("check", "--jobs", "2")
    assert pools == [2, 2]  # the cache holds entries, and the edited files still need a parse
    serial = run_cli("check", "--no-cache", "--jobs", "1")
    assert (edited.exit_code, edited.stdout, edited.stderr) == (
        serial.exit_code,
        serial.stdout,
        serial.stderr,
    )


def test_files_go_to_the_workers_in_batches_the_largest_first():
    sizes = [10, 300_000, 5_000, 7_000, 40_000, 1, 20_000]
    # 372,011 bytes for 8 batches: a batch closes once it holds 46,501 bytes.
    found = parallel.batches(sizes, jobs=1)
    assert found == [[1], [4, 6], [3, 2, 0, 5]]
    assert sorted(i for batch in found for i in batch) == list(range(len(sizes)))
    many = parallel.batches([100] * 200, jobs=2)
    assert [len(batch) for batch in many] == [64, 64, 64, 8]


def test_parallel_fix_writes_what_a_serial_fix_writes(project, pools):
    make_repository(project / "one")
    make_repository(project / "two")
    os.chdir(project / "one")
    serial = run_cli("check", "--fix", "--no-cache", "--jobs", "1")
    os.chdir(project / "two")
    parallel_run = run_cli("check", "--fix", "--no-cache", "--jobs", "2")
    assert pools == [2]
    assert (parallel_run.stdout, parallel_run.stderr) == (serial.stdout, serial.stderr)
    assert "fixed" in serial.stderr
    for path in sorted((project / "one").rglob("mod_*.py")):
        assert path.read_text() == (project / "two" / path.relative_to(project / "one")).read_text()


def test_a_worker_that_dies_is_an_error_for_its_file_and_the_run_ends(project, monkeypatch):
    make_repository(project)
    original = Linter.analyze_bytes

    def dying(self, data, path, context=None):
        if path == "pkg0/mod_00.py" and os.getpid() != parent:
            os._exit(3)  # what a crash in a native parser looks like from the parent
        return original(self, data, path, context)

    parent = os.getpid()
    monkeypatch.setattr(Linter, "analyze_bytes", dying)
    result = run_cli("check", "--no-cache", "--jobs", "2")
    assert result.exit_code == 2
    assert "error: pkg0/mod_00.py: internal error: the worker process checking it died" in (
        result.stderr
    )
