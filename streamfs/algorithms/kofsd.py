"""K-OFSD: online feature selection for class-imbalanced feature streams.

Zhou, Hu, Li and Wu, "Online feature selection for high-dimensional class-imbalanced data",
Knowledge-Based Systems 136 (2017) 187-199, Algorithms 1 and 3-5.

Each arriving feature ``f`` is judged by the K-nearest-neighbour dependency ``Dep_K`` of the
class on feature subsets (see :mod:`streamfs.algorithms.neighbourhood`):

1. ``Dep_K({f}) <= alpha``: ``f`` is irrelevant and discarded;
2. ``Dep_K({f}) > Dep_K(S)``: the whole selection is replaced, ``S = {f}``;
3. ``Dep_K(S + {f}) > Dep_K(S)``: ``f`` is added;
4. otherwise ``f`` is redundant and discarded.

``Dep_K`` of the empty selection is 0, so the first relevant feature always starts ``S``.

How it stays fast (``Dep_K`` is ``O(N^2)`` per evaluation):

* ``Dep_K({f})`` of a whole block of columns comes from a numba kernel that sorts each column
  and walks outwards from every instance (``O(N log N + N K)`` per column, no pairwise matrix).
* The squared distances ``D`` on ``S`` are kept and updated in place when a feature joins
  (one ``O(N^2)`` pass), together with the 64 nearest instances of every row on ``S``. For
  ``Dep_K(S + {f})`` each row is scanned in that order and stops as soon as ``D`` alone exceeds
  the current ``K``-th best distance on ``S + {f}`` (rows left open continue in the sorted order
  of ``f``); the scan also stops for good once the instances seen so far have lost enough
  ``card`` to rule out ``Dep_K(S + {f}) > Dep_K(S)`` (integer-valued cards).

Exactness: the kernels give the same neighbours as the brute-force reference
(:func:`~streamfs.algorithms.neighbourhood.knn_dependency`), ties broken by instance index.
Dependencies of the integer-valued cards are ``integer / (K N)``, so comparisons are exact and
cannot be flipped by summation order; with continuous data (no distance ties), permuting the
instances does not change the selection.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from streamfs.algorithms._validation import check_choice, check_int, check_number, shown
from streamfs.algorithms.base import FeatureStreamSelector
from streamfs.algorithms.neighbourhood import (
    CARDS,
    add_feature,
    dependency_from_stats,
    fallback_count,
    joint_stats,
    large_class_code,
    row_order,
    single_feature_stats,
)

# columns per call of the one-feature kernel: bounds the (N, chunk) statistics arrays
_CHUNK = 256
# candidates listed per instance (nearest on S) for the incremental neighbour search; rows they
# do not settle continue in the order of the new feature (exact either way: only speed differs)
_NEAR = 64


class KOFSD(FeatureStreamSelector):
    """Online Feature Selection based on the Dependency in K nearest neighbours.

    Parameters
    ----------
    k:
        Number of nearest neighbours ``K`` (``1 <= k < N``).
    alpha:
        Relevance threshold in ``[0, 1)``: a feature with ``Dep_K({f}) <= alpha`` is discarded.
    card:
        Card function of an instance (Section 3.4): ``"imbalanced"`` (Algorithm 3, the paper's
        choice), ``"consistency"``, ``"weight"`` or ``"distance"``; formulas in
        :func:`streamfs.algorithms.neighbourhood.card_values`.
    compat:
        ``None`` (clean semantics) or ``"zhou"`` to reproduce the authors' MATLAB code: the label
        0 is the large class whatever the counts, neighbours are positions ``2..K+1`` of the
        stable sort including the instance itself, and if nothing was selected at the end of the
        stream, ``finish()`` selects the ``round(sqrt(p))`` features of highest single-feature
        dependency (ties in stream order).
    gamma:
        Threshold of the ``"weight"`` card.
    gamma1, gamma2:
        Thresholds of the ``"distance"`` card (``0 <= gamma1 < gamma2``).

    Attributes
    ----------
    selected_: global indices of the selected features, in the order they joined ``S``.
    scores_: single-feature dependency ``Dep_K({f})`` of each selected feature.
    dependency_: ``Dep_K(S)`` of the current selection (0 for an empty selection and after a
        ``zhou`` fallback, whose dependency is not computed).
    classes_: the labels in sorted order; ``large_class_`` the large class: the most frequent
        label (ties: the first in sorted order), or 0 with ``compat="zhou"``.
    n_features_seen_, n_irrelevant_ (``Dep_K({f}) <= alpha``, constant columns included),
    n_redundant_ (discarded at the last step, or removed from ``S`` by a replacement).

    Notes
    -----
    Constant columns have no variance to standardise by; they carry no information and are
    counted as irrelevant (``Dep_K({f}) = 0``) in both modes. The authors' code would divide by
    zero there. Features displaced by a replacement are not recorded as affiliated
    (``selection()`` always has ``"affiliated": []``). Memory is ``O(N^2)`` in the number of
    instances (the distance matrix on ``S``: 32 MB at ``N = 2000``) and ``O(N |S|)`` for the kept
    columns; in ``zhou`` mode one float per feature is also kept while nothing is selected (for
    the fallback).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> y = np.r_[np.zeros(45, dtype=int), np.ones(5, dtype=int)]
    >>> X = rng.normal(size=(50, 6))
    >>> X[:, 3] += 6 * y  # the only feature that separates the minority class
    >>> sel = KOFSD(k=3, alpha=0.8).fit(X, y)
    >>> sel.selected_.tolist(), round(sel.dependency_, 4), sel.n_irrelevant_
    ([3], 0.9667, 5)
    >>> sel.transform(X).shape
    (50, 1)
    """

    def __init__(
        self,
        k: int = 7,
        alpha: float = 0.5,
        card: str = "imbalanced",
        compat: str | None = None,
        *,
        gamma: float = 0.5,
        gamma1: float = 0.5,
        gamma2: float = 1.0,
    ) -> None:
        self.k = k
        self.alpha = alpha
        self.card = card
        self.compat = compat
        self.gamma = gamma
        self.gamma1 = gamma1
        self.gamma2 = gamma2

    # ---------------------------------------------------------------- public surface

    def partial_fit(self, X: Any, y: Any = None) -> "KOFSD":
        """Consume one block of new columns; ``y`` is required on the first call."""
        return self._stream_step(X, y)

    def _partial_fit(self, X: Any, y: Any = None) -> None:
        if not hasattr(self, "n_features_seen_"):
            if y is None:
                raise ValueError("the first partial_fit call needs the class vector y")
            self._init_labels(y)
        elif y is not None:
            self._check_same_y(y)
        X = self._check_block(X)
        self._fallback = None  # more features arrived: an earlier fallback no longer holds
        for start in range(0, X.shape[1], _CHUNK):
            self._process(X[:, start : start + _CHUNK])
        self._publish()

    def finish(self) -> "KOFSD":
        """End of stream: in ``zhou`` mode, fall back to the top ``round(sqrt(p))`` features by
        single-feature dependency when nothing was selected."""
        if not hasattr(self, "n_features_seen_"):
            raise ValueError("finish() called before any partial_fit")
        if self.compat == "zhou" and not self._sel and self.n_features_seen_ > 0:
            scores = np.asarray(self._pending, dtype=np.float64)
            m = min(fallback_count(self.n_features_seen_), scores.size)
            top = np.argsort(-scores, kind="stable")[:m]  # stable: ties in stream order
            self._fallback = (top.astype(np.int64), scores[top])
        self._publish()
        return self

    def selection(self) -> list[dict]:
        """``[{"feature", "score", "affiliated": []}, ...]`` in selection order."""
        return [
            {"feature": int(f), "score": float(s), "affiliated": []}
            for f, s in zip(self.selected_, self.scores_)
        ]

    # ---------------------------------------------------------------- state

    # learned state kept in private attributes (besides the public ones ending in "_")
    _STATE = ("_large", "_y", "_sel", "_scores", "_vars", "_cols", "_dep", "_D", "_order",
              "_pending", "_fallback")

    def _reset(self) -> None:
        # learned attributes only: scikit-learn's own settings (e.g. _sklearn_output_config
        # from set_output) and the parameters stay
        for name in list(vars(self)):
            if (name.endswith("_") and not name.startswith("__")) or name in self._STATE:
                delattr(self, name)

    def _params(self) -> dict:
        return {
            "k": int(self.k),
            "alpha": float(self.alpha),
            "card": self.card,
            "compat": self.compat,
            "gamma": float(self.gamma),
            "gamma1": float(self.gamma1),
            "gamma2": float(self.gamma2),
        }

    def to_state(self) -> dict:
        """Plain-data snapshot; kept columns under ``"columns"`` as ``{feature: array}``."""
        state: dict = {"algorithm": "kofsd", "version": 1, "params": self._params()}
        if not hasattr(self, "n_features_seen_"):
            state["fitted"] = False
            return state
        self._names_state(state)
        state.update(
            fitted=True,
            classes=self.classes_.tolist(),
            y=self._y.copy(),
            large=int(self._large),
            n_features_seen=int(self.n_features_seen_),
            n_irrelevant=int(self.n_irrelevant_),
            n_redundant=int(self.n_redundant_),
            selected=[int(f) for f in self._sel],
            scores=[float(s) for s in self._scores],
            variances=[float(v) for v in self._vars],
            dependency=float(self._dep),
            columns={int(f): c.copy() for f, c in zip(self._sel, self._cols)},
            pending=None if self._pending is None else np.asarray(self._pending, np.float64),
            fallback=None
            if self._fallback is None
            else {"features": self._fallback[0].copy(), "scores": self._fallback[1].copy()},
        )
        return state

    @classmethod
    def from_state(cls, state: dict) -> "KOFSD":
        """Rebuild a selector that continues exactly where ``to_state`` was taken."""
        if state.get("algorithm") != "kofsd":
            raise ValueError(f"not a K-OFSD state: algorithm={state.get('algorithm')!r}")
        self = cls(**state["params"])
        if not state["fitted"]:
            return self
        self._validate_params()
        self.classes_ = np.asarray(state["classes"])
        self._y = np.asarray(state["y"], dtype=np.int64)
        self._large = int(state["large"])
        self.large_class_ = self.classes_[self._large]
        self.n_features_seen_ = int(state["n_features_seen"])
        self.n_irrelevant_ = int(state["n_irrelevant"])
        self.n_redundant_ = int(state["n_redundant"])
        self._restore_names(state)
        self._sel = [int(f) for f in state["selected"]]
        self._scores = [float(s) for s in state["scores"]]
        self._vars = [float(v) for v in state["variances"]]
        self._dep = float(state["dependency"])
        columns = {int(f): c for f, c in state["columns"].items()}
        self._cols = [np.asarray(columns[f], dtype=np.float64) for f in self._sel]
        # the distances are re-summed in selection order, as they were built: bit-identical
        self._D = None
        for col, var in zip(self._cols, self._vars):
            self._D = add_feature(self._D, col, var)
        self._order = None
        pending = state.get("pending")
        self._pending = None if pending is None else [float(s) for s in pending]
        fb = state.get("fallback")
        self._fallback = (
            None
            if fb is None
            else (np.asarray(fb["features"], np.int64), np.asarray(fb["scores"], np.float64))
        )
        self._publish()
        return self

    # ---------------------------------------------------------------- internals

    def _validate_params(self) -> None:
        """Types and ranges of the parameters; ``ValueError`` naming the first bad one."""
        check_int("k", self.k, 1)
        check_number("alpha", self.alpha, 0.0, 1.0, high_open=True)
        check_choice("card", self.card, CARDS)
        check_choice("compat", self.compat, (None, "zhou"))
        check_number("gamma", self.gamma, 0.0, 1.0)
        check_number("gamma1", self.gamma1, 0.0)
        check_number("gamma2", self.gamma2, 0.0)
        if not self.gamma1 < self.gamma2:
            raise ValueError(
                f"gamma2 must be a number > gamma1 = {shown(self.gamma1)}, "
                f"got {shown(self.gamma2)}"
            )

    def _init_labels(self, y: Any) -> None:
        y = np.asarray(y)
        if y.ndim != 1:
            raise ValueError(f"y must be 1-D, got shape {y.shape}")
        if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
            raise ValueError("y contains NaN or infinite labels")
        classes, y_enc = np.unique(y, return_inverse=True)
        if classes.size < 2:
            raise ValueError("y has a single class: the dependency is undefined")
        if self.k >= y.shape[0]:
            raise ValueError(f"k={self.k} needs more than k instances, y has {y.shape[0]}")
        self._large = large_class_code(classes, y_enc, self.compat)
        self.classes_ = classes
        self.large_class_ = classes[self._large]
        self._y = y_enc.astype(np.int64)
        self.n_features_seen_ = 0
        self.n_irrelevant_ = 0
        self.n_redundant_ = 0
        self._sel: list[int] = []
        self._scores: list[float] = []
        self._vars: list[float] = []
        self._cols: list[np.ndarray] = []
        self._dep = 0.0
        self._D: np.ndarray | None = None
        self._order: np.ndarray | None = None
        # zhou fallback needs every single-feature score while S is empty
        self._pending: list[float] | None = [] if self.compat == "zhou" else None
        self._fallback: tuple[np.ndarray, np.ndarray] | None = None

    def _check_same_y(self, y: Any) -> None:
        y = np.asarray(y)
        if y.shape != self._y.shape or not np.array_equal(self.classes_[self._y], y):
            raise ValueError("y differs from the class vector of the first partial_fit call")

    def _check_block(self, X: Any) -> np.ndarray:
        X = X.toarray() if sp.issparse(X) else np.asarray(X)
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D (instances x new features), got shape {X.shape}")
        if X.shape[0] != self._y.shape[0]:
            raise ValueError(
                f"columns have {X.shape[0]} values but y has {self._y.shape[0]} instances"
            )
        X = np.ascontiguousarray(X, dtype=np.float64)
        if not np.all(np.isfinite(X)):
            bad = np.flatnonzero(~np.all(np.isfinite(X), axis=0))
            raise ValueError(
                "X contains NaN or infinite values in block columns "
                f"{bad[:10].tolist()}{' ...' if bad.size > 10 else ''}"
            )
        return X

    def _dependency(self, same, ssum, dsum) -> np.ndarray:
        return dependency_from_stats(
            same, ssum, dsum, self._y == self._large, self.k, self.card,
            self.gamma, self.gamma1, self.gamma2,
        )  # fmt: skip

    def _process(self, X: np.ndarray) -> None:
        n, b = X.shape
        include_self = 1 if self.compat == "zhou" else 0
        var = np.empty(b)
        same = np.empty((n, b), dtype=np.int64)
        ssum = np.empty((n, b))
        dsum = np.empty((n, b))
        Xf = np.asfortranarray(X)  # the kernel reads whole columns
        single_feature_stats(Xf, self._y, self.k, include_self, var, same, ssum, dsum)
        dep1 = self._dependency(same, ssum, dsum)
        dep1[var == 0.0] = 0.0  # constant columns: irrelevant
        alpha = float(self.alpha)
        for c in range(b):
            f = self.n_features_seen_
            self.n_features_seen_ += 1
            d1 = float(dep1[c])
            if self._pending is not None:
                self._pending.append(d1)
            if var[c] == 0.0 or d1 <= alpha:
                self.n_irrelevant_ += 1
            elif d1 > self._dep:
                # a single feature beats the whole selection: replace it
                self.n_redundant_ += len(self._sel)
                col = X[:, c].copy()
                self._sel, self._scores, self._vars, self._cols = [f], [d1], [float(var[c])], [col]
                self._D = add_feature(None, col, float(var[c]))
                self._order = None
                self._dep = d1
                self._pending = None  # S is never empty again: no fallback needed
            else:
                col = X[:, c].copy()
                dj = self._joint_dependency(col, float(var[c]), include_self)
                if dj > self._dep:
                    self._sel.append(f)
                    self._scores.append(d1)
                    self._vars.append(float(var[c]))
                    self._cols.append(col)
                    self._D = add_feature(self._D, col, float(var[c]))
                    self._order = None
                    self._dep = dj
                else:
                    self.n_redundant_ += 1

    def _joint_dependency(self, col: np.ndarray, var: float, include_self: int) -> float:
        """``Dep_K(S + {f})``, or ``-1.0`` when it provably does not exceed ``Dep_K(S)``."""
        k, n = int(self.k), col.shape[0]
        card_code = CARDS.index(self.card) if self.card != "distance" else -1
        budget = -1
        if card_code >= 0:
            # Dep = num / (K N) with an integer numerator: the loss of S is exact
            budget = k * n - int(round(self._dep * k * n))
            if budget == 0:
                return -1.0  # Dep(S) = 1 cannot be exceeded
        if self._order is None:
            self._order = row_order(self._D, max(_NEAR, 4 * (k + 1)))
        same = np.empty(n, dtype=np.int64)
        ssum = np.empty(n)
        dsum = np.empty(n)
        stopped = joint_stats(
            self._D, self._order, col, var, self._y, k, include_self, same, ssum, dsum,
            self._y == self._large, card_code, float(self.gamma), budget,
        )  # fmt: skip
        if stopped:
            return -1.0
        return float(self._dependency(same[:, None], ssum[:, None], dsum[:, None])[0])

    def _publish(self) -> None:
        """Refresh the public attributes from the internal selection."""
        if self._fallback is not None:
            self.selected_ = self._fallback[0].copy()
            self.scores_ = self._fallback[1].copy()
        else:
            self.selected_ = np.asarray(self._sel, dtype=np.int64)
            self.scores_ = np.asarray(self._scores, dtype=np.float64)
        self.dependency_ = float(self._dep)
