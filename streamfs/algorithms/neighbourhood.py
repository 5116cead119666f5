"""K-nearest-neighbour dependency measures of neighbourhood rough set theory (K-OFSD).

The dependency of the class on a feature subset ``S`` is the mean, over all instances ``x``, of a
*card* value that says how well the ``K`` nearest neighbours of ``x`` on ``S`` agree with the
label of ``x`` (Zhou et al., "Online feature selection for high-dimensional class-imbalanced
data", Knowledge-Based Systems 136, 2017, Algorithms 3-4 and Section 3.4).

Distances are standardised Euclidean, ``sqrt(sum_f (a_f - b_f)**2 / var_f)`` with ``var_f`` the
sample variance (``N - 1``) of feature ``f``, always evaluated from raw differences so that the
one-feature kernel, the incremental kernel and the reference implementation round identically.
Neighbours are ordered by ``(distance, instance index)``. Two neighbour rules exist:

* default: the ``K`` nearest *other* instances;
* ``zhou`` (the authors' MATLAB code): positions ``2..K+1`` of a stable ascending sort of the
  distance row *including* the instance itself, i.e. the ``K + 1`` nearest by ``(distance,
  index)`` with the first one dropped; with duplicates of ``x`` of smaller index, ``x`` itself can
  be counted as its own neighbour.

Every card value is a multiple of ``1 / K`` (see :func:`card_values`). The dependency is their
mean, evaluated in one of two ways:

* default: exactly, as the integer ``sum_x K * card(x)`` over ``K N``; comparisons between
  dependencies are then exact and do not depend on the instance order;
* ``zhou``: as the authors' code does, the floating-point mean of the float card values
  (``s / K`` or ``0``/``1``), summed left to right in instance order and divided by ``N``. Two
  dependencies with the same integer numerator can then differ in the last bit, which decides
  ``Dep(S + {f}) > Dep(S)`` in the authors' code (on ``dlbcl_gems5469`` it admits feature 948).

This module holds these definitions and a plain numpy reference implementation of them
(:func:`knn_dependency`, the tests' ground truth); :mod:`streamfs.algorithms.neighbourhood_kernels`
holds the numba kernels :class:`~streamfs.algorithms.kofsd.KOFSD` runs.

>>> import numpy as np
>>> X = np.array([[0.0], [0.1], [0.2], [5.0], [5.1]])
>>> k_nearest(sq_distances(X), 2).tolist()
[[1, 2], [0, 2], [1, 0], [4, 2], [3, 2]]
>>> knn_dependency(X, np.array([0, 0, 0, 1, 1]), k=1)
1.0
"""

from __future__ import annotations

import warnings

import numpy as np
from numba import njit


CARDS = ("imbalanced", "consistency", "weight", "distance")


# --------------------------------------------------------------------------------------------
# reference implementation (simple numpy; O(N^2) memory)
# --------------------------------------------------------------------------------------------


def sample_variances(X: np.ndarray) -> np.ndarray:
    """Sample variance (``N - 1``) of each column, 0 for constant columns.

    Computed on the sorted column so that the value does not depend on the instance order (a
    permutation of the instances then gives bit-identical distances).
    """
    X = np.asarray(X, dtype=np.float64)
    S = np.sort(X, axis=0)
    out = np.zeros(X.shape[1])
    for c in range(X.shape[1]):
        col = S[:, c]
        if col[0] == col[-1]:
            continue
        out[c] = _sorted_variance(col)
    return out


def sq_distances(X: np.ndarray, var: np.ndarray | None = None) -> np.ndarray:
    """Squared standardised distances ``sum_f (a_f - b_f)**2 / var_f`` between all rows.

    Features are added in column order (this fixes the rounding). ``var=None`` uses the sample
    variances; constant columns (variance 0) are ignored. Pass ``var=np.ones(p)`` for the plain
    Euclidean distance.
    """
    X = np.asarray(X, dtype=np.float64)
    var = sample_variances(X) if var is None else np.asarray(var, dtype=np.float64)
    n = X.shape[0]
    D = np.zeros((n, n))
    for c in range(X.shape[1]):
        if var[c] == 0.0:
            continue
        diff = X[:, c][:, None] - X[:, c][None, :]
        D = D + diff * diff / var[c]
    return D


def k_nearest(D: np.ndarray, k: int, compat: str | None = None) -> np.ndarray:
    """Indices ``(N, k)`` of the ``k`` nearest neighbours of every row of the squared-distance
    matrix ``D``, ordered by ``(sqrt(D), index)``; see the module docstring for ``compat``."""
    D = np.asarray(D, dtype=np.float64)
    n = D.shape[0]
    key = np.sqrt(D)
    out = np.empty((n, k), dtype=np.int64)
    for i in range(n):
        order = np.argsort(key[i], kind="stable")  # ties -> smaller index first
        if compat == "zhou":
            out[i] = order[1 : k + 1]
        else:
            out[i] = order[order != i][:k]
    return out


def card_values(
    y: np.ndarray,
    neighbours: np.ndarray,
    dist: np.ndarray,
    large: int,
    card: str = "imbalanced",
    gamma: float = 0.5,
    gamma1: float = 0.75,
    gamma2: float = 0.25,
) -> np.ndarray:
    """Card value of every instance from its neighbour indices ``(N, K)`` and their distances.

    ``y`` holds integer class codes and ``large`` the code of the large class (``-1``: no
    instance is in the large class). With ``n = K`` neighbours, ``p`` of them sharing the label
    of ``x`` and ``q = n - p`` the others (Section 3.4 of the paper):

    * ``imbalanced`` (Algorithm 3): ``[p == n]`` if ``x`` is in the large class, else ``p / n``;
    * ``consistency``: ``[p == n]`` (``x`` is in the lower approximation of its class);
    * ``weight`` (threshold ``gamma``): ``p / n`` if ``p / n > gamma``, else 0;
    * ``distance`` (thresholds ``gamma1 > gamma2``): 1 if ``p / n >= gamma1``, 0 if
      ``p / n <= gamma2``; in between 1 if the mean distance to the ``p`` same-label neighbours
      is smaller than the mean distance to the ``q`` others, else 0. The paper prints the last
      rule as ``Sum(dis_p)/Num_N > Sum(dis_n)/Num_N`` (both sums over the count of other-label
      neighbours, rewarding same-label neighbours that are *farther*); that is read as a
      misprint and the comparison of the two mean distances is implemented instead.

    Every value is a multiple of ``1 / K``. The distance sums run in neighbour order.
    """
    y = np.asarray(y)
    k = neighbours.shape[1]
    same_mask = y[neighbours] == y[:, None]
    same = same_mask.sum(axis=1)
    # sequential sums in neighbour order, as the kernels add them
    ssum = np.cumsum(np.where(same_mask, dist, 0.0), axis=1)[:, -1]
    dsum = np.cumsum(np.where(same_mask, 0.0, dist), axis=1)[:, -1]
    return _card_from_stats(same, ssum, dsum, y == large, k, card, gamma, gamma1, gamma2)


def knn_dependency(
    X: np.ndarray,
    y: np.ndarray,
    k: int = 7,
    card: str = "imbalanced",
    compat: str | None = None,
    var: np.ndarray | None = None,
    gamma: float = 0.5,
    gamma1: float = 0.75,
    gamma2: float = 0.25,
) -> float:
    """Reference ``Dep_K(S)`` (Algorithm 4) of all columns of ``X`` (brute force).

    ``y`` may hold any labels; the large class is the most frequent one (ties: the smallest in
    sorted order), or the label 0 with ``compat="zhou"`` (none if there is no label 0). Returns
    0 if every column is constant. See the module docstring for how the mean is evaluated.
    """
    classes, y_enc = np.unique(np.asarray(y), return_inverse=True)
    large = large_class_code(classes, y_enc, compat)
    X = np.asarray(X, dtype=np.float64)
    var = sample_variances(X) if var is None else np.asarray(var, dtype=np.float64)
    if not np.any(var > 0):
        return 0.0
    D = sq_distances(X, var)
    nb = k_nearest(D, k, compat)
    dist = np.sqrt(np.take_along_axis(D, nb, axis=1))
    cards = card_values(y_enc, nb, dist, large, card, gamma, gamma1, gamma2)
    return float(_mean_card(cards[:, None], k, compat)[0])


def large_class_code(
    classes: np.ndarray, y_enc: np.ndarray, compat: str | None, warn: bool = True
) -> int:
    """Code of the large class: the label 0 in ``zhou`` mode, else the most frequent label
    (ties: the first in sorted order).

    In ``zhou`` mode without a label 0 the authors' code still runs, with no instance in its
    large class (every instance is scored as a small-class one): the result is then ``-1``, with
    a warning (``warn=False`` silences it).
    """
    if compat == "zhou":
        if classes.dtype.kind not in "biuf":
            raise ValueError('compat="zhou" needs numeric labels (the label 0 is the large class)')
        hits = np.flatnonzero(classes == 0)
        if hits.size == 0:
            if warn:
                warnings.warn(
                    'compat="zhou" treats the label 0 as the large class, but y has no label 0: '
                    "as in the authors' code, no instance is in the large class (every card is "
                    "p / K); encode the majority class as 0 to get the imbalanced card",
                    UserWarning,
                    stacklevel=3,
                )
            return -1
        return int(hits[0])
    return int(np.argmax(np.bincount(y_enc)))


# --------------------------------------------------------------------------------------------
# card -> dependency (vectorised over a block of features)
# --------------------------------------------------------------------------------------------


def _card_from_stats(same, ssum, dsum, is_large, k, card, gamma, gamma1, gamma2):
    """Card values (float) from per-instance neighbour statistics; arrays ``(N,)`` or ``(N, B)``.

    Plain numpy: the reference for the compiled :func:`_card_num`.
    """
    if is_large.ndim < same.ndim:
        is_large = is_large[:, None]
    ratio = same / k  # p / n
    if card == "imbalanced":
        return np.where(is_large, (same == k).astype(np.float64), ratio)
    if card == "consistency":
        return (same == k).astype(np.float64)
    if card == "weight":
        return np.where(ratio > gamma, ratio, 0.0)
    if card == "distance":
        with np.errstate(divide="ignore", invalid="ignore"):
            h = ssum / same  # mean distance to the same-label neighbours
            m = dsum / (k - same)  # ... and to the others
        between = (h < m).astype(np.float64)
        return np.where(ratio >= gamma1, 1.0, np.where(ratio <= gamma2, 0.0, between))
    raise ValueError(f"card must be one of {CARDS}, got {card!r}")


def _mean_card(cards: np.ndarray, k: int, compat: str | None = None) -> np.ndarray:
    """Column means of ``cards`` ``(N, B)`` (multiples of ``1 / k``).

    Default: exactly, integer numerators over ``k N`` (independent of the instance order).
    ``zhou``: the float values summed left to right in instance order, divided by ``N``.
    """
    n = cards.shape[0]
    num = np.rint(cards * k).astype(np.int64)
    if compat == "zhou":
        return np.cumsum(num / k, axis=0)[-1] / n
    return num.sum(axis=0) / (k * n)


@njit(cache=True, nogil=True)
def _sorted_variance(sv):
    n = sv.shape[0]
    s = 0.0
    for p in range(n):
        s += sv[p]
    mean = s / n
    ss = 0.0
    for p in range(n):
        t = sv[p] - mean
        ss += t * t
    return ss / (n - 1)
