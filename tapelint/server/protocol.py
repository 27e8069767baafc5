"""The protocol wiring: which LSP messages the server handles, each handed to the module
that does the job (linting, actions, docs, settings)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

import tapelint
from tapelint.linter.registry import rule_by_code_or_name
from tapelint.server import actions
from tapelint.server.checking import fix_safely
from tapelint.server.docs import rule_page
from tapelint.server.documents import PYTHON
from tapelint.server.linting import Linting
from tapelint.server.messages import UNPARSABLE, TapelintProtocol
from tapelint.server.projects import Projects
from tapelint.server.results import Result
from tapelint.server.settings import ClientSettings, ProjectSettings, workspace_root

if TYPE_CHECKING:
    from pygls.server import ServerErrors

_CHECKED_SUFFIXES = (".py", ".ipynb")
# Files whose change can change a project's settings (excludes read .gitignore files too).
_CONFIG_FILES = ("pyproject.toml", "tapelint.toml", ".gitignore")


class TapelintServer(LanguageServer):
    protocol: TapelintProtocol

    def __init__(self) -> None:
        super().__init__(
            "tapelint",
            tapelint.version(),
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            notebook_document_sync=types.NotebookDocumentSyncOptions(
                notebook_selector=[
                    types.NotebookDocumentFilterWithNotebook(
                        notebook="*", cells=[types.NotebookCellLanguage(language=PYTHON)]
                    )
                ],
                save=True,
            ),
            protocol_cls=TapelintProtocol,
        )
        self.initial_settings = ClientSettings()
        self.client_settings = ClientSettings()
        self.project_settings = ProjectSettings(root_of=lambda path: path.parent)
        self.projects = Projects()
        self.linting = Linting(self)
        self.shut_down = False
        self.languages: dict[str, str | None] = {}  # of the open text documents
        self._reported: set[str] = set()

    def report_server_error(self, error: Exception, source: ServerErrors) -> None:
        """pygls's read loop reports a body it could not parse here (as a JsonRpcException):
        that is answered with a parse error, not shown to the user as a server error."""
        if source is JsonRpcException and isinstance(error, UNPARSABLE):
            self.protocol.answer_parse_error(error)
            return
        super().report_server_error(error, source)

    def is_checked(self, uri: str) -> bool:
        """Whether a text document is Python (by its language, else by its name)."""
        language = self.languages.get(uri)
        if language:
            return language == PYTHON
        return uri.endswith(_CHECKED_SUFFIXES)

    def report_problem(self, message: str) -> None:
        """Tell the user about a configuration or settings problem, once per message."""
        if message in self._reported:
            return
        self._reported.add(message)
        self.window_show_message(
            types.ShowMessageParams(type=types.MessageType.Warning, message=message)
        )
        self.window_log_message(
            types.LogMessageParams(type=types.MessageType.Warning, message=message)
        )

    def update_settings(self, raw: object) -> None:
        """The client's settings: the initial ones with `raw`'s keys on top."""
        settings, problems = self.initial_settings.merged(raw)
        for problem in problems:
            self.report_problem(problem)
        if settings != self.client_settings:
            self.client_settings = settings
            self.linting.recheck_all()

    def update_roots(self) -> None:
        """The workspace folders changed (or are first known)."""
        folders = [
            Path(path)
            for folder in self.workspace.folders.values()
            if (path := to_fs_path(folder.uri)) is not None
        ]
        fallback = Path(self.workspace.root_path) if self.workspace.root_path else None
        self.project_settings.root_of = workspace_root(folders, fallback)


def build_server() -> TapelintServer:
    server = TapelintServer()
    linting = server.linting

    @server.feature(types.INITIALIZE)
    def initialize(params: types.InitializeParams) -> None:
        server.protocol.trace = params.trace or types.TraceValue.Off
        settings, problems = ClientSettings().merged(params.initialization_options)
        for problem in problems:
            server.report_problem(problem)
        server.initial_settings = server.client_settings = settings
        server.update_roots()

    @server.feature(types.INITIALIZED)
    async def initialized(params: types.InitializedParams) -> None:
        if _capability(server, "workspace", "did_change_watched_files", "dynamic_registration"):
            await _watch_config_files(server)
        await _pull_settings(server)

    @server.feature(types.SHUTDOWN)
    def shutdown(params: None) -> None:
        server.shut_down = True
        linting.shutdown()

    # ---------------------------------------------------------------- text documents
    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(params: types.DidOpenTextDocumentParams) -> None:
        document = params.text_document
        server.languages[document.uri] = document.language_id
        if server.is_checked(document.uri):
            linting.changed(document.uri, delay=0)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(params: types.DidChangeTextDocumentParams) -> None:
        if server.is_checked(params.text_document.uri):
            linting.changed(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
    def did_save(params: types.DidSaveTextDocumentParams) -> None:
        if server.is_checked(params.text_document.uri):
            linting.changed(params.text_document.uri, delay=0)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(params: types.DidCloseTextDocumentParams) -> None:
        server.languages.pop(params.text_document.uri, None)
        linting.closed(params.text_document.uri)

    # ---------------------------------------------------------------- notebooks
    @server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    def notebook_did_open(params: types.DidOpenNotebookDocumentParams) -> None:
        linting.changed(params.notebook_document.uri, delay=0)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def notebook_did_change(params: types.DidChangeNotebookDocumentParams) -> None:
        linting.changed(params.notebook_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
    def notebook_did_save(params: types.DidSaveNotebookDocumentParams) -> None:
        linting.changed(params.notebook_document.uri, delay=0)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def notebook_did_close(params: types.DidCloseNotebookDocumentParams) -> None:
        linting.closed(params.notebook_document.uri)

    # ---------------------------------------------------------------- configuration
    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(params: types.DidChangeConfigurationParams) -> None:
        pushed = params.settings
        if isinstance(pushed, dict) and isinstance(pushed.get("tapelint"), dict):
            server.update_settings(pushed["tapelint"])
        else:
            await _pull_settings(server)

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def did_change_watched_files(params: types.DidChangeWatchedFilesParams) -> None:
        if any(change.uri.endswith(_CONFIG_FILES) for change in params.changes):
            linting.recheck_all(forget_config=True)

    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    def did_change_workspace_folders(params: types.DidChangeWorkspaceFoldersParams) -> None:
        server.update_roots()
        linting.recheck_all(forget_config=True)

    # ---------------------------------------------------------------- features
    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(
            code_action_kinds=[types.CodeActionKind.QuickFix, actions.FIX_ALL_KIND],
            resolve_provider=True,
        ),
    )
    async def code_action(params: types.CodeActionParams) -> list[types.CodeAction] | None:
        uri = params.text_document.uri
        result = await linting.current(_document_of(server, uri))
        if result is None or uri not in result.snapshot.uris:
            return None
        only = params.context.only
        found: list[types.CodeAction] = []
        if actions.wanted(only, types.CodeActionKind.QuickFix):
            found.extend(actions.quick_fixes(uri, params.range, _edits(server, result)))
        fix_all = actions.fix_all_action(result)
        if fix_all is not None and actions.wanted(only, actions.FIX_ALL_KIND):
            resolves = "edit" in (
                _capability(server, "text_document", "code_action", "resolve_support", "properties")
                or ()
            )
            if resolves:
                found.append(fix_all)
            elif only is not None:  # asked for by kind (on save): worth fixing the file now
                found.append(await resolve_code_action(fix_all))
        return found or None

    @server.feature(types.CODE_ACTION_RESOLVE)
    async def resolve_code_action(action: types.CodeAction) -> types.CodeAction:
        data = action.data
        if action.kind != actions.FIX_ALL_KIND or not isinstance(data, dict):
            return action
        result = await linting.current(str(data.get("uri")))
        if result is None or result.snapshot.version != data.get("version"):
            return action  # the document moved on: no edit rather than a wrong one
        fixed = await linting.in_checker(
            fix_safely, result.snapshot, result.settings, server.projects
        )
        if fixed.problem:
            server.window_log_message(
                types.LogMessageParams(type=types.MessageType.Warning, message=fixed.problem)
            )
        action.edit = _edits(server, result).to_texts(fixed.texts)
        return action

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    async def hover(params: types.HoverParams) -> types.Hover | None:
        uri = params.text_document.uri
        result = await linting.current(_document_of(server, uri))
        if result is None:
            return None
        under = [loc for loc in result.on(uri) if _contains(loc.lsp.range, params.position)]
        codes = list(dict.fromkeys(located.diagnostic.code for located in under))
        rules = [rule for code in codes if (rule := rule_by_code_or_name(code)) is not None]
        if not rules:
            return None
        formats = _capability(server, "text_document", "hover", "content_format") or ()
        kind = (
            types.MarkupKind.Markdown
            if not formats or types.MarkupKind.Markdown in formats
            else types.MarkupKind.PlainText
        )
        text = "\n\n---\n\n".join(rule_page(rule) for rule in rules)
        return types.Hover(
            contents=types.MarkupContent(kind=kind, value=text), range=under[0].lsp.range
        )

    return server


async def _watch_config_files(server: TapelintServer) -> None:
    """Ask the client to report changes to the files that make a project's settings.
    Without it, a changed config still applies from the next check of each document."""
    watchers = [types.FileSystemWatcher(glob_pattern=f"**/{name}") for name in _CONFIG_FILES]
    registration = types.Registration(
        id="tapelint-config-files",
        method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
        register_options=types.DidChangeWatchedFilesRegistrationOptions(watchers=watchers),
    )
    try:
        await server.client_register_capability_async(
            types.RegistrationParams(registrations=[registration])
        )
    except Exception as error:  # the client said it could, then refused: not fatal
        server.window_log_message(
            types.LogMessageParams(
                type=types.MessageType.Warning,
                message=f"tapelint: cannot watch configuration files: {error}",
            )
        )


async def _pull_settings(server: TapelintServer) -> None:
    """Ask a client that serves `workspace/configuration` for its `tapelint` section."""
    if not _capability(server, "workspace", "configuration"):
        return
    [section] = await server.workspace_configuration_async(
        types.ConfigurationParams(items=[types.ConfigurationItem(section="tapelint")])
    )
    server.update_settings(section)


def _edits(server: TapelintServer, result: Result) -> actions.Edits:
    versioned = _capability(server, "workspace", "workspace_edit", "document_changes")
    return actions.Edits(result, server.workspace.position_codec, versioned=bool(versioned))


def _document_of(server: TapelintServer, uri: str) -> str:
    """The document a URI's diagnostics come from: a cell's notebook, else itself."""
    notebook = server.workspace.get_notebook_document(cell_uri=uri)
    return notebook.uri if notebook is not None else uri


def _contains(found: types.Range, position: types.Position) -> bool:
    where = (position.line, position.character)
    start = (found.start.line, found.start.character)
    return start <= where <= (found.end.line, found.end.character)


def _capability(server: TapelintServer, *path: str) -> Any:
    """A client capability by its attribute path; None where the client left it out."""
    value: Any = server.client_capabilities
    for name in path:
        value = getattr(value, name, None)
        if value is None:
            return None
    return value
