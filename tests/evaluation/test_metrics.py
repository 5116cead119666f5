"""Metrics against hand-computed values."""

import math

import numpy as np
import pytest

from streamfs.evaluation import metrics as M


def test_g_mean_binary_is_sqrt_tpr_tnr():
    y = np.array([1, 1, 1, 1, 0, 0, 0, 0, 0, 0])
    pred = np.array([1, 1, 1, 0, 0, 0, 0, 0, 1, 1])  # TPR 3/4, TNR 4/6
    assert M.g_mean(y, pred) == pytest.approx(math.sqrt(0.75 * 4 / 6))  # 0.7071


def test_g_mean_zero_when_a_class_is_never_right_and_multiclass_geometric():
    assert M.g_mean(np.array([0, 0, 0, 1]), np.array([0, 0, 0, 0])) == 0.0
    y = np.array(["a", "a", "b", "b", "c", "c"])
    pred = np.array(["a", "a", "b", "c", "c", "a"])  # recalls 1, 1/2, 1/2
    assert M.g_mean(y, pred) == pytest.approx(0.25 ** (1 / 3))


def test_auc_binary_and_macro_one_vs_rest():
    # positives 0.35, 0.8 vs negatives 0.1, 0.4: 3 of 4 pairs ordered
    assert M.auc(np.array([0, 0, 1, 1]), np.array([0.1, 0.4, 0.35, 0.8]), np.arange(2)) == 0.75
    y = np.array([0, 1, 2, 2])
    S = np.array([[1.0, 0.0, 0.0],   # class 0 column perfect: AUC 1
                  [0.0, 0.2, 0.0],   # class 1: 0.2 vs 0.3, 0.1, 0.1 -> 2/3
                  [0.0, 0.3, 1.0],   # class 2: 1.0, 0.5 vs 0.0, 0.0 -> 1
                  [0.0, 0.1, 0.5]])
    assert M.auc(y, S, np.arange(3)) == pytest.approx((1 + 2 / 3 + 1) / 3)


def test_redundancy_rate_follows_gdm_definition():
    a = np.array([1.0, 2.0, 3.0, 4.0])
    b = np.array([1.0, 3.0, 2.0, 4.0])  # rho(a, b) = 4 / 5 = 0.8
    c = np.array([1.0, -1.0, -1.0, 1.0])  # orthogonal to the centred a and b
    X = np.column_stack([a, b, c, -a])
    assert M.redundancy_rate(X, [0, 1]) == pytest.approx(0.8 / 2)
    # pairs: ab .8, ac 0, a(-a) 1, bc 0, b(-a) .8, c(-a) 0 -> 2.6 / (4 * 3)
    assert M.redundancy_rate(X, [0, 1, 2, 3]) == pytest.approx(2.6 / 12)
    assert M.redundancy_rate(X, [2]) == 0.0
    assert M.redundancy_rate(np.column_stack([a, np.ones(4)]), [0, 1]) == 0.0


def test_symmetrical_uncertainty_hand_value():
    # H(a) = 1, H(b) = 0.811278, H(a, b) = 1.5 -> SU = 2 * 0.311278 / 1.811278
    su = M.symmetrical_uncertainty(np.array([0, 0, 1, 1]), np.array([0, 0, 0, 1]))
    assert su == pytest.approx(0.343712, abs=1e-6)
    assert M.symmetrical_uncertainty(np.array([0, 1, 0, 1]), np.array([0, 0, 1, 1])) == 0.0
    assert M.symmetrical_uncertainty(np.array([5, 7, 7]), np.array(["x", "y", "y"])) == 1.0


def test_discretize_equal_frequency_and_small_columns_kept():
    X = np.column_stack([np.arange(10.0), np.r_[np.zeros(5), 3 * np.ones(5)]])
    codes = M.discretize(X, n_bins=5)
    assert codes[:, 0].tolist() == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]
    assert codes[:, 1].tolist() == [0] * 5 + [1] * 5


def test_matching_similarity_is_the_optimal_matching_not_greedy():
    W = np.array([[0.9, 0.8], [0.7, 0.1]])
    assert M.matching_similarity(W) == pytest.approx((0.8 + 0.7) / 2)  # greedy: 1.0 / 2
    # identical pair plus one extra feature: 2 / ((2 + 3) / 2)
    assert M.matching_similarity(np.array([[1, 0, 0.0], [0, 1, 0.0]])) == pytest.approx(0.8)
    assert math.isnan(M.matching_similarity(np.zeros((0, 0))))  # was 1: "perfectly stable"
    assert M.matching_similarity(np.zeros((0, 3))) == 0.0


def test_selection_stability_correlation_and_su_weights():
    a = np.array([1.0, 2.0, 3.0, 4.0])
    b = np.array([1.0, 3.0, 2.0, 4.0])
    X = np.column_stack([a, 2 * a, b])
    # |rho|: (0,1) = 1, (0,2) = (1,2) = 0.8
    assert M.selection_stability(X, [[0], [1], [2]], weight="correlation") == pytest.approx(
        (1 + 0.8 + 0.8) / 3)
    # runs {0, 2} and {1}: best match 1~0 weight 1, over (2 + 1) / 2
    assert M.selection_stability(X, [[0, 2], [1]], weight="correlation") == pytest.approx(2 / 3)
    # SU: columns 0 and 1 carry the same information; 4 distinct values, n_bins=4 keeps them
    assert M.selection_stability(X, [[0], [1]], weight="su", n_bins=4) == 1.0
    assert math.isnan(M.selection_stability(X, [[0]]))
    assert math.isnan(M.selection_stability(X, [[], [], []]))  # never selects: no stability
    assert M.selection_stability(X, [[], [], [0]]) == 0.0  # the empty pair left out
    with pytest.raises(ValueError, match="weight"):
        M.selection_stability(X, [[0], [1]], weight="bogus")


def test_redundancy_rate_blocks_match_the_full_matrix():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 1500))
    X[:, 1] = X[:, 0]
    Z = (X - X.mean(0)) / np.linalg.norm(X - X.mean(0), axis=0)
    full = np.triu(np.abs(Z.T @ Z), 1).sum() / (1500 * 1499)
    assert M.redundancy_rate(X, np.arange(1500)) == pytest.approx(full)


def test_selection_stability_skips_huge_unions():
    X = np.eye(5)
    assert math.isnan(M.selection_stability(X, [[0, 1], [2, 3]], max_union=3))
