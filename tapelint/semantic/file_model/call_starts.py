"""Where a call starts, from Python's `ast` of the same text: the sites of function summaries.

Every parsed file is summarised, and a summary's sites (the gradient call a helper returns,
the apply it makes, each call it hands a parameter to) need a line and a column, whether or
not anything is ever reported there. libcst's positions cost milliseconds per resolution
even on a pruned module; Python's `ast` has them for free (`ast_statements` pairs the two
trees statement by statement). Within one simple statement line, the calls taken in
source order (libcst's pre-order; `ast`'s sorted by start, the enclosing call first) are
the same calls. Where that correspondence is not plain (a call in the header of a compound
statement, a call in parentheses of its own), `start` says None and the caller uses libcst.
"""

from __future__ import annotations

import ast

import libcst as cst

from tapelint.semantic.file_model.ast_statements import AstStatements
from tapelint.semantic.file_model.children import child_nodes
from tapelint.semantic.file_model.model import FileModel


class CallStarts:
    def __init__(self, model: FileModel, statements: AstStatements) -> None:
        self._model = model
        self._statements = statements

    def start(self, node: cst.Call) -> tuple[int, int] | None:
        """(line, 0-based column in code points) of where `node` starts in the slice."""
        if node.lpar:
            return None
        path = self._model.statement_path(node)
        if not path or not isinstance(path[-1], cst.SimpleStatementLine):
            return None
        statements = self._statements.statements(path)
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
        line = self._statements.line(call.lineno)
        if line is None:
            return None
        return line, self._statements.column(line, call.col_offset)


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
