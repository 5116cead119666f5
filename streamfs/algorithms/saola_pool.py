"""The stored columns of the features a SAOLA-family selector keeps
(:mod:`streamfs.algorithms.saola`), in the form its strength kernels need."""

from __future__ import annotations

import numpy as np

from .measures.columns import as_column_block
from .measures.exact import exact_sums
from .measures.information import _nb_codes, _nb_entropy_counts, _nb_su_many, _work
from .measures.lofs import _nb_lofs_dot, lofs_centred
from .measures.pearson import _nb_cross, _r_from, centred_on_mean
from .saola_kernels import _nb_lofs_many

__all__ = ["Pool"]


class Pool:
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
