"""Notebooks over LSP 3.17 notebook document sync: each diagnostic on its cell's document,
at the cell's own line, as `tapelint check` reports it for the same `.ipynb`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.server.session import (
    Session,
    as_published,
    cli_findings,
    finish,
    published_key,
    server_config,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

SETUP = (
    "import tensorflow as tf\n"
    "\n"
    "model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n"
    "x = tf.random.normal((32, 8))\n"
    "with tf.GradientTape() as tape:\n"
    "    pred = model(x, training=True)\n"
)
STEP = "loss = tf.reduce_mean(pred)\ngrads = tape.gradient(loss, model.trainable_variables)\n"


@pytest_lsp.fixture(config=server_config(), scope="module")
async def client(lsp_client: LanguageClient, tmp_path_factory: pytest.TempPathFactory):
    await Session.start_shared(lsp_client, tmp_path_factory.mktemp("project"))
    yield
    await finish(lsp_client)


def open_notebook(session: Session, path: Path, sources: list[str]) -> tuple[str, list[str]]:
    uri = path.as_uri()
    cells = [f"vscode-notebook-cell:{path}#cell{n}" for n in range(len(sources))]
    session.client.notebook_document_did_open(
        types.DidOpenNotebookDocumentParams(
            notebook_document=types.NotebookDocument(
                uri=uri,
                notebook_type="jupyter-notebook",
                version=1,
                cells=[types.NotebookCell(types.NotebookCellKind.Code, cell) for cell in cells],
            ),
            cell_text_documents=[
                types.TextDocumentItem(uri=cell, language_id="python", version=1, text=text)
                for cell, text in zip(cells, sources, strict=True)
            ],
        )
    )
    return uri, cells


def change_cell(session: Session, notebook: str, version: int, cell: str, text: str) -> None:
    session.client.notebook_document_did_change(
        types.DidChangeNotebookDocumentParams(
            notebook_document=types.VersionedNotebookDocumentIdentifier(
                version=version, uri=notebook
            ),
            change=types.NotebookDocumentChangeEvent(
                cells=types.NotebookDocumentCellChanges(
                    text_content=[
                        types.NotebookDocumentCellContentChanges(
                            document=types.VersionedTextDocumentIdentifier(
                                version=version, uri=cell
                            ),
                            changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
                        )
                    ]
                )
            ),
        )
    )


def as_ipynb(sources: list[str]) -> str:
    cells = [
        {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": s}
        for s in sources
    ]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


async def test_a_diagnostic_is_on_its_cell_at_the_cells_own_line(session: Session):
    sources = [SETUP, STEP]
    _, [first, second] = open_notebook(session, session.root / "train.ipynb", sources)
    [diagnostic] = await session.diagnostics(second)
    assert await session.diagnostics(first) == []
    assert diagnostic.code == "TAP101" and diagnostic.range.start.line == 1

    [expected] = cli_findings(as_ipynb(sources), "train.ipynb", session.root)
    assert expected["cell"] == 2
    assert published_key(diagnostic) == as_published(expected)


async def test_a_change_in_one_cell_updates_another_cells_diagnostics(session: Session):
    loss_inside = SETUP + "    loss = tf.reduce_mean(pred)\n"
    gradient = "grads = tape.gradient(loss, model.trainable_variables)\n"
    path = session.root / "train.ipynb"
    notebook, [first, second] = open_notebook(session, path, [loss_inside, gradient])
    assert await session.diagnostics(second) == []
    mark = len(session.publications)
    loss_after = SETUP + "loss = tf.reduce_mean(pred)\n"
    change_cell(session, notebook, 2, first, loss_after)
    [diagnostic] = await session.diagnostics(second, since=mark)
    assert (diagnostic.code, diagnostic.range.start.line) == ("TAP101", 0)
    assert await session.diagnostics(first, since=mark) == []


async def test_hover_and_noqa_in_a_cell(session: Session):
    _, [_, second] = open_notebook(session, session.root / "train.ipynb", [SETUP, STEP])
    [diagnostic] = await session.diagnostics(second)
    hover = await session.client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(second), diagnostic.range.start)
    )
    assert hover.contents.value.startswith("TAP101 loss-outside-tape")
    [noqa] = await session.code_actions(second, diagnostic)
    [change] = noqa.edit.document_changes
    assert change.text_document.uri == second
    [edit] = change.edits
    assert edit.range.start.line == 1
    assert edit.new_text == STEP.splitlines()[1] + "  # noqa: TAP101"


async def test_jupyterlabs_virtual_document_is_checked_as_its_notebook(session: Session):
    """jupyterlab-lsp sends a notebook's code cells joined as one Python text document under
    `.virtual_documents/` (which projects often ignore in git)."""
    (session.root / ".gitignore").write_text(".virtual_documents/\n")
    code = SETUP + "\n\n" + STEP
    uri = session.open(".virtual_documents/train.ipynb", code)
    [diagnostic] = await session.diagnostics(uri, version=1)
    [expected] = cli_findings(as_ipynb([code]), "train.ipynb", session.root)
    assert published_key(diagnostic) == as_published(expected)
    assert diagnostic.range.start.line == len(SETUP.splitlines()) + 3
