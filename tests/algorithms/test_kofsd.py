"""Tests of K-OFSD and the K-nearest-neighbour dependency measures."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.exceptions import DataConversionWarning

from streamfs import codec
from streamfs.algorithms.kofsd import KOFSD

# the streams() strategy also draws zhou streams without a label 0 (they warn, as they should)
pytestmark = pytest.mark.filterwarnings('ignore:compat="zhou" treats the label 0:UserWarning')
from streamfs.algorithms.neighbourhood import (
    CARDS,
    _card_from_stats,
    _mean_card,
    card_values,
    k_nearest,
    knn_dependency,
    large_class_code,
    sample_variances,
    sq_distances,
)
from streamfs.algorithms.neighbourhood_kernels import (
    _counted_windows,
    _card_num,
    add_feature,
    dependency_from_stats,
    fallback_count,
    joint_stats,
    nearly_sorted_order,
    row_order,
    single_feature_stats,
)

# ------------------------------------------------------------------------------ helpers


def zhou_constant_dependency(x, y, k, card, **gammas):
    """The authors' ``Dep_K`` of a constant column ``x``: its distances are NaN (MATLAB's std
    is 0), the neighbours of an instance the first ``k`` others by index, or all 0 (its mean
    rounds away from the value: a tiny std), the neighbours the instances 1..k (0-based)."""
    classes, y_enc = np.unique(np.asarray(y), return_inverse=True)
    n = y_enc.size
    nan = np.cumsum(x)[-1] / n == x[0]
    nb = np.array([[j for j in range(n) if j != i][:k] if nan else list(range(1, k + 1))
                   for i in range(n)])
    cards = card_values(y_enc, nb, np.zeros(nb.shape), large_class_code(classes, y_enc, "zhou"),
                        card, **gammas)
    return float(_mean_card(cards[:, None], k, "zhou")[0])


def reference_kofsd(X, y, k=7, alpha=0.5, card="imbalanced", compat=None, **gammas):
    """Algorithm 5 written directly on the brute-force ``knn_dependency``."""
    S: list[int] = []
    dep = 0.0
    singles = []
    var = sample_variances(X)
    by_index = compat == "zhou" and card != "distance"  # constant columns (see KOFSD)
    for f in range(X.shape[1]):
        if var[f] == 0:
            d1 = zhou_constant_dependency(X[:, f], y, k, card, **gammas) if by_index else 0.0
        else:
            d1 = knn_dependency(X[:, [f]], y, k, card, compat, **gammas)
        singles.append(d1)
        if d1 <= alpha:
            continue
        if d1 > dep:
            S, dep = [f], d1
            continue
        if var[f] == 0 or var[S[0]] == 0:  # NaN distances: Dep(S + f) = the constant's
            continue  # Dep, or zero ones: the other's, and neither exceeds Dep(S)
        dj = knn_dependency(X[:, S + [f]], y, k, card, compat, **gammas)
        if dj > dep:
            S, dep = S + [f], dj
    if compat == "zhou" and not S:
        order = np.argsort(-np.asarray(singles), kind="stable")
        return order[: fallback_count(X.shape[1])].tolist(), 0.0
    return S, dep


def assert_same_state(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for key in a:
        va, vb = a[key], b[key]
        if isinstance(va, dict):
            assert_same_state(va, vb)
        elif isinstance(va, np.ndarray):
            assert va.dtype == vb.dtype and np.array_equal(va, vb), key
        else:
            assert va == vb, key


def assert_plain(value) -> None:
    """The state holds only the types ``streamfs.codec`` encodes."""
    if isinstance(value, dict):
        for key, v in value.items():
            assert isinstance(key, (str, int)) and not isinstance(key, bool)
            assert_plain(v)
    elif isinstance(value, list):
        for v in value:
            assert_plain(v)
    elif isinstance(value, int):
        assert -(2**63) <= value < 2**64
    else:
        plain = (bool, float, str, bytes, np.ndarray)
        assert value is None or isinstance(value, plain), type(value)


@st.composite
def streams(draw, continuous=False, compat_allowed=True):
    """Small random streams: ``(X, y, params)``; integer-valued data has many ties."""
    n = draw(st.integers(10, 28))
    p = draw(st.integers(1, 10))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    if continuous or draw(st.booleans()):
        X = rng.normal(size=(n, p)) * rng.uniform(0.1, 10, size=p)
    else:
        X = rng.integers(0, draw(st.integers(1, 5)), size=(n, p)).astype(float)
    n_classes = draw(st.integers(2, 3))
    # labels 0.. or 1.. (zhou without a label 0: no instance is in the large class)
    y = np.r_[np.arange(n_classes), rng.integers(0, n_classes, size=n - n_classes)]
    y = y + draw(st.sampled_from([0, 0, 1]))
    rng.shuffle(y)
    # a few informative columns so that selections are not always empty
    for c in range(p):
        if rng.random() < 0.4:
            X[:, c] += 3.0 * (y == 1)
    params = dict(
        k=draw(st.integers(1, 5)),
        alpha=draw(st.sampled_from([0.0, 0.3, 0.5, 0.7])),
        card=draw(st.sampled_from(CARDS)),
        compat=draw(st.sampled_from([None, "zhou"])) if compat_allowed else None,
    )
    return X, y, params


# ------------------------------------------------------------------------------ neighbours


# The paper's Table 1 (x1 .. x8; features f1..f4, class d)
PAPER_TABLE = np.array(
    [
        [3, 5.6, -66, 3.05],
        [5, 6.9, 95, 4.84],
        [8, 5.3, -28, 5.89],
        [13, 12.3, -35, 6.14],
        [6, 15.2, 72, 6.55],
        [5, 2.6, 42, 10.94],
        [9, 5.8, -33, 23.85],
        [15, 6.4, 15, 23.85],
    ]
)
PAPER_D = np.array([-1, 1, 1, 1, -1, 1, -1, -1])


def test_paper_table1_neighbours_of_x3():
    """Worked example of the paper: plain Euclidean distance on B = {f1, f2}; the 2 nearest
    neighbours of x3 are x7 and x2."""
    D = sq_distances(PAPER_TABLE[:, :2], var=np.ones(2))
    dist = np.sqrt(D[2])
    # the paper's distances from x3 (3 decimals): x1 5.009, x2 3.4, x4 8.602, x5 10.1,
    # x6 4.036, x7 1.118, x8 7.086
    paper = {0: 5.009, 1: 3.4, 3: 8.602, 4: 10.1, 5: 4.036, 6: 1.118, 7: 7.086}
    for j, d in paper.items():
        assert round(dist[j], 3) == d, j
    assert k_nearest(D, 2)[2].tolist() == [6, 1]  # x7, then x2
    assert k_nearest(D, 2, "zhou")[2].tolist() == [6, 1]  # no duplicate of x3: same
    # x3 (d = 1) has one neighbour of each class: p / n = 1/2 with every card's default
    cards = {c: card_values(PAPER_D, k_nearest(D, 2), np.sqrt(np.take_along_axis(
        D, k_nearest(D, 2), axis=1)), 0, c)[2] for c in CARDS}  # fmt: skip
    # imbalanced: labels -1/1 tie 4:4, the large class is -1 (first in sorted order); x3 is
    # small: 1/2. consistency: 0. weight: 1/2 is not > 0.5: 0. distance: 1/2 is between
    # 0.25 and 0.75; same-label x2 at 3.4 is farther than x7 at 1.118: 0
    assert cards == {"imbalanced": 0.5, "consistency": 0.0, "weight": 0.0, "distance": 0.0}


# Hand-built table: plain Euclidean distances on {f1, f2}.
TABLE = np.array(
    [[0, 0], [1, 0], [2, 1], [5, 5], [6, 5], [0, 4], [2, 2], [4, 0]], dtype=float
)  # x1 .. x8


def test_neighbours_of_x3_on_hand_table():
    D = sq_distances(TABLE, var=np.ones(2))
    # from x3 = (2, 1): x7 at 1, x2 at sqrt(2), then x1 and x8 both at sqrt(5) -> x1 (index)
    assert k_nearest(D, 2)[2].tolist() == [6, 1]  # {x7, x2}
    assert k_nearest(D, 4)[2].tolist() == [6, 1, 0, 7]
    assert math.isclose(D[2, 0], 5.0) and D[2, 0] == D[2, 7]


def test_zhou_neighbours_may_include_the_instance_itself():
    X = np.array([[1.0], [1.0], [3.0], [4.0]])
    D = sq_distances(X)
    # default: the other duplicate first, then by distance
    assert k_nearest(D, 2).tolist() == [[1, 2], [0, 2], [3, 0], [2, 0]]
    # stable sort of row 1 is [x0, x1, x2, x3]: positions 2..3 are x1 (itself) and x2
    assert k_nearest(D, 2, "zhou").tolist() == [[1, 2], [1, 2], [3, 0], [2, 0]]


def test_standardised_distance_uses_sample_variance():
    X = np.array([[0.0, 0.0], [2.0, 10.0], [4.0, 20.0]])
    # var_f1 = 4, var_f2 = 100 (N - 1): each feature contributes (2/2)^2 + (10/10)^2 = 2
    D = sq_distances(X)
    assert D[0, 1] == 2.0 and D[0, 2] == 8.0
    assert sample_variances(X).tolist() == [4.0, 100.0]


# ------------------------------------------------------------------------------ dependency

# 1-D data, K = 2: neighbours (0-based) 0:{1,2} 1:{0,2} 2:{1,0} (3 and 0 tie at 3, index wins)
# 3:{2,4} 4:{3,5} 5:{4,3}; same-label counts s = 2, 2, 2, 0, 0, 1 with y below.
X1 = np.array([[0.0], [1.0], [3.0], [6.0], [10.0], [15.0]])
Y1 = np.array([0, 0, 0, 1, 0, 1])


@pytest.mark.parametrize(
    "card, kwargs, expected",
    [
        # large class 0: 1,1,1,0 for x0,x1,x2,x4; minority s/K: 0, 1/2
        ("imbalanced", {}, 3.5 / 6),
        ("consistency", {}, 3 / 6),
        ("weight", {"gamma": 0.5}, 3 / 6),  # p/n > 0.5: x0, x1, x2 (1 each); x5 has 1/2
        ("weight", {"gamma": 0.4}, 3.5 / 6),  # ... and x5 now scores 1/2
        ("weight", {"gamma": 1.0}, 0.0),  # p/n > 1 never holds
        # x0-x2: p/n = 1 >= gamma1 -> 1; x3, x4: p/n = 0 <= gamma2 -> 0; x5 (p/n = 1/2): in
        # between, its same-label neighbour x3 (at 9) is farther than x4 (at 5) -> 0
        ("distance", {}, 3 / 6),
        ("distance", {"gamma1": 0.5, "gamma2": 0.25}, 4 / 6),  # x5: 1/2 >= gamma1 -> 1
        ("distance", {"gamma1": 0.75, "gamma2": 0.5}, 3 / 6),  # x5: 1/2 <= gamma2 -> 0
    ],
)
def test_dependency_hand_computed(card, kwargs, expected):
    assert math.isclose(knn_dependency(X1, Y1, k=2, card=card, **kwargs), expected)
    # the production path (one-feature kernel) agrees
    sel = KOFSD(k=2, alpha=0.0, card=card, **kwargs).fit(X1, Y1)
    if expected == 0:  # not above alpha = 0: irrelevant
        assert sel.selected_.tolist() == [] and sel.n_irrelevant_ == 1
        return
    assert sel.selected_.tolist() == [0]
    assert math.isclose(sel.scores_[0], expected) and sel.dependency_ == sel.scores_[0]


def test_distance_card_compares_mean_distances():
    # K = 2, every instance has p/n = 1/2 or 0 (gamma2 = 0.25 < 1/2 < gamma1 = 0.75):
    # x0 = 0: x1 (same, 1), x2 (other, 3): 1 < 3 -> 1.  x1 = 1: x0 (same, 1), x2 (other, 2) -> 1
    # x2 = 3: x1, x0 both other -> 0.  x3 = 10: x4 (same, 1), x5 (other, 3) -> 1
    # x4 = 11: x3 (same, 1), x5 (other, 2) -> 1.  x5 = 13: x4, x3 both other -> 0
    X = np.array([[0.0], [1.0], [3.0], [10.0], [11.0], [13.0]])
    y = np.array([0, 0, 1, 1, 1, 0])
    assert knn_dependency(X, y, k=2, card="distance") == 4 / 6
    # the printed formula (both sums over the count of other-label neighbours, ">") would score
    # the opposite: x0, x1, x3, x4 -> 0
    assert KOFSD(k=2, alpha=0.0, card="distance").fit(X, y).dependency_ == 4 / 6


def test_card_kernel_matches_numpy_reference():
    rng = np.random.default_rng(1)
    for k in (1, 2, 3, 7):
        n = 400
        same = rng.integers(0, k + 1, n)
        ssum = np.where(same > 0, rng.integers(1, 4, n) * same, 0.0)
        dsum = np.where(same < k, rng.integers(1, 4, n) * (k - same), 0.0)
        is_large = rng.random(n) < 0.5
        for card, g, g1, g2 in [("imbalanced", .5, .75, .25), ("consistency", .5, .75, .25),
                                ("weight", .5, .75, .25), ("weight", 1 / 3, .75, .25),
                                ("distance", .5, .75, .25), ("distance", .5, 2 / 3, 1 / 3),
                                ("distance", .5, 1.0, 0.0)]:  # fmt: skip
            ref = _card_from_stats(same, ssum, dsum, is_large, k, card, g, g1, g2)
            code = CARDS.index(card)
            got = [_card_num(same[i], ssum[i], dsum[i], is_large[i], k, code, g, g1, g2)
                   for i in range(n)]  # fmt: skip
            assert np.array_equal(np.asarray(got) / k, ref), (card, k)
            for compat in (None, "zhou"):
                assert dependency_from_stats(same[:, None], ssum[:, None], dsum[:, None],
                                             is_large, k, card, g, g1, g2, compat)[0] == \
                    _mean_card(ref[:, None], k, compat)[0]  # fmt: skip


def test_zhou_mean_is_the_float_mean_in_instance_order():
    # cards 4/7 and 6/7 against 5/7 and 5/7: equal integer numerators, but the float sums in
    # instance order differ in the last bit (this decides dlbcl_gems5469's feature 948)
    k = 7
    rest = np.r_[np.full(30, 3 / 7), np.full(30, 1.0), np.full(17, 2 / 7)]
    a = np.r_[rest[:61], 5 / 7, rest[61:74], 5 / 7, rest[74:]][:, None]
    b = np.r_[rest[:61], 4 / 7, rest[61:74], 6 / 7, rest[74:]][:, None]
    assert _mean_card(a, k)[0] == _mean_card(b, k)[0]  # exact: equal numerators
    za, zb = _mean_card(a, k, "zhou")[0], _mean_card(b, k, "zhou")[0]
    assert za == sum(a[:, 0].tolist()) / a.shape[0] and zb == sum(b[:, 0].tolist()) / b.shape[0]


def test_zhou_large_class_is_label_zero():
    y = 1 - Y1  # label 0 is now the minority (2 of 6)
    # default: large class = 1 (most frequent), same numbers as before
    assert math.isclose(knn_dependency(X1, y, k=2), 3.5 / 6)
    # zhou: large = 0 -> x3 (s=0) and x5 (s=1) score 0; x0..x2 score s/K = 1, x4 0
    assert math.isclose(knn_dependency(X1, y, k=2, compat="zhou"), 3 / 6)


def test_zhou_self_neighbour_changes_dependency():
    X = np.array([[1.0], [1.0], [3.0], [4.0], [9.0]])
    y = np.array([0, 1, 1, 0, 0])
    # K=1. default: x0->x1 (diff), x1->x0 (diff), x2->x3 (diff), x3->x2 (diff), x4->x3 (same)
    # large class 0: x0 0, x3 0, x4 1; x1: 0, x2: 0 -> 1/5
    assert math.isclose(knn_dependency(X, y, k=1), 1 / 5)
    # zhou: x1's neighbour is itself (same label) -> x1 scores 1 -> 2/5
    assert math.isclose(knn_dependency(X, y, k=1, compat="zhou"), 2 / 5)
    assert math.isclose(KOFSD(k=1, alpha=0.0, compat="zhou").fit(X, y).dependency_, 2 / 5)


def test_large_class_ties_take_smallest_label():
    classes, y_enc = np.unique(np.array(["b", "a", "b", "a", "c"]), return_inverse=True)
    assert classes[large_class_code(classes, y_enc, None)] == "a"


def _near_ties(rng, n, p):
    """Columns of values that differ in their last bits only, equal values, +-0.0 and
    subnormals: what the packed sort keys of ``nearly_sorted_order`` leave out of order."""
    base = rng.choice([0.0, -0.0, 1.0, -1.0, 5e-324, -5e-324, 1e10], size=(n, p))
    steps = rng.integers(-300, 300, size=(n, p))
    X = base.copy()
    for (i, j), s in np.ndenumerate(steps):
        if rng.random() < 0.7:  # nudge by |s| ulps, keeping some exact ties
            X[i, j] = base[i, j]
            for _ in range(abs(int(s)) % 8):
                X[i, j] = np.nextafter(X[i, j], np.inf if s > 0 else -np.inf)
    return np.asfortranarray(X)


@pytest.mark.parametrize("n", [2, 3, 180, 257, 1500])
def test_nearly_sorted_order_is_finished_by_the_kernel(n):
    rng = np.random.default_rng(n)
    X = _near_ties(rng, n, 6)
    order = nearly_sorted_order(X)
    stable = np.argsort(X, axis=0, kind="stable")
    for c in range(X.shape[1]):
        # a permutation that the (value, index) order turns into the stable argsort ...
        assert sorted(order[:, c].tolist(), key=lambda i: (X[i, c], i)) == stable[:, c].tolist()
        # ... ascending but for values within 2**ceil(log2 n) places of each other in the
        # order of all doubles (where the index took their lowest bits)
        sv = X[order[:, c], c]
        u = sv.view(np.int64)
        place = np.where(u < 0, np.int64(-(2**63)) - u, u)  # signed: -0.0 and 0.0 both 0
        near = np.abs(place[1:] - place[:-1]) < 2 ** max(1, (n - 1).bit_length())
        assert np.all((sv[1:] >= sv[:-1]) | near)
    y = (rng.random(n) < 0.3).astype(np.int64)
    outputs = []
    for given_order in (order, n - 1 - np.argsort(X[::-1], axis=0, kind="stable")):
        var, same = np.empty(6), np.empty((n, 6), np.int64)
        ssum, dsum = np.empty((n, 6)), np.empty((n, 6))
        single_feature_stats(X, given_order, y, min(3, n - 1), 0, True, var, same, ssum, dsum)
        outputs.append((var, same, ssum, dsum))
    for a, b in zip(*outputs):
        assert np.array_equal(a, b)


@settings(max_examples=60, deadline=None)
@given(streams())
def test_kernels_match_brute_force(data):
    X, y, params = data
    k, card, compat = params["k"], params["card"], params["compat"]
    n, p = X.shape
    classes, y_enc = np.unique(y, return_inverse=True)
    large = large_class_code(classes, y_enc, compat)
    inc = int(compat == "zhou")
    var = np.empty(p)
    same, ssum, dsum = np.empty((n, p), np.int64), np.empty((n, p)), np.empty((n, p))
    y64 = y_enc.astype(np.int64)
    Xf = np.asfortranarray(X)
    # ascending, equal values in reverse instance order: the kernel must restore theirs
    order = n - 1 - np.argsort(Xf[::-1], axis=0, kind="stable")
    single_feature_stats(Xf, order, y64, k, inc, True, var, same, ssum, dsum)
    g = (0.5, 0.75, 0.25)
    dep1 = dependency_from_stats(same, ssum, dsum, y_enc == large, k, card, *g, compat)
    # without the sums (every card but "distance"), the sliding window finds the same counts
    same_w = np.empty((n, p), np.int64)
    single_feature_stats(Xf, np.argsort(Xf, axis=0), y64, k, inc, False, np.empty(p), same_w,
                         np.empty((n, p)), np.empty((n, p)))
    assert np.array_equal(same_w, same)
    assert np.array_equal(var, sample_variances(X))
    for c in range(p):
        if var[c] > 0:
            assert dep1[c] == knn_dependency(X[:, [c]], y, k, card, compat)
    cols = [c for c in range(p) if var[c] > 0]
    if len(cols) >= 2:
        D = None
        for c in cols[:-1]:
            D = add_feature(D, X[:, c].copy(), var[c])
        f = cols[-1]
        expected = knn_dependency(X[:, cols], y, k, card, compat)
        dep_s = knn_dependency(X[:, cols[:-1]], y, k, card, compat)
        code = CARDS.index(card)
        budget = k * n - round(dep_s * k * n)
        zhou = compat == "zhou"
        for m in (None, 1, k + 1, k + 3):  # full order and short lists (rows left unsettled)
            args = (D, row_order(D, m), X[:, f].copy(), var[f], y_enc.astype(np.int64), k, inc)
            s1, a1, b1 = np.empty(n, np.int64), np.empty(n), np.empty(n)
            rows = np.random.default_rng(m).permutation(n)  # any visiting order
            tail = (zhou, dep_s, rows)
            assert not joint_stats(*args, s1, a1, b1, y_enc == large, code, *g, -1, *tail)
            got = dependency_from_stats(
                s1[:, None], a1[:, None], b1[:, None], y_enc == large, k, card, *g, compat
            )[0]
            assert got == expected
            stopped = joint_stats(*args, s1, a1, b1, y_enc == large, code, *g, budget, *tail)
            if budget > 0:  # early stop exactly when Dep(S + f) > Dep(S) fails
                assert stopped == (not expected > dep_s)


@pytest.mark.parametrize("seed", range(6))
def test_joint_kernel_on_sparse_binary_ties(seed):
    """Mostly-zero binary columns (dorothea-like): most rows have far more than K candidates at
    the K-th distance, which the candidate list must settle by instance index, exactly."""
    rng = np.random.default_rng(seed)
    n, p, k = 60, 5, int(rng.integers(1, 8))
    X = (rng.random((n, p)) < 0.08).astype(float)
    X[0] = 1.0  # no constant columns
    y = (rng.random(n) < 0.15).astype(np.int64)
    y[:2] = [0, 1]
    for compat in (None, "zhou"):
        inc = int(compat == "zhou")
        var = sample_variances(X)
        D = None
        for c in range(p - 1):
            D = add_feature(D, X[:, c].copy(), var[c])
        expected = knn_dependency(X, y, k, "imbalanced", compat)
        for m in (k + 1, k + 3, 16, None):
            s1, a1, b1 = np.empty(n, np.int64), np.empty(n), np.empty(n)
            assert not joint_stats(D, row_order(D, m), X[:, p - 1].copy(), var[p - 1], y, k,
                                   inc, s1, a1, b1, y == 0, 0, 0.5, 0.75, 0.25, -1,
                                   compat == "zhou", 0.0, np.arange(n))  # fmt: skip
            got = dependency_from_stats(
                s1[:, None], a1[:, None], b1[:, None], y == 0, k, "imbalanced", 0.5, 0.75, 0.25,
                compat,
            )[0]
            assert got == expected


# ------------------------------------------------------------------------------ algorithm


def test_algorithm_steps_hand_built_stream():
    y = Y1
    const = np.full(6, 2.5)
    c_weak = np.arange(6.0)  # Dep = (1 + 1 + 0 + 0 + 0 + 1/2) / 6 = 5/12 <= 0.5
    a_feat = X1[:, 0]  # Dep = 7/12
    b_sep = np.array([0.0, 0.1, 0.2, 5.0, 0.3, 5.1])  # majority all pure, minority 1/2: 5/6
    X = np.column_stack([const, c_weak, a_feat, b_sep, b_sep])
    sel = KOFSD(k=2, alpha=0.5).partial_fit(X[:, :3], y)
    assert sel.selected_.tolist() == [2] and math.isclose(sel.dependency_, 7 / 12)
    assert (sel.n_irrelevant_, sel.n_redundant_) == (2, 0)
    sel.partial_fit(X[:, 3:4])  # 5/6 > 7/12: replaces the selection
    assert sel.selected_.tolist() == [3] and math.isclose(sel.dependency_, 5 / 6)
    assert (sel.n_irrelevant_, sel.n_redundant_) == (2, 1)
    # a copy of b doubles the distances: same neighbours, same Dep -> redundant
    sel.partial_fit(X[:, 4:5], y).finish()
    assert sel.selected_.tolist() == [3] and sel.n_redundant_ == 2
    assert sel.n_features_seen_ == 5
    assert sel.selection() == [{"feature": 3, "score": sel.scores_[0], "affiliated": []}]
    assert sel.get_support().tolist() == [False, False, False, True, False]
    assert np.array_equal(sel.transform(X), X[:, [3]])


def test_joint_step_adds_complementary_feature():
    # minority class 1 is separated only by using both features together
    rng = np.random.default_rng(3)
    n = 60
    y = np.zeros(n, dtype=int)
    y[:6] = 1
    X = rng.normal(size=(n, 2))
    X[:6] = [[2.5, 2.5]] * 6 + rng.normal(scale=0.1, size=(6, 2))
    X[6:12, 0] = 2.5 + rng.normal(scale=0.1, size=6)  # majority points sharing f0's value
    X[12:18, 1] = 2.5 + rng.normal(scale=0.1, size=6)  # ... and f1's
    sel = KOFSD(k=3).fit(X, y)
    S, dep = reference_kofsd(X, y, k=3)
    assert sel.selected_.tolist() == S == [0, 1]
    assert sel.dependency_ == dep > sel.scores_.max()


@settings(max_examples=50, deadline=None)
@given(streams())
def test_matches_reference_algorithm(data):
    X, y, params = data
    sel = KOFSD(**params).fit(X, y)
    S, dep = reference_kofsd(X, y, **params)
    assert sel.selected_.tolist() == S
    assert sel.dependency_ == dep
    if sel.dependency_ > 0 or params["compat"] is None:  # no zhou fallback
        # every feature ends irrelevant, redundant (discarded or replaced) or selected
        assert sel.n_irrelevant_ + sel.n_redundant_ + len(S) == X.shape[1]


@settings(max_examples=30, deadline=None)
@given(streams(continuous=True, compat_allowed=False), st.integers(0, 2**32 - 1))
def test_permuting_instances_keeps_selection(data, seed):
    X, y, params = data
    perm = np.random.default_rng(seed).permutation(len(y))
    a = KOFSD(**params).fit(X, y)
    b = KOFSD(**params).fit(X[perm], y[perm])
    assert a.selected_.tolist() == b.selected_.tolist()
    assert a.dependency_ == b.dependency_
    assert np.array_equal(a.scores_, b.scores_)


@settings(max_examples=30, deadline=None)
@given(streams(), st.lists(st.integers(0, 10), max_size=4))
def test_blocks_do_not_matter(data, cuts):
    X, y, params = data
    whole = KOFSD(**params).fit(X, y)
    parts = KOFSD(**params)
    edges = sorted({0, X.shape[1], *[min(c, X.shape[1]) for c in cuts]})
    for lo, hi in zip(edges[:-1], edges[1:]):
        parts.partial_fit(X[:, lo:hi], y if lo == 0 else None)
    parts.finish()
    assert_same_state(whole.to_state(), parts.to_state())


@settings(max_examples=30, deadline=None)
@given(streams(), st.integers(0, 10))
def test_state_round_trip_continues_identically(data, cut):
    X, y, params = data
    cut = min(cut, X.shape[1] - 1)
    a = KOFSD(**params).partial_fit(X[:, : cut + 1], y)
    state = a.to_state()
    assert_plain(state)
    b = KOFSD.from_state(state)
    assert_same_state(b.to_state(), state)
    a.partial_fit(X[:, cut + 1 :]).finish()
    b.partial_fit(X[:, cut + 1 :]).finish()
    assert_same_state(a.to_state(), b.to_state())
    assert a.selection() == b.selection()


def test_state_round_trip_through_codec():
    rng = np.random.default_rng(5)
    y = np.r_[np.zeros(50, int), np.ones(10, int)]
    X = rng.normal(size=(60, 40))
    X[:, ::7] += 2.0 * y[:, None]
    a = KOFSD().partial_fit(X[:, :20], y)
    b = KOFSD.from_state(codec.unpackb(codec.packb(a.to_state())))
    a.partial_fit(X[:, 20:]).finish()
    b.partial_fit(X[:, 20:]).finish()
    assert_same_state(a.to_state(), b.to_state())


def test_version_1_states():
    rng = np.random.default_rng(5)
    y = np.r_[np.zeros(30, int), np.ones(6, int)]
    X = rng.normal(size=(36, 10))
    X[:, 3] += 3.0 * y
    a = KOFSD(k=3).partial_fit(X[:, :5], y)
    old = a.to_state()
    old["version"] = 1
    old["params"].update(gamma1=0.5, gamma2=1.0)  # version 1 defaults
    b = KOFSD.from_state(old)
    assert (b.gamma1, b.gamma2) == (0.75, 0.25)
    a.partial_fit(X[:, 5:]).finish()
    b.partial_fit(X[:, 5:]).finish()
    assert_same_state(a.to_state(), b.to_state())
    old["params"]["card"] = "weight"
    with pytest.raises(ValueError, match="version 1 with card='weight' cannot be continued"):
        KOFSD.from_state(old)


def test_unfitted_state_round_trip():
    sel = KOFSD(k=3, card="weight", gamma=0.75)
    back = KOFSD.from_state(sel.to_state())
    assert (back.k, back.card, back.gamma) == (3, "weight", 0.75)
    assert not hasattr(back, "selected_")


# ------------------------------------------------------------------------------ zhou fallback


def test_zhou_fallback_selects_round_sqrt_p_best_single_features():
    rng = np.random.default_rng(0)
    y = np.r_[np.zeros(30, int), np.ones(10, int)]
    X = rng.normal(size=(40, 10))
    X[:, 4] += 1.0 * y
    singles = [knn_dependency(X[:, [f]], y, k=3, compat="zhou") for f in range(10)]
    sel = KOFSD(k=3, alpha=0.99, compat="zhou").fit(X, y)  # nothing passes alpha
    expected = np.argsort(-np.asarray(singles), kind="stable")[:3]  # round(sqrt(10)) = 3
    assert sel.selected_.tolist() == expected.tolist()
    assert np.array_equal(sel.scores_, np.asarray(singles)[expected])
    back = KOFSD.from_state(sel.to_state())
    assert back.selected_.tolist() == expected.tolist()
    assert_same_state(back.to_state(), sel.to_state())
    # the default mode has no fallback
    assert KOFSD(k=3, alpha=0.99).fit(X, y).selected_.tolist() == []
    # more features after finish(): the fallback is recomputed at the next finish()
    sel.partial_fit(X[:, :6])
    assert sel.selected_.tolist() == []
    assert sel.finish().selected_.size == fallback_count(16) == 4


def test_fallback_count_rounds_halves_away():
    assert [fallback_count(p) for p in (1, 2, 3, 6, 7, 12, 13, 12533)] == [1, 1, 2, 2, 3, 3, 4, 112]


def test_zhou_fallback_ties_in_stream_order():
    y = np.r_[np.zeros(8, int), np.ones(4, int)]
    col = np.arange(12.0)
    X = np.column_stack([col[::-1], col, col, col])  # identical dependencies
    sel = KOFSD(k=2, alpha=0.99, compat="zhou").fit(X, y)
    assert sel.selected_.tolist() == [0, 1]


# ------------------------------------------------------------------------------ inputs


def test_constant_columns_are_irrelevant():
    y = Y1
    X = np.column_stack([np.zeros(6), np.full(6, 0.1), X1[:, 0]])
    # not constant, but its sample variance underflows to 0 (no distance defined): it was
    # taken as constant, and a whole data set scaled so far down selected nothing; refused
    tiny = np.array([0.0, 1e-200, 0.0, 2e-200, 0.0, 0.0])
    for compat in (None, "zhou"):
        if compat is None:  # zhou: the authors' NaN distances (test_kofsd_zhou)
            sel = KOFSD(k=2, alpha=0.0, compat=compat).fit(X, y)
            assert sel.selected_.tolist() == [2] and sel.n_irrelevant_ == 2
        with pytest.raises(ValueError, match=r"too small for K-OFSD.*block columns \[1\]"):
            KOFSD(k=2, alpha=0.0, compat=compat).fit(np.column_stack([X[:, 0], tiny]), y)


def test_string_labels_and_sparse_blocks():
    y = np.where(Y1 == 1, "rare", "common")
    b_sep = np.array([0.0, 0.1, 0.2, 5.0, 0.3, 5.1])
    X = np.column_stack([X1[:, 0], b_sep])
    dense = KOFSD(k=2).fit(X, y)
    sparse = KOFSD(k=2).fit(sp.csc_matrix(X), y)
    assert dense.large_class_ == "common"
    assert dense.selected_.tolist() == sparse.selected_.tolist() == [1]
    assert_same_state(dense.to_state(), sparse.to_state())
    assert KOFSD.from_state(dense.to_state()).large_class_ == "common"


@pytest.mark.parametrize("card", CARDS)
def test_values_up_to_the_bound_give_the_same_selection_as_unscaled(card):
    # power-of-2 scaling commutes with rounding: within the bound, nothing overflows and every
    # distance is bit-identical to the unscaled one
    rng = np.random.default_rng(5)
    n = 60
    y = (rng.random(n) < 0.3).astype(np.int64)
    X = rng.standard_normal((n, 8)) + np.outer(y, [1.5, 0, 1, 0, 0.5, 0, 0, 2])
    scaled = X.copy()
    scaled[:, [0, 3, 7]] *= 2.0**490  # |x| ~ 1e148, under max_abs_for_sums(60) ~ 8.7e152
    a = KOFSD(k=3, alpha=0.0, card=card).fit(X, y)
    b = KOFSD(k=3, alpha=0.0, card=card).fit(scaled, y)
    assert a.selected_.tolist() == b.selected_.tolist() and a.selected_.size > 0
    assert np.array_equal(a.scores_, b.scores_) and a.dependency_ == b.dependency_


def test_values_beyond_the_bound_are_refused_by_column():
    # they used to send the neighbour search into an endless loop (NaN distances)
    rng = np.random.default_rng(5)
    X = rng.standard_normal((40, 4))
    X[:, 2] *= 1e300
    with pytest.raises(ValueError, match=r"too large for K-OFSD.*columns \[2\].*below 1.06e\+153"):
        KOFSD(k=3).fit(X, np.arange(40) % 2)


@pytest.mark.parametrize(
    "kwargs, X, y, match",
    [
        ({}, np.ones((20, 2)), np.r_[np.zeros(10), np.ones(10)][:19],
         r"inconsistent numbers of samples: \[20, 19\]"),
        ({}, np.ones((20, 2)), np.zeros(20), "single class"),
        ({"k": 20}, np.ones((20, 2)), np.r_[np.zeros(10), np.ones(10)], "more than k"),
        ({}, np.r_[np.ones((19, 2)), [[np.nan, 1]]], np.r_[np.zeros(10), np.ones(10)], "NaN"),
        ({}, np.r_[np.ones((19, 2)), [[1, np.inf]]], np.r_[np.zeros(10), np.ones(10)], "infinite"),
        ({"compat": "zhou"}, np.ones((20, 2)), np.array(["a", "b"] * 10), "numeric"),
        ({"card": "nope"}, np.ones((20, 2)), np.r_[np.zeros(10), np.ones(10)], "card"),
        ({"alpha": 1.0}, np.ones((20, 2)), np.r_[np.zeros(10), np.ones(10)], "alpha"),
        ({"k": 0}, np.ones((20, 2)), np.r_[np.zeros(10), np.ones(10)], "k must"),
        ({"compat": "lofs"}, np.ones((20, 2)), np.r_[np.zeros(10), np.ones(10)], "compat"),
    ],
)
def test_input_validation(kwargs, X, y, match):
    with pytest.raises(ValueError, match=match):
        KOFSD(**kwargs).partial_fit(X, y)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"gamma1": 0.5, "gamma2": 0.5},
         "gamma2 must be a number in [0, gamma1) with gamma1 = 0.5, got 0.5"),
        ({"gamma1": 0.25, "gamma2": 0.75},
         "gamma2 must be a number in [0, gamma1) with gamma1 = 0.25, got 0.75"),
        ({"gamma1": 1.5}, "gamma1 must be a number in [0, 1], got 1.5"),
        ({"gamma2": -0.1}, "gamma2 must be a number in [0, 1], got -0.1"),
        ({"gamma": 1.01}, "gamma must be a number in [0, 1], got 1.01"),
    ],
)  # fmt: skip
def test_card_thresholds_are_validated(kwargs, message):
    with pytest.raises(ValueError) as info:
        KOFSD(card="distance", **kwargs)._validate_params()
    assert str(info.value) == message
    KOFSD(gamma1=1.0, gamma2=0.0)._validate_params()  # the widest distance band is fine


def test_later_blocks_are_checked():
    y = np.r_[np.zeros(10), np.ones(10)]
    sel = KOFSD(k=3).partial_fit(np.random.default_rng(0).normal(size=(20, 2)), y)
    with pytest.raises(ValueError, match="differs"):
        sel.partial_fit(np.ones((20, 1)), y[::-1])
    with pytest.raises(ValueError, match="values but y has"):
        sel.partial_fit(np.ones((19, 1)))
    with pytest.raises(ValueError, match="needs the class vector"):
        KOFSD().partial_fit(np.ones((20, 1)))
    with pytest.raises(ValueError, match="has seen"):
        sel.transform(np.ones((20, 5)))


# ------------------------------------------------------------------------------ usefulness


def _gmean(y_true, y_pred):
    tpr = np.mean(y_pred[y_true == 1] == 1)
    tnr = np.mean(y_pred[y_true == 0] == 0)
    return math.sqrt(tpr * tnr)


def _outlier_stream(seed, n=600, p=300, n_info=5):
    """5 % minority shifted by +3 in ``n_info`` features, each of which also has 3 % of the
    majority at +40 (gross outliers); the other features are heavy-tailed (Student t, 2 df)
    noise. Pearson correlation is fooled by the outliers, neighbourhoods are not."""
    rng = np.random.default_rng(seed)
    y = np.zeros(n, dtype=int)
    y[rng.choice(n, n // 20, replace=False)] = 1
    X = rng.standard_t(2, size=(n, p))
    info = np.arange(0, p, p // n_info)[:n_info]
    X[:, info] = rng.normal(size=(n, n_info)) + 3.0 * y[:, None]
    majority = np.flatnonzero(y == 0)
    for f in info:
        X[rng.choice(majority, int(0.03 * majority.size), replace=False), f] += 40.0
    return X, y, info


def test_beats_pearson_on_imbalanced_data_with_outliers():
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import LinearSVC

    scores = {"kofsd": [], "pearson": []}
    for seed in range(3):
        X, y, info = _outlier_stream(seed)
        train = np.arange(y.size) % 2 == 0
        Xtr, ytr, Xte, yte = X[train], y[train], X[~train], y[~train]
        chosen = KOFSD().fit(Xtr, ytr).selected_
        assert np.isin(chosen, info).any()
        Xc = Xtr - Xtr.mean(axis=0)
        yc = ytr - ytr.mean()
        r = np.abs(Xc.T @ yc) / (np.linalg.norm(Xc, axis=0) * np.linalg.norm(yc))
        pearson = np.argsort(-r, kind="stable")[: chosen.size]
        for name, cols in (("kofsd", chosen), ("pearson", pearson)):
            scaler = StandardScaler().fit(Xtr[:, cols])
            A, B = scaler.transform(Xtr[:, cols]), scaler.transform(Xte[:, cols])
            g_nn = _gmean(yte, KNeighborsClassifier(1).fit(A, ytr).predict(B))
            svm = LinearSVC(C=1.0, class_weight="balanced").fit(A, ytr)
            scores[name].append((g_nn, _gmean(yte, svm.predict(B))))
    kofsd, pearson = np.mean(scores["kofsd"], axis=0), np.mean(scores["pearson"], axis=0)
    # measured (1-NN, SVM): K-OFSD about (0.89, 0.82), Pearson about (0.18, 0.25)
    assert kofsd[0] > pearson[0] + 0.3 and kofsd[1] > pearson[1] + 0.3, scores


@pytest.mark.parametrize("n", [40, 300])
@pytest.mark.parametrize("kind", ["ties", "ulps", "zeros"])
def test_candidate_lists_match_stable_argsort(n, kind):
    """Exact ties go by index, and so do values a few ulps apart, which the packed sort keys
    see as equal (their lowest bits hold the index): the lists are the stable argsort's."""
    rng = np.random.default_rng(2)
    D = rng.integers(0, 4, size=(n, n)).astype(float)  # many ties
    if kind == "ulps":
        D = D + 1.0
        for _ in range(3):  # up to 3 ulps above each value, at random
            D = np.where(rng.random(D.shape) < 0.5, np.nextafter(D, np.inf), D)
    elif kind == "zeros":
        D[rng.random(D.shape) < 0.3] = 0.0
    for m in (1, 5, 37, n - 1, n):
        assert np.array_equal(row_order(D, m), np.argsort(D, axis=1, kind="stable")[:, :m])


def test_candidate_lists_sort_a_few_rows_at_a_time():
    """All N x N sort keys at once doubled K-OFSD's memory (its guard counts D's 8 N^2 bytes);
    the lists are made a chunk of rows at a time, the same lists as one stable argsort."""
    import tracemalloc

    from streamfs.algorithms.neighbourhood_kernels import LIST_CHUNK_KEYS

    n, m = 2000, 64
    assert n * n > 3 * LIST_CHUNK_KEYS  # several chunks
    rng = np.random.default_rng(5)
    D = rng.integers(0, 50, size=(n, n)).astype(float)
    row_order(D[:200, :200], m)  # compiled before the memory is traced
    tracemalloc.start()
    try:
        lists = row_order(D, m)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # one chunk of keys (8 MiB) and the lists: not a key per entry of D, nor two chunks
    assert peak < 1.5 * 8 * LIST_CHUNK_KEYS < 8 * n * n / 2.5
    assert np.array_equal(lists, np.argsort(D, axis=1, kind="stable")[:, :m])


def test_refit_starts_from_scratch():
    rng = np.random.default_rng(4)
    y = np.r_[np.zeros(30, int), np.ones(6, int)]
    X = rng.normal(size=(36, 12))
    X[:, 5] += 3.0 * y
    sel = KOFSD(k=3).fit(X[:, ::-1], y)
    part = np.r_[0:20, 30:34]  # other instances, other labels
    sel.fit(X[part], y[part])
    assert_same_state(sel.to_state(), KOFSD(k=3).fit(X[part], y[part]).to_state())
    with pytest.raises(ValueError, match="before any partial_fit"):
        KOFSD().finish()


@settings(max_examples=200, deadline=None)
@given(st.integers(2, 40), st.integers(0, 2**32 - 1), st.sampled_from([0, 1]),
       st.sampled_from(["grid", "tiny", "mixed"]), st.sampled_from([2, 3]))
def test_window_counts_equal_the_walk_on_near_ties(n, seed, include_self, kind, n_classes):
    """Values on a 0.1 grid (differences that tie or not only after rounding), tiny offsets
    (distances that round to 0) and duplicates, every K from 1 to N - 1 (windows whose start
    is counted, K <= 16, and windows that slide), two classes (counts from a prefix sum) or
    three (counts kept as the window moves): the window's neighbour counts equal the exact
    walk's, in both neighbour rules."""
    rng = np.random.default_rng(seed)
    if kind == "grid":
        x = rng.integers(0, 6, n) * 0.1
    elif kind == "tiny":
        # distinct values 1e-200 apart: their squared difference underflows to distance 0
        x = np.where(rng.random(n) < 0.5, rng.integers(0, 3, n) * 1e-200,
                     1.0 + rng.integers(0, 2, n))
    else:
        x = np.where(rng.random(n) < 0.5, rng.integers(0, 4, n) * 0.1, rng.normal(size=n))
    X = np.asfortranarray(np.c_[x, x[::-1]])
    y = rng.integers(0, n_classes, n).astype(np.int64)
    for k in range(1, n):
        counts = []
        for sums in (True, False):
            same = np.empty((n, 2), np.int64)
            single_feature_stats(X, np.argsort(X, axis=0), y, k, include_self, sums,
                                 np.empty(2), same, np.empty((n, 2)), np.empty((n, 2)))
            counts.append(same)
        assert np.array_equal(counts[0], counts[1]), (k, x.tolist())


@settings(max_examples=200, deadline=None)
@given(st.integers(2, 60), st.integers(0, 2**32 - 1), st.integers(1, 16))
def test_counted_window_starts_are_the_first_start_not_beaten_on_the_right(n, seed, k):
    """The vectorised passes find, for every position, the window a per-position loop finds
    (ties and repeated values included), and call it exact where its keys say so."""
    k = min(k, n - 1)
    rng = np.random.default_rng(seed)
    sv = np.sort(np.where(rng.random(n) < 0.5, rng.integers(0, 4, n) * 0.1, rng.normal(size=n)))
    var = float(np.var(sv, ddof=1)) or 1.0
    starts, exacts = np.empty(n, np.int64), np.empty(n, np.bool_)
    _counted_windows(sv, k, var, starts, np.empty(n), np.empty(n), exacts)
    key = lambda gap: np.sqrt(gap * gap / var)  # noqa: E731
    for p in range(n):
        s = max(p - k, 0)
        while s < min(p, n - 1 - k) and sv[s + k + 1] - sv[p] < sv[p] - sv[s]:
            s += 1
        assert starts[p] == s, (p, sv.tolist())
        inside = max(sv[p] - sv[s], sv[s + k] - sv[p])
        outside = min(sv[p] - sv[s - 1] if s > 0 else np.inf,
                      sv[s + k + 1] - sv[p] if s + k + 1 < n else np.inf)
        assert exacts[p] == (key(inside) < key(outside))


def test_too_many_instances_for_the_distance_buffer_are_refused_with_the_largest_that_fits():
    # the distances on S take 8 N^2 bytes: a worker would be killed at the first relevant
    # feature, restarted, and killed again on the same message
    from streamfs.algorithms.opening import check_open

    rng = np.random.default_rng(0)
    model = KOFSD(k=3, max_buffer_bytes=1_000_000)
    with pytest.raises(ValueError, match=r"N=400 .* exceed max_buffer_bytes=1000000; use at most "
                                         r"N = (\d+) instances") as info:
        model.fit(rng.standard_normal((400, 3)), np.arange(400) % 2)
    most = int(info.value.args[0].split("at most N = ")[1].split()[0])
    assert model._buffer_bytes(most) <= 1_000_000 < model._buffer_bytes(most + 1)
    KOFSD(k=3, max_buffer_bytes=1_000_000).fit(rng.standard_normal((most, 3)), np.arange(most) % 2)
    with pytest.raises(ValueError, match="max_buffer_bytes=1073741824"):
        check_open("features", "kofsd", {}, y=np.arange(20000) % 2)  # the worker's open
    restored = KOFSD.from_state(KOFSD(max_buffer_bytes=5000).to_state())
    assert restored.max_buffer_bytes == 5000


def test_labels_are_classes_a_column_vector_too():
    X = np.random.default_rng(0).normal(size=(30, 4))
    y = np.arange(30) % 2
    with pytest.warns(DataConversionWarning, match="column-vector y"):
        col = KOFSD().fit(X, y.reshape(-1, 1))
    assert col.selected_.tolist() == KOFSD().fit(X, y).selected_.tolist()
    with pytest.raises(ValueError, match="Unknown label type: continuous"):
        KOFSD().fit(X, np.linspace(0, 1, 30))


def test_a_later_block_may_repeat_y_as_a_column_vector():
    X = np.random.default_rng(0).normal(size=(30, 4))
    y = np.arange(30) % 2
    sel = KOFSD().partial_fit(X[:, :2], y)
    # the first call takes a column vector as y: so does a later one, as SAOLA does
    sel.partial_fit(X[:, 2:], y.reshape(-1, 1)).finish()
    assert sel.selected_.tolist() == KOFSD().fit(X, y).selected_.tolist()
    with pytest.raises(ValueError, match="differs"):
        sel.partial_fit(X[:, :1], y[::-1].reshape(-1, 1))
