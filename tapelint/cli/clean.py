"""`tapelint clean`: remove the result cache (see `tapelint.run.cache`).

The cache removed is the one `tapelint check` would use from the current directory: the
`--cache-dir` given (or `TAPELINT_CACHE_DIR`), else the config's `cache-dir`, else
`.tapelint_cache` in the project root. Unlike `ruff clean`, other directories are not
searched for caches. A directory is removed only if tapelint made it, that is if its
`CACHEDIR.TAG` says "created by tapelint": a mistyped `--cache-dir ~` removes nothing.
"""

from __future__ import annotations

import shutil
from pathlib import Path

_OURS = "created by tapelint"


class CleanError(Exception):
    """The directory is not a cache tapelint made, or it could not be removed."""


def remove_cache(directory: Path) -> bool:
    """Remove the cache at `directory`; False when there is none. Raises CleanError."""
    if not directory.exists():
        return False
    tag = directory / "CACHEDIR.TAG"
    try:
        ours = directory.is_dir() and _OURS in tag.read_text(encoding="utf-8", errors="replace")
    except OSError:
        ours = False
    if not ours:
        raise CleanError(
            f"{directory}: not removed: it is not a cache tapelint made (no CACHEDIR.TAG "
            "of tapelint's in it)"
        )
    try:
        shutil.rmtree(directory)
    except OSError as error:
        raise CleanError(f"{directory}: cannot remove: {error.strerror or error}") from None
    return True
