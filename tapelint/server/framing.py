"""The client's byte stream, cut into messages even when a header is wrong (decisions).

pygls reads standard input through any object with `readline` and `read` (the `stdin`
argument of `start_io`), and only takes a header line that is exactly
`Content-Length: <digits>`. After a bad header, or a Content-Length longer than its body,
the next header no longer starts a line (a body has no line end), so pygls never finds
one again: the server hears nothing more, `shutdown` and `exit` included.

`FramedInput` stands between the two: it reads each header block itself and hands pygls
only a clean `Content-Length` line and the blank line after it, then the body as sent.

- A Content-Length that is not a decimal number is logged; so is a header block that ends
  without one. The body that follows cannot be measured: everything up to the next
  `Content-Length:`, wherever it starts in a line, is skipped (and the count logged).
- A Content-Length too long takes the first bytes of the next message into its body: that
  body is not JSON (answered with a parse error, see `messages`), the next message has no
  header left and is lost, and the one after it is read as usual.
- A Content-Length of 0 is logged and ignored (there is no message to answer); one above
  `MAX_LENGTH` is logged and handled as one that is not a number (pygls would ask for
  that much memory at once, and end).

Problems go to standard error, which every editor keeps in its log of the server: the
client's own framing is what went wrong, so nothing is sent to it from here.
"""

from __future__ import annotations

import logging
import re
from typing import BinaryIO

logger = logging.getLogger(__name__)

_CONTENT_LENGTH = re.compile(rb"content-length:[ \t]*", re.IGNORECASE)
MAX_LENGTH = 1 << 30  # bytes: far above any document an editor sends
_PIECE = 1 << 20  # bytes read at a time, so memory grows with what came, not what was announced


class FramedInput:
    """Standard input as pygls reads it: well-formed header blocks only."""

    def __init__(self, raw: BinaryIO) -> None:
        self._raw = raw
        self._blank_line_next = False

    def readline(self) -> bytes:
        if self._blank_line_next:
            self._blank_line_next = False
            return b"\r\n"
        length = self._next_length()
        if length is None:
            return b""  # end of input
        self._blank_line_next = True
        return b"Content-Length: %d\r\n" % length

    def read(self, size: int) -> bytes:
        pieces = []
        while size > 0 and (piece := self._raw.read(min(size, _PIECE))):
            pieces.append(piece)
            size -= len(piece)
        return b"".join(pieces)

    def _next_length(self) -> int | None:
        """The next message's Content-Length, once its header block has ended; None at the
        end of the input."""
        length: int | None = None
        in_block = False  # a header line was read since the last message
        header_seen = False  # a Content-Length line, usable or not, in this block
        skipping = False  # after a block without a usable length: up to the next header
        skipped = 0
        while line := self._raw.readline():
            found = _CONTENT_LENGTH.search(line)
            if found is None:
                if skipping:
                    skipped += len(line)
                elif line.strip():
                    in_block = True  # another header (Content-Type), or a broken one
                elif length is not None:
                    return length
                elif in_block:
                    if not header_seen:
                        logger.warning(
                            "tapelint: a message header without a Content-Length: skipping "
                            "to the next Content-Length header"
                        )
                    skipping = True
                continue
            skipped += found.start()
            if skipped:
                logger.warning(
                    "tapelint: skipped %d bytes that were not a message, up to the next "
                    "Content-Length header",
                    skipped,
                )
            in_block, header_seen, skipping, skipped = True, True, False, 0
            length = _length(line[found.end() :].strip())
        if skipped:
            logger.warning("tapelint: skipped %d bytes at the end of the input", skipped)
        return None


def _length(value: bytes) -> int | None:
    """A Content-Length value; None (logged) when it is no message's length."""
    if not value.isdigit():
        logger.warning(
            "tapelint: ignored a Content-Length that is not a number: %r",
            value.decode("utf-8", "replace"),
        )
        return None
    length = int(value)
    if length == 0:
        logger.warning("tapelint: ignored an empty message (Content-Length: 0)")
        return None
    if length > MAX_LENGTH:
        logger.warning("tapelint: ignored a Content-Length above %d: %d", MAX_LENGTH, length)
        return None
    return length
