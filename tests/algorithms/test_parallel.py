"""Column-parallel kernels: the split covers every column once, the thread count is validated,
and results are bit-identical whatever the number of threads."""

from __future__ import annotations

import multiprocessing
import os

import numpy as np
import pytest

from streamfs.algorithms import KOFSD, SAOLA
from streamfs.algorithms.parallel import (CHUNKS_PER_THREAD, MIN_COLUMNS_PER_THREAD, column_ranges,
                                          cpu_quota, kernel_threads, map_column_ranges)


@pytest.mark.parametrize("n", [0, 1, 31, 32, 64, 65, 100, 1000, 12345])
@pytest.mark.parametrize("threads", [1, 2, 3, 8])
def test_column_ranges_cover_every_column_once(n, threads):
    ranges = column_ranges(n, threads)
    assert [c for a, b in ranges for c in range(a, b)] == list(range(n))
    assert len(ranges) <= threads
    if len(ranges) > 1:
        assert min(b - a for a, b in ranges) >= MIN_COLUMNS_PER_THREAD


@pytest.mark.parametrize("value", ["0", "-2", "two", "1.5", "1025", "99999"])  # 99999: a typo
def test_bad_thread_count_is_refused_by_name(monkeypatch, value):
    monkeypatch.setenv("STREAMFS_KERNEL_THREADS", value)
    with pytest.raises(ValueError, match=f"STREAMFS_KERNEL_THREADS .* got '{value}'"):
        kernel_threads()


def test_thread_count_from_environment(monkeypatch):
    monkeypatch.setenv("STREAMFS_KERNEL_THREADS", "3")
    assert kernel_threads() == 3
    monkeypatch.delenv("STREAMFS_KERNEL_THREADS")
    assert kernel_threads() >= 1


@pytest.mark.parametrize("files, quota", [
    ({"cpu.max": "max 100000\n"}, None),                       # cgroup v2, no limit
    ({"cpu.max": "150000 100000\n"}, 1.5),                     # v2, docker --cpus=1.5
    ({"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}, None),  # v1
    ({"cpu/cpu.cfs_quota_us": "50000\n", "cpu/cpu.cfs_period_us": "100000\n"}, 0.5),
    ({}, None),                                                 # no cgroup files at all
    ({"cpu.max": "garbage\n"}, None),
])
def test_cpu_quota_of_a_container(tmp_path, files, quota):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert cpu_quota(tmp_path) == quota


def test_default_thread_count_is_capped_by_the_quota(monkeypatch):
    import streamfs.algorithms.parallel as parallel

    monkeypatch.delenv("STREAMFS_KERNEL_THREADS", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)))
    monkeypatch.setattr(parallel, "cpu_quota", lambda: 1.5)
    parallel.available_cpus.cache_clear()
    try:
        assert kernel_threads() == 2  # a quota of 1.5 CPUs: 2 threads, not the host's 8
        monkeypatch.setattr(parallel, "cpu_quota", lambda: None)
        assert kernel_threads() == 2  # read once per process, not for every block
        parallel.available_cpus.cache_clear()
        assert kernel_threads() == 8
    finally:
        parallel.available_cpus.cache_clear()  # the real machine's count for later tests


def test_ranges_run_on_several_threads_in_order(monkeypatch):
    import threading

    monkeypatch.setenv("STREAMFS_KERNEL_THREADS", "4")
    barrier = threading.Barrier(4, timeout=30)

    def fn(a, b):
        barrier.wait()  # passes only if four ranges run at the same time
        return (a, b, threading.current_thread().name)

    out = map_column_ranges(fn, 4 * MIN_COLUMNS_PER_THREAD)
    assert [(a, b) for a, b, _ in out] == column_ranges(4 * MIN_COLUMNS_PER_THREAD, 4)
    assert len({name for *_, name in out}) == 4


def test_a_slow_thread_does_not_hold_up_the_block(monkeypatch):
    """The calling thread's first range waits until every other range is done: the helper
    must take them all (an even split, one range per thread, would wait forever)."""
    import threading

    monkeypatch.setenv("STREAMFS_KERNEL_THREADS", "2")
    n = 2 * CHUNKS_PER_THREAD * MIN_COLUMNS_PER_THREAD
    ranges = column_ranges(n, 2 * CHUNKS_PER_THREAD)
    assert len(ranges) == 2 * CHUNKS_PER_THREAD
    others_done = threading.Semaphore(0)
    caller = threading.current_thread()
    caller_busy = threading.Event()

    def fn(a, b):
        if threading.current_thread() is caller and not caller_busy.is_set():
            caller_busy.set()
            for _ in range(len(ranges) - 1):  # as a core busy with something else
                assert others_done.acquire(timeout=30), "the other ranges were not computed"
        else:
            assert caller_busy.wait(30)  # the caller holds one range before the rest go
            others_done.release()
        return (a, b, threading.current_thread() is caller)

    out = map_column_ranges(fn, n)
    assert [(a, b) for a, b, _ in out] == ranges  # results in range order
    assert sum(on_caller for *_, on_caller in out) == 1  # the caller computed only its first


def test_a_failing_range_raises_and_the_pool_goes_on(monkeypatch):
    monkeypatch.setenv("STREAMFS_KERNEL_THREADS", "2")
    n = 2 * CHUNKS_PER_THREAD * MIN_COLUMNS_PER_THREAD
    for bad in (0, n - MIN_COLUMNS_PER_THREAD):  # on the caller or on a helper, most likely

        def fn(a, b):
            if a <= bad < b:
                raise RuntimeError(f"bad column {bad}")
            return b - a

        with pytest.raises(RuntimeError, match=f"bad column {bad}"):
            map_column_ranges(fn, n)
    assert sum(map_column_ranges(lambda a, b: b - a, n)) == n


def _child(queue):
    queue.put(map_column_ranges(lambda a, b: b - a, 200))


def test_a_forked_child_gets_its_own_threads(monkeypatch):
    monkeypatch.setenv("STREAMFS_KERNEL_THREADS", "2")
    sizes = [b - a for a, b in column_ranges(200, 2 * CHUNKS_PER_THREAD)]
    assert map_column_ranges(lambda a, b: b - a, 200) == sizes  # the parent's pool exists
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_child, args=(queue,))
    child.start()
    child.join(60)
    # with the parent's pool (no threads in the child) the child would wait forever
    assert child.exitcode == 0 and queue.get(timeout=5) == sizes


def _imbalanced(seed, n=90, p=700):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.2).astype(int)
    X = rng.normal(size=(n, p))
    X[:, ::37] += 1.5 * y[:, None]
    X[:, 5::50] = np.round(X[:, 5::50])  # ties: the kernels' walks
    return X, y


@pytest.mark.parametrize("params", [{}, {"compat": "zhou"}, {"card": "distance"}])
def test_kofsd_same_bits_with_any_thread_count(monkeypatch, params):
    X, y = _imbalanced(0)
    results = []
    for threads in ("1", "2", "5"):
        monkeypatch.setenv("STREAMFS_KERNEL_THREADS", threads)
        sel = KOFSD(**params).fit(X, y)
        results.append((sel.selected_.tolist(), sel.scores_.tobytes(), sel.dependency_))
    assert results[0][0]  # something was selected
    assert results[1] == results[0] and results[2] == results[0]


@pytest.mark.parametrize("params", [{}, {"compat": "lofs"}, {"test": "mi"}])
def test_saola_same_bits_with_any_thread_count(monkeypatch, params):
    import scipy.sparse as sp

    X, y = _imbalanced(1, n=120, p=900)
    if params.get("test") == "mi":
        X = np.round(X)
    results = []
    for threads in ("1", "2", "5"):
        monkeypatch.setenv("STREAMFS_KERNEL_THREADS", threads)
        for block in (X, sp.csc_matrix(np.where(np.abs(X) > 1, X, 0.0))):
            sel = SAOLA(**params).fit(block, y)
            results.append((sel.selected_.tolist(), sel.scores_.tobytes()))
    assert results[0][0]
    assert results[2:4] == results[0:2] and results[4:6] == results[0:2]
