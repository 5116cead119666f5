"""Tests of the instance-stream OFS family against hand-computed cases and naive references."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.exceptions import DataConversionWarning

from streamfs import codec
from streamfs.algorithms import ofs_kernels as K
from streamfs.algorithms.instance_stream import InstanceStreamSelector
from streamfs.algorithms.ofs import (
    OFS,
    OFSPartial,
    OFSRandomPartial,
    PerceptronRandomPartial,
    PerceptronTruncation,
    RandomSelection,
)
from tests.external import require_dataset

M64 = (1 << 64) - 1


# ----------------------------------------------------------------------------- references
def trunc(w: np.ndarray, B: int) -> np.ndarray:
    """Keep the B largest |w_i| (ties: lower index)."""
    nz = np.flatnonzero(w)
    if nz.size <= B:
        return w
    keep = nz[np.lexsort((nz, -np.abs(w[nz])))[:B]]
    out = np.zeros_like(w)
    out[keep] = w[keep]
    return out


def ref_full(X, y, B, *, eta, decay, radius, threshold, normalize=True, allowed=None):
    """Naive O(d) OFS / PE_trun / RAND."""
    w = np.zeros(X.shape[1])
    mistakes = 0
    for x, t in zip(X, y):
        if normalize:
            x = x / np.linalg.norm(x)
        if allowed is not None:
            x = np.where(allowed, x, 0.0)
        s = w @ x
        mistakes += t * s <= 0
        if t * s <= threshold:
            wt = decay * w + eta * t * x
            nrm = np.linalg.norm(wt)
            wt = wt * min(1.0, radius / nrm) if nrm > 0 else wt
            w = trunc(wt, B)
        else:
            w = decay * w
    return w, mistakes


class RefPCG:
    """numpy's PCG64 raw stream + the kernel's recipes (double, Lemire bounded, Floyd)."""

    def __init__(self, seed):
        self.bg = np.random.PCG64(seed)

    def raw(self) -> int:
        return int(self.bg.random_raw())

    def double(self) -> float:
        return (self.raw() >> 11) * (1.0 / 9007199254740992.0)

    def bounded(self, n: int) -> int:
        x = self.raw()
        lo = (x * n) & M64
        if lo < n:
            t = (-n) % n
            while lo < t:
                x = self.raw()
                lo = (x * n) & M64
        return (x * n) >> 64

    def floyd(self, d: int, k: int) -> list[int]:
        chosen: list[int] = []
        for j in range(d - k, d):
            t = self.bounded(j + 1)
            if t in chosen:
                t = j
            chosen.append(t)
        return chosen


def ref_partial(X, y, B, seed, *, eta, epsilon, radius, mode):
    """Naive OFS_P (mode 1), OFS_rand (mode 2, weighted), PE_rand (mode 'pe')."""
    rng = RefPCG(seed)
    d = X.shape[1]
    w = np.zeros(d)
    mistakes = 0
    heap_order = None  # the kernel observes the support in heap order; only the set matters
    for x, t in zip(X, y):
        explore = True if mode != 1 else rng.double() < epsilon
        C = rng.floyd(d, min(B, d)) if explore else list(np.flatnonzero(w))
        xt = np.zeros(d)
        xt[C] = x[C]
        s = w @ xt
        mistakes += t * s <= 0
        threshold = 0.0 if mode == "pe" else 1.0
        if t * s <= threshold:
            if mode == "pe":
                xh = xt
            else:
                p = (B / d) * epsilon + (w != 0) * (1 - epsilon)
                xh = np.where(xt != 0, xt / p, 0.0)
            wt = w + eta * t * xh
            nrm = np.linalg.norm(wt)
            if nrm > radius:
                wt = wt * (radius / nrm)
            w = trunc(wt, B)
    del heap_order
    return w, mistakes


def seed_state(seed) -> np.ndarray:
    st = np.random.PCG64(seed).state["state"]
    s, inc = st["state"], st["inc"]
    return np.array([s >> 64, s & M64, inc >> 64, inc & M64], dtype=np.uint64)


# ----------------------------------------------------------------------------- RNG
def test_pcg_stream_matches_numpy():
    rng = seed_state(2024)
    np.testing.assert_array_equal(K.pcg_raw(rng, 500), np.random.PCG64(2024).random_raw(500))


def test_bounded_and_floyd_match_reference():
    rng = seed_state(7)
    ref = RefPCG(7)
    got = [int(K.pcg_bounded(rng, n)) for n in (1, 2, 3, 10, 1000, 2**40 + 3)]
    assert got == [ref.bounded(n) for n in (1, 2, 3, 10, 1000, 2**40 + 3)]
    assert got[0] == 0


# ----------------------------------------------------------------------------- update rules
def test_ofs_hand_computed_truncation_steps():
    m = OFS(n_features_to_select=1, normalize=False)  # eta 0.2, lam 0.01 -> decay 0.998
    m.learn_one(np.array([0.6, 0.8]), 1)  # w~ = [0.12, 0.16] -> keep 0.16
    np.testing.assert_allclose(m.coef_, [0.0, 0.16])
    m.learn_one(np.array([1.0, 0.0]), -1)  # w~ = [-0.2, 0.998*0.16 = 0.15968] -> keep -0.2
    np.testing.assert_allclose(m.coef_, [-0.2, 0.0])
    m.learn_one(np.array([0.0, 1.0]), 1)  # w~ = [-0.1996, 0.2] -> keep 0.2
    np.testing.assert_allclose(m.coef_, [0.0, 0.2])
    assert (m.mistakes_, m.n_updates_, m.n_seen_) == (3, 3, 3)


def test_ofs_projection_and_decay_branch():
    m = OFS(n_features_to_select=2, eta=1.0, lam=0.1, normalize=False)  # radius 1/sqrt(.1)
    m.learn_one(np.array([3.0, 4.0]), 1)  # ||w~|| = 5 -> scaled by 3.16228/5
    np.testing.assert_allclose(m.coef_, [1.8973666, 2.5298221], rtol=1e-7)
    m.learn_one(np.array([3.0, 4.0]), 1)  # margin 15.8 > 1: only the decay 0.9
    np.testing.assert_allclose(m.coef_, [1.7076299, 2.2768399], rtol=1e-7)
    assert (m.mistakes_, m.n_updates_) == (1, 1)
    m.learn_one(np.array([3.0, 4.0]), -1)  # margin -14.2: mistake, update, projection
    assert (m.mistakes_, m.n_updates_) == (2, 2)
    w = 0.9 * np.array([1.7076299, 2.2768399]) - np.array([3.0, 4.0])
    np.testing.assert_allclose(m.coef_, w * min(1, np.sqrt(10) / np.linalg.norm(w)), rtol=1e-6)


def test_perceptron_truncation_hand_computed():
    m = PerceptronTruncation(n_features_to_select=2, normalize=False)
    m.learn_one(np.array([1.0, -3.0, 2.0]), 1)  # w = trunc([1, -3, 2], 2)
    np.testing.assert_array_equal(m.coef_, [0.0, -3.0, 2.0])
    m.learn_one(np.array([0.0, -1.0, 0.0]), 1)  # score 3 > 0: no change
    np.testing.assert_array_equal(m.coef_, [0.0, -3.0, 2.0])
    m.learn_one(np.array([2.5, 0.0, 1.0]), -1)  # score 2: w = [-2.5, -3, 1] -> drop 1
    np.testing.assert_array_equal(m.coef_, [-2.5, -3.0, 0.0])
    assert m.mistakes_ == 2
    assert m.selected_.tolist() == [1, 0]
    assert m.selection() == [
        {"feature": 1, "score": -3.0, "affiliated": []},
        {"feature": 0, "score": -2.5, "affiliated": []},
    ]


def test_truncation_ties_keep_lower_index_and_exact_count():
    m = PerceptronTruncation(n_features_to_select=3, normalize=False)
    m.learn_one(np.array([1.0, 1.0, 1.0, 1.0, 1.0]), 1)
    np.testing.assert_array_equal(m.coef_, [1.0, 1.0, 1.0, 0.0, 0.0])
    m3 = PerceptronTruncation(n_features_to_select=3, normalize=False, n_features=6)
    m3.learn_one({4: 2.0, 1: 1.0}, 1)  # nnz 2 < B: keeps both
    assert m3.selected_.tolist() == [4, 1]


@pytest.mark.parametrize("B", [1, 3, 7, 30])
def test_ofs_and_pe_trun_match_naive_reference(B):
    rng = np.random.default_rng(B)
    # integer-valued sparse-ish data: many ties and exact cancellations
    X = rng.integers(-2, 3, size=(300, 30)).astype(float) * (rng.random((300, 30)) < 0.3)
    X[np.abs(X).sum(1) == 0, 0] = 1.0
    y = np.where(X[:, 2] + X[:, 5] - X[:, 11] + 0.3 * rng.normal(size=300) > 0, 1, -1)
    m = OFS(B).partial_fit(X, y)
    w, mis = ref_full(X, y, B, eta=0.2, decay=0.998, radius=10.0, threshold=1.0)
    np.testing.assert_allclose(m.coef_, w, atol=1e-12)
    assert m.mistakes_ == mis
    assert np.count_nonzero(m.coef_) == min(B, np.count_nonzero(w)) == np.count_nonzero(w)
    # a strong decay (0.1 per instance) drives the lazy scale below 1e-100: folds happen
    # (continuous data: integer data gives exact-zero reference scores, a rounding coin-flip)
    Xc = rng.normal(size=X.shape) * (X != 0)
    Xc[np.abs(Xc).sum(1) == 0, 0] = 1.0
    m = OFS(B, eta=1.0, lam=0.9).partial_fit(Xc, y)
    assert 1e-100 <= abs(m._fst[0]) and 0.1**300 < 1e-290  # folded at least twice
    w, mis = ref_full(Xc, y, B, eta=1.0, decay=0.1, radius=1 / np.sqrt(0.9), threshold=1.0)
    np.testing.assert_allclose(m.coef_, w, rtol=1e-9, atol=0)
    assert m.mistakes_ == mis
    p = PerceptronTruncation(B, normalize=False).partial_fit(X, y)
    w, mis = ref_full(X, y, B, eta=1.0, decay=1.0, radius=np.inf, threshold=0.0,
                      normalize=False)
    np.testing.assert_array_equal(p.coef_, w)  # integer arithmetic: exact
    assert p.mistakes_ == mis


@settings(max_examples=60, deadline=None)
@given(
    data=st.data(),
    d=st.integers(1, 8),
    n=st.integers(1, 40),
)
def test_heap_truncation_is_exact_property(data, d, n):
    # integer data + perceptron steps: exact arithmetic, so ties and exact cancellations
    # (weights returning to 0) hit the heap bookkeeping and must match the naive top-B
    B = data.draw(st.integers(1, d))
    X = np.array(
        data.draw(st.lists(st.lists(st.integers(-2, 2), min_size=d, max_size=d),
                           min_size=n, max_size=n)),
        dtype=float,
    )
    y = np.array(data.draw(st.lists(st.sampled_from([-1, 1]), min_size=n, max_size=n)))
    m = PerceptronTruncation(B, normalize=False, classes=[-1, 1], n_features=d)
    w = np.zeros(d)
    for x, t in zip(X, y):
        m.learn_one(x, t)
        if t * (w @ x) <= 0:
            w = trunc(w + t * x, B)
        np.testing.assert_array_equal(m.coef_, w)
        assert len(m.selected_) == np.count_nonzero(w) <= B


def test_support_size_is_min_of_budget_and_nonzeros():
    rng = np.random.default_rng(3)
    m = OFS(5, n_features=40)
    for _ in range(200):
        k = int(rng.integers(1, 12))
        idx = rng.choice(40, k, replace=False)
        before = set(m.selected_.tolist())
        n_updates = m.n_updates_
        m.learn_one(dict(zip(idx.tolist(), rng.normal(size=k).tolist())), int(rng.integers(2)))
        if m.n_updates_ > n_updates:  # continuous values: no exact cancellation
            assert len(m.selected_) == min(5, len(before | set(idx.tolist())))
        else:
            assert set(m.selected_.tolist()) == before
        assert np.count_nonzero(m.coef_) == len(m.selected_)
    assert len(m.selected_) == 5


def test_rand_is_perceptron_on_fixed_features():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 25))
    y = np.where(X[:, 0] + X[:, 1] > 0, 1, -1)
    m = RandomSelection(4, random_state=11).partial_fit(X, y)
    fixed = m.attributes_to_observe()
    assert fixed.size == 4 and set(m.selected_) <= set(fixed)
    assert fixed.tolist() == sorted(RefPCG(11).floyd(25, 4))
    allowed = np.zeros(25, bool)
    allowed[fixed] = True
    w, mis = ref_full(X, y, 4, eta=1.0, decay=1.0, radius=np.inf, threshold=0.0,
                      allowed=allowed)
    np.testing.assert_allclose(m.coef_, w, atol=1e-12)
    assert m.mistakes_ == mis


@pytest.mark.parametrize("B", [1, 3, 25])
def test_rand_redraw_keeps_a_fresh_random_subset_after_each_mistake(B):
    rng = np.random.default_rng(2)
    X = rng.normal(size=(300, 25))
    y = np.where(X[:, 0] - X[:, 2] > 0, 1, -1)
    m = RandomSelection(B, redraw=True, random_state=5).partial_fit(X, y)
    ref = RefPCG(5)
    w = np.zeros(25)
    mistakes = 0
    for x, t in zip(X, y):
        x = x / np.linalg.norm(x)
        if t * (w @ x) <= 0:
            mistakes += 1
            w = w + t * x
            keep = np.zeros(25, bool)
            keep[ref.floyd(25, B)] = True
            w = np.where(keep, w, 0.0)
    np.testing.assert_allclose(m.coef_, w, atol=1e-12)
    assert m.mistakes_ == mistakes and np.count_nonzero(m.coef_) <= B
    with pytest.raises(ValueError, match="whole instances"):
        m.attributes_to_observe()


def test_rand_redraw_restores_its_generator():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(400, 30))
    y = np.where(X[:, 1] > 0, 1, -1)
    whole = RandomSelection(4, redraw=True, random_state=9).partial_fit(X, y)
    first = RandomSelection(4, redraw=True, random_state=9).partial_fit(X[:150], y[:150])
    resumed = InstanceStreamSelector.from_state(first.to_state()).partial_fit(X[150:], y[150:])
    np.testing.assert_array_equal(resumed.coef_, whole.coef_)
    assert resumed.mistakes_ == whole.mistakes_


# ----------------------------------------------------------------------------- partial input
def test_ofs_partial_hand_computed_weighting():
    # d = 2, B = 1, eps = 0.5: P(observe i) = 0.25 off the support, 0.75 on it
    m = OFSPartial(1, eta=0.5, epsilon=0.5, radius=10.0, n_features=2, random_state=3)
    ref = RefPCG(3)
    x = [np.array([0.6, 0.8]), np.array([-0.3, 0.4])]
    idx = m.attributes_to_observe()
    explore = ref.double() < 0.5
    assert explore and idx.tolist() == ref.floyd(2, 1)  # the seed explores first
    j = int(idx[0])
    m.learn_observed(idx, x[0][idx], 1)
    w = np.zeros(2)
    w[j] = 0.5 * x[0][j] / 0.25
    np.testing.assert_allclose(m.coef_, w)
    idx2 = m.attributes_to_observe()
    explore2 = ref.double() < 0.5
    expected = ref.floyd(2, 1) if explore2 else [j]
    assert idx2.tolist() == expected
    k = int(idx2[0])
    score = w[k] * x[1][k]
    m.learn_observed(idx2, x[1][idx2], -1)
    assert m.mistakes_ == 1 + (score >= 0)
    if -score <= 1:
        w[k] += 0.5 * -1 * x[1][k] / (0.25 + (0.5 if w[k] != 0 else 0.0))
        w = trunc(w, 1)
    np.testing.assert_allclose(m.coef_, w)


def test_ofs_partial_projection_radius():
    m = OFSPartial(2, eta=1.0, epsilon=1.0, radius=0.5, n_features=2, random_state=0)
    m.learn_one(np.array([3.0, 4.0]), 1)  # x^ = x / 1, ||w~|| = 5 -> radius 0.5
    np.testing.assert_allclose(m.coef_, [0.3, 0.4])


@pytest.mark.parametrize(
    "cls, kw, mode",
    [
        (OFSPartial, {"eta": 0.2, "epsilon": 0.2, "radius": 10.0}, 1),
        (OFSRandomPartial, {"eta": 0.2, "radius": 10.0}, 2),
        (PerceptronRandomPartial, {"eta": 1.0}, "pe"),
    ],
)
def test_partial_learners_match_naive_reference(cls, kw, mode):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(400, 12))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.where(X[:, 0] - X[:, 4] > 0, 1, -1)
    m = cls(3, random_state=42, **kw).partial_fit(X, y)
    ref_kw = dict(eta=kw["eta"], epsilon=kw.get("epsilon", 1.0), radius=kw.get("radius", np.inf))
    w, mis = ref_partial(X, y, 3, 42, mode=mode, **ref_kw)
    np.testing.assert_allclose(m.coef_, w, atol=1e-10)
    assert m.mistakes_ == mis


def test_ofs_partial_observes_support_when_not_exploring():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 10))
    y = np.where(X[:, 1] > 0, 1, -1)
    m = OFSPartial(3, epsilon=0.2, random_state=4).partial_fit(X, y)
    support = set(m.selected_.tolist())
    sizes = []
    for _ in range(40):
        idx = m.attributes_to_observe()
        assert len(idx) == 3
        sizes.append(set(idx.tolist()) == support)
        m.learn_observed(idx, X[0, idx], 1)
        support = set(m.selected_.tolist())
    assert 20 <= sum(sizes) < 40  # ~80% exploit


def test_partial_learner_reads_only_observed_attributes():
    m = OFSPartial(2, n_features=6, random_state=9)
    for _ in range(30):
        idx = m.attributes_to_observe()
        x = np.full(6, np.nan)  # unobserved attributes are poison
        x[idx] = 0.5
        m.learn_one(x, 1)
        assert np.isfinite(m.coef_).all()
    with pytest.raises(ValueError, match="cannot\\s+scale"):
        OFSPartial(2, normalize=True).partial_fit(np.ones((1, 3)), [1])


def test_numpy_booleans_are_taken_for_normalize():
    """A GridSearchCV grid of np.array([True, False]) gives numpy booleans: they were refused
    ("must be one of True, ..., got True")."""
    from sklearn.model_selection import GridSearchCV

    X, y = _stream(seed=3)
    for value in (np.True_, np.False_):
        np.testing.assert_array_equal(OFS(5, normalize=value).fit(X, y).coef_,
                                      OFS(5, normalize=bool(value)).fit(X, y).coef_)
    with pytest.raises(ValueError, match=r"must be False or 'standardize' for OFSPartial, got "
                                         r"True:"):
        OFSPartial(2, normalize=np.True_).fit(X, y)
    search = GridSearchCV(OFS(5), {"normalize": np.array([True, False])}, cv=2,
                          error_score="raise").fit(X, y)
    assert search.best_params_["normalize"] in (True, False)


PARTIAL = [lambda: OFSPartial(5, random_state=3),
           lambda: OFSPartial(5, random_state=3, normalize="standardize"),
           lambda: OFSRandomPartial(5, random_state=3),
           lambda: PerceptronRandomPartial(5, random_state=3)]


def _scaled_breast_cancer():
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    return (X - X.mean(0)) / X.std(0), y


@pytest.mark.parametrize("make", PARTIAL)
def test_partial_learner_refuses_nan_it_reads_and_goes_on_as_without_that_row(make):
    """A NaN among the attributes read used to void the weights, with a message blaming an
    overflow; it is refused before the row is learned, and the stream goes on as if the row
    had not come (its draw is undone)."""
    X, y = _scaled_breast_cancer()
    bad = np.full(X.shape[1], np.nan)  # whatever the learner reads is NaN
    one = make().partial_fit(X[:100], y[:100])
    with pytest.raises(ValueError, match=r"row 0 has NaN or infinite values in the attributes "
                                         r"\[\d+(, \d+)*\] it read \(earlier rows were learned"):
        one.learn_one(bad, y[100])
    block = make().partial_fit(X[:100], y[:100])
    with pytest.raises(ValueError, match=r"^\w+: row 10 has NaN or infinite values"):
        block.partial_fit(np.vstack([X[100:110], bad]), np.r_[y[100:110], 1])
    one.partial_fit(X[100:], y[100:])
    block.partial_fit(X[110:], y[110:])
    ref = make().partial_fit(X, y)
    for m in (one, block):
        assert np.isfinite(m.coef_).all()
        np.testing.assert_array_equal(m.coef_, ref.coef_)
        assert (m.n_seen_, m.mistakes_) == (ref.n_seen_, ref.mistakes_)
    with pytest.raises(ValueError, match="no prediction without them"):
        ref.predict_one(dict(enumerate(bad)))


@pytest.mark.parametrize("values", [1e300, 1e-300], ids=["beyond-raw-limit", "underflowing"])
@pytest.mark.parametrize("make", PARTIAL)
def test_learn_observed_refuses_values_partial_fit_refuses_and_keeps_the_choice(make, values):
    """learn_observed skipped partial_fit's checks of the values: |x| = 1e300 made coef_ NaN.
    Refused with partial_fit's message before anything is learned; the choice stays pending,
    so the caller can retry with good values."""
    X, y = _scaled_breast_cancer()
    m = make().partial_fit(X[:50], y[:50])
    ref = make().partial_fit(X[:50], y[:50])
    with pytest.raises(ValueError) as expected:
        ref.partial_fit(np.full((1, X.shape[1]), values), [1])
    idx = m.attributes_to_observe()
    coef = m.coef_
    with pytest.raises(ValueError, match=f"^{re.escape(str(expected.value))}$"):
        m.learn_observed(idx, np.full(idx.size, values), 1)
    np.testing.assert_array_equal(m.coef_, coef)
    assert m.n_seen_ == 50
    np.testing.assert_array_equal(m.attributes_to_observe(), idx)
    m.learn_observed(idx, X[50, idx], y[50])
    assert m.n_seen_ == 51 and np.isfinite(m.coef_).all()


@pytest.mark.parametrize("make", PARTIAL)
def test_refused_row_before_the_second_class_leaves_labels_and_sign_as_learned(make):
    """A row refused before the second class of its block used to leave the labels final
    while w kept the first class's provisional sign (1 is taken as +1 until 2 comes), so the
    stream went on with the sign of the earlier rows wrong."""
    X, y = _scaled_breast_cancer()
    X = X / np.linalg.norm(X, axis=1, keepdims=True)
    y = np.where(y == 1, 1, 2)[:120]  # class 1 first: provisionally +1, -1 once 2 comes
    y[:6], y[6] = 1, 2
    bad = np.full(X.shape[1], np.nan)
    m = make()
    with pytest.raises(ValueError, match="row 4 has NaN"):
        m.partial_fit(np.vstack([X[:4], bad, X[4:120]]), np.r_[y[:4], 1, y[4:]])
    assert m.classes_.tolist() == [1]
    m.partial_fit(X[4:120], y[4:])
    one = make()  # the refused row brings the second class itself
    one.partial_fit(X[:4], y[:4])
    with pytest.raises(ValueError, match="row 0 has NaN"):
        one.learn_one(bad, 2)
    assert one.classes_.tolist() == [1]
    one.partial_fit(X[4:120], y[4:])
    ref = make().partial_fit(X[:120], y)
    for learner in (m, one):
        np.testing.assert_array_equal(learner.coef_, ref.coef_)
        assert (learner.mistakes_, learner.classes_.tolist()) == (ref.mistakes_, [1, 2])


@pytest.mark.parametrize("make", PARTIAL)
def test_partial_learner_takes_inf_in_attributes_it_does_not_read(make):
    X, y = _scaled_breast_cancer()
    m = make().partial_fit(X[:100], y[:100])
    twin = type(m).from_state(m.to_state())
    idx = twin.attributes_to_observe()  # what m reads next: the same generator
    x = X[100].copy()
    x[np.setdiff1d(np.arange(x.size), idx)[0]] = np.inf
    m.partial_fit(x[None], y[100:101])
    twin.learn_observed(idx, x[idx], y[100])
    np.testing.assert_array_equal(m.coef_, twin.coef_)


def test_learn_one_equals_split_api():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(120, 15))
    y = np.where(X[:, 3] > 0, "yes", "no")
    a = OFSPartial(4, random_state=1, normalize="standardize")
    b = OFSPartial(4, random_state=1, normalize="standardize", n_features=15)
    c = OFSPartial(4, random_state=1, normalize="standardize").partial_fit(X, y)
    for x, t in zip(X, y):
        a.learn_one(x, t)
        idx = b.attributes_to_observe()
        b.learn_observed(idx, x[idx], t)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.coef_, c.coef_)
    assert a.mistakes_ == b.mistakes_ == c.mistakes_
    assert a.predict_one(X[0]) in ("yes", "no")


# ----------------------------------------------------------------------------- input formats
ALL = [
    lambda: OFS(5),
    lambda: OFS(5, normalize="standardize"),
    lambda: PerceptronTruncation(5),
    lambda: RandomSelection(5, random_state=3),
    lambda: OFSPartial(5, random_state=3),
    lambda: OFSPartial(5, random_state=3, normalize="standardize"),
    lambda: OFSRandomPartial(5, random_state=3),
    lambda: PerceptronRandomPartial(5, random_state=3),
]


def _stream(n=150, d=40, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * (rng.random((n, d)) < 0.25)
    X[:, 0] += 0.1
    y = np.where(X[:, 1] - X[:, 2] + 0.5 * X[:, 3] > 0, 1, -1)
    return X, y


@pytest.mark.parametrize("make", ALL)
def test_dense_sparse_dict_and_one_by_one_agree(make):
    X, y = _stream()
    ref = make().partial_fit(X, y)
    for other in (
        make().partial_fit(sp.csr_matrix(X), y),
        make().partial_fit(sp.csc_array(X), y),
    ):
        np.testing.assert_array_equal(other.coef_, ref.coef_)
        assert other.mistakes_ == ref.mistakes_
    one = make()
    for k, (x, t) in enumerate(zip(X, y)):
        if k % 3 == 0:
            one.learn_one(x, t)
        elif k % 3 == 1:
            one.learn_one(sp.csr_matrix(x), t)
        else:
            nz = np.flatnonzero(x)
            one.learn_one({int(i): float(x[i]) for i in nz[::-1]}, t)
    np.testing.assert_array_equal(one.coef_, ref.coef_)
    assert one.mistakes_ == ref.mistakes_ and one.n_seen_ == len(y)
    np.testing.assert_array_equal(one.predict(X), ref.predict(sp.csr_matrix(X)))


@pytest.mark.parametrize("make", ALL)
def test_duplicates_unsorted_indices_and_stored_zeros_learn_as_their_sum(make):
    """Each row of the CSR block below holds its entries reversed, one of them split in two
    (summed, as scipy does) and a stored zero: the model is the canonical block's, and the
    caller's arrays are left as they were."""
    X, y = _stream()
    rows, cols = np.nonzero(X)
    order = np.lexsort((-cols, rows))  # within each row, indices descending
    rows, cols, vals = rows[order], cols[order], X[rows[order], cols[order]]
    split = np.arange(0, rows.size, 7)
    rows = np.r_[rows, rows[split], rows[:5]]
    cols = np.r_[cols, cols[split], (cols[:5] + 1) % X.shape[1]]
    vals = np.r_[vals, 0.25 * vals[split], np.zeros(5)]
    vals[split] *= 0.75
    order = np.argsort(rows, kind="stable")
    indptr = np.searchsorted(rows[order], np.arange(X.shape[0] + 1))
    M = sp.csr_matrix((vals[order], cols[order], indptr), shape=X.shape)
    assert not M.has_canonical_format
    C = sp.csr_matrix(X)  # canonical: read in place, not copied
    kept = [a.copy() for a in (M.data, M.indices, M.indptr, C.data, C.indices, C.indptr)]
    ref = make().partial_fit(C, y)
    got = make().partial_fit(M, y)
    np.testing.assert_allclose(got.coef_, ref.coef_, rtol=1e-12, atol=0)
    assert got.mistakes_ == ref.mistakes_
    after = (M.data, M.indices, M.indptr, C.data, C.indices, C.indptr)
    assert all(np.array_equal(a, b) for a, b in zip(after, kept))


# ----------------------------------------------------------------------------- state
def _continue(m, X, y):
    m.partial_fit(X, y)
    chosen = m.attributes_to_observe() if hasattr(m, "learn_observed") else None
    return m.coef_.copy(), m.mistakes_, m.n_updates_, chosen


@pytest.mark.parametrize("make", ALL)
def test_state_round_trip_continues_identically(make):
    X, y = _stream(n=200, seed=4)
    a = make().partial_fit(X[:100], y[:100])
    state = a.to_state()
    b = InstanceStreamSelector.from_state(state)
    assert type(b) is type(a) and b.get_params() == a.get_params()
    c = type(a).from_state(a.to_state())
    ra, rb, rc = _continue(a, X[100:], y[100:]), _continue(b, X[100:], y[100:]), _continue(
        c, X[100:], y[100:]
    )
    for r in (rb, rc):
        np.testing.assert_array_equal(r[0], ra[0])
        assert r[1:3] == ra[1:3]
        if ra[3] is not None:
            np.testing.assert_array_equal(r[3], ra[3])


def test_state_is_plain_data_and_survives_codec():
    X, y = _stream(n=120, seed=5)
    a = OFSPartial(5, random_state=8, normalize="standardize").partial_fit(X[:60], y[:60])
    a.attributes_to_observe()  # a pending choice is part of the state
    state = a.to_state()

    def check(obj):
        if isinstance(obj, dict):
            assert all(isinstance(k, (str, int)) for k in obj)
            for v in obj.values():
                check(v)
        elif isinstance(obj, list):
            for v in obj:
                check(v)
        elif isinstance(obj, int) and not isinstance(obj, bool):
            assert -(2**63) <= obj < 2**64
        else:
            assert obj is None or isinstance(obj, (bool, float, str, bytes, np.ndarray))

    check(state)
    b = OFSPartial.from_state(codec.unpackb(codec.packb(state)))
    for m in (a, b):
        idx = m.attributes_to_observe()
        m.learn_observed(idx, X[60, idx], y[60])
        m.partial_fit(X[61:], y[61:])
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.attributes_to_observe(), b.attributes_to_observe())


def test_unfitted_state_round_trip():
    m = OFS.from_state(OFS(3, eta=0.5).to_state())
    assert m.eta == 0.5 and m.selection() == [] and m.n_seen_ == 0


@pytest.mark.parametrize("generator", [lambda: np.random.default_rng(7),
                                       lambda: np.random.RandomState(7),
                                       lambda: np.random.Generator(np.random.MT19937(3))],
                         ids=["PCG64", "RandomState", "MT19937"])
@pytest.mark.parametrize("cls", [RandomSelection, OFSPartial])
def test_an_unstarted_learner_keeps_its_generator_through_the_codec(cls, generator):
    """Its seed is drawn from the generator when the stream opens: saved as None, the
    restored learner drew from fresh entropy and each restore selected differently."""
    X, y = np.random.default_rng(0).random((40, 12)), np.arange(40) % 2
    saved = codec.unpackb(codec.packb(cls(2, random_state=generator()).to_state()))
    expected = cls(2, random_state=generator()).fit(X, y)
    for _ in range(2):
        restored = cls.from_state(saved).fit(X, y)
        np.testing.assert_array_equal(restored.coef_, expected.coef_)
        assert restored.selected_.tolist() == expected.selected_.tolist()


# ----------------------------------------------------------------------------- labels, scaling
def test_multiclass_labels_raise_with_names():
    m = OFS(2)
    with pytest.raises(ValueError, match=r"\['a', 'b', 'c'\]"):
        m.partial_fit(np.eye(3), ["a", "b", "c"])
    m = OFS(2).partial_fit(np.eye(3)[:2], [0, 1])
    with pytest.raises(ValueError, match=r"label\(s\) \[7\] besides its two classes \[0, 1\]"):
        m.learn_one(np.ones(3), 7)


def test_label_mistakes_are_named_in_every_entry_point():
    """partial_fit and learn_one: the checks and messages of fit (scikit-learn's)."""
    X = np.random.default_rng(0).normal(size=(20, 3))
    y = np.arange(20) % 2
    with pytest.warns(DataConversionWarning, match="column-vector y"):
        col = OFS(2).partial_fit(X, y.reshape(-1, 1))  # learned, as fit does
    np.testing.assert_array_equal(col.coef_, OFS(2).partial_fit(X, y).coef_)
    with pytest.raises(ValueError, match=r"y contains missing labels \(None, NaN or NA; 1 of 4\)"):
        OFS(2).partial_fit(X[:4], [0, 1, np.nan, 1])
    with pytest.raises(ValueError, match="Unknown label type: continuous"):
        OFS(2).partial_fit(X, np.linspace(0, 1, 20))
    with pytest.raises(ValueError, match=r"label\(s\) \[0, 1\] besides its two classes \[5, 7\]"):
        OFS(2, classes=[5, 7]).fit(X, y)
    with pytest.raises(ValueError, match=r"the label y is missing \(None\)"):
        OFS(2, n_features=3).learn_one({0: 1.0}, None)


@pytest.mark.parametrize("cls", [OFS, OFSPartial])
def test_missing_labels_of_pandas_are_named_not_learned(cls):
    """pandas' NA (a gap in an Int64 or string column) is no class: learned, it made every
    later label fail with pandas' bare "boolean value of NA is ambiguous"."""
    X = np.random.default_rng(0).normal(size=(6, 3))
    model = cls(2, random_state=0) if cls is OFSPartial else cls(2)
    with pytest.raises(ValueError, match=r"^the label y is missing \(<NA>\)$"):
        model.learn_one(X[0], pd.NA)
    assert not hasattr(model, "n_features_in_")  # a refused first instance starts nothing
    gaps = [np.array(["a", pd.NA, "b"], dtype=object), np.array([1, pd.NA, 0], dtype=object),
            np.array(["a", None, "b"], dtype=object)]
    for y in gaps:
        with pytest.raises(ValueError, match=r"^y contains missing labels \(None, NaN or NA; "
                                             r"1 of 3\): every instance needs a class$"):
            model.partial_fit(X[:3], y)
    model.partial_fit(X[:3], ["a", "b", "a"])  # the stream goes on as if they had not come
    assert model.n_seen_ == 3


def test_predict_and_learn_one_read_a_series_by_its_labels():
    import pandas as pd

    rng = np.random.default_rng(1)
    X = pd.DataFrame(rng.normal(size=(40, 4)), columns=list("abcd"))
    y = (X["a"] - X["c"] > 0).astype(int)
    row = X.iloc[0]
    m = OFS(2).fit(X, y)
    assert m.predict_one(row[::-1]) == m.predict_one(row) == m.predict(X.iloc[:1])[0]
    a, b = OFS(2).fit(X, y).learn_one(row, 1), OFS(2).fit(X, y).learn_one(row[::-1], 1)
    np.testing.assert_array_equal(a.coef_, b.coef_)


def test_provisional_label_sign_is_flipped_exactly():
    X, y = _stream(seed=6)
    labels = np.where(y > 0, "spam", "ham")
    labels[:5] = "spam"  # the first class seen ("spam") is the larger one -> +1 later
    fixed = OFS(5, classes=["ham", "spam"]).partial_fit(X, labels)
    lazy = OFS(5)
    for x, t in zip(X, labels):
        lazy.learn_one(x, t)
    np.testing.assert_allclose(lazy.coef_, fixed.coef_, atol=0)
    assert lazy.classes_.tolist() == ["ham", "spam"] and lazy.mistakes_ == fixed.mistakes_
    assert set(lazy.predict(X)) <= {"ham", "spam"}


def test_online_standardisation_hand_computed():
    m = OFS(2, normalize="standardize", eta=1.0, lam=0.0, radius=np.inf)
    m.learn_one(np.array([1.0, 5.0]), 1)  # first instance: z = 0 -> no change
    np.testing.assert_array_equal(m.coef_, [0.0, 0.0])
    m.learn_one(np.array([3.0, 5.0]), 1)  # mean [2, 5], std [1, 0] -> z = [1, 0]
    np.testing.assert_allclose(m.coef_, [1.0, 0.0])
    # predict uses the current statistics without updating them
    assert m.decision_function(np.array([[4.0, 9.0]]))[0] == pytest.approx(1.0)
    m.learn_one(np.array([2.0, 8.0]), -1)  # mean [2, 6], std [sqrt(2/3), sqrt(2)]
    z = np.array([0.0, 2.0 / np.sqrt(2.0)])
    np.testing.assert_allclose(m.coef_, [1.0, 0.0] - z / np.linalg.norm(z))


def _breast_cancer_arrays():
    from sklearn.datasets import load_breast_cancer

    return load_breast_cancer(return_X_y=True)


@pytest.mark.parametrize("make", [
    lambda: OFS(10, normalize="standardize"),
    lambda: OFSPartial(10, normalize="standardize", random_state=0, epsilon=0.5),
    lambda: PerceptronRandomPartial(15, normalize="standardize", random_state=0),
])
def test_standardisation_is_exact_for_columns_of_tiny_values(make):
    # z-scores do not depend on a column's scale, but sums of squares of values near 1e-200
    # underflow: the column's variance came out 0, its z-scores 0, and it dropped out of the
    # selection without a word. Scaled by a power of two, the column must give the same bits.
    X, y = _breast_cancer_arrays()
    plain = make().fit(X, y)
    for col in (27, 3):  # worst concave points (selected) and mean area (|x| up to 2,501)
        tiny = X.copy()
        tiny[:, col] *= 2.0**-700
        m = make().fit(tiny, y)
        assert np.array_equal(m.coef_, plain.coef_) and m.mistakes_ == plain.mistakes_
        # predictions use the same units without changing them
        assert np.array_equal(m.decision_function(tiny[:50]), plain.decision_function(X[:50]))
    near = X.copy()
    near[:, 27] *= 1e-200  # not a power of two: the same selection, up to rounding
    m = make().fit(near, y)
    assert m.selected_.tolist() == plain.selected_.tolist()
    np.testing.assert_allclose(m.coef_, plain.coef_, rtol=1e-9, atol=1e-12)


def test_a_column_that_starts_tiny_keeps_exact_statistics_when_ordinary_values_come():
    # its statistics are kept in units of 2**k while its values are tiny, and go back to
    # units of 1 when values of ordinary size (here up to the refusal bound, 1e40) arrive
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    X[:100, 0] *= 1e-250
    X[100:, 0] *= 1e39
    y = rng.choice([-1, 1], 200)
    m = OFS(2, normalize="standardize").partial_fit(X[:100], y[:100])
    u = m._unit[0]
    assert u > 2.0**700 and u == 2.0 ** np.round(np.log2(u))  # a power of two
    head = X[:100, 0] * u  # exact: a power of two
    np.testing.assert_allclose(m._mean[0] / u, head.mean() / u, rtol=1e-12)
    np.testing.assert_allclose(m._m2[0], ((head - head.mean()) ** 2).sum(), rtol=1e-12)
    m.partial_fit(X[100:], y[100:])
    assert m._unit[0] == 1.0 and np.isfinite(m.coef_).all()
    np.testing.assert_allclose(m._mean[0], X[:, 0].mean(), rtol=1e-12)
    np.testing.assert_allclose(m._m2[0] / 200, X[:, 0].var(), rtol=1e-12)


def test_the_units_of_the_statistics_survive_a_state_round_trip():
    X, y = _breast_cancer_arrays()
    X[:, 27] *= 1e-200
    whole = OFS(10, normalize="standardize").fit(X, y)
    first = OFS(10, normalize="standardize").partial_fit(X[:300], y[:300])
    state = codec.unpackb(codec.packb(first.to_state()))
    again = OFS.from_state(state).partial_fit(X[300:], y[300:])
    assert np.array_equal(again.coef_, whole.coef_)
    assert again._unit[27] > 1.0
    # a state written before the units existed: its statistics are in units of 1
    X, y = _breast_cancer_arrays()
    whole = OFS(10, normalize="standardize").fit(X, y)
    old = OFS(10, normalize="standardize").partial_fit(X[:300], y[:300]).to_state()
    assert old["stats"]["unit"] is None  # all in units of 1: nothing more is stored
    del old["stats"]["unit"]
    again = OFS.from_state(old)
    assert (again._unit == 1.0).all()
    assert np.array_equal(again.partial_fit(X[300:], y[300:]).coef_, whole.coef_)


# ----------------------------------------------------------------------------- real data
def test_ofs_beats_baselines_on_german():
    from streamfs.bench.ofs import run_full_input

    require_dataset("german")
    res = run_full_input("german", n_permutations=4, seed=0)
    ofs, pe, rnd = (np.mean(res["mistakes"][k]) for k in ("OFS", "PE_trun", "RAND"))
    assert ofs < pe and ofs < rnd


def test_ofs_partial_beats_baselines_on_splice():
    from streamfs.bench.ofs import run_partial_input

    require_dataset("splice")
    res = run_partial_input("splice", n_permutations=4, seed=0, budget=0.3)
    mean = {k: np.mean(v) for k, v in res["mistakes"].items()}
    assert res["B"] == 18
    assert all(mean["OFS_P"] < mean[k] for k in ("PE_rand", "OFS_rand", "RAND", "RAND_sele"))


def _overflowing(seed=0, n=40, d=6):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.where(np.arange(n) % 2, 1, -1)
    X[:, 0] += y
    return X, y


@pytest.mark.parametrize("cls", [OFS, PerceptronTruncation])
def test_rows_whose_norm_overflows_are_refused_before_learning(cls):
    # they used to become all zeros (1 / sqrt(inf)) and teach the model nothing, silently
    X, y = _overflowing()
    X[3:5, 2] = 1e300
    model = cls(n_features_to_select=2).partial_fit(X[:2], y[:2])
    before = model.coef_.copy()
    with pytest.raises(ValueError, match=r"rows \[1, 2\] of the block have an L2 norm beyond"):
        model.partial_fit(X[2:], y[2:])
    assert np.array_equal(model.coef_, before) and model.n_seen_ == 2
    ok = X.copy()
    ok[3:5, 2] = 1e150  # large, but every sum of squares is finite: learned as usual
    assert cls(n_features_to_select=2).fit(ok, y).n_seen_ == len(y)


@pytest.mark.parametrize("cls, params", [
    (OFS, {"normalize": False}),
    (OFS, {"normalize": "standardize"}),
    (OFSPartial, {"normalize": "standardize", "random_state": 1, "epsilon": 1.0}),
])
def test_values_that_would_overflow_the_weights_are_refused_with_an_error(cls, params):
    # refused before learning (RAW_ABS_LIMIT); before, learned and then voided by the
    # overflow check
    X, y = _overflowing()
    X[:, 1] = np.where(y > 0, 1.7e308, -1.7e308)
    with pytest.raises(ValueError, match="up to 1.7e\\+308.* rescale the features"):
        cls(n_features_to_select=6, **params).fit(X, y)


def test_an_overflowing_row_is_reported_even_when_later_rows_would_hide_it():
    # learned, the projection would divide by the infinite norm: w would become 0, the next
    # row would fold the zero scale into the weights, and the model would look fresh
    X, y = _overflowing()
    X[0] = 1.7e308
    with pytest.raises(ValueError, match="up to 1.7e\\+308.* rescale the features"):
        OFS(n_features_to_select=6, normalize=False).fit(X, y)


def test_weights_that_overflowed_void_the_block_with_an_error():
    # the check after learning stays as a defence (values within RAW_ABS_LIMIT did not reach
    # it in any measured stream): a model whose squared norm is no longer finite is void
    X, y = _overflowing()
    model = OFS(n_features_to_select=6, normalize=False).partial_fit(X[:2], y[:2])
    model._fst[1] = np.inf
    with pytest.raises(ValueError, match="overflowed float64 .* rescale the features"):
        model.partial_fit(X[2:], y[2:])


@pytest.mark.parametrize("cls, params", [
    (OFS, {}), (OFS, {"normalize": "standardize"}), (PerceptronTruncation, {}),
    (RandomSelection, {"random_state": 0}), (RandomSelection, {"redraw": True}),
    (OFSPartial, {"random_state": 0}), (OFSPartial, {"normalize": "standardize"}),
    (OFSRandomPartial, {}), (PerceptronRandomPartial, {}),
])
def test_the_memory_bound_counts_the_arrays_the_learner_holds(cls, params):
    d = 1000
    model = cls(n_features_to_select=10, n_features=d, **params)
    model.partial_fit(np.eye(d)[:2], [1, -1])
    held = sum(v.nbytes for v in vars(model).values()
               if isinstance(v, np.ndarray) and v.shape in ((d,), ((d + 7) // 8,)))
    per = model._bytes_per_feature()
    # RandomSelection's draw also uses a temporary array of stamps (8 bytes a feature); the
    # support bitmap's eighth of a byte per feature is counted as a whole byte
    assert d * (per - 1 - 8 * isinstance(model, RandomSelection)) < held <= d * per
    # (it said "use n_features <= 0" for a budget below one feature: the data's d is no choice)
    with pytest.raises(ValueError, match=rf"n_features={d} x {per} bytes .* \(room for "
                                         rf"{(d * per - 1) // per} features\): give "
                                         rf"max_buffer_bytes={d * per} or more"):
        cls(n_features_to_select=10, n_features=d, max_buffer_bytes=d * per - 1,
            **params).partial_fit(np.eye(d)[:2], [1, -1])
    bare = cls(n_features_to_select=10, max_buffer_bytes=d * per - 1, **params)
    with pytest.raises(ValueError, match="exceeds max_buffer_bytes"):  # d from the first block
        bare.partial_fit(np.eye(d)[:2], [1, -1])


@pytest.mark.parametrize("d, k, B", [(25, None, 3), (45, None, 5), (24, None, 2), (5, 0.5, 3),
                                      (4, None, 1), (30, 40, 30)])
def test_default_and_fractional_budgets_round_halves_up_as_the_authors_scripts(d, k, B):
    # the authors' MATLAB scripts take round(0.1 d): 2.5 -> 3, where Python's round gives 2
    rng = np.random.default_rng(0)
    m = OFS(k, n_features=d).partial_fit(rng.normal(size=(200, d)), rng.choice([-1, 1], 200))
    assert m.budget_ == len(m.selected_) == B


@pytest.mark.parametrize("make", [lambda: OFSPartial(2, random_state=0),
                                  lambda: OFSRandomPartial(2, random_state=0),
                                  lambda: PerceptronRandomPartial(2, random_state=0),
                                  lambda: OFS(2, normalize=False),
                                  lambda: OFS(2, normalize="standardize")])
def test_unscaled_values_beyond_the_limit_are_refused_before_learning(make):
    # 1e100 overflowed the kernel's w = scale * v arithmetic part way (a void model, and a
    # dead letter the producer could not foresee); 1e30 is learned as before
    from streamfs.algorithms.opening import check_values

    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(100, 6)), rng.integers(0, 2, 100)
    m = make()
    # standardize scales to unit norm too: its running statistics are what overflows
    why = ("its running means and variances of the raw values" if m.normalize == "standardize"
           else "without unit-norm scaling its weights' arithmetic")
    with pytest.raises(ValueError, match=rf"\|x\| up to 3.33e\+100; with normalize=.* values "
                                         rf"must stay within 1e\+40, or {why} overflow"):
        m.partial_fit(X * 1e100, y)
    assert m.n_seen_ == 0
    with pytest.raises(ValueError, match="rescale the features"):
        check_values("instances", make(), X * 1e100)
    check_values("instances", make(), X * 1e30)
    assert make().partial_fit(X * 1e30, y).n_seen_ == 100


@pytest.mark.parametrize("make", [lambda: OFS(2, n_features=3),
                                  lambda: OFSPartial(2, n_features=3, random_state=0)])
def test_labels_of_another_type_than_the_first_block_are_refused(make):
    x = np.array([0.5, -1.0, 2.0])
    for first, then in (("a", 1), (1, "a")):
        m = make().learn_one(x, first)
        with pytest.raises(ValueError, match=r"^Mix of label input types \(string and number\)$"):
            m.learn_one(x, then)
        with pytest.raises(ValueError, match=r"^Mix of label input types"):
            m.partial_fit(x[None, :], np.array([then], dtype=object))
        assert m.classes_.tolist() == [first] and m.n_seen_ == 1
        m.learn_one(x, first)  # the stream goes on
        assert m.n_seen_ == 2


# ------------------------------------------------------------------ scaling advice
def _breast_cancer():
    from sklearn.datasets import load_breast_cancer

    return load_breast_cancer(return_X_y=True, as_frame=True)


@pytest.mark.parametrize("cls", [OFS, PerceptronTruncation, RandomSelection])
def test_unit_norm_scaling_warns_where_a_few_columns_dominate_the_norm(cls):
    # unscaled breast cancer under the default (the paper's unit-norm rows): the areas reach
    # thousands against the median column's ~0.3, and OFS learns little more than the
    # majority class (183 mistakes of 569; 212 for always "benign"); standardised, 84
    import warnings

    X, y = _breast_cancer()
    with pytest.warns(UserWarning, match=r"^" + cls.__name__ + r"\(normalize=True\) scales each "
                      r"instance to unit L2 norm, and columns 3 \('mean area'\), 23 \('worst "
                      r"area'\) reach over 1,000 times the median column's \|x\| at the "
                      r"stream's start: .* Pass normalize='standardize'") as rec:
        model = cls(n_features_to_select=5).fit(X, y)
    assert len(rec) == 1
    with warnings.catch_warnings():  # once, at the stream's start
        warnings.simplefilter("error", UserWarning)
        model.partial_fit(X, y)
        cls(n_features_to_select=5, normalize="standardize").fit(X, y)
        cls(n_features_to_select=5).fit(X / X.abs().max(), y)  # scaled first: none
    # without names the columns are numbered; and the first block alone is looked at
    stream = cls(n_features_to_select=5)
    with pytest.warns(UserWarning, match=r"and columns 3, 23 reach over 1,000 times"):
        stream.partial_fit(X.to_numpy()[:10], y[:10])
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        stream.partial_fit(X.to_numpy()[10:], y[10:])
    # no figure of the block in the text: the splits of an evaluation, each a stream of its
    # own, give one message, which Python shows once
    texts = {cls()._data_advice(X.to_numpy()[a:b]) for a, b in ((0, 10), (100, 300), (7, 71))}
    assert len(texts) == 1


def test_scaling_advice_needs_a_gap_of_a_thousand_and_covers_values_taken_as_they_are():
    import warnings

    rng = np.random.default_rng(0)
    X = rng.uniform(0.5, 1.0, size=(100, 9))
    y = np.arange(100) % 2
    X[:, 4] *= 900  # under DOMINANT_RATIO (1,000) times the median column
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        OFS(n_features_to_select=3).fit(X, y)
        OFSPartial(n_features_to_select=3, random_state=0).fit(X, y)
    X[:, 4] *= 3
    with pytest.warns(UserWarning, match=r"column 4 reaches over 1,000 times"):
        OFS(n_features_to_select=3).fit(sp.csr_matrix(X), y)
    # values taken as given (the partial-input learners' default): the same gap, said so
    said = (r"\(normalize=False\) takes the values as they are, and column 4 reaches .* almost "
            r"all of every score")
    with pytest.warns(UserWarning, match=said):
        PerceptronTruncation(n_features_to_select=3, normalize=False).fit(X, y)
    # a partial-input learner reads only the attributes it observes, so the producer and the
    # worker, which have the data anyway, give its advice (streamfs.algorithms.opening.open_advice)
    partial = OFSPartial(n_features_to_select=3, random_state=0)
    assert re.search(said, partial._data_advice(X))
    assert OFSPartial(n_features_to_select=3, normalize="standardize")._data_advice(X) is None
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        partial.fit(X, y)


def test_a_budget_above_the_dimension_keeps_every_feature_with_a_warning():
    """As scikit-learn's SelectKBest says it: ``n_features_to_select`` over ``d`` selects
    nothing out. A fraction or ``None`` cannot exceed ``d``: no warning."""
    import warnings

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(40, 6)), np.arange(40) % 2
    with pytest.warns(UserWarning, match=r"^n_features_to_select=9 is greater than "
                                         r"n_features=6: all the features will be kept$"):
        m = OFS(9).fit(X, y)
    assert m.budget_ == 6
    with pytest.warns(UserWarning, match="n_features_to_select=7 is greater"):
        OFSPartial(7, n_features=6, random_state=0).attributes_to_observe()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for k in (6, 1.0, None):
            OFS(k).fit(X, y)
    # and before a producer publishes the stream (the worker would only log it)
    from streamfs.algorithms.opening import open_advice

    assert open_advice(OFS(9, normalize="standardize"), X=X) == [
        "n_features_to_select=9 is greater than n_features=6: all the features will be kept"]
    assert open_advice(OFS(6, normalize="standardize"), X=X) == []


def test_classes_mixing_numbers_and_text_is_said_as_such():
    """`classes=[-1, "1"]` was "classes must be None or a list of two distinct labels": they
    are distinct, but a number and a text do not sort."""
    for call in (lambda: OFS(classes=[-1, "1"]).partial_fit(np.eye(3)[:2], [-1, -1]),
                 lambda: OFS().partial_fit(np.eye(3)[:2], [-1, -1], classes=[-1, "1"])):
        with pytest.raises(ValueError, match=r"classes mixes numbers and text \(\[-1, '1'\]\)"):
            call()
    with pytest.raises(ValueError, match="two distinct labels, got \\[0, 0\\]"):
        OFS(classes=[0, 0]).partial_fit(np.eye(3)[:2], [0, 0])
