"""Lint one file: decode, skip or slice, parse once, build the tape model, run the rules.

Positions are computed only for what is reported (libcst's PositionProvider over the
top-level statements that hold a finding, only when a rule found something), and mapped back
through the slice's line map to the file's own lines.
"""

from __future__ import annotations

import contextlib
import gc
import io
import re
import tokenize
from collections.abc import Iterator, Mapping, Sequence

import libcst as cst
from libcst.metadata import CodePosition, CodeRange, MetadataWrapper, PositionProvider

from tapelint.analysis import FileModel, build_model
from tapelint.diagnostics import Diagnostic, Edit, Fix, Position
from tapelint.registry import rule_by_code_or_name
from tapelint.rule import Finding, NodeEdit, Rule
from tapelint.source import SparseSource, SyntaxProblem, TriggerTest, relevant_source
from tapelint.suppression import unsuppressed


class Linter:
    """Runs a fixed set of rules over sources; cheap to create, safe to reuse."""

    def __init__(self, rules: Sequence[type[Rule]]) -> None:
        self.codes = frozenset(rule.code for rule in rules)
        self.rules = [rule() for rule in rules if not rule.engine_reported]
        # Engine-reported rules (syntax errors) have triggers too: they apply to the files
        # tapelint reads, which are the files some rule can have something to say about.
        self.triggers = tuple(sorted({t for rule in rules for t in rule.triggers}))
        self._trigger_test = TriggerTest(self.triggers)

    # ---------------------------------------------------------------- entry points
    def may_report(self, data: bytes) -> bool:
        """Whether a file's raw bytes mention a trigger where code could use it; without one
        `check_bytes` reports nothing. A substring search per trigger, and a one-line pattern
        for the triggers mostly mentioned in prose or definitions (`source.USE_SHAPES`)."""
        return bool(self.codes) and self._trigger_test.in_bytes(data)

    def check_bytes(self, data: bytes, path: str) -> list[Diagnostic]:
        if not self.may_report(data):
            return []
        try:
            text = decode_source(data)
        except (UnicodeDecodeError, SyntaxError, LookupError) as error:
            return self._tool_diagnostic("TAP002", path, 1, 1, f"cannot decode: {error}")
        return self.check_text(text, path)

    def check_text(self, text: str, path: str, *, is_notebook: bool = False) -> list[Diagnostic]:
        """Diagnostics of one source text; `is_notebook` when it is a notebook's code cells
        joined into one program (module-level state then outlives the last cell)."""
        if not self.codes or not self._trigger_test.in_text(text):
            return []
        with _gc_paused():
            return self._check_text(text, path, is_notebook)

    def _check_text(self, text: str, path: str, is_notebook: bool) -> list[Diagnostic]:
        lines = text.split("\n")
        sparse = relevant_source(text, self.triggers)
        if isinstance(sparse, SyntaxProblem):
            diagnostics = self._syntax_error(path, sparse)
        else:
            try:
                module = cst.parse_module(sparse.text)
            except cst.ParserSyntaxError as error:
                line = sparse.original_line(error.raw_line)
                problem = SyntaxProblem(line, error.raw_column + 1, error.message)
                diagnostics = self._syntax_error(path, problem)
            else:
                model = build_model(module, source_text=text, is_notebook=is_notebook)
                findings = [(type(rule), f) for rule in self.rules for f in rule.findings(model)]
                if not findings:
                    return []
                diagnostics = self._locate(model, sparse, lines, path, findings)
        lines_of = {d.start.line: lines[d.start.line - 1] for d in diagnostics}
        return sorted(unsuppressed(diagnostics, lines_of, text), key=lambda d: d.sort_key)

    def unreadable(self, path: str, reason: str) -> list[Diagnostic]:
        return self._tool_diagnostic("TAP002", path, 1, 1, reason)

    def unparsable(self, path: str, problem: SyntaxProblem) -> list[Diagnostic]:
        """TAP001 for a problem found outside `check_text` (a notebook cell)."""
        return self._syntax_error(path, problem)

    # ---------------------------------------------------------------- internals
    def _locate(
        self,
        model: FileModel,
        sparse: SparseSource,
        lines: list[str],
        path: str,
        findings: list[tuple[type[Rule], Finding]],
    ) -> list[Diagnostic]:
        nodes = [finding.node for _, finding in findings]
        nodes += [edit.node for _, f in findings if f.fix is not None for edit in f.fix.edits]
        locate = _Locator(model, sparse, lines, nodes)
        diagnostics = []
        for rule, finding in findings:
            start, end = locate.span(finding.node)
            fix = None
            if finding.fix is not None:
                edits = tuple(locate.edit(edit) for edit in finding.fix.edits)
                fix = Fix(finding.fix.title, finding.fix.applicability, edits)
            diagnostics.append(
                Diagnostic(
                    path=path,
                    start=start,
                    end=end,
                    code=rule.code,
                    name=rule.name,
                    severity=rule.severity,
                    message=finding.message,
                    fix=fix,
                )
            )
        return diagnostics

    def _syntax_error(self, path: str, problem: SyntaxProblem) -> list[Diagnostic]:
        return self._tool_diagnostic(
            "TAP001", path, problem.line, problem.column, f"cannot parse: {problem.message}"
        )

    def _tool_diagnostic(
        self, code: str, path: str, line: int, column: int, message: str
    ) -> list[Diagnostic]:
        rule = rule_by_code_or_name(code)
        if rule is None or code not in self.codes:
            return []
        start = Position(line, column)
        return [Diagnostic(path, start, start, rule.code, rule.name, rule.severity, message)]


class _Locator:
    """Positions of reported nodes in the file's own lines (1-based line and column).

    libcst's PositionProvider costs more than the parse itself (2.4 times on a file of
    training code), so positions are resolved only for the top-level statements that hold a
    reported node, each as a module of its own, and shifted by the lines before it. Those
    lines come from the statements resolved anyway and from the code generated for the others
    (several times cheaper than positions). If the model cannot place a node, the whole module
    is resolved instead.
    """

    def __init__(
        self, model: FileModel, sparse: SparseSource, lines: list[str], nodes: list[cst.CSTNode]
    ) -> None:
        self._model = model
        self._module = model.module
        self._sparse = sparse
        self._lines = lines
        self._index = {stmt: index for index, stmt in enumerate(self._module.body)}
        self._by_statement: dict[cst.CSTNode, Mapping[cst.CSTNode, CodeRange]] = {}
        self._line_counts: dict[int, int] = {}  # body index -> lines of its code
        self._whole: Mapping[cst.CSTNode, CodeRange] | None = None
        statements = {model.top_level_statement(node) for node in nodes}
        if all(stmt in self._index for stmt in statements):
            for stmt in statements:
                self._resolve(stmt)
        self._lines_before = [sum(self._line_count(line) for line in self._module.header)]

    def span(self, node: cst.CSTNode) -> tuple[Position, Position]:
        where = self._range(node)
        return self._position(where.start), self._position(where.end)

    def _resolve(self, stmt: cst.CSTNode) -> None:
        alone = self._module.with_changes(
            body=[stmt], header=[], footer=[], has_trailing_newline=True
        )
        ranges = _positions(alone)
        self._by_statement[stmt] = ranges
        self._line_counts[self._index[stmt]] = ranges[alone].end.line - 1

    def _range(self, node: cst.CSTNode) -> CodeRange:
        stmt = self._model.top_level_statement(node)
        ranges = self._by_statement.get(stmt) if stmt is not None else None
        where = ranges.get(node) if ranges is not None else None
        if where is None:
            if self._whole is None:
                self._whole = _positions(self._module)
            return self._whole[node]
        shift = self._before(self._index[stmt])
        return CodeRange(
            CodePosition(where.start.line + shift, where.start.column),
            CodePosition(where.end.line + shift, where.end.column),
        )

    def _before(self, index: int) -> int:
        """Lines of the module's code before the statement at `index` of its body."""
        while len(self._lines_before) <= index:
            done = len(self._lines_before) - 1
            count = self._line_counts.get(done)
            if count is None:
                count = self._line_count(self._module.body[done])
            self._lines_before.append(self._lines_before[-1] + count)
        return self._lines_before[index]

    def _line_count(self, node: cst.CSTNode) -> int:
        """Line ends in the code generated for `node`, counted as PositionProvider does."""
        return len(_NEWLINE.findall(self._module.code_for_node(node)))

    def _position(self, point: CodePosition) -> Position:
        return Position(self._sparse.original_line(point.line), point.column + 1)

    def edit(self, edit: NodeEdit) -> Edit:
        start, end = self.span(edit.node)
        if edit.kind == "replace":
            return Edit(start, end, edit.text)
        # Inserted lines are indented like the statement, with its own whitespace (tabs too).
        indent = self._lines[start.line - 1][: start.column - 1]
        text = "".join(f"{indent}{line}\n" for line in edit.text.split("\n"))
        if edit.kind == "insert_before":
            return Edit(Position(start.line, 1), Position(start.line, 1), text)
        # A statement's range ends either on its last line or at column 1 of the line after it.
        line_after = Position(end.line + 1 if end.column > 1 else end.line, 1)
        return Edit(line_after, line_after, text)


_NEWLINE = re.compile(r"\r\n?|\n")


def _positions(module: cst.Module) -> Mapping[cst.CSTNode, CodeRange]:
    return MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """No cyclic garbage collection while one file is parsed and analysed.

    Parsing allocates hundreds of thousands of objects (AST and libcst nodes), and each
    allocation burst makes the collector scan them, and every imported module, again and
    again: 15-25% of the time of a parse. The file's cycles are collected after it.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def decode_source(data: bytes) -> str:
    """Decode Python source as the interpreter would: BOM, coding cookie, else UTF-8."""
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    return data.decode(encoding).removeprefix("\ufeff")
