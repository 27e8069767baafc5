"""Where a call starts, from Python's `ast` of the same text: the sites of function summaries.

Every parsed file is summarised, and a summary's sites (the gradient call a helper returns,
the apply it makes, each call it hands a parameter to) need a line and a column, whether or
not anything is ever reported there. libcst's positions cost milliseconds per resolution
even on a pruned module; Python's `ast` has them for free. The two trees parse the same
text, so they correspond statement by statement: a simple statement line of libcst is as
many `ast` statements as it has small statements, any other statement is one; and within
one simple statement line, the calls taken in source order (libcst's pre-order; `ast`'s
sorted by start, the enclosing call first) are the same calls. Where that correspondence
is not plain (a call in the header of a compound statement or in a one-line block, a call
in parentheses of its own), `start` says None and the caller uses libcst.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence

import libcst as cst

from tapelint.analysis import FileModel
from tapelint.analysis.file_model.children import child_nodes

# The line ends Python's tokenizer counts (not form feeds, as `str.splitlines` would).
_LINE_END = re.compile(r"\r\n?|\n")


class CallStarts:
    def __init__(self, model: FileModel, text: str) -> None:
        self._model = model
        self._text = text
        self._tree: ast.Module | None = None
        self._lines: list[str] = []
        # (a block's owner, which of its blocks) -> `ast` index of each of its statements
        self._indexes: dict[tuple[cst.CSTNode, int], list[int]] = {}

    def start(self, node: cst.Call) -> tuple[int, int] | None:
        """(line, 0-based column in code points) of where `node` starts in the text."""
        if node.lpar:
            return None
        path = self._model.statement_path(node)
        if not path or not isinstance(path[-1], cst.SimpleStatementLine):
            return None
        statements = self._statements(path)
        if statements is None:
            return None
        ours = _calls_in(path[-1])
        theirs = sorted(
            (n for s in statements for n in ast.walk(s) if isinstance(n, ast.Call)),
            key=lambda n: (n.lineno, n.col_offset, -(n.end_lineno or 0), -(n.end_col_offset or 0)),
        )
        if len(ours) != len(theirs):
            return None
        call = theirs[next(i for i, found in enumerate(ours) if found is node)]
        line = self._lines[call.lineno - 1].encode("utf-8", "surrogatepass")
        return call.lineno, len(line[: call.col_offset].decode("utf-8", "surrogatepass"))

    def _statements(self, path: list[cst.CSTNode]) -> list[ast.stmt] | None:
        """The `ast` statements of the simple statement line at the end of `path`."""
        if self._tree is None:
            try:
                self._tree = ast.parse(self._text)
            except (SyntaxError, ValueError):  # libcst parsed it: not expected
                self._tree = ast.Module(body=[], type_ignores=[])
            self._lines = _LINE_END.split(self._text)
        owner: cst.CSTNode = self._model.module
        ast_owner: ast.AST = self._tree
        for statement in path:
            if statement is getattr(owner, "orelse", None):  # an `elif`: the `else:` is it
                orelse = getattr(ast_owner, "orelse", None)
                if not isinstance(statement, cst.If) or not orelse:
                    return None
                if len(orelse) != 1 or not isinstance(orelse[0], ast.If):
                    return None
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
            block, ast_block = blocks[number], ast_blocks[number]
            assert block is not None
            first = self._ast_index((owner, number), block, index)
            if statement is path[-1]:
                assert isinstance(statement, cst.SimpleStatementLine)
                found = ast_block[first : first + len(statement.body)]
                return found if len(found) == len(statement.body) else None
            if first >= len(ast_block):
                return None
            owner, ast_owner = statement, ast_block[first]
        return None

    def _ast_index(
        self, key: tuple[cst.CSTNode, int], body: Sequence[cst.CSTNode], index: int
    ) -> int:
        """The index in the `ast` block of statement `index` of libcst's block."""
        counts = self._indexes.setdefault(key, [0])
        while len(counts) <= index:
            previous = body[len(counts) - 1]
            size = len(previous.body) if isinstance(previous, cst.SimpleStatementLine) else 1
            counts.append(counts[-1] + size)
        return counts[index]


def _blocks_of(owner: cst.CSTNode) -> list[Sequence[cst.CSTNode] | None]:
    """The statement blocks of a module or compound statement, in the order of
    `_ast_blocks_of`: the body, each `except:`, the `else:`, the `finally:` (None for one
    it does not have, or that is not an indented block)."""
    if isinstance(owner, cst.Module):
        return [owner.body]
    suites = [
        getattr(owner, "body", None),
        *(handler.body for handler in getattr(owner, "handlers", ())),
        getattr(getattr(owner, "orelse", None), "body", None),
        getattr(getattr(owner, "finalbody", None), "body", None),
    ]
    return [suite.body if isinstance(suite, cst.IndentedBlock) else None for suite in suites]


def _ast_blocks_of(owner: ast.AST) -> list[list[ast.stmt]]:
    if isinstance(owner, ast.Module):
        return [owner.body]
    return [
        getattr(owner, "body", []),
        *(handler.body for handler in getattr(owner, "handlers", ())),
        getattr(owner, "orelse", []),
        getattr(owner, "finalbody", []),
    ]


def _calls_in(statement: cst.CSTNode) -> list[cst.Call]:
    """The calls in `statement`, in source order (pre-order)."""
    found: list[cst.Call] = []
    pending: list[cst.CSTNode] = [statement]
    while pending:
        node = pending.pop()
        if isinstance(node, cst.Call):
            found.append(node)
        pending.extend(reversed(child_nodes(node)))
    return found
