"""Diagnostics from the real server over stdio: where, when, and equal to the command's."""

from __future__ import annotations

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.cli_helpers import LOSS_OUTSIDE, NOT_RELEASED, UNFILTERED
from tests.server.session import (
    Session,
    as_published,
    cli_findings,
    finish,
    published_key,
    server_config,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

# LOSS_OUTSIDE with the loss moved into the tape's block: nothing to report.
LOSS_INSIDE = LOSS_OUTSIDE.replace(
    "        pred = model(x)\n    loss = tf.reduce_mean(pred)\n",
    "        pred = model(x)\n        loss = tf.reduce_mean(pred)\n",
)
assert LOSS_INSIDE != LOSS_OUTSIDE


@pytest_lsp.fixture(config=server_config(), scope="module")
async def client(lsp_client: LanguageClient, tmp_path_factory: pytest.TempPathFactory):
    await Session.start_shared(lsp_client, tmp_path_factory.mktemp("project"))
    yield
    await finish(lsp_client)


async def test_initialize_says_what_the_server_does(client: LanguageClient):
    result = client.initialize_result
    capabilities = result.capabilities
    assert result.server_info is not None and result.server_info.name == "tapelint"
    sync = capabilities.text_document_sync
    assert isinstance(sync, types.TextDocumentSyncOptions)
    assert sync.change == types.TextDocumentSyncKind.Incremental and sync.open_close
    assert capabilities.notebook_document_sync is not None
    actions = capabilities.code_action_provider
    assert isinstance(actions, types.CodeActionOptions) and actions.resolve_provider
    assert set(actions.code_action_kinds or ()) == {"quickfix", "source.fixAll.tapelint"}
    assert capabilities.hover_provider


async def test_a_bad_file_gets_the_diagnostic_at_its_exact_range(session: Session):
    uri = session.open("train.py", LOSS_OUTSIDE)
    [diagnostic] = await session.diagnostics(uri, version=1)
    assert diagnostic.range == types.Range(types.Position(7, 11), types.Position(7, 57))
    assert (diagnostic.code, diagnostic.source) == ("TAP101", "tapelint")
    assert diagnostic.severity == types.DiagnosticSeverity.Error
    assert diagnostic.message.startswith("`loss` is computed after the `with` block")
    assert diagnostic.code_description is not None
    # The rule's page on the documentation site (tests/test_docs_site.py builds it there).
    href = diagnostic.code_description.href
    assert href == "https://tapelint.readthedocs.io/rules/TAP101/"


@pytest.mark.parametrize(
    "source",
    [LOSS_OUTSIDE, NOT_RELEASED, UNFILTERED, LOSS_INSIDE],
    ids=["TAP101", "TAP103", "TAP401", "clean"],
)
async def test_what_the_server_publishes_is_what_stdin_filename_prints(
    session: Session, source: str
):
    uri = session.open("src/train.py", source)
    published = await session.diagnostics(uri, version=1)
    expected = cli_findings(source, "src/train.py", session.root)
    assert sorted(published_key(d) for d in published) == sorted(map(as_published, expected))


async def test_a_change_that_fixes_the_code_clears_the_diagnostic(session: Session):
    uri = session.open("train.py", LOSS_OUTSIDE)
    assert len(await session.diagnostics(uri, version=1)) == 1
    version = session.change(uri, LOSS_INSIDE)
    assert await session.diagnostics(uri, version=version) == []
    version = session.change(uri, LOSS_OUTSIDE)
    assert [d.code for d in await session.diagnostics(uri, version=version)] == ["TAP101"]
