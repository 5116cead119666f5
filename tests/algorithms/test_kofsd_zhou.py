"""K-OFSD ``compat="zhou"``: the fast kernels against a brute-force reading of the authors' code.

The reading (K-OFSD issue): for a feature set S, full distance rows from raw differences, squared
and divided by the sample variance, summed over the features of S in selection order, square
root; one stable ascending sort per row; the neighbours are positions 2..K+1 (the instance
itself is usually position 1). The label 0 is the large class (``[p == K]``), every other label
scores ``p / K``; the dependency is the float mean of the cards, summed in instance order.
Written here independently of :mod:`streamfs.algorithms.neighbourhood` (only the variance is
shared: its rounding is a documented choice of the library).
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

from streamfs.algorithms.kofsd import KOFSD
from streamfs.algorithms.neighbourhood import sample_variances
from streamfs.algorithms.neighbourhood_kernels import fallback_count
from tests.external import load_or_skip

# the authors' K_OFSD.m on dlbcl_gems5469 (class 1 -> 1, the rest -> 0; K = 7, alpha = 0.5)
DLBCL_AUTHORS = [51, 65, 225, 244, 292, 349, 452, 477, 498, 583, 688, 772, 855, 892, 911, 929,
                 948, 972, 1413, 1599, 2970, 3227, 3247]  # fmt: skip


def brute_dependency(D: np.ndarray, y: np.ndarray, k: int) -> float:
    D = D.copy()
    np.fill_diagonal(D, 0.0)  # squareform's diagonal, also where the distances are NaN
    order = np.argsort(np.sqrt(D), axis=1, kind="stable")  # one stable sort per row, NaN last
    nb = order[:, 1 : k + 1]  # positions 2..K+1
    p = (y[nb] == y[:, None]).sum(axis=1)
    cards = [(1.0 if p[i] == k else 0.0) if y[i] == 0 else p[i] / k for i in range(y.size)]
    total = 0.0
    for c in cards:  # left to right, in instance order
        total += c
    return total / y.size


def brute_zhou(X: np.ndarray, y: np.ndarray, k: int = 7, alpha: float = 0.5) -> list[int]:
    """Algorithm 5 on :func:`brute_dependency` (with the round(sqrt(p)) fallback)."""
    X = np.asarray(X, dtype=np.float64)
    var = sample_variances(X)
    S: list[int] = []
    DS = None
    dep = 0.0
    singles = []
    for f in range(X.shape[1]):
        if var[f] == 0.0:  # constant: MATLAB's std, 0 or (its mean rounded away) tiny
            mean = np.cumsum(X[:, f])[-1] / X.shape[0]
            var[f] = np.sum((X[:, f] - mean) ** 2) / (X.shape[0] - 1)
        diff = X[:, f][:, None] - X[:, f][None, :]
        with np.errstate(invalid="ignore"):
            Df = diff * diff / var[f]  # 0 / 0: NaN
        d1 = brute_dependency(Df, y, k)
        singles.append(d1)
        if d1 <= alpha:
            continue
        if d1 > dep:
            S, DS, dep = [f], Df, d1
            continue
        Dj = DS + Df
        dj = brute_dependency(Dj, y, k)
        if dj > dep:
            S, DS, dep = S + [f], Dj, dj
    if not S:
        order = np.argsort(-np.asarray(singles), kind="stable")
        return order[: fallback_count(X.shape[1])].tolist()
    return S


def minority_vs_rest(y: np.ndarray) -> np.ndarray:
    """1 for the smallest class (ties: first in sorted order), 0 for the rest."""
    classes, counts = np.unique(y, return_counts=True)
    return (y == classes[int(np.argmin(counts))]).astype(np.int64)


def _load(name: str):
    X, y = load_or_skip(name)
    return np.asarray(X, dtype=np.float64), y


def test_brute_force_agrees_with_fast_on_small_streams():
    rng = np.random.default_rng(11)
    for trial in range(20):
        n, p = int(rng.integers(12, 40)), int(rng.integers(2, 12))
        y = (rng.random(n) < 0.3).astype(np.int64)
        y[:2] = [0, 1]
        if trial % 2:
            X = rng.integers(0, 4, size=(n, p)).astype(float)  # ties everywhere
        else:
            X = rng.normal(size=(n, p))
        X[:, ::3] += 1.5 * y[:, None]
        k = int(rng.integers(1, 6))
        fast = KOFSD(k=k, alpha=0.3, compat="zhou").fit(X, y).selected_.tolist()
        assert fast == brute_zhou(X, y, k, 0.3), trial


def test_dlbcl_gems5469_matches_the_authors_code():
    X, y = _load("dlbcl_gems5469")
    y01 = (y == 1).astype(np.int64)  # minority class 1 -> 1, the rest -> 0
    assert y01.sum() == 19
    sel = KOFSD(k=7, alpha=0.5, compat="zhou").fit(X, y01)
    assert sel.selected_.tolist() == DLBCL_AUTHORS
    # feature 948 joins on the float mean alone: Dep(S + 948) has the same integer numerator
    # as Dep(S), so the exact mean of the default mode does not admit it
    assert 948 not in KOFSD(k=7, alpha=0.5).fit(X, y01).selected_.tolist()


MICROARRAY = ["colon", "leukemia", "srbct", "lym", "glioma", "dlbcl_gems5469",
              "dlbcl_shipp7129", "leukemia_golub38_multtest", "lung", "car_substitute_11tumors"]
SLOW = {"lung", "car_substitute_11tumors"}  # 12,533 features x (N = 181, 174): ~15 s each


@pytest.mark.parametrize("name", MICROARRAY)
def test_fast_equals_brute_force_on_microarrays(name):
    if name in SLOW and not os.environ.get("STREAMFS_SLOW_TESTS"):
        pytest.skip("about 15 s of brute force: set STREAMFS_SLOW_TESTS=1")
    X, y = _load(name)
    y01 = minority_vs_rest(y)
    fast = KOFSD(k=7, alpha=0.5, compat="zhou").fit(X, y01).selected_.tolist()
    assert fast == brute_zhou(X, y01, 7, 0.5)


def test_no_label_zero_runs_like_the_authors_code():
    rng = np.random.default_rng(4)
    n = 40
    y = np.where(rng.random(n) < 0.25, 2, 1)
    y[:2] = [1, 2]
    X = rng.normal(size=(n, 8))
    X[:, [2, 5]] += 2.0 * (y == 2)[:, None]
    with pytest.warns(UserWarning, match="no label 0"):
        sel = KOFSD(k=3, alpha=0.5, compat="zhou").fit(X, y)
    assert sel.large_class_ is None
    assert sel.selected_.tolist() == brute_zhou(X, y, 3, 0.5)  # y has no 0: no large class
    back = KOFSD.from_state(sel.to_state())
    assert back.large_class_ is None and back.selected_.tolist() == sel.selected_.tolist()
    # with the labels recoded 1 -> 0, the large class exists and the result differs in general
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        KOFSD(k=3, alpha=0.5, compat="zhou").fit(X, y - 1)


# lofs_spect (267 x 22, labels 1/2): with no label 0 every card is p / K, no feature passes
# alpha = 0.5 and the end-of-stream fallback keeps the round(sqrt(22)) = 5 best single features
SPECT_SELECTION = [5, 14, 0, 1, 2]


def test_spect_without_label_zero():
    X, y = _load("lofs_spect")
    assert 0 not in np.unique(y)
    with pytest.warns(UserWarning, match="no label 0"):
        sel = KOFSD(k=7, alpha=0.5, compat="zhou").fit(X, y)
    assert sel.selected_.tolist() == brute_zhou(X, np.asarray(y), 7, 0.5)
    assert sel.selected_.tolist() == SPECT_SELECTION and sel.dependency_ == 0.0


@pytest.mark.parametrize("value", [0.0, 3.0, 0.7])  # 0.7: its mean over N rounds away
def test_constant_columns_run_like_the_authors_code(value):
    # the authors' seuclidean distances on a constant column are NaN (0 / 0), or all 0 where
    # MATLAB's mean rounds away from the value: the neighbours are then taken by index, and
    # with the large class first the column passes alpha; it was irrelevant here
    rng = np.random.default_rng(5)
    n = 45
    y = np.r_[np.zeros(36, np.int64), np.ones(9, np.int64)]
    X = rng.normal(size=(n, 9))
    X[:, [4, 7]] += 1.2 * y[:, None]
    X[:, [1, 5]] = value
    assert (np.cumsum(X[:, 1])[-1] / n == value) == (value != 0.7)
    expected = brute_zhou(X, y, 3, 0.5)
    assert 1 in expected  # the constant column replaces S: the case this test is about
    for cut in (None, 2, 6):
        sel = KOFSD(k=3, alpha=0.5, compat="zhou")
        if cut is None:
            sel.fit(X, y)
        else:  # through a state taken while the constant column is in S, or after
            sel.partial_fit(X[:, :cut], y)
            sel = KOFSD.from_state(sel.to_state()).partial_fit(X[:, cut:]).finish()
        assert sel.selected_.tolist() == expected, cut
    # the default mode: constant columns carry no information
    assert not {1, 5} & set(KOFSD(k=3, alpha=0.5).fit(X, y).selected_.tolist())


def test_constant_columns_in_random_streams_match_brute_force():
    rng = np.random.default_rng(21)
    for trial in range(30):
        n, p = int(rng.integers(10, 30)), int(rng.integers(3, 10))
        y = (rng.random(n) < 0.3).astype(np.int64)
        y[:2] = [0, 1]
        if trial % 3 == 0:
            y = np.sort(y)  # the large class first: constant columns pass alpha
        X = rng.normal(size=(n, p))
        X[:, ::3] += 1.5 * y[:, None]
        X[:, rng.random(p) < 0.3] = rng.choice([0.0, 1.0, 0.1, 0.7])
        k = int(rng.integers(1, 5))
        fast = KOFSD(k=k, alpha=0.3, compat="zhou").fit(X, y).selected_.tolist()
        assert fast == brute_zhou(X, y, k, 0.3), trial
