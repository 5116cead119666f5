"""Column-parallel runs of the compiled per-column kernels.

The relevance statistics of a block's columns (K-OFSD's single-feature dependency, SAOLA's
correlation with the class) do not depend on each other, and the kernels release the GIL, so
the columns of a block are split into contiguous ranges computed on a few threads at once.
Every column is computed by the same kernel with the same arithmetic whatever the split, so
the results are bit-identical to a single thread's.

The number of threads is ``STREAMFS_KERNEL_THREADS`` (default: the CPUs this process may run
on, capped by a container's CPU quota); ``1`` runs everything on the calling thread.
"""

from __future__ import annotations

import contextvars
import functools
import math
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from queue import Empty, SimpleQueue
from typing import Callable, TypeVar

T = TypeVar("T")

#: fewer columns than this per thread are not split further: handing a range to another
#: thread costs some tens of microseconds
MIN_COLUMNS_PER_THREAD = 32
#: ranges per thread: enough that a thread slowed down by a busy core does not hold up the
#: block, few enough that handing them out stays cheap
CHUNKS_PER_THREAD = 4

_lock = threading.Lock()
_pool: tuple[int, int, ThreadPoolExecutor] | None = None  # (pid, threads, pool)


def cpu_quota(cgroup: Path = Path("/sys/fs/cgroup")) -> float | None:
    """CPUs' worth of time the cgroup may use (a container's ``--cpus`` or Kubernetes CPU
    limit), from cgroup v2's ``cpu.max`` or v1's ``cpu.cfs_quota_us``; None without a limit.
    A container sees every CPU of its host in its affinity mask, and more busy threads than
    its quota only get it throttled."""
    try:
        quota, period = (cgroup / "cpu.max").read_text().split()[:2]
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        pass
    try:
        quota = int((cgroup / "cpu" / "cpu.cfs_quota_us").read_text())
        period = int((cgroup / "cpu" / "cpu.cfs_period_us").read_text())
    except (OSError, ValueError):
        return None
    return None if quota <= 0 or period <= 0 else quota / period


@functools.cache
def available_cpus() -> int:
    """The CPUs this process may run on, capped by its CPU quota (rounded up). Read once per
    process: reading the cgroup files for every block cost 12 % of a dense SAOLA run."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    quota = cpu_quota()
    return max(1, min(cpus, math.ceil(quota)) if quota else cpus)


#: more threads than this is a typo, not a machine (one thread per CPU is the default)
MAX_KERNEL_THREADS = 1024


def kernel_threads() -> int:
    """Threads for the column-parallel kernels: ``STREAMFS_KERNEL_THREADS``, or
    :func:`available_cpus`.

    >>> kernel_threads() >= 1
    True
    """
    value = os.environ.get("STREAMFS_KERNEL_THREADS", "").strip()
    if not value:
        return available_cpus()
    try:
        threads = int(value)
    except ValueError:
        threads = 0
    if not 1 <= threads <= MAX_KERNEL_THREADS:  # 99999 made as many threads for a wide block
        raise ValueError(f"STREAMFS_KERNEL_THREADS must be a whole number from 1 to "
                         f"{MAX_KERNEL_THREADS}, got {value!r}")
    return threads


def column_ranges(n_columns: int, threads: int) -> list[tuple[int, int]]:
    """Contiguous ``(start, stop)`` ranges covering ``n_columns``, at most one per thread and
    none shorter than :data:`MIN_COLUMNS_PER_THREAD` columns (unless there are fewer).

    >>> column_ranges(100, 2)
    [(0, 50), (50, 100)]
    >>> column_ranges(40, 4)
    [(0, 40)]
    >>> column_ranges(0, 4)
    []
    """
    parts = max(1, min(threads, n_columns // MIN_COLUMNS_PER_THREAD))
    bounds = [n_columns * i // parts for i in range(parts + 1)]
    return [(a, b) for a, b in zip(bounds, bounds[1:]) if b > a]


def _executor(threads: int) -> ThreadPoolExecutor:
    """The shared pool of ``threads - 1`` helpers (the caller takes ranges too);
    made again in a forked child, whose copy of the parent's pool has no threads."""
    global _pool
    with _lock:
        if _pool is None or _pool[0] != os.getpid() or _pool[1] != threads:
            if _pool is not None and _pool[0] == os.getpid():
                _pool[2].shutdown(wait=False)  # another thread count: its idle helpers go
            _pool = (os.getpid(), threads,
                     ThreadPoolExecutor(threads - 1, thread_name_prefix="streamfs-kernel"))
        return _pool[2]


def _drain(todo: SimpleQueue) -> None:
    try:
        while True:
            todo.get_nowait()
    except Empty:
        pass


def map_column_ranges(fn: Callable[[int, int], T], n_columns: int) -> list[T]:
    """``fn(start, stop)`` for each range of :func:`column_ranges` over
    :data:`CHUNKS_PER_THREAD` x :func:`kernel_threads` parts, the results in range order.
    ``fn`` must only write the outputs of its own columns.

    The calling thread and ``threads - 1`` helpers take the next range as they finish one, so
    a thread slowed down by another process on its core (the broker, the consumer's fetch
    thread) computes fewer ranges instead of holding up the others.

    >>> map_column_ranges(lambda a, b: list(range(a, b)), 3)
    [[0, 1, 2]]
    """
    threads = kernel_threads()
    ranges = column_ranges(n_columns, threads * CHUNKS_PER_THREAD)
    if threads == 1 or len(ranges) <= 1:
        return [fn(a, b) for a, b in ranges]
    results: list = [None] * len(ranges)
    todo: SimpleQueue[int] = SimpleQueue()  # documented thread-safe; no reliance on the GIL
    for i in range(len(ranges)):
        todo.put(i)

    def take_ranges() -> None:
        try:
            while True:
                try:
                    i = todo.get_nowait()
                except Empty:
                    return
                results[i] = fn(*ranges[i])
        except BaseException:
            _drain(todo)  # the others stop after their current range: the block has failed
            raise

    pool = _executor(threads)
    # each helper in a copy of the caller's context: what it marks (the worker's stream being
    # stepped, which a warning names) holds on the helper too
    helpers = [pool.submit(contextvars.copy_context().run, take_ranges)
               for _ in range(min(threads, len(ranges)) - 1)]
    try:
        take_ranges()
    finally:
        # the helpers' ranges are finished (or failed) before the caller reads or reuses the
        # outputs; a helper's exception is raised here
        for helper in helpers:
            helper.result()
    return results
