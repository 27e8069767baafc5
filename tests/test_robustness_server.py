"""The language server fed what a client should not send, and a file tapelint fails on
(issue 20): every request is answered as the protocol says, nothing pops up for a
notification it can ignore, and a file it could not check is never shown as clean. The
real `tapelint server` over stdio (pytest-lsp)."""

from __future__ import annotations

import asyncio
import os
import sys
import textwrap
from concurrent.futures import Future
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.cli_helpers import LOSS_OUTSIDE
from tests.server.session import TIMEOUT, Session, finish, make_client, server_config

pytestmark = pytest.mark.asyncio

MARKER = "engine-fails-here"

# `tapelint server` whose engine raises on a document containing MARKER, as a bug would:
# the failure happens inside the check, where the command reports `internal error`.
FAILING_ENGINE_SERVER = textwrap.dedent(
    f"""\
    import sys
    from tapelint.linter.engine import Linter

    original = Linter.analyze_bytes

    def failing(self, data, path, context=None):
        if b"{MARKER}" in data:
            raise RuntimeError("injected")
        return original(self, data, path, context)

    Linter.analyze_bytes = failing
    sys.argv = ["tapelint", "server"]
    from tapelint.cli import main
    main()
    """
)


@pytest_lsp.fixture(config=server_config())
async def client(lsp_client: LanguageClient):
    yield
    await finish(lsp_client)


@pytest_lsp.fixture(
    config=ClientServerConfig(
        server_command=[sys.executable, "-c", FAILING_ENGINE_SERVER],
        client_factory=make_client,
        server_env=dict(os.environ),
    )
)
async def failing(lsp_client: LanguageClient):
    yield
    await finish(lsp_client)


def _shown_errors(client: LanguageClient) -> list[str]:
    return [m.message for m in client.messages if m.type == types.MessageType.Error]


async def _logged(client: LanguageClient, text: str) -> types.LogMessageParams:
    deadline = asyncio.get_running_loop().time() + TIMEOUT
    while True:
        for message in client.log_messages:
            if text in message.message:
                return message
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError(f"not logged: {text!r}; got {client.log_messages}")
        await asyncio.sleep(0.01)


async def test_a_file_the_check_fails_on_is_logged_as_an_internal_error_not_shown_clean(
    failing: LanguageClient, tmp_path: Path
):
    session, _ = await Session.start(failing, tmp_path)
    broken = session.open("broken.py", LOSS_OUTSIDE + f"# {MARKER}\n")
    other = session.open("train.py", LOSS_OUTSIDE)
    assert [d.code for d in await session.diagnostics(other, version=1)] == ["TAP101"]
    logged = await _logged(failing, f"internal error while checking {broken}")
    assert logged.type == types.MessageType.Error
    assert "broken.py: internal error: RuntimeError: injected" in logged.message


async def test_a_request_with_invalid_params_gets_an_invalid_params_error(
    client: LanguageClient, tmp_path: Path
):
    await Session.start(client, tmp_path)
    # The client would not send such params: the message goes out as it is, and its answer
    # is awaited as the client awaits any (pygls's own bookkeeping of requests).
    answer: Future = Future()
    client.protocol._request_futures["bad-hover"] = answer
    client.protocol._send_data(
        {
            "jsonrpc": "2.0",
            "id": "bad-hover",
            "method": types.TEXT_DOCUMENT_HOVER,
            "params": {"nonsense": 1},
        }
    )
    with pytest.raises(JsonRpcException) as raised:
        await asyncio.wait_for(asyncio.wrap_future(answer), TIMEOUT)
    assert raised.value.code == -32602  # InvalidParams
    session = Session(client, tmp_path)  # and the server goes on
    uri = session.open("train.py", LOSS_OUTSIDE)
    assert [d.code for d in await session.diagnostics(uri, version=1)] == ["TAP101"]


async def test_a_request_after_shutdown_gets_an_invalid_request_error(
    client: LanguageClient, tmp_path: Path
):
    session, _ = await Session.start(client, tmp_path)
    uri = session.open("train.py", LOSS_OUTSIDE)
    await session.diagnostics(uri, version=1)
    await asyncio.wait_for(client.shutdown_async(None), TIMEOUT)
    hover = types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=types.Position(line=7, character=12),
    )
    with pytest.raises(JsonRpcException) as raised:
        await asyncio.wait_for(client.text_document_hover_async(hover), TIMEOUT)
    assert raised.value.code == -32600  # InvalidRequest
    client.exit(None)
    assert client._server is not None
    assert await asyncio.wait_for(client._server.wait(), TIMEOUT) == 0


async def test_a_change_to_a_document_never_opened_is_logged_and_ignored(
    client: LanguageClient, tmp_path: Path
):
    session, _ = await Session.start(client, tmp_path)
    never_opened = (tmp_path / "ghost.py").as_uri()
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=never_opened, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text="x = 1\n")],
        )
    )
    await _logged(client, f"ignored a change to {never_opened}, which is not open")
    uri = session.open("train.py", LOSS_OUTSIDE)
    assert [d.code for d in await session.diagnostics(uri, version=1)] == ["TAP101"]
    assert _shown_errors(client) == []


async def test_a_uri_with_an_encoded_nul_byte_is_checked_as_a_buffer(
    client: LanguageClient, tmp_path: Path
):
    session, _ = await Session.start(client, tmp_path)
    uri = tmp_path.as_uri() + "/odd%00name.py"
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="python", version=1, text=LOSS_OUTSIDE
            )
        )
    )
    assert [d.code for d in await session.diagnostics(uri, version=1)] == ["TAP101"]
    errors = [m for m in client.log_messages if m.type == types.MessageType.Error]
    assert errors == []
    assert _shown_errors(client) == []
