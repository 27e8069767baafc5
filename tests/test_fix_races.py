"""Fixes are a compare-and-swap (issue 30, item 1): a file changed while `--fix` or
`--add-noqa` runs ends either as the user left it or as the fix of exactly those bytes,
never with edits computed from its old text applied to the new one.

The edits come from outside tapelint, at moments the tests choose: through the run's
progress callback (a public part of `runner.run`, called between file passes), through an
OS call tapelint makes while writing, or from a real second thread while the command runs
in its own process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tapelint.linter import fixer
from tapelint.run.runner import Options, run
from tapelint.settings.config import Settings
from tests.cli_helpers import LOSS_OUTSIDE, NOT_RELEASED, PERSISTENT_ONCE, run_cli, write

# Two persistent tapes: t1 answers one gradient call (TAP102: drop `persistent=True`), t2
# answers two and is released.
TWO_TAPES = textwrap.dedent(
    """\
    import tensorflow as tf
    with tf.GradientTape(persistent=True) as t1:
        y1 = f(x)
    g1 = t1.gradient(y1, x)
    with tf.GradientTape(persistent=True) as t2:
        y2 = f(x)
    a = t2.gradient(y2, x)
    b = t2.gradient(y2, w)
    del t2
    """
)
# The user deletes t1's block: what is left is correct, and t2 must stay persistent.
T2_ONLY = "".join(TWO_TAPES.splitlines(keepends=True)[:1] + TWO_TAPES.splitlines(True)[4:])

MODES = {
    "fix": ["--fix"],
    "unsafe-fixes": ["--fix", "--unsafe-fixes"],
    "add-noqa": ["--add-noqa"],
}


def _options(arguments: list[str]) -> Options:
    return Options(
        fix="--fix" in arguments,
        unsafe_fixes="--unsafe-fixes" in arguments,
        add_noqa="--add-noqa" in arguments,
        jobs=1,
    )


def fix_of(text: str, arguments: list[str], where: Path) -> str:
    """What `tapelint check ARGS` makes of a file holding exactly `text` (in a directory
    of its own, so that nothing else is read with it)."""
    where.mkdir(parents=True, exist_ok=True)
    path = where / "copy.py"
    path.write_text(text)
    run([str(path)], Settings(root=where), _options(arguments))
    return path.read_text()


def _link(path: Path, links: int) -> None:
    if links == 2:
        os.link(path, path.with_suffix(".link"))


# ------------------------------------------------------------ between check and fix
@pytest.mark.parametrize("links", [1, 2], ids=["replaced", "in-place"])
@pytest.mark.parametrize("mode", sorted(MODES))
def test_a_file_edited_after_its_check_is_not_given_edits_of_its_old_text(
    project: Path, mode: str, links: int
) -> None:
    path = write(project, "two.py", TWO_TAPES)
    _link(path, links)

    def user_deletes_t1_once_checked(done: int, total: int) -> None:
        if done == 1:  # the file's first pass is over; its fix stage is next
            path.write_text(T2_ONLY)

    report = run(
        ["two.py"],
        Settings(root=project),
        _options(MODES[mode]),
        on_progress=user_deletes_t1_once_checked,
    )
    assert path.read_text() in (T2_ONLY, fix_of(T2_ONLY, MODES[mode], project / "expected"))
    assert path.read_text() == T2_ONLY  # T2_ONLY has nothing to fix
    assert report.fixed == report.noqa_added == 0
    assert any(
        w.startswith("two.py: ") and "the file changed while tapelint ran" in w
        for w in report.warnings
    ), report.warnings


@pytest.mark.parametrize("mode", sorted(MODES))
def test_a_file_edited_during_the_write_is_left_as_the_user_left_it(
    project: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """The edit lands after the new content is written to the temporary file, before it
    replaces the file (the editor saves at the moment tapelint syncs its temporary file)."""
    source = LOSS_OUTSIDE if mode == "add-noqa" else PERSISTENT_ONCE
    path = write(project, "train.py", source)
    edited = "# the user's edit\n" + source
    synced = os.fsync

    def editor_saves_then_sync(fd: int) -> None:
        if path.read_text() == source:
            path.write_text(edited)
        synced(fd)

    monkeypatch.setattr(os, "fsync", editor_saves_then_sync)
    result = run_cli("check", "--no-cache", *MODES[mode], "train.py")
    assert path.read_text() == edited
    assert "train.py: " in result.stderr
    assert "the file changed while tapelint ran" in result.stderr
    assert not [p.name for p in project.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("links", [1, 2], ids=["replaced", "in-place"])
def test_a_write_whose_expected_bytes_are_gone_writes_nothing(project: Path, links: int) -> None:
    path = write(project, "train.py", "now = 2\n")
    _link(path, links)
    with pytest.raises(fixer.FileChanged):
        fixer.write_atomically(path, b"fixed = 1\n", expected=b"then = 1\n")
    assert path.read_text() == "now = 2\n"
    assert sorted(p.name for p in project.iterdir()) == sorted(
        ["train.py"] + (["train.link"] if links == 2 else [])
    )


# ------------------------------------------------------------ properties
SNIPPETS = [TWO_TAPES, PERSISTENT_ONCE, NOT_RELEASED, LOSS_OUTSIDE]
# What the user may save: other code, the same code moved down, t1's block deleted.
EDITS = st.one_of(
    st.sampled_from([*SNIPPETS, T2_ONLY]),
    st.builds(
        lambda n, s: "# a line the user added\n" * n + s,
        st.integers(1, 3),
        st.sampled_from(SNIPPETS),
    ),
)
BOUNDED = settings(
    max_examples=8,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
TREES = st.lists(
    st.tuples(st.sampled_from(SNIPPETS), st.booleans()), min_size=2, max_size=5
)  # (content, hard-linked)


def _tree(root: Path, files: list[tuple[str, bool]]) -> list[Path]:
    root.mkdir(parents=True)
    paths = []
    for number, (text, linked) in enumerate(files):
        path = write(root, f"m{number}.py", text)
        _link(path, 2 if linked else 1)
        paths.append(path)
    return paths


def _assert_each_file_is_the_users_or_its_fix(
    paths: list[Path], left: dict[Path, str], arguments: list[str], scratch: Path
) -> None:
    for number, path in enumerate(paths):
        now, theirs = path.read_text(), left[path]
        if now != theirs:
            assert now == fix_of(theirs, arguments, scratch / str(number)), path.name


@pytest.mark.parametrize("mode", sorted(MODES))
@BOUNDED
@given(
    files=TREES,
    edits=st.lists(st.tuples(st.integers(1, 10), st.integers(0, 4), EDITS), max_size=4),
)
def test_edits_between_any_two_file_passes_never_get_stale_fixes(
    tmp_path_factory: pytest.TempPathFactory,
    mode: str,
    files: list[tuple[str, bool]],
    edits: list[tuple[int, int, str]],
) -> None:
    """An edit after any file pass (first passes, fixes) of a run over a tree."""
    base = tmp_path_factory.mktemp("tree")
    paths = _tree(base / "tree", files)
    left = {path: path.read_text() for path in paths}
    edited_during_run: set[Path] = set()

    def user_edits(done: int, total: int) -> None:
        for tick, which, text in edits:
            if tick == done and which < len(paths):
                path = paths[which]
                path.write_text(text)
                left[path] = text
                edited_during_run.add(path)

    run(
        [str(base / "tree")],
        Settings(root=base / "tree"),
        _options(MODES[mode]),
        on_progress=user_edits,
    )
    _assert_each_file_is_the_users_or_its_fix(paths, left, MODES[mode], base / "expected")
    for number, path in enumerate(paths):  # what nobody touched is fixed as ever
        if path not in edited_during_run:
            expected = fix_of(left[path], MODES[mode], base / "untouched" / str(number))
            assert path.read_text() == expected, path.name


def _save_as_an_editor_does(path: Path, text: str) -> None:
    """A new file renamed over the old one (an editor's atomic save; it splits a hard
    link, as it does for the editor)."""
    temporary = path.with_name(f".{path.name}.editor")
    temporary.write_text(text)
    os.replace(temporary, path)


def _first_write(paths: list[Path], initial: dict[Path, str], process: subprocess.Popen) -> None:
    """Wait until the run has written a file (its fix stage has begun) or has ended."""
    while process.poll() is None and all(p.read_text() == initial[p] for p in paths):
        time.sleep(0.001)


@settings(BOUNDED, max_examples=5)  # each example starts a process
@given(
    # Mostly the audit's case: t1's block deleted, where stale positions would still parse.
    files=st.lists(
        st.tuples(st.sampled_from([TWO_TAPES, *SNIPPETS]), st.booleans()), min_size=6, max_size=12
    ),
    edits=st.lists(
        st.tuples(st.floats(0, 0.2), st.integers(0, 11), st.one_of(st.just(T2_ONLY), EDITS)),
        min_size=2,
        max_size=4,
    ),
    kill_after=st.one_of(st.none(), st.floats(0, 0.5)),
)
def test_fix_in_a_process_while_a_thread_edits_the_tree_and_a_kill_may_come(
    tmp_path_factory: pytest.TempPathFactory,
    files: list[tuple[str, bool]],
    edits: list[tuple[float, int, str]],
    kill_after: float | None,
) -> None:
    """The real command in its own process; another thread saves files at random moments
    (seconds after the run's first write, so that they fall among its fixes), and the
    command may be killed (SIGKILL) at one."""
    base = tmp_path_factory.mktemp("tree")
    paths = _tree(base / "tree", files)
    initial = {path: path.read_text() for path in paths}
    left = dict(initial)
    environment = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "tapelint", "check", "--no-cache", "--fix", "-j1", "."],
        cwd=base / "tree",
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _first_write(paths, initial, process)
    started = time.monotonic()

    def editor() -> None:
        for at, which, text in sorted(edits):
            time.sleep(max(0.0, started + at - time.monotonic()))
            if which < len(paths):  # counted from the last file, the last to be fixed
                path = paths[-1 - which]
                _save_as_an_editor_does(path, text)
                left[path] = text

    thread = threading.Thread(target=editor)
    thread.start()
    try:
        if kill_after is not None:
            try:
                process.wait(timeout=kill_after)
            except subprocess.TimeoutExpired:
                process.send_signal(signal.SIGKILL)
        process.wait(timeout=300)
    finally:
        thread.join()
    _assert_each_file_is_the_users_or_its_fix(paths, left, ["--fix"], base / "expected")
