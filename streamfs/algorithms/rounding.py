"""Rounding as the authors' MATLAB code does it, where a count depends on it."""

from __future__ import annotations

import math


def round_half_away(x: float) -> int:
    """``x`` rounded to the nearest integer, halves away from zero (MATLAB's ``round``;
    Python's ``round`` sends halves to the even neighbour: ``round(2.5) == 2``).

    >>> round_half_away(0.1 * 25), round(0.1 * 25), round_half_away(-2.5)
    (3, 2, -3)
    >>> round_half_away(0.49999999999999994)  # floor(x + 0.5) would give 1
    0
    """
    a = abs(x)
    whole = math.floor(a)
    n = whole + 1 if a - whole >= 0.5 else whole  # exact: no x + 0.5 rounding up a near-half
    return int(math.copysign(n, x))
