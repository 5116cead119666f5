"""The selectors' warnings (advice on the data or the parameters) as the commands show them:
one log line each, once per command, held back while a command may still refuse its input."""

from __future__ import annotations

import logging
from typing import Any


#: the warnings a command has shown
_warned: set[str] = set()


def _log_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                 file: Any = None, line: str | None = None) -> None:
    """A warning of the selectors (advice on the data or the parameters) as one log line,
    as the worker logs everything: not Python's file, line number and source line; each
    message once per command (Python's own once-per-location forgets what it showed whenever
    a library enters ``warnings.catch_warnings``, as scikit-learn does in every fit, so
    `evaluate` printed the same advice for each of its splits)."""
    text = str(message)
    if text not in _warned:
        _warned.add(text)
        if _held_advice is not None:
            _held_advice.append(text)
        else:
            logging.getLogger("streamfs").warning("%s", text)


#: warnings held back by :func:`_hold_advice` (None: shown as they come)
_held_advice: list[str] | None = None


def _hold_advice() -> None:
    """Hold the selectors' advice back until :func:`_release_advice`: a command that may
    still refuse its input (``produce``: the stream id, asked of the broker after the data's
    checks) shows the refusal alone, not after advice on data it will not publish."""
    global _held_advice
    _held_advice = []


def _release_advice() -> None:
    global _held_advice
    held, _held_advice = _held_advice or [], None
    for text in held:
        logging.getLogger("streamfs").warning("%s", text)
