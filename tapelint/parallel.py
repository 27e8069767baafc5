"""Checking many files: answer what is cheap in this process, parse the rest in a pool.

Most files of a repository never mention a trigger, and a file already in the cache needs
no parse: the parent process reads every file once and answers those itself. Only the files
left (the ones that must be parsed) are worth other processes, and only when there is
enough of them: a pool costs a fork per worker and a round trip per file, so a run with a
few small files (a pre-commit hook's usual batch) stays in this process.

Workers run the same `check_file` as the serial path, so `--jobs 1` and a parallel run
report the same thing; results are collected in the order the files were given (and the
largest files go first, so that one big file does not finish last alone).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from tapelint.cache import CachedLinter
from tapelint.engine import Linter
from tapelint.files import SourceFile, SourceKind, read_source
from tapelint.fixer import fixable_count
from tapelint.runner import Options, Report, check_file

# Below this much source to parse, a pool costs more than it saves.
POOL_MIN_BYTES = 128 * 1024

Task = tuple[SourceFile, str, Linter]  # the file, the path it is reported under, its linter


def check_files(
    tasks: Sequence[Task],
    options: Options,
    on_progress: Callable[[int, int], None] | None = None,
) -> list[Report]:
    """One report per task, in the order of `tasks`; `on_progress(done, total)` after each."""
    reports = _Reports(len(tasks), on_progress)
    to_parse: list[tuple[int, int]] = []  # (size in bytes, index into tasks)
    for index, (source, display, linter) in enumerate(tasks):
        answer, size = _answer_without_parsing(source, display, linter, options)
        if answer is not None:
            reports[index] = answer
        else:
            to_parse.append((size, index))
    workers = _worker_count(options.jobs, to_parse)
    if workers > 1:
        _check_in_pool(tasks, sorted(to_parse, reverse=True), options, workers, reports)
    else:
        for _, index in to_parse:
            reports[index] = check_file(*tasks[index], options)
    return reports.in_order()


class _Reports:
    """The reports collected so far, by task index, counting for the progress display."""

    def __init__(self, total: int, on_progress: Callable[[int, int], None] | None) -> None:
        self._reports: list[Report | None] = [None] * total
        self._done = 0
        self._on_progress = on_progress

    def __setitem__(self, index: int, report: Report) -> None:
        self._reports[index] = report
        self._done += 1
        if self._on_progress is not None:
            self._on_progress(self._done, len(self._reports))

    def in_order(self) -> list[Report]:
        return [report if report is not None else Report() for report in self._reports]


def _answer_without_parsing(
    source: SourceFile, display: str, linter: Linter, options: Options
) -> tuple[Report | None, int]:
    """The file's report when it can be had without a parse, else None and the file's size.

    Equal to what `check_file` would return: a file with no trigger has nothing to report,
    and a cache hit is the lint result of these exact bytes.
    """
    if source.kind is not SourceKind.PYTHON:
        return None, 0
    try:
        data = read_source(source.path)
    except OSError:
        return None, 0  # `check_file` reports it (TAP002)
    if not linter.may_report(data):
        return Report(), 0
    diagnostics = linter.cached(data, display) if isinstance(linter, CachedLinter) else None
    if diagnostics is None:
        return None, len(data)
    if (options.fix or options.diff) and fixable_count(diagnostics, unsafe=options.unsafe_fixes):
        return None, len(data)  # the fixer runs on it
    if options.add_noqa and diagnostics:
        return None, len(data)
    return Report(diagnostics=diagnostics), 0


def _worker_count(jobs: int, to_parse: list[tuple[int, int]]) -> int:
    if sum(size for size, _ in to_parse) < POOL_MIN_BYTES:
        return 1
    return min(jobs or available_cores(), len(to_parse))


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on every platform
        return os.cpu_count() or 1


def _check_in_pool(
    tasks: Sequence[Task],
    order: list[tuple[int, int]],
    options: Options,
    workers: int,
    reports: _Reports,
) -> None:
    # Fork on Linux: workers start with everything already imported. (Elsewhere fork is
    # unsafe or missing, and the platform's default start method is used.)
    context = multiprocessing.get_context("fork" if sys.platform.startswith("linux") else None)
    try:
        pool = ProcessPoolExecutor(workers, mp_context=context, initializer=_ignore_interrupts)
    except (OSError, ImportError, NotImplementedError):  # no semaphores here (some sandboxes)
        for _, index in order:
            reports[index] = check_file(*tasks[index], options)
        return
    try:
        futures: list[tuple[int, Future[Report]]] = [
            (index, pool.submit(check_file, *tasks[index], options)) for _, index in order
        ]
        for index, future in futures:
            reports[index] = _result(future, tasks[index][1])
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _result(future: Future[Report], display: str) -> Report:
    try:
        return future.result()
    except BrokenProcessPool:
        return Report(errors=[f"{display}: internal error: the worker process checking it died"])
    except Exception as error:  # e.g. a result that could not be sent back
        return Report(errors=[f"{display}: internal error: {type(error).__name__}: {error}"])


def _ignore_interrupts() -> None:
    """Ctrl-C is the parent's to handle; workers would only add tracebacks."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
