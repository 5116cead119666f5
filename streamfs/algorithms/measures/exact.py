"""Pearson's |r| from exact integer sums, so that exact ties stay ties.

Binary and count data tie often, and SAOLA's rules compare strengths with strict and
non-strict inequalities: a column whose values are integers times a power of two of its own
gets its |r| with the class from sums computed without rounding (:func:`exact_abs_r`), and a
comparison of two strengths that may be equal is decided from those sums
(:func:`_nb_pair_signs`).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .columns import ColumnBlock
from .pearson import _nb_sqrt_product

__all__ = [
    "exact_target",
    "exact_abs_r",
    "exact_sums",
]


#: integers up to this are exact in float64, and so are their sums and products while they stay
#: below it
EXACT_INT = 2.0 ** 53


@njit(cache=True, nogil=True, inline="always")
def _nb_low_exponent(v):
    """The exponent of the lowest set bit of a finite non-zero ``v``: ``v / 2**e`` is an odd
    integer."""
    m, e = math.frexp(abs(v))
    bits = np.int64(m * 9007199254740992.0)  # 2**53 * m: the 53-bit significand
    return e - 53 + math.frexp(float(bits & -bits))[1] - 1


@njit(cache=True, nogil=True)
def _nb_exact_grid(data, lo, hi, n):
    """``(True, e)`` with the largest ``e`` for which ``data[lo:hi] / 2**e`` are integers,
    or ``(False, 0)`` where a value is not finite or those integers are too large for exact
    sums (``n`` times the largest square reaches 2**53; 53-bit floats stop at their first
    non-zero). All zeros give ``(True, 0)``."""
    emin = 10000
    amax = 0.0
    for k in range(lo, hi):
        v = data[k]
        if v == 0.0:
            continue
        if not math.isfinite(v):
            return False, 0
        emin = min(emin, _nb_low_exponent(v))
        amax = max(amax, abs(v))
        top = math.ldexp(amax, -emin)
        if n * top * top >= EXACT_INT:  # the sum of squares alone is already too large
            return False, 0
    return True, (0 if emin == 10000 else emin)


def exact_target(y: np.ndarray) -> tuple[np.ndarray, float, float, float] | None:
    """For a class vector whose values lie on a grid of a power of two fine enough for
    :func:`exact_abs_r` to keep its sums exact: ``(y on that grid, its sum, its largest
    |value|, n sum y^2 - (sum y)^2)``, else None (then r keeps the centred sums)."""
    y = np.ascontiguousarray(y, dtype=np.float64)
    n = len(y)
    ok, e = _nb_exact_grid(y, 0, n, n)
    if not ok or n == 0:
        return None
    g = np.ldexp(y, -e)  # a power of two: no rounding, and r does not change
    top = float(np.abs(g).max())
    if n * n * top * top >= EXACT_INT:
        return None
    ty = float(g.sum())  # integers below 2**53 in any order: exact
    return g, ty, top, n * float(np.dot(g, g)) - ty * ty


@njit(cache=True, nogil=True)
def _nb_exact_abs_r(indptr, indices, data, n, dense, cols, y, ty, ymax, tvar, dep,
                    xok, xe, xs, xv, xa):
    """:func:`exact_abs_r`'s kernel: overwrites ``dep[j]`` for the columns ``j = cols[q]``
    whose values allow it, and records their exact sums: ``xok[q]``, and on the column's grid
    (exponent ``xe[q]``) ``xs[q] = Sx``, ``xv[q] = n Sxx - Sx^2`` and ``xa[q] = n Sxy - Sx
    Sy`` with the class grid ``y`` (sum ``ty``, largest |value| ``ymax``), exact integers."""
    for q in range(len(cols)):
        j = cols[q]
        lo = indptr[j]
        hi = indptr[j + 1]
        ok, e = _nb_exact_grid(data, lo, hi, n)
        if not ok:
            continue
        s = 0.0
        sabs = 0.0
        sxx = 0.0
        sxy = 0.0
        for k in range(lo, hi):
            v = math.ldexp(data[k], -e)
            s += v
            sabs += abs(v)
            sxx += v * v
            sxy += v * y[k - lo if dense else indices[k]]
        # every partial sum is an integer of at most these sizes, so none was rounded (n Sxy
        # and Sx Sy may have opposite signs: their difference is twice as large)
        if n * sxx >= EXACT_INT or 2.0 * n * sabs * ymax >= EXACT_INT \
                or sabs * sabs >= EXACT_INT:
            continue
        var = n * sxx - s * s
        den = _nb_sqrt_product(var, tvar)
        if den > 0:
            a = n * sxy - s * ty
            dep[j] = min(abs(a) / den, 1.0)
            xok[q] = True
            xe[q] = e
            xs[q] = s
            xv[q] = var
            xa[q] = a


def exact_abs_r(block: ColumnBlock, cols: np.ndarray,
                target: tuple[np.ndarray, float, float, float], dep: np.ndarray) -> None:
    """|r| with the class vector of ``target`` (from :func:`exact_target`) computed from exact
    sums, for the columns among ``cols`` whose values allow it; written into ``dep`` (the
    other columns keep their values).

    Binary and count data tie often: two columns with the same counts in different rows, or a
    0/1 column and its complement, have the same |r| with the class, but the centred sums
    round differently in their different rows, and SAOLA's tie rule (``dep(Y) >= dep(F)``
    keeps the earlier feature) then went the way the last bit fell. A column whose values
    are integers times a power of two of its own (small enough integers: every sum below
    2**53) gets ``n Sxy - Sx Sy``, ``n Sxx - Sx^2`` and ``n Syy - Sy^2`` without rounding,
    and ``|r| = |n Sxy - Sx Sy| / sqrt((n Sxx - Sx^2)(n Syy - Sy^2))`` rounds only in its last
    three operations: columns whose exact sums agree (up to sign) get the same bits, and a
    column scaled by a power of two keeps them.

    >>> y = np.array([1.0, 1.0, 0.0, 0.0, 0.0, 1.0])
    >>> from streamfs.algorithms.measures.columns import as_column_block
    >>> b = as_column_block(np.array([[1, 0], [0, 1], [1, 0], [0, 1], [0, 1], [1, 0]], float))
    >>> dep = np.zeros(2)
    >>> exact_abs_r(b, np.arange(2), exact_target(y), dep)
    >>> bool(dep[0] == dep[1])
    True
    """
    exact_sums(block, cols, target, dep)


def exact_sums(block: ColumnBlock, cols: np.ndarray,
               target: tuple[np.ndarray, float, float, float], dep: np.ndarray
               ) -> dict[str, np.ndarray]:
    """:func:`exact_abs_r`, and the exact sums behind each |r| it wrote, one entry per
    column of ``cols`` (``xcols``): ``xok`` (whether it got one), and on its grid ``xe`` (the
    grid's exponent), ``xs`` (Sx), ``xv`` (``n Sxx - Sx^2``) and ``xa`` (``n Sxy - Sx Sy``
    with the class), for :func:`_nb_pair_signs`."""
    cols = np.asarray(cols, dtype=np.int64)
    b = len(cols)
    out = {"xcols": cols, "xok": np.zeros(b, dtype=np.bool_),
           "xe": np.zeros(b, dtype=np.int64), "xs": np.empty(b), "xv": np.empty(b),
           "xa": np.empty(b)}
    _nb_exact_abs_r(block.indptr, block.indices, block.data, block.n_rows, block.dense,
                    cols, *target, dep, out["xok"], out["xe"], out["xs"], out["xv"], out["xa"])
    return out


#: strengths closer than this (relative) may be equal: the exact sums decide
NEAR_TIE = 1e-8
_LIMB = 26  # bits of a limb in _nb_cmp_squares: products of two limbs fit an int64 with room
_LIMB_MASK = (1 << _LIMB) - 1


@njit(cache=True, nogil=True)
def _nb_limb_product(a, b):
    """The limbs (base ``2**_LIMB``, lowest first) of the product of two limb arrays."""
    out = np.zeros(len(a) + len(b), dtype=np.int64)
    for i in range(len(a)):
        for k in range(len(b)):
            out[i + k] += a[i] * b[k]
    for i in range(len(out) - 1):  # carries: every limb back under 2**_LIMB
        out[i + 1] += out[i] >> _LIMB
        out[i] &= _LIMB_MASK
    return out


@njit(cache=True, nogil=True)
def _nb_limbs(x):
    """Three limbs of a non-negative integer held in a float, below 2**62 (the callers'
    are below 2**54)."""
    v = np.int64(x) if x < 2.0 ** 62 else np.int64(0)
    out = np.empty(3, dtype=np.int64)
    out[0] = v & _LIMB_MASK
    out[1] = (v >> _LIMB) & _LIMB_MASK
    out[2] = v >> (2 * _LIMB)
    return out


@njit(cache=True, nogil=True)
def _nb_cmp_squares(a, b, c, d):
    """The sign of ``a**2 * b - c**2 * d`` for integers held exactly in floats (``|a|, |c|``
    and ``b, d >= 0`` below 2**53), computed without rounding: the products reach 2**159."""
    left = _nb_limb_product(_nb_limb_product(_nb_limbs(abs(a)), _nb_limbs(abs(a))), _nb_limbs(b))
    right = _nb_limb_product(_nb_limb_product(_nb_limbs(abs(c)), _nb_limbs(abs(c))), _nb_limbs(d))
    for i in range(len(left) - 1, -1, -1):
        if left[i] != right[i]:
            return 1 if left[i] > right[i] else -1
    return 0


@njit(cache=True, nogil=True, inline="always")
def _nb_sign(x, y):
    return int(x > y) - int(x < y)


@njit(cache=True, nogil=True, inline="always")
def _nb_near(x, y):
    return abs(x - y) <= NEAR_TIE * max(abs(x), abs(y))


@njit(cache=True, nogil=True)
def _nb_pair_signs(data, indices, lo, hi, dense, n, d, dep_f, dep_y, fok, fe, fs, fv, fa,
                   trow, tmean, tok, te, ts, tv, ta, vc):
    """``(sign(dep_y - dep_f), sign(d - dep_f), sign(d - dep_y))`` for a newcomer F (its
    values ``data[lo:hi]``) and a kept feature Y (its centred column ``trow``, centred on
    ``tmean``), from the strengths as computed, or, where two of them may be equal and
    both features have exact sums (``fok``, ``tok``, :func:`exact_sums`), from those sums:
    ``d = |a_FY| / sqrt(v_F v_Y)`` and ``dep = |a| / sqrt(v v_C)`` compare as
    ``a_FY^2 v_C`` against ``a_F^2 v_Y`` and so on, without rounding (``vc``: the class's
    ``n Syy - Sy^2``). SAOLA's rules compare with strict and non-strict inequalities, so
    an exact tie must not go the way the last bit of d fell.

    Y's values are its centred ones plus the mean, rounded to its grid: every value is an
    integer of that grid under 2**27, far above the rounding of the centring."""
    syf = _nb_sign(dep_y, dep_f)
    sdf = _nb_sign(d, dep_f)
    sdy = _nb_sign(d, dep_y)
    if not (fok and tok) or not (_nb_near(d, dep_f) or _nb_near(d, dep_y)
                                 or _nb_near(dep_y, dep_f)):
        return syf, sdf, sdy
    sxy = 0.0
    sabs = 0.0
    for k in range(lo, hi):
        i = k - lo if dense else indices[k]
        w = math.ldexp(data[k], -fe) * np.rint(math.ldexp(trow[i] + tmean, -te))
        sxy += w
        sabs += abs(w)
    cross = abs(fs) * abs(ts)
    if n * sabs + cross >= EXACT_INT:  # a sum or the difference could have been rounded
        return syf, sdf, sdy
    a = n * sxy - fs * ts
    return (_nb_cmp_squares(ta, fv, fa, tv), _nb_cmp_squares(a, vc, fa, tv),
            _nb_cmp_squares(a, vc, ta, fv))
