"""The result cache: where it lives, that a warm run prints what a cold one does, and that it
is never stale (an edited file, a changed configuration, a new tapelint version)."""

from __future__ import annotations

import json

import pytest

import tapelint
from tapelint.linter.engine import Linter
from tapelint.run import cache as cache_module
from tests.cli_helpers import (
    CLEAN,
    LOSS_OUTSIDE,
    NOT_RELEASED,
    PERSISTENT_ONCE,
    run_cli,
    run_subprocess,
    write,
)


@pytest.fixture
def default_cache(project, monkeypatch):
    """The cache where users get it: `.tapelint_cache` in the project root."""
    monkeypatch.delenv("TAPELINT_CACHE_DIR", raising=False)
    monkeypatch.delenv("TAPELINT_NO_CACHE", raising=False)
    return project / ".tapelint_cache"


@pytest.fixture
def parses(monkeypatch):
    """Counts the files linted from their text (what a cache hit skips)."""
    seen: list[str] = []
    original = Linter.analyze_text

    def counting(self, text, path, **options):
        seen.append(path)
        return original(self, text, path, **options)

    monkeypatch.setattr(Linter, "analyze_text", counting)
    return seen


def entries(directory):
    return sorted(p for p in (directory / "entries").rglob("*") if p.is_file())


def test_warm_run_prints_what_the_cold_run_printed_without_parsing(default_cache, parses):
    write(default_cache.parent, "a.py", LOSS_OUTSIDE)
    write(default_cache.parent, "b.py", PERSISTENT_ONCE)
    write(default_cache.parent, "plain.py", "x = 1\n")
    cold = run_cli("check")
    assert parses == ["a.py", "b.py"]
    warm = run_cli("check")
    assert parses == ["a.py", "b.py"]  # nothing parsed again
    assert (warm.exit_code, warm.stdout, warm.stderr) == (cold.exit_code, cold.stdout, cold.stderr)
    assert cold.codes() == [("a.py", "TAP101"), ("b.py", "TAP102")]
    # Files without a trigger are not worth an entry.
    assert len(entries(default_cache)) == 2


def test_cache_directory_is_tagged_and_ignored_by_git(default_cache):
    write(default_cache.parent, "a.py", LOSS_OUTSIDE)
    run_cli("check")
    assert (default_cache / ".gitignore").read_text() == "*\n"
    tag = (default_cache / "CACHEDIR.TAG").read_text()
    assert tag.startswith("Signature: 8a477f597d28d172789f06886806bc55")


def test_cache_lives_in_the_project_root_not_the_current_directory(default_cache, monkeypatch):
    root = default_cache.parent
    write(root, "pyproject.toml", "[tool.tapelint]\n")
    write(root, "sub/a.py", LOSS_OUTSIDE)
    monkeypatch.chdir(root / "sub")
    run_cli("check")
    assert len(entries(default_cache)) == 1
    assert not (root / "sub" / ".tapelint_cache").exists()


def test_an_edited_file_is_checked_again(default_cache, parses):
    path = write(default_cache.parent, "train.py", LOSS_OUTSIDE)
    assert run_cli("check").codes() == [("train.py", "TAP101")]
    path.write_text(CLEAN)
    assert run_cli("check").stdout == ""
    path.write_text(LOSS_OUTSIDE)
    assert run_cli("check").codes() == [("train.py", "TAP101")]
    assert parses == ["train.py", "train.py"]  # the third run was a hit on the first


def test_a_changed_selection_is_not_answered_from_the_cache(default_cache):
    write(default_cache.parent, "train.py", LOSS_OUTSIDE + PERSISTENT_ONCE)
    assert {c for _, c in run_cli("check").codes()} == {"TAP101", "TAP102"}
    assert run_cli("check", "--select", "TAP102").codes() == [("train.py", "TAP102")]
    assert run_cli("check", "--ignore", "TAP102").codes() == [("train.py", "TAP101")]


def test_a_changed_config_file_is_not_answered_from_the_cache(default_cache, parses):
    root = default_cache.parent
    write(root, "train.py", LOSS_OUTSIDE)
    write(root, "pyproject.toml", "[tool.tapelint]\n")
    assert run_cli("check").codes() == [("train.py", "TAP101")]
    write(root, "pyproject.toml", '[tool.tapelint]\nper-file-ignores = {"train.py" = ["TAP101"]}\n')
    assert run_cli("check").stdout == ""
    # A setting that changes no rule for this file still starts afresh: the key holds the
    # whole configuration, so no future setting can be forgotten.
    write(root, "pyproject.toml", '[tool.tapelint]\nextend-exclude = ["gen/"]\n')
    assert run_cli("check").codes() == [("train.py", "TAP101")]
    assert len(parses) == 3


def test_a_new_tapelint_version_is_not_answered_from_the_cache(default_cache, parses, monkeypatch):
    write(default_cache.parent, "train.py", LOSS_OUTSIDE)
    run_cli("check")
    run_cli("check")
    assert len(parses) == 1
    monkeypatch.setattr(tapelint, "version", lambda: "999.0")
    assert run_cli("check").codes() == [("train.py", "TAP101")]
    assert len(parses) == 2


def test_changed_tapelint_sources_are_not_answered_from_the_cache(
    default_cache, parses, monkeypatch
):
    """An editable install changes code without changing its version."""
    write(default_cache.parent, "train.py", LOSS_OUTSIDE)
    run_cli("check")
    monkeypatch.setattr(cache_module, "_code_fingerprint", lambda: "edited")
    run_cli("check")
    assert len(parses) == 2


def test_the_reported_path_is_part_of_the_key(default_cache, monkeypatch):
    root = default_cache.parent
    write(root, "pyproject.toml", "[tool.tapelint]\n")
    write(root, "sub/train.py", LOSS_OUTSIDE)
    assert run_cli("check").codes() == [("sub/train.py", "TAP101")]
    monkeypatch.chdir(root / "sub")
    assert run_cli("check").codes() == [("train.py", "TAP101")]


@pytest.mark.parametrize("garbage", [b"", b"{not json", b'{"diagnostics": [{"path": 1}]}', b"[]"])
def test_a_corrupt_entry_is_a_miss_and_is_replaced(default_cache, parses, garbage):
    write(default_cache.parent, "train.py", LOSS_OUTSIDE)
    cold = run_cli("check")
    (entry,) = entries(default_cache)
    entry.write_bytes(garbage)
    again = run_cli("check")
    assert (again.exit_code, again.stdout, again.stderr) == (
        cold.exit_code,
        cold.stdout,
        cold.stderr,
    )
    assert len(parses) == 2
    run_cli("check")
    assert len(parses) == 2  # the entry was rewritten


def test_no_cache_neither_reads_nor_writes(default_cache, parses, monkeypatch):
    write(default_cache.parent, "train.py", LOSS_OUTSIDE)
    run_cli("check", "--no-cache")
    assert not default_cache.exists()
    monkeypatch.setenv("TAPELINT_NO_CACHE", "1")
    run_cli("check")
    assert not default_cache.exists()
    assert len(parses) == 2


def test_cache_dir_from_the_command_line_the_environment_and_the_config(default_cache, monkeypatch):
    root = default_cache.parent
    write(root, "train.py", LOSS_OUTSIDE)
    write(root, "pyproject.toml", '[tool.tapelint]\ncache-dir = "build/lint-cache"\n')
    run_cli("check")
    assert len(entries(root / "build" / "lint-cache")) == 1
    monkeypatch.setenv("TAPELINT_CACHE_DIR", str(root / "from-env"))
    run_cli("check")
    assert len(entries(root / "from-env")) == 1
    run_cli("check", "--cache-dir", "from-option")
    assert len(entries(root / "from-option")) == 1
    assert not default_cache.exists()


def test_bad_cache_dir_setting_is_a_config_error(default_cache):
    write(default_cache.parent, "pyproject.toml", "[tool.tapelint]\ncache-dir = 3\n")
    result = run_cli("check")
    assert result.exit_code == 2
    assert "tool.tapelint.cache-dir: expected a directory path, got an integer (3)" in result.stderr


def test_an_unusable_cache_directory_is_a_warning_and_the_check_goes_on(default_cache):
    root = default_cache.parent
    write(root, "train.py", LOSS_OUTSIDE)
    write(root, "blocked", "a file where the cache directory would be\n")
    result = run_cli("check", "--cache-dir", "blocked/cache")
    assert result.exit_code == 1
    assert result.codes() == [("train.py", "TAP101")]
    assert "warning: " in result.stderr and "checking without a cache" in result.stderr


def test_fix_applies_fixes_found_in_the_cache_and_the_next_check_sees_the_fixed_file(
    default_cache,
):
    path = write(default_cache.parent, "train.py", NOT_RELEASED)
    assert run_cli("check").codes() == [("train.py", "TAP103")]
    fixed = run_cli("check", "--fix")
    assert fixed.exit_code == 0 and "del tape" in path.read_text()
    assert run_cli("check").stdout == ""
    assert run_cli("check", "--diff").stdout == ""


def test_diff_from_a_warm_cache_matches_a_run_without_it(default_cache):
    write(default_cache.parent, "train.py", NOT_RELEASED)
    run_cli("check")
    warm = run_cli("check", "--diff")
    cold = run_cli("check", "--diff", "--no-cache")
    assert warm.stdout == cold.stdout and "+    del tape" in warm.stdout


def test_the_cache_never_changes_what_a_real_process_prints(default_cache):
    root = default_cache.parent
    write(root, "a.py", LOSS_OUTSIDE)
    write(root, "b.py", NOT_RELEASED)
    write(root, "broken.py", "import tensorflow as tf\nwith tf.GradientTape() as t\n")
    cold = run_subprocess("check", cwd=root)
    warm = run_subprocess("check", cwd=root)
    assert (warm.exit_code, warm.stdout, warm.stderr) == (cold.exit_code, cold.stdout, cold.stderr)
    assert [c for _, c in cold.codes()] == ["TAP101", "TAP103", "TAP001"]
    assert len(entries(default_cache)) == 3


def _deeply_nested(entry: dict) -> bytes:
    return b'{"diagnostics": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"


def _negative_line(entry: dict) -> dict:
    entry["diagnostics"][0]["start"] = [-1, 12]
    return entry


def _negative_cell(entry: dict) -> dict:
    entry["diagnostics"][0]["cell"] = -1
    return entry


def _unknown_code(entry: dict) -> dict:
    entry["diagnostics"][0]["code"] = "XYZ999"
    return entry


def _code_of_another_rule(entry: dict) -> dict:
    entry["diagnostics"][0]["name"] = "unfiltered-gradients"
    return entry


def _summary_of_wrong_types(entry: dict) -> dict:
    entry["summary"]["aliases"] = {"tf": 7}
    return entry


@pytest.mark.parametrize(
    "corrupt",
    [
        _deeply_nested,
        _negative_line,
        _negative_cell,
        _unknown_code,
        _code_of_another_rule,
        _summary_of_wrong_types,
    ],
)
def test_an_entry_of_valid_json_that_tapelint_did_not_write_is_a_miss(
    default_cache, parses, corrupt
):
    write(default_cache.parent, "train.py", LOSS_OUTSIDE)
    cold = run_cli("check")
    (entry,) = entries(default_cache)
    changed = corrupt(json.loads(entry.read_bytes()))
    entry.write_bytes(changed if isinstance(changed, bytes) else json.dumps(changed).encode())
    for _ in range(2):  # the second run reads the entry the first one wrote in its place
        again = run_cli("check")
        assert (again.exit_code, again.stdout, again.stderr) == (
            cold.exit_code,
            cold.stdout,
            cold.stderr,
        )
    assert len(parses) == 2
