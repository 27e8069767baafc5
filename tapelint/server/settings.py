"""Which settings check a document: its project's configuration, read as `tapelint check`
reads it, with the editor's own settings on top.

Project configuration. A document's settings are resolved as `tapelint check` resolves each
file's (`tapelint.settings.resolution`): the nearest `tapelint.toml`, or `pyproject.toml` with
a `[tool.tapelint]` table, at or above the document's directory, following its `extend`; its
directory is the root for `exclude`, `extend-exclude` and `per-file-ignores`. Without one,
the defaults apply with the workspace folder that holds the document as the root. Excluded
files get no diagnostics (`tapelint check --force-exclude`).

Reading it again. Each check stats the config files of every directory from the
document's up to the filesystem root (a few dozen `stat` calls, microseconds) and re-reads the
configuration only when one of them appeared, disappeared or changed, so an edited config
applies to the next check without a restart and no keystroke re-reads it (a base file named
by `extend` is not among them: its edit applies with the next change of a config file on the
way, or a restart). A client that can watch files is also asked to report changes to
`pyproject.toml`, `tapelint.toml` and `.gitignore`, and the server then re-checks every open
document at once instead of at the next edit.

Editor settings (`initializationOptions`, or the `tapelint` section of the workspace
configuration), all optional:

- `select`, `extendSelect`, `ignore`: rule selectors, applied like the command-line options
  of the same names (`select` replaces the project's selection, the others add to it);
- `preview`: enable preview rules, like `--preview`;
- `unsafeFixes`: offer unsafe fixes as quick fixes too (marked "unsafe"); default false.

A setting with a wrong value is reported to the user and left out.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tapelint.settings.config import CONFIG_NAMES, ConfigError, Settings
from tapelint.settings.resolution import ConfigSource
from tapelint.settings.selection import SelectorError, validate

_SELECTOR_KEYS = {"select": "select", "extendSelect": "extend_select", "ignore": "ignore"}
_FLAG_KEYS = {"preview": "preview", "unsafeFixes": "unsafe_fixes"}


@dataclass(frozen=True)
class ClientSettings:
    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    preview: bool = False
    unsafe_fixes: bool = False

    def merged(self, raw: Any) -> tuple[ClientSettings, list[str]]:
        """These settings with the keys given in `raw` (a JSON object) replaced; and a
        message for each value that could not be used (that key keeps its value)."""
        if raw is None:
            return self, []
        if not isinstance(raw, dict):
            return self, [f"tapelint settings: expected an object, got {raw!r}"]
        values: dict[str, Any] = {}
        problems = []
        for key, attribute in _SELECTOR_KEYS.items():
            if raw.get(key) is None:
                continue
            selectors, problem = _selectors(key, raw[key])
            if problem is None:
                values[attribute] = selectors
            else:
                problems.append(problem)
        for key, attribute in _FLAG_KEYS.items():
            if raw.get(key) is None:
                continue
            if isinstance(raw[key], bool):
                values[attribute] = raw[key]
            else:
                problems.append(f"tapelint settings: {key}: expected true or false")
        return _replace(self, values), problems

    def apply(self, settings: Settings) -> Settings:
        return settings.override(
            select=self.select,
            extend_select=self.extend_select,
            ignore=self.ignore,
            preview=self.preview,
        )


def _replace(settings: ClientSettings, values: dict[str, Any]) -> ClientSettings:
    return ClientSettings(**{**settings.__dict__, **values})


def _selectors(key: str, value: Any) -> tuple[tuple[str, ...], str | None]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        return (), f"tapelint settings: {key}: expected a list of rule selectors"
    selectors = tuple(part.strip() for item in value for part in item.split(",") if part.strip())
    try:
        validate(selectors)
    except SelectorError as error:
        return (), f"tapelint settings: {key}: {error}"
    return selectors, None


@dataclass
class _Entry:
    fingerprint: tuple
    settings: Settings
    problem: str | None


@dataclass
class ProjectSettings:
    """The project configuration of each directory, re-read only when it changed.

    Not thread-safe: the server uses it from its checking thread only.
    """

    root_of: Callable[[Path], Path]  # the workspace folder holding a file without a config
    _entries: dict[Path, _Entry] = field(default_factory=dict)

    def for_file(self, path: Path) -> tuple[Settings, str | None]:
        """The file's project settings, and why its config could not be used (None when
        it could: an unusable config leaves the defaults, as an unreadable file would)."""
        directory = path.parent
        fingerprint = _fingerprint(directory)
        entry = self._entries.get(directory)
        if entry is None or entry.fingerprint != fingerprint:
            entry = _Entry(fingerprint, *self._read(directory, path))
            self._entries[directory] = entry
        return entry.settings, entry.problem

    def forget(self) -> None:
        self._entries.clear()

    def _read(self, directory: Path, path: Path) -> tuple[Settings, str | None]:
        try:
            return ConfigSource().settings_for(directory, self.root_of(path)), None
        except ConfigError as error:
            return Settings(root=self.root_of(path)), str(error)


def _fingerprint(directory: Path) -> tuple:
    """What `find_config` reads, cheaply: each ancestor's config files, as stat sees them."""
    return tuple(
        _stat(parent / name) for parent in (directory, *directory.parents) for name in CONFIG_NAMES
    )


def _stat(path: Path) -> tuple[int, int, int] | None:
    try:
        result = os.stat(path)
    except OSError:
        return None
    return (result.st_mtime_ns, result.st_size, result.st_ino)


def workspace_root(folders: Iterable[Path], fallback: Path | None) -> Callable[[Path], Path]:
    """For a file: the deepest workspace folder holding it, else `fallback` when it holds
    it, else the file's own directory."""
    candidates = sorted({*folders, *([fallback] if fallback else [])}, key=lambda p: -len(p.parts))

    def root_of(path: Path) -> Path:
        return next((folder for folder in candidates if path.is_relative_to(folder)), path.parent)

    return root_of
