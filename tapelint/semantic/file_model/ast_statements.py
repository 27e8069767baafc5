"""The `ast` statements of a libcst statement, in the tree the slicer already parsed.

Python's `ast` gives every statement and expression its line and column for free; libcst's
positions cost more than its parse. The engine parses with libcst the slice of the file
worth parsing (`source.relevant_source`), which is the file less whole top-level statements
and methods, cut out by their lines; the slicer parsed the whole file with `ast` first
(`SparseSource.tree`). So the two trees correspond block by block once the `ast` statements
whose first line was cut are left out: a simple statement line (or a one-line suite,
`if x: a; b`) of libcst is as many `ast` statements as it has small statements, any other
statement is one. Lines of the `ast` tree map to lines of the slice through the slice's
segments. Where the correspondence is not plain (blocks that do not pair up), `statements`
says None and the caller uses libcst.

When the slice came without a tree (a whole text summarised on demand), its text is parsed
with `ast` here, once, when first needed.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence

import libcst as cst

from tapelint.parsing.slicer import SparseSource
from tapelint.semantic.file_model.model import FileModel

# The line ends Python's tokenizer counts (not form feeds, as `str.splitlines` would).
_LINE_END = re.compile(r"\r\n?|\n")


class AstStatements:
    def __init__(self, model: FileModel, sparse: SparseSource) -> None:
        self._model = model
        self._sparse = sparse
        self._tree: ast.Module | None = None
        self._lines: list[str] | None = None
        # (a block's owner, which of its blocks) -> its `ast` statements that were kept
        self._blocks: dict[tuple[cst.CSTNode, int], list[ast.stmt]] = {}
        # (a block's owner, which of its blocks) -> `ast` index of each of its statements
        self._indexes: dict[tuple[cst.CSTNode, int], list[int]] = {}

    def statements(self, path: Sequence[cst.CSTNode]) -> list[ast.stmt] | None:
        """The `ast` statements of the statement at the end of `path` (from
        `FileModel.statement_path`): one for a compound statement, one per small statement
        for a simple statement line or a one-line suite. None where the trees do not pair."""
        owner: cst.CSTNode = self._model.module
        ast_owner: ast.AST = self._parsed()
        for statement in path:
            if statement is getattr(owner, "orelse", None):  # an `elif`: the `else:` is it
                orelse = getattr(ast_owner, "orelse", None)
                if not isinstance(statement, cst.If) or not orelse:
                    return None
                if len(orelse) != 1 or not isinstance(orelse[0], ast.If):
                    return None
                if statement is path[-1]:
                    return [orelse[0]]
                owner, ast_owner = statement, orelse[0]
                continue
            index = self._model.stmt_parent[statement][2]
            blocks, ast_blocks = _blocks_of(owner), _ast_blocks_of(ast_owner)
            if len(blocks) != len(ast_blocks):
                return None
            number = next(
                (
                    number
                    for number, block in enumerate(blocks)
                    if block is not None and index < len(block) and block[index] is statement
                ),
                None,
            )
            if number is None:
                return None
            block = blocks[number]
            assert block is not None
            ast_block = self._kept_of((owner, number), ast_blocks[number])
            first = self._ast_index((owner, number), block, index)
            if statement is path[-1]:
                size = _size(statement)
                found = ast_block[first : first + size]
                return found if len(found) == size else None
            if first >= len(ast_block):
                return None
            owner, ast_owner = statement, ast_block[first]
        return None

    def line(self, tree_line: int) -> int | None:
        """The line of the slice that line `tree_line` of the `ast` tree's text is; None
        for a line that was cut out."""
        if self._parsed() is self._sparse.tree:
            return self._sparse.slice_line(tree_line)
        return tree_line  # the slice's own tree

    def column(self, line: int, utf8_offset: int) -> int:
        """The 0-based column in code points of byte `utf8_offset` of line `line` of the
        slice (`ast` columns count UTF-8 bytes, libcst's code points)."""
        if self._lines is None:
            self._lines = _LINE_END.split(self._sparse.text)
        text = self._lines[line - 1].encode("utf-8", "surrogatepass")
        return len(text[:utf8_offset].decode("utf-8", "surrogatepass"))

    # ------------------------------------------------------------------ internals
    def _parsed(self) -> ast.Module:
        if self._tree is None:
            self._tree = self._sparse.tree
        if self._tree is None:
            try:
                self._tree = ast.parse(self._sparse.text)
            except (SyntaxError, ValueError):  # libcst parsed it: not expected
                self._tree = ast.Module(body=[], type_ignores=[])
        return self._tree

    def _kept_of(self, key: tuple[cst.CSTNode, int], block: list[ast.stmt]) -> list[ast.stmt]:
        """The statements of an `ast` block that the slice kept (their first line is in it)."""
        kept = self._blocks.get(key)
        if kept is None:
            kept = [s for s in block if self.line(_first_line(s)) is not None]
            self._blocks[key] = kept
        return kept

    def _ast_index(
        self, key: tuple[cst.CSTNode, int], body: Sequence[cst.CSTNode], index: int
    ) -> int:
        """The index in the `ast` block of statement `index` of libcst's block."""
        counts = self._indexes.setdefault(key, [0])
        while len(counts) <= index:
            counts.append(counts[-1] + _size(body[len(counts) - 1]))
        return counts[index]


def _first_line(statement: ast.stmt) -> int:
    """Where the slicer's cut of a statement begins: its first decorator, else itself."""
    decorators: list[ast.expr] = getattr(statement, "decorator_list", [])
    return min([statement.lineno, *(d.lineno for d in decorators)])


def _size(statement: cst.CSTNode) -> int:
    """How many `ast` statements a libcst statement is."""
    if isinstance(statement, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
        return len(statement.body)
    return 1


def _blocks_of(owner: cst.CSTNode) -> list[Sequence[cst.CSTNode] | None]:
    """The statement blocks of a module or compound statement, in the order of
    `_ast_blocks_of`: the body, each `except:`, the `else:`, the `finally:`, each `case`
    (None for one it does not have). A one-line suite is a block of itself."""
    if isinstance(owner, cst.Module):
        return [owner.body]
    suites = [
        getattr(owner, "body", None),
        *(handler.body for handler in getattr(owner, "handlers", ())),
        _else_body(owner),
        getattr(getattr(owner, "finalbody", None), "body", None),
        *(case.body for case in getattr(owner, "cases", ())),
    ]
    return [_block(suite) for suite in suites]


def _else_body(owner: cst.CSTNode) -> cst.BaseSuite | None:
    """The suite of an `else:` (an `elif` is a statement of its own: see `statements`)."""
    orelse = getattr(owner, "orelse", None)
    return orelse.body if isinstance(orelse, cst.Else) else None


def _block(suite: object) -> Sequence[cst.CSTNode] | None:
    if isinstance(suite, cst.IndentedBlock):
        return suite.body
    if isinstance(suite, cst.SimpleStatementSuite):
        return (suite,)
    return None


def _ast_blocks_of(owner: ast.AST) -> list[list[ast.stmt]]:
    if isinstance(owner, ast.Module):
        return [owner.body]
    return [
        getattr(owner, "body", []),
        *(handler.body for handler in getattr(owner, "handlers", ())),
        getattr(owner, "orelse", []),
        getattr(owner, "finalbody", []),
        *(case.body for case in getattr(owner, "cases", ())),
    ]
