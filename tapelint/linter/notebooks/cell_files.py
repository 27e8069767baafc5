"""Project files whose code a notebook's cells bring in: `%run file.py` and `%load file.py`.

IPython has two ways for a cell to take its code from a file, and both are common in
course and research notebooks that keep their model and helpers in a `.py` beside them:

- `%run file.py` runs the file, then puts the names it bound into the notebook's namespace,
  so later cells use its model, optimizer and helpers as if an earlier cell had defined them.
- `%load file.py` replaces the cell's text with `# %load file.py` and the file's text (the
  code runs when the cell runs next). A saved notebook mostly holds that copy; a cell that
  still holds only the `%load` line stands for the file's code.

What counts (decisions):

- `%run` at the top level of a cell (not inside a block), with IPython's options (`-i`,
  `-t`, `-N 3`, ...), naming a `.py` file; `%run -m module`, a `.ipy` or `.ipynb` file, and
  a line with `$name` or `{expr}` (IPython expands those) are left unknown, as before (the
  line reads as `pass`).
- `%load` as the only code of its cell, without `-r` or `-s` (which load only some lines);
  the same options rule out a copy.
- A copy: a cell whose first line is `# %load ARGUMENTS`, as IPython writes it, followed by
  exactly the file's text (IPython leaves a coding cookie out). A copy edited since, or of a
  file that changed or cannot be read, is the cell's own code.
- The path is read from the notebook's directory, where Jupyter starts the kernel (`.py`
  added when the name has no such file, as IPython does); `~` is left unknown. A file that
  cannot be read or decoded, is larger than `max-file-size` or does not parse counts as
  unknown too: the line reads as `pass`, as it did before.

See tapelint.linter.notebooks.program_files for how the files' code enters the notebook's
program and what is reported where.
"""

from __future__ import annotations

import ast
import getopt
import os
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from tapelint.linter.engine import decode_source, with_newline_line_ends
from tapelint.linter.suppression import file_suppressions
from tapelint.settings.config import DEFAULT_MAX_FILE_SIZE
from tapelint.sources.discovery import read_source
from tapelint.sources.ipython_input import NEUTRAL, CellCode

# `%run` and `%load` as the first token of a line (after the indentation IPython removes).
_MAGIC_LINE = re.compile(r"%(?P<magic>run|load)(?:[ \t]+(?P<args>.*))?$")
# The first line of a cell `%load` filled: `# %load ARGUMENTS`.
_LOADED_COPY = re.compile(r"# %load (?P<args>.+)$")
# IPython's options of `%run` and `%load` (getopt letters, `:` taking a value).
_RUN_OPTIONS = "nidtN:b:pD:l:rs:T:em:G"
_LOAD_OPTIONS = "yns:r:"
# The coding cookie `%load` leaves out when it is in the first two lines (IPython's pattern).
_COOKIE = re.compile(r"^\s*#.*coding[:=]\s*([-\w.]+)")
# A future import on one line: valid only at a file's start, so blanked in the notebook's
# program (it changes nothing the analysis reads).
_FUTURE_IMPORT = re.compile(r"from[ \t]+__future__[ \t]+import[ \t]+[\w \t,]+(?:#.*)?$")

Kind = Literal["run", "load", "copy"]


@dataclass(frozen=True)
class FileUse:
    """A cell line through which a file's code comes in."""

    kind: Kind
    written: str  # the file as the line names it
    # `run`, `load`: which of the cell's top-level IPython lines it is (0-based), so that it
    # is found again in a fixed program. (A copy is the cell's lines after its first.)
    ordinal: int = -1


@dataclass(frozen=True)
class LoadedFile:
    """A file a cell brings in, read."""

    real: str  # its real path
    path: str  # as reported: from the notebook's directory as the notebook is reported
    lines: tuple[str, ...]  # its lines as the notebook's program holds them (see `_prepared`)
    copied: tuple[tuple[int, str], ...]  # (1-based line, text): what `%load` writes of it


@dataclass(frozen=True)
class NotebookFiles:
    """Where a notebook's `%run` and `%load` files are read: the notebook's directory."""

    directory: str  # the notebook's real directory
    shown_as: str  # the notebook's directory as its path is reported ("" for the current one)
    max_size: int = DEFAULT_MAX_FILE_SIZE
    # Text that stands for files (real path, bytes): an editor's unsaved buffers.
    buffers: tuple[tuple[str, bytes], ...] = field(default=(), repr=False)

    @classmethod
    def beside(
        cls,
        real: str,
        reported: str,
        max_size: int = DEFAULT_MAX_FILE_SIZE,
        buffers: tuple[tuple[str, bytes], ...] = (),
    ) -> NotebookFiles:
        """For the notebook at real path `real`, reported as `reported`."""
        return cls(os.path.dirname(real), os.path.dirname(reported), max_size, buffers)

    def read(self, written: str) -> LoadedFile | None:
        """The file a cell names as `written`; None when it is not one tapelint reads."""
        if not written or written.startswith("~"):
            return None
        candidate = os.path.join(self.directory, written)
        if not self._exists(candidate) and not written.endswith(".py"):
            candidate, written = candidate + ".py", written + ".py"
        if not written.endswith(".py"):
            return None
        real = os.path.realpath(candidate)
        data = self._data(real)
        if data is None or len(data) > self.max_size:
            return None
        try:
            text = with_newline_line_ends(decode_source(data))
        except (UnicodeDecodeError, SyntaxError, LookupError):
            return None
        lines = text.split("\n")
        if lines[-1] == "":
            lines.pop()
        prepared = _prepared(lines)
        if prepared is None:
            return None
        copied = tuple(
            (number, line)
            for number, line in enumerate(lines, start=1)
            if not (number <= 2 and _COOKIE.match(line))
        )
        path = os.path.normpath(os.path.join(self.shown_as, written))
        return LoadedFile(real, path, prepared, copied)

    def _exists(self, path: str) -> bool:
        real = os.path.realpath(path)
        return any(real == known for known, _ in self.buffers) or os.path.isfile(path)

    def _data(self, real: str) -> bytes | None:
        for known, data in self.buffers:
            if known == real:
                return data
        try:
            return read_source(Path(real))
        except OSError:
            return None


def mentions_files(data: bytes) -> bool:
    """Whether a notebook's bytes may hold a `%run` or `%load` line (a cheap test): the
    magic's whole name, so that `%load_ext autoreload`, in many notebooks without a tape,
    does not make one worth parsing."""
    return _FILE_MAGIC.search(data) is not None


_FILE_MAGIC = re.compile(rb"%(?:run|load)(?![\w])")


def file_uses(originals: Sequence[str], code: CellCode) -> tuple[FileUse, ...]:
    """The `%run` and `%load` lines of a cell read as `code`, and its copy of a file."""
    if not code.python:
        return ()
    uses: list[FileUse] = []
    top_level = [index for index, line in enumerate(code.lines) if line == NEUTRAL]
    for ordinal, index in enumerate(top_level):
        text = originals[index][len(code.removed[index]) :]
        match = _MAGIC_LINE.match(text)
        if match is None:
            continue
        arguments = match.group("args") or ""
        kind: Kind = "run" if match.group("magic") == "run" else "load"  # the two it matches
        if kind == "run":
            written = run_target(arguments)
        else:
            written = load_target(arguments) if _alone(code.lines, index) else None
        if written is not None:
            uses.append(FileUse(kind, written, ordinal))
    copy = _LOADED_COPY.match(originals[0]) if originals else None
    if copy is not None and code.lines[0] == originals[0] and not code.special:
        written = load_target(copy.group("args"))
        if written is not None:
            uses.append(FileUse("copy", written))
    return tuple(uses)


def run_target(arguments: str) -> str | None:
    """The file `%run ARGUMENTS` runs; None for a module (`-m`) or what cannot be known."""
    found = _parsed(arguments, _RUN_OPTIONS)
    if found is None:
        return None
    options, rest = found
    if "-m" in options or not rest or rest[0].lower().endswith((".ipy", ".ipynb")):
        return None
    return rest[0]


def load_target(arguments: str) -> str | None:
    """The file `%load ARGUMENTS` loads whole; None when it loads part of one (`-r`,
    `-s`) or what cannot be known."""
    found = _parsed(arguments, _LOAD_OPTIONS)
    if found is None:
        return None
    options, rest = found
    if "-r" in options or "-s" in options or not rest:
        return None
    return " ".join(rest)


def _parsed(arguments: str, letters: str) -> tuple[set[str], list[str]] | None:
    """IPython's reading of a magic's arguments (a POSIX shell split, then getopt); None
    when it expands them (`$name`, `{expr}`) or cannot split them."""
    if "$" in arguments or "{" in arguments:
        return None
    try:
        options, rest = getopt.getopt(shlex.split(arguments, posix=True), letters)
    except (ValueError, getopt.GetoptError):
        return None
    return {option for option, _ in options}, rest


def _alone(lines: Sequence[str], index: int) -> bool:
    """Whether line `index` is the cell's only line of code (others blank or comments)."""
    return all(
        not line.strip() or line.lstrip().startswith("#")
        for other, line in enumerate(lines)
        if other != index
    )


def _prepared(lines: list[str]) -> tuple[str, ...] | None:
    """The file's lines as they can stand in the middle of the notebook's program: a future
    import on one line blanked (valid only at a file's start), and a file-level
    `# tapelint: noqa` blanked (it silences the file, not the notebook). None when the file
    does not parse so (its code is then unknown)."""
    prepared = tuple(
        "" if _FUTURE_IMPORT.match(line) or file_suppressions(line) else line for line in lines
    )
    try:
        ast.parse("pass\n" + "".join(f"{line}\n" for line in prepared))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return prepared
