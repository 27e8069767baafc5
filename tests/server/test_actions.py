"""Code actions and hover from the real server: applying an action's edit gives what
`tapelint check --fix` prints for the same buffer."""

from __future__ import annotations

from pathlib import Path

import pytest
import pytest_lsp
from click.testing import CliRunner
from lsprotocol import types
from pytest_lsp import LanguageClient

from tapelint.cli import cli as tapelint_cli
from tests.cli_helpers import LOSS_OUTSIDE, PERSISTENT_ONCE, UNFILTERED
from tests.server.session import Session, cli, finish, server_config
from tests.server.sources import TWO_SAFE_ONE_UNSAFE

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_lsp.fixture(config=server_config(), scope="module")
async def client(lsp_client: LanguageClient, tmp_path_factory: pytest.TempPathFactory):
    await Session.start_shared(lsp_client, tmp_path_factory.mktemp("project"))
    yield
    await finish(lsp_client)


def fixed_by_cli(source: str, cwd: Path, *args: str) -> str:
    result = cli(source, "train.py", cwd, "--fix", *args)
    assert result.exit_code in (0, 1), result.stderr
    return result.stdout


async def test_a_safe_fix_is_a_preferred_quick_fix_giving_what_fix_gives(session: Session):
    uri = session.open("train.py", PERSISTENT_ONCE)
    [diagnostic] = await session.diagnostics(uri, version=1)
    actions = await session.code_actions(uri, diagnostic, only=[types.CodeActionKind.QuickFix])
    [fix] = [action for action in actions if action.is_preferred]
    assert fix.kind == types.CodeActionKind.QuickFix and "unsafe" not in fix.title
    assert list(fix.diagnostics) == [diagnostic]
    session.apply(fix.edit)
    assert session.texts[uri] == fixed_by_cli(PERSISTENT_ONCE, session.root)
    assert await session.diagnostics(uri, version=2) == []


async def test_fix_all_is_a_source_action_resolved_to_what_fix_gives(session: Session):
    uri = session.open("train.py", TWO_SAFE_ONE_UNSAFE)
    found = await session.diagnostics(uri, version=1)
    assert sorted(d.code for d in found) == ["TAP102", "TAP103", "TAP401"]
    [action] = await session.code_actions(uri, found[0], only=[types.CodeActionKind.SourceFixAll])
    assert (action.title, action.kind) == (
        "Fix all tapelint problems (safe)",
        "source.fixAll.tapelint",
    )
    assert action.edit is None  # computed when resolved
    resolved = await session.client.code_action_resolve_async(action)
    [change] = resolved.edit.document_changes
    assert change.text_document.version == 1  # refused by an editor whose text moved on
    session.apply(resolved.edit)
    assert session.texts[uri] == fixed_by_cli(TWO_SAFE_ONE_UNSAFE, session.root)
    assert [d.code for d in await session.diagnostics(uri, version=2)] == ["TAP401"]


async def test_no_fix_all_without_a_safe_fix(session: Session):
    uri = session.open("train.py", UNFILTERED)
    [diagnostic] = await session.diagnostics(uri, version=1)
    assert await session.code_actions(uri, diagnostic, only=[types.CodeActionKind.Source]) == []


@pytest.mark.parametrize(
    ("line_end", "with_noqa"),
    [("", "  # noqa: TAP101"), ("  # noqa: E501", "  # noqa: E501, TAP101")],
)
async def test_add_noqa_silences_the_line(session: Session, line_end: str, with_noqa: str):
    source = LOSS_OUTSIDE.replace("trainable_variables)\n", f"trainable_variables){line_end}\n")
    uri = session.open("train.py", source)
    [diagnostic] = await session.diagnostics(uri, version=1)
    [noqa] = await session.code_actions(uri, diagnostic)
    assert noqa.title == "Add `# noqa: TAP101` to line 8"
    session.apply(noqa.edit)
    assert session.texts[uri].splitlines()[7] == (
        "    return tape.gradient(loss, model.trainable_variables)" + with_noqa
    )
    assert await session.diagnostics(uri, version=2) == []


async def test_a_noqa_for_a_line_ending_inside_a_string_goes_where_the_string_ends(
    session: Session,
):
    source = LOSS_OUTSIDE.replace(
        "    return tape.gradient(loss, model.trainable_variables)\n",
        '    return tape.gradient(loss, model.trainable_variables), """\n    notes\n    """\n',
    )
    uri = session.open("train.py", source)
    [diagnostic] = await session.diagnostics(uri, version=1)
    assert diagnostic.code == "TAP101" and diagnostic.range.start.line == 7
    [action] = await session.code_actions(uri, diagnostic)
    assert action.title == "Add `# noqa: TAP101` to line 10"  # as `--add-noqa` writes it
    assert action.edit is not None
    session.apply(action.edit)
    assert session.texts[uri].splitlines()[9] == '    """  # noqa: TAP101'
    assert await session.diagnostics(uri, version=2) == []


async def test_hover_on_a_diagnostic_shows_what_tapelint_rule_prints(session: Session):
    uri = session.open("train.py", LOSS_OUTSIDE)
    [diagnostic] = await session.diagnostics(uri, version=1)
    inside = types.Position(7, diagnostic.range.start.character + 3)
    hover = await session.client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uri), inside)
    )
    rule = CliRunner().invoke(tapelint_cli, ["rule", "TAP101"], catch_exceptions=False)
    assert hover.contents.kind == types.MarkupKind.Markdown
    assert hover.contents.value == rule.stdout.rstrip("\n")
    assert hover.range == diagnostic.range
    elsewhere = types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(0, 0))
    assert await session.client.text_document_hover_async(elsewhere) is None
