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

* The step over a block of columns is one compiled kernel
  (:func:`~streamfs.algorithms.neighbourhood_kernels.stream_step`, no Python iteration per
  feature);
  every kernel releases the GIL, so the worker's event loop keeps running during a long step.
* ``Dep_K({f})`` of a whole block of columns: numpy sorts one packed key per value (its bits
  with the instance index in the lowest ones, :func:`~streamfs.algorithms.
  neighbourhood_kernels.nearly_sorted_order`), then a numba kernel
  slides a window of ``K + 1`` sorted positions along each column, walking outwards from an
  instance only where a tie at the window's edge (or the ``"distance"`` card's sums) needs it
  (``O(N log N + N K)`` per column, no pairwise matrix). The columns are independent, so a
  block's are split over ``STREAMFS_KERNEL_THREADS`` threads
  (:mod:`~streamfs.algorithms.parallel`; the same bits whatever the split).
* The squared distances ``D`` on ``S`` are kept and updated in place when a feature joins
  (one ``O(N^2)`` pass), together with the 64 nearest instances of every row on ``S``. For
  ``Dep_K(S + {f})`` each row is scanned in that order and stops as soon as ``D`` alone exceeds
  the current ``K``-th best distance on ``S + {f}`` (rows left open continue in the sorted order
  of ``f``); the scan also stops for good once the instances seen so far have lost enough
  ``card`` to rule out ``Dep_K(S + {f}) > Dep_K(S)`` (every card is a multiple of ``1 / K``).

Exactness: the kernels compute every distance with the same floating-point operations as the
brute-force reference (:func:`~streamfs.algorithms.neighbourhood.knn_dependency`: raw
differences squared, divided by the variance, added in selection order, square root), so they
find the same neighbours, ties broken by instance index; no tolerance is involved. By default
dependencies are ``integer / (K N)``, so comparisons are exact and cannot be flipped by
summation order; with continuous data (no distance ties), permuting the instances does not
change the selection. With ``compat="zhou"`` the dependency is the authors' floating-point mean
(see :mod:`~streamfs.algorithms.neighbourhood`), which is what makes ``dlbcl_gems5469`` select
feature 948 as their code does.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import check_is_fitted, column_or_1d

from streamfs.algorithms._validation import (
    check_choice,
    check_finite_labels,
    check_int,
    check_number,
    check_state_algorithm,
    check_targets,
    label_array,
    reads_state,
    shown,
)
from streamfs.algorithms.base import FeatureStreamSelector
from streamfs.algorithms.measures.columns import check_column_values, max_abs_for_sums
from streamfs.algorithms.neighbourhood import CARDS, large_class_code
from streamfs.algorithms.neighbourhood_kernels import (
    LIST_CHUNK_KEYS,
    add_feature,
    dependencies,
    fallback_count,
    nearly_sorted_order,
    nearest_lists,
    single_feature_stats,
    stream_step,
)
from streamfs.algorithms.parallel import map_column_ranges

# values (N x columns) per call of the one-feature kernels: bounds the (N, chunk) statistics
# arrays (1 MiB each, cache-sized) while giving the column-parallel threads long runs
_CHUNK_VALUES = 1 << 17
# candidates listed per instance (nearest on S) for the incremental neighbour search; rows they
# do not settle continue in the order of the new feature (exact either way: only speed differs)
_NEAR = 64


class KOFSD(FeatureStreamSelector):
    """Online Feature Selection based on the Dependency in K nearest neighbours.

    Parameters
    ----------
    k : int, default 7
        Number of nearest neighbours ``K`` (``1 <= k < N``).
    alpha : float, default 0.5
        Relevance threshold in ``[0, 1)``: a feature with ``Dep_K({f}) <= alpha`` is discarded.
    card : {"imbalanced", "consistency", "weight", "distance"}, default "imbalanced"
        Card function of an instance (Section 3.4), with ``p`` of the ``K`` neighbours sharing
        its label: ``"imbalanced"`` (Algorithm 3, the paper's choice: ``[p == K]`` in the large
        class, ``p / K`` otherwise), ``"consistency"`` (``[p == K]``), ``"weight"``
        (``p / K`` if ``p / K > gamma``, else 0) or ``"distance"`` (1 if ``p / K >= gamma1``,
        0 if ``p / K <= gamma2``, in between 1 when the mean distance to the same-label
        neighbours is smaller than to the others; the paper's printed formula divides both
        sums by the number of other-label neighbours, read as a misprint). Details in
        :func:`streamfs.algorithms.neighbourhood.card_values`.
    compat : {None, "zhou"}, default None
        ``None`` (clean semantics) or ``"zhou"`` to reproduce the authors' MATLAB code: the label
        0 is the large class whatever the counts (numeric labels only: text labels are
        refused; without a label 0 no instance is in the large class, with a warning),
        neighbours are positions ``2..K+1`` of the stable sort including the instance
        itself, the dependency is the floating-point mean of the card values in
        instance order, and if nothing was selected at the end of the stream, ``finish()``
        selects the ``round(sqrt(p))`` features of highest single-feature dependency (ties in
        stream order).
    gamma : float, default 0.5
        Threshold of the ``"weight"`` card, in ``[0, 1]`` (default 0.5, the paper's).
    gamma1, gamma2 : float, default 0.75 and 0.25
        Upper and lower thresholds of the ``"distance"`` card, ``0 <= gamma2 < gamma1 <= 1``
        (the paper gives no values; defaults 0.75 and 0.25).
    max_buffer_bytes : int, default 1 GiB
        The most the distances on ``S`` may take, ``8 N^2`` bytes, each instance's nearest
        candidates and 8 MiB of sort keys (default 1 GiB: ``N`` up to about 11,500; the
        process's peak for ``N`` = 6,000 was 1.1 times this count); more instances are refused when
        the class vector arrives, with the largest ``N`` that fits.

    Attributes
    ----------
    selected_: global indices of the selected features, in the order they joined ``S``.
    scores_: single-feature dependency ``Dep_K({f})`` of each selected feature.
    dependency_: ``Dep_K(S)`` of the current selection (0 for an empty selection and after a
        ``zhou`` fallback, whose dependency is not computed).
    classes_: the labels in sorted order; ``large_class_`` the large class: the most frequent
        label (ties: the first in sorted order), or 0 with ``compat="zhou"`` (``None`` there if
        ``y`` has no label 0).
    n_features_seen_, n_irrelevant_ (``Dep_K({f}) <= alpha``, constant columns included
        but in ``zhou`` mode),
    n_redundant_ (discarded at the last step, or removed from ``S`` by a replacement).

    Notes
    -----
    Constant columns have no variance to standardise by; they carry no information and are
    counted as irrelevant (``Dep_K({f}) = 0``). ``zhou`` mode takes them as the authors' code
    does (but with ``card="distance"``, which that code does not have): dividing by a standard
    deviation of 0 makes every distance NaN, MATLAB's sort puts them last in index order, and
    the neighbours of an instance are the first ``k`` other instances; where MATLAB's mean of
    the column (a sum in instance order over ``N``) rounds away from its value, the deviation
    is tiny instead, every distance 0, and the neighbours the second to ``k + 1``-th
    instances. Such a column passes ``alpha`` where the large class comes first, can replace
    the selection and then stands alone in it (no column joins it). A
    column whose every ``|x|`` lies under ``2**-500`` (values like ``1e-200``: its sums of
    squares underflow) is refused with a ``ValueError`` naming it, as one beyond
    :func:`~streamfs.algorithms.measures.columns.max_abs_for_sums` is. Features displaced by a
    replacement are not recorded as affiliated (``selection()`` always has
    ``"affiliated": []``). Memory is ``O(N^2)`` in the number of
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
        gamma1: float = 0.75,
        gamma2: float = 0.25,
        max_buffer_bytes: int = 1 << 30,
    ) -> None:
        self.k = k
        self.alpha = alpha
        self.card = card
        self.compat = compat
        self.gamma = gamma
        self.gamma1 = gamma1
        self.gamma2 = gamma2
        self.max_buffer_bytes = max_buffer_bytes

    # ---------------------------------------------------------------- public surface

    def partial_fit(self, X: Any, y: Any = None) -> "KOFSD":
        """Consume one block of new columns; ``y`` is required on the first call."""
        return self._stream_step(X, y)

    _setting_params = ("card",)

    def _unused_params(self) -> dict[str, str]:
        unused = {} if self.card == "weight" else {"gamma": "card='weight'"}
        if self.card != "distance":
            unused.update(gamma1="card='distance'", gamma2="card='distance'")
        return unused

    def _partial_fit(self, X: Any, y: Any = None) -> None:
        if not hasattr(self, "n_features_seen_"):
            if y is None:
                raise ValueError("the first partial_fit call needs the class vector y")
            self._init_labels(y)
            if (advice := self._params_advice()) is not None:
                warnings.warn(advice, UserWarning, stacklevel=4)
        elif y is not None:
            self._check_same_y(y)
        X = self._check_block(X)
        self._fallback = None  # more features arrived: an earlier fallback no longer holds
        chunk = max(64, _CHUNK_VALUES // max(1, X.shape[0]))
        for start in range(0, X.shape[1], chunk):
            self._process(X[:, start : start + chunk])
        self._publish()

    def finish(self) -> "KOFSD":
        """End of stream: in ``zhou`` mode, fall back to the top ``round(sqrt(p))`` features by
        single-feature dependency when nothing was selected."""
        self._check_started()
        self._check_stream_params()
        if self.compat == "zhou" and not self._sel and self.n_features_seen_ > 0:
            scores = np.asarray(self._pending, dtype=np.float64)
            m = min(fallback_count(self.n_features_seen_), scores.size)
            top = np.argsort(-scores, kind="stable")[:m]  # stable: ties in stream order
            self._fallback = (top.astype(np.int64), scores[top])
        self._publish()
        return self

    def selection(self) -> list[dict]:
        """``[{"feature", "score", "affiliated": []}, ...]`` in selection order."""
        check_is_fitted(self, "selected_")
        return [
            {"feature": int(f), "score": float(s), "affiliated": []}
            for f, s in zip(self.selected_, self.scores_)
        ]

    # ---------------------------------------------------------------- state

    # learned state kept in private attributes (besides the public ones ending in "_")
    _STATE = ("_large", "_y", "_sel", "_scores", "_vars", "_cols", "_dep", "_D", "_order",
              "_order_ok", "_rows", "_pending", "_fallback")

    def _reset(self) -> None:
        # learned attributes only: scikit-learn's own settings (e.g. _sklearn_output_config
        # from set_output) and the parameters stay
        for name in list(vars(self)):
            if (name.endswith("_") and not name.startswith("__")) or name in self._STATE:
                delattr(self, name)

    def _state_params(self) -> dict:
        return {
            "k": int(self.k),
            "alpha": float(self.alpha),
            "card": self.card,
            "compat": self.compat,
            "gamma": float(self.gamma),
            "gamma1": float(self.gamma1),
            "gamma2": float(self.gamma2),
            "max_buffer_bytes": int(self.max_buffer_bytes),
        }

    def to_state(self) -> dict:
        """Plain-data snapshot; kept columns under ``"columns"`` as ``{feature: array}``."""
        state: dict = {"algorithm": "kofsd", "version": 2, "params": self._state_params()}
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
        return self._put_stream_params(state)

    @classmethod
    @reads_state
    def from_state(cls, state: dict) -> "KOFSD":
        """Rebuild a selector that continues exactly where ``to_state`` was taken."""
        check_state_algorithm(state, cls.__name__, ["kofsd"])
        started, later = cls._stream_params_of(state)
        params = dict(started)
        if state.get("version", 1) < 2:
            # version 1 had other "weight"/"distance" cards (and gamma1 < gamma2): a state of
            # those cannot continue; for the other cards the thresholds were unused
            if params.get("card") in ("weight", "distance"):
                raise ValueError(
                    f"K-OFSD state version 1 with card={params['card']!r} cannot be continued: "
                    "the card's definition changed (Section 3.4 of the paper); start a new run"
                )
            params.update(gamma1=0.75, gamma2=0.25)
        self = cls(**params)
        if not state["fitted"]:
            return self
        self._validate_params()
        self._begin_stream_params()
        self.classes_ = np.asarray(state["classes"])
        self._y = np.asarray(state["y"], dtype=np.int64)
        self._large = int(state["large"])
        self.large_class_ = None if self._large < 0 else self.classes_[self._large]
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
            if var > 0.0:  # a constant column (zhou mode) is alone in S: no distances
                self._D = add_feature(self._D, col, var)
        self._order = None
        self._order_ok = False
        self._rows = None  # the visiting order of the joint kernel: speed only, not state
        pending = state.get("pending")
        self._pending = None if pending is None else [float(s) for s in pending]
        fb = state.get("fallback")
        self._fallback = (
            None
            if fb is None
            else (np.asarray(fb["features"], np.int64), np.asarray(fb["scores"], np.float64))
        )
        self._publish()
        self._set_later_params(later)
        return self

    # ---------------------------------------------------------------- internals

    def _validate_params(self) -> None:
        """Types and ranges of the parameters; ``ValueError`` naming the first bad one."""
        check_int("k", self.k, 1)
        check_number("alpha", self.alpha, 0.0, 1.0, high_open=True)
        check_choice("card", self.card, CARDS)
        check_choice("compat", self.compat, (None, "zhou"))
        check_number("gamma", self.gamma, 0.0, 1.0)
        check_number("gamma1", self.gamma1, 0.0, 1.0)
        check_number("gamma2", self.gamma2, 0.0, 1.0)
        if not self.gamma2 < self.gamma1:
            raise ValueError(
                f"gamma2 must be a number in [0, gamma1) with gamma1 = {shown(self.gamma1)}, "
                f"got {shown(self.gamma2)}"
            )
        check_int("max_buffer_bytes", self.max_buffer_bytes, 1)

    def _check_n_instances(self, n: int) -> None:
        """``ValueError`` with the numbers when ``k`` neighbours need more than ``n``
        instances, or when the distances on ``S`` for ``n`` instances (``8 N^2`` bytes, each
        row's nearest candidates and the 8 MiB of keys sorted at a time to find them) exceed
        ``max_buffer_bytes``: refused at ``open`` (and by the producers, before they publish)
        rather than at the first block, or, for the memory, at the first relevant feature,
        where an allocation the system promised but cannot keep gets the worker killed."""
        if self.k >= n:
            raise ValueError(f"k={self.k} needs more than k instances, y has {n}")
        need = self._buffer_bytes(n)
        if need > self.max_buffer_bytes:
            lo, hi = 1, n  # the largest N that fits (the need grows with N)
            while lo < hi:
                mid = (lo + hi + 1) // 2
                lo, hi = (mid, hi) if self._buffer_bytes(mid) <= self.max_buffer_bytes else (
                    lo, mid - 1)
            most = lo
            raise ValueError(
                f"kofsd distances of N={n} x N x 8 bytes (and the nearest candidates, the sort "
                f"keys) = {need} "
                f"bytes exceed max_buffer_bytes={int(self.max_buffer_bytes)}; use at most "
                f"N = {most} instances or a larger max_buffer_bytes")

    def _buffer_bytes(self, n: int) -> int:
        # D, each row's nearest candidates (int32), the keys sorted at a time to find them
        m = min(n, max(_NEAR, 4 * (int(self.k) + 1)))
        return 8 * n * n + 4 * n * m + 8 * min(n * n, n * max(1, LIST_CHUNK_KEYS // n))

    def _init_labels(self, y: Any) -> None:
        y = label_array(y)
        if y.ndim == 2 and y.shape[1] == 1:
            y = column_or_1d(y, warn=True)  # a column vector, as SAOLA and scikit-learn take it
        if y.ndim != 1:
            raise ValueError(f"y must be 1-D, got shape {y.shape}")
        check_finite_labels(y)
        # classes are categories: real-valued targets would make every instance its own class
        y = check_targets(y)
        classes, y_enc = np.unique(y, return_inverse=True)
        if classes.size < 2:
            raise ValueError("y has a single class: the dependency is undefined")
        self._check_n_instances(y.shape[0])
        self._begin_stream_params()
        self._large = large_class_code(classes, y_enc, self.compat)
        self.classes_ = classes
        self.large_class_ = None if self._large < 0 else classes[self._large]
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
        self._order_ok = False
        self._rows: np.ndarray | None = None
        # zhou fallback needs every single-feature score while S is empty
        self._pending: list[float] | None = [] if self.compat == "zhou" else None
        self._fallback: tuple[np.ndarray, np.ndarray] | None = None

    def _check_same_y(self, y: Any) -> None:
        y = label_array(y)
        if y.ndim == 2 and y.shape[1] == 1:
            y = y.ravel()  # the column vector the first call takes (without its warning again)
        if y.shape != self._y.shape or not np.array_equal(self.classes_[self._y], y):
            raise ValueError("y differs from the class vector of the first partial_fit call")

    def _check_block(self, X: Any) -> np.ndarray:
        X = X.toarray() if sp.issparse(X) else np.asarray(X)
        if X.ndim == 1:  # one new column, as SAOLA takes it
            X = X[:, None]
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D (instances x new features), got shape {X.shape}")
        if X.shape[0] != self._y.shape[0]:
            raise ValueError(
                f"columns have {X.shape[0]} values but y has {self._y.shape[0]} instances"
            )
        X = np.asfortranarray(X, dtype=np.float64)  # the kernels read whole columns
        n, b = X.shape
        check_column_values(np.arange(b + 1) * n, X.ravel(order="F"), n, *self._value_limit(n))
        return X

    def _value_limit(self, n_rows: int) -> tuple[float, str]:
        # beyond it the variances overflow, distances become NaN and the kernels' neighbour
        # search has no order to follow
        return max_abs_for_sums(n_rows), "K-OFSD's standardised distances"

    def _process(self, X: np.ndarray) -> None:
        """One chunk of columns of a block from :meth:`_check_block` (column-major, as the
        kernels read whole columns)."""
        n, b = X.shape
        zhou = self.compat == "zhou"
        include_self = 1 if zhou else 0
        is_large = self._y == self._large
        card_code = CARDS.index(self.card)
        gammas = (float(self.gamma), float(self.gamma1), float(self.gamma2))
        var = np.empty(b)
        # column-major, as X: each column's statistics are contiguous for the kernels that
        # write and read them (dependencies 6.5 -> 2.1 ms on the bench's 12,500 columns)
        same = np.empty((n, b), dtype=np.int64, order="F")
        ssum = np.empty((n, b), order="F")
        dsum = np.empty((n, b), order="F")
        # only the distance card reads the distance sums; without them most instances are
        # settled by a sliding window instead of a walk
        sums = self.card == "distance"
        dep1 = np.empty(b)

        def relevance(lo: int, hi: int) -> None:
            # columns lo..hi-1 on one thread (independent columns: any split, same bits)
            cols = slice(lo, hi)
            order = nearly_sorted_order(X[:, cols])  # the kernel settles the near-ties
            single_feature_stats(X[:, cols], order, self._y, self.k, include_self, sums,
                                 var[cols], same[:, cols], ssum[:, cols], dsum[:, cols])
            dependencies(same[:, cols], ssum[:, cols], dsum[:, cols], is_large, int(self.k),
                         card_code, *gammas, zhou, dep1[cols])  # fmt: skip

        map_column_ranges(relevance, b)
        constant = var == 0.0
        if zhou and self.card != "distance" and constant.any():
            self._constant_columns(X, np.flatnonzero(constant), same, dep1, is_large, card_code,
                                   gammas)  # fmt: skip
        else:
            dep1[constant] = 0.0  # constant columns: irrelevant
        alpha = float(self.alpha)
        decision = np.zeros(b, dtype=np.int8)  # 0 irrelevant, 1 replaces S, 2 joins, 3 redundant
        dep_out = np.zeros(b)
        dep = self._dep
        if np.any(dep1 > alpha):
            if self._D is None:
                self._D = np.zeros((n, n))  # S is empty: its (zero) distances
            if self._order is None:
                self._order = np.empty((n, min(n, max(_NEAR, 4 * (int(self.k) + 1)))), np.int32)
                self._order_ok = False
            if self._rows is None:
                self._rows = np.arange(n, dtype=np.int64)  # any order gives the same result
            c = 0
            while True:
                dep, self._order_ok, c = stream_step(
                    X, var, dep1, same, ssum, dsum, alpha, self._y, is_large, int(self.k),
                    include_self, card_code, *gammas, zhou, self._D, self._order,
                    self._order_ok, float(dep), self._rows, decision, dep_out, c,
                )  # fmt: skip
                if c == b:
                    break
                # the candidate lists are out of date: numpy's sort makes them, and the
                # step goes on from column c
                nearest_lists(self._D, self._order)
                self._order_ok = True
        # bookkeeping of what the kernel decided (a Python iteration per change of S only)
        f0 = self.n_features_seen_
        self.n_features_seen_ += b
        replaced = np.flatnonzero(decision == 1)
        if self._pending is not None:
            upto = b if replaced.size == 0 else int(replaced[0]) + 1
            self._pending.extend(dep1[:upto].tolist())
            if replaced.size:
                self._pending = None  # S is never empty again: no fallback needed
        self.n_irrelevant_ += int(np.count_nonzero(decision == 0))
        self.n_redundant_ += int(np.count_nonzero(decision == 3))
        for c in np.flatnonzero((decision == 1) | (decision == 2)).tolist():
            col = X[:, c].copy()
            v, d1 = float(var[c]), float(dep1[c])
            if decision[c] == 1:
                self.n_redundant_ += len(self._sel)  # the replaced selection
                self._sel, self._scores, self._vars, self._cols = [f0 + c], [d1], [v], [col]
            else:
                self._sel.append(f0 + c)
                self._scores.append(d1)
                self._vars.append(v)
                self._cols.append(col)
        self._dep = float(dep)

    def _constant_columns(self, X: np.ndarray, columns: np.ndarray, same: np.ndarray,
                          dep1: np.ndarray, is_large: np.ndarray, card_code: int,
                          gammas: tuple[float, float, float]) -> None:
        """``zhou`` mode: the authors' statistics of constant ``columns`` of ``X``, into
        ``same`` and ``dep1``. Their ``pdist(..., 'seuclidean')`` divides by the column's
        standard deviation: where MATLAB's is 0 (its mean, the sum over N, is the value), every
        distance is NaN, the sort puts the instance itself first (0 on the diagonal) and the
        NaNs after it in index order, so the neighbours of x are the first K other instances;
        where the mean rounds away from the value, the deviation is tiny, every distance 0, and
        the neighbours are the instances 2..K+1 (1-based) whichever x is."""
        n, k = X.shape[0], int(self.k)
        y = self._y
        # the neighbours depend on the variant only, not on the column: two count vectors
        by_index = (y[:k][None, :] == y[:, None]).sum(axis=1)
        head = min(k + 1, n)  # x among the first K + 1: the other K of them
        by_index[:head] = (y[:head][None, :] == y[:head, None]).sum(axis=1) - 1
        counts = np.column_stack([by_index, (y[1 : k + 1][None, :] == y[:, None]).sum(axis=1)])
        deps = np.empty(2)
        stats = np.zeros((n, 2), order="F")
        dependencies(np.asfortranarray(counts), stats, stats, is_large, k, card_code, *gammas,
                     True, deps)  # fmt: skip
        # NaN distances where MATLAB's mean (its sum, in order, over N) is the value itself
        total = np.zeros(columns.size)
        for i in range(n):  # in row order, as cumsum would, without its n x m copy
            total += X[i, columns]
        nan = total / n == X[0, columns]
        variant = np.where(nan, 0, 1)
        same[:, columns] = counts[:, variant]
        dep1[columns] = deps[variant]

    def _publish(self) -> None:
        """Refresh the public attributes from the internal selection."""
        if self._fallback is not None:
            self.selected_ = self._fallback[0].copy()
            self.scores_ = self._fallback[1].copy()
        else:
            self.selected_ = np.asarray(self._sel, dtype=np.int64)
            self.scores_ = np.asarray(self._scores, dtype=np.float64)
        self.dependency_ = float(self._dep)
