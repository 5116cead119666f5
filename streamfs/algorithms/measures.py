"""Dependence measures shared by the feature-stream selectors.

Two families:

* **Information theory on discrete data** (``test="mi"``): every value is binned with
  ``floor()`` (or, optionally, by equal-width bins per column) and states are numbered by rank;
  probabilities are plug-in frequencies and entropies are in bits. Symmetrical uncertainty is
  ``SU(X, Y) = 2 I(X; Y) / (H(X) + H(Y))``.
* **Fisher's z on continuous data** (``test="fisher_z"``): Pearson's ``r`` and
  ``W = sqrt(N - 3) * atanh(r)``, compared with the two-sided normal critical value.

Every quantity is computed so that it depends only on the *values* of a column, never on how it
is stored or batched: dense and sparse (CSC) columns and any split of a stream into blocks give
bit-identical numbers. That is what makes the sequential SAOLA decisions reproducible when they
are replayed block-wise. Concretely:

* sums run sequentially in row order over the non-zero entries (a dense column contributes its
  zeros as exact ``0.0`` terms, which change nothing);
* Pearson's cross-product is centred as ``sum_{x_i != 0} (x_i - m_x) c_i - m_x (sum_i c_i -
  sum_{x_i != 0} c_i)`` where ``c`` is the (stored, dense) centred partner column, so a dense
  column without zeros is an ordinary two-pass centred dot product and a sparse column costs
  O(nnz);
* joint histograms are integer count tables (exact); each mutual-information term is
  ``c log2(c N / (c_x c_y))``, so an exactly independent pair gives exactly 0, and the terms
  (of an entropy too) are summed in increasing order, not in the order of the states: a
  feature whose states are renumbered (a relabelled copy) has the same SU to the last bit, and
  ``SU(X, Y)`` is ``SU(Y, X)``.

Block kernels take a column block as ``(indptr, indices, data, dense)``: CSC arrays with sorted
row indices, or, when ``dense`` is true, a Fortran-ordered matrix flattened column by column
(``indices`` unused). Use :func:`as_column_block` to build one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic
from scipy.special import erfinv, ndtri  # scipy.stats costs seconds to import

__all__ = [
    "ColumnBlock",
    "as_column_block",
    "check_column_values",
    "values_within",
    "column_abs_max",
    "value_problem",
    "MIN_ABS_FOR_SUMS",
    "max_abs_for_sums",
    "discretize",
    "entropy",
    "entropy_from_counts",
    "joint_entropy",
    "mutual_information",
    "symmetrical_uncertainty",
    "pearson_r",
    "fisher_z",
    "fisher_z_critical",
    "block_pearson_with_target",
    "block_su_with_target",
    "centred",
    "lofs_pearson_r",
    "lofs_fisher_critical",
]


# --------------------------------------------------------------------------------------------
# column blocks
# --------------------------------------------------------------------------------------------


@dataclass
class ColumnBlock:
    """A block of columns of length ``n_rows`` in a kernel-friendly layout."""

    indptr: np.ndarray  # int64, length n_cols + 1
    indices: np.ndarray  # int64 row indices (sparse) or empty (dense)
    data: np.ndarray  # float64
    n_rows: int
    dense: bool

    @property
    def n_cols(self) -> int:
        return len(self.indptr) - 1

    def column(self, j: int) -> tuple[np.ndarray, np.ndarray]:
        """Row indices and values of the stored entries of column ``j``."""
        lo, hi = int(self.indptr[j]), int(self.indptr[j + 1])
        if self.dense:
            return np.arange(self.n_rows, dtype=np.int64), self.data[lo:hi]
        return self.indices[lo:hi], self.data[lo:hi]

    def columns(self, lo: int, hi: int) -> "ColumnBlock":
        """Columns ``lo .. hi - 1`` as a block of their own (views of this block's arrays).

        >>> b = as_column_block(np.array([[1.0, 0.0, 5.0], [2.0, 3.0, 6.0]]))
        >>> b.columns(1, 3).dense_column(1).tolist()
        [5.0, 6.0]
        """
        a, z = int(self.indptr[lo]), int(self.indptr[hi])
        return ColumnBlock(self.indptr[lo:hi + 1] - a, self.indices[a:z] if not self.dense
                           else self.indices, self.data[a:z], self.n_rows, self.dense)

    def dense_column(self, j: int) -> np.ndarray:
        """Column ``j`` as a dense float64 array (a copy)."""
        rows, vals = self.column(j)
        if self.dense:
            return vals.copy()
        out = np.zeros(self.n_rows, dtype=np.float64)
        out[rows] = vals
        return out


#: the largest finite float64
DBL_MAX = float(np.finfo(np.float64).max)


def max_abs_for_sums(n: int) -> float:
    """The largest ``|x|`` for which sums of squared deviations over ``n`` values stay finite
    (they reach ``4 n max|x|**2``). Beyond it a variance or a correlation overflows to
    ``inf`` or NaN and a test's verdict means nothing.

    >>> f"{max_abs_for_sums(180):.3g}"
    '5e+152'
    """
    return math.sqrt(DBL_MAX / (4.0 * max(n, 1)))


#: the smallest largest ``|x|`` a column may have where :func:`max_abs_for_sums` bounds it
#: (a measure over sums of squares): 2**-500, about 3.05e-151, whose square lies 10**6 times
#: above the smallest normal float64. A column whose every value is smaller has sums of
#: squares in the subnormal range or zero, and a test's verdict means nothing (breast
#: cancer scaled by 1e-200: SAOLA and K-OFSD selected nothing, without a word).
MIN_ABS_FOR_SUMS = math.ldexp(1.0, -500)


def min_abs_for(max_abs: float) -> float:
    """The smallest largest ``|x|`` a column may have beside the bound ``max_abs``: none
    (0.0) where only finiteness is asked (``DBL_MAX``), else :data:`MIN_ABS_FOR_SUMS`."""
    return 0.0 if max_abs >= DBL_MAX else MIN_ABS_FOR_SUMS


def check_column_values(indptr: np.ndarray, data: np.ndarray, n_rows: int,
                        max_abs: float = DBL_MAX, measure: str = "") -> None:
    """``ValueError`` naming the columns (``data[indptr[j]:indptr[j + 1]]``) that hold NaN or
    infinite values, or values beyond ``max_abs`` (given as :func:`max_abs_for_sums`: the
    ``measure`` needing it is named in the message), or, with such a bound, only values
    under :data:`MIN_ABS_FOR_SUMS`.

    >>> check_column_values(np.array([0, 2, 4]), np.array([1.0, 2.0, 3.0, np.nan]), 2)
    Traceback (most recent call last):
    ...
    ValueError: X contains NaN or infinite values in block columns [1]
    >>> check_column_values(np.array([0, 2, 4]), np.array([1.0, 2.0, 3e-200, 0.0]), 2, 1e100,
    ...                     "a test")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: X has values too small for a test in block columns [1] (|x| at most 3e-200; ...
    """
    if _nb_columns_within(indptr, data, max_abs, min_abs_for(max_abs)):
        return
    amax = _segment_abs_max(np.asarray(indptr), data)
    raise ValueError(value_problem(amax, n_rows, max_abs, measure, "block columns"))


def _segment_abs_max(indptr: np.ndarray, data: np.ndarray) -> np.ndarray:
    """The largest ``|x|`` of each ``data[indptr[j]:indptr[j + 1]]`` (0 when empty; NaN where
    one holds a NaN: ``maximum`` propagates it, ``fmax`` would skip it)."""
    out = np.zeros(len(indptr) - 1)
    nonempty = np.flatnonzero(np.diff(indptr))
    if nonempty.size:
        out[nonempty] = np.maximum.reduceat(np.abs(np.asarray(data, dtype=np.float64)),
                                            indptr[nonempty])
    return out


def value_problem(amax: np.ndarray, n_rows: int, max_abs: float = DBL_MAX, measure: str = "",
                  where: str = "columns", names: Any = None) -> str | None:
    """The one-line complaint about the largest ``|x|`` per column ``amax`` (NaN for a column
    holding a NaN), or None when every one is finite and at most ``max_abs`` and, with such
    a bound, each column of non-zeros reaches :data:`MIN_ABS_FOR_SUMS`; ``names`` (one per
    column) are shown beside the indices.

    >>> value_problem(np.array([1.0, np.inf]), 5, names=["a", "b"])
    "X contains NaN or infinite values in columns [1] ('b')"
    >>> print(value_problem(np.array([1e-160, 1.0, 0.0]), 5, 1e100, "a test"))
    ... # doctest: +NORMALIZE_WHITESPACE
    X has values too small for a test in columns [0] (|x| at most 1e-160; a column's largest
    |x| must reach 3.05e-151, or its sums of squares underflow): rescale these features
    """
    # float64: a float32 amax would cast DBL_MAX to inf (numpy's overflow warning) first
    amax = np.asarray(amax, dtype=np.float64)
    bad = np.flatnonzero(~(amax <= max_abs))  # NaN compares false
    tiny = bad.size == 0  # then only columns too small can be wrong
    if tiny:
        bad = np.flatnonzero((amax > 0.0) & (amax < min_abs_for(max_abs)))
        if bad.size == 0:
            return None
    cols = f"{bad[:10].tolist()}{' ...' if bad.size > 10 else ''}"
    if names is not None:
        cols += f" ({', '.join(repr(str(names[j])) for j in bad[:10])})"
    if tiny:
        return (f"X has values too small for {measure} in {where} {cols} (|x| at most "
                f"{float(amax[bad].max()):.3g}; a column's largest |x| must reach "
                f"{MIN_ABS_FOR_SUMS:.3g}, or its sums of squares underflow): rescale these "
                f"features")
    if not np.all(np.isfinite(amax[bad])):
        return f"X contains NaN or infinite values in {where} {cols}"
    return (f"X has values too large for {measure} in {where} {cols} (|x| up to "
            f"{float(amax[bad].max()):.3g}; with N = {n_rows} instances |x| must stay below "
            f"{max_abs:.3g}, or the sums of squares overflow): rescale these features")


def column_abs_max(X: Any) -> np.ndarray:
    """The largest ``|x|`` of each column of a dense or scipy.sparse ``X`` (NaN where a column
    holds a NaN), a few columns at a time: no copy of ``X`` as a whole.

    >>> column_abs_max(np.array([[1.0, -3.0], [-2.0, 0.5]])).tolist()
    [2.0, 3.0]
    """
    if sp.issparse(X):
        M = sp.csc_matrix(X)
        return _segment_abs_max(M.indptr, M.data)
    A = np.asarray(X)
    if A.ndim == 1:
        A = A[:, None]
    step = max(1, (1 << 20) // max(1, A.shape[0]))

    def chunk_max(B: np.ndarray) -> np.ndarray:
        # integers as floats, a chunk at a time: |int8 -128| does not fit int8, and a whole
        # float64 copy of a uint8 matrix is 8 times its size (dorothea: 1.3 GB more)
        return np.abs(B if B.dtype.kind == "f" else B.astype(np.float64)).max(axis=0,
                                                                              initial=0.0)

    return np.concatenate([chunk_max(A[:, j:j + step]) for j in range(0, A.shape[1], step)]
                          or [np.zeros(0)])


def is_float_matrix(X: Any, fmt: str) -> bool:
    """Whether ``X`` is a scipy.sparse matrix of format ``fmt`` holding float64."""
    return isinstance(X, sp.spmatrix) and X.format == fmt and X.dtype == np.float64


def as_column_block(X: Any, n_rows: int | None = None, max_abs: float = DBL_MAX,
                    measure: str = "", check_values: bool = True) -> ColumnBlock:
    """Validate ``X`` (2-D dense or scipy.sparse, finite; ``|x| <= max_abs`` for ``measure``,
    see :func:`check_column_values`) and convert it to a :class:`ColumnBlock`.
    ``check_values=False`` leaves the values to a caller that checks them in a pass over the
    block it makes anyway (:func:`values_within`).

    >>> b = as_column_block(np.array([[1.0, 0.0], [2.0, 3.0]]))
    >>> b.n_cols, b.n_rows, b.dense
    (2, 2, True)
    """
    if sp.issparse(X):
        # shares X's arrays where it can, as the dense path does (the kernels only read
        # them): a copy of the bench's 55 MB of news20-shaped blocks took 5 ms
        # X itself where it is one already: its canonical flag, where known (the decoder
        # sets it), stays known
        M = X if is_float_matrix(X, "csc") else sp.csc_matrix(X, dtype=np.float64)
        if M.ndim != 2:
            raise ValueError("X must be 2-D")
        if not M.has_canonical_format:
            M = M.copy()  # duplicates summed, rows sorted: on a copy, X stays as it was
            M.sum_duplicates()
        data = np.ascontiguousarray(M.data, dtype=np.float64)
        if check_values:
            check_column_values(M.indptr, data, M.shape[0], max_abs, measure)
        block = ColumnBlock(
            np.asarray(M.indptr, dtype=np.int64),
            np.asarray(M.indices, dtype=np.int64),
            data,
            M.shape[0],
            False,
        )
    else:
        A = np.asarray(X)
        if A.dtype.kind not in "biuf":
            raise ValueError(f"X must be numeric, got dtype {A.dtype}")
        if A.ndim == 1:
            A = A[:, None]
        if A.ndim != 2:
            raise ValueError(f"X must be 2-D, got {A.ndim} dimensions")
        A = np.asfortranarray(A, dtype=np.float64)
        n, b = A.shape
        if check_values:
            check_column_values(np.arange(b + 1) * n, A.ravel(order="F"), n, max_abs, measure)
        block = ColumnBlock(
            np.arange(b + 1, dtype=np.int64) * n,
            np.empty(0, dtype=np.int64),
            A.ravel(order="F"),
            n,
            True,
        )
    if n_rows is not None and block.n_rows != n_rows:
        raise ValueError(
            f"columns have length {block.n_rows} but the class vector has {n_rows} instances"
        )
    return block


# --------------------------------------------------------------------------------------------
# Fisher's z / Pearson
# --------------------------------------------------------------------------------------------

_EMPTY_I = np.empty(0, dtype=np.int64)
_EMPTY_F = np.empty(0)
_EMPTY_B = np.empty(0, dtype=np.bool_)
_EMPTY_CODE = np.empty(0, dtype=np.int8)


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


def values_within(seqsum: np.ndarray, amax: np.ndarray, max_abs: float) -> bool:
    """Whether every value of the columns :func:`_nb_block_fisher` summed is finite and
    ``|x| <= max_abs`` (``max_abs`` from :func:`max_abs_for_sums`) and each column's largest
    ``|x|`` is 0 or at least :func:`min_abs_for` it, from its outputs.

    A NaN or infinite value makes its column's sum non-finite, and finite values within
    ``max_abs`` cannot overflow a sum of ``n`` (``n * max_abs`` is far below ``DBL_MAX``),
    so this is exactly :func:`check_column_values`'s condition; where it fails, that
    function names the columns.

    >>> values_within(np.array([1.0, np.nan]), np.array([1.0, 0.0]), 1e10)
    False
    """
    return bool(np.isfinite(seqsum).all() and (amax <= max_abs).all()
                and ((amax == 0.0) | (amax >= min_abs_for(max_abs))).all())


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
def _nb_columns_within(indptr, data, bound, low):
    """Whether every ``|x| <= bound`` (NaN never is) and each column's largest ``|x|`` is 0
    or at least ``low``."""
    for j in range(len(indptr) - 1):
        top = 0.0
        for k in range(indptr[j], indptr[j + 1]):
            a = abs(data[k])
            if not a <= bound:
                return False
            top = max(top, a)
        if 0.0 < top < low:
            return False
    return True


@njit(cache=True, nogil=True, inline="always")
def _nb_seq_sum(data, lo, hi):
    """The sum of ``data[lo:hi]`` in storage order (the order the exact modes rely on).
    Inlined: as a call it cost more than the sum itself on columns of a few values."""
    s = 0.0
    for k in range(lo, hi):
        s += data[k]
    return s


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


# --------------------------------------------------------------------------------------------
# Fisher's z in the authors' arithmetic (compat="lofs")
# --------------------------------------------------------------------------------------------
#
# The authors' toolbox tests a pair (X, Y) with ``C = cov([X Y])`` and ``r = C12 / sqrt(C11 C22)``
# (the partial correlation with an empty conditioning set), ``W = sqrt(N - 3) * 0.5 *
# log((1 + r) / (1 - r))`` and "independent iff |W| < sqrt(2) erfinv(1 - alpha)"; the
# strength is |r|. ``cov`` centres each column by ``sum(x) / N`` and forms ``xc' * xc`` with
# the BLAS (dsyrk), then divides every entry by ``N - 1``. On binary data many strengths are
# mathematically equal (same number of ones, same overlap with the class) and only the last
# bit, i.e. the order of the BLAS's additions, decides SAOLA's tie rule ``dep(Y) >= dep(F)``.
# The kernels below reproduce that order: fused multiply-adds, sequential within K-blocks of
# 384 rows, blocks split like OpenBLAS's level-3 driver (a remainder between Q and 2Q is cut
# in two halves rounded up to a multiple of 4), block sums added in order. This matches the
# 2x2 ``xc' * xc`` of OpenBLAS's Haswell/Zen kernel bit for bit on the dorothea columns
# (N = 800), and with it SAOLA reproduces the authors' selection on dorothea exactly.

_LOFS_Q = 384
_LOFS_UNROLL = 4


@intrinsic
def _fma(typingctx, a, b, c):
    """Correctly rounded ``a * b + c`` (LLVM's fma intrinsic: hardware or libm)."""
    sig = types.float64(types.float64, types.float64, types.float64)

    def codegen(context, builder, signature, args):
        d = ir.DoubleType()
        fn = builder.module.declare_intrinsic("llvm.fma", [d], ir.FunctionType(d, [d, d, d]))
        return builder.call(fn, args)

    return sig, codegen


@njit(cache=True, nogil=True, error_model="numpy")
def _nb_lofs_dot(a, b):
    """``sum(a * b)`` in the BLAS's order (see above)."""
    n = len(a)
    total = 0.0
    done = 0
    while done < n:
        m = n - done
        if m >= 2 * _LOFS_Q:
            m = _LOFS_Q
        elif m > _LOFS_Q:
            m = ((m // 2 + _LOFS_UNROLL - 1) // _LOFS_UNROLL) * _LOFS_UNROLL
        s = 0.0
        for k in range(done, done + m):
            s = _fma(a[k], b[k], s)
        total += s
        done += m
    return total


@njit(cache=True, nogil=True, error_model="numpy")
def _nb_lofs_centre(indptr, indices, data, n, dense, j, out):
    """Write column ``j`` minus ``sum / N`` (sequential sum) into ``out``; return the sum."""
    lo = indptr[j]
    hi = indptr[j + 1]
    s = _nb_seq_sum(data, lo, hi)
    m = s / n
    if dense:
        for i in range(n):
            out[i] = data[lo + i] - m
    else:
        for i in range(n):
            out[i] = 0.0 - m
        for k in range(lo, hi):
            out[indices[k]] = data[k] - m
    return s


@njit(cache=True, nogil=True, error_model="numpy")
def _nb_lofs_r(cxy, cxx, cyy):
    """Signed r from covariance entries (NaN when undefined, as in the authors' code)."""
    return cxy / math.sqrt(cxx * cyy)


@njit(cache=True, nogil=True, error_model="numpy")
def _nb_lofs_dependent(r, sqrt_n3, cutoff):
    """Not "independent": ``|W| < cutoff`` fails (NaN r gives False: the caller skips it)."""
    if r != r:
        return False
    q = (1.0 + r) / (1.0 - r)
    if q > 0.0:
        w = abs(sqrt_n3 * (0.5 * math.log(q)))
    elif q == 0.0:
        return True
    else:  # |r| > 1 by rounding: the authors' log is complex; |W| is its modulus
        w = sqrt_n3 * 0.5 * math.hypot(math.log(-q), math.pi)
    return not (w < cutoff)


@njit(cache=True, nogil=True, error_model="numpy")
def _nb_block_fisher_lofs(indptr, indices, data, n, dense, yc, cyy):
    """Per column: sequential sum, ``C11 = xc'xc / (N-1)`` and signed r with the class."""
    b = len(indptr) - 1
    seqsum = np.empty(b)
    cxx = np.empty(b)
    r = np.empty(b)
    xc = np.empty(n)
    for j in range(b):
        seqsum[j] = _nb_lofs_centre(indptr, indices, data, n, dense, j, xc)
        cxx[j] = _nb_lofs_dot(xc, xc) / (n - 1)
        r[j] = _nb_lofs_r(_nb_lofs_dot(xc, yc) / (n - 1), cxx[j], cyy)
    return seqsum, cxx, r


def lofs_fisher_critical(alpha: float) -> float:
    """The authors' critical value ``sqrt(2) * erfinv(2 (1 - alpha/2) - 1)``.

    It can differ from :func:`fisher_z_critical` in the last bit.

    >>> round(lofs_fisher_critical(0.05), 4)
    1.96
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    return float(math.sqrt(2.0) * erfinv(2.0 * (1.0 - 0.5 * alpha) - 1.0))


def lofs_centred(x: np.ndarray) -> tuple[np.ndarray, float]:
    """``(x - sum(x)/N, xc'xc / (N-1))`` in the authors' arithmetic."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    n = len(x)
    xc = np.empty(n)
    _nb_lofs_centre(np.array([0, n], dtype=np.int64), _EMPTY_I, x, n, True, 0, xc)
    return xc, float(_nb_lofs_dot(xc, xc) / (n - 1))


def lofs_pearson_r(x: Any, y: Any) -> float:
    """Pearson's r of two columns as the authors' toolbox computes it (``cov``, then
    ``C12 / sqrt(C11 C22)``; NaN for a constant column).

    >>> round(lofs_pearson_r([1, 2, 3, 4], [1, 3, 2, 4]), 12)
    0.8
    """
    xc, cxx = lofs_centred(np.asarray(x, dtype=np.float64).ravel())
    yc, cyy = lofs_centred(np.asarray(y, dtype=np.float64).ravel())
    if len(xc) != len(yc):
        raise ValueError("x and y must have the same length")
    n = len(xc)
    with np.errstate(all="ignore"):
        return float(_nb_lofs_r(_nb_lofs_dot(xc, yc) / (n - 1), cxx, cyy))


# --------------------------------------------------------------------------------------------
# discrete measures
# --------------------------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def _nb_bin_value(v, n_bins, lo, width, scale):
    # np.floor keeps a float: numba's math.floor gives an int64, which wrapped every |v| >= 2^63
    # to one state. ``scale`` 0.5 (with ``lo`` and ``width`` halved) where hi - lo overflows
    if n_bins <= 0:
        return np.floor(v)
    if width <= 0.0:
        return 0.0
    b = np.floor((v * scale - lo) / width * n_bins)
    if b > n_bins - 1:
        b = n_bins - 1.0
    return b


@njit(cache=True, nogil=True)
def _nb_codes(vals, n, n_bins):
    """Discretise the listed values of one column (the ``n - len(vals)`` others are zeros).

    Returns (codes of the listed values, counts per state, code of the value 0 or -1 when every
    row is listed). States are ranks of the binned values, so numbering from the minimum.
    """
    nl = len(vals)
    nun = n - nl
    lo = 0.0
    hi = 0.0
    if n_bins > 0:
        first = True
        for k in range(nl):
            v = vals[k]
            if first:
                lo = v
                hi = v
                first = False
            else:
                if v < lo:
                    lo = v
                if v > hi:
                    hi = v
        if nun > 0:
            if first:
                lo = 0.0
                hi = 0.0
            else:
                if lo > 0.0:
                    lo = 0.0
                if hi < 0.0:
                    hi = 0.0
    width = hi - lo
    scale = 1.0
    if not math.isfinite(width):  # a range wider than the largest float: bin halved values
        scale = 0.5
        lo = lo * 0.5
        width = hi * 0.5 - lo
    fl = np.empty(nl + (1 if nun > 0 else 0))
    for k in range(nl):
        fl[k] = _nb_bin_value(vals[k], n_bins, lo, width, scale)
    z = 0.0
    if nun > 0:
        z = _nb_bin_value(0.0, n_bins, lo, width, scale)
        fl[nl] = z
    m = len(fl)
    fmin = np.inf
    fmax = -np.inf
    for k in range(m):
        if fl[k] < fmin:
            fmin = fl[k]
        if fl[k] > fmax:
            fmax = fl[k]
    codes = np.empty(nl, dtype=np.int64)
    zcode = -1
    if m > 0 and fmax - fmin <= 4.0 * m + 64.0:
        # binned values are integers in a narrow range: rank them by counting, no sort
        span = int(fmax - fmin) + 1
        rank = np.zeros(span, dtype=np.int64)
        for k in range(m):
            rank[int(fl[k] - fmin)] = 1
        k_states = 0
        for t in range(span):
            if rank[t]:
                rank[t] = k_states
                k_states += 1
        for k in range(nl):
            codes[k] = rank[int(fl[k] - fmin)]
        if nun > 0:
            zcode = rank[int(z - fmin)]
    else:
        uniq = np.unique(fl)
        k_states = len(uniq)
        codes[:] = np.searchsorted(uniq, fl[:nl])
        if nun > 0:
            zcode = np.searchsorted(uniq, np.array([z]))[0]
    counts = np.zeros(k_states, dtype=np.int64)
    for k in range(nl):
        counts[codes[k]] += 1
    if nun > 0:
        counts[zcode] += nun
    return codes, counts, zcode


@njit(cache=True, nogil=True)
def _nb_entropy_counts(counts, n):
    # the terms are added in the order of their counts, not of the states: a variable whose
    # states are renumbered has the same entropy to the last bit (SAOLA's ties need that)
    ordered = np.sort(counts)
    h = 0.0
    for a in range(len(ordered)):
        c = ordered[a]
        if c > 0:
            h += c * math.log2(n / c)
    return h / n


@njit(cache=True, nogil=True)
def _nb_sum_sorted(terms, m):
    """Sum of ``terms[:m]`` in increasing order (sorted in place): the same bits whatever
    order they came in."""
    if m > 24:
        terms[:m].sort()
    else:  # a joint table of a few cells: an insertion sort, no call
        for i in range(1, m):
            v = terms[i]
            k = i - 1
            while k >= 0 and terms[k] > v:
                terms[k + 1] = terms[k]
                k -= 1
            terms[k + 1] = v
    s = 0.0
    for i in range(m):
        s += terms[i]
    return s


@njit(cache=True, nogil=True)
def _nb_mi_pair(rows, fcodes, fcounts, zcode, n, ycodes, ycounts, work):
    """I(F; Y) in bits from F's listed rows/codes and Y's full code vector (exact counts).

    The terms of the non-empty cells are summed in increasing order, so that renumbering
    either variable's states, or swapping F and Y, gives the same bits: an exact tie in SU
    (a relabelled copy of a feature) stays a tie, as SAOLA's strict and non-strict rules
    need."""
    kf = len(fcounts)
    ky = len(ycounts)
    m = 0
    if 2 * kf * ky + ky <= len(work):
        # the terms go to the work array's tail, read as floats
        terms = work[kf * ky + ky : 2 * kf * ky + ky].view(np.float64)
        tab = work[: kf * ky]
        tab[:] = 0
        lc = work[kf * ky : kf * ky + ky]  # per-state counts of Y over the listed rows
        lc[:] = 0
        for k in range(len(rows)):
            bcode = ycodes[rows[k]]
            tab[fcodes[k] * ky + bcode] += 1
            lc[bcode] += 1
        if zcode >= 0:
            for bcode in range(ky):
                tab[zcode * ky + bcode] += ycounts[bcode] - lc[bcode]
        for a in range(kf):
            for bcode in range(ky):
                c = tab[a * ky + bcode]
                if c > 0:
                    terms[m] = c * math.log2(float(c * n) / float(fcounts[a] * ycounts[bcode]))
                    m += 1
    else:
        terms = np.empty(n)
        full = np.empty(n, dtype=np.int64)
        full[:] = zcode
        for k in range(len(rows)):
            full[rows[k]] = fcodes[k]
        keys = np.empty(n, dtype=np.int64)
        for i in range(n):
            keys[i] = full[i] * ky + ycodes[i]
        keys.sort()
        i = 0
        while i < n:
            j = i
            while j < n and keys[j] == keys[i]:
                j += 1
            c = j - i
            a = keys[i] // ky
            bcode = keys[i] % ky
            terms[m] = c * math.log2(float(c * n) / float(fcounts[a] * ycounts[bcode]))
            m += 1
            i = j
    return _nb_sum_sorted(terms, m) / n


@njit(cache=True, nogil=True)
def _nb_su(mi, hx, hy):
    s = hx + hy
    if s <= 0.0:
        return 0.0
    return 2.0 * mi / s


@njit(cache=True, nogil=True)
def _nb_block_su(indptr, indices, data, dense, n, n_bins, ycodes, ycounts, hy, work):
    """SU of every column of a block with one discrete target, and its number of states."""
    b = len(indptr) - 1
    su = np.empty(b)
    k = np.empty(b, dtype=np.int64)
    allrows = np.arange(n)
    for j in range(b):
        lo = indptr[j]
        hi = indptr[j + 1]
        vals = data[lo:hi]
        rows = allrows if dense else indices[lo:hi]
        codes, counts, zcode = _nb_codes(vals, n, n_bins)
        hx = _nb_entropy_counts(counts, n)
        mi = _nb_mi_pair(rows, codes, counts, zcode, n, ycodes, ycounts, work)
        su[j] = _nb_su(mi, hx, hy)
        k[j] = len(counts)
    return su, k


@njit(cache=True, nogil=True)
def _nb_su_many(rows, fcodes, fcounts, zcode, hf, n, Y, Yc, yk, yh, t_idx, work):
    """SU of one column against stored discrete columns ``Y[t]`` with state counts
    ``Yc[t, :yk[t]]`` and entropies ``yh[t]`` (t in ``t_idx``)."""
    out = np.empty(len(t_idx))
    for q in range(len(t_idx)):
        t = t_idx[q]
        yc = Yc[t, : yk[t]]
        mi = _nb_mi_pair(rows, fcodes, fcounts, zcode, n, Y[t], yc, work)
        out[q] = _nb_su(mi, hf, yh[t])
    return out


def _work(n: int) -> np.ndarray:
    # a joint table of up to about 4N cells and its terms, else a sort-based count (the terms
    # are summed in sorted order either way: the same bits)
    return np.empty(max(8 * n, 2048), dtype=np.int64)


def _codes1(x: Any, n_bins: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    x = np.ascontiguousarray(np.asarray(x, dtype=np.float64).ravel())
    if not np.all(np.isfinite(x)):
        raise ValueError("values must be finite")
    codes, counts, _ = _nb_codes(x, len(x), -1 if n_bins is None else int(n_bins))
    return codes, counts


def discretize(x: Any, n_bins: int | None = None) -> np.ndarray:
    """Integer states of ``x``: ranks of ``floor(x)`` (or of equal-width bins if ``n_bins``).

    >>> discretize([0.2, 3.7, -1.5, 3.1]).tolist()
    [1, 2, 0, 2]
    >>> discretize([0.0, 1.0, 9.0, 10.0], n_bins=2).tolist()
    [0, 0, 1, 1]
    """
    return _codes1(x, n_bins)[0]


def entropy_from_counts(counts: Any) -> float:
    """Entropy in bits of a histogram of counts.

    >>> entropy_from_counts([2, 2])
    1.0
    """
    c = np.asarray(counts, dtype=np.int64)
    n = int(c.sum())
    return float(_nb_entropy_counts(c, n)) if n > 0 else 0.0


def entropy(x: Any, n_bins: int | None = None) -> float:
    """Plug-in entropy H(X) in bits of the discretised values of ``x``.

    >>> round(entropy([0, 0, 0, 1]), 6)  # -(3/4 log2 3/4 + 1/4 log2 1/4)
    0.811278
    """
    codes, counts = _codes1(x, n_bins)
    return float(_nb_entropy_counts(counts, len(codes)))


def _pair_codes(x: Any, y: Any, n_bins: int | None):
    cx, nx = _codes1(x, n_bins)
    cy, ny = _codes1(y, n_bins)
    if len(cx) != len(cy):
        raise ValueError("x and y must have the same length")
    return cx, nx, cy, ny


def mutual_information(x: Any, y: Any, n_bins: int | None = None) -> float:
    """Plug-in mutual information I(X; Y) in bits of the discretised values.

    >>> round(mutual_information([0, 0, 1, 1], [0, 1, 1, 1]), 6)
    0.311278
    """
    cx, nx, cy, ny = _pair_codes(x, y, n_bins)
    n = len(cx)
    return float(_nb_mi_pair(np.arange(n), cx, nx, -1, n, cy, ny, _work(n)))


def joint_entropy(x: Any, y: Any, n_bins: int | None = None) -> float:
    """Joint entropy H(X, Y) in bits, as ``H(X) + H(Y) - I(X; Y)``.

    >>> joint_entropy([0, 0, 1, 1], [0, 1, 1, 1])
    1.5
    """
    cx, nx, cy, ny = _pair_codes(x, y, n_bins)
    n = len(cx)
    keys = cx * len(ny) + cy
    _, counts = np.unique(keys, return_counts=True)
    return float(_nb_entropy_counts(counts.astype(np.int64), n))


def symmetrical_uncertainty(x: Any, y: Any, n_bins: int | None = None) -> float:
    """``SU(X, Y) = 2 I(X; Y) / (H(X) + H(Y))`` in [0, 1] (0 when both are constant).

    >>> round(symmetrical_uncertainty([0, 0, 1, 1], [0, 1, 1, 1]), 6)
    0.343711
    """
    cx, nx, cy, ny = _pair_codes(x, y, n_bins)
    n = len(cx)
    mi = _nb_mi_pair(np.arange(n), cx, nx, -1, n, cy, ny, _work(n))
    return float(_nb_su(mi, _nb_entropy_counts(nx, n), _nb_entropy_counts(ny, n)))


def block_su_with_target(
    block: ColumnBlock, target_codes: np.ndarray, n_bins: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """SU of every column of ``block`` with discrete target codes ``0..k-1``; also each
    column's number of states.

    >>> b = as_column_block(np.array([[0, 5], [0, 5], [1, 5], [1, 5]]))
    >>> su, k = block_su_with_target(b, np.array([0, 1, 1, 1]))
    >>> [round(float(v), 6) for v in su], k.tolist()
    ([0.343711, 0.0], [2, 1])
    """
    t = np.ascontiguousarray(target_codes, dtype=np.int64)
    tc = np.bincount(t).astype(np.int64)
    n = block.n_rows
    return _nb_block_su(
        block.indptr, block.indices, block.data, block.dense, n,
        -1 if n_bins is None else int(n_bins), t, tc, _nb_entropy_counts(tc, n), _work(n),
    )
