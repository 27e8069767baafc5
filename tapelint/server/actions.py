"""Code actions: each finding's fix, a `# noqa` for its line, and "fix all" for the file.

- A safe fix is a preferred quick fix. An unsafe fix (it may change what the code does) is
  offered only when the `unsafeFixes` setting is on, with "(unsafe)" in its title.
- "Add `# noqa: TAPxxx`" writes what `tapelint check --add-noqa` would: the code added to
  the line's `# noqa: ...` list, or a new comment; for a line that ends inside a
  multi-line string or a backslash continuation, on the line where those end.
- "Fix all tapelint problems (safe)" (kind `source.fixAll.tapelint`, so editors can run it
  on save) applies every safe fix as `tapelint check --fix` does. It is offered when the
  document has a safe fix; its edit is computed when the client resolves it (the fixer
  re-checks the file after each pass). A client that cannot resolve gets it only when it
  asks for that kind of action (as on save), with its edit.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec

from tapelint.findings.diagnostics import Applicability, Position
from tapelint.linter.fixer import FixError, applicable, apply_fixes
from tapelint.run.add_noqa import noqa_line
from tapelint.server.convert import LineIndex, text_edit
from tapelint.server.results import Located, Result

FIX_ALL_KIND = f"{types.CodeActionKind.SourceFixAll.value}.tapelint"
FIX_ALL_TITLE = "Fix all tapelint problems (safe)"


def wanted(only: Iterable[str] | None, kind: str) -> bool:
    """Whether a client that asked for `only` these kinds wants actions of `kind`."""
    if only is None:
        return True
    return any(kind == asked or kind.startswith(f"{asked}.") for asked in only)


@dataclass(frozen=True)
class Edits:
    """Workspace edits of the documents of one result.

    `versioned` (for clients that support it): as document changes naming the version
    they apply to, so that a client whose document moved on since refuses them instead of
    applying them to the wrong text.
    """

    result: Result
    codec: PositionCodec
    versioned: bool

    def to_texts(self, texts: dict[str, str]) -> types.WorkspaceEdit:
        """Edits turning each document named in `texts` into that text."""
        edits = {}
        for uri, after in texts.items():
            before = self.result.snapshot.text_of(uri)
            edit = text_edit(before, after, LineIndex(before, self.codec))
            if edit is not None:
                edits[uri] = [edit]
        return self.of(edits)

    def of(self, edits: dict[str, list[types.TextEdit]]) -> types.WorkspaceEdit:
        if not self.versioned:
            return types.WorkspaceEdit(changes=edits)
        changes = [
            types.TextDocumentEdit(
                text_document=types.OptionalVersionedTextDocumentIdentifier(
                    uri=uri, version=self.result.snapshot.version_of(uri)
                ),
                edits=list(uri_edits),
            )
            for uri, uri_edits in edits.items()
        ]
        return types.WorkspaceEdit(document_changes=changes)


def quick_fixes(uri: str, selected: types.Range, edits: Edits) -> list[types.CodeAction]:
    """The fixes and noqa actions for the findings of `uri` that touch `selected`."""
    result = edits.result
    text = result.snapshot.text_of(uri)
    index = LineIndex(text, edits.codec)
    touching = [located for located in result.on(uri) if _touches(located.lsp.range, selected)]
    actions = []
    for located in touching:
        action = _fix_action(located, text, index, edits)
        if action is not None:
            actions.append(action)
    noqa_lines: set[tuple[int, str]] = set()
    for located in touching:
        key = (located.diagnostic.start.line, located.diagnostic.code)
        if key in noqa_lines:
            continue
        noqa_lines.add(key)
        action = _noqa_action(located, text, index, edits)
        if action is not None:
            actions.append(action)
    return actions


def fix_all_action(result: Result) -> types.CodeAction | None:
    """The unresolved "fix all" action, when the document has a safe fix."""
    if not any(applicable(located.diagnostic.fix, unsafe=False) for located in result.found):
        return None
    return types.CodeAction(
        title=FIX_ALL_TITLE,
        kind=FIX_ALL_KIND,
        data={"uri": result.snapshot.uri, "version": result.snapshot.version},
    )


def _touches(found: types.Range, selected: types.Range) -> bool:
    def key(position: types.Position) -> tuple[int, int]:
        return (position.line, position.character)

    return key(found.start) <= key(selected.end) and key(selected.start) <= key(found.end)


def _fix_action(
    located: Located, text: str, index: LineIndex, edits: Edits
) -> types.CodeAction | None:
    fix = located.diagnostic.fix
    if not applicable(fix, unsafe=edits.result.client.unsafe_fixes):
        return None
    assert fix is not None
    # A notebook finding's edits are all in its own cell: one statement never spans cells.
    try:
        fixed, count = apply_fixes(text, [fix])
    except FixError:
        return None
    edit = text_edit(text, fixed, index) if count else None
    if edit is None:
        return None
    safe = fix.applicability is Applicability.SAFE
    return types.CodeAction(
        title=f"{fix.title} ({located.diagnostic.code})" + ("" if safe else " (unsafe)"),
        kind=types.CodeActionKind.QuickFix,
        diagnostics=[located.lsp],
        is_preferred=safe,
        edit=edits.of({located.uri: [edit]}),
    )


def _noqa_action(
    located: Located, text: str, index: LineIndex, edits: Edits
) -> types.CodeAction | None:
    """The line's `# noqa` with the finding's code added, as `--add-noqa` writes it."""
    code = located.diagnostic.code
    found = noqa_line(text, located.diagnostic)
    if found is None:
        return None
    number, line = found
    old = index.line(number)
    where = types.Range(
        index.position(Position(number, 1)), index.position(Position(number, len(old) + 1))
    )
    return types.CodeAction(
        title=f"Add `# noqa: {code}` to line {number}",
        kind=types.CodeActionKind.QuickFix,
        diagnostics=[located.lsp],
        edit=edits.of({located.uri: [types.TextEdit(where, line.removesuffix("\r"))]}),
    )
