"""The server stays up: unparsable files, internal errors, shutdown and exit."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from tapelint.server.checking import FAULT_VARIABLE
from tests.cli_helpers import LOSS_OUTSIDE
from tests.server.session import (
    SERVER,
    TIMEOUT,
    Session,
    as_published,
    cli_findings,
    finish,
    make_client,
    published_key,
    server_config,
)

pytestmark = pytest.mark.asyncio

UNPARSABLE = "import tensorflow as tf\n\nwith tf.GradientTape() as tape:\n    loss = (1 +\n"
# A marker only tests use: the server's checking path raises an internal error on a
# document containing it (see tapelint.server.checking.FAULT_VARIABLE).
FAULT = "tapelint-test-fault-marker"


@pytest_lsp.fixture(config=server_config())
async def client(lsp_client: LanguageClient):
    yield
    await finish(lsp_client)


@pytest_lsp.fixture(config=server_config({FAULT_VARIABLE: FAULT}))
async def faulty(lsp_client: LanguageClient):
    yield
    await finish(lsp_client)


async def test_an_unparsable_file_is_tap001_where_the_command_says(
    client: LanguageClient, tmp_path: Path
):
    session, _ = await Session.start(client, tmp_path)
    uri = session.open("broken.py", UNPARSABLE)
    [diagnostic] = await session.diagnostics(uri, version=1)
    [expected] = cli_findings(UNPARSABLE, "broken.py", tmp_path)
    assert diagnostic.code == "TAP001"
    assert published_key(diagnostic) == as_published(expected)
    good = session.open("train.py", LOSS_OUTSIDE)
    assert [d.code for d in await session.diagnostics(good, version=1)] == ["TAP101"]
    version = session.change(uri, UNPARSABLE + "        2)\n")
    assert await session.diagnostics(uri, version=version) == []


async def test_an_internal_error_in_one_file_is_logged_and_the_others_are_served(
    faulty: LanguageClient, tmp_path: Path
):
    session, _ = await Session.start(faulty, tmp_path)
    crashing = session.open("crashing.py", LOSS_OUTSIDE + f"# {FAULT}\n")
    other = session.open("train.py", LOSS_OUTSIDE)
    assert [d.code for d in await session.diagnostics(other, version=1)] == ["TAP101"]
    assert await session.diagnostics(crashing) == []
    [error] = [m for m in faulty.log_messages if m.type == types.MessageType.Error]
    assert f"internal error while checking {crashing}" in error.message
    assert "CheckFault" in error.message and "Traceback" in error.message

    version = session.change(other, LOSS_OUTSIDE.replace("loss", "cost"))
    assert [d.code for d in await session.diagnostics(other, version=version)] == ["TAP101"]
    version = session.change(crashing, LOSS_OUTSIDE)
    assert [d.code for d in await session.diagnostics(crashing, version=version)] == ["TAP101"]
    assert any("is checked again" in m.message for m in faulty.log_messages)


async def test_shutdown_then_exit_ends_the_process_with_status_0(
    client: LanguageClient, tmp_path: Path
):
    session, _ = await Session.start(client, tmp_path)
    uri = session.open("train.py", LOSS_OUTSIDE)
    await session.diagnostics(uri, version=1)
    await client.shutdown_session()
    assert client._server is not None
    assert await asyncio.wait_for(client._server.wait(), 30) == 0


async def test_exit_without_shutdown_ends_the_process_with_status_1(
    client: LanguageClient, tmp_path: Path
):
    await Session.start(client, tmp_path)
    client.exit(None)
    assert client._server is not None
    assert await asyncio.wait_for(client._server.wait(), 30) == 1


async def test_tcp(tmp_path: Path):
    """`tapelint server --tcp` serves one client on a port, then exits after `exit`."""
    with socket.socket() as probe:  # a free port
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = await asyncio.create_subprocess_exec(
        *SERVER, "--tcp", "--port", str(port), stderr=asyncio.subprocess.DEVNULL
    )
    try:
        client = make_client()
        deadline = asyncio.get_running_loop().time() + TIMEOUT
        while True:
            try:
                await client.start_tcp("127.0.0.1", port)
                break
            except OSError:
                if asyncio.get_running_loop().time() > deadline:
                    raise
                await asyncio.sleep(0.1)
        session, result = await Session.start(client, tmp_path)
        assert result.server_info is not None and result.server_info.name == "tapelint"
        uri = session.open("train.py", LOSS_OUTSIDE)
        assert [d.code for d in await session.diagnostics(uri, version=1)] == ["TAP101"]
        await client.shutdown_async(None)
        client.exit(None)
        assert await asyncio.wait_for(server.wait(), TIMEOUT) == 0
    finally:
        if server.returncode is None:
            server.kill()
            await server.wait()
