"""Settings from `[tool.tapelint]` in pyproject.toml (or a file given with `--config`).

The config file's directory is the project root: `exclude`, `extend-exclude` and the
`per-file-ignores` globs are relative to it. Without a config file the root is the current
directory. Command-line options are applied on top with `Settings.override`.
"""

from __future__ import annotations

import dataclasses
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tapelint.settings.policies.test_code import DEFAULT_PER_FILE_IGNORES
from tapelint.settings.selection import SelectorError, validate

# Like ruff's defaults: directories that never hold the project's own code.
DEFAULT_EXCLUDE = (
    ".git",
    ".venv",
    "venv",
    "__pycache__",
    ".tox",
    ".nox",
    "build",
    "dist",
    "node_modules",
    "site-packages",
    ".mypy_cache",
    ".ruff_cache",
    ".tapelint_cache",
    ".pytest_cache",
    ".eggs",
    "__pypackages__",
    "_build",
    "buck-out",
    # Jupyter's autosave copies: every notebook a second time.
    ".ipynb_checkpoints",
)

_SELECTOR_KEYS = ("select", "extend-select", "ignore", "unfixable")
_PATTERN_KEYS = ("exclude", "extend-exclude")
_KEYS = (
    *_SELECTOR_KEYS,
    *_PATTERN_KEYS,
    "per-file-ignores",
    "preview",
    "cache-dir",
    "max-file-size",
)
DEFAULT_CACHE_DIR = ".tapelint_cache"
# Bytes. A file larger than this that mentions a trigger is TAP001 without being parsed: a
# data module (a vocabulary, weights as literals) next to training code, whose parse would
# take gigabytes. The largest file with a trigger in TensorFlow's sources is 70 kB.
DEFAULT_MAX_FILE_SIZE = 4_000_000


class ConfigError(Exception):
    """A config file that cannot be used; the message names the file and the key."""


@dataclass(frozen=True)
class Settings:
    root: Path
    select: tuple[str, ...] | None = None  # None: the default selection
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    unfixable: tuple[str, ...] = ()  # rules whose findings are reported without their fix
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    extend_exclude: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = DEFAULT_PER_FILE_IGNORES
    preview: bool = False
    cache_dir: str = DEFAULT_CACHE_DIR  # relative to `root` unless absolute; `~` expands
    max_file_size: int = DEFAULT_MAX_FILE_SIZE  # bytes

    @property
    def cache_path(self) -> Path:
        return self.root / Path(self.cache_dir).expanduser()

    @property
    def exclude_patterns(self) -> tuple[str, ...]:
        return (*self.exclude, *self.extend_exclude)

    def override(
        self,
        *,
        select: Iterable[str] | None = None,
        extend_select: Iterable[str] = (),
        ignore: Iterable[str] = (),
        preview: bool = False,
        unfixable: Iterable[str] = (),
        exclude: Iterable[str] | None = None,
        extend_exclude: Iterable[str] = (),
        per_file_ignores: Iterable[tuple[str, tuple[str, ...]]] | None = None,
        extend_per_file_ignores: Iterable[tuple[str, tuple[str, ...]]] = (),
    ) -> Settings:
        """Apply command-line options, as ruff does: `select`, `exclude` and
        `per_file_ignores` replace the config's; the others add to it. Patterns given on the
        command line are matched as the config's are, relative to `root`."""
        return dataclasses.replace(
            self,
            select=tuple(select) if select is not None else self.select,
            extend_select=(*self.extend_select, *extend_select),
            ignore=(*self.ignore, *ignore),
            preview=self.preview or preview,
            unfixable=(*self.unfixable, *unfixable),
            exclude=tuple(exclude) if exclude is not None else self.exclude,
            extend_exclude=(*self.extend_exclude, *extend_exclude),
            per_file_ignores=(
                *(
                    tuple(per_file_ignores)
                    if per_file_ignores is not None
                    else self.per_file_ignores
                ),
                *extend_per_file_ignores,
            ),
        )


def load_settings(config_file: Path | None = None) -> Settings:
    """Settings from `config_file`, else from the nearest pyproject.toml with a
    `[tool.tapelint]` table at or above the current directory, else the defaults."""
    cwd = Path.cwd().resolve()
    if config_file is None:
        config_file = find_config(cwd)
        if config_file is None:
            return Settings(root=cwd)
    config_file = Path(config_file).resolve()
    document = _read_toml(config_file)
    if config_file.name != "pyproject.toml":
        return _settings_from(document, config_file, "")
    table = _tool_table(document)
    if table is not None and not isinstance(table, dict):
        raise ConfigError(f"{config_file}: tool.tapelint: expected a table")
    return _settings_from(table or {}, config_file, "tool.tapelint.")


def find_config(start: Path) -> Path | None:
    """The nearest pyproject.toml at or above `start` that has a `[tool.tapelint]` table."""
    for directory in (start, *start.parents):
        candidate = directory / "pyproject.toml"
        try:
            # A pyproject.toml that never says "tapelint" cannot hold our table, and it is
            # not ours to complain about when it is malformed.
            if b"tapelint" not in candidate.read_bytes():
                continue
        except OSError:
            continue
        if _tool_table(_read_toml(candidate)) is not None:
            return candidate
    return None


def _tool_table(document: dict[str, Any]) -> Any:
    tool = document.get("tool")
    return tool.get("tapelint") if isinstance(tool, dict) else None


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as file:
            return tomllib.load(file)
    except OSError as error:
        raise ConfigError(f"{path}: cannot read: {error.strerror or error}") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: invalid TOML: {error}") from None


def _settings_from(table: dict[str, Any], config_file: Path, section: str) -> Settings:
    """Validate one settings table; `section` prefixes key names in messages."""

    def fail(key: str, problem: str) -> ConfigError:
        return ConfigError(f"{config_file}: {section}{key}: {problem}")

    for key in table:
        if key not in _KEYS:
            hint = (
                " (only a file named pyproject.toml is read under [tool.tapelint]; "
                "other files hold the keys at their top level)"
                if key == "tool"
                else ""
            )
            raise fail(key, f"unknown key; expected one of {', '.join(_KEYS)}{hint}")

    def strings(key: str, value: Any) -> tuple[str, ...]:
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise fail(key, f"expected a list of strings, got {_describe(value)}")
        return tuple(value)

    def selectors(key: str, value: Any) -> tuple[str, ...]:
        found = strings(key, value)
        try:
            validate(found)
        except SelectorError as error:
            raise fail(key, str(error)) from None
        return found

    values = {key: selectors(key, table[key]) for key in _SELECTOR_KEYS if key in table}
    values.update({key: strings(key, table[key]) for key in _PATTERN_KEYS if key in table})
    per_file = table.get("per-file-ignores")
    if per_file is not None and not isinstance(per_file, dict):
        raise fail(
            "per-file-ignores", f"expected a table of glob = [selectors], got {_describe(per_file)}"
        )
    per_file_ignores = (
        DEFAULT_PER_FILE_IGNORES
        if per_file is None
        else tuple(
            (glob, selectors(f"per-file-ignores.{glob!r}", codes))
            for glob, codes in per_file.items()
        )
    )
    preview = table.get("preview", False)
    if not isinstance(preview, bool):
        raise fail("preview", f"expected true or false, got {_describe(preview)}")
    cache_dir = table.get("cache-dir", DEFAULT_CACHE_DIR)
    if not isinstance(cache_dir, str) or not cache_dir:
        raise fail("cache-dir", f"expected a directory path, got {_describe(cache_dir)}")
    max_file_size = table.get("max-file-size", DEFAULT_MAX_FILE_SIZE)
    if not isinstance(max_file_size, int) or isinstance(max_file_size, bool) or max_file_size < 1:
        raise fail(
            "max-file-size", f"expected a positive number of bytes, got {_describe(max_file_size)}"
        )
    return Settings(
        root=config_file.parent,
        cache_dir=cache_dir,
        select=values.get("select"),
        extend_select=values.get("extend-select", ()),
        ignore=values.get("ignore", ()),
        unfixable=values.get("unfixable", ()),
        exclude=values.get("exclude", DEFAULT_EXCLUDE),
        extend_exclude=values.get("extend-exclude", ()),
        per_file_ignores=per_file_ignores,
        preview=preview,
        max_file_size=max_file_size,
    )


def _describe(value: Any) -> str:
    kind = {
        bool: "a boolean",
        str: "a string",
        int: "an integer",
        float: "a number",
        list: "a list",
        dict: "a table",
    }.get(type(value), type(value).__name__)
    return f"{kind} ({value!r})"
