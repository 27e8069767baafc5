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
import signal
import stat
import tempfile
import tokenize
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

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


def write_atomically(path: Path, data: bytes) -> None:
    """Give the file (the symlink's target, for a symlink) the content `data`, keeping
    what it is: its owner, group, permission bits and hard links. Decisions:

    - The new content goes to a temporary file in the same directory, given the file's
      owner, group and mode, then `os.replace` puts it in the file's place: a crash or a
      kill leaves either the old file or the new one, never half of each.
    - A file with more than one hard link (or whose owner and group a new file cannot be
      given: another user's file, written by someone who is not root) is written in
      place instead, since a new file would split the link (the other names keeping the
      old text) or change hands. Its whole new content is ready before the file is
      opened, and it is written in one go; only SIGKILL or a power cut in that moment
      can leave it partly written.
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
    with _signals_held():
        if status.st_nlink > 1 or not _replaced(target, data, status):
            _write_in_place(target, data)


def _replaced(target: Path, data: bytes, status: os.stat_result) -> bool:
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
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    return True


def _write_in_place(target: Path, data: bytes) -> None:
    with open(target, "r+b") as file:
        file.write(data)
        file.truncate()
        file.flush()
        os.fsync(file.fileno())


_HELD_SIGNALS = {
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
}


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Signals that end a run wait until the block is over (in this thread: a worker
    process writes from its only thread). Where signals cannot be held, nothing changes."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def fixable_count(diagnostics: Iterable[Diagnostic], *, unsafe: bool) -> int:
    return sum(applicable(d.fix, unsafe=unsafe) for d in diagnostics)
