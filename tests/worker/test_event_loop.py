"""Other threads keep running while a long SAOLA step computes (no Kafka).

The worker computes on its main thread while other threads must go on: its HTTP server
(``/health`` probes, ``/metrics``) and the confluent-kafka callbacks. The step's time is spent in
numba kernels compiled with ``nogil=True``; here an asyncio heartbeat ticks while the step runs in
an executor thread. If a kernel held the GIL, the heartbeat would stall for the whole step and
this test would fail.
"""

from __future__ import annotations

import asyncio
import time

import numpy as np

from streamfs.algorithms.saola import SAOLA

TICK = 0.01


def _long_stream(n: int, p: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Weakly informative, mutually non-redundant columns: all pass the relevance test and
    stay selected, so every newcomer is compared with a growing selection."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    X = np.asfortranarray(rng.standard_normal((n, p)) + 0.6 * y[:, None])
    return X, y


async def _step_with_heartbeat(sel: SAOLA, X: np.ndarray, y: np.ndarray):
    loop = asyncio.get_running_loop()
    ticks: list[float] = []
    stop = asyncio.Event()

    async def heartbeat() -> None:
        while not stop.is_set():
            ticks.append(time.perf_counter())
            await asyncio.sleep(TICK)

    hb = asyncio.create_task(heartbeat())
    await asyncio.sleep(3 * TICK)  # the heartbeat is running before the step starts
    t0 = time.perf_counter()
    await loop.run_in_executor(None, sel.partial_fit, X, y)
    t1 = time.perf_counter()
    stop.set()
    await hb
    return t0, t1, ticks


def test_heartbeat_keeps_ticking_during_a_long_saola_step():
    # warm the kernels (compilation holds the GIL and is not what this test is about)
    Xw, yw = _long_stream(200, 40)
    SAOLA().partial_fit(Xw, yw)
    # size the step to about a second on this machine
    n = 2000
    X, y = _long_stream(n, 300, seed=1)
    t = time.perf_counter()
    SAOLA().partial_fit(X, y)
    per = time.perf_counter() - t
    p = int(300 * min(8.0, max(1.0, (1.0 / max(per, 1e-3)) ** 0.5)))  # cost ~ p^2
    X, y = _long_stream(n, p, seed=2)
    sel = SAOLA()
    t0, t1, ticks = asyncio.run(_step_with_heartbeat(sel, X, y))
    step = t1 - t0
    assert len(sel.selected_) > p // 2  # the step really compared many pairs
    assert step > 0.4, f"step too short to show anything ({step:.3f} s, p = {p})"
    inside = [u for u in ticks if t0 <= u <= t1]
    edges = [t0] + inside + [t1]
    gaps = np.diff(edges)
    # a kernel holding the GIL stalls the loop for (almost) the whole step
    assert gaps.max() < min(0.25, step / 3), (
        f"event loop stalled {gaps.max():.3f} s during a {step:.3f} s step")
    assert len(inside) >= step / (10 * TICK)
