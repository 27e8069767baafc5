"""One `tapelint check` run: discover the files, lint each with the rules that apply to it,
fix when asked, and collect what to report. Printing is the CLI's job.

A problem with one file never stops the run: a file that cannot be read becomes a TAP002
diagnostic, a fix that would break a file leaves it untouched with a warning, and an
unexpected error in the engine is reported for that file (and makes the run exit 2).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tapelint.add_noqa import annotate
from tapelint.cache import CachedLinter, ResultCache
from tapelint.config import Settings
from tapelint.diagnostics import Diagnostic
from tapelint.engine import Linter, decode_source
from tapelint.files import SourceFile, SourceKind, discover, is_excluded, kind_of, read_source
from tapelint.fixer import (
    FixError,
    encode_like,
    fix_source,
    fixable_count,
    unified_diff,
    write_atomically,
)
from tapelint.globs import Globs, relative_posix
from tapelint.notebook import check_notebook, fix_notebook
from tapelint.rule import Rule
from tapelint.selection import rules_matching, select_rules


@dataclass(frozen=True)
class Options:
    force_exclude: bool = False
    fix: bool = False  # apply fixes and write the files
    diff: bool = False  # compute the fixes but only report them as a diff (wins over fix)
    unsafe_fixes: bool = False
    jobs: int = 0  # worker processes; 0: one per available core
    cache_dir: Path | None = None  # None: no cache (see tapelint.cache)
    add_noqa: bool = False  # write a noqa comment for each finding (tapelint.add_noqa)


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


def run(
    paths: Sequence[str],
    settings: Settings,
    options: Options,
    on_progress: Callable[[int, int], None] | None = None,
) -> Report:
    """Check `paths`; `on_progress(done, total)` is called as each file is finished."""
    found = discover(
        paths,
        root=settings.root,
        exclude=settings.exclude_patterns,
        force_exclude=options.force_exclude,
    )
    report = Report(
        errors=[f"{path}: no such file or directory" for path in found.missing],
        warnings=list(found.warnings),
    )
    linters = _Linters(settings, _open_cache(settings, options, report))
    cwd = Path.cwd()
    tasks = [
        (source, display_path(source.path, cwd), linters.for_file(source.path))
        for source in found.files
    ]
    from tapelint.parallel import check_files  # it builds on this module's check_file

    for file_report in check_files(tasks, options, on_progress):
        report.add(file_report)
    report.diagnostics.sort(key=lambda d: d.sort_key)
    return report


def _open_cache(settings: Settings, options: Options, report: Report) -> ResultCache | None:
    if options.cache_dir is None:
        return None
    try:
        return ResultCache.open(options.cache_dir, settings)
    except OSError as error:
        report.warnings.append(
            f"{options.cache_dir}: cannot use as the cache directory: "
            f"{error.strerror or error}; checking without a cache"
        )
        return None


def check_file(source: SourceFile, display: str, linter: Linter, options: Options) -> Report:
    """Everything one file contributes to the run, as its own small report.

    Never raises: an engine bug becomes an error for this file only, so the other files are
    still checked. A report (not a side effect) per file is what lets the caller run files in
    any order, in other processes, or answer from a cache.
    """
    report = Report()
    try:
        _check_file(source, display, linter, options, report)
    except Exception as error:  # an engine bug must not end the run for other files
        report.errors.append(f"{display}: internal error: {type(error).__name__}: {error}")
    return report


def _check_file(
    source: SourceFile, display: str, linter: Linter, options: Options, report: Report
) -> None:
    try:
        data = read_source(source.path)
    except OSError as error:
        report.diagnostics.extend(
            linter.unreadable(display, f"cannot read: {error.strerror or error}")
        )
        return
    notebook = source.kind is SourceKind.NOTEBOOK
    if notebook:
        diagnostics = check_notebook(linter, data, display)
    else:
        diagnostics = linter.check_bytes(data, display)
    fixing = options.fix or options.diff
    if fixing and fixable_count(diagnostics, unsafe=options.unsafe_fixes):
        diagnostics = _fix_file(
            source.path, display, data, diagnostics, linter, options, report, notebook=notebook
        )
    elif options.add_noqa and diagnostics:
        diagnostics = _add_noqa(source.path, display, data, diagnostics, linter, report, notebook)
    report.diagnostics.extend(diagnostics)


def _add_noqa(
    path: Path,
    display: str,
    data: bytes,
    diagnostics: list[Diagnostic],
    linter: Linter,
    report: Report,
    notebook: bool,
) -> list[Diagnostic]:
    """Write a noqa comment for each diagnostic; the diagnostics left unsilenced."""

    def lint(new: bytes) -> list[Diagnostic]:
        return (
            check_notebook(linter, new, display) if notebook else linter.check_bytes(new, display)
        )

    result = annotate(data, diagnostics, lint, notebook=notebook)
    report.warnings.extend(result.warnings)
    if result.data is None:
        return result.remaining
    try:
        write_atomically(path, result.data)
    except OSError as error:
        report.errors.append(f"{display}: cannot write noqa comments: {error.strerror or error}")
        return diagnostics
    report.noqa_added += result.added
    report.noqa_paths.append(display)
    return result.remaining


def _fix_file(
    path: Path,
    display: str,
    data: bytes,
    diagnostics: list[Diagnostic],
    linter: Linter,
    options: Options,
    report: Report,
    *,
    notebook: bool,
) -> list[Diagnostic]:
    """Fix one file; the diagnostics to report afterwards."""
    try:
        fixed = _fixed(data, display, diagnostics, linter, options, notebook=notebook)
        if fixed is None:
            return diagnostics
        if options.diff:
            report.diffs.extend(unified_diff(*change) for change in fixed.changes)
        else:
            write_atomically(path, fixed.data)
    except FixError as error:
        report.warnings.append(f"{display}: fixes not applied: {error}; file left unchanged")
        return diagnostics
    except OSError as error:
        report.errors.append(f"{display}: cannot write fixes: {error.strerror or error}")
        return diagnostics
    report.fixed += fixed.fixed
    report.fixed_paths.append(display)
    report.fixed_codes[display] = fixed.fixed_codes
    return diagnostics if options.diff else fixed.remaining


@dataclass(frozen=True)
class _Fixed:
    data: bytes  # the fixed file
    fixed: int  # diagnostics whose fix was applied
    remaining: list[Diagnostic]
    changes: list[tuple[str, str, str]]  # (label, before, after) for a diff
    fixed_codes: Counter[tuple[str, str]]  # how many of each (code, name) were fixed


def _fixed(
    data: bytes,
    display: str,
    diagnostics: list[Diagnostic],
    linter: Linter,
    options: Options,
    *,
    notebook: bool,
) -> _Fixed | None:
    """The file with its fixes applied; None when they change nothing. Raises FixError."""
    if notebook:
        result = fix_notebook(linter, data, display, unsafe=options.unsafe_fixes)
        if not result.changes:
            return None
        changes = [(f"{display}:cell {cell}", old, new) for cell, old, new in result.changes]
        return _Fixed(result.data, result.fixed, result.remaining, changes, result.fixed_codes)
    text = decode_source(data)
    fixed = fix_source(
        text,
        lambda new: linter.check_text(new, display),
        unsafe=options.unsafe_fixes,
        diagnostics=diagnostics,
    )
    if fixed.text == text:
        return None
    encoded = encode_like(data, fixed.text)
    changes = [(display, text, fixed.text)]
    return _Fixed(encoded, fixed.fixed, fixed.remaining, changes, fixed.fixed_codes)


@dataclass
class StdinResult:
    report: Report
    # With `--fix`: the source to print, fixed (or as it came when nothing was fixed).
    fixed_source: bytes | None = None


def run_stdin(
    data: bytes, filename: str | None, settings: Settings, options: Options
) -> StdinResult:
    """Check source read from standard input as if it were the file `filename`.

    Editors call linters this way. The file's config applies (its per-file-ignores; with
    `force_exclude`, its excludes: an excluded file yields nothing), diagnostics name it, and a
    name ending in `.ipynb` is read as a notebook. The file itself is never read or written:
    `--fix` hands the fixed source back for printing, `--diff` a diff against it.
    """
    path = Path(os.path.abspath(filename)) if filename else None
    result = StdinResult(Report(), data if options.fix and not options.diff else None)
    if (
        path is not None
        and options.force_exclude
        and is_excluded(path, root=settings.root, exclude=settings.exclude_patterns)
    ):
        return result
    linter = _Linters(settings).for_file(path or Path("-"))
    display = display_path(path, Path.cwd()) if path is not None else "-"
    notebook = path is not None and kind_of(path) is SourceKind.NOTEBOOK
    report = result.report
    if notebook:
        report.diagnostics = check_notebook(linter, data, display)
    else:
        report.diagnostics = linter.check_bytes(data, display)
    if not (options.fix or options.diff) or not fixable_count(
        report.diagnostics, unsafe=options.unsafe_fixes
    ):
        return result
    try:
        fixed = _fixed(data, display, report.diagnostics, linter, options, notebook=notebook)
    except FixError as error:
        report.warnings.append(f"{display}: fixes not applied: {error}; source left unchanged")
        return result
    if fixed is not None:
        report.fixed = fixed.fixed
        report.fixed_paths.append(display)
        report.fixed_codes[display] = fixed.fixed_codes
        if options.diff:
            report.diffs.extend(unified_diff(*change) for change in fixed.changes)
        else:
            report.diagnostics = fixed.remaining
            result.fixed_source = fixed.data
    return result


def display_path(path: Path, cwd: Path) -> str:
    """Relative to the current directory when under it, else absolute."""
    relative = relative_posix(path, cwd)
    return relative if relative is not None else str(path)


class _Linters:
    """The linter for each file: the selected rules less its per-file-ignores."""

    def __init__(self, settings: Settings, cache: ResultCache | None = None) -> None:
        self.root = settings.root
        self.cache = cache
        self.selected = select_rules(
            settings.select, settings.extend_select, settings.ignore, preview=settings.preview
        )
        self.per_file = [
            (Globs([glob]), {r for s in selectors for r in rules_matching(s, preview=True)})
            for glob, selectors in settings.per_file_ignores
        ]
        self._linters: dict[tuple[type[Rule], ...], Linter] = {}

    def for_file(self, path: Path) -> Linter:
        relative = relative_posix(path, self.root) or path.name
        ignored = {r for globs, ignores in self.per_file if globs.match(relative) for r in ignores}
        rules = tuple(rule for rule in self.selected if rule not in ignored)
        if rules not in self._linters:
            self._linters[rules] = (
                Linter(rules) if self.cache is None else CachedLinter(rules, self.cache)
            )
        return self._linters[rules]
