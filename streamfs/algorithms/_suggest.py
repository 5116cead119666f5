"""The closest of some names to a mistyped one, for messages (no numpy: settings use it)."""

from __future__ import annotations

import difflib
from typing import Any, Sequence


def closest(word: str, choices: Sequence[Any], cutoff: float = 0.6) -> str | None:
    """The string of ``choices`` closest to ``word`` (difflib's ratio ≥ ``cutoff``, case
    ignored), or None.

    >>> closest("Class", ["class", "a", 3]), closest("zzz", ["alpha"])
    ('class', None)
    """
    by_folded: dict[str, str] = {}
    for c in choices:
        if isinstance(c, str):
            by_folded.setdefault(c.casefold(), c)
    close = difflib.get_close_matches(word.casefold(), list(by_folded), n=1, cutoff=cutoff)
    return by_folded[close[0]] if close else None


def did_you_mean(word: Any, choices: Sequence[Any]) -> str:
    """`` (did you mean 'x'?)`` for the choice closest to a mistyped ``word``, or ``""``
    when none is close (:func:`closest`).

    >>> did_you_mean("alfa", ["test", "alpha", "delta"]), did_you_mean("Class", ["class", "a"])
    (" (did you mean 'alpha'?)", " (did you mean 'class'?)")
    >>> did_you_mean("zzz", ["alpha"]), did_you_mean(3, ["alpha"])
    ('', '')
    """
    match = closest(word, choices) if isinstance(word, str) else None
    return f" (did you mean {match!r}?)" if match is not None else ""
