"""libcst's parse of a slice, one run of top-level statements at a time, reusing what an
earlier parse made of the runs whose text did not change.

The language server checks a document again after each edit, and an edit changes one
top-level statement or a few; libcst's parse of the whole file was a third of a check, and
grows with the file. Here the slice is cut into pieces at top-level statements, each piece
parsed on its own (or taken from the pieces of earlier parses, by its text), and the pieces
joined into one module: the tree libcst makes of the whole slice, node for node.

Why it is that tree. libcst's tokenizer is in its starting state at the start of a line
where a top-level statement starts (no open bracket, no indentation), so the statements of
a piece parse as they do in the whole. What differs is only who owns the lines around
them, and the module's two defaults:

- Blank and comment lines before a statement are its `leading_lines`, except before the
  module's first statement, where they are the module's `header`: a piece after the first
  gives its header to its first statement.
- Lines after an indented block are the block's `footer` up to the last line indented at
  least as deeply as the block, and the next statement's after it. A piece is cut only
  before a run of lines that are empty or comments in the first column (no block owns
  them, in the piece or in the whole), and a piece that leaves lines to its module's
  footer, other than the last, is not cut there: it is parsed with the next one.
- `default_newline` is the first line end of the text, and a `Newline` node holds its
  value only when it is another; `default_indent` is the indentation of the first indented
  block, and an `IndentedBlock` holds its own only when it is another. Every piece must
  find the same line end, and the pieces with an indented block the same indentation; else
  the slice is parsed whole.

Where the statements are is the slicer's `ast` tree's (`SparseSource.tree`): a slice
without one is parsed whole. A piece whose text occurs twice in one slice is parsed again
the second time, so that no node is in the module twice (the analysis keys on nodes).

That `ast` tree is made the same way (`parse_tree`, which the slicer calls instead of
`ast.parse`): the text is compared with the texts of the latest trees, and the top-level
statements before the first changed line are kept, and those after the last one when no
line was added or removed (their line numbers hold); the lines between are parsed with
`ast`, as many empty lines before them as there were lines before, so that every node has
its line. Python's grammar reads a module as a sequence of statements, each from a line
where the tokenizer is in its starting state, so a run of whole statements parses alone as
it does in the whole; when the run does not parse alone (a bracket or a string left open
swallows what follows), or the text names `__future__` (which changes the grammar), the
whole text is parsed.
"""

from __future__ import annotations

import ast
from collections import OrderedDict, deque
from collections.abc import Sequence
from dataclasses import dataclass

import libcst as cst

from tapelint.parsing.slicer import SparseSource

_FALLBACK_INDENT = "    "  # libcst's default_indent for a module without indented blocks

# Lines of pieces kept from earlier parses: a few large files, for a server's open files.
DEFAULT_MAX_LINES = 20_000
# `ast` trees of earlier texts an edited text is compared with.
_TREES_KEPT = 4


@dataclass(frozen=True)
class _Piece:
    """What libcst made of one piece of the text."""

    body: tuple[cst.SimpleStatementLine | cst.BaseCompoundStatement, ...]
    header: tuple[cst.EmptyLine, ...]  # the first piece's only: the module's header
    footer: tuple[cst.EmptyLine, ...]
    has_trailing_newline: bool
    newline: str
    indent: str | None  # None: no indented block in the piece
    lines: int


class IncrementalParser:
    """Parses slices with libcst (`parse`) and texts with `ast` (`parse_tree`), keeping
    what the latest parses made for the next."""

    def __init__(self, max_lines: int = DEFAULT_MAX_LINES) -> None:
        self._max_lines = max_lines
        self._pieces: OrderedDict[tuple[str, bool], _Piece] = OrderedDict()
        self._lines = 0
        # Over the parser's life: pieces taken from earlier parses, and pieces parsed (the
        # server's trace says how many of each a check took).
        self.reused = 0
        self.parsed = 0
        self._trees: deque[tuple[str, ast.Module]] = deque(maxlen=_TREES_KEPT)

    def parse_tree(self, text: str) -> ast.Module:
        """`ast.parse(text)`, with the top-level statements of a recent tree that an edit
        left alone; raises what `ast.parse` raises."""
        for seen, seen_tree in self._trees:
            if seen == text:
                return seen_tree
        tree = None
        if self._trees and "__future__" not in text:
            earlier, earlier_tree = max(self._trees, key=lambda kept: _shared(kept[0], text))
            tree = _edited_tree(earlier, earlier_tree, text)
        if tree is None:
            tree = ast.parse(text)
        self._trees.appendleft((text, tree))
        return tree

    def parse(self, sparse: SparseSource) -> cst.Module:
        """libcst's module of `sparse.text`, as `cst.parse_module` makes it; raises what
        that raises."""
        texts = _piece_texts(sparse)
        if texts is None or len(texts) < 2:
            return cst.parse_module(sparse.text)
        try:
            pieces = self._pieces_of(texts)
        except cst.ParserSyntaxError:
            pieces = None
        module = _joined(pieces) if pieces is not None else None
        return module if module is not None else cst.parse_module(sparse.text)

    def _pieces_of(self, texts: list[str]) -> list[_Piece]:
        """The pieces of the texts in order; a piece that leaves lines to its module's
        footer is parsed again with the next one (in the whole, they are the next
        statement's, or its block's when an indented line follows)."""
        pieces: list[_Piece] = []
        used: set[int] = set()
        texts = list(texts)
        while len(pieces) < len(texts):
            number = len(pieces)
            piece = self._piece(texts[number], number == 0, used)
            if piece.footer and number + 1 < len(texts):
                texts[number : number + 2] = [texts[number] + texts[number + 1]]
                continue
            used.add(id(piece))
            pieces.append(piece)
        return pieces

    def _piece(self, text: str, first: bool, used: set[int]) -> _Piece:
        """The piece of `text` from an earlier parse, unless this parse has it already."""
        key = (text, first)
        piece = self._pieces.get(key)
        if piece is not None and id(piece) not in used:
            self._pieces.move_to_end(key)
            self.reused += 1
            return piece
        fresh = _parsed(text, first=first)
        self.parsed += 1
        if piece is None:
            self._keep(key, fresh)
        return fresh

    def _keep(self, key: tuple[str, bool], piece: _Piece) -> None:
        self._pieces[key] = piece
        self._lines += piece.lines
        while self._lines > self._max_lines and len(self._pieces) > 1:
            _, dropped = self._pieces.popitem(last=False)
            self._lines -= dropped.lines


def _parsed(text: str, *, first: bool) -> _Piece:
    module = cst.parse_module(text)
    body = tuple(module.body)
    header = tuple(module.header)
    if not first and body:
        # Lines before a statement that follows another are its own.
        leading = (*header, *body[0].leading_lines)
        body = (body[0].with_changes(leading_lines=leading), *body[1:])
        header = ()
    return _Piece(
        body=body,
        header=header,
        footer=tuple(module.footer),
        has_trailing_newline=module.has_trailing_newline,
        newline=module.default_newline,
        indent=module.default_indent if any(_has_block(s) for s in body) else None,
        lines=text.count("\n") + 1,
    )


def _joined(pieces: list[_Piece]) -> cst.Module | None:
    """The module of the pieces in order; None when they cannot make the whole's tree."""
    newline = pieces[0].newline
    indents = {piece.indent for piece in pieces if piece.indent is not None}
    if len(indents) > 1 or any(piece.newline != newline for piece in pieces):
        return None
    if not all(piece.body for piece in pieces):
        return None
    last = pieces[-1]
    return cst.Module(
        body=[statement for piece in pieces for statement in piece.body],
        header=pieces[0].header,
        footer=last.footer,
        encoding="utf-8",
        default_indent=indents.pop() if indents else _FALLBACK_INDENT,
        default_newline=newline,
        has_trailing_newline=last.has_trailing_newline,
    )


def _has_block(statement: cst.BaseStatement) -> bool:
    """Whether a top-level statement has an indented block (the tokenizer's INDENT)."""
    if not isinstance(statement, cst.BaseCompoundStatement):
        return False
    suites = [
        getattr(statement, "body", None),
        *(handler.body for handler in getattr(statement, "handlers", ())),
        *(case.body for case in getattr(statement, "cases", ())),
        getattr(getattr(statement, "finalbody", None), "body", None),
    ]
    orelse = getattr(statement, "orelse", None)
    if isinstance(orelse, cst.If):
        return any(isinstance(s, cst.IndentedBlock) for s in suites) or _has_block(orelse)
    suites.append(getattr(orelse, "body", None))
    return any(isinstance(suite, cst.IndentedBlock) for suite in suites)


def _piece_texts(sparse: SparseSource) -> list[str] | None:
    """The slice's text cut into pieces before top-level statements where no line around
    the cut can belong to the statement before it; None without the slicer's tree."""
    tree = sparse.tree
    if tree is None:
        return None
    lines = sparse.text.split("\n")
    starts = [1]
    previous_end: int | None = None
    for statement in tree.body:
        first = sparse.slice_line(_first_line(statement))
        if first is None:
            continue  # cut out of the slice
        if previous_end is not None and first > previous_end:
            start = first
            while start - 1 > previous_end and _unowned(lines[start - 2]):
                start -= 1
            starts.append(start)
        end = _last_line(sparse, statement)
        previous_end = end if end is not None and end >= first else None
    ends = [*starts[1:], len(lines) + 1]
    return [
        "".join(f"{line}\n" for line in lines[start - 1 : end - 1])
        if end <= len(lines)
        else "\n".join(lines[start - 1 :])
        for start, end in zip(starts, ends, strict=True)
    ]


def _unowned(line: str) -> bool:
    """A line no indented block can own: empty, or a comment in the first column."""
    return line in ("", "\r") or line.startswith("#")


def _first_line(statement: ast.stmt) -> int:
    decorators: list[ast.expr] = getattr(statement, "decorator_list", [])
    return min([statement.lineno, *(d.lineno for d in decorators)])


def _last_line(sparse: SparseSource, statement: ast.stmt) -> int | None:
    """The slice's line of the statement's last token: for a class whose last methods were
    cut out, its last kept member's; None when not known."""
    end = sparse.slice_line(statement.end_lineno or statement.lineno)
    if end is not None or not isinstance(statement, ast.ClassDef):
        return end
    kept: Sequence[ast.stmt] = [
        member for member in statement.body if sparse.slice_line(_first_line(member)) is not None
    ]
    return _last_line(sparse, kept[-1]) if kept else None


# ---------------------------------------------------------------------- `ast` trees
def _shared(earlier: str, text: str) -> int:
    """How many characters the two texts share at their start and end."""
    start = _common_prefix(earlier, text)
    return start + _common_suffix(earlier, text, start)


def _common_prefix(a: str, b: str) -> int:
    """The length of the longest common prefix (a binary search of slices compared in C)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def _common_suffix(a: str, b: str, prefix: int) -> int:
    """The length of the longest common suffix that leaves the common prefix alone."""
    low, high = 0, min(len(a), len(b)) - prefix
    while low < high:
        middle = (low + high + 1) // 2
        if a[len(a) - middle :] == b[len(b) - middle :]:
            low = middle
        else:
            high = middle - 1
    return low


def _edited_tree(earlier: str, tree: ast.Module, text: str) -> ast.Module | None:
    """The `ast` tree of `text`, made from the tree of the `earlier` text it was edited
    from (see the module's docstring); None when the whole text must be parsed."""
    start = _common_prefix(earlier, text)
    end = _common_suffix(earlier, text, start)
    # Lines wholly in the shared start (before the first changed line), and wholly in
    # the shared end (after the last), of both texts.
    same_before = earlier.count("\n", 0, start)
    same_after = earlier.count("\n", len(earlier) - end)
    old_lines = earlier.count("\n") + 1
    lines = text.split("\n")
    shift = len(lines) - old_lines
    body = tree.body
    before = 0
    while before < len(body) and (body[before].end_lineno or 0) <= same_before:
        before += 1
    # A statement sharing its last line with the next one goes with it.
    while 0 < before < len(body) and _first_line(body[before]) <= (
        body[before - 1].end_lineno or 0
    ):
        before -= 1
    after = len(body)
    if shift == 0:
        while after > before and _first_line(body[after - 1]) > old_lines - same_after:
            after -= 1
        while (
            after < len(body)
            and after > before
            and _first_line(body[after]) <= (body[after - 1].end_lineno or 0)
        ):
            after += 1
    first = (body[before - 1].end_lineno or 0) + 1 if before else 1
    last = _first_line(body[after]) - 1 if after < len(body) else len(lines)
    region = "\n".join(lines[first - 1 : last]) + ("\n" if last < len(lines) else "")
    try:
        middle = ast.parse("\n" * (first - 1) + region)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return ast.Module(body=[*body[:before], *middle.body, *body[after:]], type_ignores=[])
