"""Replay at a given speed: a token bucket on a monotonic clock.

>>> t = [0.0]
>>> bucket = TokenBucket(10, clock=lambda: t[0], sleep=lambda s: t.__setitem__(0, t[0] + s))
>>> for _ in range(3):
...     bucket.acquire(10)   # 10 items at 10/s: the 2nd and 3rd wait a second each
>>> t[0]
2.0
"""

from __future__ import annotations

import time
from typing import Callable, Iterable, Iterator


class TokenBucket:
    """Lets ``rate`` items per second through, with bursts of up to ``burst`` items.

    ``acquire(n)`` takes ``n`` tokens and sleeps while the balance is negative, so a request
    larger than the burst still passes (it borrows) and the long-run rate stays exact.
    ``clock`` and ``sleep`` are injectable so tests need no wall-clock time.
    """

    def __init__(self, rate: float, burst: float | None = None, *,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        if not rate > 0:
            raise ValueError(f"rate must be > 0, got {rate}")
        self.rate = float(rate)
        self.burst = float(burst if burst is not None else rate)
        self._clock, self._sleep = clock, sleep
        self._tokens = self.burst  # the first burst goes out at once
        self._last = clock()

    def acquire(self, n: float) -> None:
        """Take ``n`` tokens, sleeping until the balance is no longer negative."""
        now = self._clock()
        self._tokens = min(self.burst, self._tokens + (now - self._last) * self.rate)
        self._last = now
        self._tokens -= n
        if self._tokens < 0:
            # the debt stays on the books: the next refill counts the time slept (exact pacing)
            self._sleep(-self._tokens / self.rate)


def throttle(messages: Iterable[dict], bucket: TokenBucket) -> Iterator[dict]:
    """Pace data messages by their item count (rows of ``instances``, columns of ``features``)."""
    for message in messages:
        kind = message.get("kind")
        if kind == "instances":
            bucket.acquire(message["X"].shape[0])
        elif kind == "features":
            bucket.acquire(message["X"].shape[1])
        yield message
