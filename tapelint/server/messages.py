"""Messages pygls alone would leave unanswered or turn into an error pop-up (decisions):

- A request whose params do not fit its method gets the error response InvalidParams
  (pygls drops the message: the client would wait for an answer forever). A notification
  with such params is logged and ignored (a notification has no answer).
- A request after `shutdown` gets the error response InvalidRequest, as the protocol says
  (pygls drops it). Notifications after `shutdown` are ignored; `exit` still ends the server.
- `textDocument/didChange` for a document that is not open is logged (window/logMessage)
  and ignored: the client and the server disagree about what is open, which is not worth
  an error message in the user's face (pygls shows one).
- A body that is not JSON (or not UTF-8) is answered with the error response ParseError,
  and JSON that is no JSON-RPC message (an array, `null`, an object without `jsonrpc`)
  with InvalidRequest, both with id null as JSON-RPC says, and logged in one line to
  standard error and window/logMessage (pygls's stack trace or error pop-up left out).
  Framing errors before the body are handled in `framing`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Generator
from typing import Any
from urllib.parse import unquote

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidRequest, JsonRpcParseError
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

logger = logging.getLogger(__name__)


class _Answered:
    """Stands for a message already answered (or ignored) while it was read."""

    jsonrpc = None


_ANSWERED = _Answered()

# What reading a body that is not JSON raises (json.loads decodes bytes itself).
UNPARSABLE = (json.JSONDecodeError, UnicodeDecodeError)


class WithoutParseErrorTraces(logging.Filter):
    """Drops pygls's record of a body that is not JSON: `answer_parse_error` logs it."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], UNPARSABLE))


class TapelintProtocol(LanguageServerProtocol):
    def structure_message(self, data: dict[str, Any]) -> Any:
        try:
            return super().structure_message(data)
        except JsonRpcException as error:
            if "id" in data and "method" in data:
                self._answer_error(data["id"], error)
            else:
                logger.warning("ignored %s with invalid params", data.get("method", "a message"))
            return _ANSWERED

    def handle_message(self, message: Any) -> None:
        if message is _ANSWERED:
            return
        if getattr(message, "jsonrpc", None) is None:
            self._answer_unreadable(JsonRpcInvalidRequest("not a JSON-RPC message"))
            return
        if (
            self._shutdown
            and getattr(message, "method", types.EXIT) != types.EXIT
            and getattr(message, "id", None) is not None
        ):
            self._answer_error(message.id, JsonRpcInvalidRequest("the server is shut down"))
            return
        super().handle_message(message)

    def answer_parse_error(self, error: ValueError) -> None:
        self._answer_unreadable(JsonRpcParseError(f"not valid JSON: {error}"))

    def _answer_unreadable(self, error: JsonRpcException) -> None:
        """Log a message that cannot be read as a request, and answer it with id null."""
        message = f"tapelint: a message from the client is {error.message}"
        logger.warning("%s", message)
        self._server.window_log_message(
            types.LogMessageParams(type=types.MessageType.Error, message=message)
        )
        # As a plain dict: lsprotocol's converter would leave out an id that is None.
        self._send_data(
            {
                "jsonrpc": self.VERSION,
                "id": None,
                "error": {"code": error.code, "message": error.message},
            }
        )

    def _answer_error(self, msg_id: Any, error: JsonRpcException) -> None:
        self._send_response(
            msg_id, error=types.ResponseError(code=error.code, message=error.message)
        )

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(
        self, params: types.DidChangeTextDocumentParams
    ) -> Generator[Any, Any, None]:
        uri = params.text_document.uri
        if unquote(uri) not in self.workspace.text_documents:  # pygls's keys are unquoted
            self._server.window_log_message(
                types.LogMessageParams(
                    type=types.MessageType.Warning,
                    message=f"tapelint: ignored a change to {uri}, which is not open",
                )
            )
            return
        yield from super().lsp_text_document__did_change(params)
