"""Applying fixes: edit, re-lint, repeat until nothing fixable is left; then verify and write.

Each pass applies every applicable fix that does not overlap one already taken (a fix's
edits go in together or not at all), later edits first so earlier positions stay valid,
then lints the new text: a fix may uncover or remove other diagnostics. The result must
parse before anything is written, and is written atomically in the file's own encoding.
"""

from __future__ import annotations

import ast
import contextlib
import difflib
import errno
import io
import os
import stat
import tempfile
import tokenize
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tapelint import interrupts
from tapelint.findings.diagnostics import Applicability, Diagnostic, Edit, Fix

MAX_PASSES = 10


class FixError(Exception):
    """Fixes that cannot be applied to a file; it must be left as it was."""


@dataclass(frozen=True)
class FixedSource:
    text: str
    fixed: int  # diagnostics whose fix was applied
    remaining: list[Diagnostic]  # diagnostics of the final text
    # How many of `fixed` had each (code, name), for `--show-fixes`.
    fixed_codes: Counter[tuple[str, str]] = field(default_factory=Counter)


def applicable(fix: Fix | None, *, unsafe: bool) -> bool:
    return fix is not None and (unsafe or fix.applicability is Applicability.SAFE)


def fix_source(
    text: str,
    lint: Callable[[str], list[Diagnostic]],
    *,
    unsafe: bool,
    diagnostics: list[Diagnostic] | None = None,
) -> FixedSource:
    """Fix `text` until `lint` finds nothing applicable (at most MAX_PASSES passes).

    `diagnostics` are `lint(text)` when the caller already has them. Raises FixError when
    the fixed text would not parse.
    """
    if "\r" in text.replace("\r\n", ""):
        # Lone CR line ends: the parser's line numbers would not be the edits' lines.
        raise FixError("the file has carriage-return-only line ends")
    current = lint(text) if diagnostics is None else diagnostics
    fixed_text, fixed_codes = text, Counter[tuple[str, str]]()
    for _ in range(MAX_PASSES):
        fixable = [d for d in current if d.fix is not None and applicable(d.fix, unsafe=unsafe)]
        if not fixable:
            break
        new_text, applied = _apply(fixed_text, [d.fix for d in fixable if d.fix is not None])
        if new_text == fixed_text:
            break
        fixed_text = new_text
        fixed_codes.update((fixable[i].code, fixable[i].name) for i in applied)
        current = lint(fixed_text)
    if fixed_text != text:
        _check_parses(fixed_text)
    return FixedSource(fixed_text, fixed_codes.total(), current, fixed_codes)


def apply_fixes(text: str, fixes: Sequence[Fix]) -> tuple[str, int]:
    """`text` with the non-overlapping `fixes` applied, and how many were applied."""
    fixed, applied = _apply(text, fixes)
    return fixed, len(applied)


def _apply(text: str, fixes: Sequence[Fix]) -> tuple[str, list[int]]:
    """`text` with the non-overlapping `fixes` applied, and the indexes of those applied."""
    index = _LineIndex(text)
    taken: list[tuple[int, int, str]] = []
    applied = []
    located = [(sorted(index.span(edit) for edit in fix.edits), i) for i, fix in enumerate(fixes)]
    for spans, number in sorted(located):
        if spans and not any(_overlap(span, other) for span in spans for other in taken):
            taken.extend(spans)
            applied.append(number)
    for start, end, content in sorted(taken, reverse=True):
        text = text[:start] + content + text[end:]
    return text, applied


def _overlap(a: tuple[int, int, str], b: tuple[int, int, str]) -> bool:
    # Two insertions at one point overlap too: their order would be a guess.
    return (a[0] < b[1] and b[0] < a[1]) or a[0] == b[0]


class _LineIndex:
    """Turns 1-based (line, column) positions into offsets into the text."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0]
        self.starts.extend(i + 1 for i, char in enumerate(text) if char == "\n")
        self.newline = "\r\n" if "\r\n" in text else "\n"

    def span(self, edit: Edit) -> tuple[int, int, str]:
        content = edit.content
        if self.newline != "\n":
            content = content.replace("\r\n", "\n").replace("\n", self.newline)
        start = self.offset(edit.start.line, edit.start.column)
        end = self.offset(edit.end.line, edit.end.column)
        if edit.start.line == len(self.starts) + 1 and not self.text.endswith("\n"):
            content = self.newline + content  # a line added after a last line with no newline
        if end < start:
            raise FixError(f"an edit ends before it starts at line {edit.start.line}")
        return start, end, content

    def offset(self, line: int, column: int) -> int:
        if line == len(self.starts) + 1 and column == 1:
            return len(self.text)  # just past a last line that has no line end
        if not 1 <= line <= len(self.starts):
            raise FixError(f"an edit refers to line {line}, past the end of the file")
        line_end = self.starts[line] if line < len(self.starts) else len(self.text)
        offset = self.starts[line - 1] + column - 1
        if not self.starts[line - 1] <= offset <= line_end:
            raise FixError(f"an edit refers to column {column}, past the end of line {line}")
        return offset


def _check_parses(text: str) -> None:
    try:
        ast.parse(text)
    except SyntaxError as error:
        raise FixError(
            f"the fixed code would not parse (line {error.lineno}: {error.msg})"
        ) from None
    except ValueError as error:  # null bytes
        raise FixError(f"the fixed code would not parse ({error})") from None


def unified_diff(path: str, before: str, after: str) -> str:
    """A unified diff of one file, every line ending in a newline (as `patch` expects)."""
    lines = difflib.unified_diff(_lines(before), _lines(after), fromfile=path, tofile=path)
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )


def _lines(text: str) -> list[str]:
    # Only "\n" ends a line here, as for the parser (str.splitlines also splits on "\f").
    parts = text.split("\n")
    return [part + "\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def encode_like(original: bytes, text: str) -> bytes:
    """`text` in the encoding `original` was in: its coding cookie, its BOM, else UTF-8."""
    encoding, _ = tokenize.detect_encoding(io.BytesIO(original).readline)
    try:
        return text.encode(encoding)
    except UnicodeEncodeError as error:
        raise FixError(f"the fixed code cannot be written as {encoding}: {error}") from None


class FileChanged(FixError):
    """The file no longer holds the bytes its new content was made from; nothing was
    written (a compare-and-swap that lost: the user, an editor or a formatter changed it)."""

    def __init__(self) -> None:
        super().__init__("the file changed while tapelint ran")


class NotRestored(OSError):
    """A write in place failed and the file's old content could not be put back: the file
    may be damaged. `old_copy` is where its old content was saved (None: nowhere)."""

    def __init__(self, error: OSError, old_copy: str | None) -> None:
        super().__init__(error.errno, error.strerror or str(error))
        self.old_copy = old_copy


def write_atomically(path: Path, data: bytes, *, expected: bytes) -> None:
    """Give the file (the symlink's target, for a symlink) the content `data` if it still
    holds exactly `expected` (the bytes `data` was made from), keeping what it is: its
    owner, group, permission bits and hard links. Raises FileChanged (nothing written)
    when it holds anything else, OSError when it cannot be written (nothing written, or
    the old content put back), NotRestored when even that failed. Decisions:

    - Compare-and-swap: the file's bytes are compared with `expected` as the very last
      step before the swap, through the same open file, and (for a replaced file) its name
      must still lead to that file, unchanged in size and times, just before
      `os.replace`. Only a change in the few system calls between that check and the swap
      can still be overwritten; nothing in POSIX closes that window.
    - The new content goes to a temporary file in the same directory, given the file's
      owner, group and mode, then `os.replace` puts it in the file's place: a crash or a
      kill leaves either the old file or the new one, never half of each.
    - A file with more than one hard link (or whose owner and group a new file cannot be
      given: another user's file, written by someone who is not root) is written in
      place instead, since a new file would split the link (the other names keeping the
      old text) or change hands. Its new size is reserved first (`posix_fallocate`), so a
      full disk or a file size limit fails before a byte is written; any later failure
      puts the old bytes back (they are in memory: `expected`). Only SIGKILL or a power
      cut during the write itself can leave it partly written.
    - A read-only file (no write permission bit at all, or not writable by this user) is
      left alone: PermissionError "the file is read-only". (Root could write it; a file
      made read-only is one its owner does not want changed.)
    - SIGINT, SIGTERM and SIGHUP wait until the write is over (then act as usual), so an
      interrupted run leaves neither a torn file nor a stray temporary file.
    """
    target = Path(os.path.realpath(path))
    status = os.stat(target)
    if not status.st_mode & 0o222 or not os.access(target, os.W_OK):
        raise PermissionError(errno.EACCES, "the file is read-only", str(path))
    with interrupts.held():
        if status.st_nlink > 1 or not _replaced(target, data, status, expected):
            _write_in_place(target, data, expected)


def _replaced(target: Path, data: bytes, status: os.stat_result, expected: bytes) -> bool:
    """Replace the file by a new one like it; False (nothing done) when the new file
    cannot be given its owner and group."""
    fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as file:
            new = os.fstat(file.fileno())
            if (new.st_uid, new.st_gid) != (status.st_uid, status.st_gid):
                try:
                    os.fchown(file.fileno(), status.st_uid, status.st_gid)
                except PermissionError:
                    os.unlink(temporary)
                    return False
            os.fchmod(file.fileno(), stat.S_IMODE(status.st_mode))
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        if not _still_holds(target, expected):
            raise FileChanged
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    return True


def _still_holds(target: Path, expected: bytes) -> bool:
    """Whether the file at `target` holds exactly `expected`, and its name still leads to
    the file read, unchanged in size and times (the last look before it is replaced)."""
    try:
        fd = os.open(target, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return False
    try:
        read = os.fstat(fd)
        same = stat.S_ISREG(read.st_mode) and _read_all(fd) == expected
        now = os.stat(target)
    except OSError:
        return False
    finally:
        os.close(fd)
    return same and _identity(now) == _identity(read)


def _identity(status: os.stat_result) -> tuple[int, ...]:
    return (status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns, status.st_ctime_ns)


def _read_all(fd: int) -> bytes:
    """The whole file from its start (pread: the file offset is not used)."""
    chunks, offset = [], 0
    while chunk := os.pread(fd, 1 << 20, offset):
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def _write_in_place(target: Path, data: bytes, expected: bytes) -> None:
    """Overwrite the file itself (its inode, so hard links keep seeing it) if it holds
    `expected`: its new size reserved first, the old bytes put back on any failure."""
    fd = os.open(target, os.O_RDWR | getattr(os, "O_NONBLOCK", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode) or _read_all(fd) != expected:
            raise FileChanged
        try:
            _reserve(fd, len(data))
            _pwrite_all(fd, data)
            os.ftruncate(fd, len(data))
            os.fsync(fd)
        except OSError as error:
            _put_back(fd, target, expected, error)
            raise
    finally:
        os.close(fd)


def _reserve(fd: int, size: int) -> None:
    """Reserve `size` bytes for the file, so that writing them cannot fail for space or a
    file size limit. A file system that cannot reserve space is written without it (a
    failure then puts the old bytes back)."""
    if size == 0 or not hasattr(os, "posix_fallocate"):
        return
    try:
        os.posix_fallocate(fd, 0, size)
    except OSError as error:
        if error.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
            raise


def _pwrite_all(fd: int, data: bytes) -> None:
    view, offset = memoryview(data), 0
    while offset < len(data):
        offset += os.pwrite(fd, view[offset:], offset)


def _put_back(fd: int, target: Path, old: bytes, error: OSError) -> None:
    """After a failed write in place: make the file hold `old` again (a reservation may
    have grown it, a write changed its start). Raises NotRestored when it cannot, after
    saving `old` elsewhere when that is possible."""
    with contextlib.suppress(OSError):
        if _read_all(fd) != old:
            _pwrite_all(fd, old)
            os.ftruncate(fd, len(old))
            os.fsync(fd)
    try:
        restored = _read_all(fd) == old
    except OSError:
        restored = False
    if not restored:
        raise NotRestored(error, _save_copy(target, old)) from error


def _save_copy(target: Path, old: bytes) -> str | None:
    """`old` in a new file in the system's temporary directory (most often another file
    system than the full one); its path, or None when it cannot be written either."""
    try:
        fd, copy = tempfile.mkstemp(prefix=f"{target.name}.", suffix=".tapelint-original")
        with os.fdopen(fd, "wb") as file:
            file.write(old)
    except OSError:
        return None
    return copy


def fixable_count(diagnostics: Iterable[Diagnostic], *, unsafe: bool) -> int:
    return sum(applicable(d.fix, unsafe=unsafe) for d in diagnostics)
