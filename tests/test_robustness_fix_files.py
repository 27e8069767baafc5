"""Files keep what they are under `--fix` and `--add-noqa` (issue 20): owner, group,
permission bits and hard links; read-only files are left alone with a message. A write
that cannot complete (a file size limit, a full disk) leaves the old bytes, hard-linked
files included, and says which file is unchanged (issue 30)."""

from __future__ import annotations

import os
import resource
import signal
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tapelint.linter.fixer import write_atomically
from tests.cli_helpers import LOSS_OUTSIDE, NOT_RELEASED, PERSISTENT_ONCE, run_cli, write

# Another user's ids (nobody, nogroup), for files a root run fixes.
OTHER_UID = OTHER_GID = 65534

MODES = {
    "fix": (["--fix"], PERSISTENT_ONCE),
    "add-noqa": (["--add-noqa"], LOSS_OUTSIDE),
}


@pytest.fixture(params=sorted(MODES))
def mode(request):
    return MODES[request.param]


def _changed(path, before: str) -> bool:
    return path.read_text() != before


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user takes root")
def test_a_file_of_another_user_keeps_its_owner_group_and_mode(project, mode):
    options, source = mode
    path = write(project, "train.py", source)
    os.chown(path, OTHER_UID, OTHER_GID)
    path.chmod(0o640)
    result = run_cli("check", "--no-cache", *options)
    assert "error" not in result.stderr
    assert _changed(path, source)
    status = path.stat()
    assert (status.st_uid, status.st_gid) == (OTHER_UID, OTHER_GID)
    assert stat.S_IMODE(status.st_mode) == 0o640


def test_a_hard_linked_file_stays_linked_and_every_name_sees_the_change(project, mode):
    options, source = mode
    path = write(project, "train.py", source)
    other = project / "elsewhere" / "same_file.txt"
    other.parent.mkdir()
    os.link(path, other)
    inode = path.stat().st_ino
    result = run_cli("check", "--no-cache", *options, "train.py")
    assert "error" not in result.stderr
    assert _changed(path, source)
    assert path.stat().st_ino == other.stat().st_ino == inode
    assert path.stat().st_nlink == 2
    assert other.read_text() == path.read_text()


def test_a_read_only_file_is_left_alone_with_a_message(project, mode):
    options, source = mode
    project.chmod(0o777)  # a directory anyone may replace files in
    path = write(project, "train.py", source)
    path.chmod(0o444)
    writable = write(project, "other.py", source)
    result = run_cli("check", "--no-cache", *options)
    assert path.read_text() == source
    assert stat.S_IMODE(path.stat().st_mode) == 0o444
    assert "train.py: " in result.stderr
    assert "the file is read-only" in result.stderr
    assert _changed(writable, source)  # the others are still written


@pytest.mark.parametrize("links", [1, 2], ids=["replaced", "in-place"])
def test_a_signal_during_a_write_waits_until_the_file_is_whole(project, monkeypatch, links):
    path = write(project, "train.py", "old = 1\n" * 1000)
    if links == 2:
        os.link(path, project / "link.py")
    new = b"new = 2\n" * 1000
    seen: list[tuple[bytes, list[str]]] = []

    def handler(signum, frame):  # what the file and its directory hold when it is handled
        seen.append((path.read_bytes(), sorted(p.name for p in project.iterdir())))

    original_fsync = os.fsync

    def fsync_then_signal(fd):  # the signal comes in the middle of the write
        os.kill(os.getpid(), signal.SIGTERM)
        original_fsync(fd)

    previous = signal.signal(signal.SIGTERM, handler)
    monkeypatch.setattr(os, "fsync", fsync_then_signal)
    try:
        write_atomically(path, new, expected=b"old = 1\n" * 1000)
    finally:
        signal.signal(signal.SIGTERM, previous)
    names = ["link.py", "train.py"] if links == 2 else ["train.py"]
    assert seen == [(new, names)]


# ------------------------------------------------------------ writes that cannot complete
# The file ends with code that a torn write would cut (issue 30: `EPOCHS = 1000000` became
# `EPOCHS`); the padding makes it a few bytes short of the size limit the run gets.
ENDING = "EPOCHS = 1000000\n"
LIMIT = 12 * 1024


def _padded(source: str) -> str:
    padding = LIMIT - 4 - len(source) - len(ENDING)
    lines = ["# " + "x" * 76 + "\n"] * (padding // 79)
    text = source + "".join(lines)
    return text + "#" * (LIMIT - 4 - len(text) - len(ENDING) - 1) + "\n" + ENDING


def _limited(limit: int):
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))

    return apply


def _check_under_limit(project: Path, options: list[str], *prelude: str):
    """`tapelint check` in a process whose files cannot grow past LIMIT bytes; `prelude`
    is Python run in that process first."""
    program = "\n".join([*prelude, "from tapelint.cli import main", "main()"])
    return subprocess.run(
        [sys.executable, "-c", program, "check", "--no-cache", *options, "train.py"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_limited(LIMIT),
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        check=False,
    )


WRITES = {
    "fix": (["--fix"], NOT_RELEASED, "fixes"),
    "add-noqa": (["--add-noqa"], LOSS_OUTSIDE, "noqa comments"),
}
# A file system that cannot reserve space (posix_fallocate unsupported): the write itself
# fails part-way and the old bytes must be put back.
NO_RESERVATION = textwrap.dedent(
    """\
    import errno, os
    def unsupported(fd, offset, length):
        raise OSError(errno.EOPNOTSUPP, os.strerror(errno.EOPNOTSUPP))
    os.posix_fallocate = unsupported
    """
)


@pytest.mark.parametrize("reservation", [True, False], ids=["reserved", "no-reservation"])
@pytest.mark.parametrize("links", [1, 2], ids=["replaced", "in-place"])
@pytest.mark.parametrize("what", sorted(WRITES))
def test_a_write_past_the_file_size_limit_leaves_the_file_whole_and_says_so(
    project, what, links, reservation
):
    options, source, written = WRITES[what]
    path = write(project, "train.py", _padded(source))
    if links == 2:
        os.link(path, project / "train.link")
    before = path.read_bytes()
    assert len(before) < LIMIT
    result = _check_under_limit(project, options, *([] if reservation else [NO_RESERVATION]))
    assert path.read_bytes() == before
    assert result.returncode == 2, result.stderr
    assert f"train.py: cannot write {written}: File too large; file left unchanged" in (
        result.stderr
    )
    assert "DAMAGED" not in result.stderr
    assert sorted(p.name for p in project.iterdir()) == sorted(
        ["train.py"] + (["train.link"] if links == 2 else [])
    )
