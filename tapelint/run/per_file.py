"""The work one file takes, in the steps of a run; what worker processes run.

- `analyse_file` (first pass): the file checked with its module's name and the library's
  index only: its diagnostics, its module's summary, the names outside it it asked about.
  `analysis_without_parsing` answers the same where no parse is needed (no trigger, a
  cache hit).
- `finish_file`: the file checked again with the index of the project (when its result
  depends on other modules), and fixed when asked.

Fixes are a compare-and-swap: each result carries the digest of the bytes it was computed
from (`Analysed.digest`, `Checked.digest`), the fix stage works only on a file that still
holds those bytes, and the write replaces only those bytes (`fixer.write_atomically`). A
file changed in between is left as it is, with a warning (docs/robustness.md says why it
is not checked again instead).

Neither raises: an engine bug becomes an error for this file only, so the other files are
still checked. A result per file (not a side effect) is what lets the runner run files in
any order, in other processes, or answer from the cache.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from tapelint.findings.diagnostics import Diagnostic
from tapelint.findings.rule import Rule
from tapelint.linter.engine import FileAnalysis, Linter, ModuleContext, decode_source
from tapelint.linter.fixer import (
    FileChanged,
    FixError,
    NotRestored,
    encode_like,
    fix_source,
    fixable_count,
    unified_diff,
    write_atomically,
)
from tapelint.linter.notebooks.cell_files import NotebookFiles
from tapelint.linter.notebooks.notebook import analyze_notebook, fix_notebook
from tapelint.project.modules import ModuleName
from tapelint.run.add_noqa import annotate
from tapelint.run.cache import ResultCache
from tapelint.settings.config import Settings
from tapelint.settings.globs import Globs, relative_posix
from tapelint.settings.policies.lab_solutions import solution_bytes
from tapelint.settings.policies.test_code import DEFAULT_PER_FILE_IGNORES, TEST_CODE_IGNORES
from tapelint.settings.selection import rules_matching, select_rules
from tapelint.sources.discovery import SourceFile, SourceKind, read_source


@dataclass(frozen=True)
class Options:
    force_exclude: bool = False
    fix: bool = False  # apply fixes and write the files
    diff: bool = False  # compute the fixes but only report them as a diff (wins over fix)
    unsafe_fixes: bool = False
    jobs: int = 0  # worker processes; 0: one per available core
    cache_dir: Path | None = None  # None: no cache (see tapelint.run.cache)
    add_noqa: bool = False  # write a noqa comment for each finding (tapelint.run.add_noqa)

    @property
    def fixing(self) -> bool:
        return self.fix or self.diff


@dataclass
class Report:
    diagnostics: list[Diagnostic] = field(default_factory=list)  # what remains, sorted
    fixed: int = 0  # diagnostics fixed (or, with `diff`, that would be)
    fixed_paths: list[str] = field(default_factory=list)
    # For each fixed file: how many diagnostics of each (code, name) were fixed.
    fixed_codes: dict[str, Counter[tuple[str, str]]] = field(default_factory=dict)
    diffs: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # the run exits 2
    warnings: list[str] = field(default_factory=list)
    noqa_added: int = 0  # with `add_noqa`: lines given a new or extended noqa comment
    noqa_paths: list[str] = field(default_factory=list)  # files they are in
    skipped: int = (
        0  # files and directories the walk skipped by policy (`tapelint.sources.discovery`)
    )

    def add(self, other: Report) -> None:
        """Fold another (per-file) report into this one."""
        self.diagnostics.extend(other.diagnostics)
        self.fixed += other.fixed
        self.fixed_paths.extend(other.fixed_paths)
        self.fixed_codes.update(other.fixed_codes)
        self.diffs.extend(other.diffs)
        self.errors.extend(other.errors)
        self.warnings.extend(other.warnings)
        self.noqa_added += other.noqa_added
        self.noqa_paths.extend(other.noqa_paths)


@dataclass(frozen=True)
class FileTask:
    source: SourceFile
    display: str  # the path it is reported under
    linter: Linter
    module: ModuleName = field(default_factory=ModuleName)
    # Text standing for other files (real path, bytes): an editor's unsaved buffers, read
    # for the files a notebook's cells run or load.
    buffers: tuple[tuple[str, bytes], ...] = field(default=(), repr=False)

    def notebook_files(self) -> NotebookFiles:
        """Where the files the notebook's cells run or load are read."""
        real = self.source.real or str(self.source.path)
        return NotebookFiles.beside(real, self.display, self.linter.max_file_size, self.buffers)


@dataclass
class Analysed:
    """A file's first pass."""

    analysis: FileAnalysis
    key: str | None = None  # its cache key (None: not cached)
    error: str | None = None  # an internal error: the file has no result
    digest: bytes | None = None  # of the bytes checked (`content_digest`; None: not read)


@dataclass(frozen=True)
class Checked:
    """A file's final diagnostics, and the digest of the bytes they came from (None: the
    file could not be read)."""

    diagnostics: list[Diagnostic]
    digest: bytes | None


def content_digest(data: bytes) -> bytes:
    """What a fix compares to know the file still holds the bytes it was checked in."""
    return hashlib.blake2b(data, digest_size=32).digest()


# ---------------------------------------------------------------------- first pass
def analysis_without_parsing(
    task: FileTask, data: bytes, cache: ResultCache | None
) -> tuple[Analysed | None, str | None]:
    """The first pass of a Python file when it can be had without a parse (no trigger, a
    cache hit), else None; and its cache key."""
    if not task.linter.may_report(data):
        return Analysed(FileAnalysis([])), None  # nothing to fix: no digest needed
    if cache is None:
        return None, None
    # A lab notebook's results also depend on its solution's (`lab_solutions`).
    keyed = data
    if task.source.kind is SourceKind.NOTEBOOK:
        keyed = data + b"\0" + solution_bytes(task.display)
    key = cache.analysis_key(keyed, task.display, task.linter.codes, task.module.key)
    found = cache.get_analysis(key)
    answer = Analysed(found, key, digest=content_digest(data)) if found is not None else None
    return answer, key


def analyse_file(task: FileTask, cache: ResultCache | None, key: str | None) -> Analysed:
    """The first pass of a file read from disk (see `first_pass`)."""
    try:
        data = read_source(task.source.path)
    except OSError as error:
        return Analysed(_unreadable(task, error))
    return first_pass(task, data, cache, key)


def first_pass(task: FileTask, data: bytes, cache: ResultCache | None, key: str | None) -> Analysed:
    """The file checked with its module's name and the library's index only; stored in
    the cache under `key` (from `analysis_without_parsing`) when there is one."""
    try:
        analysis = analyse_data(task, data, ModuleContext(task.module.name, task.module.is_package))
    except Exception as error:  # an engine bug must not end the run for other files
        return Analysed(FileAnalysis([]), error=_internal(task.display, error))
    if cache is not None and key is not None:
        cache.put_analysis(key, analysis)
    return Analysed(analysis, key, digest=content_digest(data))


def analyse_data(task: FileTask, data: bytes, context: ModuleContext) -> FileAnalysis:
    if task.source.kind is SourceKind.NOTEBOOK:
        return analyze_notebook(task.linter, data, task.display, context, task.notebook_files())
    return task.linter.analyze_bytes(data, task.display, context)


# ---------------------------------------------------------------------- final pass
@dataclass
class Finished:
    report: Report
    # With a re-check: the names it asked about (None: the first pass's result was kept).
    asked: frozenset[str] | None = None
    digest: bytes | None = None  # of the bytes checked (None: the file could not be read)


def finish_file(
    task: FileTask, context: ModuleContext, options: Options, earlier: Checked | None
) -> Finished:
    """The file's report: checked again with `context` when `earlier` (the first pass's
    diagnostics, when they are final) is None, then fixed with `context` when asked.
    Nothing is fixed in a file that no longer holds the bytes `earlier` came from."""
    report = Report()
    asked = None
    try:
        data = read_source(task.source.path)
    except OSError as error:
        report.diagnostics = _unreadable(task, error).diagnostics
        return Finished(report)
    digest = content_digest(data)
    try:
        if earlier is None:
            analysis = analyse_data(task, data, context)
            diagnostics, asked = analysis.diagnostics, analysis.asked
        elif earlier.digest != digest:
            report.diagnostics = earlier.diagnostics
            what = "no noqa comments added" if options.add_noqa else "fixes not applied"
            report.warnings.append(_changed(task.display, what))
            return Finished(report, digest=digest)
        else:
            diagnostics = earlier.diagnostics
        if options.fixing and fixable_count(diagnostics, unsafe=options.unsafe_fixes):
            diagnostics = _fix_file(task, data, diagnostics, context, options, report)
        elif options.add_noqa and diagnostics:
            diagnostics = _add_noqa(task, data, diagnostics, context, report)
        report.diagnostics = diagnostics
    except Exception as error:  # an engine bug must not end the run for other files
        report.diagnostics = []
        report.errors.append(_internal(task.display, error))
    return Finished(report, asked, digest)


def _changed(display: str, what: str) -> str:
    """The warning for a file whose bytes are not those its findings came from."""
    return (
        f"{display}: {what}: {FileChanged()}; it is left as it is now, and its findings "
        "are of the text it had before (run tapelint again)"
    )


def _unwritten(display: str, what: str, error: OSError) -> str:
    """The error for a file that could not be written: whether it is unchanged."""
    reason = error.strerror or str(error)
    if not isinstance(error, NotRestored):
        return f"{display}: cannot write {what}: {reason}; file left unchanged"
    copy = (
        f"its old content is saved in {error.old_copy}"
        if error.old_copy is not None
        else "its old content could not be saved anywhere"
    )
    return (
        f"{display}: cannot write {what}: {reason}; THE FILE MAY BE DAMAGED: its old content "
        f"could not be put back ({copy})"
    )


def _unreadable(task: FileTask, error: OSError) -> FileAnalysis:
    return FileAnalysis(
        task.linter.unreadable(task.display, f"cannot read: {error.strerror or error}")
    )


def _internal(display: str, error: Exception) -> str:
    return f"{display}: internal error: {type(error).__name__}: {error}"


# ---------------------------------------------------------------------- noqa
def _add_noqa(
    task: FileTask,
    data: bytes,
    diagnostics: list[Diagnostic],
    context: ModuleContext,
    report: Report,
) -> list[Diagnostic]:
    """Write a noqa comment for each diagnostic; the diagnostics left unsilenced. Every
    re-lint uses `context`, the one the diagnostics came from."""
    notebook = task.source.kind is SourceKind.NOTEBOOK

    def lint(new: bytes) -> list[Diagnostic]:
        return analyse_data(task, new, context).diagnostics

    result = annotate(data, diagnostics, lint, notebook=notebook)
    report.warnings.extend(result.warnings)
    if result.data is None:
        return result.remaining
    try:
        write_atomically(task.source.path, result.data, expected=data)
    except FileChanged:
        report.warnings.append(_changed(task.display, "no noqa comments added"))
        return diagnostics
    except OSError as error:
        report.errors.append(_unwritten(task.display, "noqa comments", error))
        return diagnostics
    report.noqa_added += result.added
    report.noqa_paths.append(task.display)
    return result.remaining


# ---------------------------------------------------------------------- fixing
def _fix_file(
    task: FileTask,
    data: bytes,
    diagnostics: list[Diagnostic],
    context: ModuleContext,
    options: Options,
    report: Report,
) -> list[Diagnostic]:
    """Fix one file; the diagnostics to report afterwards."""
    display = task.display
    try:
        fixed = fixed_source(data, task, diagnostics, context, options)
        if fixed is None:
            return diagnostics
        if options.diff:
            report.diffs.extend(unified_diff(*change) for change in fixed.changes)
        else:
            write_atomically(task.source.path, fixed.data, expected=data)
    except FileChanged:
        report.warnings.append(_changed(display, "fixes not applied"))
        return diagnostics
    except FixError as error:
        report.warnings.append(f"{display}: fixes not applied: {error}; file left unchanged")
        return diagnostics
    except OSError as error:
        report.errors.append(_unwritten(display, "fixes", error))
        return diagnostics
    report.fixed += fixed.fixed
    report.fixed_paths.append(display)
    report.fixed_codes[display] = fixed.fixed_codes
    return diagnostics if options.diff else fixed.remaining


@dataclass(frozen=True)
class Fixed:
    data: bytes  # the fixed file
    fixed: int  # diagnostics whose fix was applied
    remaining: list[Diagnostic]
    changes: list[tuple[str, str, str]]  # (label, before, after) for a diff
    fixed_codes: Counter[tuple[str, str]]  # how many of each (code, name) were fixed


def fixed_source(
    data: bytes,
    task: FileTask,
    diagnostics: list[Diagnostic],
    context: ModuleContext,
    options: Options,
) -> Fixed | None:
    """The file with its fixes applied; None when they change nothing. Raises FixError.
    Every re-lint uses `context`, the one the diagnostics came from."""
    linter, display = task.linter, task.display
    if task.source.kind is SourceKind.NOTEBOOK:
        result = fix_notebook(
            linter,
            data,
            display,
            unsafe=options.unsafe_fixes,
            context=context,
            files=task.notebook_files(),
        )
        if not result.changes:
            return None
        changes = [(f"{display}:cell {cell}", old, new) for cell, old, new in result.changes]
        return Fixed(result.data, result.fixed, result.remaining, changes, result.fixed_codes)
    text = decode_source(data)
    fixed = fix_source(
        text,
        lambda new: linter.check_text(new, display, context=context),
        unsafe=options.unsafe_fixes,
        diagnostics=diagnostics,
    )
    if fixed.text == text:
        return None
    encoded = encode_like(data, fixed.text)
    changes = [(display, text, fixed.text)]
    return Fixed(encoded, fixed.fixed, fixed.remaining, changes, fixed.fixed_codes)


def display_path(path: Path, cwd: Path) -> str:
    """Relative to the current directory when under it, else absolute."""
    relative = relative_posix(path, cwd)
    return relative if relative is not None else str(path)


# ---------------------------------------------------------------------- linters
class Linters:
    """The linter for each file: the selected rules less its per-file-ignores."""

    def __init__(self, settings: Settings) -> None:
        self.root = settings.root
        self.selected = select_rules(
            settings.select, settings.extend_select, settings.ignore, preview=settings.preview
        )
        # Patterns that ignore the same rules share one matcher (the default per-file-ignores
        # give fifteen test-file patterns the same seven rules), so a file is matched once per
        # group. A negated pattern (`!keep.py`) stays alone: in one matcher it would unmatch
        # the others' files too.
        grouped: dict[tuple[str | None, tuple[str, ...]], list[str]] = {}
        for glob, selectors in settings.per_file_ignores:
            alone = glob if glob.startswith("!") else None
            grouped.setdefault((alone, tuple(selectors)), []).append(glob)
        self.per_file = [
            (Globs(globs), {r for s in selectors for r in rules_matching(s, preview=True)})
            for (_, selectors), globs in grouped.items()
        ]
        self.unfixable = frozenset(
            rule.code for s in settings.unfixable for rule in rules_matching(s, preview=True)
        )
        self.max_file_size = settings.max_file_size
        self.preview = settings.preview
        self.ignore_noqa = settings.ignore_noqa
        # While the test-file default of per-file-ignores holds (setting the key replaces
        # it), its rules are quiet in tests written in other files too, and the analysis
        # gives test code its allowances (`test_code`); without it, tests are code like any.
        self.tests_relaxed = (
            settings.per_file_ignores[: len(DEFAULT_PER_FILE_IGNORES)] == DEFAULT_PER_FILE_IGNORES
        )
        self.quiet_in_tests = frozenset(TEST_CODE_IGNORES if self.tests_relaxed else ())
        self._linters: dict[tuple[type[Rule], ...], Linter] = {}

    def for_file(self, path: Path) -> Linter:
        if not self.per_file:  # one linter for every file (asked for each file of a run)
            return self._linter(tuple(self.selected))
        relative = relative_posix(path, self.root) or path.name
        ignored = {r for globs, ignores in self.per_file if globs.match(relative) for r in ignores}
        return self._linter(tuple(rule for rule in self.selected if rule not in ignored))

    def _linter(self, rules: tuple[type[Rule], ...]) -> Linter:
        if rules not in self._linters:
            self._linters[rules] = Linter(
                rules,
                self.unfixable,
                self.max_file_size,
                self.quiet_in_tests,
                preview=self.preview,
                tests_relaxed=self.tests_relaxed,
                ignore_noqa=self.ignore_noqa,
            )
        return self._linters[rules]
