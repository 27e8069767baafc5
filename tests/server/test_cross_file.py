"""What crosses modules reaches the editor: a file is checked with its project's index,
from the buffers of the open documents, and an edit to a helper re-checks the open files
that use it."""

from __future__ import annotations

from pathlib import Path

import pytest
import pytest_lsp
from pytest_lsp import LanguageClient

from tests.server.session import Session, finish, server_config

pytestmark = pytest.mark.asyncio(loop_scope="function")

HELPER = (
    "import tensorflow as tf\n\n\n"
    "def compute_gradients(model, x, y):\n"
    "    with tf.GradientTape() as tape:\n"
    "        loss = tf.reduce_mean(tf.square(model(x, training=True) - y))\n"
    "    return tape.gradient(loss, model.trainable_variables)\n"
)
FILTERING_HELPER = HELPER.replace(
    "    return tape.gradient(loss, model.trainable_variables)\n",
    "    grads = tape.gradient(loss, model.trainable_variables)\n"
    "    return [g for g in grads if g is not None]\n",
)
TRAIN = (
    "from utils import compute_gradients\n\n\n"
    "def fit(model, optimizer, dataset):\n"
    "    for x, y in dataset:\n"
    "        grads = compute_gradients(model, x, y)\n"
    "        optimizer.apply_gradients(zip(grads, model.trainable_variables))\n"
)


@pytest_lsp.fixture(config=server_config())
async def client(lsp_client: LanguageClient):
    yield
    await finish(lsp_client)


async def test_an_edit_to_a_helper_rechecks_the_file_that_uses_it(
    client: LanguageClient, tmp_path: Path
):
    session, _ = await Session.start(client, tmp_path)
    helper = session.open("utils.py", HELPER)
    await session.diagnostics(helper, version=1)
    train = session.open("train.py", TRAIN)
    [finding] = await session.diagnostics(train, version=1)
    assert finding.code == "TAP401"
    assert "`compute_gradients` (utils.py:7)" in finding.message
    [related] = finding.related_information or []
    assert related.location.uri == helper and related.location.range.start.line == 6

    # The helper now filters, in the buffer only (the file on disk still returns the raw
    # gradients): the open file that uses it is checked again, and its finding goes.
    mark = len(session.publications)
    session.change(helper, FILTERING_HELPER)
    cleared = await session.wait_for(lambda p: p.uri == train, since=mark)
    assert list(cleared.diagnostics) == []

    mark = len(session.publications)
    session.change(helper, HELPER)
    again = await session.wait_for(lambda p: p.uri == train, since=mark)
    assert [d.code for d in again.diagnostics] == ["TAP401"]
