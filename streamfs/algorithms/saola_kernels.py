"""Numba kernels behind :mod:`streamfs.algorithms.saola` (the SAOLA family; called from its base
class and from :class:`~streamfs.algorithms.saola_pool.Pool`), and the Fisher-z verdict they
leave the near ties to.

``_nb_saola_fisher`` is SAOLA's whole redundancy step with Fisher's z for the relevant columns
of one block (GIL released): it writes the removals, discards and top-k drops as events
(``EV_*``), which the selector replays into its affiliation lists when they are read.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numba import njit

from .measures.exact import _nb_pair_signs
from .measures.lofs import _nb_lofs_dependent, _nb_lofs_dot, _nb_lofs_r
from .measures.pearson import _nb_centred_cross, _nb_sqrt_product


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


def fisher_dependent(d: np.ndarray, n: int, zcrit: float) -> np.ndarray:
    """Fisher's z test of strengths ``d = |r|`` over ``n`` instances."""
    with np.errstate(divide="ignore"):
        return np.sqrt(n - 3.0) * np.arctanh(np.minimum(d, 1.0)) >= zcrit


@functools.lru_cache(maxsize=64)
def fisher_bracket(n: int, zcrit: float) -> tuple[float, float]:
    """``(r_false, r_true)``: every ``|r| <= r_false`` fails :func:`fisher_dependent` and
    every ``|r| >= r_true`` passes it, so a compiled kernel can give most verdicts and leave
    the few in between to the test itself (the same verdicts, bit for bit, whatever
    ``arctanh`` the compiled code would have used). The test is monotone in ``|r|``; the
    bracket is a relative 1e-9 around ``tanh(zcrit / sqrt(n - 3))``, far wider than any
    rounding, and checked against the test at both ends."""
    r = math.tanh(zcrit / math.sqrt(n - 3.0))
    lo, hi = r * (1.0 - 1e-9), r * (1.0 + 1e-9)
    if 0.0 < lo < hi < 1.0 and fisher_dependent(np.array([lo, hi]), n, zcrit).tolist() == [
            False, True]:
        return lo, hi
    return -1.0, 2.0  # no safe bracket (e.g. a critical value of 0): the test decides all



# --------------------------------------------------------------------------------------------
# the compiled SAOLA step (Fisher's z)
# --------------------------------------------------------------------------------------------

# event kinds written by _nb_saola_fisher, replayed (lazily) into the affiliation lists
EV_REMOVED = 0  # a = removed selected feature, b = the newcomer that removed it
EV_DISCARDED = 1  # a = newcomer, b = the selected feature that made it redundant
EV_DROPPED = 2  # a = feature dropped by the top-k rule (its affiliates are forgotten)


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
