"""Say what a long silent wait is for: numba compiling the algorithms' kernels.

The first run after an install or an upgrade compiles them (the worker's warm-up: about a
minute of CPU; ``streamfs select``: 5-20 s); numba caches them, so later runs load them in a
second or two, compile nothing and say nothing. Compiles are seen through numba's public event
API (``numba.core.event``, event ``numba:compile``, sent on a cache miss only).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

COMPILING = ("compiling the algorithms' numba kernels: the first run after an install or an "
             "upgrade takes {what}; later runs load them from numba's cache")


@contextmanager
def notice_while_compiling(say: Callable[[str], object], message: str, after: float = 3.0
                           ) -> Iterator[None]:
    """Call ``say(message)`` once, from a timer thread, if numba starts compiling inside the
    block and the block is still running ``after`` seconds later; nothing otherwise.

    >>> import threading
    >>> from numba import njit
    >>> noticed = threading.Event()
    >>> with notice_while_compiling(lambda message: noticed.set(), "compiling", after=0):
    ...     njit(lambda x: x + 1)(1)
    ...     noticed.wait(timeout=30)
    2
    True
    """
    from numba.core import event

    timer = threading.Timer(after, say, args=(message,))
    timer.daemon = True  # a block that raises must not leave the process waiting on the timer
    lock = threading.Lock()  # kernels may compile on several threads at once
    started = False

    class FirstCompile(event.Listener):
        def on_start(self, _event: event.Event) -> None:
            nonlocal started
            with lock:
                if not started:
                    started = True
                    timer.start()

        def on_end(self, _event: event.Event) -> None:
            pass

    try:
        with event.install_listener("numba:compile", FirstCompile()):
            yield
    finally:
        timer.cancel()
