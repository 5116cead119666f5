"""Numba kernels behind :mod:`streamfs.algorithms.ofs` (instance-stream OFS family; called from
its base class, :mod:`streamfs.algorithms.instance_stream`).

The weight vector is stored lazily as ``w = scale * v``: the OFS decay ``(1 - lambda*eta)`` and
the L2-ball projection are uniform rescalings, so they only touch the scalar ``scale``. The
support (non-zero coordinates of ``v``) lives in an indexed 4-ary min-heap keyed by
``(|v_i|, -i)``. Rescaling ``w`` leaves ``v`` and hence the heap untouched, so truncation to
the ``B`` largest weights only has to look at the coordinates an update touched:

* touched coordinates already in the support change their key in place (``O(log B)`` each);
* new coordinates enter a bounded heap: pushed while it holds fewer than ``B`` entries, else
  they replace the minimum when larger and are dropped otherwise.

The result is exactly the top ``B`` of ``old support U touched`` (ties broken towards the
lower index), which is the top ``B`` of the whole vector because untouched coordinates outside
the support are zero. ``sq`` holds ``sum(v_i**2)`` over the support, updated incrementally and
recomputed from scratch once enough incremental edits have accumulated (amortised ``O(1)``),
so the per-instance cost is ``O(nnz(x) log B)``, independent of ``d`` (partial-input
learners: ``O(nnz(x) + B)``; online standardisation of full input: ``O(d)``). When the decay
has pushed ``|scale|`` below ``1e-100`` it is folded into ``v`` (``O(B)``, about once every
115,000 instances with the paper's parameters).

Randomness comes from an in-kernel PCG64 (XSL-RR 128/64, bit-identical to
``numpy.random.PCG64.random_raw``) whose 128-bit state sits in a ``uint64[4]`` array
``[state_hi, state_lo, inc_hi, inc_lo]`` so that the draws happen inside the compiled loop,
one instance at a time, whatever the block size.

Array arguments shared by the kernels (allocated by the Python layer):

``member``  bitmap of the support (bit ``i`` set iff ``hpos[i] >= 0``)
``nbuf``, ``nval``  the coordinates an update brings outside the support, and their values

``fp``  float params  ``[eta, decay, radius, threshold, epsilon]``
``ip``  int params    ``[B, d, norm_mode, obs_mode, weighted]``
``fst`` float state   ``[scale, sq]``
``ist`` int state     ``[heap_size, edits_since_recompute, n_seen, mistakes, n_updates, stamp]``

``norm_mode``: 0 none, 1 unit L2 norm, 2 online standardise (all ``d`` features) then unit L2
norm, 3 online standardise of the observed features only, divided by ``sqrt(d)``.
``obs_mode``: 0 full input, 1 OFS_P (explore with probability epsilon, else the support),
2 ``B`` random attributes per instance, 3 a fixed feature mask (RAND), 4 full input with the
support cut to a fresh random draw of ``B`` attributes after every update (RAND as the
authors' experiment scripts run it).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

# --------------------------------------------------------------------------- PCG64 (XSL-RR)
_M32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)
_MULT_HI = np.uint64(0x2360ED051FC65DA4)
_MULT_LO = np.uint64(0x4385DF649FCCF645)
_U0 = np.uint64(0)
_U1 = np.uint64(1)
_U11 = np.uint64(11)
_U58 = np.uint64(58)
_U63 = np.uint64(63)
_U64 = np.uint64(64)
_INV53 = 1.0 / 9007199254740992.0


@njit(cache=True, nogil=True)
def _mulhi64(a, b):
    """High 64 bits of the 128-bit product of two uint64."""
    a_lo = a & _M32
    a_hi = a >> _S32
    b_lo = b & _M32
    b_hi = b >> _S32
    p0 = a_lo * b_lo
    p1 = a_lo * b_hi
    p2 = a_hi * b_lo
    p3 = a_hi * b_hi
    mid = (p0 >> _S32) + (p1 & _M32) + (p2 & _M32)
    return p3 + (p1 >> _S32) + (p2 >> _S32) + (mid >> _S32)


@njit(cache=True, nogil=True)
def pcg_next(rng):
    """Advance the PCG64 state and return the next raw uint64 (numpy's stream)."""
    s_hi = rng[0]
    s_lo = rng[1]
    # state = state * MULT + inc  (mod 2**128)
    lo = s_lo * _MULT_LO
    hi = _mulhi64(s_lo, _MULT_LO) + s_hi * _MULT_LO + s_lo * _MULT_HI
    lo2 = lo + rng[3]
    carry = _U1 if lo2 < lo else _U0
    hi = hi + rng[2] + carry
    rng[0] = hi
    rng[1] = lo2
    x = hi ^ lo2
    r = hi >> _U58
    return (x >> r) | (x << ((_U64 - r) & _U63))


@njit(cache=True, nogil=True)
def pcg_double(rng):
    """Uniform double in [0, 1) with 53 random bits (numpy's ``random()`` recipe)."""
    return np.float64(pcg_next(rng) >> _U11) * _INV53


@njit(cache=True, nogil=True)
def pcg_bounded(rng, n):
    """Uniform integer in ``[0, n)`` by Lemire's multiply-and-reject (unbiased)."""
    un = np.uint64(n)
    x = pcg_next(rng)
    lo = x * un
    if lo < un:
        t = (_U0 - un) % un
        while lo < t:
            x = pcg_next(rng)
            lo = x * un
    return np.int64(_mulhi64(x, un))


@njit(cache=True, nogil=True)
def pcg_raw(rng, n):
    """``n`` raw draws (used by the tests to check the stream against numpy)."""
    out = np.empty(n, dtype=np.uint64)
    for k in range(n):
        out[k] = pcg_next(rng)
    return out


# --------------------------------------------------------------------------- indexed min-heap
# 4-ary: half the depth of a binary heap, which pays off when B is large and evictions frequent.
# ``heap[p]`` is a feature, ``hkey[p] = |v[heap[p]]|`` its key stored alongside so that sifting
# reads contiguous memory instead of gathering from ``v``; ``hpos[i]`` is i's heap position.
# The small helpers here are compiled into the learners' loops (``inline="always"``): as
# calls they cost the bench's OFS keeping 1,000 features about 7 % of its learning time.
@njit(cache=True, nogil=True, inline="always")
def _less(ka, a, kb, b):
    # heap order: smaller |v| first; on ties the larger index is "smaller" (dropped first)
    return ka < kb or (ka == kb and a > b)


# ``member`` is a bitmap of the support (bit i set <=> hpos[i] >= 0): d / 8 bytes stay in the
# L2 cache where ``v`` and ``hpos`` (12 bytes per feature) do not, so the common case of a
# wide sparse instance, nearly all of whose coordinates lie outside the support, reads no
# cache line of ``v`` or ``hpos`` at all.
@njit(cache=True, nogil=True, inline="always")
def _is_member(member, i):
    return (member[i >> 3] >> (i & 7)) & 1 != 0


@njit(cache=True, nogil=True, inline="always")
def _set_member(member, i):
    member[i >> 3] |= 1 << (i & 7)


@njit(cache=True, nogil=True, inline="always")
def _clear_member(member, i):
    member[i >> 3] &= ~(1 << (i & 7))


@njit(cache=True, nogil=True)
def set_members(member, heap, n):
    """Set the bits of ``heap[:n]`` (a restored support)."""
    for p in range(n):
        _set_member(member, heap[p])


@njit(cache=True, nogil=True, inline="always")
def _sift_up(heap, hkey, hpos, p):
    i = heap[p]
    ki = hkey[p]
    while p > 0:
        q = (p - 1) >> 2
        j = heap[q]
        if _less(ki, i, hkey[q], j):
            heap[p] = j
            hkey[p] = hkey[q]
            hpos[j] = p
            p = q
        else:
            break
    heap[p] = i
    hkey[p] = ki
    hpos[i] = p


@njit(cache=True, nogil=True, inline="always")
def _sift_down(heap, hkey, hpos, p, n):
    i = heap[p]
    ki = hkey[p]
    while True:
        c = 4 * p + 1
        if c >= n:
            break
        # smallest of up to four children (adjacent in memory: one or two cache lines)
        end = min(c + 4, n)
        for e in range(c + 1, end):
            if _less(hkey[e], heap[e], hkey[c], heap[c]):
                c = e
        j = heap[c]
        if _less(hkey[c], j, ki, i):
            heap[p] = j
            hkey[p] = hkey[c]
            hpos[j] = p
            p = c
        else:
            break
    heap[p] = i
    hkey[p] = ki
    hpos[i] = p


@njit(cache=True, nogil=True, inline="always")
def _min2(heap, hkey, a, b):
    # the smaller of two heap positions, without a branch (the outcome is a coin flip)
    ka = hkey[a]
    kb = hkey[b]
    b_first = (kb < ka) | ((kb == ka) & (heap[b] > heap[a]))
    return b if b_first else a


@njit(cache=True, nogil=True, inline="always")
def _replace_min(heap, hkey, hpos, i, ki, n):
    """Put ``i`` (key ``ki``) in place of the minimum of a heap of ``n >= 1`` entries.

    Bottom-up (Floyd): the hole left by the minimum descends along the smaller children to a
    leaf, then ``i`` sifts up from there. An entrant usually belongs near the leaves (the
    projection keeps shrinking ``scale``, so newer weights are larger in ``v``'s units), and
    the descent compares only the children, not each of them with ``i`` as well."""
    p = 0
    while True:
        c = 4 * p + 1
        if c >= n:
            break
        if c + 4 <= n:
            c = _min2(heap, hkey, _min2(heap, hkey, c, c + 1), _min2(heap, hkey, c + 2, c + 3))
        else:
            for e in range(c + 1, n):
                c = _min2(heap, hkey, c, e)
        j = heap[c]
        heap[p] = j
        hkey[p] = hkey[c]
        hpos[j] = p
        p = c
    heap[p] = i
    hkey[p] = ki
    hpos[i] = p
    _sift_up(heap, hkey, hpos, p)


@njit(cache=True, nogil=True, inline="always")
def _heap_remove(heap, hkey, hpos, p, n):
    """Remove the entry at heap position ``p``; return the new size."""
    i = heap[p]
    n -= 1
    if p < n:
        last = heap[n]
        heap[p] = last
        hkey[p] = hkey[n]
        hpos[last] = p
        _sift_up(heap, hkey, hpos, p)
        _sift_down(heap, hkey, hpos, hpos[last], n)
    hpos[i] = -1
    return n


@njit(cache=True, nogil=True)
def heapify(heap, hkey, hpos, v, n):
    """Rebuild keys, positions and heap order of ``heap[:n]`` (after a restore or a fold)."""
    for p in range(n):
        hpos[heap[p]] = p
        hkey[p] = abs(v[heap[p]])
    for p in range((n - 2) // 4, -1, -1):
        _sift_down(heap, hkey, hpos, p, n)


# --------------------------------------------------------------------------- update rule
@njit(cache=True, nogil=True)
def _recompute_sq(heap, v, fst, ist):
    s = 0.0
    for p in range(ist[0]):
        s += v[heap[p]] ** 2
    fst[1] = s
    ist[1] = 0


@njit(cache=True, nogil=True)
def _fold_scale(heap, hkey, hpos, v, fst, ist):
    # keep v = w / scale representable when the decay has shrunk ``scale`` a lot (rare);
    # re-heapify because rounding may turn near-ties into ties
    sc = fst[0]
    for p in range(ist[0]):
        v[heap[p]] *= sc
    fst[0] = 1.0
    heapify(heap, hkey, hpos, v, ist[0])
    _recompute_sq(heap, v, fst, ist)


@njit(cache=True, nogil=True)
def _learn_step(idx, val, m, ysign, score, v, hpos, member, heap, hkey, nbuf, nval, fp, ip, fst,
                ist):
    """One prequential step after the prediction ``score`` on the (scaled, observed) entries
    ``idx[:m], val[:m]`` (distinct indices, non-zero values)."""
    margin = ysign * score
    if margin <= 0.0:
        ist[3] += 1
    fst[0] *= fp[1]  # the decay applies whether or not the instance triggers an update
    if margin > fp[3]:
        if abs(fst[0]) < 1e-100:
            _fold_scale(heap, hkey, hpos, v, fst, ist)
        return
    ist[4] += 1
    if abs(fst[0]) < 1e-100:
        _fold_scale(heap, hkey, hpos, v, fst, ist)
    B = ip[0]
    eps = fp[4]
    weighted = ip[4] == 1
    pfrac = ip[0] / ip[1] * eps
    step = fp[0] * ysign / fst[0]
    n = ist[0]
    sq = fst[1]
    sq_new = 0.0
    n_new = 0
    edits = 0
    # phase 1: coordinates already in the support change in place; new ones are set aside
    for k in range(m):
        i = idx[k]
        x = val[k]
        p = hpos[i] if _is_member(member, i) else -1
        if weighted:
            # importance weight 1/P(i observed): (B/d) eps + 1[w_i != 0] (1 - eps)
            x = x / (pfrac + (1.0 - eps if p >= 0 else 0.0))
        delta = step * x
        if delta == 0.0:
            continue
        if p >= 0:
            old = v[i]
            new = old + delta
            v[i] = new
            sq += new * new - old * old
            edits += 1
            if new == 0.0:
                n = _heap_remove(heap, hkey, hpos, p, n)
                _clear_member(member, i)
            else:
                hkey[p] = abs(new)
                _sift_up(heap, hkey, hpos, p)
                _sift_down(heap, hkey, hpos, hpos[i], n)
        else:
            # v[i] is written only if i enters the support (a cache miss saved per dropped one)
            sq_new += delta * delta
            nbuf[n_new] = i
            nval[n_new] = delta
            n_new += 1
    # phase 2: projection onto the L2 ball of radius ``radius`` (uniform, order-preserving)
    tot = sq + sq_new
    if not tot < np.inf:
        # the squared norm overflowed: the projection would zero w and hide it. A NaN scale
        # spreads to every later score and weight, and the caller reports the model void.
        fst[0] = np.nan
    if tot < 0.0:
        tot = 0.0
    norm = abs(fst[0]) * np.sqrt(tot)
    if norm > fp[2]:
        fst[0] *= fp[2] / norm
    # phase 3: truncation to the B largest |w_i| over (old support U touched)
    while n > B:
        j = heap[0]
        sq -= v[j] * v[j]
        v[j] = 0.0
        n = _heap_remove(heap, hkey, hpos, 0, n)
        _clear_member(member, j)
        edits += 1
    for k in range(n_new):
        i = nbuf[k]
        x = nval[k]
        ki = abs(x)
        if n < B:
            v[i] = x
            heap[n] = i
            hkey[n] = ki
            hpos[i] = n
            _set_member(member, i)
            n += 1
            _sift_up(heap, hkey, hpos, n - 1)
            sq += x * x
            edits += 1
        elif _less(hkey[0], heap[0], ki, i):
            j = heap[0]
            sq -= v[j] * v[j]
            v[j] = 0.0
            hpos[j] = -1
            _clear_member(member, j)
            v[i] = x
            _set_member(member, i)
            _replace_min(heap, hkey, hpos, i, ki, n)
            sq += x * x
            edits += 2
    ist[0] = n
    if not sq < np.inf:  # a weight overflowed (inf, or inf - inf): the model is void, as above
        fst[0] = np.nan
    fst[1] = sq if sq > 0.0 else 0.0
    ist[1] += edits
    if ist[1] > 4 * (n + 16):
        _recompute_sq(heap, v, fst, ist)


# --------------------------------------------------------------------------- scaling
# Running z-scores are scale-free, but their sums of squares are not: a column whose values
# all lie near 1e-200 has squared deviations that underflow to 0, a variance of 0 and
# z-scores of 0. So each column's statistics are kept in units of its own: ``unit[j]``, a
# power of two (1 until needed), multiplies its values first. Powers of two scale exactly,
# so the z-scores are those of exact arithmetic, and a column that never needs it (1.0)
# computes bit for bit as without it.
_TINY = 2.0**-400  # a column whose values and statistics all lie below this is scaled up
_HUGE = 2.0**400  # a value above this in a scaled-up column scales it back towards 1
_MAX_EXP = 1000  # largest power of two a unit may reach


@njit(cache=True, nogil=True, inline="always")
def _unit_change(u, x, mean_j, m2_j):
    """The power of two to multiply column ``j``'s unit ``u`` (and its statistics, in those
    units) by before taking ``x``: 1.0 unless ``x u`` and the statistics are all tiny (scale
    up, so that the largest becomes about 1) or ``x u`` is huge in a scaled-up column (scale
    back down, at most to a unit of 1)."""
    a = abs(x) * u
    if a == 0.0:
        return 1.0
    if a < _TINY:
        big = max(a, abs(mean_j), math.sqrt(m2_j))
        if big >= _TINY:
            return 1.0
        e = math.frexp(big)[1]  # big < 2**e
        room = _MAX_EXP - (math.frexp(u)[1] - 1)  # u = 2**(frexp exponent - 1)
        return math.ldexp(1.0, min(-e, room))
    if u > 1.0 and abs(x) > _HUGE / u:
        target = max(1.0, math.ldexp(1.0, -math.frexp(x)[1]))  # brings |x| under 1
        return target / u
    return 1.0


@njit(cache=True, nogil=True, inline="always")
def _rescale(unit, mean, m2, j, g):
    unit[j] *= g
    mean[j] *= g
    m2[j] = m2[j] * g * g


@njit(cache=True, nogil=True)
def _welford(cnt, mean, m2, unit, j, x):
    g = _unit_change(unit[j], x, mean[j], m2[j])
    if g != 1.0:
        _rescale(unit, mean, m2, j, g)
    x = x * unit[j]
    cnt[j] += 1.0
    d1 = x - mean[j]
    mean[j] += d1 / cnt[j]
    m2[j] += d1 * (x - mean[j])


@njit(cache=True, nogil=True)
def _zscore(cnt, mean, m2, unit, j, x):
    if cnt[j] <= 0.0:
        return x
    # without learning, the statistics stay as they are: a change of units is local
    g = _unit_change(unit[j], x, mean[j], m2[j])
    u = unit[j] * g
    var = m2[j] * g * g / cnt[j]
    if var <= 0.0:
        return 0.0
    return (x * u - mean[j] * g) / np.sqrt(var)


@njit(cache=True, nogil=True, inline="always")
def _unit_norm(val, m):
    s = 0.0
    for k in range(m):
        s += val[k] * val[k]
    if s > 0.0:
        inv = 1.0 / np.sqrt(s)
        for k in range(m):
            val[k] *= inv


@njit(cache=True, nogil=True)
def _compact_nonzero(idx, val, m):
    q = 0
    for k in range(m):
        if val[k] != 0.0:
            idx[q] = idx[k]
            val[q] = val[k]
            q += 1
    return q


@njit(cache=True, nogil=True, inline="always")
def _score(idx, val, m, v, member, fst):
    s = 0.0
    for k in range(m):
        i = idx[k]
        if _is_member(member, i):
            s += v[i] * val[k]
    return fst[0] * s


# --------------------------------------------------------------------------- full input
@njit(cache=True, nogil=True)
def _sample(cidx, mark, rng, k, d, ist):
    """Draw ``k`` distinct attributes out of ``d`` into ``cidx[:k]`` (Floyd's sampling, O(k))
    and mark them with the stamp ``ist[5] + 1``; return the stamp."""
    stamp = ist[5] + 1
    ist[5] = stamp
    m = 0
    for j in range(d - k, d):
        t = pcg_bounded(rng, j + 1)
        if mark[t] == stamp:
            t = j
        mark[t] = stamp
        cidx[m] = t
        m += 1
    return stamp


@njit(cache=True, nogil=True)
def _redraw_support(v, hpos, member, heap, hkey, nbuf, mark, rng, ip, fst, ist):
    """RAND as in the authors' scripts: after an update keep only the coordinates that fall
    in a fresh uniform draw of ``B`` attributes out of ``d`` (O(B + support))."""
    stamp = _sample(nbuf, mark, rng, min(ip[0], ip[1]), ip[1], ist)
    q = 0
    for p in range(ist[0]):
        i = heap[p]
        if mark[i] == stamp:
            heap[q] = i
            q += 1
        else:
            v[i] = 0.0
            hpos[i] = -1
            _clear_member(member, i)
    ist[0] = q
    heapify(heap, hkey, hpos, v, q)
    _recompute_sq(heap, v, fst, ist)


@njit(cache=True, nogil=True)
def run_full(indptr, indices, data, ysign, learn, v, hpos, member, heap, hkey, nbuf, nval, widx,
             wval, xbuf, cnt, mean, m2, unit, allowed, mark, rng, fp, ip, fst, ist, out):
    """Full-input learners (OFS, PE_trun, RAND) over a CSR block; ``out`` gets the scores
    predicted before learning each row."""
    d = ip[1]
    norm_mode = ip[2]
    fixed = ip[3] == 3
    redraw = ip[3] == 4
    for r in range(indptr.shape[0] - 1):
        a = indptr[r]
        b = indptr[r + 1]
        m = 0
        if norm_mode == 2:
            for p in range(a, b):
                xbuf[indices[p]] = data[p]
            # every feature is updated with every instance: one shared count, one division
            c = cnt[0] + 1.0 if learn else cnt[0]
            inv_c = 1.0 / c if c > 0.0 else 0.0
            for j in range(d):
                x = xbuf[j]
                if c <= 0.0:
                    z = x
                else:
                    # in column j's units (_unit_change); 1.0 but for all-tiny columns
                    g = _unit_change(unit[j], x, mean[j], m2[j])
                    if g != 1.0:
                        if learn:
                            _rescale(unit, mean, m2, j, g)
                            g = 1.0
                    xs = x * (unit[j] * g)
                    mj = mean[j] * g
                    if learn:
                        cnt[j] = c
                        d1 = xs - mj
                        mj += d1 * inv_c
                        mean[j] = mj
                        m2[j] += d1 * (xs - mj)
                    var = m2[j] * g * g * inv_c
                    z = (xs - mj) / np.sqrt(var) if var > 0.0 else 0.0
                if z != 0.0:
                    widx[m] = j
                    wval[m] = z
                    m += 1
            for p in range(a, b):
                xbuf[indices[p]] = 0.0
        else:
            for p in range(a, b):
                if data[p] != 0.0:
                    widx[m] = indices[p]
                    wval[m] = data[p]
                    m += 1
        if norm_mode == 1 or norm_mode == 2:
            _unit_norm(wval, m)
        if fixed:
            q = 0
            for k in range(m):
                if allowed[widx[k]]:
                    widx[q] = widx[k]
                    wval[q] = wval[k]
                    q += 1
            m = q
        s = _score(widx, wval, m, v, member, fst)
        out[r] = s
        if learn:
            ist[2] += 1
            if redraw:
                # w + eta y x untruncated (B = d), then the random mask replaces truncation
                B = ip[0]
                ip[0] = d
                updates = ist[4]
                _learn_step(widx, wval, m, ysign[r], s, v, hpos, member, heap, hkey, nbuf,
                            nval, fp, ip, fst, ist)
                ip[0] = B
                if ist[4] != updates:
                    _redraw_support(v, hpos, member, heap, hkey, nbuf, mark, rng, ip, fst, ist)
            else:
                _learn_step(widx, wval, m, ysign[r], s, v, hpos, member, heap, hkey, nbuf,
                            nval, fp, ip, fst, ist)


# --------------------------------------------------------------------------- partial input
@njit(cache=True, nogil=True)
def choose(cidx, heap, mark, rng, fp, ip, ist):
    """Pick the attributes to observe for the next instance into ``cidx``; return their
    number. OFS_P explores ``B`` random attributes with probability epsilon (one uniform
    draw), else observes the support; obs_mode 2 always draws ``B`` random attributes."""
    B = ip[0]
    d = ip[1]
    explore = True
    if ip[3] == 1:
        explore = pcg_double(rng) < fp[4]
    if not explore:
        n = ist[0]
        for p in range(n):
            cidx[p] = heap[p]
        return n
    k = min(B, d)
    _sample(cidx, mark, rng, k, d, ist)
    return k


@njit(cache=True, nogil=True)
def _partial_scale(widx, wval, m, learn, cnt, mean, m2, unit, ip):
    if ip[2] == 3:
        inv = 1.0 / np.sqrt(ip[1])
        for k in range(m):
            j = widx[k]
            if learn:
                _welford(cnt, mean, m2, unit, j, wval[k])
            wval[k] = _zscore(cnt, mean, m2, unit, j, wval[k]) * inv
    return _compact_nonzero(widx, wval, m)


@njit(cache=True, nogil=True)
def learn_observed(cidx, vals, m, ysign, v, hpos, member, heap, hkey, nbuf, nval, widx, wval, cnt,
                   mean, m2, unit, fp, ip, fst, ist):
    """Learn from the values ``vals[:m]`` of the attributes ``cidx[:m]`` chosen by
    :func:`choose`; return the score predicted before learning."""
    for k in range(m):
        widx[k] = cidx[k]
        wval[k] = vals[k]
    q = _partial_scale(widx, wval, m, True, cnt, mean, m2, unit, ip)
    s = _score(widx, wval, q, v, member, fst)
    ist[2] += 1
    _learn_step(widx, wval, q, ysign, s, v, hpos, member, heap, hkey, nbuf, nval, fp, ip, fst,
                ist)
    return s


@njit(cache=True, nogil=True)
def run_partial(indptr, indices, data, ysign, learn, v, hpos, member, heap, hkey, nbuf, nval, widx,
                wval, cidx, xbuf, mark, rng, cnt, mean, m2, unit, fp, ip, fst, ist, out):
    """Partial-input learners over a CSR block: for each row choose the attributes, read
    only those, predict, learn. Without ``learn`` the prediction observes the support.

    Returns ``(-1, 0)``, or ``(r, m)`` when row ``r`` has a NaN or infinite value among the
    ``m`` attributes read (``widx[:m]``, ``wval[:m]``): the rows before it are learned, row
    ``r`` is not (its draw is undone: the generator is as before it)."""
    saved = np.empty(4, dtype=np.uint64)
    for r in range(indptr.shape[0] - 1):
        a = indptr[r]
        b = indptr[r + 1]
        for p in range(a, b):
            xbuf[indices[p]] = data[p]
        if learn:
            saved[:] = rng
            m = choose(cidx, heap, mark, rng, fp, ip, ist)
        else:
            m = ist[0]
            for p in range(m):
                cidx[p] = heap[p]
        finite = True
        for k in range(m):
            widx[k] = cidx[k]
            wval[k] = xbuf[cidx[k]]
            if not np.isfinite(wval[k]):
                finite = False
        for p in range(a, b):
            xbuf[indices[p]] = 0.0
        if not finite:
            if learn:
                # the stamp ist[5] stays advanced: stamps only have to be new, and the marks
                # of the undone draw carry the old one
                rng[:] = saved
            return r, m
        q = _partial_scale(widx, wval, m, learn, cnt, mean, m2, unit, ip)
        s = _score(widx, wval, q, v, member, fst)
        out[r] = s
        if learn:
            ist[2] += 1
            _learn_step(widx, wval, q, ysign[r], s, v, hpos, member, heap, hkey, nbuf, nval, fp, ip,
                        fst, ist)
    return -1, 0


# --------------------------------------------------------------------------- input conversion
@njit(cache=True, nogil=True)
def dense_to_csr(A):
    """CSR arrays of a C-contiguous dense block, zeros dropped (scipy's conversion is ~10x
    slower and would dominate the dense throughput)."""
    n, d = A.shape
    indptr = np.zeros(n + 1, dtype=np.int64)
    for r in range(n):
        c = 0
        for j in range(d):
            if A[r, j] != 0.0:
                c += 1
        indptr[r + 1] = indptr[r] + c
    indices = np.empty(indptr[n], dtype=np.int64)
    data = np.empty(indptr[n], dtype=np.float64)
    q = 0
    for r in range(n):
        for j in range(d):
            x = A[r, j]
            if x != 0.0:
                indices[q] = j
                data[q] = x
                q += 1
    return indptr, indices, data
