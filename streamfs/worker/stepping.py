"""Which stream the worker is stepping, so that an algorithm's warning names it.

The selectors warn through :mod:`warnings` (advice on the data or the parameters, e.g. SAOLA's
Fisher z on more than two classes); in the worker such a warning is one log line among many
streams' work, useless without the stream it is about. The processor marks the stream (and
its algorithm) it steps in a :class:`~contextvars.ContextVar`, which is the thread's own (the
column-parallel kernels copy it into their helper threads: see
:func:`streamfs.algorithms.parallel.map_column_ranges`), and :func:`log_warnings` installs,
once at start-up, a ``warnings.showwarning`` that reads it. Nothing swaps warning filters or
hooks per step: ``warnings.catch_warnings`` does, process-wide, so it is not safe while other
threads run (Python 3.11).

>>> with stepping("s1"):
...     running("saola")
...     current()
('s1', 'saola')
>>> current() is None
True
"""

from __future__ import annotations

import logging
import threading
import warnings
from collections import OrderedDict
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Iterator

log = logging.getLogger("streamfs.worker")

#: (stream id, algorithm or None) of the step in progress on this thread, or None
_current: ContextVar[tuple[str, str | None] | None] = ContextVar("streamfs_stepping",
                                                                  default=None)

#: distinct warnings remembered to log each once per stream (the oldest forgotten first)
SEEN_WARNINGS = 4096
_seen: OrderedDict[tuple, None] = OrderedDict()
_seen_lock = threading.Lock()  # the kernels' helper threads warn too


@contextmanager
def stepping(stream: str) -> Iterator[None]:
    """Mark ``stream`` as the one being stepped on this thread (and the threads its kernels
    hand work to) until the block ends; :func:`running` names its algorithm once known."""
    token = _current.set((stream, None))
    try:
        yield
    finally:
        _current.reset(token)  # also undoes running()


def running(algorithm: Any) -> None:
    """Name the algorithm of the stream being stepped (read from its header or ``open``)."""
    now = _current.get()
    if now is not None:
        _current.set((now[0], algorithm if isinstance(algorithm, str) else None))


def current() -> tuple[str, str | None] | None:
    """``(stream, algorithm)`` of the step in progress on this thread, or None."""
    return _current.get()


def log_warnings() -> None:
    """Log every warning as one line of the worker's log naming the stream (and algorithm)
    being stepped, once per stream and message: ``stream 's1' (saola): SAOLA(test='fisher_z')
    correlates ...``. Call once, at start-up, before other threads run."""
    # the default action shows a message once per code location: a second stream's identical
    # warning would never be logged; the hook keeps them apart (appended: -W filters win)
    warnings.filterwarnings("always", category=UserWarning, append=True)
    warnings.showwarning = _log_warning


def _log_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                 file: Any = None, line: str | None = None) -> None:
    now = _current.get()
    key = (now, category, str(message))
    with _seen_lock:
        if key in _seen:
            _seen.move_to_end(key)
            return
        _seen[key] = None
        if len(_seen) > SEEN_WARNINGS:
            _seen.popitem(last=False)
    if now is None:
        log.warning("%s", message)
    elif now[1] is None:
        log.warning("stream %r: %s", now[0], message)
    else:
        log.warning("stream %r (%s): %s", now[0], now[1], message)
