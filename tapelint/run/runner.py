"""One `tapelint check` run: discover the files, index the project, check each file with
the index, fix when asked, and collect what to report. Printing is the CLI's job.

The data flows one way:

1. discover the files (`tapelint.sources.discovery`);
2. first pass, in parallel and cached by content: every file checked with its module's
   name and an index that holds only the library table, giving its diagnostics, its
   module's summary and the names outside it that it asked about (`checking`);
3. the project (`tapelint.project.Project`): the summaries, and for each file the view of
   the index its imports give; a file whose asked names the view answers as the library
   index did is final (`Project.recheck_view` says why that is exact);
4. second pass, in parallel and cached by content plus what the index says of the names
   the file asked about: the other files checked again with their view, until the names
   a check asks are all ones its view followed; then the fixes, when asked;
5. the diagnostics, sorted.

A problem with one file never stops the run: a file that cannot be read becomes a TAP002
diagnostic, a fix that would break a file leaves it untouched with a warning, and an
unexpected error in the engine is reported for that file (and makes the run exit 2).
"""

from __future__ import annotations

import dataclasses
import gc
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tapelint.findings.diagnostics import Diagnostic
from tapelint.linter.engine import FileAnalysis, ModuleContext
from tapelint.linter.fixer import FixError, fixable_count, unified_diff
from tapelint.project.modules import MAIN, ModuleName
from tapelint.project.views import View
from tapelint.run import parallel
from tapelint.run.cache import ResultCache
from tapelint.run.per_file import (
    Analysed,
    Checked,
    FileTask,
    Finished,
    Linters,
    Options,
    Report,
    analyse_data,
    analyse_file,
    analysis_without_parsing,
    display_path,
    finish_file,
    first_pass,
    fixed_source,
)
from tapelint.run.workspace import Project
from tapelint.semantic.project_model.summaries import ModuleSummary
from tapelint.settings.config import Settings
from tapelint.sources.discovery import (
    SourceFile,
    SourceKind,
    discover,
    is_excluded,
    kind_of,
    read_source,
    skip_policies,
)

__all__ = [
    "Options",
    "Report",
    "RunStats",
    "StdinResult",
    "check_in_project",
    "display_path",
    "run",
    "run_stdin",
]

# A file is checked again at most this many times with a wider view (each time its check
# asked about names its view had not followed; one is almost always enough).
MAX_RECHECKS = 4

_CHECK_ONLY = Options()


@dataclass
class RunStats:
    """What a run's passes did (the benchmark reports what the index costs from these)."""

    files: int = 0
    first_parsed: int = 0  # files the first pass parsed (not answered without a parse)
    rechecked: int = 0  # files checked again with the index, parsed
    rechecked_from_cache: int = 0
    modules_analysed: int = 0  # modules outside the run analysed for their summaries
    imports_read: int = 0  # modules without a summary parsed for their imports
    first_seconds: float = 0.0
    index_seconds: float = 0.0  # building the views and deciding which files depend on them
    second_seconds: float = 0.0  # checking again (and fixing)


def run(
    paths: Sequence[str],
    settings: Settings,
    options: Options,
    on_progress: Callable[[int, int], None] | None = None,
    stats: RunStats | None = None,
    settings_for: Callable[[Path], Settings] | None = None,
) -> Report:
    """Check `paths`; `on_progress(done, total)` is called as each file pass finishes, and
    `stats`, when given, is filled in.

    `settings` are the run's: where files are looked for and what the walk excludes.
    `settings_for(path)`, when given, is each file's own (its closest configuration,
    `tapelint.settings.resolution`): a file whose own `exclude` names it is left out as the
    walk would have left it, and the files are checked in groups, one project a group."""
    stats = stats if stats is not None else RunStats()
    started = time.perf_counter()
    batch_garbage_collection()
    found = discover(
        paths,
        root=settings.root,
        exclude=settings.exclude_patterns,
        force_exclude=options.force_exclude,
        skips=skip_policies(settings),
    )
    report = Report(
        errors=[f"{path}: no such file or directory" for path in found.missing],
        warnings=list(found.warnings),
        skipped=len(found.skipped),
    )
    groups: dict[Settings, list[SourceFile]] = {}
    named = {os.path.abspath(path) for path in paths}
    for source in found.files:
        own = settings_for(source.path) if settings_for is not None else settings
        if own != settings and _excluded_by_own(source, own, named, options.force_exclude):
            continue
        groups.setdefault(own, []).append(source)
    progress = _Progress(sum(map(len, groups.values())), on_progress)
    stats.files = progress.total
    for group_settings, files in groups.items():
        _run_group(files, group_settings, options, report, progress, stats)
    later = stats.index_seconds + stats.second_seconds
    stats.first_seconds = time.perf_counter() - started - later
    report.diagnostics.sort(key=lambda d: d.sort_key)
    return report


def _excluded_by_own(
    source: SourceFile, own: Settings, named: set[str], force_exclude: bool
) -> bool:
    """Whether a file's own configuration excludes it: as for the walk's, a file named on
    the command line is still checked unless `force_exclude`."""
    if str(source.path) in named and not force_exclude:
        return False
    return is_excluded(source.path, root=own.root, exclude=own.exclude_patterns)


def _run_group(
    files: list[SourceFile],
    settings: Settings,
    options: Options,
    report: Report,
    progress: _Progress,
    stats: RunStats,
) -> None:
    """Check files that share their settings, in one project."""
    cache = _open_cache(settings, options, report)
    cwd = Path.cwd()
    linters = Linters(settings)
    project = Project(settings, linters=linters, cache=cache, cwd=cwd)
    project.layout.add_run_files([source.real for source in files])
    tasks = [
        FileTask(source, display_path(source.path, cwd), linters.for_file(source.path))
        for source in files
    ]
    first = _first_passes(tasks, project, cache, options, progress, stats)
    for file_report in _second_passes(tasks, first, project, cache, options, progress, stats):
        report.add(file_report)
    modules, imports = project.loaded
    stats.modules_analysed += modules
    stats.imports_read += imports


def batch_garbage_collection() -> None:
    """Garbage collection for a run over many files (this process and the workers it
    forks): what is imported by now lives until the end, so it is frozen out of every
    collection; and collections wait for many more allocations than Python's default (700).
    A run allocates millions of short-lived objects (trees, models, results), and with the
    default threshold the collector scanned them, and everything that survived, often
    enough to take a third of the time of a cold run over TensorFlow's sources (measured:
    3.8 s against 2.4 s with collection off; 2.4 s with these settings). The files' own
    cycles are still collected, in larger batches."""
    gc.freeze()
    gc.set_threshold(20_000, 50, 50)


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


class _Progress:
    """Passes done / passes known: every file has a first pass, some a second."""

    def __init__(self, total: int, report: Callable[[int, int], None] | None) -> None:
        self.total = total
        self.done = 0
        self._report = report

    def more(self, count: int) -> None:
        self.total += count

    def tick(self) -> None:
        self.done += 1
        if self._report is not None:
            self._report(self.done, self.total)


# ---------------------------------------------------------------------- first pass
def _first_passes(
    tasks: list[FileTask],
    project: Project,
    cache: ResultCache | None,
    options: Options,
    progress: _Progress,
    stats: RunStats,
) -> list[Analysed]:
    """Each file's first pass; `tasks` get their module names.

    Where the files are read depends on what the run will mostly do with them. Without a
    cache, or with an empty one, it parses: the workers read and test the files too, not
    only parse them (reading and testing every file in this process took 0.2 s of a 1.7 s
    cold run over TensorFlow's sources, with the pool idle). With a cache that holds entries it
    mostly reads answers, which costs less here than a round trip to a worker does (a
    warm run over TensorFlow's sources was 10% slower through the pool): then only the
    files that need a parse go to the pool."""
    results: list[Analysed] = [Analysed(FileAnalysis([]))] * len(tasks)

    def record(index: int, answer: _FirstPass) -> None:
        module, result, parsed = answer
        if module is not None:
            tasks[index] = dataclasses.replace(tasks[index], module=module)
        results[index] = result
        stats.first_parsed += parsed
        progress.tick()

    if cache is not None and cache.holds_entries():
        _read_here(tasks, project, cache, options.jobs, record)
    else:
        _read_in_workers(tasks, project, cache, options.jobs, record)
    for task, result in zip(tasks, results, strict=True):
        if result.error is None and result.analysis.summary is not None:
            project.add(task.source.real, task.module, result.analysis)
    return results


# A file's first pass: its module's name (None: not named, it needed no analysis), the
# result, and whether it was parsed.
_FirstPass = tuple[ModuleName | None, Analysed, bool]


@dataclass
class _ToParse:
    """A file whose first pass needs a parse: its task (named), its bytes (None: the parse
    reads the file itself, a notebook or a file that could not be read), its cache key."""

    task: FileTask
    data: bytes | None
    key: str | None

    def parse(self, cache: ResultCache | None) -> _FirstPass:
        if self.data is None:
            return self.task.module, analyse_file(self.task, cache, None), True
        return self.task.module, first_pass(self.task, self.data, cache, self.key), True


def _without_parse(
    task: FileTask, project: Project, cache: ResultCache | None
) -> _FirstPass | _ToParse:
    """A file's first pass when it needs no parse (no trigger, a cache hit)."""
    if task.source.kind is SourceKind.NOTEBOOK:
        return _ToParse(task, None, None)  # notebooks are not cached
    try:
        data = read_source(task.source.path)
    except OSError:
        return _ToParse(task, None, None)  # its first pass reports it (TAP002)
    if not task.linter.may_report(data):
        return None, Analysed(FileAnalysis([])), False
    task = dataclasses.replace(task, module=project.module_of(task.source.real, data))
    answer, key = analysis_without_parsing(task, data, cache)
    if answer is not None:
        return task.module, answer, False
    return _ToParse(task, data, key)


def _failure(task: FileTask, why: str) -> _FirstPass:
    """A first pass that failed: the file is reported with an internal error, once."""
    return None, Analysed(FileAnalysis([]), error=f"{task.display}: internal error: {why}"), False


def _read_in_workers(
    tasks: list[FileTask],
    project: Project,
    cache: ResultCache | None,
    jobs: int,
    record: Callable[[int, _FirstPass], None],
) -> None:
    """Files go to the pool in batches (a round trip per file would cost more than the
    test), the largest first."""
    parallel.run_all(
        _first_pass_of,
        [(index,) for index in range(len(tasks))],
        [_size(task) for task in tasks],
        jobs=jobs,
        on_result=record,
        on_failure=lambda index, why: _failure(tasks[index], why),
        shared=(tasks, project, cache),
        batched=True,
    )


def _first_pass_of(
    run: tuple[list[FileTask], Project, ResultCache | None], index: int
) -> _FirstPass:
    tasks, project, cache = run
    try:
        answer = _without_parse(tasks[index], project, cache)
        return answer.parse(cache) if isinstance(answer, _ToParse) else answer
    except Exception as error:  # an engine bug: this file's, not its batch's
        return _failure(tasks[index], _why(error))


def _read_here(
    tasks: list[FileTask],
    project: Project,
    cache: ResultCache,
    jobs: int,
    record: Callable[[int, _FirstPass], None],
) -> None:
    """Files are read and answered here; those that need a parse go to the pool."""
    pending: list[tuple[int, _ToParse]] = []
    for index, task in enumerate(tasks):
        try:
            answer = _without_parse(task, project, cache)
        except Exception as error:  # an engine bug: this file's, not the run's
            answer = _failure(task, _why(error))
        if isinstance(answer, _ToParse):
            pending.append((index, answer))
        else:
            record(index, answer)
    parallel.run_all(
        _ToParse.parse,
        [(to_parse, cache) for _, to_parse in pending],
        [len(to_parse.data or b"") or _size(to_parse.task) for _, to_parse in pending],
        jobs=jobs,
        on_result=lambda position, answer: record(pending[position][0], answer),
        on_failure=lambda position, why: _failure(pending[position][1].task, why),
    )


# ---------------------------------------------------------------------- second pass
@dataclass
class _Recheck:
    """A file checked again with the project index, round after round."""

    index: int  # into the run's tasks
    view: View
    key: str | None  # its cache entry
    rounds: int = 0


def _second_passes(
    tasks: list[FileTask],
    first: list[Analysed],
    project: Project,
    cache: ResultCache | None,
    options: Options,
    progress: _Progress,
    stats: RunStats,
) -> list[Report]:
    started = time.perf_counter()
    reports: list[Report | None] = [None] * len(tasks)
    final: dict[int, tuple[Checked, View | None]] = {}  # diagnostics, their view
    rechecks: list[_Recheck] = []
    for index, (task, done) in enumerate(zip(tasks, first, strict=True)):
        if done.error is not None:
            reports[index] = Report(errors=[done.error])
            continue
        try:
            indexed = _indexed(index, task, done, project, cache)
        except Exception as error:  # an engine bug: this file's, not the run's
            reports[index] = Report(errors=[_internal(task, error)])
            continue
        if isinstance(indexed, _Recheck):
            rechecks.append(indexed)
            continue
        final[index] = (Checked(indexed[0], done.digest), indexed[1])
        stats.rechecked_from_cache += indexed[2]
    stats.rechecked += len(rechecks)
    indexed_at = time.perf_counter()
    stats.index_seconds += indexed_at - started
    progress.more(len(rechecks))
    _recheck(rechecks, tasks, first, project, cache, options, reports, final, progress)
    to_fix = [
        (index, checked, view)
        for index, (checked, view) in sorted(final.items())
        if (options.fixing and fixable_count(checked.diagnostics, unsafe=options.unsafe_fixes))
        or (options.add_noqa and checked.diagnostics)
    ]
    for index, (checked, _) in final.items():
        reports[index] = Report(diagnostics=checked.diagnostics)
    progress.more(len(to_fix))
    fixing = _with_files_as_checked(tasks, first, [index for index, _, _ in to_fix])
    _fix(to_fix, fixing, project, options, reports, progress)
    stats.second_seconds += time.perf_counter() - indexed_at
    return [report if report is not None else Report() for report in reports]


def _indexed(
    index: int, task: FileTask, done: Analysed, project: Project, cache: ResultCache | None
) -> _Recheck | tuple[list[Diagnostic], View | None, bool]:
    """What the project's index makes of a file's first pass: a check again with its
    view, or its final diagnostics, their view and whether they came from the cache."""
    analysis = done.analysis
    view = project.recheck_view(task.source.real, task.module, analysis)
    if view is None:
        return analysis.diagnostics, None, False
    key = None
    if cache is not None and done.key is not None:
        key = cache.recheck_key(done.key, _digest(view, analysis.summary, analysis.asked))
        hit = _cached_recheck(cache, key, project, task, analysis, view)
        if hit is not None:
            return (*hit, True)
    return _Recheck(index, view, key)


def _internal(task: FileTask, error: BaseException) -> str:
    return f"{task.display}: internal error: {_why(error)}"


def _why(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def _cached_recheck(
    cache: ResultCache,
    key: str,
    project: Project,
    task: FileTask,
    analysis: FileAnalysis,
    view: View,
) -> tuple[list[Diagnostic], View] | None:
    """A stored re-check, when this run's index says of the names it asked what it said
    then (see `tapelint.run.cache`)."""
    found = cache.get_recheck(key)
    if found is None:
        return None
    diagnostics, asked, digest = found
    if not asked <= view.names:
        view = project.view(task.source.real, task.module, analysis.summary, view.names | asked)
    return (diagnostics, view) if _digest(view, analysis.summary, asked) == digest else None


def _digest(view: View, summary: ModuleSummary | None, names: frozenset[str]) -> str:
    """What `view`, with the file's own module, says of `names` (`ProjectIndex.digest`)."""
    assert summary is not None  # a file that has a view was parsed
    return view.index.with_module(summary).digest(names)


def _recheck(
    rechecks: list[_Recheck],
    tasks: list[FileTask],
    first: list[Analysed],
    project: Project,
    cache: ResultCache | None,
    options: Options,
    reports: list[Report | None],
    final: dict[int, tuple[Checked, View | None]],
    progress: _Progress,
) -> None:
    """Check files again with their views; a check that asked about a name its view did
    not follow is checked again with a view that follows it."""
    while rechecks:
        results: list[Finished | None] = [None] * len(rechecks)

        def done(position: int, result: Finished, results: list = results) -> None:
            results[position] = result
            progress.tick()

        def failed(position: int, why: str, rechecks: list[_Recheck] = rechecks) -> Finished:
            display = tasks[rechecks[position].index].display
            return Finished(Report(errors=[f"{display}: internal error: {why}"]))

        parallel.run_all(
            finish_file,
            [
                (tasks[r.index], project.context(tasks[r.index].module, r.view), _CHECK_ONLY, None)
                for r in rechecks
            ],
            [_size(tasks[r.index]) for r in rechecks],
            jobs=options.jobs,
            on_result=done,
            on_failure=failed,
        )
        again: list[_Recheck] = []
        for recheck, result in zip(rechecks, results, strict=True):
            assert result is not None  # run_all hands back every call's result
            task, analysis = tasks[recheck.index], first[recheck.index].analysis
            asked = result.asked or frozenset()
            if result.report.errors:
                reports[recheck.index] = result.report
                continue
            try:
                if asked <= recheck.view.names or recheck.rounds + 1 >= MAX_RECHECKS:
                    if cache is not None and recheck.key is not None:
                        digest = _digest(recheck.view, analysis.summary, asked)
                        cache.put_recheck(recheck.key, result.report.diagnostics, asked, digest)
                    checked = Checked(result.report.diagnostics, result.digest)
                    final[recheck.index] = (checked, recheck.view)
                    continue
                wider = project.view(
                    task.source.real, task.module, analysis.summary, recheck.view.names | asked
                )
            except Exception as error:  # an engine bug: this file's, not the run's
                reports[recheck.index] = Report(errors=[_internal(task, error)])
                continue
            again.append(dataclasses.replace(recheck, view=wider, rounds=recheck.rounds + 1))
        progress.more(len(again))
        rechecks = again


def _with_files_as_checked(
    tasks: list[FileTask], first: list[Analysed], indexes: list[int]
) -> list[FileTask]:
    """The tasks, the notebooks among `indexes` given the text the files their cells run had
    when they were checked (`FileAnalysis.files`): other files are fixed at the same time,
    and a notebook's fixes must rest on what its findings rested on, whatever the order."""
    tasks = list(tasks)
    for index in indexes:
        files = first[index].analysis.files
        if tasks[index].source.kind is not SourceKind.NOTEBOOK or not files:
            continue
        buffers = []
        for path in sorted(files):
            try:
                buffers.append((path, read_source(Path(path))))
            except OSError:
                continue
        tasks[index] = dataclasses.replace(tasks[index], buffers=tuple(buffers))
    return tasks


def _fix(
    to_fix: list[tuple[int, Checked, View | None]],
    tasks: list[FileTask],
    project: Project,
    options: Options,
    reports: list[Report | None],
    progress: _Progress,
) -> None:
    """Fix the files that have something to fix (or give their findings noqa comments),
    with the context they were checked in."""

    def done(position: int, result: Finished) -> None:
        reports[to_fix[position][0]] = result.report
        progress.tick()

    def failed(position: int, why: str) -> Finished:
        display = tasks[to_fix[position][0]].display
        return Finished(Report(errors=[f"{display}: internal error: {why}"]))

    parallel.run_all(
        finish_file,
        [
            (tasks[index], project.context(tasks[index].module, view), options, checked)
            for index, checked, view in to_fix
        ],
        [_size(tasks[index]) for index, _, _ in to_fix],
        jobs=options.jobs,
        on_result=done,
        on_failure=failed,
    )


def _size(task: FileTask) -> int:
    try:
        return task.source.path.stat().st_size
    except OSError:
        return 0


# ---------------------------------------------------------------------- standard input
@dataclass
class StdinResult:
    report: Report
    # With `--fix`: the source to print, fixed (or as it came when nothing was fixed).
    fixed_source: bytes | None = None


def run_stdin(
    data: bytes,
    filename: str | None,
    settings: Settings,
    options: Options,
    project: Project | None = None,
) -> StdinResult:
    """Check source read from standard input as if it were the file `filename`.

    Editors call linters this way. The file's config applies (its per-file-ignores; with
    `force_exclude`, its excludes: an excluded file yields nothing), diagnostics name it, and a
    name ending in `.ipynb` is read as a notebook. The file itself is never read or written:
    `--fix` hands the fixed source back for printing, `--diff` a diff against it.

    Its imports are resolved in its project as `tapelint check FILE` resolves them, with
    this source standing for the file. Source without a name is the module `__main__` of
    a script in the current directory. A long-lived caller (the language server) passes
    its own `project`, which keeps the summaries of the modules it loaded between checks.
    """
    path = Path(os.path.abspath(filename)) if filename else None
    result = StdinResult(Report(), data if options.fix and not options.diff else None)
    if (
        path is not None
        and options.force_exclude
        and is_excluded(path, root=settings.root, exclude=settings.exclude_patterns)
    ):
        return result
    report = result.report
    cwd = Path.cwd()
    if project is None:
        cache = _open_cache(settings, options, report)
        project = Project(settings, cache=cache, cwd=cwd)
    notebook = path is not None and kind_of(path) is SourceKind.NOTEBOOK
    real = os.path.realpath(path if path is not None else cwd / "-")
    module = ModuleName(MAIN)
    if path is not None and not notebook:
        project.set_source(real, data)
        module = project.module_of(real, data)
    task = FileTask(
        SourceFile(path or Path("-"), SourceKind.NOTEBOOK if notebook else SourceKind.PYTHON, real),
        display_path(path, cwd) if path is not None else "-",
        Linters(settings).for_file(path or Path("-")),
        module,
        project.buffers() if notebook else (),
    )
    checked = _check_stdin(task, data, project)
    if isinstance(checked, str):
        report.errors.append(checked)
        return result
    report.diagnostics, context = checked
    if not options.fixing or not fixable_count(report.diagnostics, unsafe=options.unsafe_fixes):
        return result
    try:
        fixed = fixed_source(data, task, report.diagnostics, context, options)
    except FixError as error:
        report.warnings.append(f"{task.display}: fixes not applied: {error}; source left unchanged")
        return result
    if fixed is not None:
        report.fixed = fixed.fixed
        report.fixed_paths.append(task.display)
        report.fixed_codes[task.display] = fixed.fixed_codes
        if options.diff:
            report.diffs.extend(unified_diff(*change) for change in fixed.changes)
        else:
            report.diagnostics = fixed.remaining
            result.fixed_source = fixed.data
    return result


def _check_stdin(
    task: FileTask, data: bytes, project: Project
) -> tuple[list[Diagnostic], ModuleContext] | str:
    """The diagnostics of the source and the context they came from; or an internal error."""
    try:
        return check_in_project(
            lambda context: analyse_data(task, data, context),
            task.source.real,
            task.module,
            project,
        )
    except Exception as error:  # an engine bug: one line, as for a file
        return f"{task.display}: internal error: {type(error).__name__}: {error}"


def check_in_project(
    analyse: Callable[[ModuleContext], FileAnalysis],
    path: str,
    module: ModuleName,
    project: Project,
) -> tuple[list[Diagnostic], ModuleContext]:
    """One source of file `path` (module `module`) checked with its project's index, the
    way a run checks each file: `analyse` runs the check in a context. The diagnostics
    and the context they came from (to fix in)."""
    analysis = analyse(project.context(module, None))
    project.read_by(path, analysis.files)
    view = project.recheck_view(path, module, analysis)
    diagnostics, context = analysis.diagnostics, project.context(module, None)
    for _ in range(MAX_RECHECKS):
        if view is None:
            break
        context = project.context(module, view)
        again = analyse(context)
        diagnostics = again.diagnostics
        project.read_by(path, again.files)
        if again.asked <= view.names:
            break
        view = project.view(path, module, analysis.summary, view.names | again.asked)
    return diagnostics, context
