"""Which settings check each file: one answer for `tapelint check`, the pre-commit hook, the
flake8 plugin and the language server.

As in ruff, each file is checked with its closest configuration: the nearest config file
(`tapelint.settings.config.find_config`: a `tapelint.toml`, or a pyproject.toml with a
`[tool.tapelint]` table) at or above the file's directory, wherever the run started. So
`tapelint check .` at a monorepo's root, the same check from inside a subproject, the editor
and flake8 all check `pkgA/a.py` with `pkgA`'s configuration. A file with no config file above
it gets the defaults, with a root the caller chooses (the current directory for a run, the
workspace folder in the editor).

Three options change that for a run (`ConfigSource`): `--config FILE` uses that file for
every file; `--config "KEY = VALUE"` (TOML text) puts keys on top of whichever configuration
applies; `--isolated` reads no config file at all.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tapelint.settings.config import (
    Settings,
    config_in,
    default_settings,
    find_config,
    load_settings,
)


@dataclass(frozen=True)
class ConfigSource:
    """Where settings come from, as the command line says."""

    config_file: Path | None = None  # `--config FILE`: for every file
    inline: Mapping[str, Any] = field(default_factory=dict)  # `--config "KEY = VALUE"` keys
    isolated: bool = False  # `--isolated`: no config file

    def config_for(self, directory: Path) -> Path | None:
        """The config file that holds the settings of the files in `directory`."""
        if self.isolated:
            return None
        if self.config_file is not None:
            return self.config_file.resolve()
        return find_config(directory)

    def settings_for(self, directory: Path, default_root: Path) -> Settings:
        """The settings of the files in `directory` (absolute); raises ConfigError."""
        config = self.config_for(directory)
        if config is None:
            return default_settings(default_root, self.inline)
        return load_settings(config, self.inline)


class SettingsResolver:
    """The settings of each file of one run, each config file read once.

    `adjust` applies what else the caller has to say (the command-line options, the
    editor's settings) on top of each file's settings."""

    def __init__(
        self,
        source: ConfigSource | None = None,
        *,
        default_root: Path | None = None,
        adjust: Callable[[Settings], Settings] = lambda settings: settings,
    ) -> None:
        self.source = source or ConfigSource()
        self.default_root = (default_root or Path.cwd()).resolve()
        self._adjust = adjust
        self._configs: dict[Path, Path | None] = {}
        self._settings: dict[Path | None, Settings] = {}

    def for_directory(self, directory: Path) -> Settings:
        config = self._config_for(Path(directory).absolute())
        if config not in self._settings:
            self._settings[config] = self._adjust(
                self.source.settings_for(directory, self.default_root)
            )
        return self._settings[config]

    def _config_for(self, directory: Path) -> Path | None:
        """`ConfigSource.config_for`, each directory on the way up read once a run (a walk
        meets thousands of directories, most without a config file)."""
        if directory in self._configs:
            return self._configs[directory]
        if self.source.isolated or self.source.config_file is not None:
            found = self.source.config_for(directory)
        else:
            real = directory.resolve()
            found = config_in(real)
            if found is None and real.parent != real:
                found = self._config_for(real.parent)
        self._configs[directory] = found
        return found

    def for_file(self, path: Path) -> Settings:
        return self.for_directory(Path(path).absolute().parent)

    def for_run(self) -> Settings:
        """The settings of the current directory: the run's own (discovery, the cache)."""
        return self.for_directory(Path.cwd())

    def config_of(self, directory: Path) -> Path | None:
        return self._config_for(Path(directory).absolute())
