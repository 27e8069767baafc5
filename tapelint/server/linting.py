"""When open documents are checked, and what is published.

- One checking thread. Checks run one at a time on a thread of their own, so the server
  keeps reading messages (and answering hovers) while a large file is analysed. Everything
  that reads files (the project configuration, tapelint's own checks) runs there.
- Debounce. A change is checked after a pause of DEBOUNCE_SECONDS without further changes
  to the document (the messages an editor sends together for a multi-cursor edit, a paste
  or a completion are one check; keystrokes are further apart than that); a check that has
  not started when the document changes again is dropped. Opening and saving a document
  are checked at once.
- Stale results are dropped. A check that finishes after its document changed again
  publishes nothing: the newer version's check is already scheduled.
- The same input is not checked twice. When a document's text (a notebook's cells) and its
  settings are what its last check saw, that result is reused; only a new version or a
  change in the diagnostics is published.
- Cross-file knowledge. Documents are checked in their project's index
  (`tapelint.project.Project`, one per configuration, `projects`), which holds the open
  documents' text: a helper edited in the editor is seen as its buffer. When a document
  changes (or is opened or saved), the other open documents of the same project are
  checked again, after it: those whose last check used its module (`Project.dependents`)
  are analysed again, so a change to a helper's summary reaches the files that call it;
  the others hit the reuse above and publish nothing.
- Garbage is collected when the editor is idle (`collection`), not in the middle of a
  check.
- An internal error while checking one document (a bug in tapelint) is logged to the
  client (window/logMessage, once per distinct error) with its traceback, that document's
  diagnostics are cleared, and every other document keeps being checked.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import unquote

from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec

from tapelint.server.checking import check
from tapelint.server.collection import IdleCollection
from tapelint.server.docs import page_uri
from tapelint.server.documents import Snapshot, notebook_snapshot, text_snapshot
from tapelint.server.results import Result, locate
from tapelint.server.settings import ClientSettings

if TYPE_CHECKING:
    from tapelint.server.protocol import TapelintServer

DEBOUNCE_SECONDS = 0.010
T = TypeVar("T")


@dataclass(frozen=True)
class _Outcome:
    result: Result
    config_problem: str | None
    reused: bool
    # The open files (real paths) whose last check used this document's module: what its
    # change may change.
    dependents: frozenset[str]
    seconds: float  # wall time on the checking thread
    cpu_seconds: float  # the checking thread's CPU time: what the check costs on an idle machine
    pieces: tuple[int, int]  # top-level pieces of the parse taken from earlier ones, parsed


class Linting:
    def __init__(self, server: TapelintServer) -> None:
        self._server = server
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tapelint-check")
        self._pending: dict[str, asyncio.Task[None]] = {}
        self._published: dict[str, Result] = {}  # per document: the result last published
        self._failing: dict[str, str] = {}  # per document: the internal error last logged
        # Documents whose last result may be out of date although their text is not: a
        # module their check used changed. Their next check analyses them again.
        self._stale: set[str] = set()
        self._closed = False
        self.collection = IdleCollection(self._on_checker)

    # ------------------------------------------------------------------ scheduling
    def changed(self, uri: str, *, delay: float = DEBOUNCE_SECONDS, project: bool = True) -> None:
        """Check document `uri` after `delay`; then, with `project`, the other open
        documents of its project. A check of it still waiting starts over."""
        if self._closed:
            return
        waiting = self._pending.pop(uri, None)
        if waiting is not None:
            waiting.cancel()
        task = asyncio.ensure_future(self._check(uri, delay, project))
        self._pending[uri] = task
        task.add_done_callback(lambda done: self._done(uri, done))

    def recheck_all(self, *, forget_config: bool = False) -> None:
        """Check every open document again (the configuration or the settings changed)."""
        if forget_config and not self._closed:
            self._executor.submit(self._server.project_settings.forget)
        for uri in self.open_documents():
            self.changed(uri, delay=0, project=False)

    def closed(self, uri: str) -> None:
        """Forget a closed document and clear its diagnostics."""
        waiting = self._pending.pop(uri, None)
        if waiting is not None:
            waiting.cancel()
        self._failing.pop(uri, None)
        self._stale.discard(uri)
        last = self._published.pop(uri, None)
        if last is not None and not self._closed:
            self._executor.submit(self._server.projects.closed, str(last.snapshot.path))
        for shown in last.snapshot.uris if last is not None else (uri,):
            self._send(shown, [], None)

    def shutdown(self) -> None:
        self.collection.stop()
        self._closed = True
        for task in self._pending.values():
            task.cancel()
        self._pending.clear()
        self._executor.shutdown(wait=False, cancel_futures=True)

    def _done(self, uri: str, task: asyncio.Task[None]) -> None:
        if self._pending.get(uri) is task:
            del self._pending[uri]

    # ------------------------------------------------------------------ results
    async def current(self, uri: str) -> Result | None:
        """The result for the document's current version (code actions and hovers must
        match the text the client shows): the last one, or that of the check scheduled for
        the document, waited for. A request never starts a check of its own, so requests
        while the user types add no work. None when the document is closed, or its check
        failed."""
        while not self._closed:
            version = self._version(uri)
            if version is None:
                return None
            fresh = self._fresh(uri, version)
            if fresh is not None:
                return fresh
            task = self._pending.get(uri)
            if task is None:  # nothing scheduled: the settings changed since, or it failed
                self.changed(uri, delay=0, project=False)
                task = self._pending[uri]
            try:
                await asyncio.shield(task)
            except asyncio.CancelledError:
                if not task.cancelled():
                    raise  # the request itself was cancelled
                continue  # superseded by a newer change: wait for that one's check
            if self._version(uri) == version:
                return self._fresh(uri, version)
        return None

    def _fresh(self, uri: str, version: int) -> Result | None:
        last = self._published.get(uri)
        if (
            last is not None
            and last.snapshot.version == version
            and last.client == self._server.client_settings
        ):
            return last
        return None

    def _on_checker(self, work: Callable[[], object]) -> None:
        """Run `work` on the checking thread after the checks queued, unless shut down."""
        if not self._closed:
            self._executor.submit(work)

    async def in_checker(self, work: Callable[..., T], *args: Any) -> T:
        """Run `work` on the checking thread, after the checks queued before it."""
        return await asyncio.get_running_loop().run_in_executor(self._executor, work, *args)

    # ------------------------------------------------------------------ checking
    async def _check(self, uri: str, delay: float, project: bool) -> None:
        if delay:
            await asyncio.sleep(delay)
        snapshot = self.snapshot(uri)
        if snapshot is None:
            return
        outcome = await self._run(snapshot, reuse=uri not in self._stale)
        if outcome is None or not self._is_current(snapshot):
            return
        self._stale.discard(uri)
        self._publish(outcome.result)
        self.collection.checked()
        if project:
            self._recheck_project(outcome)

    async def _run(self, snapshot: Snapshot, *, reuse: bool) -> _Outcome | None:
        previous = self._published.get(snapshot.uri) if reuse else None
        client = self._server.client_settings
        codec = self._server.workspace.position_codec
        try:
            outcome = await self.in_checker(self._work, snapshot, client, codec, previous)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # a bug in tapelint: this document only
            self._failed(snapshot, error)
            return None
        if self._failing.pop(snapshot.uri, None) is not None:
            self._log(types.MessageType.Info, f"tapelint: {snapshot.uri} is checked again")
        if outcome.config_problem is not None:
            self._server.report_problem(outcome.config_problem)
        self._trace(outcome)
        return outcome

    def _work(
        self,
        snapshot: Snapshot,
        client: ClientSettings,
        codec: PositionCodec,
        previous: Result | None,
    ) -> _Outcome:
        """On the checking thread: the settings of the document's project, then its check
        (or the previous result, when neither the input nor the settings changed)."""
        started, cpu_started = time.perf_counter(), time.thread_time()
        parser = self._server.projects.parser
        reused, parsed = parser.reused, parser.parsed
        configuration, problem = self._server.project_settings.for_file(snapshot.path)
        settings = client.apply(configuration)
        if (
            previous is not None
            and previous.settings == settings
            and previous.client == client
            and previous.snapshot.same_content(snapshot)
        ):
            result, same = dataclasses.replace(previous, snapshot=snapshot), True
        else:
            project = self._server.projects.for_settings(settings)
            found = check(snapshot, settings, project)
            found_here = locate(snapshot, found, codec, page_uri)
            result, same = Result(snapshot, settings, client, found_here), False
        dependents = frozenset(self._server.projects.dependents(settings, str(snapshot.path)))
        seconds, cpu = time.perf_counter() - started, time.thread_time() - cpu_started
        pieces = (parser.reused - reused, parser.parsed - parsed)
        return _Outcome(result, problem, same, dependents, seconds, cpu, pieces)

    def _recheck_project(self, changed: _Outcome) -> None:
        """Check the other open documents of the project again: those whose last check used
        the changed document's module are analysed again (a helper's summary may have
        changed); the others are given their last result back at no cost."""
        root = changed.result.settings.root
        for uri in self.open_documents():
            if uri == changed.result.snapshot.uri or uri in self._pending:
                continue
            other = self._published.get(uri)
            if other is not None and other.settings.root != root:
                continue
            snapshot = self.snapshot(uri)
            if snapshot is not None and os.path.realpath(snapshot.path) in changed.dependents:
                self._stale.add(uri)
            self.changed(uri, delay=0, project=False)

    # ------------------------------------------------------------------ publishing
    def _publish(self, result: Result) -> None:
        uri = result.snapshot.uri
        last = self._published.get(uri)
        self._published[uri] = result
        if (
            last is not None
            and last.snapshot.version == result.snapshot.version
            and last.snapshot.uris == result.snapshot.uris
            and last.found == result.found
        ):
            return
        shown = result.by_uri()
        for gone in set(last.snapshot.uris if last else ()) - set(shown):  # deleted cells
            self._send(gone, [], None)
        for shown_uri, diagnostics in shown.items():
            # A text document's version; a cell's is its notebook's business.
            version = result.snapshot.version if shown_uri == uri else None
            self._send(shown_uri, diagnostics, version)

    def _send(self, uri: str, diagnostics: list[types.Diagnostic], version: int | None) -> None:
        self._server.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=version)
        )

    def _failed(self, snapshot: Snapshot, error: Exception) -> None:
        summary = f"{type(error).__name__}: {error}"
        if self._failing.get(snapshot.uri) != summary:
            self._failing[snapshot.uri] = summary
            details = "".join(traceback.format_exception(error)).rstrip()
            self._log(
                types.MessageType.Error,
                f"tapelint: internal error while checking {snapshot.uri}: {summary}; its "
                f"diagnostics are cleared, other documents are still checked.\n{details}",
            )
        if self._is_current(snapshot):
            self._published.pop(snapshot.uri, None)
            for uri in snapshot.uris:
                self._send(uri, [], None)

    def _log(self, kind: types.MessageType, message: str) -> None:
        self._server.window_log_message(types.LogMessageParams(type=kind, message=message))

    def _trace(self, outcome: _Outcome) -> None:
        """`$/logTrace` for clients that asked for it: what each check did and took."""
        if self._server.protocol.trace in (None, types.TraceValue.Off):
            return
        snapshot = outcome.result.snapshot
        reused, parsed = outcome.pieces
        what = (
            "unchanged (same text and settings)"
            if outcome.reused
            else f"{len(outcome.result.found)} diagnostics, top-level pieces of the parse: "
            f"{reused} reused, {parsed} parsed"
        )
        self._server.log_trace(
            types.LogTraceParams(
                message=f"checked {snapshot.uri} version {snapshot.version}: {what} "
                f"in {outcome.seconds * 1000:.0f} ms ({outcome.cpu_seconds * 1000:.0f} ms CPU)"
            )
        )

    # ------------------------------------------------------------------ documents
    def snapshot(self, uri: str) -> Snapshot | None:
        workspace = self._server.workspace
        if workspace.get_notebook_document(notebook_uri=uri) is not None:
            return notebook_snapshot(workspace, uri)
        return text_snapshot(workspace, uri)

    def open_documents(self) -> list[str]:
        """The URIs of the open Python files and notebooks (not of notebooks' cells)."""
        workspace = self._server.workspace
        files = [
            document.uri
            for document in workspace.text_documents.values()
            if workspace.get_notebook_document(cell_uri=document.uri) is None
            and self._server.is_checked(document.uri)
        ]
        return [*files, *(notebook.uri for notebook in workspace.notebook_documents.values())]

    def _is_current(self, snapshot: Snapshot) -> bool:
        return self._version(snapshot.uri) == snapshot.version

    def _version(self, uri: str) -> int | None:
        """The open document's version; None when it is not open."""
        workspace = self._server.workspace
        notebook = workspace.get_notebook_document(notebook_uri=uri)
        if notebook is not None:
            return notebook.version
        document = workspace.text_documents.get(unquote(uri))
        return document.version if document is not None else None
