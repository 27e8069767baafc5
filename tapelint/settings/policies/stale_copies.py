"""Files that are older copies of a file of the project, which a walk leaves out.

A repository often keeps the previous version of a module beside it, or in a folder of old
code: `training_BACKUP.py` next to `training.py`, `train_old.py` next to `train.py`,
`Copy of lesson.ipynb` or `lesson (1).ipynb` next to `lesson.ipynb`, `archive/models.py`
under a package that has its own `models.py`. Nothing imports them; their findings repeat
or predate the live file's, and the owner would not fix them. A file counts as a stale copy
only when both hold: its name or folder says it is a copy, and the file it copies exists.
A file named on the command line is still checked (see `tapelint.sources.discovery`), and
`skip-older-copies = false` checks them all.
"""

from __future__ import annotations

import os
import re

# `training_BACKUP`, `train_old`, `model-copy2`, `model copy`, `net.bak`
_COPY_SUFFIX = re.compile(r"^(?P<base>.+?)[ _.-](?:backup|bak|old|copy)\d*$", re.IGNORECASE)
# `Copy of lesson`, `lesson (1)`: how Colab and browsers name a second copy
_COPY_OF = re.compile(r"^copy of (?P<base>.+)$", re.IGNORECASE)
_DOWNLOAD_COPY = re.compile(r"^(?P<base>.+?) \(\d+\)$")
# Folders of old code, whose files copy a file of the folder that holds them.
_ARCHIVE_FOLDERS = frozenset(
    {"archive", "archived", "archives", "old", "backup", "backups", "deprecated", "attic"}
)


def copied_file(path: str) -> str | None:
    """The file that the file at `path` is an older copy of (see the module), or None."""
    directory, name = os.path.split(path)
    stem, suffix = os.path.splitext(name)
    for pattern in (_COPY_SUFFIX, _COPY_OF, _DOWNLOAD_COPY):
        match = pattern.match(stem)
        if match:
            original = os.path.join(directory, match["base"] + suffix)
            if os.path.isfile(original):
                return original
    return _archived(directory, name)


def _archived(directory: str, name: str) -> str | None:
    """The file that a folder of old code on the way to the file holds a copy of: the one
    its parent holds at the same place (`pkg/models.py` for `pkg/archive/models.py`)."""
    below = [name]
    while True:
        parent, folder = os.path.split(directory)
        if not folder or parent == directory:
            return None
        original = os.path.join(parent, *below)
        if folder.lower() in _ARCHIVE_FOLDERS and os.path.isfile(original):
            return original
        below.insert(0, folder)
        directory = parent
