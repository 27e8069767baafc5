"""Running one function over many files, in a process pool when that pays.

A pool costs a fork per worker and a round trip per call, so it is used only when there is
enough source (the caller says how many bytes each call reads): a run with a few small
files (a pre-commit hook's usual batch) stays in this process. Calls go to the pool the
largest first, so that one big file does not finish last alone; a call may be a batch of
files (`batches`), when most of them take less time to check than a round trip. Results
are handed back with their index, so the caller can put them in order, and `--jobs 1` and
a parallel run compute the same thing.

A result that cannot be sent back is a failure of its call only; a worker that dies breaks
the pool, and its call and those not yet done fail (`on_failure` turns each into a
result). Either way the run still ends.
"""

from __future__ import annotations

import functools
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
    shared: object = None,
) -> None:
    """`function(*calls[i])` for each i, `on_result(i, result)` as each finishes.

    `sizes[i]` is how many bytes call i reads; `jobs` the worker count asked for (0: one
    per available core). `on_failure(i, why)` is the result of a call whose worker died.
    With `shared`, the calls are `function(shared, *calls[i])`: what every call needs is
    handed to each worker once (inherited when it forks), not sent with each call.
    """
    order = sorted(range(len(calls)), key=lambda index: (-sizes[index], index))
    workers = _worker_count(jobs, sizes)
    if workers > 1 and _in_pool(function, calls, order, workers, on_result, on_failure, shared):
        return
    for index in order:
        call = calls[index] if shared is None else (shared, *calls[index])
        on_result(index, function(*call))


# Files are handed to workers in batches (a round trip per file costs more than reading
# and testing most files), of about a share of the whole: enough batches per worker that
# they finish together, each between these sizes, and at most `BATCH_FILES` files.
BATCHES_PER_WORKER = 8
BATCH_BYTES = (8 * 1024, 256 * 1024)
BATCH_FILES = 64


def batches(sizes: Sequence[int], jobs: int) -> list[list[int]]:
    """The indexes of files of these sizes in batches for a pool of `jobs` workers (0: one
    per core), the largest files first."""
    share = sum(sizes) // ((jobs or available_cores()) * BATCHES_PER_WORKER)
    limit = min(max(share, BATCH_BYTES[0]), BATCH_BYTES[1])
    found: list[list[int]] = []
    size = 0
    for index in sorted(range(len(sizes)), key=lambda index: (-sizes[index], index)):
        if not found or size >= limit or len(found[-1]) >= BATCH_FILES:
            found.append([])
            size = 0
        found[-1].append(index)
        size += sizes[index]
    return found


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
    shared: object,
) -> bool:
    """Run the calls in a pool; False when no pool can be had here (then nothing ran)."""
    # Fork on Linux: workers start with everything already imported. (Elsewhere fork is
    # unsafe or missing, and the platform's default start method is used.)
    context = multiprocessing.get_context("fork" if sys.platform.startswith("linux") else None)
    try:
        pool = ProcessPoolExecutor(
            workers, mp_context=context, initializer=_start_worker, initargs=(shared,)
        )
    except (OSError, ImportError, NotImplementedError):  # no semaphores here (some sandboxes)
        return False
    try:
        if shared is not None:
            function = functools.partial(_with_shared, function)
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


_shared: object = None  # in a worker: what `run_all` was given as `shared`


def _start_worker(shared: object) -> None:
    global _shared
    _shared = shared
    # Ctrl-C is the parent's to handle; workers would only add tracebacks.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _with_shared(function: Callable[..., R], *call: Any) -> R:
    return function(_shared, *call)
