"""Information theory on discrete data (``test="mi"``).

Every value is binned with ``floor()`` (or, optionally, by equal-width bins per column) and
states are numbered by rank; probabilities are plug-in frequencies and entropies are in bits.
Symmetrical uncertainty is ``SU(X, Y) = 2 I(X; Y) / (H(X) + H(Y))``. Joint histograms are
integer count tables (exact); each mutual-information term is ``c log2(c N / (c_x c_y))``, so
an exactly independent pair gives exactly 0, and the terms (of an entropy too) are summed in
increasing order, not in the order of the states: a feature whose states are renumbered (a
relabelled copy) has the same SU to the last bit, and ``SU(X, Y)`` is ``SU(Y, X)``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import njit

from .columns import ColumnBlock

__all__ = [
    "discretize",
    "entropy",
    "entropy_from_counts",
    "joint_entropy",
    "mutual_information",
    "symmetrical_uncertainty",
    "block_su_with_target",
]


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

    >>> from streamfs.algorithms.measures.columns import as_column_block
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
