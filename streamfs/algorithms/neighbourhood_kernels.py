"""The numba kernels of K-OFSD's neighbourhood dependency (used by
:class:`~streamfs.algorithms.kofsd.KOFSD`).

They compute what :mod:`streamfs.algorithms.neighbourhood` defines (standardised distances,
neighbours ordered by ``(distance, index)``, the card values and their mean) without the
``N x N`` work of its reference implementation where a feature allows it: one feature's
neighbours by walking outwards in its sorted order (:func:`single_feature_stats`), a candidate
feature added to the selected set ``S`` from the distances on ``S`` and each instance's
candidate list (:func:`joint_stats`, which stops once the comparison with ``Dep(S)`` is
decided), and a whole block of columns in one call (:func:`stream_step`). Each rounds as the
reference does; the tests compare them with it.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from streamfs.algorithms.neighbourhood import CARDS, _sorted_variance
from streamfs.algorithms.rounding import round_half_away


@njit(cache=True, nogil=True)
def _key1(x, v, var):
    t = x - v
    return np.sqrt(t * t / var)


@njit(cache=True, nogil=True)
def _walk(p, order, sv, run_start, run_end, y, var, need, include_self, buf):
    """Neighbour statistics ``(same, ssum, dsum)`` of the instance at sorted position ``p`` of
    one column, by walking outwards from ``p``: each step takes the group of candidates at the
    next smallest distance (on both sides). A group that does not fit entirely gives its places
    to the smallest instance indices: within a run of equal values the stable sort already
    orders indices, so two runs are merged in ``O(K)``; only groups spanning several runs
    (distinct values at a distance equal after rounding) are sorted."""
    n = sv.shape[0]
    i = order[p]
    x = sv[p]
    yi = y[i]
    left = p if include_self else p - 1
    right = p + 1
    kl = _key1(x, sv[left], var) if left >= 0 else np.inf
    kr = _key1(x, sv[right], var) if right < n else np.inf
    taken = 0
    first = True
    same = 0
    ssum = 0.0
    dsum = 0.0
    while taken < need:
        d = min(kl, kr)
        rem = need - taken
        # the group at distance d: one run of equal values per side, unless rounding
        # makes a neighbouring run tie too (then: generic gather and sort)
        nl = 0
        nr = 0
        multi = False
        kln = np.inf  # the key beyond the group on each side (the next kl / kr)
        krn = np.inf
        if left >= 0 and kl == d:
            ls = run_start[left]
            nl = left - ls + 1
            if ls > 0:
                kln = _key1(x, sv[ls - 1], var)
                multi = kln == d
        if right < n and kr == d:
            re = run_end[right]
            nr = re - right + 1
            if re + 1 < n:
                krn = _key1(x, sv[re + 1], var)
                multi = multi or krn == d
        if multi:
            g = 0
            while left >= 0 and kl == d:
                buf[g] = order[left]
                g += 1
                left -= 1
                kl = _key1(x, sv[left], var) if left >= 0 else np.inf
            while right < n and kr == d:
                buf[g] = order[right]
                g += 1
                right += 1
                kr = _key1(x, sv[right], var) if right < n else np.inf
            take = min(g, rem)
            if g > rem:
                sub = np.sort(buf[:g])
                for q in range(take):
                    buf[q] = sub[q]
        elif nl + nr <= rem:
            take = nl + nr
            for q in range(nl):
                buf[q] = order[left - q]
            for q in range(nr):
                buf[nl + q] = order[right + q]
            if nl > 0:  # only the sides that moved get a new key (computed above)
                left -= nl
                kl = kln
            if nr > 0:
                right += nr
                kr = krn
        else:
            # merge the two ascending index runs, keep the rem smallest
            take = rem
            a = left - nl + 1  # positions a..left ascend in index
            bpos = right
            for q in range(take):
                if bpos >= right + nr or (a <= left and order[a] < order[bpos]):
                    buf[q] = order[a]
                    a += 1
                else:
                    buf[q] = order[bpos]
                    bpos += 1
        skip = -1
        if first and include_self:
            # zhou: the first element of the stable sort (smallest index at distance 0)
            skip = 0
            for q in range(1, take):
                if buf[q] < buf[skip]:
                    skip = q
        for q in range(take):
            if q == skip:
                continue
            if y[buf[q]] == yi:
                same += 1
                ssum += d
            else:
                dsum += d
        taken += take
        first = False
    return same, ssum, dsum


#: up to this K a window's start is counted from K comparisons; beyond, it slides
_COUNTED_K = 16

_SIGN = np.uint64(1 << 63)
_MAX_INDEX_BITS = 20  # at most 20 low bits of a value give way to the index (relative 2**-32)


@njit(cache=True, nogil=True)
def _packed_keys(U, bits):
    """Per column of ``U`` (the bits of a finite float64 ``(N, B)`` block), ``N`` keys that
    sort as the values do, each value's ``bits`` lowest bits replaced by its instance index."""
    n, b = U.shape
    low = np.uint64((1 << bits) - 1)
    keys = np.empty((b, n), dtype=np.uint64)
    for c in range(b):
        for i in range(n):
            u = U[i, c]
            # IEEE order as unsigned order: negatives reversed, positives above them
            key = ~u if u & _SIGN else u | _SIGN
            keys[c, i] = (key & ~low) | np.uint64(i)
    return keys


def nearly_sorted_order(X: np.ndarray) -> np.ndarray:
    """An ``(N, B)`` order of each column of the finite float64 block ``X`` that is ascending
    but for values equal in all but their lowest ``ceil(log2 N)`` bits, which come in instance
    order: the input :func:`single_feature_stats` finishes in ``O(N)``.

    It sorts one ``uint64`` per value (the value's bits with the instance index in the lowest
    ones), which numpy's vectorised sort does several times faster than an argsort of the
    values.

    >>> X = np.array([[2.0, 0.0], [-1.0, -0.0], [2.0, 3.0]])
    >>> nearly_sorted_order(X).T.tolist()  # -0.0 before 0.0: the kernel swaps equal values
    [[1, 0, 2], [1, 0, 2]]
    """
    n, b = X.shape
    bits = max(1, (n - 1).bit_length())
    if bits > _MAX_INDEX_BITS:
        return np.argsort(X, axis=0)
    keys = _packed_keys(X.view(np.uint64), bits)
    keys.sort(axis=1)  # releases the GIL, as the kernels do
    keys &= np.uint64((1 << bits) - 1)
    return keys.view(np.int64).T


@njit(cache=True, nogil=True)
def _equal_runs(sv, run_start, run_end):
    """First and last sorted position of the run of equal values holding each position."""
    n = sv.shape[0]
    run_start[0] = 0
    for q in range(1, n):
        run_start[q] = run_start[q - 1] if sv[q] == sv[q - 1] else q
    run_end[n - 1] = n - 1
    for q in range(n - 2, -1, -1):
        run_end[q] = run_end[q + 1] if sv[q] == sv[q + 1] else q


@njit(cache=True, nogil=True)
def _counted_windows(sv, k, var, starts, gap_in, gap_out, exacts):
    """For each sorted position ``p`` of the ascending column ``sv``: ``starts[p]``, the
    start of the window of ``K + 1`` positions nearest to ``p`` (the first start whose next
    value on the right is not nearer than its left end: a test that is true, then false, as
    the start moves, so the start is counted), and ``exacts[p]``: whether every key inside it
    is strictly below both keys just outside.

    Pass by pass over all positions, each loop indexing views from 0, so that the compiler
    sees no negative index to wrap around and vectorises the comparisons and the keys' square
    roots (for the bench's columns 6 times faster than a loop per position)."""
    n = sv.shape[0]
    for p in range(n):
        starts[p] = max(p - k, 0)
    for t in range(k):
        # the start's test at j = p - k + t, counted where 0 <= j < min(p, n - 1 - k)
        lo = max(k - t, 0)
        right = sv[lo + t + 1 :]
        mid = sv[lo:]
        left = sv[lo - k + t :]
        out = starts[lo:]
        for q in range(n - 1 - t - lo):
            out[q] += right[q] - mid[q] < mid[q] - left[q]
    for p in range(n):
        s = np.uint64(starts[p])  # unsigned: no wrap-around branch in the gathers
        x = sv[p]
        gap_in[p] = max(x - sv[s], sv[s + np.uint64(k)] - x)
        gap_out[p] = min(x - sv[s - np.uint64(1)] if s > 0 else np.inf,
                         sv[s + np.uint64(k + 1)] - x if s + np.uint64(k + 1) < n else np.inf)
    for p in range(n):
        exacts[p] = _key1(gap_in[p], 0.0, var) < _key1(gap_out[p], 0.0, var)


@njit(cache=True, nogil=True)
def single_feature_stats(X, order_in, y, k, include_self, sums, var_out, same_out, ssum_out,
                         dsum_out):  # fmt: skip
    """Neighbour statistics of every instance on each single column of ``X`` ``(N, B)``.

    In one dimension the ``K`` nearest neighbours of the instance at sorted position ``p`` lie
    in a window of ``K + 1`` consecutive sorted positions holding ``p`` (distances grow, also
    after rounding, with the distance from ``p`` in the sorted order on either side). Its
    start is counted from K comparisons for K <= 16, else slid along with ``p``. Where every
    distance inside it is strictly smaller than both just outside, it holds exactly the
    neighbours whatever the tie rule, and ``same`` is read from the window's class counts (a
    prefix sum of class 1 with two classes, else counts kept as the window moves: O(1)
    amortised an instance instead of counting K + 1). Otherwise (a tie at its edge; in
    ``zhou`` mode also another instance at distance 0) and whenever ``sums`` is set,
    :func:`_walk` settles the instance: ``ssum`` and ``dsum``, which only the ``"distance"``
    card reads, are floating-point sums in the walk's order. Without ``sums`` both are 0.
    Cost ``O(N K)`` per column after the sort at most (the walks and counted starts), ``O(N)``
    where a sliding window settles every instance. Constant columns get ``var_out = 0`` and
    zero statistics (the caller treats them as irrelevant).

    ``order_in``: a nearly ascending order of each column (:func:`nearly_sorted_order`, or any
    argsort): an insertion sort here puts it in the order of ``(value, instance index)``, the
    stable sort the neighbour rule is defined on, in ``O(N)`` when only runs of equal or
    nearly equal values are out of place.
    """
    n, b = X.shape
    need = k + include_self
    buf = np.empty(n, dtype=np.int64)
    run_start = np.empty(n, dtype=np.int64)
    run_end = np.empty(n, dtype=np.int64)
    ys = np.empty(n, dtype=np.int64)  # the classes in sorted order
    counts = np.zeros(np.max(y) + 1 if n else 1, dtype=np.int64)  # per class, in the window
    two = counts.shape[0] <= 2  # classes 0 and 1: the window's counts from a prefix sum
    ones = np.empty(n + 1, dtype=np.int64)  # class-1 instances before each sorted position
    starts = np.empty(n, dtype=np.int64)
    gap_in = np.empty(n)
    gap_out = np.empty(n)
    exacts = np.empty(n, dtype=np.bool_)
    order = np.empty(n, dtype=np.int64)
    sv = np.empty(n)
    for c in range(b):
        for q in range(n):
            u = np.uint64(order_in[q, c])  # unsigned: no wrap-around branch in the gathers
            order[q] = u
            sv[q] = X[u, c]
        for q in range(1, n):
            # by (value, instance index), the stable order: an insertion sort, as only short
            # runs are out of place; -0.0 and 0.0 are equal, so sv moves along
            j = q
            while j > 0 and (sv[j] < sv[j - 1]
                             or (sv[j] == sv[j - 1] and order[j] < order[j - 1])):
                order[j], order[j - 1] = order[j - 1], order[j]
                sv[j], sv[j - 1] = sv[j - 1], sv[j]
                j -= 1
        # constant, or so nearly that the variance underflows to 0 (no distance is defined)
        var = 0.0 if sv[0] == sv[n - 1] else _sorted_variance(sv)
        var_out[c] = var
        if var == 0.0:
            for i in range(n):
                same_out[i, c] = 0
                ssum_out[i, c] = 0.0
                dsum_out[i, c] = 0.0
            continue
        runs = False  # the runs of equal values, which only the walks read: built lazily
        cs = 0
        if not sums:
            # the window's class counts in O(1) an instance instead of O(K): a prefix sum of
            # class 1 with two classes, else counts of the window cs .. cs + k moved to the
            # window s .. s + k where an instance is counted in it
            for q in range(n):
                ys[q] = y[np.uint64(order[q])]
            if two:
                ones[0] = 0
                for q in range(n):
                    ones[q + 1] = ones[q] + ys[q]
            else:
                counts[:] = 0
                for q in range(k + 1):
                    counts[ys[q]] += 1
        counted = not sums and k <= _COUNTED_K
        if counted:
            _counted_windows(sv, k, var, starts, gap_in, gap_out, exacts)
        s = 0  # first sorted position of the window s .. s + k
        for p in range(n):
            i = order[p]
            if not sums:
                x = sv[p]
                # The start from the raw gaps (the key is a non-decreasing function of the gap,
                # and fl(a - b) = -fl(b - a)): any window holding p will do here, as the test
                # below is on the keys. Two keys per instance instead of six.
                if counted:
                    s = starts[p]
                    exact = exacts[p]
                else:
                    s = min(max(s, p - k), p, n - 1 - k)
                    while s < p and s + k + 1 < n and sv[s + k + 1] - x < x - sv[s]:
                        s += 1
                    while s > 0 and s + k > p and x - sv[s - 1] < sv[s + k] - x:
                        s -= 1
                    inside = _key1(max(x - sv[s], sv[s + k] - x), 0.0, var)
                    outside = _key1(min(x - sv[s - 1] if s > 0 else np.inf,
                                        sv[s + k + 1] - x if s + k + 1 < n else np.inf), 0.0,
                                    var)  # fmt: skip
                    exact = inside < outside
                if exact and include_self:
                    # zhou drops the first instance at distance 0: x itself only if alone there
                    exact = (p == s or _key1(x, sv[p - 1], var) > 0.0) and (
                        p == s + k or _key1(x, sv[p + 1], var) > 0.0)
                if exact and two:
                    # unsigned indices: no wrap-around branches (s and i are never negative)
                    u = np.uint64(s)
                    o = ones[u + np.uint64(k + 1)] - ones[u]  # class 1 in the window, p included
                    ui = np.uint64(i)
                    same_out[ui, c] = (o if ys[p] == 1 else k + 1 - o) - 1
                    ssum_out[ui, c] = 0.0
                    dsum_out[ui, c] = 0.0
                    continue
                if exact:
                    while cs < s:
                        counts[ys[cs]] -= 1
                        counts[ys[cs + k + 1]] += 1
                        cs += 1
                    while cs > s:
                        cs -= 1
                        counts[ys[cs]] += 1
                        counts[ys[cs + k + 1]] -= 1
                    same_out[i, c] = counts[ys[p]] - 1  # p lies in its window
                    ssum_out[i, c] = 0.0
                    dsum_out[i, c] = 0.0
                    continue
            if not runs:
                _equal_runs(sv, run_start, run_end)
                runs = True
            same, ssum, dsum = _walk(p, order, sv, run_start, run_end, y, var, need,
                                     include_self, buf)
            same_out[i, c] = same
            ssum_out[i, c] = ssum
            dsum_out[i, c] = dsum


@njit(cache=True, nogil=True)
def _insert(tk, ti, cnt, need, key, j):
    """Insert ``(key, j)`` into the ascending top list ``tk/ti`` of ``cnt <= need`` entries;
    returns the new count."""
    if cnt < need:
        q = cnt
        cnt += 1
    elif key < tk[need - 1] or (key == tk[need - 1] and j < ti[need - 1]):
        q = need - 1
    else:
        return cnt
    while q > 0 and (tk[q - 1] > key or (tk[q - 1] == key and ti[q - 1] > j)):
        tk[q] = tk[q - 1]
        ti[q] = ti[q - 1]
        q -= 1
    tk[q] = key
    ti[q] = j
    return cnt


@njit(cache=True, nogil=True)
def _sq_bound(w):
    """The largest ``v`` with ``sqrt(v) <= w``: comparing squared distances against it gives
    exactly the verdict of comparing their square roots with ``w``, without the square root."""
    if w == np.inf:
        return np.inf
    v = w * w
    while np.sqrt(v) > w:
        v = np.nextafter(v, -np.inf)
    while True:
        u = np.nextafter(v, np.inf)
        if np.sqrt(u) > w:
            return v
        v = u


@njit(cache=True, nogil=True)
def joint_stats(D, near, xf, var, y, k, include_self, same_out, ssum_out, dsum_out,
                is_large, card_code, gamma, gamma1, gamma2, loss_budget, zhou, dep_s,
                rows):  # fmt: skip
    """Neighbour statistics of every instance on ``S + {f}``; returns True if it stopped early.

    Early stop (``card_code`` = index in :data:`CARDS`): the caller only needs to know whether
    ``Dep(S + {f}) > Dep(S)``. Every card is a multiple of ``1 / K``, so the total loss
    ``sum_x (K - K * card(x))`` is an integer; ``loss_budget`` is the loss of ``S`` (``< 0``:
    never stop). Default mode: once the loss reaches the budget, ``Dep(S + {f}) <= Dep(S)`` and
    the remaining rows are skipped (True is returned). ``zhou`` (float mean ``dep_s`` of ``S``):
    an equal numerator can still compare greater in float, so at that point (and whenever the
    loss grows again) the best case is evaluated exactly: the float mean, in instance order, of
    the cards known so far and ``1.0`` for every instance not visited yet. Float addition is
    monotone in each term, so if that bound is ``<= dep_s``, no outcome of the remaining rows
    can exceed it.

    ``rows`` is the order in which the instances are visited (a permutation): the statistics
    and the verdict do not depend on it, only how soon an early stop comes. The caller puts the
    instances whose card is not full on ``S`` first (they usually lose on ``S + {f}`` too).

    ``D`` holds the squared distances on ``S`` and ``near[i]`` the ``M`` instances nearest to
    ``i`` on ``S`` in ascending ``D`` order (see :func:`row_order`). The new squared distance
    ``D[i, j] + delta_f(i, j)`` is bounded below by both terms. Row ``i`` is first scanned in
    ``near[i]`` order and settled as soon as the next ``D`` exceeds the current ``K``-th best
    distance, or equals it at a larger instance index (the usual case when ``S`` is informative
    or heavily tied). Rows the list does not settle continue with the sorted column ``f``
    walked outwards from ``i`` (ascending ``delta_f``), which stops by the same rule and is
    exhaustive. Exact (ties by instance index).
    """
    n = D.shape[0]
    m = near.shape[1]
    need = k + include_self
    tk = np.empty(need)
    ti = np.empty(need, dtype=np.int64)
    order = np.empty(0, dtype=np.int64)  # sorted column f, built on first need
    sv = np.empty(0)
    pos = np.empty(0, dtype=np.int64)
    stamp = np.full(n, -1, dtype=np.int64)  # stamp[j] == i: j already considered for row i
    loss = 0
    cards = np.ones(n if zhou and loss_budget >= 0 else 0)  # zhou: 1.0 where not known yet
    for r in range(n):
        i = rows[r]
        cnt = 0
        bound = np.inf  # squared form of the K-th best distance once the list is full
        x = xf[i]
        settled = False
        for t in range(m):
            j = near[i, t]
            base = D[i, j]
            # ``near`` ascends by (D, index): once D reaches the bound, a candidate of larger
            # index than the K-th best cannot displace it, nor can any later one (tie-heavy
            # data, e.g. sparse binary columns, settles here instead of scanning the column)
            if base > bound or (base == bound and j > ti[need - 1]):
                settled = True
                break
            stamp[j] = i
            if j == i and include_self == 0:
                continue
            dd = x - xf[j]
            v = base + dd * dd / var
            if v <= bound:
                cnt = _insert(tk, ti, cnt, need, np.sqrt(v), j)
                if cnt == need:
                    bound = _sq_bound(tk[need - 1])
        if not settled and m < n:
            if order.shape[0] == 0:
                order = np.argsort(xf, kind="mergesort")
                sv = xf[order]
                pos = np.empty(n, dtype=np.int64)
                for q in range(n):
                    pos[order[q]] = q
            if stamp[i] != i:  # i itself was not listed (many duplicates of smaller index)
                stamp[i] = i
                if include_self and D[i, i] <= bound:
                    cnt = _insert(tk, ti, cnt, need, np.sqrt(D[i, i] + 0.0), i)
                    if cnt == need:
                        bound = _sq_bound(tk[need - 1])
            left = pos[i] - 1
            right = pos[i] + 1
            dl = np.inf
            if left >= 0:
                dd = x - sv[left]
                dl = dd * dd / var
            dr = np.inf
            if right < n:
                dd = x - sv[right]
                dr = dd * dd / var
            while True:
                if dl <= dr:
                    if dl > bound or dl == np.inf:
                        break
                    j = order[left]
                    delta = dl
                    left -= 1
                    dl = np.inf
                    if left >= 0:
                        dd = x - sv[left]
                        dl = dd * dd / var
                else:
                    if dr > bound:
                        break
                    j = order[right]
                    delta = dr
                    right += 1
                    dr = np.inf
                    if right < n:
                        dd = x - sv[right]
                        dr = dd * dd / var
                if stamp[j] != i:
                    v = D[i, j] + delta
                    if v <= bound:
                        cnt = _insert(tk, ti, cnt, need, np.sqrt(v), j)
                        if cnt == need:
                            bound = _sq_bound(tk[need - 1])
        same = 0
        ssum = 0.0
        dsum = 0.0
        for q in range(include_self, need):
            if y[ti[q]] == y[i]:
                same += 1
                ssum += tk[q]
            else:
                dsum += tk[q]
        same_out[i] = same
        ssum_out[i] = ssum
        dsum_out[i] = dsum
        if loss_budget >= 0:
            num = _card_num(same, ssum, dsum, is_large[i], k, card_code, gamma, gamma1, gamma2)
            loss += k - num
            if zhou:
                cards[i] = num / k
                if loss >= loss_budget and num < k:
                    best = 0.0
                    for q in range(n):  # in instance order, as the mean is taken
                        best += cards[q]
                    if best / n <= dep_s:
                        return True
            elif loss >= loss_budget:
                return True
    return False


@njit(cache=True, nogil=True)
def _card_num(same, ssum, dsum, large, k, card_code, gamma, gamma1, gamma2):
    """``K * card(x)`` (an integer) from the neighbour statistics of one instance; the formulas
    of :func:`card_values`, ``card_code`` the index in :data:`CARDS`."""
    if card_code == 0:  # imbalanced
        if large:
            return k if same == k else 0
        return same
    if card_code == 1:  # consistency
        return k if same == k else 0
    ratio = same / k
    if card_code == 2:  # weight
        return same if ratio > gamma else 0
    # distance
    if ratio >= gamma1:
        return k
    if ratio <= gamma2:
        return 0
    return k if ssum / same < dsum / (k - same) else 0


@njit(cache=True, nogil=True)
def _dependency_of(same, ssum, dsum, is_large, k, card_code, gamma, gamma1, gamma2, zhou):
    """``Dep_K`` from the statistics ``(N,)`` of one feature set (see the module docstring)."""
    n = same.shape[0]
    if zhou:
        t = 0.0
        for i in range(n):
            t += _card_num(same[i], ssum[i], dsum[i], is_large[i], k, card_code,
                           gamma, gamma1, gamma2) / k  # fmt: skip
        return t / n
    num = 0
    for i in range(n):
        num += _card_num(same[i], ssum[i], dsum[i], is_large[i], k, card_code,
                         gamma, gamma1, gamma2)  # fmt: skip
    return num / (k * n)


@njit(cache=True, nogil=True)
def dependencies(same, ssum, dsum, is_large, k, card_code, gamma, gamma1, gamma2, zhou, out):
    """``out[c] = Dep_K`` of column ``c`` of the statistics ``(N, B)``."""
    for c in range(same.shape[1]):
        out[c] = _dependency_of(same[:, c], ssum[:, c], dsum[:, c], is_large, k, card_code,
                                gamma, gamma1, gamma2, zhou)  # fmt: skip


def dependency_from_stats(same, ssum, dsum, is_large, k, card, gamma, gamma1, gamma2,
                          compat=None):  # fmt: skip
    """``Dep_K`` of each column from neighbour statistics of shape ``(N, B)`` (compiled; the
    numpy reference is :func:`_card_from_stats` + :func:`_mean_card`)."""
    if card not in CARDS:
        raise ValueError(f"card must be one of {CARDS}, got {card!r}")
    same = np.asarray(same, dtype=np.int64)
    out = np.empty(same.shape[1])
    dependencies(same, np.asarray(ssum, dtype=np.float64), np.asarray(dsum, dtype=np.float64),
                 np.asarray(is_large, dtype=np.bool_), int(k), CARDS.index(card), float(gamma),
                 float(gamma1), float(gamma2), compat == "zhou", out)  # fmt: skip
    return out


@njit(cache=True, nogil=True)
def _lossy_first(same, ssum, dsum, is_large, k, card_code, gamma, gamma1, gamma2, rows):
    """``rows``: the instances whose card is not full on the new ``S`` first, then the others
    (each group in instance order)."""
    n = same.shape[0]
    r = 0
    for full in range(2):
        for i in range(n):
            num = _card_num(same[i], ssum[i], dsum[i], is_large[i], k, card_code, gamma,
                            gamma1, gamma2)  # fmt: skip
            if (num == k) == (full == 1):
                rows[r] = i
                r += 1


@njit(cache=True, nogil=True)
def stream_step(X, var, dep1, same1, ssum1, dsum1, alpha, y, is_large, k, include_self,
                card_code, gamma, gamma1, gamma2, zhou, D, near, near_ok, dep, rows, decision,
                dep_out, start):  # fmt: skip
    """Algorithm 5 over a block of columns ``X`` ``(N, B)``, Fortran order.

    ``var``/``dep1``: sample variance and ``Dep_K({f})`` of each column, ``same1``, ``ssum1``,
    ``dsum1`` their neighbour statistics ``(N, B)``; ``rows``: the order in which
    :func:`joint_stats` visits the instances (updated in place when ``S`` changes); ``D``: squared
    distances on the current selection ``S`` (zeros if ``S`` is empty), updated in place;
    ``near``: the candidate lists of :func:`nearest_lists` for ``D`` (out of date when
    ``near_ok`` is False); ``dep``: ``Dep_K(S)``. Writes ``decision[c]``: 0 irrelevant
    (``Dep({f}) <= alpha``; constant columns have 0 there but in ``zhou`` mode), 1 replaces
    ``S``, 2 joins ``S``, 3 redundant, and ``dep_out[c]`` the new ``Dep_K(S)`` for 1 and 2, for the columns from ``start`` on.
    Returns ``(Dep_K(S), near_ok, stop)``: ``stop`` is ``B`` at the end of the block, or the
    column that needs the lists while they are out of date; the caller then makes them with
    :func:`nearest_lists` (numpy's vectorised sort, which compiled code cannot call) and calls
    again from ``stop`` with ``near_ok`` True.
    """
    n, b = X.shape
    kn = k * n
    same = np.empty(n, dtype=np.int64)
    ssum = np.empty(n)
    dsum = np.empty(n)
    for c in range(start, b):
        d1 = dep1[c]
        dep_out[c] = 0.0
        if d1 <= alpha:  # a constant column's is 0, but in zhou mode (see KOFSD)
            decision[c] = 0
            continue
        if d1 > dep:
            # a single feature beats the whole selection: replace it
            D[:, :] = 0.0
            if var[c] > 0.0:  # a constant column alone: its neighbours are by index
                _add_inplace(D, X[:, c], var[c])
            near_ok = False
            _lossy_first(same1[:, c], ssum1[:, c], dsum1[:, c], is_large, k, card_code, gamma,
                         gamma1, gamma2, rows)  # fmt: skip
            dep = d1
            decision[c] = 1
            dep_out[c] = d1
            continue
        if var[c] == 0.0:
            # zhou mode: with a constant column, Dep(S + f) is its Dep({f}) <= Dep(S) (NaN
            # distances) or Dep(S) itself (zero ones): it never joins
            decision[c] = 3
            continue
        budget = kn - int(math.floor(dep * kn + 0.5))  # the loss of S, an integer
        if budget == 0:
            decision[c] = 3  # Dep(S) = 1 cannot be exceeded (in float too: every card <= 1)
            continue
        if not near_ok:
            return dep, near_ok, c
        stopped = joint_stats(D, near, X[:, c], var[c], y, k, include_self, same, ssum, dsum,
                              is_large, card_code, gamma, gamma1, gamma2, budget, zhou,
                              dep, rows)  # fmt: skip
        if stopped:
            decision[c] = 3
            continue
        dj = _dependency_of(same, ssum, dsum, is_large, k, card_code, gamma, gamma1, gamma2,
                            zhou)  # fmt: skip
        if dj > dep:
            _add_inplace(D, X[:, c], var[c])
            near_ok = False
            _lossy_first(same, ssum, dsum, is_large, k, card_code, gamma, gamma1, gamma2, rows)
            dep = dj
            decision[c] = 2
            dep_out[c] = dj
        else:
            decision[c] = 3
    return dep, near_ok, b


#: keys sorted at a time by :func:`nearest_lists` (8 MiB of them)
LIST_CHUNK_KEYS = 1 << 20


def nearest_lists(D: np.ndarray, out: np.ndarray) -> None:
    """``out[i]``: the ``m = out.shape[1]`` columns of row ``i`` of ``D`` (finite, no -0.0:
    squared distances) with the smallest values, ascending, ties by index.

    Each value's bits with the column index in the lowest ``ceil(log2 N)`` bits sort as
    unsigned integers in numpy's vectorised sort (as :func:`nearly_sorted_order`), which puts
    values equal in all but those bits in index order; :func:`_finish_lists` then orders
    each row's first ``m`` keys, and those equal to the ``m``-th in the other bits, exactly.
    For the bench's 180 x 180 distances with ``m = 64``: 0.85 ms with the sorted top list
    kept per row in compiled code that this replaces, 0.27 ms this way.
    """
    n = D.shape[0]
    m = out.shape[1]
    bits = max(1, (n - 1).bit_length())
    if m >= n or bits > _MAX_INDEX_BITS:
        out[:] = np.argsort(D, axis=1, kind="stable")[:, :m]
        return
    # a few rows' keys at a time: all N x N keys at once doubled the memory K-OFSD needs
    # (its guard counts D's 8 N^2 bytes; the peak was 16 N^2), for no gain in speed
    U = D.T.view(np.uint64)  # U[:, i] is row i of D
    step = max(1, LIST_CHUNK_KEYS // n)
    for r0 in range(0, n, step):
        r1 = min(n, r0 + step)
        keys = _packed_keys(U[:, r0:r1], bits)  # keys[i]: row r0 + i's
        keys.sort(axis=1)
        _finish_lists(keys, D[r0:r1], bits, out[r0:r1])
        del keys  # before the next chunk's: one chunk of keys alive at a time


@njit(cache=True, nogil=True)
def _finish_lists(keys, D, bits, out):
    """From each row's sorted packed keys (see :func:`nearest_lists`), its ``m`` nearest
    columns by ``(D, index)``: an insertion sort of the first ``m`` keys and of those after
    them that equal the ``m``-th but for the index bits (any later key is larger in the other
    bits, so its value is larger)."""
    rows, n = keys.shape
    m = out.shape[1]
    shift = np.uint64(bits)
    low = np.uint64((1 << bits) - 1)
    idx = np.empty(n, dtype=np.int64)
    for i in range(rows):
        row = D[i]
        last = keys[i, m - 1] >> shift
        size = m
        while size < n and keys[i, size] >> shift == last:
            size += 1
        for q in range(size):
            j = np.int64(keys[i, q] & low)
            v = row[j]
            p = q
            # stable: the keys bring equal values in index order
            while p > 0 and row[idx[p - 1]] > v:
                idx[p] = idx[p - 1]
                p -= 1
            idx[p] = j
        for q in range(m):
            out[i, q] = idx[q]


@njit(cache=True, nogil=True)
def _add_inplace(D, x, var):
    n = x.shape[0]
    for i in range(n):
        xi = x[i]
        for j in range(n):
            dd = xi - x[j]
            D[i, j] = D[i, j] + dd * dd / var


def add_feature(D: np.ndarray | None, x: np.ndarray, var: float) -> np.ndarray:
    """``D + (x_i - x_j)**2 / var``, in place (``D=None`` means the empty subset: a new array)."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    if D is None:
        D = np.zeros((x.shape[0], x.shape[0]))
    _add_inplace(D, x, float(var))
    return D


def row_order(D: np.ndarray, m: int | None = None) -> np.ndarray:
    """The ``m`` (default: all) nearest columns of each row of ``D``, ascending."""
    n = D.shape[0]
    out = np.empty((n, n if m is None else min(m, n)), dtype=np.int32)
    nearest_lists(D, out)
    return out


def fallback_count(p: int) -> int:
    """``round(sqrt(p))`` with halves away from zero (MATLAB ``round``)."""
    return round_half_away(math.sqrt(p))
