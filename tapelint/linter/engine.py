"""Lint one file: decode, skip or slice, parse once, build the tape model, run the rules.

A long-lived caller (the language server) parses through its project's `IncrementalParser`,
which reuses what earlier parses made of the top-level statements an edit left alone.

The model is walked a second time, over the same parse, only when a call binds a tape that a
helper hands back (`out, tape = self._forward(x)`): which calls do is known once the module's
own summary and the project's index are (`calls.handed_tapes`).

Positions are computed only for what is reported (libcst's PositionProvider over a copy of
the module pruned to the path to each reported node, only when a rule found something), and
mapped back through the slice's line map to the file's own lines.
"""

from __future__ import annotations

import ast
import contextlib
import gc
import io
import re
import tokenize
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import CodePosition, CodeRange, MetadataWrapper, PositionProvider

from tapelint.findings.diagnostics import Diagnostic, Edit, Fix, Position, Related
from tapelint.findings.rule import Finding, NodeEdit, Rule
from tapelint.linter.registry import rule_by_code_or_name
from tapelint.linter.suppression import unsuppressed
from tapelint.parsing.incremental import IncrementalParser
from tapelint.parsing.positions import PositionMemory, PrunedPositions
from tapelint.parsing.slicer import (
    SparseSource,
    SyntaxProblem,
    TriggerTest,
    encoding_declaration_problem,
    relevant_source,
    too_deeply_nested,
    too_large_to_parse,
)
from tapelint.semantic import FileModel, build_model
from tapelint.semantic.calls.handed_tapes import handed_tapes
from tapelint.semantic.file_model.ast_statements import AstStatements
from tapelint.semantic.file_model.call_starts import CallStarts
from tapelint.semantic.file_model.model import HandedTape
from tapelint.semantic.file_model.test_code import in_test_definition
from tapelint.semantic.project_model.summaries import ModuleSummary, ProjectIndex
from tapelint.semantic.summarising.function_summaries import summarize
from tapelint.settings.config import DEFAULT_MAX_FILE_SIZE
from tapelint.settings.policies.test_code import is_test_path


@dataclass(frozen=True)
class ModuleContext:
    """What a file is in its project: its module's dotted name (`__main__` for code that
    nothing imports), whether it is a package's `__init__`, the project's index of
    summaries (None: only the library table's), and how its text is parsed."""

    name: str = "__main__"
    is_package: bool = False
    index: ProjectIndex | None = None
    # Parses with the pieces of earlier parses, and places findings with the positions of
    # earlier checks (a server's project); None: the whole text, positions afresh.
    parser: IncrementalParser | None = field(default=None, compare=False)
    positions: PositionMemory | None = field(default=None, compare=False)


@dataclass
class FileAnalysis:
    diagnostics: list[Diagnostic]
    # The module's summary, when it was parsed and analysed (not for a file without a
    # trigger, undecodable or unparsable).
    summary: ModuleSummary | None = None
    # The qualified names outside the module the check looked up in the index: the result
    # depends on what the index says of them, and of nothing else outside the file but
    # `files`.
    asked: frozenset[str] = frozenset()
    # The other files whose text the result depends on (real paths): the files a notebook's
    # cells run or load (tapelint.linter.notebooks.cell_files). Notebooks are not cached;
    # a server checks a notebook again when one of them changes.
    files: frozenset[str] = frozenset()


class Linter:
    """Runs a fixed set of rules over sources; cheap to create, safe to reuse."""

    def __init__(
        self,
        rules: Sequence[type[Rule]],
        unfixable: frozenset[str] = frozenset(),
        max_file_size: int = DEFAULT_MAX_FILE_SIZE,
        quiet_in_tests: frozenset[str] = frozenset(),
        *,
        preview: bool = False,
        tests_relaxed: bool = True,
        ignore_noqa: bool = False,
    ) -> None:
        self.codes = frozenset(rule.code for rule in rules)
        # Preview mode: the findings a rule marks as a part still in preview are reported.
        self.preview = preview
        # Codes not reported inside a definition that is a test (`TestWaveAct()` in a
        # library module): what the default per-file-ignores turn off in test files.
        self.quiet_in_tests = quiet_in_tests
        # Whether the analysis gives test code its allowances (`test_code.is_test_code`):
        # false when the configuration checks tests like other code.
        self.tests_relaxed = tests_relaxed
        # `--ignore-noqa`: report what every noqa and `tapelint: ignore` comment silences.
        self.ignore_noqa = ignore_noqa
        # Codes whose findings are reported without their fix (`--unfixable`).
        self.unfixable = unfixable
        # Bytes: a larger source is TAP001, not parsed (`max-file-size`).
        self.max_file_size = max_file_size
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

    def check_bytes(
        self, data: bytes, path: str, context: ModuleContext | None = None
    ) -> list[Diagnostic]:
        return self.analyze_bytes(data, path, context).diagnostics

    def check_text(
        self,
        text: str,
        path: str,
        *,
        is_notebook: bool = False,
        context: ModuleContext | None = None,
    ) -> list[Diagnostic]:
        """Diagnostics of one source text; `is_notebook` when it is a notebook's code cells
        joined into one program (module-level state then outlives the last cell)."""
        return self.analyze_text(text, path, is_notebook=is_notebook, context=context).diagnostics

    def analyze_bytes(
        self, data: bytes, path: str, context: ModuleContext | None = None
    ) -> FileAnalysis:
        if not self.may_report(data):
            return FileAnalysis([])
        problem = encoding_declaration_problem(data)
        if problem is not None:
            return FileAnalysis(self._syntax_error(path, problem))
        try:
            text = decode_source(data)
        except (UnicodeDecodeError, SyntaxError, LookupError) as error:
            return FileAnalysis(
                self._tool_diagnostic("TAP002", path, 1, 1, f"cannot decode: {error}")
            )
        return self.analyze_text(text, path, context=context)

    def analyze_text(
        self,
        text: str,
        path: str,
        *,
        is_notebook: bool = False,
        context: ModuleContext | None = None,
        origin: LineOrigin | None = None,
    ) -> FileAnalysis:
        """The diagnostics of one source text, the summary of its module (for the project
        index), and the names outside it the check looked up in `context`'s index.
        `origin` maps a position in `text` to (cell, position within the cell, path) for a
        notebook's program: the summary's sites (and so related locations and the messages that
        name them) are then placed in cells, or in the files cells run; diagnostics stay in
        program lines."""
        text = with_newline_line_ends(text)
        if not self.codes or not self._trigger_test.in_text(text):
            return FileAnalysis([])
        size = _size_beyond(text, self.max_file_size)
        if size is not None:
            problem = f"{size:,} bytes, more than max-file-size ({self.max_file_size:,})"
            return FileAnalysis(self._syntax_error(path, SyntaxProblem(1, 1, problem)))
        with _gc_paused():
            found = self._analyze(text, path, is_notebook, context or ModuleContext(), origin)
        lines = text.split("\n")
        lines_of = {d.start.line: lines[d.start.line - 1] for d in found.diagnostics}
        kept = found.diagnostics
        if not self.ignore_noqa:
            kept = unsuppressed(kept, lines_of, text)
        found.diagnostics = sorted(kept, key=lambda d: d.sort_key)
        return found

    def _analyze(
        self,
        text: str,
        path: str,
        is_notebook: bool,
        context: ModuleContext,
        origin: LineOrigin | None,
    ) -> FileAnalysis:
        parse = context.parser.parse_tree if context.parser is not None else ast.parse
        sparse = relevant_source(text, self.triggers, parse)
        if isinstance(sparse, SyntaxProblem):
            return FileAnalysis(self._syntax_error(path, sparse))
        too_large = too_large_to_parse(sparse.text)
        if too_large is not None:
            return FileAnalysis(self._syntax_error(path, too_large))
        try:
            return self._analyze_sparse(sparse, text, path, is_notebook, context, origin)
        except RecursionError:
            # Python's parser took it, libcst's tree of it is too deep for Python's stack.
            deepest = too_deeply_nested(sparse.tree if sparse.tree is not None else text)
            if deepest is None:
                raise  # not the file's nesting: an engine bug
            return FileAnalysis(self._syntax_error(path, deepest))

    def _analyze_sparse(
        self,
        sparse: SparseSource,
        text: str,
        path: str,
        is_notebook: bool,
        context: ModuleContext,
        origin: LineOrigin | None,
    ) -> FileAnalysis:
        lines = text.split("\n")
        try:
            if context.parser is not None:
                module = context.parser.parse(sparse)
            else:
                module = cst.parse_module(sparse.text)
        except cst.ParserSyntaxError as error:
            line = sparse.original_line(error.raw_line)
            problem = SyntaxProblem(line, error.raw_column + 1, error.message)
            return FileAnalysis(self._syntax_error(path, problem))
        project = context.index or ProjectIndex()
        # What the names it imports from the project are, asked before its own summary
        # exists (it holds no binding of the names it imports from other modules).
        bindings = self._own_view(project, ModuleSummary(context.name), context)

        def modelled(handed_back: Mapping[cst.Call, Mapping[str, HandedTape]]) -> FileModel:
            model = build_model(
                module,
                source_text=text,
                is_notebook=is_notebook,
                is_test_file=is_test_path(path),
                module_name=context.name,
                is_package=context.is_package,
                through_project=bindings.tensorflow_binding,
                handed_back=handed_back,
            )
            model.path = path
            model.tests_relaxed = self.tests_relaxed
            model.set_parsed_text(sparse.text)
            if sparse.tree is not None:
                model.set_text_tree(sparse.tree)
            return model

        model = modelled({})
        locate = _Locator(model, sparse, lines, context.positions)
        # The summary is the first walk's: it depends on the module's own text only.
        summary = summarize(model, path, _placer(locate, origin))
        index = self._own_view(project, summary, context)
        handed_back = handed_tapes(model, index)
        if handed_back:
            # Helpers hand back tapes: walk again, with those calls' names bound to tapes.
            model = modelled(handed_back)
            locate = _Locator(model, sparse, lines, context.positions)
        model.index = index
        findings = [
            (type(rule), f)
            for rule in self.rules
            for f in rule.findings(model)
            if (self.preview or not f.preview)
            and (rule.code not in self.quiet_in_tests or not in_test_definition(model, f.node))
        ]
        diagnostics = self._locate(locate, path, findings)
        asked = frozenset(model.index.asked | bindings.asked)
        return FileAnalysis(diagnostics, summary, asked)

    @staticmethod
    def _own_view(
        project: ProjectIndex, summary: ModuleSummary, context: ModuleContext
    ) -> ProjectIndex:
        """The index a check of the module with summary `summary` asks."""
        view = project.with_module(summary)
        if context.is_package:
            # A package's own names may be its submodules' (`pkg.utils.f` asked in
            # `pkg/__init__.py`): record every name it asks, its own ones included.
            view.own_module = None
        return view

    def unreadable(self, path: str, reason: str) -> list[Diagnostic]:
        return self._tool_diagnostic("TAP002", path, 1, 1, reason)

    def unparsable(self, path: str, problem: SyntaxProblem) -> list[Diagnostic]:
        """TAP001 for a problem found outside `check_text` (a notebook cell)."""
        return self._syntax_error(path, problem)

    # ---------------------------------------------------------------- internals
    def _locate(
        self, locate: _Locator, path: str, findings: list[tuple[type[Rule], Finding]]
    ) -> list[Diagnostic]:
        diagnostics = []
        for rule, finding in findings:
            start, end = locate.span(finding.node)
            fix = None
            if finding.fix is not None and rule.code not in self.unfixable:
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
                    related=tuple(
                        Related(s.path, s.line, s.column, s.label, s.cell) for s in finding.related
                    ),
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


def summarize_text(text: str, path: str, context: ModuleContext) -> ModuleSummary:
    """The summary of a module's whole text, nothing sliced away, its sites placed in file
    `path` as reported: for functions a first pass did not analyse (a module with no
    trigger, a helper the slicer cut), when a check asks what they do to the gradients
    they are handed (`tapelint.project.transformers`). Raises what parsing raises."""
    text = with_newline_line_ends(text)
    model = build_model(
        cst.parse_module(text),
        source_text=text,
        module_name=context.name,
        is_package=context.is_package,
    )
    model.path = path
    locate = _Locator(model, SparseSource(text, ((1, 1),)), text.split("\n"))
    return summarize(model, path, _placer(locate, None), every_parameter=True)


class _Locator:
    """Positions of reported nodes in the file's own lines (1-based line and column).

    libcst's PositionProvider costs more than the parse itself (2.4 times on a file of
    training code), so it is not run over the module. For a reported node, the statements
    that hold it are pruned down to the path to it: each block on the way keeps only the
    statement that leads to the node, and the module keeps only the top-level statement. That
    small module is resolved. The innermost statement of the path keeps all its lines, so
    the node is as many lines below that statement's start as it is in the small module;
    where that statement starts in the file is Python's `ast`'s
    (`tapelint.semantic.file_model.ast_statements`: the slicer's tree, at no cost). Columns
    need no shift: every kept statement keeps its indentation. A node the model cannot place,
    or whose statement the `ast` tree does not pair with, is resolved in the whole module
    instead. With a `PositionMemory` (the language server's), the positions of a path of
    statements an edit left alone are the last check's.
    """

    def __init__(
        self,
        model: FileModel,
        sparse: SparseSource,
        lines: list[str],
        memory: PositionMemory | None = None,
    ) -> None:
        self._model = model
        self._memory = memory
        self._module = model.module
        self._sparse = sparse
        self._lines = lines
        # innermost statement of a path -> (lines to add, positions in its pruned module)
        self._pruned: dict[cst.CSTNode, tuple[int, Mapping[cst.CSTNode, CodeRange]]] = {}
        self._whole: Mapping[cst.CSTNode, CodeRange] | None = None
        self._statements = AstStatements(model, sparse)
        self._calls = CallStarts(model, self._statements)

    def place(self, node: cst.CSTNode) -> tuple[int, int, int | None]:
        """(line, column, cell) of where `node` starts, for a summary's sites: a call from
        Python's `ast` where it can be (`tapelint.semantic.file_model.call_starts`), else as
        for a report."""
        if isinstance(node, cst.Call):
            found = self._calls.start(node)
            if found is not None:
                return self._sparse.original_line(found[0]), found[1] + 1, None
        start, _ = self.span(node)
        return start.line, start.column, None

    def span(self, node: cst.CSTNode) -> tuple[Position, Position]:
        where = self._range(node)
        return self._position(where.start), self._position(where.end)

    def _range(self, node: cst.CSTNode) -> CodeRange:
        path = self._model.statement_path(node)
        found = self._resolve(path) if path is not None else None
        where = found[1].get(node) if found is not None else None
        if found is None or where is None:
            if self._whole is None:
                self._whole = _positions(self._module)
            return self._whole[node]
        shift = found[0]
        return CodeRange(
            CodePosition(where.start.line + shift, where.start.column),
            CodePosition(where.end.line + shift, where.end.column),
        )

    def _resolve(
        self, path: list[cst.CSTNode]
    ) -> tuple[int, Mapping[cst.CSTNode, CodeRange]] | None:
        innermost = path[-1]
        found = self._pruned.get(innermost)
        if found is not None:
            return found
        starts = self._statements.statements(path)
        first = self._statements.line(starts[0].lineno) if starts else None
        if first is None or self._index_in(self._module.body, path[0]) is None:
            return None
        key = (tuple(path), self._module.default_indent, self._module.default_newline)
        pruned = self._memory.get(key) if self._memory is not None else None
        if pruned is None:
            pruned = self._pruned_positions(path)
            if self._memory is not None:
                self._memory.put(key, pruned)
        found = (first - pruned[0], pruned[1])
        self._pruned[innermost] = found
        return found

    def _pruned_positions(self, path: list[cst.CSTNode]) -> PrunedPositions:
        """The positions in the module pruned to `path`, and the line where its innermost
        statement starts there (the first of its small statements, for a line of them:
        where the `ast` statement starts)."""
        innermost = path[-1]
        pruned = innermost
        for owner, child in zip(reversed(path[:-1]), reversed(path[1:]), strict=True):
            block = getattr(owner, "body", None)
            if (
                not isinstance(block, cst.IndentedBlock)
                or self._index_in(block.body, child) is None
            ):
                pruned = owner  # another block (`else:`, `except:`): keep the owner whole
                continue
            pruned = owner.with_changes(body=block.with_changes(body=[pruned]))
        alone = self._module.with_changes(
            body=[pruned], header=[], footer=[], has_trailing_newline=True
        )
        positions = _positions(alone)
        anchor = (
            innermost.body[0]
            if isinstance(innermost, (cst.SimpleStatementLine, cst.SimpleStatementSuite))
            else innermost
        )
        return positions[anchor].start.line, positions

    def _index_in(self, body: Sequence[cst.CSTNode], stmt: cst.CSTNode) -> int | None:
        """Where `stmt` sits in `body`, from the index the model recorded for it."""
        index = self._model.stmt_parent[stmt][2]
        return index if index < len(body) and body[index] is stmt else None

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


# A notebook program's (line, column) -> (cell, position within the cell, path): the path
# is None for a line of the notebook; for a line of a file a cell runs (`%run`), it is that
# file as reported, the cell None and the position the file's.
LineOrigin = Callable[[int, int], tuple[int | None, Position, str | None]]


def _placer(
    locate: _Locator, origin: LineOrigin | None
) -> Callable[[cst.CSTNode], tuple[int, int, int | None, str | None]]:
    """Where a summary's site is: a line of the file, a cell and a line in it, or a line of
    a file a notebook's cell runs."""

    def place(node: cst.CSTNode) -> tuple[int, int, int | None, str | None]:
        line, column, _ = locate.place(node)
        if origin is None:
            return line, column, None, None
        cell, where, path = origin(line, column)
        return where.line, where.column, cell, path

    return place


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


def _size_beyond(text: str, limit: int) -> int | None:
    """The size of `text` in UTF-8 when it is more than `limit` bytes, else None (counted
    only when its length does not settle it: a character is 1 to 4 bytes)."""
    if len(text) * 4 <= limit:
        return None
    size = len(text.encode("utf-8", "surrogatepass"))
    return size if size > limit else None


_LONE_CR = re.compile(r"\r(?!\n)")


def with_newline_line_ends(text: str) -> str:
    """`text` with each lone carriage return (an old Mac line end) made a newline.

    Python ends a line at `\r\n`, `\r` or `\n`, and so do the positions tapelint reports;
    the analysis splits lines at `\n` only. One character for one keeps every offset, line
    and column, so a file with `\r`, `\r\n` or `\n` line ends gets the same findings at
    the same positions. (`--fix` leaves a file with lone CRs alone, with a warning.)"""
    return _LONE_CR.sub("\n", text) if "\r" in text else text


def decode_source(data: bytes) -> str:
    """Decode Python source as the interpreter would: BOM, coding cookie, else UTF-8."""
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    return data.decode(encoding).removeprefix("\ufeff")
