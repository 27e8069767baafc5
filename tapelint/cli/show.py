"""`check --show-files` and `check --show-settings`: what a check would read, and with what
configuration, without checking anything.

`--show-files` prints the files a check of the same paths would read, one a line, as
diagnostics name them (relative to the current directory when under it), in the order a
check reads them; and on stderr, each file or directory the walk skipped by policy (an older
copy, a vendored framework tree) with why: `skipped train_BACKUP.py: an older copy of
train.py`. `--show-settings` prints the configuration in effect, command-line options
applied, as `[tool.tapelint]` keys that can be pasted into a pyproject.toml, after a comment
naming the file it came from; then the rules that run (for the one file given, if one is,
after its per-file-ignores).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from tapelint.run.per_file import Linters, display_path
from tapelint.settings.config import Settings
from tapelint.sources.discovery import discover, skip_policies


def files_checked(
    paths: Sequence[str], settings: Settings, *, force_exclude: bool
) -> tuple[list[str], list[str], list[str]]:
    """The files a check would read, as shown; the files skipped by policy, each with why;
    and the paths that do not exist."""
    found = discover(
        paths or (".",),
        root=settings.root,
        exclude=settings.exclude_patterns,
        force_exclude=force_exclude,
        skips=skip_policies(settings),
    )
    cwd = Path.cwd()
    skipped = [f"{display_path(Path(s.path), cwd)}: {s.reason}" for s in found.skipped]
    return [display_path(s.path, cwd) for s in found.files], skipped, list(found.missing)


def settings_text(settings: Settings, config_file: Path | None, paths: Sequence[str]) -> str:
    """The settings as TOML, and the rules that run."""
    origin = f"# from {config_file}" if config_file is not None else "# defaults: no config file"
    values: dict[str, object] = {
        "select": list(settings.select) if settings.select is not None else ["ALL"],
        "extend-select": list(settings.extend_select),
        "ignore": list(settings.ignore),
        "unfixable": list(settings.unfixable),
        "preview": settings.preview,
        "exclude": list(settings.exclude),
        "extend-exclude": list(settings.extend_exclude),
        "cache-dir": str(settings.cache_path),
        "skip-older-copies": settings.skip_older_copies,
        "skip-vendored-frameworks": settings.skip_vendored_frameworks,
    }
    lines = [origin, f"# project root: {settings.root}", "[tool.tapelint]"]
    lines.extend(f"{key} = {json.dumps(value)}" for key, value in values.items())
    lines.append("[tool.tapelint.per-file-ignores]")
    for glob, ignored in settings.per_file_ignores:
        lines.append(f"{json.dumps(glob)} = {json.dumps(list(ignored))}")
    linters = Linters(settings)
    one_file = len(paths) == 1 and Path(paths[0]).is_file()
    if one_file:
        codes = sorted(linters.for_file(Path(paths[0]).absolute()).codes)
        lines.append(f"# rules that run on {paths[0]}: {', '.join(codes) or 'none'}")
    else:
        codes = [rule.code for rule in linters.selected]
        lines.append(f"# rules that run: {', '.join(codes) or 'none'}")
    return "".join(f"{line}\n" for line in lines)
