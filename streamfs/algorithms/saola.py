"""SAOLA family: online feature selection with pairwise redundancy analysis.

Implements SAOLA (Yu, Wu, Ding, Pei: "Scalable and accurate online feature selection for big
data", Algorithm 1), its SAOLA-max and top-k variants (§3.4.3) and group-SAOLA (Algorithm 2).

For each arriving feature ``F`` (a column of length N, the class vector ``C`` being fixed):

1. discard ``F`` if it is not relevant to ``C``;
2. compare it, in selection order, with every feature ``Y`` of the current selection ``S``
   (skipping pairs that are not dependent; ``d`` is the pair strength, ``dep`` the strength
   with the class): if ``dep(Y) > dep(F)`` (``>=`` for Fisher's z) and ``d > dep(F)``, discard
   ``F``; else if ``dep(F) > dep(Y)`` and ``d > dep(Y)``, remove ``Y`` from ``S``;
3. if ``F`` survived, append it to ``S``.

Block processing. The relevance test of a whole block runs in one compiled pass (it does not
depend on the selection; with Fisher's z the block's columns are split over
``STREAMFS_KERNEL_THREADS`` threads, :mod:`streamfs.algorithms.parallel`). With Fisher's z the
redundancy step of the whole block (every survivor against the current selection, removals,
the top-k rule, storing kept columns) is one compiled call (``_nb_saola_fisher``, GIL
released) that writes removals and discards as events; the affiliation lists are rebuilt
from those events when they are read. With the MI test the step is replayed survivor by
survivor (one compiled call per survivor for its strengths). Each strength depends only on
the values of the two columns (see :mod:`streamfs.algorithms.measures`), so the result is
identical to one-feature-at-a-time processing, for any block split and for dense or sparse
input.

In the default mode with Fisher's z, a column's |r| with the class comes from exact sums where
its values allow (binary or count data,
:func:`streamfs.algorithms.measures.exact.exact_abs_r`), so columns whose |r| is
mathematically equal tie to the bit and the tie rule keeps the earlier. Between two such
columns, a pair strength within a relative 1e-8 of a strength it is compared with is compared
from the exact sums too (:func:`streamfs.algorithms.measures.exact._nb_pair_signs`): the rules'
``d > dep`` is strict, and a d equal to a dep (a copy of the class makes every later feature's
d with it equal its dep) must not go the way the last bit of d fell.

``compat="lofs"`` with Fisher's z computes every r in the authors' arithmetic (``cov`` of the
two columns, entries divided by N - 1, ``r = C12 / sqrt(C11 C22)``, ``W = sqrt(N - 3) * 0.5 *
log((1 + r) / (1 - r))``, independent iff ``|W| < sqrt(2) erfinv(1 - alpha)``, NaN r skipped):
on binary data many strengths are mathematically equal and the last bit of that arithmetic
decides SAOLA's tie rule, see :func:`streamfs.algorithms.measures.lofs.lofs_pearson_r`.
"""

from __future__ import annotations

import bisect
import functools
import math
import warnings
from typing import Any

import numpy as np
from numba import njit
from sklearn.exceptions import DataConversionWarning
from sklearn.utils.validation import check_is_fitted

from ._validation import (
    check_choice,
    check_finite_labels,
    check_int,
    check_label_types,
    check_no_missing_labels,
    check_number,
    check_state_algorithm,
    group_members,
    label_kinds,
    label_array,
    numbers_of_objects,
)
from .base import FeatureStreamSelector
from .measures.columns import (
    ColumnBlock,
    _EMPTY_B,
    _EMPTY_CODE,
    _EMPTY_F,
    as_column_block,
    check_column_values,
    max_abs_for_sums,
    values_within,
)
from .measures.pearson import (
    _nb_centred_cross,
    _nb_block_fisher,
    _nb_fisher_verdict,
    _nb_refine_offset_means,
    _nb_sparse_fisher_relevance,
    _nb_sqrt_product,
    _nb_col_stats,
    _nb_cross,
    _r_from,
    centred_on_mean,
    fisher_z_critical,
)
from .measures.exact import _nb_pair_signs, exact_sums, exact_target
from .measures.lofs import (
    _nb_block_fisher_lofs,
    _nb_lofs_dependent,
    _nb_lofs_dot,
    _nb_lofs_r,
    lofs_centred,
    lofs_fisher_critical,
)
from .measures.information import _nb_block_su, _nb_codes, _nb_entropy_counts, _nb_su_many, _work
from .parallel import map_column_ranges

__all__ = ["SAOLA", "GroupSAOLA"]

_TESTS = ("fisher_z", "mi")
_BOUNDS = ("min", "max")
_COMPATS = (None, "lofs")


# --------------------------------------------------------------------------------------------
# stored columns of kept features
# --------------------------------------------------------------------------------------------


class _Pool:
    """Slots holding the kept features in the form the strength kernels need.

    Fisher's z: the centred column ``T[slot]`` (``x - sum(x)/N``, the mean refined where it
    lies far from zero for the column's spread, except for ``compat="lofs"``:
    :func:`~streamfs.algorithms.measures.pearson._nb_refine_offset_means`), its sequential sum
    ``tsum``, its centred sum of squares ``ss`` and, for ``compat="lofs"``, the authors'
    variance ``lvar`` (``xc'xc / (N-1)`` in the BLAS order), and with an exact ``target``
    (:func:`~streamfs.algorithms.measures.exact.exact_target`) the exact sums of the columns
    that allow them (``xok``; ``xm`` the mean the column was centred on, ``xe``, ``xs``, ``xv``,
    ``xa``: :func:`~streamfs.algorithms.measures.exact.exact_sums`). MI: the state codes and
    counts. Free slots are a stack (``free[:nfree]``) that the compiled SAOLA step pops and
    pushes.
    """

    def __init__(self, n: int, test: str, n_bins: int | None, lofs: bool = False,
                 target: tuple | None = None) -> None:
        self.n = n
        self.test = test
        self.lofs = lofs
        self.target = target
        self.n_bins = -1 if n_bins is None else int(n_bins)
        self.cap = 0
        self.free = np.empty(0, dtype=np.int64)
        self.nfree = 0
        self.work = _work(n)
        self._grow(8)

    def _grow(self, cap: int) -> None:
        old = self.cap
        if self.test == "fisher_z":
            T = np.empty((cap, self.n))
            tsum = np.empty(cap)
            ss = np.empty(cap)
            lvar = np.empty(cap)
            xok = np.zeros(cap, dtype=np.bool_)
            xe = np.zeros(cap, dtype=np.int64)
            xm, xs, xv, xa = np.zeros(cap), np.zeros(cap), np.zeros(cap), np.zeros(cap)
            if old:
                T[:old], tsum[:old], ss[:old], lvar[:old] = self.T, self.tsum, self.ss, self.lvar
                xok[:old], xe[:old], xm[:old] = self.xok, self.xe, self.xm
                xs[:old], xv[:old], xa[:old] = self.xs, self.xv, self.xa
            self.T, self.tsum, self.ss, self.lvar = T, tsum, ss, lvar
            self.xok, self.xe, self.xm, self.xs, self.xv, self.xa = xok, xe, xm, xs, xv, xa
        else:
            kmax = self.Yc.shape[1] if old else 2
            Y = np.empty((cap, self.n), dtype=np.int32)
            Yc = np.zeros((cap, kmax), dtype=np.int64)
            yk = np.zeros(cap, dtype=np.int64)
            yh = np.zeros(cap)
            if old:
                Y[:old], Yc[:old], yk[:old], yh[:old] = self.Y, self.Yc, self.yk, self.yh
            self.Y, self.Yc, self.yk, self.yh = Y, Yc, yk, yh
        free = np.empty(cap, dtype=np.int64)
        free[: self.nfree] = self.free[: self.nfree]
        free[self.nfree : self.nfree + cap - old] = np.arange(cap - 1, old - 1, -1)
        self.free = free
        self.nfree += cap - old
        self.cap = cap

    def reserve(self, k: int) -> None:
        """Make sure at least ``k`` slots are free."""
        if self.nfree < k:
            self._grow(max(2 * self.cap, self.cap - self.nfree + k))

    def add(self, x: np.ndarray) -> int:
        """Store the dense raw column ``x``; return its slot."""
        if not self.nfree:
            self._grow(2 * self.cap)
        self.nfree -= 1
        slot = int(self.free[self.nfree])
        if self.test == "fisher_z":
            c, csum, ss, mean = centred_on_mean(x, refine=not self.lofs)  # as _fisher_stats
            self.T[slot], self.tsum[slot], self.ss[slot] = c, csum, ss
            self.lvar[slot] = float(_nb_lofs_dot(c, c) / (self.n - 1))
            self.xok[slot] = False
            if self.target is not None:  # the sums exact_sums gave the column in its block
                sums = exact_sums(as_column_block(x[:, None]), np.zeros(1, dtype=np.int64),
                                  self.target, np.zeros(1))
                if sums["xok"][0]:
                    self.xok[slot], self.xm[slot] = True, mean
                    self.xe[slot], self.xs[slot] = sums["xe"][0], sums["xs"][0]
                    self.xv[slot], self.xa[slot] = sums["xv"][0], sums["xa"][0]
        else:
            codes, counts, _ = _nb_codes(x, self.n, self.n_bins)
            k = len(counts)
            if k > self.Yc.shape[1]:
                Yc = np.zeros((self.cap, max(k, 2 * self.Yc.shape[1])), dtype=np.int64)
                Yc[:, : self.Yc.shape[1]] = self.Yc
                self.Yc = Yc
            self.Y[slot] = codes
            self.Yc[slot, :k] = counts
            self.yk[slot] = k
            self.yh[slot] = _nb_entropy_counts(counts, self.n)
        return slot

    def release(self, slot: int) -> None:
        self.free[self.nfree] = slot
        self.nfree += 1

    def prepare(self, rows: np.ndarray, vals: np.ndarray, mean: float, ss: float,
                dense_x: np.ndarray | None = None) -> tuple:
        """Per-feature data for :meth:`strengths` (the newer feature of every pair)."""
        if self.test == "fisher_z":
            if self.lofs:
                xc, cxx = lofs_centred(dense_x)
                return (xc, cxx)
            return (rows, vals, mean, ss)
        codes, counts, zcode = _nb_codes(vals, self.n, self.n_bins)
        return (rows, codes, counts, zcode, _nb_entropy_counts(counts, self.n))

    def strengths(self, prep: tuple, slots: np.ndarray) -> np.ndarray:
        """Strength between a prepared feature and the stored features in ``slots``
        (``compat="lofs"`` with Fisher's z: the signed r, NaN where undefined)."""
        if len(slots) == 0:
            return np.empty(0)
        if self.test == "fisher_z":
            if self.lofs:
                xc, cxx = prep
                return _nb_lofs_many(xc, cxx, self.T, self.lvar, slots)
            rows, vals, mean, ss = prep
            cross = _nb_cross(rows, vals, mean, self.T, slots, self.tsum)
            return _r_from(cross, ss, self.ss[slots])
        rows, codes, counts, zcode, hf = prep
        return _nb_su_many(
            rows, codes, counts, zcode, hf, self.n, self.Y, self.Yc, self.yk, self.yh,
            slots, self.work,
        )


@njit(cache=True, nogil=True, error_model="numpy")
def _nb_lofs_many(xc, cxx, T, lvar, slots):
    n = len(xc)
    out = np.empty(len(slots))
    for q in range(len(slots)):
        t = slots[q]
        out[q] = _nb_lofs_r(_nb_lofs_dot(xc, T[t]) / (n - 1), cxx, lvar[t])
    return out


@njit(cache=True, nogil=True, error_model="numpy")
def _nb_lofs_dependent_many(r, sqrt_n3, cutoff):
    out = np.empty(len(r), dtype=np.bool_)
    for q in range(len(r)):
        out[q] = _nb_lofs_dependent(r[q], sqrt_n3, cutoff)
    return out


@njit(cache=True, nogil=True)
def _nb_pair_signs_many(rows, vals, n, d, dep_f, deps, fok, fe, fs, fv, fa, T, slots,
                        pok, pe, pm, ps, pv, pa, vc):
    """:func:`_nb_pair_signs` of one newcomer (its non-zeros ``rows``, ``vals``) against the
    pool's ``slots``: three arrays of signs."""
    k = len(slots)
    syf = np.empty(k, dtype=np.int8)
    sdf = np.empty(k, dtype=np.int8)
    sdy = np.empty(k, dtype=np.int8)
    for q in range(k):
        t = slots[q]
        syf[q], sdf[q], sdy[q] = _nb_pair_signs(
            vals, rows, 0, len(vals), False, n, d[q], dep_f, deps[q], fok, fe, fs, fv, fa,
            T[t], pm[t], pok[t], pe[t], ps[t], pv[t], pa[t], vc)
    return syf, sdf, sdy


def _fisher_dependent(d: np.ndarray, n: int, zcrit: float) -> np.ndarray:
    """Fisher's z test of strengths ``d = |r|`` over ``n`` instances."""
    with np.errstate(divide="ignore"):
        return np.sqrt(n - 3.0) * np.arctanh(np.minimum(d, 1.0)) >= zcrit


@functools.lru_cache(maxsize=64)
def _fisher_bracket(n: int, zcrit: float) -> tuple[float, float]:
    """``(r_false, r_true)``: every ``|r| <= r_false`` fails :func:`_fisher_dependent` and
    every ``|r| >= r_true`` passes it, so a compiled kernel can give most verdicts and leave
    the few in between to the test itself (the same verdicts, bit for bit, whatever
    ``arctanh`` the compiled code would have used). The test is monotone in ``|r|``; the
    bracket is a relative 1e-9 around ``tanh(zcrit / sqrt(n - 3))``, far wider than any
    rounding, and checked against the test at both ends."""
    r = math.tanh(zcrit / math.sqrt(n - 3.0))
    lo, hi = r * (1.0 - 1e-9), r * (1.0 + 1e-9)
    if 0.0 < lo < hi < 1.0 and _fisher_dependent(np.array([lo, hi]), n, zcrit).tolist() == [
            False, True]:
        return lo, hi
    return -1.0, 2.0  # no safe bracket (e.g. a critical value of 0): the test decides all


# --------------------------------------------------------------------------------------------
# the compiled SAOLA step (Fisher's z)
# --------------------------------------------------------------------------------------------

# event kinds written by _nb_saola_fisher, replayed (lazily) into the affiliation lists
_EV_REMOVED = 0  # a = removed selected feature, b = the newcomer that removed it
_EV_DISCARDED = 1  # a = newcomer, b = the selected feature that made it redundant
_EV_DROPPED = 2  # a = feature dropped by the top-k rule (its affiliates are forgotten)


@njit(cache=True, nogil=True, error_model="numpy")
def _nb_saola_fisher(
    indptr, indices, data, n, dense, rel_cols, dep, mean, ss, cxx, pos, base,
    T, tsum, tss, tvar, free, nfree, S, Sslot, Sdep, ns,
    lofs, use_max, kmax, zcrit, sqrt_n3, ev_kind, ev_a, ev_b, ev_d, nev, xc, gone,
    xok, xe, xs, xv, xa, pok, pe, pm, ps, pv, pa, vc,
):
    """SAOLA's redundancy step for the relevant columns ``rel_cols[pos:]`` of one block.

    The selection is ``S[:ns]`` (features, pool slots ``Sslot``, strengths with the class
    ``Sdep``). Each newcomer is compared with the selection in order (iterating over the
    selection as it was before the newcomer's step), selected features it makes redundant
    are removed, and it is appended unless a selected feature makes it redundant; the top-k
    rule runs after each step. Every removal, discard and drop is written as an event. A
    newcomer that is kept is centred into a free pool slot; when no slot is free the kernel
    returns early and the caller grows the pool and calls again from the returned ``pos``.
    Near-ties between strengths of features with exact sums (``xok``, one per entry of
    ``rel_cols``; ``pok`` of the pool's slots) are decided by those sums (:func:`_nb_pair_signs`).
    Returns ``(pos, ns, nfree, nev)``.
    """
    nrel = len(rel_cols)
    while pos < nrel:
        if nfree == 0:
            break
        j = rel_cols[pos]
        at = pos  # this newcomer's entry of the per-relevant-column arrays
        f = base + j
        dep_f = dep[j]
        m = mean[j]
        lo = indptr[j]
        hi = indptr[j + 1]
        if lofs:
            for i in range(n):
                xc[i] = 0.0 - m
            for k in range(lo, hi):
                i = k - lo if dense else indices[k]
                xc[i] = data[k] - m
        owner = -1
        d_owner = 0.0
        nrem = 0
        for q in range(ns):
            t = Sslot[q]
            if lofs:
                r = _nb_lofs_r(_nb_lofs_dot(xc, T[t]) / (n - 1), cxx[j], tvar[t])
                if not _nb_lofs_dependent(r, sqrt_n3, zcrit):
                    continue
                d = abs(r)
            else:
                cross = _nb_centred_cross(data, indices, lo, hi, dense, m, T[t], tsum[t])
                den = _nb_sqrt_product(ss[j], tss[t])
                d = abs(cross) / den if den > 0 else 0.0
                if d > 1.0:
                    d = 1.0
                if d < 1.0 and sqrt_n3 * math.atanh(d) < zcrit:
                    continue
            syf, sdf, sdy = _nb_pair_signs(
                data, indices, lo, hi, dense, n, d, dep_f, Sdep[q], xok[at], xe[at], xs[at],
                xv[at], xa[at], T[t], pm[t], pok[t], pe[t], ps[t], pv[t], pa[t], vc)
            if use_max:  # d > max(dep_f, dep_y)
                b1 = b2 = sdf > 0 and sdy > 0
            else:
                b1 = sdf > 0
                b2 = sdy > 0
            if syf >= 0 and b1:
                owner = q
                d_owner = d
                break
            if syf < 0 and b2:
                gone[q] = True
                nrem += 1
                ev_kind[nev] = 0
                ev_a[nev] = S[q]
                ev_b[nev] = f
                ev_d[nev] = d
                nev += 1
        if owner >= 0:
            ev_kind[nev] = 1
            ev_a[nev] = f
            ev_b[nev] = S[owner]
            ev_d[nev] = d_owner
            nev += 1
        if nrem:
            w = 0
            for q in range(ns):
                if gone[q]:
                    gone[q] = False
                    free[nfree] = Sslot[q]
                    nfree += 1
                else:
                    S[w] = S[q]
                    Sslot[w] = Sslot[q]
                    Sdep[w] = Sdep[q]
                    w += 1
            ns = w
        pos += 1
        if owner >= 0:
            continue
        # keep the newcomer: centre it into a free slot
        nfree -= 1
        t = free[nfree]
        for i in range(n):
            T[t, i] = 0.0 - m
        for k in range(lo, hi):
            i = k - lo if dense else indices[k]
            T[t, i] = data[k] - m
        s = 0.0
        for i in range(n):
            s += T[t, i]
        tsum[t] = s
        tss[t] = ss[j]
        tvar[t] = _nb_lofs_dot(T[t], T[t]) / (n - 1)
        pok[t] = xok[at]
        pe[t], pm[t], ps[t], pv[t], pa[t] = xe[at], m, xs[at], xv[at], xa[at]
        S[ns] = f
        Sslot[ns] = t
        Sdep[ns] = dep_f
        ns += 1
        if kmax > 0 and ns > kmax:
            q = 0
            for u in range(1, ns):
                if Sdep[u] <= Sdep[q]:
                    q = u
            ev_kind[nev] = 2
            ev_a[nev] = S[q]
            ev_b[nev] = -1
            ev_d[nev] = 0.0
            nev += 1
            free[nfree] = Sslot[q]
            nfree += 1
            for u in range(q, ns - 1):
                S[u] = S[u + 1]
                Sslot[u] = Sslot[u + 1]
                Sdep[u] = Sdep[u + 1]
            ns -= 1
    return pos, ns, nfree, nev


# --------------------------------------------------------------------------------------------
# shared machinery
# --------------------------------------------------------------------------------------------


def _encode_y(y: Any) -> tuple[np.ndarray, list[str] | None]:
    """Numeric class vector: numbers as they are, strings as their index in sorted order.

    Numbers held as Python objects (a pandas ``object`` column of ints, say) are numbers, not
    text. Integers that float64 cannot hold exactly (beyond 2**53) are taken as their distance
    from the smallest label, which leaves Pearson's r and the MI states as they are: as
    floats, neighbouring ones would be one class."""
    arr = label_array(y)
    if arr.ndim == 2 and 1 in arr.shape:
        warnings.warn("A column-vector y was passed when a 1d array was expected. Please "
                      "change the shape of y to (n_samples, ), for example using ravel().",
                      DataConversionWarning, stacklevel=8)  # the caller of fit / partial_fit
        arr = arr.ravel()
    if arr.ndim != 1 or len(arr) == 0:
        raise ValueError(f"y must be a non-empty 1-D vector of class labels, got shape "
                         f"{arr.shape}")
    # as scikit-learn: as text, 1 and "1" would silently become one class
    check_label_types(arr)
    # objects hold numbers (a pandas column of ints) or text (pandas' str, string and
    # category columns): only numbers are numbers
    wide = False
    if arr.dtype.kind == "O" and label_kinds(arr) == {False}:
        arr = numbers_of_objects(arr)
        wide = arr.dtype.kind == "O"
        if wide:
            _check_wide_integers(arr)
    if arr.dtype.kind in "iu" or wide:
        num = _exact_integer_labels(arr)
        classes = None
    elif arr.dtype.kind in "bf":
        num = arr.astype(np.float64)
        check_finite_labels(num)
        classes = None
    else:
        cls, inv = np.unique(arr.astype(str), return_inverse=True)
        num = inv.astype(np.float64)
        classes = [str(c) for c in cls]
    if len(np.unique(num)) < 2:
        raise ValueError("y has a single class; feature relevance is undefined")
    return num, classes


def _non_integer(num: np.ndarray) -> float | None:
    """The first value of the numeric class vector ``num`` that is not an integer, or None:
    scikit-learn's "continuous" target."""
    frac = np.flatnonzero(num != np.floor(num))
    return float(num[frac[0]]) if frac.size else None


def _check_wide_integers(arr: np.ndarray) -> None:
    """``ValueError`` unless the labels ``arr``, objects that :func:`numbers_of_objects` left
    as they were, are integers (Python ints beyond 64 bits)."""
    bads = [v for v in arr if not isinstance(v, int) or isinstance(v, bool)]
    if not bads:
        return
    check_no_missing_labels(arr)
    bad = bads[0]
    if isinstance(bad, (float, np.number, bool, np.bool_)):
        raise ValueError("y mixes integers beyond 64 bits or booleans with other numbers: "
                         "use one type of number for every label")
    raise ValueError(f"y must hold numbers or strings, not {type(bad).__name__} ({bad!r})")


def _exact_integer_labels(arr: np.ndarray) -> np.ndarray:
    """Integer labels as float64: as they are when float64 holds them exactly (as the authors'
    implementation does), else as their distance from the smallest label; ``ValueError`` if
    two labels are one float even so."""
    if arr.dtype.kind != "O" and (arr.size == 0 or (int(arr.min()) >= -_EXACT_INT
                                                    and int(arr.max()) <= _EXACT_INT)):
        return arr.astype(np.float64)
    classes, inv = np.unique(arr, return_inverse=True)
    low = int(classes[0])
    offsets = np.array([float(int(c) - low) for c in classes])
    if len(np.unique(offsets)) < len(classes):
        raise ValueError(f"y has integer labels too far apart to tell apart as float64 "
                         f"(from {low} to {int(classes[-1])}): map them to classes first")
    return offsets[inv.ravel()]


#: the largest integer magnitude up to which float64 holds every integer exactly
_EXACT_INT = 2 ** 53


class _SAOLABase(FeatureStreamSelector):
    """Parameters, class vector, relevance pass, stored columns, affiliations and state."""

    _algorithm = ""

    def __init__(
        self,
        test: str = "fisher_z",
        alpha: float = 0.01,
        delta: float = 0.0,
        bound: str = "min",
        compat: str | None = None,
        n_bins: int | None = None,
    ) -> None:
        self.test = test
        self.alpha = alpha
        self.delta = delta
        self.bound = bound
        self.compat = compat
        self.n_bins = n_bins

    # -- parameters -----------------------------------------------------------------------

    def _state_params(self) -> dict:
        return {
            "test": self.test,
            "alpha": float(self.alpha),
            "delta": float(self.delta),
            "bound": self.bound,
            "compat": self.compat,
            "n_bins": None if self.n_bins is None else int(self.n_bins),
        }

    def _validate_params(self) -> None:
        """Types and ranges of the parameters; ``ValueError`` naming the first bad one."""
        check_choice("test", self.test, _TESTS)
        check_number("alpha", self.alpha, 0.0, 1.0, low_open=True, high_open=True)
        check_number("delta", self.delta, 0.0)
        check_choice("bound", self.bound, _BOUNDS)
        check_choice("compat", self.compat, _COMPATS)
        check_int("n_bins", self.n_bins, 2, allow_none=True)

    # -- learned state ----------------------------------------------------------------------

    def _reset(self) -> None:
        for name in list(vars(self)):
            if name.endswith("_") and not name.startswith("__") or name.startswith("_st_"):
                delattr(self, name)

    def _is_started(self) -> bool:
        return hasattr(self, "_st_n")

    def _check_n_instances(self, n: int) -> None:
        """``ValueError`` when the test cannot run on ``n`` instances: called at ``open``
        (and by the producers, before they publish), not only at the first block."""
        if self.test == "fisher_z" and n <= 3:
            raise ValueError(f"Fisher's z needs more than 3 instances, got {n}")

    def _check_target(self, y: Any) -> None:
        """``ValueError`` when the test cannot use the class vector ``y``: the MI test takes
        its values as classes, so a continuous target (non-integer numbers) would be as many
        classes as values and every feature would look relevant; Fisher's z correlates the
        features with ``y`` as numbers, and labels beyond :func:`max_abs_for_sums` overflow
        its sum of squares, so every feature would silently look independent. Asked before a
        stream is published too (:func:`streamfs.algorithms.opening.check_open_data`)."""
        num = _encode_y(y)[0]
        if self.test == "mi":
            # compat="lofs" floors the labels, as the authors' implementation does
            if self.compat is None and (frac := _non_integer(num)) is not None:
                raise ValueError(
                    f"{type(self).__name__}(test='mi') takes the values of y as classes, but y "
                    f"holds non-integer numbers (e.g. {frac!r}): a continuous target. Use "
                    "test='fisher_z', which correlates the features with y as a number, or "
                    "bin y into classes")
            return
        limit = max_abs_for_sums(len(num))
        top = float(np.abs(num).max())
        if top > limit:
            raise ValueError(
                f"y has class labels too large for the Fisher-z test's correlations (|y| up "
                f"to {top:.3g}; with N = {len(num)} instances |y| must stay below {limit:.3g}, "
                "or the sums of squares overflow): recode the classes, e.g. as 0, 1, ...")

    def _label_advice(self, y: Any) -> str | None:
        """What :meth:`_start` warns of for the class vector ``y``, or None; asked before a
        stream is published too (:func:`streamfs.algorithms.opening.open_advice`), where no
        block runs."""
        num = _encode_y(y)[0]
        k = np.unique(num).size
        # a continuous target is a number to correlate with, not coded classes
        if self.test != "fisher_z" or k <= 2 or _non_integer(num) is not None:
            return None
        return (f"{type(self).__name__}(test='fisher_z') correlates the features with the "
                f"class as a number (as the authors' implementation does): with {k} classes "
                "the selection depends on how they are coded; test='mi' treats them as "
                "categories")

    def _start(self, y: Any) -> None:
        num, classes = _encode_y(y)
        n = len(num)
        self._check_n_instances(n)
        self._check_target(num)
        if (advice := self._label_advice(num)) is not None:
            warnings.warn(advice, UserWarning, stacklevel=3)
        self._begin_stream_params()
        self._st_n = n
        self._st_y = num
        self._st_classes = classes
        self._st_lofs_z = self.test == "fisher_z" and self.compat == "lofs"
        if self._st_lofs_z:
            self._st_zcrit = lofs_fisher_critical(float(self.alpha))
        else:
            self._st_zcrit = fisher_z_critical(float(self.alpha))
        self._st_sqrt_n3 = math.sqrt(n - 3.0) if n > 3 else 0.0
        self._st_exact_target = (exact_target(num) if self.test == "fisher_z"
                                 and self.compat is None else None)
        self._st_pool = _Pool(n, self.test, self.n_bins, self._st_lofs_z,
                              self._st_exact_target)
        self._st_dep: dict[int, float] = {}
        self._st_slot: dict[int, int] = {}
        self._st_raw: dict[int, np.ndarray] = {}
        self._st_affd: dict[int, list] = {}
        self._st_affq: list[tuple] = []  # compiled steps' events, not yet replayed
        self._st_forward: dict[int, int] = {}
        self._prepare_target()
        self.n_features_seen_ = 0
        self.n_irrelevant_ = 0
        self.n_redundant_ = 0
        self._sync()

    def _prepare_target(self) -> None:
        num = self._st_y
        if self.test == "fisher_z":
            self._st_tc, self._st_tsum, self._st_tss, _ = centred_on_mean(num)
            self._st_tlc, self._st_tlvar = lofs_centred(num)
        else:
            lab = np.floor(num) if self.compat == "lofs" else num
            _, codes = np.unique(lab, return_inverse=True)
            self._st_tcodes = codes.astype(np.int64)
            self._st_tcounts = np.bincount(self._st_tcodes).astype(np.int64)
            self._st_th = _nb_entropy_counts(self._st_tcounts, len(num))

    def _accept_y(self, y: Any) -> None:
        if not self._is_started():
            if y is None:
                raise ValueError("the first partial_fit call must pass the class vector y")
            self._start(y)
            return
        if y is not None:
            num, classes = _encode_y(y)
            if classes != self._st_classes or not np.array_equal(num, self._st_y):
                raise ValueError("y differs from the class vector given in the first call")

    # -- per-block relevance ----------------------------------------------------------------

    def _fisher_stats(self, block: ColumnBlock, first: int = 0) -> dict[str, np.ndarray]:
        """The per-column statistics of the Fisher-z test (compiled kernels, GIL released):
        ``dep``, ``relevant``, and ``mean`` and ``ss`` for centring the relevant columns;
        with an exact class, the exact sums of the columns that may be relevant
        (:func:`exact_sums`, ``xcols`` counted from ``first``: ``block`` is the part of a
        larger block from there)."""
        n = self._st_n
        bracket = _fisher_bracket(n, self._st_zcrit)
        if not block.dense and self._checks_values_in_relevance():  # the fused kernel checks
            dep, code, mean, ss, within = _nb_sparse_fisher_relevance(
                block.indptr, block.indices, block.data, n, self._st_tc, self._st_tsum,
                self._st_tss, *bracket, self._value_limit(n)[0],
            )
            if not within:
                return {"bad_values": np.ones(1, dtype=np.bool_)}  # _relevance names them
            _nb_refine_offset_means(block.indptr, block.indices, block.data, n, False,
                                    self._st_tc, self._st_tsum, mean, ss, _EMPTY_F, _EMPTY_B,
                                    dep, code, self._st_tss, *bracket)
            return self._verdicts(block, first, dep, code, mean=mean, ss=ss)
        seqsum, mean, ss, const, cross, amax = _nb_block_fisher(
            block.indptr, block.indices, block.data, n, block.dense, self._st_tc, self._st_tsum,
        )
        if self._checks_values_in_relevance() and not values_within(
                seqsum, amax, self._value_limit(n)[0]):
            return {"bad_values": np.ones(1, dtype=np.bool_)}  # _relevance names the columns
        if self._st_lofs_z:
            # the authors' arithmetic: cov, r = C12 / sqrt(C11 C22), NaN r is skipped
            _, cxx, r = _nb_block_fisher_lofs(
                block.indptr, block.indices, block.data, n, block.dense,
                self._st_tlc, self._st_tlvar,
            )
            return dict(dep=np.abs(r), relevant=_nb_lofs_dependent_many(
                r, self._st_sqrt_n3, self._st_zcrit), mean=mean, ss=ss, cxx=cxx, seqsum=seqsum)
        # means far from zero for their spread refined (not in the authors' arithmetic, above)
        _nb_refine_offset_means(block.indptr, block.indices, block.data, n, block.dense,
                                self._st_tc, self._st_tsum, mean, ss, cross, const, _EMPTY_F,
                                _EMPTY_CODE, 0.0, 0.0, 0.0)
        # the verdict on the same thread (numpy's ufuncs release the GIL too)
        return self._verdicts(block, first, *_nb_fisher_verdict(
            cross, ss, const, self._st_tss, *bracket), mean=mean, ss=ss)

    def _verdicts(self, block: ColumnBlock, first: int, dep: np.ndarray, code: np.ndarray,
                  **stats: np.ndarray) -> dict:
        if self._st_exact_target is not None:
            # the columns that may be relevant get their |r| from exact sums where their
            # values allow (exact ties stay ties for the tie rule, exact_abs_r), and keep
            # those sums for the pair strengths' ties (_nb_pair_signs)
            sums = exact_sums(block, np.flatnonzero(code), self._st_exact_target, dep)
            sums["xcols"] = sums["xcols"] + first
            stats.update(sums)
        relevant = code == 1
        near = np.flatnonzero(code == 2)  # near the critical |r|: the exact test decides
        relevant[near] = self._dependent(dep[near])
        return dict(dep=dep, relevant=relevant, **stats)

    def _relevance(self, block: ColumnBlock) -> dict[str, np.ndarray]:
        """dep (strength with the class), relevant mask and per-column statistics."""
        n = self._st_n
        out: dict[str, np.ndarray] = {}
        if self.test == "fisher_z":
            # independent columns: split over the kernel threads (the same bits any split)
            parts = map_column_ranges(
                lambda lo, hi: self._fisher_stats(block.columns(lo, hi), lo),
                block.n_cols) or [self._fisher_stats(block)]
            if any("bad_values" in part for part in parts):
                # the first pass over the values found NaN, infinite or too large ones: the
                # check _check_block left to it names them, before any state changes
                check_column_values(block.indptr, block.data, n, *self._value_limit(n))
            out = parts[0] if len(parts) == 1 else {
                key: np.concatenate([part[key] for part in parts]) for key in parts[0]}
            dep, rel = out["dep"], out["relevant"]
        else:
            if self.compat == "lofs":
                seqsum, mean, ss, const = _nb_col_stats(
                    block.indptr, block.indices, block.data, n, block.dense
                )
                out.update(seqsum=seqsum, mean=mean, ss=ss, const=const)
            dep, k = _nb_block_su(
                block.indptr, block.indices, block.data, block.dense, n,
                -1 if self.n_bins is None else int(self.n_bins),
                self._st_tcodes, self._st_tcounts, self._st_th, self._st_pool.work,
            )
            rel = dep > self.delta
            if self.compat is None and self.n_bins is None:
                many = int(np.count_nonzero(k > n / 2))
                if many:
                    warnings.warn(
                        f"{many} of {len(k)} columns have more than N/2 = {n / 2:g} distinct "
                        "states after floor(); the MI test then treats almost every value as "
                        "its own state. Pass n_bins=<int> to discretise first, or use "
                        "test='fisher_z' for continuous data.",
                        UserWarning,
                        stacklevel=3,
                    )
            out.setdefault("mean", np.zeros(len(dep)))
            out.setdefault("ss", np.zeros(len(dep)))
        if self.compat == "lofs":
            rel &= out["seqsum"] != 0.0
        out["dep"] = dep
        out["relevant"] = rel
        return out

    def _exact_columns(self, rel: dict, cols: np.ndarray) -> tuple[np.ndarray, ...]:
        """The exact sums (:func:`exact_sums`) of the block's columns ``cols``, one entry
        each (``ok`` False for all without an exact class)."""
        if "xok" not in rel:
            k = len(cols)
            z = np.zeros(k)
            return np.zeros(k, dtype=np.bool_), np.zeros(k, dtype=np.int64), z, z, z
        at = np.searchsorted(rel["xcols"], cols)  # cols are among xcols: they may be relevant
        return tuple(rel[key][at] for key in ("xok", "xe", "xs", "xv", "xa"))

    def _exact_class_var(self) -> float:
        target = self._st_exact_target
        return 0.0 if target is None else float(target[3])

    def _dependent(self, d: np.ndarray) -> np.ndarray:
        """Pair (or class) dependence verdict for strengths ``d``."""
        if self._st_lofs_z:
            return _nb_lofs_dependent_many(d, self._st_sqrt_n3, self._st_zcrit)
        if self.test == "fisher_z":
            return _fisher_dependent(d, self._st_n, self._st_zcrit)
        return d > self.delta

    def _pair(self, prep: tuple, slots: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Strengths ``d`` between a prepared feature and stored ones, and which pairs are
        dependent (``compat="lofs"``: tested on the signed r, NaN pairs are skipped)."""
        d = self._st_pool.strengths(prep, slots)
        dependent = self._dependent(d)
        if self._st_lofs_z:
            d = np.abs(d)
        return d, dependent

    def _signs(self, prep: tuple, fstats: tuple, dep_f: float, slots: np.ndarray,
               deps: np.ndarray, d: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``sign(deps - dep_f)``, ``sign(d - dep_f)`` and ``sign(d - deps)`` for a prepared
        newcomer (``fstats``: its exact sums, :meth:`_exact_of`) against the kept features
        in ``slots``, exact near ties where both have exact sums (:func:`_nb_pair_signs`)."""
        if self._st_exact_target is None or not fstats[0]:
            return np.sign(deps - dep_f), np.sign(d - dep_f), np.sign(d - deps)
        pool = self._st_pool
        rows, vals = prep[0], prep[1]
        return _nb_pair_signs_many(rows, vals, self._st_n, d, dep_f, deps, *fstats, pool.T,
                                   slots, pool.xok, pool.xe, pool.xm, pool.xs, pool.xv,
                                   pool.xa, self._exact_class_var())

    def _exact_of(self, rel: dict, j: int) -> tuple:
        """Column ``j``'s exact sums ``(ok, e, s, v, a)`` (``ok`` False without them)."""
        ok, e, s, v, a = (values[0] for values in self._exact_columns(rel, np.array([j])))
        return bool(ok), int(e), float(s), float(v), float(a)

    def _prep(self, block: ColumnBlock, j: int, rel: dict) -> tuple:
        if self._st_lofs_z:
            return self._st_pool.prepare(None, None, 0.0, 0.0, block.dense_column(j))
        rows, vals = block.column(j)
        # zeros contribute nothing the kernels cannot infer (they skip them / count them by
        # subtraction), so dropping them changes no bit of the result and makes dense
        # mostly-zero columns as cheap as sparse ones
        nz = vals != 0.0
        if not nz.all():
            rows, vals = rows[nz], vals[nz]
        return self._st_pool.prepare(rows, vals, float(rel["mean"][j]), float(rel["ss"][j]))

    def _store(self, feature: int, block: ColumnBlock, j: int, dep: float) -> None:
        x = block.dense_column(j)
        self._st_raw[feature] = x
        self._st_slot[feature] = self._st_pool.add(x)
        self._st_dep[feature] = dep
        self._st_aff.setdefault(feature, [])

    def _drop(self, feature: int) -> None:
        self._st_pool.release(self._st_slot.pop(feature))
        del self._st_raw[feature]
        del self._st_dep[feature]

    @property
    def _st_aff(self) -> dict[int, list]:
        """``{feature: [[affiliated feature, strength], ...]}`` after replaying the events
        of the compiled steps (replayed on access: lists move on every removal)."""
        if self._st_affq:
            self._replay_events()
        return self._st_affd

    def _replay_events(self) -> None:
        aff = self._st_affd
        for kind, a, b, d in self._st_affq:
            a_l, b_l, d_l = a.tolist(), b.tolist(), d.tolist()
            for q, k in enumerate(kind.tolist()):
                if k == _EV_DROPPED:
                    aff.pop(a_l[q], None)
                    continue
                # a removed by b (_EV_REMOVED) or a discarded because of b (_EV_DISCARDED)
                lst = aff.get(b_l[q])
                if lst is None:
                    lst = aff[b_l[q]] = []
                lst.append([a_l[q], d_l[q]])
                moved = aff.pop(a_l[q], None)
                if moved:
                    lst.extend(moved)
        self._st_affq.clear()

    def _affiliate(self, feature: int, owner: int, d: float) -> None:
        """``feature`` was discarded/removed because of ``owner``: it and its affiliates move."""
        # owner itself already removed (possible only in compat="lofs" group steps): follow
        # the chain of removers; a chain leading back to `feature` keeps the direct owner
        seen = {owner}
        target = owner
        while target in self._st_forward:
            target = self._st_forward[target]
            if target == feature or target in seen:
                target = owner
                break
            seen.add(target)
        owner = target
        lst = self._st_aff.setdefault(owner, [])
        lst.append([int(feature), float(d)])
        lst.extend(self._st_aff.pop(feature, []))

    def _value_limit(self, n_rows: int) -> tuple[float, str]:
        if self.test != "fisher_z":  # MI counts states: any finite value will do
            return super()._value_limit(n_rows)
        return max_abs_for_sums(n_rows), "the Fisher-z test's correlations"

    def _checks_values_in_relevance(self) -> bool:
        # Fisher's z (not the authors' LOFS arithmetic): the relevance kernel's pass over the
        # values also checks them, which saves a pass of its own (20 of 165 ms on the dense
        # bench stream's 320 MB)
        return self.test == "fisher_z" and not self._st_lofs_z

    def _check_block(self, X: Any) -> ColumnBlock:
        return as_column_block(X, self._st_n, *self._value_limit(self._st_n),
                               check_values=not self._checks_values_in_relevance())

    # -- results -----------------------------------------------------------------------------

    def _order(self) -> list[int]:
        raise NotImplementedError

    def _sync(self) -> None:
        order = self._order()
        self.selected_ = np.asarray(order, dtype=np.int64)
        self.scores_ = np.asarray([self._st_dep[f] for f in order], dtype=np.float64)

    @property
    def affiliated_(self) -> dict[int, list[list]]:
        """``{selected feature: [[feature, strength], ...]}`` (built on access: the lists can
        be long, and copying them after every block would cost more than the block)."""
        if not self._is_started():
            raise AttributeError("affiliated_ is available after the first partial_fit")
        return {
            int(f): [list(p) for p in self._st_aff.get(int(f), [])] for f in self.selected_
        }

    def selection(self) -> list[dict]:
        check_is_fitted(self, "selected_")
        aff = self.affiliated_
        return [
            {"feature": int(f), "score": float(s), "affiliated": aff[int(f)]}
            for f, s in zip(self.selected_, self.scores_)
        ]

    # -- state -------------------------------------------------------------------------------

    def _base_state(self) -> dict:
        if not self._is_started():
            return {"algorithm": self._algorithm, "version": 1, "params": self._state_params(),
                    "started": False}
        aff = {}
        for f in self.selected_:
            lst = self._st_aff.get(int(f), [])
            aff[int(f)] = {
                "features": np.asarray([p[0] for p in lst], dtype=np.int64),
                "strengths": np.asarray([p[1] for p in lst], dtype=np.float64),
            }
        return self._put_stream_params(self._names_state({
            "algorithm": self._algorithm,
            "version": 1,
            "params": self._state_params(),
            "started": True,
            "y": self._st_y.copy(),
            "classes": None if self._st_classes is None else list(self._st_classes),
            "n_features_seen": int(self.n_features_seen_),
            "n_irrelevant": int(self.n_irrelevant_),
            "n_redundant": int(self.n_redundant_),
            "selected": self.selected_.copy(),
            "scores": self.scores_.copy(),
            "affiliated": aff,
            "columns": {int(f): self._st_raw[int(f)].copy() for f in self.selected_},
        }))

    @classmethod
    def _from_base_state(cls, state: dict, **extra: Any) -> "_SAOLABase":
        check_state_algorithm(state, cls.__name__, [cls._algorithm])
        params, later = cls._stream_params_of(state)
        obj = cls(**params, **extra)
        if not state["started"]:
            return obj
        obj._validate_params()
        classes = state["classes"]
        y = np.asarray(state["y"], dtype=np.float64)
        obj._start(np.asarray(classes)[y.astype(np.int64)] if classes is not None else y)
        obj.n_features_seen_ = int(state["n_features_seen"])
        obj.n_irrelevant_ = int(state["n_irrelevant"])
        obj.n_redundant_ = int(state["n_redundant"])
        obj._restore_names(state)
        cols = {int(k): v for k, v in state["columns"].items()}
        aff = {int(k): v for k, v in state["affiliated"].items()}
        for f, s in zip(np.asarray(state["selected"]), np.asarray(state["scores"])):
            f = int(f)
            x = np.ascontiguousarray(cols[f], dtype=np.float64)
            obj._st_raw[f] = x
            obj._st_slot[f] = obj._st_pool.add(x)
            obj._st_dep[f] = float(s)
            a = aff[f]
            obj._st_aff[f] = [
                [int(g), float(d)] for g, d in zip(np.asarray(a["features"]),
                                                   np.asarray(a["strengths"]))
            ]
        # the rest of the state does not depend on the parameters
        obj._set_later_params(later)
        return obj


# --------------------------------------------------------------------------------------------
# SAOLA
# --------------------------------------------------------------------------------------------


class SAOLA(_SAOLABase):
    """SAOLA online feature selection (with the SAOLA-max and top-k variants).

    Parameters
    ----------
    test : {"fisher_z", "mi"}
        ``"fisher_z"`` for continuous data: strength ``|r|`` (Pearson), a pair or a feature and
        the class are dependent iff ``sqrt(N-3) |atanh r| >= z_{1-alpha/2}``. The class is
        correlated as a number, as in the authors' implementation (string labels as their
        index in sorted order): with more than two classes the relevance depends on how the
        classes are coded, which a ``UserWarning`` says; ``"mi"`` does not. ``"mi"`` for
        discrete data: values are binned with ``floor()`` (states numbered from the minimum),
        strength is the symmetrical uncertainty ``SU``, dependent iff ``SU > delta``.
    alpha : float
        Significance level of Fisher's z test.
    delta : float
        Relevance / dependence threshold on SU for ``test="mi"``.
    bound : {"min", "max"}
        ``"min"``: SAOLA's bounds (``d > dep(F)`` to discard ``F``, ``d > dep(Y)`` to remove
        ``Y``); ``"max"``: SAOLA-max, both bounds become ``max(dep(F), dep(Y))``.
    max_features : int or None
        Top-k variant: after each step keep only the ``k`` features with the highest ``dep``
        (ties keep the earlier feature).
    compat : {None, "lofs"}
        ``"lofs"`` reproduces the authors' MATLAB toolbox: a column whose values sum to exactly
        0 (float64, left to right) is skipped as irrelevant, the class is binned with
        ``floor()`` like the features for ``test="mi"``, and Fisher's z computes r, W and the
        critical value in the authors' arithmetic (see the module docstring; a constant
        column has r = NaN and is skipped).
    n_bins : int or None
        ``test="mi"`` only: if an int, discretise every column into ``n_bins`` equal-width bins
        over its own range before the test, instead of ``floor()``. Without it, columns with
        more than N/2 distinct states trigger a warning (the default mode only).

    Attributes
    ----------
    selected_ : ndarray of int64
        Global 0-based indices of the selected features, in stream order.
    scores_ : ndarray of float64
        ``dep`` (strength with the class) of each selected feature.
    affiliated_ : dict
        ``{selected feature: [[feature, strength], ...]}``: the features it made redundant
        (directly or by inheriting them from a feature it removed).
    n_features_seen_, n_irrelevant_, n_redundant_, n_dropped_ : int
        Counters (``n_dropped_``: removed by the top-k rule).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 300)
    >>> s = y + 0.5 * rng.standard_normal(300)
    >>> X = np.column_stack([rng.standard_normal(300),          # noise: irrelevant
    ...                      s,                                 # |r| with y: 0.74
    ...                      s + 0.3 * rng.standard_normal(300),  # 0.67, |r| with s: 0.94
    ...                      y + 0.5 * rng.standard_normal(300)])  # 0.70, |r| with s: 0.52
    >>> sel = SAOLA().fit(X, y)
    >>> sel.selected_.tolist()
    [1, 3]
    >>> [round(v, 2) for v in sel.scores_.tolist()], sel.affiliated_[1][0][0]
    ([0.74, 0.7], 2)
    """

    _algorithm = "SAOLA"

    def __init__(
        self,
        test: str = "fisher_z",
        alpha: float = 0.01,
        delta: float = 0.0,
        bound: str = "min",
        max_features: int | None = None,
        compat: str | None = None,
        n_bins: int | None = None,
    ) -> None:
        super().__init__(test=test, alpha=alpha, delta=delta, bound=bound, compat=compat,
                         n_bins=n_bins)
        self.max_features = max_features

    def _state_params(self) -> dict:
        p = super()._state_params()
        p["max_features"] = None if self.max_features is None else int(self.max_features)
        return p

    def _validate_params(self) -> None:
        """Types and ranges of the parameters; ``ValueError`` naming the first bad one."""
        super()._validate_params()
        check_int("max_features", self.max_features, 1, allow_none=True)

    def _start(self, y: Any) -> None:
        self._st_S: list[int] = []
        self.n_dropped_ = 0
        super()._start(y)

    def _order(self) -> list[int]:
        return list(self._st_S)

    def _partial_fit(self, X: Any, y: Any = None) -> None:
        """Process one block of new columns (dense or scipy.sparse, shape ``(N, b)``)."""
        self._accept_y(y)
        block = self._check_block(X)
        rel = self._relevance(block)
        base = self.n_features_seen_
        relevant = rel["relevant"]
        self.n_irrelevant_ += int(block.n_cols - np.count_nonzero(relevant))
        if self.test == "fisher_z":
            self._fisher_step(block, rel, base, np.flatnonzero(relevant))
        else:
            self._python_step(block, rel, base, relevant)
        self.n_features_seen_ = base + block.n_cols
        self._sync()

    def _fisher_step(self, block: ColumnBlock, rel: dict, base: int,
                     rel_cols: np.ndarray) -> None:
        """The block's redundancy step in one compiled call (a few more when the pool of
        stored columns has to grow); affiliations are replayed from its events on access."""
        pool = self._st_pool
        n_old = len(self._st_S)
        n_rel = len(rel_cols)
        cap = n_old + n_rel
        S = np.empty(cap, dtype=np.int64)
        Sslot = np.empty(cap, dtype=np.int64)
        Sdep = np.empty(cap)
        S[:n_old] = self._st_S
        Sslot[:n_old] = [self._st_slot[f] for f in self._st_S]
        Sdep[:n_old] = [self._st_dep[f] for f in self._st_S]
        n_ev = n_old + 3 * n_rel + 1
        ev_kind = np.empty(n_ev, dtype=np.int8)
        ev_a = np.empty(n_ev, dtype=np.int64)
        ev_b = np.empty(n_ev, dtype=np.int64)
        ev_d = np.empty(n_ev)
        xc = np.empty(self._st_n if self._st_lofs_z else 0)
        gone = np.zeros(cap, dtype=np.bool_)
        cxx = rel.get("cxx", rel["ss"])
        kmax = -1 if self.max_features is None else int(self.max_features)
        pos, ns, nev = 0, n_old, 0
        while True:
            pos, ns, nfree, nev = _nb_saola_fisher(
                block.indptr, block.indices, block.data, self._st_n, block.dense, rel_cols,
                rel["dep"], rel["mean"], rel["ss"], cxx, pos, base,
                pool.T, pool.tsum, pool.ss, pool.lvar, pool.free, pool.nfree,
                S, Sslot, Sdep, ns, self._st_lofs_z, self.bound == "max", kmax,
                self._st_zcrit, self._st_sqrt_n3, ev_kind, ev_a, ev_b, ev_d, nev, xc, gone,
                *self._exact_columns(rel, rel_cols), pool.xok, pool.xe, pool.xm,
                pool.xs, pool.xv, pool.xa, self._exact_class_var(),
            )
            pool.nfree = nfree
            if pos >= n_rel:
                break
            pool.reserve(max(1, pool.cap))  # no free slot: grow and go on from pos
        if nev:
            kind = ev_kind[:nev]
            self._st_affq.append((kind, ev_a[:nev], ev_b[:nev], ev_d[:nev]))
            counts = np.bincount(kind, minlength=3)
            self.n_redundant_ += int(counts[_EV_REMOVED] + counts[_EV_DISCARDED])
            self.n_dropped_ += int(counts[_EV_DROPPED])
        sel = S[:ns].tolist()
        raw = self._st_raw
        self._st_raw = {f: raw[f] if f < base else block.dense_column(f - base) for f in sel}
        self._st_slot = dict(zip(sel, Sslot[:ns].tolist()))
        self._st_dep = dict(zip(sel, Sdep[:ns].tolist()))
        self._st_S = sel

    def _python_step(self, block: ColumnBlock, rel: dict, base: int,
                     relevant: np.ndarray) -> None:
        """The redundancy step replayed feature by feature (``test="mi"``)."""
        S = np.asarray(self._st_S, dtype=np.int64)
        slots = np.asarray([self._st_slot[f] for f in self._st_S], dtype=np.int64)
        deps = np.asarray([self._st_dep[f] for f in self._st_S], dtype=np.float64)
        fisher = self.test == "fisher_z"
        k = self.max_features
        for j in np.flatnonzero(relevant):
            f = base + int(j)
            dep_f = float(rel["dep"][j])
            discard_at = -1
            removed = np.empty(0, dtype=np.int64)
            if len(S):
                d, dependent = self._pair(self._prep(block, int(j), rel), slots)
                if self.bound == "min":
                    b1, b2 = dep_f, deps
                else:
                    b1 = b2 = np.maximum(dep_f, deps)
                first = dependent & ((deps >= dep_f) if fisher else (deps > dep_f)) & (d > b1)
                second = dependent & (dep_f > deps) & (d > b2)
                if first.any():
                    discard_at = int(np.argmax(first))
                    owner, d_owner = int(S[discard_at]), float(d[discard_at])
                    second[discard_at:] = False  # the scan stopped there
                removed = np.flatnonzero(second)
            if len(removed):
                self._st_aff.setdefault(f, [])
                for q in removed:
                    self._affiliate(int(S[q]), f, float(d[q]))
                    self._drop(int(S[q]))
                keep = np.ones(len(S), dtype=bool)
                keep[removed] = False
                S, slots, deps = S[keep], slots[keep], deps[keep]
                self.n_redundant_ += len(removed)
            if discard_at >= 0:
                self._affiliate(f, owner, d_owner)
                self.n_redundant_ += 1
                continue
            self._store(f, block, int(j), dep_f)
            S = np.append(S, f)
            slots = np.append(slots, self._st_slot[f])
            deps = np.append(deps, dep_f)
            if k is not None and len(S) > k:
                # lowest dep goes; among equal deps the latest one
                q = len(deps) - 1 - int(np.argmin(deps[::-1]))
                self._st_aff.pop(int(S[q]), None)
                self._drop(int(S[q]))
                S, slots, deps = np.delete(S, q), np.delete(slots, q), np.delete(deps, q)
                self.n_dropped_ += 1
        self._st_S = [int(v) for v in S]

    def to_state(self) -> dict:
        state = self._base_state()
        if state["started"]:
            state["n_dropped"] = int(self.n_dropped_)
        return state

    @classmethod
    def from_state(cls, state: dict) -> "SAOLA":
        obj = cls._from_base_state(state)
        if state["started"]:
            obj._st_S = [int(f) for f in np.asarray(state["selected"])]
            obj.n_dropped_ = int(state["n_dropped"])
            obj._sync()
        return obj


# --------------------------------------------------------------------------------------------
# group-SAOLA
# --------------------------------------------------------------------------------------------


class _UsedGroupIds:
    """Every group id a stream has used, its discarded and removed groups' included (an id
    names one group for the whole stream). Integers are kept as sorted closed ranges, so a
    producer's ids 0, 1, 2, ... stay one range however many groups come; strings as a set."""

    def __init__(self) -> None:
        self._lo: list[int] = []
        self._hi: list[int] = []
        self._str: set[str] = set()

    def __contains__(self, gid: int | str) -> bool:
        if isinstance(gid, str):
            return gid in self._str
        i = bisect.bisect_right(self._lo, gid) - 1
        return i >= 0 and gid <= self._hi[i]

    def add(self, gid: int | str) -> None:
        if isinstance(gid, str):
            self._str.add(gid)
            return
        i = bisect.bisect_right(self._lo, gid) - 1  # the last range starting at or before gid
        if i >= 0 and gid <= self._hi[i]:
            return
        left = i >= 0 and self._hi[i] == gid - 1
        right = i + 1 < len(self._lo) and self._lo[i + 1] == gid + 1
        if left and right:
            self._hi[i] = self._hi.pop(i + 1)
            del self._lo[i + 1]
        elif left:
            self._hi[i] = gid
        elif right:
            self._lo[i + 1] = gid
        else:
            self._lo.insert(i + 1, gid)
            self._hi.insert(i + 1, gid)

    def to_state(self) -> dict:
        # plain ints (not int64): a Python-API id may be any integer
        return {"ranges": [v for pair in zip(self._lo, self._hi) for v in pair],
                "strings": sorted(self._str)}

    @classmethod
    def from_state(cls, state: dict) -> "_UsedGroupIds":
        obj = cls()
        ranges = [int(v) for v in state["ranges"]]
        obj._lo, obj._hi = ranges[0::2], ranges[1::2]
        obj._str = {str(v) for v in state["strings"]}
        return obj


class GroupSAOLA(_SAOLABase):
    """Group-SAOLA: online selection of groups of features (intra- and inter-group redundancy).

    Features arrive in non-overlapping groups. A group's irrelevant features are dropped (the
    group is discarded if none is left). Intra-group: its features are taken in the group's
    order, like a SAOLA step against the group's features kept so far, with the bound
    ``m = min(dep(F), dep(Y))`` (``max`` with ``bound="max"``) and ties going to the newcomer:
    ``dep(Y) >= dep(F)`` and ``d > m`` removes ``F``; ``dep(F) > dep(Y)`` and ``d > m`` removes
    ``Y``. Inter-group: for every earlier selected group in order, for each feature ``a`` of the
    new group and each ``b`` of that group, ``dep(b) > dep(a)`` and ``d > m`` removes ``a``,
    ``dep(a) >= dep(b)`` and ``d > m`` removes ``b``. Empty groups disappear.

    Parameters are those of :class:`SAOLA` except ``max_features``. With ``compat="lofs"`` the
    inter-group loops run over the group contents as they were when the inter-group step began
    (removed features still take part), as in the authors' toolbox.

    Attributes
    ----------
    selected_groups_ : list of (group id, ndarray of int64)
        The selected groups in arrival order, each with its selected features.
    selected_, scores_, affiliated_ : as in :class:`SAOLA`; ``selected_`` concatenates the
        groups in order.
    group_of_ : dict
        ``{selected feature: group id}``.
    n_groups_seen_, n_groups_discarded_ : int

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 300)
    >>> s = y + 0.5 * rng.standard_normal(300)
    >>> X = np.column_stack([rng.standard_normal(300), s,
    ...                      s + 0.3 * rng.standard_normal(300),
    ...                      y + 0.5 * rng.standard_normal(300)])
    >>> g = GroupSAOLA().fit(X, y, groups=[[1, 0], [2, 3]])
    >>> [(gid, feats.tolist()) for gid, feats in g.selected_groups_]
    [(0, [1]), (1, [3])]
    """

    _algorithm = "GroupSAOLA"

    def _start(self, y: Any) -> None:
        self._st_groups: list[list] = []  # [group id, [features]]
        self._st_group_ids = _UsedGroupIds()
        self.n_groups_seen_ = 0
        self.n_groups_discarded_ = 0
        super()._start(y)

    def _order(self) -> list[int]:
        return [f for _, feats in self._st_groups for f in feats]

    def _sync(self) -> None:
        super()._sync()
        self.selected_groups_ = [
            (gid, np.asarray(feats, dtype=np.int64)) for gid, feats in self._st_groups
        ]
        self.group_of_ = {f: gid for gid, feats in self._st_groups for f in feats}

    def selection(self) -> list[dict]:
        out = super().selection()
        for item in out:
            item["group"] = self.group_of_[item["feature"]]
        return out

    def fit(self, X: Any, y: Any, groups: Any = None) -> "GroupSAOLA":
        """Run the whole stream ``X``; ``groups`` lists the column indices of each group."""
        return self._batch_fit(X, y, groups=groups)

    def partial_fit(
        self, X: Any, y: Any = None, groups: Any = None, group_ids: Any = None
    ) -> "GroupSAOLA":
        """Process one block; ``groups`` partitions its columns (default: one group).

        ``group_ids``: one id (int or str) per group. An id names one group for the whole
        stream: an id an earlier group had is refused, even if that group was discarded or has
        lost all its features since. Default: each group's number in the stream (0 for the
        first group), refused likewise if an earlier group was given it explicitly."""
        return self._stream_step(X, y, groups=groups, group_ids=group_ids)

    def _partial_fit(
        self, X: Any, y: Any = None, groups: Any = None, group_ids: Any = None
    ) -> None:
        self._accept_y(y)
        block = self._check_block(X)
        b = block.n_cols
        if groups is None:  # one group; none for a block of no columns (a group is never empty)
            groups = [np.arange(b)] if b else []
        else:
            groups = group_members(groups, b)
        # an id names one group for the whole stream: the ids of discarded groups, and of
        # groups whose features were all removed since, are taken too (checking only the
        # selected groups let a later group take such an id, or a default id an explicit one,
        # and two groups were then reported under one id)
        known = self._st_group_ids
        if group_ids is None:
            group_ids = list(range(self.n_groups_seen_, self.n_groups_seen_ + len(groups)))
            taken = next((gid for gid in group_ids if gid in known), None)
            if taken is not None:
                raise ValueError(
                    f"the default group id {taken!r} (the number of groups before it in the "
                    f"stream) was given to an earlier group: pass group_ids (an id names one "
                    f"group of the stream)")
        else:
            group_ids = list(group_ids)
            if len(group_ids) != len(groups):
                raise ValueError("group_ids must have one id per group")
            for gid in group_ids:  # first: the checks below compare and hash the ids
                # a bool is no id (True would be group 1), as in the worker's check
                if not isinstance(gid, (int, np.integer, str)) or isinstance(gid, bool):
                    raise ValueError(f"group ids must be ints or strings, got {gid!r}")
            group_ids = [str(gid) if isinstance(gid, str) else int(gid) for gid in group_ids]
            in_block: set = set()
            for gid in group_ids:
                if gid in in_block:
                    raise ValueError(f"group ids must be unique: {gid!r} names two groups of "
                                     f"the block")
                in_block.add(gid)
            reused = next((gid for gid in group_ids if gid in known), None)
            if reused is not None:
                raise ValueError(f"group ids must be unique: {reused!r} was used by an earlier "
                                 f"block (a group's columns all come in one block)")
        rel = self._relevance(block)
        base = self.n_features_seen_
        for gid in group_ids:
            known.add(gid)
        for gid, cols in zip(group_ids, groups):
            self._group_step(block, rel, base, gid, cols)
        self.n_features_seen_ = base + b
        self._sync()

    def _group_step(self, block: ColumnBlock, rel: dict, base: int, gid: Any,
                    cols: np.ndarray) -> None:
        self.n_groups_seen_ += 1
        relevant = rel["relevant"][cols]
        self.n_irrelevant_ += int(len(cols) - np.count_nonzero(relevant))
        cand = [int(c) for c in cols[relevant]]
        if not cand:
            self.n_groups_discarded_ += 1
            return
        use_max = self.bound == "max"
        prep: dict[int, tuple] = {}
        exact: dict[int, tuple] = {}  # each newcomer's exact sums (_signs)
        dead: list[int] = []  # removed during this step; slots released at the end
        # intra-group
        kept: list[int] = []
        for j in cand:
            f = base + j
            dep_f = float(rel["dep"][j])
            prep[f] = self._prep(block, j, rel)
            exact[f] = self._exact_of(rel, j)
            self._st_aff.setdefault(f, [])
            if kept:
                slots = np.asarray([self._st_slot[g] for g in kept], dtype=np.int64)
                deps = np.asarray([self._st_dep[g] for g in kept])
                d, dependent = self._pair(prep[f], slots)
                syf, sdf, sdy = self._signs(prep[f], exact[f], dep_f, slots, deps, d)
                # d > m, m = max (or min) of the two strengths
                ok = dependent & (((sdf > 0) & (sdy > 0)) if use_max else ((sdf > 0) | (sdy > 0)))
                first = ok & (syf >= 0)
                second = ok & (syf < 0)
                stop = int(np.argmax(first)) if first.any() else len(kept)
                gone = [kept[q] for q in np.flatnonzero(second[:stop])]
                for q in np.flatnonzero(second[:stop]):
                    self._affiliate(kept[q], f, float(d[q]))
                for g in gone:
                    self._drop(g)
                self.n_redundant_ += len(gone)
                if stop < len(kept):
                    self._affiliate(f, kept[stop], float(d[stop]))
                    self.n_redundant_ += 1
                    kept = [g for g in kept if g not in gone]
                    self._st_aff.pop(f, None)
                    continue
                kept = [g for g in kept if g not in gone]
            self._store(f, block, j, dep_f)
            kept.append(f)
        # inter-group
        lofs = self.compat == "lofs"
        new_now = list(kept)
        new_alive = set(kept)
        for entry in self._st_groups:
            if not new_alive and not lofs:
                break
            members = list(entry[1])
            alive = set(members)
            for a in (kept if lofs else list(new_now)):
                if not lofs and a not in new_alive:
                    continue
                bs = members if lofs else [g for g in members if g in alive]
                if not bs:
                    break
                slots = np.asarray([self._st_slot[g] for g in bs], dtype=np.int64)
                deps = np.asarray([self._st_dep[g] for g in bs])
                dep_a = self._st_dep[a]
                d, dependent = self._pair(prep[a], slots)
                syf, sdf, sdy = self._signs(prep[a], exact[a], dep_a, slots, deps, d)
                ok = dependent & (((sdf > 0) & (sdy > 0)) if use_max else ((sdf > 0) | (sdy > 0)))
                first = ok & (syf > 0)
                second = ok & (syf <= 0)
                stop = int(np.argmax(first)) if first.any() else len(bs)
                for q in np.flatnonzero(second[:stop]):
                    g = bs[q]
                    if g in alive:
                        alive.discard(g)
                        self._affiliate(g, a, float(d[q]))
                        self._st_forward[g] = a
                        dead.append(g)
                        self.n_redundant_ += 1
                if stop < len(bs) and a in new_alive:
                    new_alive.discard(a)
                    self._affiliate(a, bs[stop], float(d[stop]))
                    self._st_forward[a] = bs[stop]
                    dead.append(a)
                    self.n_redundant_ += 1
            entry[1] = [g for g in members if g in alive]
            new_now = [g for g in new_now if g in new_alive]
        self._st_groups = [e for e in self._st_groups if e[1]]
        for g in dead:
            self._st_aff.pop(g, None)
            self._drop(g)
        self._st_forward.clear()
        new_now = [g for g in kept if g in new_alive]
        if new_now:
            self._st_groups.append([gid, new_now])
        else:
            self.n_groups_discarded_ += 1

    def to_state(self) -> dict:
        state = self._base_state()
        if state["started"]:
            state["groups"] = [
                [gid, np.asarray(feats, dtype=np.int64)] for gid, feats in self._st_groups
            ]
            state["n_groups_seen"] = int(self.n_groups_seen_)
            state["n_groups_discarded"] = int(self.n_groups_discarded_)
            state["group_ids"] = self._st_group_ids.to_state()
        return state

    @classmethod
    def from_state(cls, state: dict) -> "GroupSAOLA":
        obj = cls._from_base_state(state)
        if state["started"]:
            obj._st_groups = [
                [gid, [int(f) for f in np.asarray(feats)]] for gid, feats in state["groups"]
            ]
            obj.n_groups_seen_ = int(state["n_groups_seen"])
            obj.n_groups_discarded_ = int(state["n_groups_discarded"])
            if "group_ids" in state:
                obj._st_group_ids = _UsedGroupIds.from_state(state["group_ids"])
            else:  # a state saved before the ids were kept: the selected groups' are known
                for gid, _ in obj._st_groups:
                    obj._st_group_ids.add(gid)
            obj._sync()
        return obj
