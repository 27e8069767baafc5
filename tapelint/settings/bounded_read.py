"""Reading a small file tapelint keeps or is configured by (a cache entry, a config file)
without hanging or filling memory, whatever is found at its path.

The file is opened non-blocking and checked once open, as source files are
(`files.read_source`): a FIFO would block the open or the read forever, and a device such
as `/dev/zero` (a symlink to it) never ends. A regular file larger than the limit is not
read at all, and a file that grows past it while being read is not read whole.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path


def read_regular_file(path: Path, limit: int) -> bytes:
    """The bytes of the regular file at `path` (a symlink is followed); OSError when it
    cannot be read, is not a regular file, or holds more than `limit` bytes."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as file:
        status = os.fstat(file.fileno())
        if not stat.S_ISREG(status.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        data = b"" if status.st_size > limit else file.read(limit + 1)
        if status.st_size > limit or len(data) > limit:
            raise OSError(errno.EFBIG, f"larger than {limit:,} bytes", str(path))
        return data
