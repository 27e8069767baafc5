"""Configuration as the command reads it, picked up without a restart; the editor's settings
on top; and when documents are checked again (other files of the project, stale versions)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.cli_helpers import LOSS_OUTSIDE, PERSISTENT_ONCE, UNFILTERED
from tests.server.session import (
    TIMEOUT,
    Session,
    apply_edits,
    as_published,
    cli,
    cli_findings,
    finish,
    published_key,
    server_config,
)
from tests.server.sources import TWO_SAFE_ONE_UNSAFE

pytestmark = pytest.mark.asyncio

# TAP101 at line 8 and TAP401 at line 16.
TWO_FINDINGS = LOSS_OUTSIDE + "\n\n" + UNFILTERED.replace("import tensorflow as tf\n", "")


@pytest_lsp.fixture(config=server_config())
async def client(lsp_client: LanguageClient):
    yield
    await finish(lsp_client)


def codes(diagnostics: list[types.Diagnostic]) -> list[str]:
    return sorted(str(d.code) for d in diagnostics)


def config_changed(session: Session, path: Path) -> None:
    session.client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(
            changes=[types.FileEvent(uri=path.as_uri(), type=types.FileChangeType.Changed)]
        )
    )


async def test_config_files_are_watched(client: LanguageClient, tmp_path: Path):
    await Session.start(client, tmp_path)
    deadline = asyncio.get_running_loop().time() + TIMEOUT
    while not client.registrations and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.01)
    [registration] = client.registrations
    assert registration.method == types.WORKSPACE_DID_CHANGE_WATCHED_FILES
    globs = [w["globPattern"] for w in registration.register_options["watchers"]]
    assert globs == ["**/pyproject.toml", "**/tapelint.toml", "**/.gitignore"]


async def test_a_config_change_applies_without_a_restart(client: LanguageClient, tmp_path: Path):
    session, _ = await Session.start(client, tmp_path)
    uri = session.open("train.py", TWO_FINDINGS)
    assert codes(await session.diagnostics(uri, version=1)) == ["TAP101", "TAP401"]

    config = tmp_path / "pyproject.toml"
    config.write_text('[tool.tapelint]\nignore = ["TAP101"]\n', encoding="utf-8")
    mark = len(session.publications)
    config_changed(session, config)
    assert codes(await session.diagnostics(uri, since=mark)) == ["TAP401"]

    # Without a notification (a client that cannot watch files): the next check re-reads it.
    config.write_text('[tool.tapelint]\nignore = ["TAP401"]\n', encoding="utf-8")
    version = session.change(uri, TWO_FINDINGS + "\n")
    found = await session.diagnostics(uri, version=version)
    assert codes(found) == ["TAP101"]
    expected = cli_findings(TWO_FINDINGS + "\n", "train.py", tmp_path)
    assert [published_key(d) for d in found] == [as_published(f) for f in expected]


async def test_per_file_ignores_and_excludes_apply_as_for_the_command(
    client: LanguageClient, tmp_path: Path
):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.tapelint]\nextend-exclude = ["generated/"]\n'
        'per-file-ignores = { "scripts/**" = ["TAP101"] }\n',
        encoding="utf-8",
    )
    session, _ = await Session.start(client, tmp_path)
    for name, expected_codes in [
        ("src/train.py", ["TAP101", "TAP401"]),
        ("scripts/train.py", ["TAP401"]),
        ("generated/train.py", []),
    ]:
        uri = session.open(name, TWO_FINDINGS)
        found = await session.diagnostics(uri, version=1)
        assert codes(found) == expected_codes, name
        expected = cli_findings(TWO_FINDINGS, name, tmp_path)
        assert sorted(map(published_key, found)) == sorted(map(as_published, expected))


async def test_a_subprojects_tapelint_toml_applies_as_for_the_command(
    client: LanguageClient, tmp_path: Path
):
    """The issue's monorepo: the workspace is the root; pkgA's own config ignores TAP101."""
    (tmp_path / "pyproject.toml").write_text("[tool.tapelint]\n", encoding="utf-8")
    (tmp_path / "pkgA").mkdir()
    (tmp_path / "pkgA" / "tapelint.toml").write_text('ignore = ["TAP101"]\n', encoding="utf-8")
    session, _ = await Session.start(client, tmp_path)
    for name, expected_codes in [("pkgA/train.py", ["TAP401"]), ("train.py", ["TAP101", "TAP401"])]:
        uri = session.open(name, TWO_FINDINGS)
        found = await session.diagnostics(uri, version=1)
        assert codes(found) == expected_codes, name
        # The command, run at the root, says the same of this file.
        run = cli(TWO_FINDINGS, name, tmp_path, "--output-format", "json")
        expected = [f for f in json.loads(run.stdout) if f["path"] == name]
        assert sorted(map(published_key, found)) == sorted(map(as_published, expected))


async def test_an_unusable_config_is_reported_and_the_defaults_apply(
    client: LanguageClient, tmp_path: Path
):
    (tmp_path / "pyproject.toml").write_text('[tool.tapelint]\nselect = "TAP101"\n')
    session, _ = await Session.start(client, tmp_path)
    uri = session.open("train.py", TWO_FINDINGS)
    assert codes(await session.diagnostics(uri, version=1)) == ["TAP101", "TAP401"]
    [shown] = client.messages
    assert shown.type == types.MessageType.Warning
    assert "tool.tapelint.select: expected a list of strings" in shown.message


async def test_editor_settings_override_select_and_ignore(client: LanguageClient, tmp_path: Path):
    session, _ = await Session.start(client, tmp_path, options={"ignore": ["TAP101"]})
    uri = session.open("train.py", TWO_FINDINGS)
    assert codes(await session.diagnostics(uri, version=1)) == ["TAP401"]

    mark = len(session.publications)
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"tapelint": {"select": ["TAP101"]}})
    )
    found = await session.diagnostics(uri, since=mark)
    assert codes(found) == []  # select TAP101, and still the initial ignore TAP101

    mark = len(session.publications)
    client.set_configuration({"select": ["loss-outside-tape"], "ignore": []}, section="tapelint")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    found = await session.diagnostics(uri, since=mark)
    assert codes(found) == ["TAP101"]
    expected = cli(TWO_FINDINGS, "train.py", tmp_path, "--select", "loss-outside-tape")
    assert expected.exit_code == 1 and [c for _, c in expected.codes()] == ["TAP101"]


async def test_a_wrong_editor_setting_is_reported_and_left_out(
    client: LanguageClient, tmp_path: Path
):
    session, _ = await Session.start(client, tmp_path, options={"select": ["TAP9"], "preview": 1})
    uri = session.open("train.py", TWO_FINDINGS)
    assert codes(await session.diagnostics(uri, version=1)) == ["TAP101", "TAP401"]
    messages = sorted(m.message for m in client.messages)
    assert messages == [
        "tapelint settings: preview: expected true or false",
        "tapelint settings: select: unknown rule selector 'TAP9'; expected a rule code (TAP101), "
        "a code prefix (TAP1), a rule name (loss-outside-tape) or ALL",
    ]


async def test_an_unsafe_fix_is_offered_only_when_the_settings_allow_it(
    client: LanguageClient, tmp_path: Path
):
    session, _ = await Session.start(client, tmp_path)
    uri = session.open("train.py", UNFILTERED)
    [diagnostic] = await session.diagnostics(uri, version=1)
    titles = [a.title for a in await session.code_actions(uri, diagnostic)]
    assert titles == ["Add `# noqa: TAP401` to line 8"]

    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"tapelint": {"unsafeFixes": True}})
    )
    actions = await session.code_actions(uri, diagnostic)
    [unsafe] = [action for action in actions if "noqa" not in action.title]
    assert unsafe.title.endswith("(TAP401) (unsafe)") and not unsafe.is_preferred
    session.apply(unsafe.edit)
    assert (
        session.texts[uri]
        == cli(UNFILTERED, "train.py", tmp_path, "--fix", "--unsafe-fixes").stdout
    )


async def test_fix_all_comes_with_its_edit_for_a_client_that_cannot_resolve(
    client: LanguageClient, tmp_path: Path
):
    session, _ = await Session.start(client, tmp_path, basic=True)
    uri = session.open("train.py", TWO_SAFE_ONE_UNSAFE)
    found = await session.diagnostics(uri, version=1)
    [action] = await session.code_actions(uri, found[0], only=[types.CodeActionKind.Source])
    assert action.edit.changes is not None  # the client takes no versioned edits
    session.apply(action.edit)
    assert session.texts[uri] == cli(TWO_SAFE_ONE_UNSAFE, "train.py", tmp_path, "--fix").stdout


async def test_a_change_to_one_file_rechecks_the_other_open_files_of_its_project(
    client: LanguageClient, tmp_path: Path
):
    session, _ = await Session.start(client, tmp_path, trace=types.TraceValue.Verbose)
    helper = session.open("helpers.py", LOSS_OUTSIDE)
    # Opened before `user`: rechecked, it would be rechecked before it (open order).
    elsewhere = Session(client, tmp_path.parent).open(f"{tmp_path.name}-other/x.py", UNFILTERED)
    user = session.open("train.py", UNFILTERED)
    for uri in (helper, elsewhere, user):
        await session.diagnostics(uri, version=1)
    (tmp_path / "pyproject.toml").write_text("[tool.tapelint]\n")  # the project's root
    mark = len(client.traces)
    config_changed(session, tmp_path / "pyproject.toml")
    await _traced(client, f"checked {user} version 1:", mark)  # the last one rechecked

    mark = len(client.traces)
    session.change(helper, LOSS_OUTSIDE + "\n")
    rechecked = await _traced(client, f"checked {user} version 1:", mark)
    assert "unchanged (same text and settings)" in rechecked
    assert not [t for t in client.traces[mark:] if t.startswith(f"checked {elsewhere} ")]


async def _traced(client: LanguageClient, start: str, since: int) -> str:
    deadline = asyncio.get_running_loop().time() + TIMEOUT
    while asyncio.get_running_loop().time() < deadline:
        for trace in client.traces[since:]:
            if trace.startswith(start):
                return trace
        await asyncio.sleep(0.01)
    raise TimeoutError(f"no trace {start!r} in {client.traces[since:]}")


async def test_each_publication_is_for_the_text_of_its_version(
    client: LanguageClient, tmp_path: Path
):
    session, _ = await Session.start(client, tmp_path)
    uri = session.open("train.py", LOSS_OUTSIDE)
    await session.diagnostics(uri, version=1)
    texts = {1: LOSS_OUTSIDE}
    for n in range(6):  # typing fast: alternately a finding and none
        text = UNFILTERED if n % 2 else LOSS_OUTSIDE.replace("loss", "cost")
        texts[session.change(uri, text)] = text
    last = max(texts)
    await session.diagnostics(uri, version=last)
    expected = {
        version: sorted(map(as_published, cli_findings(text, "train.py", tmp_path)))
        for version, text in texts.items()
    }
    for params in session.publications:
        assert params.uri == uri
        assert sorted(map(published_key, params.diagnostics)) == expected[params.version]
    assert session.publications[-1].version == last


async def test_requests_while_typing_wait_for_the_check_of_the_text_shown(
    client: LanguageClient, tmp_path: Path
):
    """A code action asked for while the user types is for a version the client has shown
    (the one it asked at, or a later one), its edit says which, and asking starts no check
    of its own (each version is checked at most once)."""
    session, _ = await Session.start(client, tmp_path, trace=types.TraceValue.Verbose)
    uri = session.open("train.py", PERSISTENT_ONCE)
    await session.diagnostics(uri, version=1)
    whole = types.Range(types.Position(0, 0), types.Position(99, 0))
    everything = types.Diagnostic(range=whole, message="")
    texts = {}
    requests = []
    for n in range(1, 5):  # lines added at the top: each version's fix edits another line
        text = "# a comment\n" * n + PERSISTENT_ONCE
        version = session.change(uri, text)
        texts[version] = text
        requests.append((version, asyncio.ensure_future(session.code_actions(uri, everything))))
        await asyncio.sleep(0)  # the request goes out now, before the next change
    for asked_at, request in requests:
        [fix] = [action for action in await request if action.is_preferred]
        [change] = fix.edit.document_changes
        version = change.text_document.version
        assert version >= asked_at
        fixed = apply_edits(texts[version], change.edits)
        assert fixed == cli(texts[version], "train.py", tmp_path, "--fix").stdout
    checks = [t for t in client.traces if t.startswith(f"checked {uri} ")]
    assert len(checks) <= len(texts) + 1, checks


async def test_an_edit_parses_again_only_the_statement_it_changed(
    client: LanguageClient, tmp_path: Path
):
    # TWO_FINDINGS: imports, two steps; the edit is in the second step.
    session, _ = await Session.start(client, tmp_path, trace=types.TraceValue.Verbose)
    uri = session.open("train.py", TWO_FINDINGS)
    first = await session.diagnostics(uri, version=1)
    mark = len(client.traces)
    edited = TWO_FINDINGS.replace("zip(grads", "zip(list(grads)")
    assert edited != TWO_FINDINGS
    version = session.change(uri, edited)
    again = await session.diagnostics(uri, version=version)
    trace = await _traced(client, f"checked {uri} version {version}:", mark)
    assert "top-level pieces of the parse: 2 reused, 1 parsed" in trace, trace
    # And what it publishes is what the command prints for the edited text.
    assert len(again) == len(first) == 2
    expected = cli_findings(edited, "train.py", tmp_path)
    assert [published_key(d) for d in again] == [as_published(f) for f in expected]
