"""Protocol errors on the wire (issue 30, item 8): a malformed `Content-Length` header and
a body that is not JSON. The real `tapelint server` over stdio, fed raw bytes; every read
is bounded, so a server that stops answering fails the test instead of hanging it."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from tapelint.server.framing import MAX_LENGTH
from tests.server.session import SERVER, TIMEOUT

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"processId": None, "rootUri": None, "capabilities": {}},
}
SHUTDOWN = {"jsonrpc": "2.0", "id": 2, "method": "shutdown"}
EXIT = {"jsonrpc": "2.0", "method": "exit"}


def framed(message: dict[str, Any], *, extra: int = 0) -> bytes:
    """A message as a client sends it; `extra` bytes more in its Content-Length."""
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(body) + extra, body)


class RawServer:
    """`tapelint server` as a subprocess: bytes in, the messages it sends out, one by one."""

    def __init__(self, stderr: IO[bytes]) -> None:
        self.process = subprocess.Popen(
            SERVER, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr
        )
        self._messages: queue.Queue[dict[str, Any] | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def send(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def until_answer(self, msg_id: int) -> list[dict[str, Any]]:
        """Every message the server sends up to its answer to request `msg_id`."""
        received = []
        while True:
            try:
                message = self._messages.get(timeout=TIMEOUT)
            except queue.Empty:
                raise AssertionError(f"no answer to request {msg_id}; got {received}") from None
            assert message is not None, f"the server closed its output; got {received}"
            received.append(message)
            if message.get("id") == msg_id and "method" not in message:
                return received

    def exit_status(self) -> int:
        self.send(framed(EXIT))
        return self.process.wait(timeout=TIMEOUT)

    def _read(self) -> None:
        out = self.process.stdout
        assert out is not None
        while header := out.readline():
            length = 0
            while header.strip():
                name, _, value = header.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
                header = out.readline()
            self._messages.put(json.loads(out.read(length)))
        self._messages.put(None)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RawServer]:
    with (tmp_path / "stderr").open("wb") as stderr:
        started = RawServer(stderr)
        try:
            yield started
        finally:
            if started.process.poll() is None:
                started.process.kill()
                started.process.wait()
            for stream in (started.process.stdin, started.process.stdout):
                assert stream is not None
                stream.close()


def _stderr(tmp_path: Path) -> str:
    return (tmp_path / "stderr").read_text(errors="replace")


def _parse_errors(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in messages if m.get("error", {}).get("code") == -32700]


def test_a_non_numeric_content_length_is_logged_and_the_next_message_is_served(
    server: RawServer, tmp_path: Path
):
    server.send(b"Content-Length: abc\r\n\r\n{}" + framed(INITIALIZE))
    [*_, answer] = server.until_answer(1)
    assert answer["result"]["serverInfo"]["name"] == "tapelint"
    server.send(framed(SHUTDOWN))
    [*_, answer] = server.until_answer(2)
    assert answer["result"] is None
    assert server.exit_status() == 0
    logged = _stderr(tmp_path)
    assert "Content-Length that is not a number: 'abc'" in logged
    assert "skipped 2 bytes" in logged


def test_a_content_length_beyond_memory_is_logged_and_the_next_message_is_served(
    server: RawServer, tmp_path: Path
):
    server.send(b"Content-Length: %d\r\n\r\n{}" % 10**20 + framed(INITIALIZE))
    [*_, answer] = server.until_answer(1)
    assert answer["result"]["serverInfo"]["name"] == "tapelint"
    server.send(framed(SHUTDOWN))
    server.until_answer(2)
    assert server.exit_status() == 0
    assert f"ignored a Content-Length above {MAX_LENGTH}: {10**20}" in _stderr(tmp_path)


def test_a_content_length_one_byte_too_long_loses_the_next_message_only(
    server: RawServer, tmp_path: Path
):
    server.send(framed(INITIALIZE))
    server.until_answer(1)
    # The body takes the next message's first byte: the request after it has no header
    # left and is lost (a client waiting for its answer would wait for ever); the one
    # after that is served.
    first = {"jsonrpc": "2.0", "id": 7, "method": "workspace/symbol", "params": {"query": ""}}
    lost = {"jsonrpc": "2.0", "id": 8, "method": "workspace/symbol", "params": {"query": ""}}
    server.send(framed(first, extra=1) + framed(lost) + framed(SHUTDOWN))
    received = server.until_answer(2)
    responses = [m for m in received if "method" not in m]
    assert [(m["id"], m.get("error", {}).get("code")) for m in responses] == [
        (None, -32700),
        (2, None),
    ]
    assert server.exit_status() == 0
    logged = _stderr(tmp_path)
    assert "not valid JSON" in logged
    assert "without a Content-Length" in logged


def test_a_body_that_is_not_json_gets_a_parse_error_and_the_server_goes_on(
    server: RawServer, tmp_path: Path
):
    server.send(framed(INITIALIZE))
    server.until_answer(1)
    truncated = b'{"jsonrpc": "2.0", "id": 5, "method": "shutdown"'
    server.send(b"Content-Length: %d\r\n\r\n%s" % (len(truncated), truncated))
    server.send(framed(SHUTDOWN))
    received = server.until_answer(2)
    [error] = _parse_errors(received)
    assert error["id"] is None
    assert "not valid JSON" in error["error"]["message"]
    logs = [m["params"] for m in received if m.get("method") == "window/logMessage"]
    assert any("not valid JSON" in log["message"] and log["type"] == 1 for log in logs)
    assert received[-1]["result"] is None  # shutdown is answered after it
    assert server.exit_status() == 0
    logged = _stderr(tmp_path)
    assert "not valid JSON" in logged
    assert "Traceback" not in logged  # one line, not pygls's stack trace


@pytest.mark.parametrize("body", [b"[]", b"null", b'{"id": 5, "method": "shutdown"}'])
def test_json_that_is_no_json_rpc_message_gets_an_invalid_request_error(
    server: RawServer, body: bytes
):
    server.send(framed(INITIALIZE))
    server.until_answer(1)
    server.send(b"Content-Length: %d\r\n\r\n%s" % (len(body), body) + framed(SHUTDOWN))
    received = server.until_answer(2)
    errors = [m for m in received if "error" in m]
    assert [(m["id"], m["error"]["code"]) for m in errors] == [(None, -32600)]
    assert not [m for m in received if m.get("method") == "window/showMessage"]
    assert server.exit_status() == 0
