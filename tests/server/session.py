"""Driving the real `tapelint server` process over stdio (pytest-lsp's client), and the
command line's answers for the same buffers, which the server's must equal."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from lsprotocol import types
from pygls.protocol import default_converter
from pytest_lsp import ClientServerConfig, LanguageClient
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

from tapelint.cli import cli as tapelint_cli
from tests.cli_helpers import Run

SERVER = [sys.executable, "-m", "tapelint", "server"]
TIMEOUT = 60.0  # seconds; the machine is shared, a check of a small file takes milliseconds


def make_client() -> LanguageClient:
    """pytest-lsp's test client, also recording every publication and trace in order, and
    accepting dynamic registrations (as editors do)."""
    client = LanguageClient(converter_factory=default_converter)
    client.publications = []  # type: ignore[attr-defined]
    client.traces = []  # type: ignore[attr-defined]
    client.registrations = []  # type: ignore[attr-defined]

    def publish(client: LanguageClient, params: types.PublishDiagnosticsParams) -> None:
        client.publications.append(params)  # type: ignore[attr-defined]

    def trace(client: LanguageClient, params: types.LogTraceParams) -> None:
        client.traces.append(params.message)  # type: ignore[attr-defined]

    def register(client: LanguageClient, params: types.RegistrationParams) -> None:
        client.registrations.extend(params.registrations)  # type: ignore[attr-defined]

    features = {
        **DEFAULT_CLIENT_FEATURES,
        types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS: publish,
        types.LOG_TRACE: trace,
        types.CLIENT_REGISTER_CAPABILITY: register,
    }
    register_lsp_features(client, features)
    return client


def server_config(env: dict[str, str] | None = None) -> ClientServerConfig:
    return ClientServerConfig(
        server_command=SERVER,
        client_factory=make_client,
        server_env={**os.environ, **env} if env else None,
    )


async def finish(client: LanguageClient) -> None:
    """A fixture's teardown: shutdown and exit, unless the test ended the server itself."""
    if not client.stopped:
        await client.shutdown_session()


def capabilities(*, basic: bool = False) -> types.ClientCapabilities:
    """What an editor like VS Code says it can do; `basic`: a client that can neither
    resolve code actions nor take versioned edits (document changes)."""
    return types.ClientCapabilities(
        workspace=types.WorkspaceClientCapabilities(
            configuration=True,
            did_change_configuration=types.DidChangeConfigurationClientCapabilities(),
            did_change_watched_files=types.DidChangeWatchedFilesClientCapabilities(
                dynamic_registration=True
            ),
            workspace_edit=types.WorkspaceEditClientCapabilities(document_changes=not basic),
        ),
        text_document=types.TextDocumentClientCapabilities(
            synchronization=types.TextDocumentSyncClientCapabilities(did_save=True),
            publish_diagnostics=types.PublishDiagnosticsClientCapabilities(
                version_support=True, code_description_support=True
            ),
            code_action=types.CodeActionClientCapabilities(
                code_action_literal_support=types.ClientCodeActionLiteralOptions(
                    code_action_kind=types.ClientCodeActionKindOptions(
                        value_set=[types.CodeActionKind.QuickFix, types.CodeActionKind.Source]
                    )
                ),
                is_preferred_support=True,
                data_support=True,
                resolve_support=None
                if basic
                else types.ClientCodeActionResolveOptions(properties=["edit"]),
            ),
            hover=types.HoverClientCapabilities(
                content_format=[types.MarkupKind.Markdown, types.MarkupKind.PlainText]
            ),
        ),
        notebook_document=types.NotebookDocumentClientCapabilities(
            synchronization=types.NotebookDocumentSyncClientCapabilities()
        ),
    )


class Session:
    """One initialized server, and the documents a test opened in it."""

    def __init__(self, client: LanguageClient, root: Path) -> None:
        self.client = client
        self.root = root
        self.versions: dict[str, int] = {}
        self.texts: dict[str, str] = {}

    @classmethod
    async def start(
        cls,
        client: LanguageClient,
        root: Path,
        *,
        options: dict[str, Any] | None = None,
        trace: types.TraceValue | None = None,
        basic: bool = False,
    ) -> tuple[Session, types.InitializeResult]:
        result = await client.initialize_session(
            types.InitializeParams(
                capabilities=capabilities(basic=basic),
                root_uri=root.as_uri(),
                workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name=root.name)],
                initialization_options=options,
                trace=trace,
            )
        )
        return cls(client, root), result

    @classmethod
    async def start_shared(cls, client: LanguageClient, root: Path) -> None:
        """Initialize a server that a module's tests share (see `conftest.session`)."""
        _, client.initialize_result = await cls.start(client, root)  # type: ignore[attr-defined]
        client.shared_root = root  # type: ignore[attr-defined]

    @property
    def publications(self) -> list[types.PublishDiagnosticsParams]:
        return self.client.publications  # type: ignore[attr-defined]

    def open(self, name: str, text: str, *, write: bool = True) -> str:
        path = self.root / name
        if write:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        uri = path.as_uri()
        self.versions[uri], self.texts[uri] = 1, text
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=uri, language_id="python", version=1, text=text
                )
            )
        )
        return uri

    def change(self, uri: str, text: str) -> int:
        """Replace the document's whole text; the new version."""
        self.versions[uri] += 1
        self.texts[uri] = text
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(
                    uri=uri, version=self.versions[uri]
                ),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )
        return self.versions[uri]

    def apply(self, edit: types.WorkspaceEdit) -> None:
        """Apply a workspace edit as an editor would, and tell the server."""
        for uri, edits in _edits_by_uri(edit).items():
            self.change(uri, apply_edits(self.texts[uri], edits))

    async def diagnostics(
        self, uri: str, *, version: int | None = None, since: int = 0
    ) -> list[types.Diagnostic]:
        """The diagnostics published for `uri`: for `version`, or the first publication
        after the first `since` ones."""
        found = await self.wait_for(
            lambda p: p.uri == uri and (version is None or p.version == version), since=since
        )
        return list(found.diagnostics)

    async def wait_for(self, matches: Any, *, since: int = 0) -> types.PublishDiagnosticsParams:
        deadline = asyncio.get_running_loop().time() + TIMEOUT
        while True:
            for params in self.publications[since:]:
                if matches(params):
                    return params
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError(f"no such publication; got {self.publications[since:]}")
            await asyncio.sleep(0.01)

    async def code_actions(
        self, uri: str, diagnostic: types.Diagnostic, only: Sequence[str] | None = None
    ) -> list[types.CodeAction]:
        result = await self.client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                range=diagnostic.range,
                context=types.CodeActionContext(diagnostics=[diagnostic], only=only),
            )
        )
        return [action for action in result or [] if isinstance(action, types.CodeAction)]


def _edits_by_uri(edit: types.WorkspaceEdit) -> dict[str, list[types.TextEdit]]:
    found: dict[str, list[types.TextEdit]] = {}
    for uri, edits in (edit.changes or {}).items():
        found.setdefault(uri, []).extend(edits)
    for change in edit.document_changes or []:
        assert isinstance(change, types.TextDocumentEdit)
        found.setdefault(change.text_document.uri, []).extend(change.edits)  # type: ignore[arg-type]
    return found


def apply_edits(text: str, edits: Sequence[types.TextEdit]) -> str:
    """Apply non-overlapping edits (ASCII texts: characters are UTF-16 units)."""
    lines = text.split("\n")
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line) + 1)

    def offset(position: types.Position) -> int:
        if position.line >= len(lines):
            return len(text)
        return starts[position.line] + min(position.character, len(lines[position.line]))

    spans = sorted((offset(e.range.start), offset(e.range.end), e.new_text) for e in edits)
    for start, end, new_text in reversed(spans):
        text = text[:start] + new_text + text[end:]
    return text


def cli(source: str, filename: str, cwd: Path, *args: str) -> Run:
    """`tapelint check --stdin-filename FILENAME ARGS -` on `source`, run from `cwd`."""
    with contextlib.chdir(cwd):
        result = CliRunner().invoke(
            tapelint_cli,
            ["check", "--stdin-filename", filename, *args, "-"],
            input=source,
            catch_exceptions=False,
        )
    return Run(result.exit_code, result.stdout, result.stderr)


def cli_findings(source: str, filename: str, cwd: Path) -> list[dict[str, Any]]:
    result = cli(source, filename, cwd, "--output-format", "json", "--force-exclude")
    assert result.exit_code in (0, 1), result.stderr
    return json.loads(result.stdout)


def as_published(finding: dict[str, Any]) -> tuple:
    """A finding of `--output-format json` as the server must publish it (ASCII sources)."""
    return (
        finding["line"] - 1,
        finding["column"] - 1,
        finding["end_line"] - 1,
        finding["end_column"] - 1,
        finding["code"],
        finding["message"],
        finding["severity"],
    )


def published_key(diagnostic: types.Diagnostic) -> tuple:
    severity = {
        types.DiagnosticSeverity.Error: "error",
        types.DiagnosticSeverity.Warning: "warning",
    }
    return (
        diagnostic.range.start.line,
        diagnostic.range.start.character,
        diagnostic.range.end.line,
        diagnostic.range.end.character,
        diagnostic.code,
        diagnostic.message,
        severity[diagnostic.severity],  # type: ignore[index]
    )
