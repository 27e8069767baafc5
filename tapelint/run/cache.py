"""Results of unchanged files, kept between runs: a content-hash cache.

Four kinds of entry, each the result of a pure function of what its key holds:
- a file's analysis (`Linter.analyze_bytes` with its module's name and the library's
  index only): its diagnostics, its module's summary and the names outside it the check
  asked about. Keyed by the file's bytes, the path it is reported under, the rule codes
  that apply to it (selection, preview and per-file-ignores) and its module name;
- a file re-checked with the project index (`analysis_key` plus a digest of what that
  index says of the names the first check asked about): its diagnostics and the names
  this check asked about, with the digest of what the index said of those. An entry is
  used only when the index of this run says the same of them (`ProjectIndex.digest`),
  so editing a helper module another file used invalidates that file's entry, and
  nothing else;
- the import bindings of a module that is not analysed (`tapelint.project.imports`),
  keyed by its bytes and its module name; and, keyed by those and a function's name, what
  that top-level function of such a module builds (`tapelint.project.builders`), and what
  a top-level function or class whose transforms a check asked about transforms
  (`tapelint.project.transformers`, keyed also by the path its sites are reported under);
- a module's summary made with what the project binds the names it imports to (a module
  that gets `tf` from the project: `Project._bound_summary`), keyed and checked like a
  re-check, by `analysis_key` plus the digest of what the index says of the names its
  first pass asked about, and stored with the names it asked and their digest.
Every key also holds the whole configuration (`Settings`), so a future setting that
changes a result cannot be forgotten here, and tapelint's version and a fingerprint
(name, size, mtime) of its own source files, so an upgrade, or an edit to an editable
install, starts a fresh cache. Files that never mention a trigger get no analysis entry
(the substring test that skips them is cheaper than a lookup). Notebooks are not cached.

Fixing: the cache holds lint results only. `--fix` and `--diff` still run the fixer, from
scratch, on every file whose (cached or fresh) diagnostics have a fix to apply; files with
nothing to fix are answered from the cache as in a plain check.

Layout: `<cache dir>/entries/<64 hex>`, one small JSON file per entry, written to a
temporary file and renamed into place (a reader sees a whole entry or none). One flat
directory: a first run would otherwise create a directory per key prefix (up to 256) on top
of its entries, each costing about what an entry costs to write, and workers creating them
at the same time contend (measured over TensorFlow's sources: the workers' system time
0.45 s with those directories, 0.23 s without). An entry that
cannot be read or decoded is a miss and is overwritten. Entries of old versions are never
read again; they go when the cache outgrows its cap (below). Deleting the directory at any
time is safe. The
directory holds a `CACHEDIR.TAG` (backup tools skip it) and a `.gitignore` of `*` (git
ignores it).

Size: at most `MAX_ENTRIES` entries (100,000: about 100 to 200 MB of these small files, and
some 40 full runs over TensorFlow's and Keras's 2,100 files). When a run opens a cache
holding more, the entries written longest ago are removed until a quarter of the cap is
free, so eviction is rare and each one buys many runs. Written longest ago, not used longest
ago: a hit does not touch its entry (that would be a write for every file of a warm run), so
an old entry still in use may go, and costs one fresh analysis, which writes it again.
Entries of older versions and settings are the oldest, and go first. Decided over
`diskcache` (an SQLite file): worker processes write entries at the same time, which plain
files and atomic renames already allow without a lock, and the cap needs a dozen lines.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import tapelint
from tapelint import rules as rules_package  # type: ignore[attr-defined]  # mypy: `rules`
from tapelint.findings.diagnostics import (
    Applicability,
    Diagnostic,
    Edit,
    Fix,
    Position,
    Related,
    Severity,
)
from tapelint.linter.engine import FileAnalysis
from tapelint.linter.registry import rule_by_code_or_name
from tapelint.semantic.project_model.summaries import ModuleSummary
from tapelint.settings.bounded_read import read_regular_file
from tapelint.settings.config import Settings

# Bump when the entry format changes (6: summaries hold `transforms` and `classes`; 7: and
# `hands_back`; 8: what a builder builds says which part adds regularization losses,
# `Built.regularized`).
FORMAT = 8

_CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by tapelint.\n"
    "# For information about cache directory tags see https://bford.info/cachedir/\n"
)

# An entry larger than this is a miss, not read: tapelint writes nothing near it (an entry
# holds a file's findings and module summary; the file is at most `max-file-size`).
MAX_ENTRY_BYTES = 64 * 1024 * 1024
# The most entries a cache keeps (module docstring: Size).
MAX_ENTRIES = 100_000

# What a corrupt or foreign entry raises while it is decoded: a miss. (`json` raises a
# RecursionError on deeply nested arrays or objects.)
_UNREADABLE = (
    OSError,
    ValueError,
    KeyError,
    TypeError,
    IndexError,
    AttributeError,
    RecursionError,
)


class ResultCache:
    """One run's view of a cache directory; picklable, so worker processes use it too."""

    def __init__(self, directory: Path, salt: str) -> None:
        self.directory = directory
        self._salt = salt.encode()

    @classmethod
    def open(
        cls, directory: Path, settings: Settings, max_entries: int = MAX_ENTRIES
    ) -> ResultCache:
        """Create the directory if needed, and evict when it holds more than `max_entries`;
        OSError when it cannot be created."""
        (directory / "entries").mkdir(parents=True, exist_ok=True)
        for name, content in (("CACHEDIR.TAG", _CACHEDIR_TAG), (".gitignore", "*\n")):
            marker = directory / name
            if not marker.exists():
                marker.write_text(content, encoding="utf-8")
        _evict(directory / "entries", max_entries)
        return cls(directory, _salt(settings))

    def holds_entries(self) -> bool:
        """Whether an earlier run stored something here (whatever it was)."""
        try:
            with os.scandir(self.directory / "entries") as entries:
                return next(entries, None) is not None
        except OSError:
            return False

    # ------------------------------------------------------------------ keys
    def analysis_key(self, data: bytes, display: str, codes: frozenset[str], module: str) -> str:
        """`module`: the file's module name, `/__init__` added for a package."""
        return self._key("analysis", display, ",".join(sorted(codes)), module, data)

    def recheck_key(self, analysis_key: str, index_digest: str) -> str:
        return self._key("recheck", analysis_key, index_digest)

    def bound_key(self, analysis_key: str, index_digest: str) -> str:
        return self._key("bound", analysis_key, index_digest)

    def imports_key(self, data: bytes, module: str) -> str:
        return self._key("imports", module, data)

    def builder_key(self, data: bytes, module: str, function: str) -> str:
        """What a top-level function of a module that was not analysed builds (stored as
        an import-bindings entry is: a summary holding that function, or None)."""
        return self._key("builder", module, function, data)

    def transforms_key(self, data: bytes, module: str, name: str, display: str) -> str:
        """What a top-level function or class of a module transforms, its sites in the file
        as reported at `display` (stored as an import-bindings entry is: a summary holding
        those functions, or None)."""
        return self._key("transforms", module, name, display, data)

    def _key(self, kind: str, *parts: str | bytes) -> str:
        digest = hashlib.sha256(self._salt)
        digest.update(b"\0" + kind.encode())
        for part in parts:
            encoded = part if isinstance(part, bytes) else part.encode("utf-8", "surrogatepass")
            digest.update(b"\0" + encoded)
        return digest.hexdigest()

    # ------------------------------------------------------------------ entries
    def get_analysis(self, key: str) -> FileAnalysis | None:
        """A file's analysis, or None for a miss (absent, unreadable or corrupt)."""
        try:
            entry = self._read(key)
            return FileAnalysis(
                diagnostics=_diagnostics(entry["diagnostics"]),
                summary=_summary(entry["summary"]),
                asked=frozenset(_strings(entry["asked"])),
            )
        except _UNREADABLE:
            return None

    def put_analysis(self, key: str, analysis: FileAnalysis) -> None:
        summary = analysis.summary
        self._write(
            key,
            {
                "diagnostics": [_encode(d) for d in analysis.diagnostics],
                "summary": None if summary is None else summary.to_json(),
                "asked": sorted(analysis.asked),
            },
        )

    def get_recheck(self, key: str) -> tuple[list[Diagnostic], frozenset[str], str] | None:
        """A re-check's diagnostics, the names it asked about and the digest of what the
        index said of them; None for a miss."""
        try:
            entry = self._read(key)
            digest = entry["digest"]
            if not isinstance(digest, str):
                raise TypeError("expected a string")
            return _diagnostics(entry["diagnostics"]), frozenset(_strings(entry["asked"])), digest
        except _UNREADABLE:
            return None

    def put_recheck(
        self, key: str, diagnostics: Sequence[Diagnostic], asked: frozenset[str], digest: str
    ) -> None:
        self._write(
            key,
            {
                "diagnostics": [_encode(d) for d in diagnostics],
                "asked": sorted(asked),
                "digest": digest,
            },
        )

    def get_bound(self, key: str) -> tuple[ModuleSummary, frozenset[str], str] | None:
        """A module's summary made with the project's bindings, the names its analysis
        asked about and the digest of what the index said of them; None for a miss."""
        try:
            entry = self._read(key)
            summary, digest = _summary(entry["summary"]), entry["digest"]
            if summary is None or not isinstance(digest, str):
                raise TypeError("expected a summary and a string")
            return summary, frozenset(_strings(entry["asked"])), digest
        except _UNREADABLE:
            return None

    def put_bound(
        self, key: str, summary: ModuleSummary, asked: frozenset[str], digest: str
    ) -> None:
        self._write(key, {"summary": summary.to_json(), "asked": sorted(asked), "digest": digest})

    def get_imports(self, key: str) -> tuple[bool, ModuleSummary | None]:
        """(found, the bindings: None for a module that does not parse; for a builder's
        key, a summary of the function, or None when it builds nothing known)."""
        try:
            return True, _summary(self._read(key)["summary"])
        except _UNREADABLE:
            return False, None

    def put_imports(self, key: str, summary: ModuleSummary | None) -> None:
        self._write(key, {"summary": None if summary is None else summary.to_json()})

    def _read(self, key: str) -> dict[str, Any]:
        """An entry's JSON; an entry that is not a regular file (a FIFO, a symlink to a
        device) or is too large raises OSError, as one that cannot be read does."""
        entry = json.loads(read_regular_file(self._entry(key), MAX_ENTRY_BYTES))
        if not isinstance(entry, dict):
            raise TypeError("expected an object")
        return entry

    def _write(self, key: str, payload: dict[str, Any]) -> None:
        """Store atomically; a cache that cannot be written is only a slower next run."""
        entry = self._entry(key)
        text = json.dumps(payload)
        try:
            fd, temporary = tempfile.mkstemp(dir=entry.parent, prefix=".tmp-")
        except OSError:
            return
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as file:
                file.write(text)
            os.replace(temporary, entry)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(temporary)

    def _entry(self, key: str) -> Path:
        return self.directory / "entries" / key


def _evict(entries: Path, max_entries: int) -> None:
    """Over `max_entries`: remove the entries written longest ago, down to three quarters
    of it. Entries another process removes meanwhile are skipped; a failure leaves a
    larger cache, never a failed run."""
    try:
        with os.scandir(entries) as listing:
            found = [entry for entry in listing if not entry.name.startswith(".tmp-")]
    except OSError:
        return
    if len(found) <= max_entries:
        return
    ages = []
    for entry in found:
        with contextlib.suppress(OSError):
            ages.append((entry.stat().st_mtime_ns, entry.path))
    ages.sort()
    for _, path in ages[: len(ages) - max_entries * 3 // 4]:
        with contextlib.suppress(OSError):
            os.unlink(path)


def _salt(settings: Settings) -> str:
    return "\n".join(
        [f"format {FORMAT}", f"tapelint {tapelint.version()}", _code_fingerprint(), repr(settings)]
    )


def _code_fingerprint() -> str:
    """Name, size and modification time of every source file of tapelint and its rules."""
    directories = [Path(tapelint.__file__).parent, *map(Path, rules_package.__path__)]
    parts = []
    for directory in directories:
        for file in sorted(directory.rglob("*.py")):
            status = file.stat()
            parts.append(f"{file.relative_to(directory)} {status.st_size} {status.st_mtime_ns}")
    return hashlib.sha256("\n".join(parts).encode("utf-8", "surrogatepass")).hexdigest()


def _encode(diagnostic: Diagnostic) -> dict[str, Any]:
    fix = diagnostic.fix
    return {
        "path": diagnostic.path,
        "start": [diagnostic.start.line, diagnostic.start.column],
        "end": [diagnostic.end.line, diagnostic.end.column],
        "code": diagnostic.code,
        "name": diagnostic.name,
        "severity": diagnostic.severity.value,
        "message": diagnostic.message,
        "cell": diagnostic.cell,
        "related": [[r.path, r.line, r.column, r.message, r.cell] for r in diagnostic.related],
        "fix": None
        if fix is None
        else {
            "title": fix.title,
            "applicability": fix.applicability.value,
            "edits": [
                [e.start.line, e.start.column, e.end.line, e.end.column, e.content]
                for e in fix.edits
            ],
        },
    }


def _summary(data: Any) -> ModuleSummary | None:
    """A stored summary, as long as it is exactly what storing it wrote: decoding takes
    any value for a name, so a value of the wrong type would be trusted otherwise."""
    if data is None:
        return None
    summary = ModuleSummary.from_json(data)
    if summary.to_json() != data:
        raise TypeError("not a summary tapelint wrote")
    return summary


def _diagnostics(items: Any) -> list[Diagnostic]:
    if not isinstance(items, list):
        raise TypeError("expected a list")
    return [_diagnostic(item) for item in items]


def _diagnostic(item: dict[str, Any]) -> Diagnostic:
    fix = item["fix"]
    rule = rule_by_code_or_name(_string(item["code"]))
    if rule is None or (rule.code, rule.name) != (item["code"], item["name"]):
        raise ValueError("not a rule of this tapelint")
    return Diagnostic(
        path=_string(item["path"]),
        start=Position(*_ints(item["start"], 2)),
        end=Position(*_ints(item["end"], 2)),
        code=rule.code,
        name=rule.name,
        severity=Severity(item["severity"]),
        message=_string(item["message"]),
        cell=_cell(item["cell"]),
        related=tuple(_related(r) for r in item["related"]),
        fix=None
        if fix is None
        else Fix(
            title=_string(fix["title"]),
            applicability=Applicability(fix["applicability"]),
            edits=tuple(
                Edit(Position(*_ints(e[0:2], 2)), Position(*_ints(e[2:4], 2)), _string(e[4]))
                for e in fix["edits"]
            ),
        ),
    )


def _related(item: Any) -> Related:
    path, line, column, message, cell = item
    line_number, column_number = _ints([line, column], 2)
    return Related(_string(path), line_number, column_number, _string(message), _cell(cell))


def _cell(value: Any) -> int | None:
    return None if value is None else _ints([value], 1)[0]


def _strings(values: Any) -> list[str]:
    if not isinstance(values, list):
        raise TypeError("expected a list")
    return [_string(value) for value in values]


def _string(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError("expected a string")
    return value


def _ints(values: Any, count: int) -> list[int]:
    """`count` positive integers: lines, columns and cells all count from 1."""
    if not isinstance(values, list) or len(values) != count:
        raise TypeError(f"expected {count} integers")
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in values):
        raise TypeError(f"expected {count} positive integers")
    return values
