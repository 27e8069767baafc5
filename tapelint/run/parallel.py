"""Running one function over many files, in a process pool when that pays.

A pool costs a fork per worker and a round trip per call, so it is used only when there is
enough source (the caller says how many bytes each call reads): a run with a few small
files (a pre-commit hook's usual batch) stays in this process. Calls go to the pool the
largest first, so that one big file does not finish last alone; with `batched`, calls go
to the workers in batches (`batches`), when most of them take less time than a round
trip. Results are handed back with their index, so the caller can put them in order, and
`--jobs 1` and a parallel run compute the same thing.

What goes wrong in a pool stays with the call it happened to (decisions):

- A result that cannot be sent back is a failure of its call only (of its batch's calls).
- A worker that dies (the OOM killer, a native abort) breaks the pool, and the pool's other
  workers are stopped with it. Every call is marked in shared memory when a worker starts
  it, so what was lost is known: the calls that never started are run again in a fresh
  pool, and each call that was running when the pool broke is run again alone, in a pool
  of its own. Only a call that kills its worker then is lost, and reported once
  (`on_failure`); a pool that breaks twice with no call running fails what is left.
- Workers do not outlive the run: on Linux each asks the kernel for SIGTERM when its
  parent dies (`PR_SET_PDEATHSIG`), elsewhere a thread of it watches the parent's pid.
- A signal that stops the run (`tapelint.interrupts`: Ctrl-C, SIGTERM, SIGHUP) stops the
  workers: the main process terminates them, and each ends at once, or once the file it
  is writing is written whole (`fixer.write_atomically`). Workers ignore SIGINT (Ctrl-C
  is the parent's to handle) and take the default action for SIGTERM and SIGHUP. They are
  forked with those signals held, and release them only once their own dispositions are
  set: a signal in between never runs the parent's handler in a worker (which printed a
  traceback), it ends the worker quietly.
- Between calls, and before handing on each result, a run that got a signal stops, even
  if the signal's exception was lost on its way (`interrupts.check`).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

from tapelint import interrupts

# Below this much source to parse, a pool costs more than it saves.
POOL_MIN_BYTES = 128 * 1024

DIED = "the worker process checking it died"

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
    batched: bool = False,
) -> None:
    """`function(*calls[i])` for each i, `on_result(i, result)` as each finishes.

    `sizes[i]` is how many bytes call i reads; `jobs` the worker count asked for (0: one
    per available core). `on_failure(i, why)` is the result of a call that was lost (see
    the module's docstring). With `shared`, the calls are `function(shared, *calls[i])`:
    what every call needs is handed to each worker once (inherited when it forks), not
    sent with each call. With `batched`, a pool gets the calls in batches.
    """
    order = sorted(range(len(calls)), key=lambda index: (-sizes[index], index))
    workers = _worker_count(jobs, sizes)
    if workers > 1:
        pool = _Pool(function, calls, sizes, workers, shared, batched, on_result, on_failure)
        if pool.run(order):
            return
    for index in order:
        interrupts.check()
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


# A call's mark in shared memory.
_NOT_STARTED, _STARTED, _FINISHED = 0, 1, 2


class _Pool:
    """The calls of one `run_all` in pools: a first one for all, then fresh ones for what a
    worker's death left undone."""

    def __init__(
        self,
        function: Callable[..., R],
        calls: Sequence[tuple[Any, ...]],
        sizes: Sequence[int],
        workers: int,
        shared: object,
        batched: bool,
        on_result: Callable[[int, R], None],
        on_failure: Callable[[int, str], R],
    ) -> None:
        self._function = function
        self._calls = calls
        self._sizes = sizes
        self._workers = workers
        self._shared = shared
        self._batched = batched
        self._on_result = on_result
        self._on_failure = on_failure
        # Fork on Linux: workers start with everything already imported. (Elsewhere fork
        # is unsafe or missing, and the platform's default start method is used.)
        self._context = multiprocessing.get_context(
            "fork" if sys.platform.startswith("linux") else None
        )

    def run(self, order: list[int]) -> bool:
        """Run the calls; False when no pool can be had here (then nothing ran)."""
        try:
            self._marks = self._context.RawArray("b", len(self._calls))
        except (OSError, ImportError, NotImplementedError):  # no shared memory here
            return False
        unfinished = self._round(order, self._workers, batched=self._batched)
        if unfinished is None:
            return False
        idle_breaks = 0
        while unfinished:
            running = [i for i in unfinished if self._marks[i] == _STARTED]
            for index in running:  # again, each on its own: the one that kills it is lost
                if self._round([index], 1, alone=True) is None:
                    self._lost(index)
            idle_breaks += not running
            pending = [i for i in unfinished if self._marks[i] != _STARTED]
            if idle_breaks > 1:  # workers die with nothing running: do not try forever
                for index in pending:
                    self._lost(index)
                break
            again = self._round(pending, self._workers, batched=self._batched)
            if again is None:  # no pool to run them in any more
                for index in pending:
                    self._lost(index)
            unfinished = again or []
        return True

    def _lost(self, index: int) -> None:
        self._on_result(index, self._on_failure(index, DIED))

    def _round(
        self, indexes: list[int], workers: int, *, batched: bool = False, alone: bool = False
    ) -> list[int] | None:
        """Run `indexes` in a fresh pool; the calls its breaking left without a result
        (none when `alone`: a call alone whose worker dies is lost), or None when no pool
        could be started."""
        if not indexes:
            return []
        for index in indexes:
            self._marks[index] = _NOT_STARTED
        groups = [[index] for index in indexes]
        if batched:
            sizes = [self._sizes[index] for index in indexes]
            groups = [[indexes[i] for i in group] for group in batches(sizes, workers)]
        before = set(multiprocessing.active_children())
        try:
            pool = ProcessPoolExecutor(
                min(workers, len(groups)),
                mp_context=self._context,
                initializer=_start_worker,
                initargs=(self._shared, self._marks, os.getpid()),
            )
        except (OSError, ImportError, NotImplementedError):  # no semaphores (some sandboxes)
            return None
        unfinished: list[int] = []
        try:
            run = functools.partial(_run_group, self._function, self._shared is not None)
            # The workers (forked at the first submit) and the pool's threads (started
            # then) begin holding the stop signals: only this thread takes them.
            with interrupts.held():
                futures: list[tuple[list[int], Future[list[Any]]]] = [
                    (group, pool.submit(run, [(i, self._calls[i]) for i in group]))
                    for group in groups
                ]
            for group, future in futures:
                interrupts.check()
                unfinished.extend(self._collect(group, future, alone=alone))
        except BaseException:
            _stop(set(multiprocessing.active_children()) - before)
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        return unfinished

    def _collect(self, group: list[int], future: Future[list[Any]], *, alone: bool) -> list[int]:
        """Hand on a batch's results; the calls left without one when its worker died."""
        try:
            results = future.result()
        except BrokenProcessPool:
            if not alone:
                return group
            self._lost(group[0])
            return []
        except Exception as error:  # e.g. a result that could not be sent back
            for index in group:
                self._on_result(index, self._on_failure(index, f"{type(error).__name__}: {error}"))
            return []
        for index, result in zip(group, results, strict=True):
            self._on_result(index, result)
        return []


def _stop(workers: set[multiprocessing.process.BaseProcess]) -> None:
    """Stop a pool's workers now (the run was interrupted: their results are not wanted)."""
    for worker in workers:
        with contextlib.suppress(OSError, AttributeError):
            worker.terminate()


# In a worker: what `run_all` was given as `shared`, and the calls' marks.
_shared: object = None
_marks: Any = None


def _start_worker(shared: object, marks: Any, parent: int) -> None:
    """In a worker, first: it was forked holding the stop signals (`_Pool._round`)."""
    global _shared, _marks
    _shared, _marks = shared, marks
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for name in ("SIGTERM", "SIGHUP"):  # the defaults, whatever the parent had set
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    _exit_with_parent(parent)
    if hasattr(signal, "pthread_sigmask"):  # one held since the fork acts now
        signal.pthread_sigmask(signal.SIG_UNBLOCK, interrupts.STOP_SIGNALS)


# prctl(2) option: the signal this process gets when its parent dies.
_PR_SET_PDEATHSIG = 1


def _exit_with_parent(parent: int) -> None:
    """Have this worker end when the process that started it does, however it ends."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    else:
        threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    if os.getppid() != parent:  # it died before the request was made
        os._exit(1)


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(1)
    os._exit(1)


def _run_group(
    function: Callable[..., R], with_shared: bool, group: list[tuple[int, Any]]
) -> list[R]:
    """In a worker: the calls of one batch, each marked as it starts and ends."""
    results = []
    for index, call in group:
        _marks[index] = _STARTED
        results.append(function(_shared, *call) if with_shared else function(*call))
        _marks[index] = _FINISHED
    return results
