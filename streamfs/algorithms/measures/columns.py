"""Column blocks and the checks of their values, shared by every measure.

A block of columns goes to the kernels as ``(indptr, indices, data, dense)``: CSC arrays with
sorted row indices, or, when ``dense`` is true, a Fortran-ordered matrix flattened column by
column (``indices`` unused). :func:`as_column_block` builds one (a :class:`ColumnBlock`) and
checks its values: finite, and within what a measure over sums of squares can take
(:func:`max_abs_for_sums`, :data:`MIN_ABS_FOR_SUMS`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from numba import njit

__all__ = [
    "ColumnBlock",
    "as_column_block",
    "check_column_values",
    "values_within",
    "column_abs_max",
    "value_problem",
    "MIN_ABS_FOR_SUMS",
    "max_abs_for_sums",
]


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


_EMPTY_I = np.empty(0, dtype=np.int64)
_EMPTY_F = np.empty(0)
_EMPTY_B = np.empty(0, dtype=np.bool_)
_EMPTY_CODE = np.empty(0, dtype=np.int8)


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
