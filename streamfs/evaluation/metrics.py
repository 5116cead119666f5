"""Evaluation measures: G-mean, AUC, redundancy rate, symmetrical uncertainty and the
matching-based selection stability of Yu, Ding and Loscalzo (KDD 2008)."""

from __future__ import annotations

from itertools import combinations
from typing import Sequence

import numpy as np
from scipy.optimize import linear_sum_assignment

__all__ = [
    "g_mean",
    "auc",
    "redundancy_rate",
    "discretize",
    "symmetrical_uncertainty",
    "su_matrix",
    "matching_similarity",
    "selection_stability",
]


def g_mean(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Geometric mean of the per-class recalls; for two classes ``sqrt(TPR * TNR)``.

    Classes are those present in ``y_true`` (a class never predicted has recall 0, so
    G-mean 0: the point of the measure on imbalanced data).

    >>> g_mean(np.array([1, 1, 1, 1, 0, 0]), np.array([1, 1, 1, 0, 0, 1]))  # sqrt(3/4 * 1/2)
    0.6123724356957945
    """
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    recalls = [np.mean(y_pred[y_true == c] == c) for c in np.unique(y_true)]
    return float(np.prod(recalls) ** (1.0 / len(recalls)))


def auc(y_true: np.ndarray, scores: np.ndarray, classes: np.ndarray) -> float:
    """Area under the ROC curve; several classes: unweighted mean of the one-vs-rest AUCs.

    ``scores``: ``(n,)`` scores of ``classes[1]`` for two classes, else ``(n, K)`` one column
    per class of ``classes``. Classes absent from ``y_true`` (or the only one present) are
    skipped; ``nan`` if no class can be scored.

    >>> auc(np.array([0, 0, 1, 1]), np.array([0.1, 0.4, 0.35, 0.8]), np.array([0, 1]))
    0.75
    """
    from sklearn.metrics import roc_auc_score

    y_true, scores = np.asarray(y_true), np.asarray(scores, dtype=np.float64)
    if scores.ndim == 1:
        scores = np.column_stack([-scores, scores])
    values = []
    for k, c in enumerate(classes):
        pos = y_true == c
        if 0 < pos.sum() < pos.size:
            values.append(roc_auc_score(pos, scores[:, k]))
        if len(classes) == 2:  # both columns give the same AUC
            values = values[-1:] if values else []
    return float(np.mean(values)) if values else float("nan")


def _pearson_abs(X: np.ndarray) -> np.ndarray:
    """``|rho|`` between the columns of ``X``; a constant column correlates 0 with all."""
    Xc = np.asarray(X, dtype=np.float64)
    Xc = Xc - Xc.mean(axis=0)
    norms = np.linalg.norm(Xc, axis=0)
    norms[norms == 0] = np.inf
    Xc = Xc / norms
    return np.abs(Xc.T @ Xc)


def redundancy_rate(X: np.ndarray, features: Sequence[int]) -> float:
    """GDM paper's ``RED(F) = 1/(m(m-1)) * sum_{i>j} |rho(f_i, f_j)|`` over the ``m`` selected
    features, exactly as printed (unordered pairs, so ``RED <= 1/2``); 0 when ``m < 2``.

    >>> X = np.array([[1., 2., 0.], [2., 4., 1.], [3., 6., 0.]])
    >>> round(redundancy_rate(X, [0, 1, 2]), 6)  # |rho| of the pairs: 1, 0, 0 -> 1 / 6
    0.166667
    """
    features = np.asarray(features, dtype=np.int64)
    m = features.size
    if m < 2:
        return 0.0
    Z = _dense(X[:, features]).astype(np.float64)
    Z = Z - Z.mean(axis=0)
    norms = np.linalg.norm(Z, axis=0)
    norms[norms == 0] = np.inf
    Z = Z / norms
    total = 0.0
    for i in range(0, m, 1024):  # row blocks of |R|: bounded memory for large selections
        block = np.abs(Z[:, i : i + 1024].T @ Z[:, i:])
        total += np.triu(block, 1).sum()
    return float(total / (m * (m - 1)))


def _dense(X) -> np.ndarray:
    return X.toarray() if hasattr(X, "toarray") else np.asarray(X)


def discretize(X: np.ndarray, n_bins: int = 5) -> np.ndarray:
    """Integer codes per column: columns with at most ``n_bins`` distinct values keep them
    (as their rank); others are cut into ``n_bins`` equal-frequency bins (quantiles of the
    column, so ties may merge bins).

    >>> discretize(np.array([[0.1, 7], [0.2, 7], [0.3, 9], [0.4, 9]]), n_bins=2).T.tolist()
    [[0, 0, 1, 1], [0, 0, 1, 1]]
    """
    X = _dense(X)
    codes = np.empty(X.shape, dtype=np.int64)
    for j in range(X.shape[1]):
        col = X[:, j]
        values, inv = np.unique(col, return_inverse=True)
        if values.size <= n_bins:
            codes[:, j] = inv
        else:
            edges = np.quantile(col, np.linspace(0, 1, n_bins + 1)[1:-1])
            codes[:, j] = np.searchsorted(edges, col, side="right")
    return codes


def _entropy(counts: np.ndarray, n: int) -> float:
    p = counts[counts > 0] / n
    return float(-(p * np.log2(p)).sum())


def symmetrical_uncertainty(a: np.ndarray, b: np.ndarray) -> float:
    """``SU(a, b) = 2 IG(a|b) / (H(a) + H(b))`` of two discrete vectors (base-2 entropies);
    1 if both are constant (identical information), 0 if only one is.

    >>> round(symmetrical_uncertainty(np.array([0, 0, 1, 1]), np.array([0, 0, 0, 1])), 4)
    0.3437
    """
    a = np.unique(np.asarray(a), return_inverse=True)[1]
    b = np.unique(np.asarray(b), return_inverse=True)[1]
    n = a.size
    ha = _entropy(np.bincount(a), n)
    hb = _entropy(np.bincount(b), n)
    if ha + hb == 0:
        return 1.0
    hab = _entropy(np.bincount(a * (b.max() + 1) + b), n)
    return float(max(0.0, 2.0 * (ha + hb - hab) / (ha + hb)))


def su_matrix(codes: np.ndarray) -> np.ndarray:
    """Pairwise SU between the columns of an integer code matrix (see :func:`discretize`)."""
    m = codes.shape[1]
    S = np.eye(m)
    for i, j in combinations(range(m), 2):
        S[i, j] = S[j, i] = symmetrical_uncertainty(codes[:, i], codes[:, j])
    return S


def matching_similarity(W: np.ndarray) -> float:
    """Similarity of two selections from their feature-similarity matrix ``W``
    (``|S1| x |S2|``): weight of the maximum weighted bipartite matching (Hungarian
    algorithm) divided by ``(|S1| + |S2|) / 2``. Two empty selections: ``nan`` (nothing to
    compare: as 1, an algorithm that never selects anything showed perfect stability); one
    empty: 0.

    Identical selections score 1 (each feature matched to itself with weight 1); unmatched
    features of the larger set contribute 0, which penalises different sizes.

    >>> W = np.array([[0.9, 0.8, 0.0],   # greedy would take 0.9 and then only 0.1
    ...               [0.7, 0.1, 0.0]])
    >>> matching_similarity(W)  # 0.8 + 0.7 = 1.5 over (2 + 3) / 2
    0.6
    """
    W = np.asarray(W, dtype=np.float64)
    n1, n2 = W.shape
    if n1 == 0 and n2 == 0:
        return float("nan")
    if n1 == 0 or n2 == 0:
        return 0.0
    rows, cols = linear_sum_assignment(W, maximize=True)
    return float(W[rows, cols].sum() / ((n1 + n2) / 2.0))


def selection_stability(
    X: np.ndarray,
    selections: Sequence[Sequence[int]],
    weight: str = "su",
    n_bins: int = 5,
    max_union: int = 1000,
) -> float:
    """Mean :func:`matching_similarity` over all pairs of ``selections`` (runs on different
    subsamples), with edge weights between features computed on the whole ``X``:
    ``"su"`` (symmetrical uncertainty of :func:`discretize`-d columns, Yu et al. 2008) or
    ``"correlation"`` (``|rho|``). ``nan`` for fewer than two selections, or when the
    selections together hold more than ``max_union`` features (the pairwise weights would
    take too long: e.g. OFS keeping 10% of dorothea's 100000 features), or when every
    selection is empty; pairs of two empty selections are left out of the mean.

    >>> X = np.array([[0, 0, 1], [0, 0, 0], [1, 1, 1], [1, 1, 0]])  # columns 0 and 1 equal
    >>> round(selection_stability(X, [[0], [1], [0, 2]]), 4)  # pairs: 1, 2/3 (0~0), 2/3 (1~0)
    0.7778
    """
    if len(selections) < 2:
        return float("nan")
    sels = [np.asarray(s, dtype=np.int64) for s in selections]
    union = np.unique(np.concatenate(sels)) if any(s.size for s in sels) else np.zeros(0, int)
    if union.size > max_union:
        return float("nan")
    pos = {int(f): i for i, f in enumerate(union)}
    cols = _dense(X[:, union]) if union.size else np.zeros((X.shape[0], 0))
    if weight == "su":
        S = su_matrix(discretize(cols, n_bins))
    elif weight == "correlation":
        S = _pearson_abs(cols)
        np.fill_diagonal(S, 1.0)
    else:
        raise ValueError(f"weight must be 'su' or 'correlation', got {weight!r}")
    sims = []
    for a, b in combinations(sels, 2):
        ia = [pos[int(f)] for f in a]
        ib = [pos[int(f)] for f in b]
        sims.append(matching_similarity(S[np.ix_(ia, ib)]))
    sims = [v for v in sims if not np.isnan(v)]  # pairs of empty selections compare nothing
    return float(np.mean(sims)) if sims else float("nan")
