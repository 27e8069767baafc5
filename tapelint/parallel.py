"""Running one function over many files, in a process pool when that pays.

A pool costs a fork per worker and a round trip per file, so it is used only when there is
enough source to parse (the caller says how much each call parses; what it can answer
without a parse it answers itself): a run with a few small files (a pre-commit hook's
usual batch) stays in this process. Calls go to the pool the largest first, so that one big
file does not finish last alone; results are handed back with their index, so the caller
can put them in order, and `--jobs 1` and a parallel run compute the same thing.

A worker that dies, or a result that cannot be sent back, is a failure of that call only
(`on_failure` turns it into a result); the run still ends.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

# Below this much source to parse, a pool costs more than it saves.
POOL_MIN_BYTES = 128 * 1024

R = TypeVar("R")


def run_all(
    function: Callable[..., R],
    calls: Sequence[tuple[Any, ...]],
    sizes: Sequence[int],
    *,
    jobs: int,
    on_result: Callable[[int, R], None],
    on_failure: Callable[[int, str], R],
) -> None:
    """`function(*calls[i])` for each i, `on_result(i, result)` as each finishes.

    `sizes[i]` is how many bytes call i parses; `jobs` the worker count asked for (0: one
    per available core). `on_failure(i, why)` is the result of a call whose worker died.
    """
    order = sorted(range(len(calls)), key=lambda index: (-sizes[index], index))
    workers = _worker_count(jobs, sizes)
    if workers > 1 and _in_pool(function, calls, order, workers, on_result, on_failure):
        return
    for index in order:
        on_result(index, function(*calls[index]))


def _worker_count(jobs: int, sizes: Sequence[int]) -> int:
    if sum(sizes) < POOL_MIN_BYTES:
        return 1
    return min(jobs or available_cores(), len(sizes))


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on every platform
        return os.cpu_count() or 1


def _in_pool(
    function: Callable[..., R],
    calls: Sequence[tuple[Any, ...]],
    order: list[int],
    workers: int,
    on_result: Callable[[int, R], None],
    on_failure: Callable[[int, str], R],
) -> bool:
    """Run the calls in a pool; False when no pool can be had here (then nothing ran)."""
    # Fork on Linux: workers start with everything already imported. (Elsewhere fork is
    # unsafe or missing, and the platform's default start method is used.)
    context = multiprocessing.get_context("fork" if sys.platform.startswith("linux") else None)
    try:
        pool = ProcessPoolExecutor(workers, mp_context=context, initializer=_ignore_interrupts)
    except (OSError, ImportError, NotImplementedError):  # no semaphores here (some sandboxes)
        return False
    try:
        futures: list[tuple[int, Future[R]]] = [
            (index, pool.submit(function, *calls[index])) for index in order
        ]
        for index, future in futures:
            try:
                result = future.result()
            except BrokenProcessPool:
                result = on_failure(index, "the worker process checking it died")
            except Exception as error:  # e.g. a result that could not be sent back
                result = on_failure(index, f"{type(error).__name__}: {error}")
            on_result(index, result)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return True


def _ignore_interrupts() -> None:
    """Ctrl-C is the parent's to handle; workers would only add tracebacks."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
