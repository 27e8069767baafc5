"""A module whose tests share one server defines a module-scoped `client` fixture that calls
`Session.start_shared`; each of its tests then gets a `session` in a directory of its own."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pytest
from pytest_lsp import LanguageClient

from tests.server.session import Session


@pytest.fixture
def session(client: LanguageClient, request: pytest.FixtureRequest) -> Session:
    prefix = re.sub(r"\W+", "_", request.node.name)[:40]
    root = tempfile.mkdtemp(prefix=prefix, dir=client.shared_root)  # type: ignore[attr-defined]
    return Session(client, Path(root))
