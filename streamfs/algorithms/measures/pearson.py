"""Pearson's r and Fisher's z test on continuous data (``test="fisher_z"``).

Pearson's ``r`` and ``W = sqrt(N - 3) * atanh(r)``, compared with the two-sided normal critical
value. Sums run sequentially in row order over the non-zero entries (a dense column contributes
its zeros as exact ``0.0`` terms, which change nothing), and the cross-product is centred as
``sum_{x_i != 0} (x_i - m_x) c_i - m_x (sum_i c_i - sum_{x_i != 0} c_i)`` where ``c`` is the
(stored, dense) centred partner column: a dense column without zeros is an ordinary two-pass
centred dot product, a sparse column costs O(nnz), and dense and sparse columns give the same
bits (see :mod:`streamfs.algorithms.measures`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import njit
from scipy.special import ndtri  # scipy.stats costs seconds to import

from .columns import (
    _EMPTY_B,
    _EMPTY_CODE,
    _EMPTY_F,
    _EMPTY_I,
    DBL_MAX,
    MIN_ABS_FOR_SUMS,
    ColumnBlock,
    _nb_seq_sum,
)

__all__ = [
    "pearson_r",
    "fisher_z",
    "fisher_z_critical",
    "block_pearson_with_target",
    "centred",
]


@njit(cache=True, nogil=True)
def _nb_col_stats(indptr, indices, data, n, dense):
    """Per column: sequential sum, mean, centred sum of squares, constant flag."""
    b = len(indptr) - 1
    seqsum = np.empty(b)
    mean = np.empty(b)
    ss = np.empty(b)
    const = np.empty(b, dtype=np.bool_)
    none = np.empty(0)  # no target, no cross-products, no largest |x|
    _nb_column_stats(indptr, indices, data, n, 0, b, dense, none, 0.0, seqsum, mean, ss, const,
                     none, none, _nb_no_verdict())
    return seqsum, mean, ss, const


@njit(cache=True, nogil=True)
def _nb_block_fisher(indptr, indices, data, n, dense, target, tsum):
    """Column statistics and centred cross-product with ``target`` in one pass per column
    (the column stays in cache between its passes), and each column's largest ``|x|`` over
    its finite non-zeros (0 for a column of zeros): with the sums, what
    :func:`values_within` needs to check the block without a pass of its own."""
    b = len(indptr) - 1
    seqsum = np.empty(b)
    mean = np.empty(b)
    ss = np.empty(b)
    const = np.empty(b, dtype=np.bool_)
    cross = np.empty(b)
    amax = np.empty(b)
    start = 0
    if dense:
        start = b - b % 4
        for j in range(0, start, 4):
            _nb_fisher_dense4(data, n, j, target, tsum, seqsum, mean, ss, const, cross, amax)
    _nb_column_stats(indptr, indices, data, n, start, b, dense, target, tsum, seqsum, mean, ss,
                     const, cross, amax, _nb_no_verdict())
    return seqsum, mean, ss, const, cross, amax


@njit(cache=True, nogil=True)
def _nb_sparse_fisher_relevance(indptr, indices, data, n, target, tsum, tss, r_false, r_true,
                                max_abs):
    """:func:`_nb_block_fisher`, :func:`_nb_fisher_verdict` and :func:`values_within` in one
    pass over a sparse block, the same bits: per column only what SAOLA's relevance step
    reads (|r|, the verdict code, mean and centred sum of squares), and one flag for the
    block (every value finite and ``|x| <= max_abs``, no column under the smallest largest
    ``|x|``: see :func:`values_within`). A news20-shaped column holds a handful
    of values, so writing six statistics per column and reading four of them back cost about
    as much as computing them: one thread over the bench stream's 1.36M columns, in the
    worker's column ranges, took 30-44 ms against 37-52 ms with the separate kernels
    (eight runs each, alternating); the in-process sparse-features path used about 7 % less
    CPU."""
    b = len(indptr) - 1
    dep = np.empty(b)
    code = np.empty(b, dtype=np.int8)
    mean = np.empty(b)
    ss = np.empty(b)
    none = np.empty(0)
    within = _nb_column_stats(indptr, indices, data, n, 0, b, False, target, tsum, none, mean,
                              ss, np.empty(0, dtype=np.bool_), dep, none,
                              (tss, r_false, r_true, max_abs, code))
    return dep, code, mean, ss, within


@njit(cache=True, nogil=True, inline="always")
def _nb_no_verdict():
    """:func:`_nb_column_stats`' verdict arguments when the caller wants the statistics."""
    return 0.0, 0.0, 0.0, 0.0, np.empty(0, dtype=np.int8)


@njit(cache=True, nogil=True, inline="always")
def _nb_column_stats(indptr, indices, data, n, j0, j1, dense, target, tsum, seqsum, mean, ss,
                     const, cross, amax, verdict):
    """Columns ``j0 .. j1 - 1``: each one's sequential sum, mean, centred sum of squares and
    constant flag (see :func:`_nb_col_stats`) and, unless ``target`` is empty, its centred
    cross-product with ``target`` (as :func:`_nb_centred_cross`), written into the arrays;
    unless ``amax`` is empty, its largest ``|x|`` (see :func:`_nb_block_fisher`). One pass for
    the sum, one for everything else (each accumulator in storage order: the bits of separate
    passes).

    Most columns of a wide sparse stream hold a handful of values, so the per-column overhead
    is the cost: merging the passes and inlining the sum took the news20-shaped bench
    stream's 1.36M columns from 73 to 27 ms on one thread (on an earlier machine). The loop
    over the columns is in here, not in the callers: inlined once per column, this
    function's body ran 2 times slower (83 against 41 ms for those columns on a later
    machine, same bits).

    ``verdict = (tss, r_false, r_true, max_abs, code)`` with a non-empty ``code`` (Fisher's z
    relevance, :func:`_nb_sparse_fisher_relevance`): ``cross`` gets each column's |r| with
    the class and ``code`` its verdict (:func:`_nb_r_code`) instead of the cross-product and
    constant flag, ``seqsum`` may be empty, and the return value says whether every value is
    finite and ``|x| <= max_abs`` and, with such a bound, each column's largest ``|x|`` 0 or
    at least :data:`MIN_ABS_FOR_SUMS`. The two modes share this loop because the column's body
    as a function of its own ran 2-3 times slower, inlined or not."""
    with_cross = len(target) > 0
    with_amax = len(amax) > 0
    with_seqsum = len(seqsum) > 0
    tss, r_false, r_true, max_abs, code = verdict
    with_verdict = len(code) > 0
    low = MIN_ABS_FOR_SUMS if max_abs < DBL_MAX else 0.0  # as min_abs_for(max_abs)
    within = True
    for j in range(j0, j1):
        lo = indptr[j]
        hi = indptr[j + 1]
        s = _nb_seq_sum(data, lo, hi)
        m = s / n
        acc = 0.0
        a1 = 0.0
        a2 = 0.0
        nz = 0
        mn = np.inf
        mx = -np.inf
        for k in range(lo, hi):
            v = data[k]
            if v != 0.0:
                dv = v - m
                acc += dv * dv
                nz += 1
                mn = min(mn, v)
                mx = max(mx, v)
                if with_cross:
                    c = target[k - lo if dense else indices[k]]
                    a1 += dv * c
                    a2 += c
        if with_seqsum:
            seqsum[j] = s
        mean[j] = m
        ssj, cj = _nb_with_zeros(n, nz, m, acc, mn, mx)
        ss[j] = ssj
        if with_verdict:
            am = _nb_abs_max(nz, mn, mx)
            within &= math.isfinite(s) and am <= max_abs and (am == 0.0 or am >= low)
            cross[j], code[j] = _nb_r_code(a1 - m * (tsum - a2), ssj, cj, tss, r_false, r_true)
            continue
        const[j] = cj
        if with_cross:
            cross[j] = a1 - m * (tsum - a2)
        if with_amax:
            amax[j] = _nb_abs_max(nz, mn, mx)
    return within


#: the smallest positive normal float64
DBL_MIN = float(np.finfo(np.float64).tiny)


@njit(cache=True, nogil=True, inline="always")
def _nb_sqrt_product(a, b):
    """``sqrt(a * b)`` for sums of squares ``a, b >= 0``, without the product overflowing or
    underflowing: two columns within :func:`max_abs_for_sums` have finite sums of squares,
    but their product can leave the float64 range (two columns scaled by 2**490 or by
    2**-500), which made r 0 and the pair independent. Where ``a * b`` is a normal float
    this is ``math.sqrt(a * b)`` itself (the same bits as before); elsewhere the mantissas
    are multiplied and the exponents halved, the same bits as an unbounded exponent."""
    p = a * b
    if DBL_MIN <= p <= DBL_MAX or not (a > 0.0 and b > 0.0) or p != p:
        return math.sqrt(p)
    ma, ea = math.frexp(a)
    mb, eb = math.frexp(b)
    e = ea + eb
    if e % 2:
        ma *= 2.0
        e -= 1
    return math.ldexp(math.sqrt(ma * mb), e // 2)


def _sqrt_product(a: np.ndarray, b: Any) -> np.ndarray:
    """:func:`_nb_sqrt_product` elementwise."""
    a, b = np.broadcast_arrays(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))
    with np.errstate(over="ignore", under="ignore"):
        p = a * b
    out = np.sqrt(p)
    odd = ~((p >= DBL_MIN) & (p <= DBL_MAX)) & (a > 0.0) & (b > 0.0) & ~np.isnan(p)
    if odd.any():
        ma, ea = np.frexp(a[odd])
        mb, eb = np.frexp(b[odd])
        e = ea.astype(np.int64) + eb
        ma = np.where(e % 2 == 1, ma * 2.0, ma)
        e = e - (e % 2)
        out[odd] = np.ldexp(np.sqrt(ma * mb), e // 2)
    return out


@njit(cache=True, nogil=True, inline="always")
def _nb_r_code(cross, ss, const, tss, r_false, r_true):
    """One column's |r| with the class (as :func:`_r_from`, 0 for a constant column) and its
    verdict code: 0 independent (``r <= r_false``), 1 dependent (``r >= r_true``), 2
    undecided (between the two; the caller decides these with its own test, so the bracket
    only has to be safe, not tight)."""
    den = _nb_sqrt_product(ss, tss)
    r = min(abs(cross) / den, 1.0) if den > 0 and not const else 0.0
    if const or r <= r_false:
        return r, 0
    if r >= r_true:
        return r, 1
    return r, 2


#: refine a column's mean where its rounding error may move the centred sum of squares by
#: more than this fraction (see :func:`_nb_refine_offset_means`)
REFINE_SS = 2.0 ** -40
_EPS = float(np.finfo(np.float64).eps)


@njit(cache=True, nogil=True, inline="always")
def _nb_residual_sum(data, lo, hi, n, m):
    """``sum(x - m)`` over a column's ``n`` values stored in ``data[lo:hi]`` (zeros skipped,
    counted)."""
    e = 0.0
    nz = 0
    for k in range(lo, hi):
        v = data[k]
        if v != 0.0:
            e += v - m
            nz += 1
    return e + (n - nz) * (0.0 - m)


@njit(cache=True, nogil=True)
def _nb_refine_offset_means(indptr, indices, data, n, dense, target, tsum, mean, ss, cross,
                            const, dep, code, tss, r_false, r_true):
    """Refine the mean of every column far from zero for its spread, in place, with its
    centred sum of squares, its constant flag and its centred cross-product with ``target``
    (when ``cross`` is given) or its |r| and verdict code (when ``dep`` is given, as
    :func:`_nb_r_code`). Returns how many columns it refined.

    The mean of the first pass comes from a sequential sum (the order the exact modes rely
    on), whose rounding error is up to about ``(n - 1) eps |m|``; it adds ``n err**2`` to the
    centred sum of squares. Epoch seconds (1.7e9) varying by milliseconds, N = 100,000: |r|
    0.419 against 0.447. Where that bound reaches :data:`REFINE_SS` of the sum of squares,
    the mean becomes ``m + sum(x - m) / n``, and the sums are corrected for the residual
    ``sum(x - m)`` of that mean too (three passes over the column's values). Ordinary columns are never refined (at N = 100,000 it takes a mean over
    about 90,000 times the spread), so their bits are those of the first pass; dense and
    sparse columns are refined with the same arithmetic (zeros skipped, counted)."""
    with_cross = len(cross) > 0
    with_dep = len(dep) > 0
    with_target = len(target) > 0
    refined = 0
    for j in range(len(mean)):
        m = mean[j]
        bound = (n - 1) * _EPS * abs(m)
        if not n * bound * bound > REFINE_SS * ss[j]:
            continue
        lo = indptr[j]
        hi = indptr[j + 1]
        m = m + _nb_residual_sum(data, lo, hi, n, m) / n
        # the refined mean is still rounded to the values' grid: its residual corrects the
        # sums (the corrected two-pass formula), which matters where the spread is a few
        # units of the values' last place
        e = _nb_residual_sum(data, lo, hi, n, m)
        acc = a1 = a2 = 0.0
        nz = 0
        mn = np.inf
        mx = -np.inf
        for k in range(lo, hi):
            c = target[k - lo if dense else indices[k]] if with_target else 0.0
            acc, a1, a2, nz, mn, mx = _nb_centred_step(data[k], m, c, acc, a1, a2, nz, mn, mx)
        ssj, cj = _nb_with_zeros(n, nz, m, acc, mn, mx)
        ssj = max(ssj - e * (e / n), 0.0)
        mean[j] = m
        ss[j] = ssj
        cr = a1 - m * (tsum - a2) - (e / n) * tsum
        if with_cross:
            cross[j] = cr
            const[j] = cj
        if with_dep:
            dep[j], code[j] = _nb_r_code(cr, ssj, cj, tss, r_false, r_true)
        refined += 1
    return refined


@njit(cache=True, nogil=True)
def _nb_fisher_verdict(cross, ss, const, tss, r_false, r_true):
    """|r| and verdict codes (:func:`_nb_r_code`) from :func:`_nb_block_fisher`'s outputs."""
    b = len(cross)
    dep = np.empty(b)
    code = np.empty(b, dtype=np.int8)
    for j in range(b):
        dep[j], code[j] = _nb_r_code(cross[j], ss[j], const[j], tss, r_false, r_true)
    return dep, code


@njit(cache=True, nogil=True, inline="always")
def _nb_centred_step(v, m, c, acc, a1, a2, nz, mn, mx):
    """One value of :func:`_nb_fisher_dense4`'s second pass (zeros are skipped, as in
    :func:`_nb_column_stats`); the accumulators travel as scalars so that they stay in
    registers."""
    if v != 0.0:
        dv = v - m
        acc += dv * dv
        a1 += dv * c
        a2 += c
        nz += 1
        if v < mn:
            mn = v
        if v > mx:
            mx = v
    return acc, a1, a2, nz, mn, mx


@njit(cache=True, nogil=True, inline="always")
def _nb_with_zeros(n, nz, m, acc, mn, mx):
    """The centred sum of squares ``acc`` over a column's ``nz`` non-zeros completed with its
    ``n - nz`` zeros (which the passes skip), and whether the column is constant (``mn`` and
    ``mx``: the smallest and largest non-zero)."""
    nzero = n - nz
    if nzero > 0:
        acc += (nzero * m) * m
        return acc, nz == 0 or min(mn, 0.0) == max(mx, 0.0)
    return acc, mn == mx


@njit(cache=True, nogil=True, inline="always")
def _nb_abs_max(nz, mn, mx):
    """The largest ``|x|`` of a column from its smallest and largest non-zero (NaN compares
    false, so it is in neither: the column's sum shows it)."""
    return max(-mn, mx) if nz > 0 else 0.0


@njit(cache=True, nogil=True, inline="always")
def _nb_fisher_finish(n, s, m, acc, a1, a2, nz, mn, mx, tsum, k, seqsum, mean, ss, const,
                      cross, amax):
    """Write column ``k``'s statistics from :func:`_nb_fisher_dense4`'s accumulators."""
    seqsum[k] = s
    mean[k] = m
    ss[k], const[k] = _nb_with_zeros(n, nz, m, acc, mn, mx)
    cross[k] = a1 - m * (tsum - a2)
    amax[k] = _nb_abs_max(nz, mn, mx)


@njit(cache=True, nogil=True)
def _nb_fisher_dense4(data, n, j, target, tsum, seqsum, mean, ss, const, cross, amax):
    """Same arithmetic as :func:`_nb_column_stats` with a target, for the four dense
    columns ``j..j+3`` interleaved: each column keeps its own sequential order (so the
    results are bit-identical), but four independent add chains run at once. Scalar
    accumulators rather than small arrays: an array element is updated through memory, and
    the store-to-load round trip was most of the kernel's time."""
    o0 = j * n
    o1 = o0 + n
    o2 = o1 + n
    o3 = o2 + n
    s0 = s1 = s2 = s3 = 0.0
    for i in range(n):
        s0 += data[o0 + i]
        s1 += data[o1 + i]
        s2 += data[o2 + i]
        s3 += data[o3 + i]
    m0, m1, m2, m3 = s0 / n, s1 / n, s2 / n, s3 / n
    acc0 = acc1 = acc2 = acc3 = 0.0
    a10 = a11 = a12 = a13 = 0.0
    a20 = a21 = a22 = a23 = 0.0
    nz0 = nz1 = nz2 = nz3 = 0
    mn0 = mn1 = mn2 = mn3 = np.inf
    mx0 = mx1 = mx2 = mx3 = -np.inf
    for i in range(n):
        c = target[i]
        acc0, a10, a20, nz0, mn0, mx0 = _nb_centred_step(data[o0 + i], m0, c, acc0, a10, a20,
                                                         nz0, mn0, mx0)
        acc1, a11, a21, nz1, mn1, mx1 = _nb_centred_step(data[o1 + i], m1, c, acc1, a11, a21,
                                                         nz1, mn1, mx1)
        acc2, a12, a22, nz2, mn2, mx2 = _nb_centred_step(data[o2 + i], m2, c, acc2, a12, a22,
                                                         nz2, mn2, mx2)
        acc3, a13, a23, nz3, mn3, mx3 = _nb_centred_step(data[o3 + i], m3, c, acc3, a13, a23,
                                                         nz3, mn3, mx3)
    _nb_fisher_finish(n, s0, m0, acc0, a10, a20, nz0, mn0, mx0, tsum, j, seqsum, mean, ss,
                      const, cross, amax)
    _nb_fisher_finish(n, s1, m1, acc1, a11, a21, nz1, mn1, mx1, tsum, j + 1, seqsum, mean, ss,
                      const, cross, amax)
    _nb_fisher_finish(n, s2, m2, acc2, a12, a22, nz2, mn2, mx2, tsum, j + 2, seqsum, mean, ss,
                      const, cross, amax)
    _nb_fisher_finish(n, s3, m3, acc3, a13, a23, nz3, mn3, mx3, tsum, j + 3, seqsum, mean, ss,
                      const, cross, amax)


@njit(cache=True, nogil=True)
def _nb_centred_cross(data, indices, lo, hi, dense, m, target, tsum):
    """``sum_i (x_i - m) * target_i`` of the column stored in ``data[lo:hi]`` (sparse: rows in
    ``indices``), from its non-zeros only; ``tsum`` is ``sum_i target_i``."""
    a1 = 0.0
    a2 = 0.0
    for k in range(lo, hi):
        v = data[k]
        if v != 0.0:
            c = target[k - lo if dense else indices[k]]
            a1 += (v - m) * c
            a2 += c
    return a1 - m * (tsum - a2)


@njit(cache=True, nogil=True)
def _nb_cross(rows, vals, m, T, t_idx, t_sum):
    """Centred cross-products of one raw column against stored centred columns ``T[t]``."""
    out = np.empty(len(t_idx))
    for q in range(len(t_idx)):
        t = t_idx[q]
        out[q] = _nb_centred_cross(vals, rows, 0, len(rows), False, m, T[t], t_sum[t])
    return out


def centred(x: np.ndarray) -> tuple[np.ndarray, float, float]:
    """Centre a dense column the way the kernels do: ``(x - m, sum(x - m), ss)``.

    The mean and sum of squares come from the same kernel as block statistics, so they are
    bit-identical to what :func:`block_pearson_with_target` uses.
    """
    c, csum, ss, _ = centred_on_mean(x)
    return c, csum, ss


def centred_on_mean(x: np.ndarray, refine: bool = False
                    ) -> tuple[np.ndarray, float, float, float]:
    """:func:`centred`, and the mean it subtracted; with ``refine``, the mean refined where
    the column lies far from zero for its spread (:func:`_nb_refine_offset_means`), as
    SAOLA's relevance step refines it (not in the authors' arithmetic)."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    n = len(x)
    indptr = np.array([0, n], dtype=np.int64)
    _, mean, ss, _ = _nb_col_stats(indptr, _EMPTY_I, x, n, True)
    if refine:
        _nb_refine_offset_means(indptr, _EMPTY_I, x, n, True, _EMPTY_F, 0.0, mean, ss, _EMPTY_F,
                                _EMPTY_B, _EMPTY_F, _EMPTY_CODE, 0.0, 0.0, 0.0)
    c = x - mean[0]
    return c, float(_nb_seqsum(c)), float(ss[0]), float(mean[0])


@njit(cache=True, nogil=True)
def _nb_seqsum(x):
    s = 0.0
    for i in range(len(x)):
        s += x[i]
    return s



def _r_from(cross: np.ndarray, ss_x: np.ndarray, ss_y: Any) -> np.ndarray:
    """|r| (clipped to 1) from cross-products and sums of squares; 0 where undefined."""
    den = _sqrt_product(ss_x, ss_y)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(den > 0, np.abs(cross) / np.where(den > 0, den, 1.0), 0.0)
    return np.minimum(r, 1.0)


def block_pearson_with_target(block: ColumnBlock, target: np.ndarray) -> dict[str, np.ndarray]:
    """|r| between every column of ``block`` and a dense ``target``, plus column statistics.

    Returns a dict with ``abs_r``, ``mean``, ``ss``, ``seqsum`` (sequential left-to-right sum) and
    ``const``. Constant columns get ``abs_r = 0``.

    >>> from streamfs.algorithms.measures.columns import as_column_block
    >>> b = as_column_block(np.array([[1.0, 5.0], [2.0, 5.0], [3.0, 5.0], [4.0, 5.0]]))
    >>> out = block_pearson_with_target(b, np.array([1.0, 3.0, 2.0, 4.0]))
    >>> [round(float(v), 12) for v in out["abs_r"]]
    [0.8, 0.0]
    """
    tc, tsum, tss = centred(target)
    seqsum, mean, ss, const, cross, _ = _nb_block_fisher(
        block.indptr, block.indices, block.data, block.n_rows, block.dense, tc, tsum
    )
    r = _r_from(cross, ss, tss)
    r[const] = 0.0
    return {"abs_r": r, "mean": mean, "ss": ss, "seqsum": seqsum, "const": const}


def pearson_r(x: Any, y: Any) -> float:
    """Pearson correlation of two 1-D arrays (0 if either is constant).

    >>> pearson_r([1, 2, 3, 4], [1, 3, 2, 4])
    0.8
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError("x and y must be 1-D arrays of the same length")
    n = len(x)
    _, mx, ssx, cx = _nb_col_stats(np.array([0, n], dtype=np.int64), _EMPTY_I, x, n, True)
    _, _, _, cy = _nb_col_stats(np.array([0, n], dtype=np.int64), _EMPTY_I, y, n, True)
    if cx[0] or cy[0]:
        return 0.0
    yc, ysum, yss = centred(y)
    cross = _nb_cross(np.arange(n, dtype=np.int64), x, mx[0], yc[None, :],
                      np.zeros(1, dtype=np.int64), np.array([ysum]))[0]
    r = cross / float(_nb_sqrt_product(ssx[0], yss))
    return float(min(max(r, -1.0), 1.0))


def fisher_z(r: Any, n: int) -> Any:
    """Fisher's statistic ``W = sqrt(n - 3) * atanh(r)`` (``|r| = 1`` gives ``±inf``).

    >>> round(float(fisher_z(0.8, 4)), 6)  # 0.5 * ln(9)
    1.098612
    """
    if n <= 3:
        raise ValueError(f"Fisher's z needs more than 3 instances, got {n}")
    r = np.clip(np.asarray(r, dtype=np.float64), -1.0, 1.0)
    with np.errstate(divide="ignore"):
        w = math.sqrt(n - 3) * np.arctanh(r)
    return w if w.ndim else float(w)


def fisher_z_critical(alpha: float) -> float:
    """Two-sided critical value ``z_{1 - alpha/2}`` of the standard normal.

    >>> round(fisher_z_critical(0.05), 4)
    1.96
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    return float(ndtri(1.0 - alpha / 2.0))
