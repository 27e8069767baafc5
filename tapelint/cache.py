"""Results of unchanged files, kept between runs: a content-hash cache.

What is cached: the diagnostics `Linter.check_bytes` returns for one file, i.e. the lint
result of exact bytes, before any fix. Files that never mention a trigger are not cached
(the substring test that skips them is cheaper than a cache lookup).

Never stale, by construction: an entry's key is a SHA-256 of everything the result depends
on, so a change to any of them is a different key and the old entry is simply not found:
- the file's bytes and the path it is reported under;
- the rule codes that apply to the file (selection, preview and per-file-ignores);
- the whole configuration (`Settings`), so a future setting that changes what a rule
  reports cannot be forgotten here;
- tapelint's version and a fingerprint (name, size, mtime) of its own source files, so an
  upgrade, or an edit to an editable install, starts a fresh cache.

Fixing: the cache holds lint results only. `--fix` and `--diff` still run the fixer, from
scratch, on every file whose (cached or fresh) diagnostics have a fix to apply; files with
nothing to fix are answered from the cache as in a plain check.

Layout: `<cache dir>/entries/<2 hex>/<62 hex>`, one small JSON file per entry, written to a
temporary file and renamed into place (a reader sees a whole entry or none). An entry that
cannot be read or decoded is a miss and is overwritten. Entries of old versions are never
read again but stay until the directory is removed; deleting it at any time is safe. The
directory holds a `CACHEDIR.TAG` (backup tools skip it) and a `.gitignore` of `*` (git
ignores it).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import tapelint
from tapelint import rules as rules_package
from tapelint.config import Settings
from tapelint.diagnostics import Applicability, Diagnostic, Edit, Fix, Position, Severity
from tapelint.engine import Linter
from tapelint.rule import Rule

# Bump when the entry format changes.
FORMAT = 1

_CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by tapelint.\n"
    "# For information about cache directory tags see https://bford.info/cachedir/\n"
)


class ResultCache:
    """One run's view of a cache directory; picklable, so worker processes use it too."""

    def __init__(self, directory: Path, salt: str) -> None:
        self.directory = directory
        self._salt = salt.encode()

    @classmethod
    def open(cls, directory: Path, settings: Settings) -> ResultCache:
        """Create the directory if needed; OSError when it cannot be created."""
        directory.mkdir(parents=True, exist_ok=True)
        for name, content in (("CACHEDIR.TAG", _CACHEDIR_TAG), (".gitignore", "*\n")):
            marker = directory / name
            if not marker.exists():
                marker.write_text(content, encoding="utf-8")
        return cls(directory, _salt(settings))

    def key(self, data: bytes, display: str, codes: frozenset[str]) -> str:
        digest = hashlib.sha256(self._salt)
        for part in (display, ",".join(sorted(codes))):
            digest.update(b"\0" + part.encode("utf-8", "surrogatepass"))
        digest.update(b"\0")
        digest.update(data)
        return digest.hexdigest()

    def get(self, key: str) -> list[Diagnostic] | None:
        """The cached diagnostics, or None for a miss (absent, unreadable or corrupt)."""
        try:
            with open(self._entry(key), "rb") as file:
                return [_diagnostic(item) for item in json.load(file)["diagnostics"]]
        except (OSError, ValueError, KeyError, TypeError, IndexError):
            return None

    def put(self, key: str, diagnostics: Sequence[Diagnostic]) -> None:
        """Store atomically; a cache that cannot be written is only a slower next run."""
        entry = self._entry(key)
        payload = json.dumps({"diagnostics": [_encode(d) for d in diagnostics]})
        try:
            entry.parent.mkdir(parents=True, exist_ok=True)
            fd, temporary = tempfile.mkstemp(dir=entry.parent, prefix=".tmp-")
        except OSError:
            return
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as file:
                file.write(payload)
            os.replace(temporary, entry)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(temporary)

    def _entry(self, key: str) -> Path:
        return self.directory / "entries" / key[:2] / key[2:]


class CachedLinter(Linter):
    """A linter whose `check_bytes` answers from the cache when it can."""

    def __init__(self, rules: Sequence[type[Rule]], cache: ResultCache) -> None:
        super().__init__(rules)
        self.cache = cache

    def cached(self, data: bytes, path: str) -> list[Diagnostic] | None:
        return self.cache.get(self.cache.key(data, path, self.codes))

    def check_bytes(self, data: bytes, path: str) -> list[Diagnostic]:
        if not self.may_report(data):
            return []
        key = self.cache.key(data, path, self.codes)
        found = self.cache.get(key)
        if found is None:
            found = super().check_bytes(data, path)
            self.cache.put(key, found)
        return found


def _salt(settings: Settings) -> str:
    try:
        version = metadata.version("tapelint")
    except metadata.PackageNotFoundError:
        version = "unknown"
    return "\n".join(
        [f"format {FORMAT}", f"tapelint {version}", _code_fingerprint(), repr(settings)]
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


def _diagnostic(item: dict[str, Any]) -> Diagnostic:
    fix = item["fix"]
    return Diagnostic(
        path=_string(item["path"]),
        start=Position(*_ints(item["start"], 2)),
        end=Position(*_ints(item["end"], 2)),
        code=_string(item["code"]),
        name=_string(item["name"]),
        severity=Severity(item["severity"]),
        message=_string(item["message"]),
        cell=None if item["cell"] is None else _ints([item["cell"]], 1)[0],
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


def _string(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError("expected a string")
    return value


def _ints(values: Any, count: int) -> list[int]:
    if not isinstance(values, list) or len(values) != count:
        raise TypeError(f"expected {count} integers")
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        raise TypeError(f"expected {count} integers")
    return values
