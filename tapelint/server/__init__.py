"""`tapelint server`: a language server, so that editors show tapelint's findings as you
type and fix them from a lightbulb.

Built on pygls and lsprotocol (the `server` extra). Modules, one job each:

- `protocol`: which LSP messages are handled, and by what;
- `framing`: the client's byte stream cut into messages, even after a bad header;
- `messages`: answers to messages pygls alone would drop (bad params, bad JSON);
- `documents`: snapshots of open Python files and notebooks;
- `settings`: each document's project configuration, and the editor's settings on top;
- `linting`: when documents are checked, stale results dropped, what is published;
- `checking`: a check or a fix, the way `tapelint check --stdin-filename` does it;
- `results`, `convert`: diagnostics on the right document, in the client's positions;
- `actions`: quick fixes, `# noqa`, fix all; `docs`: rule documentation (hover, links);
- `projects`: the project index, the parse and the positions kept between checks;
- `collection`: full garbage collections when the editor is idle.

Like `tapelint check`, it never imports TensorFlow.
"""

from __future__ import annotations

import logging
import sys
from typing import BinaryIO, cast

from tapelint.server.framing import FramedInput
from tapelint.server.messages import WithoutParseErrorTraces
from tapelint.server.protocol import build_server


def serve(tcp: tuple[str, int] | None = None) -> int:
    """Serve one client over standard input/output, or on a TCP port. The exit status is
    0 when the client asked for `shutdown` before `exit`, else 1 (as the protocol says)."""
    server = build_server()
    logging.getLogger("pygls.server").addFilter(WithoutParseErrorTraces())
    server.linting.collection.start()
    try:
        if tcp is None:
            # pygls reads standard input only by readline() and read(n), which FramedInput has.
            server.start_io(stdin=cast(BinaryIO, FramedInput(sys.stdin.buffer)))
        else:
            server.start_tcp(*tcp)
    finally:
        server.linting.shutdown()
    return 0 if server.shut_down else 1
