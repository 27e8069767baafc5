"""Messages pygls alone would leave unanswered or turn into an error pop-up (decisions):

- A request whose params do not fit its method gets the error response InvalidParams
  (pygls drops the message: the client would wait for an answer forever). A notification
  with such params is logged and ignored (a notification has no answer).
- A request after `shutdown` gets the error response InvalidRequest, as the protocol says
  (pygls drops it). Notifications after `shutdown` are ignored; `exit` still ends the server.
- `textDocument/didChange` for a document that is not open is logged (window/logMessage)
  and ignored: the client and the server disagree about what is open, which is not worth
  an error message in the user's face (pygls shows one).
"""

from __future__ import annotations

import logging
from collections.abc import Generator
from typing import Any
from urllib.parse import unquote

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidRequest
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

logger = logging.getLogger(__name__)


class _Answered:
    """Stands for a message already answered (or ignored) while it was read."""

    jsonrpc = None


_ANSWERED = _Answered()


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
        if (
            self._shutdown
            and getattr(message, "method", types.EXIT) != types.EXIT
            and getattr(message, "id", None) is not None
        ):
            self._answer_error(message.id, JsonRpcInvalidRequest("the server is shut down"))
            return
        super().handle_message(message)

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
