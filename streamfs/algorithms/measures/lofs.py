"""Fisher's z in the arithmetic of the authors' toolbox (SAOLA's ``compat="lofs"``).

The additions run in the order of the BLAS the toolbox calls, so that ties between strengths
fall the way they fall there (see below).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic
from scipy.special import erfinv  # scipy.stats costs seconds to import

from .columns import _EMPTY_I, _nb_seq_sum

__all__ = [
    "lofs_pearson_r",
    "lofs_fisher_critical",
]


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
