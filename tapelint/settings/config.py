"""Settings from one config file: `[tool.tapelint]` in a pyproject.toml, or the same keys at
the top level of a `tapelint.toml` (or of any other file given with `--config`).

The config file's directory is the project root: `exclude`, `extend-exclude` and the
`per-file-ignores` globs are relative to it. Without a config file the root is the current
directory. `extend = "path"` inherits another config file's keys (the extending file's keys
replace the base's, one by one), and inline `--config "KEY = VALUE"` tables replace keys of
the result. Which file holds a given source file's settings is `tapelint.settings.resolution`'s
question; command-line options are applied on top with `Settings.override`.
"""

from __future__ import annotations

import dataclasses
import difflib
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tapelint.settings.bounded_read import read_regular_file
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
    "skip-older-copies",
    "skip-vendored-frameworks",
    "extend",
)
_FLAG_KEYS = ("preview", "skip-older-copies", "skip-vendored-frameworks")
# The names a config file can have, in the order one directory's are preferred.
CONFIG_NAMES = ("tapelint.toml", "pyproject.toml")
# `extend` chains longer than this are a mistake (a cycle is reported as one before).
MAX_EXTEND_DEPTH = 32
DEFAULT_CACHE_DIR = ".tapelint_cache"
# Bytes. A file larger than this that mentions a trigger is TAP001 without being parsed: a
# data module (a vocabulary, weights as literals) next to training code, whose parse would
# take gigabytes. The largest file with a trigger in TensorFlow's sources is 70 kB.
DEFAULT_MAX_FILE_SIZE = 4_000_000
# Bytes. A config file larger than this (or one that is not a regular file: a FIFO, a
# device) cannot be read; a pyproject.toml met while looking for the config is then passed
# over. Real ones are a few kilobytes.
MAX_CONFIG_BYTES = 10_000_000


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
    # Skips by policy of a walk (`tapelint.sources.discovery`): older copies of a file, and
    # copies of TensorFlow's or Keras's own source tree.
    skip_older_copies: bool = True
    skip_vendored_frameworks: bool = True
    ignore_noqa: bool = False  # `--ignore-noqa` (command line only): every noqa is ignored

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
        ignore_noqa: bool = False,
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
            ignore_noqa=self.ignore_noqa or ignore_noqa,
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


def load_settings(
    config_file: Path | None = None, inline: Mapping[str, Any] | None = None
) -> Settings:
    """Settings from `config_file` (following its `extend`), else from the nearest config
    file at or above the current directory, else the defaults; the `inline` keys on top."""
    if config_file is None:
        config_file = find_config(Path.cwd().resolve())
        if config_file is None:
            return default_settings(Path.cwd().resolve(), inline)
    config_file = Path(config_file).resolve()
    table = _extended_table(config_file, ())
    _check_inline(inline)
    return _settings_from(
        {**table, **(inline or {})}, origin=str(config_file), root=config_file.parent
    )


def default_settings(root: Path, inline: Mapping[str, Any] | None = None) -> Settings:
    """The settings without a config file, with `root` as the project root; the `inline`
    keys on top."""
    _check_inline(inline)
    return _settings_from(dict(inline), origin="--config", root=root) if inline else Settings(root)


def _check_inline(inline: Mapping[str, Any] | None) -> None:
    """Inline `--config` keys are checked alone, so that their errors name the option."""
    if inline:
        _settings_from(dict(inline), origin="--config", root=Path.cwd())


def find_config(start: Path) -> Path | None:
    """The nearest config file at or above `start`: a `tapelint.toml`, or a pyproject.toml
    that has a `[tool.tapelint]` table (in one directory, `tapelint.toml` first)."""
    for directory in (start, *start.parents):
        found = config_in(directory)
        if found is not None:
            return found
    return None


def config_in(directory: Path) -> Path | None:
    """The config file of `directory` itself, if it has one (see `find_config`)."""
    for name in CONFIG_NAMES:
        candidate = directory / name
        try:
            data = read_regular_file(candidate, MAX_CONFIG_BYTES)
        except OSError:
            continue
        if name != "pyproject.toml":
            return candidate  # every tapelint.toml is ours, even an empty one
        # A pyproject.toml that never says "tapelint" cannot hold our table, and it is
        # not ours to complain about when it is malformed.
        if b"tapelint" in data and _tool_table(_parsed_toml(candidate, data)) is not None:
            return candidate
    return None


def _extended_table(config_file: Path, seen: tuple[Path, ...]) -> dict[str, Any]:
    """The keys of `config_file`, each checked, over those of the file it extends."""
    if config_file in seen:
        chain = " -> ".join(str(path) for path in (*seen, config_file))
        raise ConfigError(f"{seen[-1]}: extend: a cycle: {chain}")
    if len(seen) > MAX_EXTEND_DEPTH:
        raise ConfigError(f"{config_file}: extend: more than {MAX_EXTEND_DEPTH} files deep")
    table, section = _file_table(config_file)
    _settings_from(table, origin=str(config_file), root=config_file.parent, section=section)
    base = table.pop("extend", None)
    if base is None:
        return table
    if not isinstance(base, str) or not base:
        raise ConfigError(
            f"{config_file}: {section}extend: expected the path of a config file, "
            f"got {_describe(base)}"
        )
    base_file = (config_file.parent / Path(base).expanduser()).resolve()
    if not base_file.is_file():
        raise ConfigError(f"{config_file}: {section}extend: {base_file}: no such file")
    return {**_extended_table(base_file, (*seen, config_file)), **table}


def _file_table(config_file: Path) -> tuple[dict[str, Any], str]:
    """The settings table of a file and how its keys are named in messages."""
    document = _read_toml(config_file)
    if config_file.name != "pyproject.toml":
        return document, ""
    table = _tool_table(document)
    if table is not None and not isinstance(table, dict):
        raise ConfigError(f"{config_file}: tool.tapelint: expected a table")
    return dict(table or {}), "tool.tapelint."


def parse_inline(text: str) -> dict[str, Any] | None:
    """`--config "KEY = VALUE"`: the TOML table the text holds, or None when it is not TOML."""
    try:
        return tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError):
        return None


def _tool_table(document: dict[str, Any]) -> Any:
    tool = document.get("tool")
    return tool.get("tapelint") if isinstance(tool, dict) else None


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        data = read_regular_file(path, MAX_CONFIG_BYTES)
    except OSError as error:
        raise ConfigError(f"{path}: cannot read: {error.strerror or error}") from None
    return _parsed_toml(path, data)


def _parsed_toml(path: Path, data: bytes) -> dict[str, Any]:
    try:
        return tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise ConfigError(f"{path}: invalid TOML: not UTF-8: {error}") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: invalid TOML: {error}") from None
    except RecursionError:  # tomllib recurses once per level of nested arrays and tables
        raise ConfigError(f"{path}: invalid TOML: nested too deeply") from None


def _settings_from(
    table: dict[str, Any], *, origin: str, root: Path, section: str = ""
) -> Settings:
    """Validate one settings table (`extend` already followed); `origin` (the file) and
    `section` name the keys in messages."""

    def fail(key: str, problem: str) -> ConfigError:
        return ConfigError(f"{origin}: {section}{key}: {problem}")

    for key in table:
        if key not in _KEYS:
            raise fail(key, f"unknown key; {_key_hint(key)}")

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
    flags = {key: table.get(key, key != "preview") for key in _FLAG_KEYS}
    for key, value in flags.items():
        if not isinstance(value, bool):
            raise fail(key, f"expected true or false, got {_describe(value)}")
    cache_dir = table.get("cache-dir", DEFAULT_CACHE_DIR)
    if not isinstance(cache_dir, str) or not cache_dir:
        raise fail("cache-dir", f"expected a directory path, got {_describe(cache_dir)}")
    max_file_size = table.get("max-file-size", DEFAULT_MAX_FILE_SIZE)
    if not isinstance(max_file_size, int) or isinstance(max_file_size, bool) or max_file_size < 1:
        raise fail(
            "max-file-size", f"expected a positive number of bytes, got {_describe(max_file_size)}"
        )
    return Settings(
        root=root,
        cache_dir=cache_dir,
        select=values.get("select"),
        extend_select=values.get("extend-select", ()),
        ignore=values.get("ignore", ()),
        unfixable=values.get("unfixable", ()),
        exclude=values.get("exclude", DEFAULT_EXCLUDE),
        extend_exclude=values.get("extend-exclude", ()),
        per_file_ignores=per_file_ignores,
        preview=flags["preview"],
        max_file_size=max_file_size,
        skip_older_copies=flags["skip-older-copies"],
        skip_vendored_frameworks=flags["skip-vendored-frameworks"],
    )


def _key_hint(key: str) -> str:
    if key == "tool":
        return (
            "only a file named pyproject.toml is read under [tool.tapelint]; "
            "other files hold the keys at their top level"
        )
    close = difflib.get_close_matches(key, _KEYS, n=3, cutoff=0.6)
    if close:
        return f"did you mean {', '.join(close)}?"
    return f"expected one of {', '.join(_KEYS)}"


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
