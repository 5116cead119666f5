"""GDM: group discovery machine (Zhai, Tan, Tsang, Ong, ICML 2012).

Selects *support* features for a sparse linear classifier and, for each of them, the
*affiliated* features that are too correlated (``|ρ| ≥ 1 − τ``) to be selected alongside it.

Algorithm (batch; the paper's equations and algorithms by their numbers):

* relaxation (4): ``min_{α∈A} max_{δ∈Δ} g_δ(α)``,
  ``g_δ(α) = ½‖Σ_i α_i y_i (x_i ⊙ δ)‖² + αᵀα/(2C)``, ``A`` the simplex, ``Δ`` the subsets of at
  most ``B`` features with no pair ``|ρ| ≥ 1 − τ``;
* cutting plane (Algorithm 1): from ``α = 1/n``, CRM (Algorithm 2, :func:`crm`) finds the most
  violated ``δ_t``, which joins the active set; the reduced problem (5) over the active set is an
  MKL with square hinge loss (:mod:`streamfs.algorithms.gdm_solver`), giving new ``α`` and the
  constraint multipliers ``μ``. Stop after ``max_iter`` rounds, when the objective of (5) gains
  less than ``tol`` (relative), or when CRM returns no violated or no new subset.

Standardisation. Theorem 1 (the CRM stopping rule) assumes features of mean 0 and norm 1. GDM
standardises internally, ``x̃_ij = (x_ij − mean_j) / scale_j`` with ``scale_j = ‖x_j − mean_j‖₂``
(= √n · standard deviation), without densifying sparse input: ``c = (Xᵀα̃ − mean·Σα̃) / scale``
and ``ρ(f_z, f_h) = ((x_z − mean_z)ᵀ x_h − mean_h·Σ(x_z − mean_z)) / (scale_z scale_h)`` (the
second term is 0 up to rounding, which a large ``mean_h`` would amplify). Constant features are never
selected. The classifier is learned on ``x̃`` without a separate bias (problem (3) has none);
``coef_ = w / scale_`` and ``intercept_ = −mean_ · coef_`` map it back, so
``decision_function(X) = X @ coef_ + intercept_ = x̃ · w`` on the user's *raw* features.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.feature_selection import SelectorMixin
from sklearn.utils.validation import (
    check_consistent_length,
    check_is_fitted,
    column_or_1d,
    validate_data,
)

from ._validation import (
    _listed,
    binary_sparse_tags,
    check_frame,
    check_int,
    check_number,
    check_state_algorithm,
    check_targets,
    label_array,
    label_problem,
    reads_state,
)
from .base import _SPARSE, _check_width, _input_names, _inverse, take_columns
from .gdm_solver import constraint_values, solve_reduced, subset_lipschitz
from .measures.columns import column_abs_max, max_abs_for_sums, value_problem

__all__ = ["GDM", "crm", "redundancy_rate", "selection_items", "theorem1_bound"]


def selection_items(fitted: Any) -> list[dict]:
    """The selection of a fitted GDM (or anything with its ``support_``, ``weights_``,
    ``affiliated_`` and ``affiliated_corr_``): support features by decreasing score, each with
    its affiliated features and their ``|ρ|``."""
    return [
        {
            "feature": int(z),
            "score": float(abs(wz)),
            "affiliated": [
                [int(h), float(abs(r))]
                for h, r in zip(fitted.affiliated_[int(z)], fitted.affiliated_corr_[int(z)])
            ],
        }
        for z, wz in zip(fitted.support_, fitted.weights_)
    ]


def _unnamed_gdm_state(state: Any) -> str | None:
    """The algorithm of a GDM or GDMStream state written before states recorded it."""
    params = state.get("params") if isinstance(state, dict) else None
    if not isinstance(params, dict):
        return None
    return "GDMStream" if "refit_every" in params else "GDM"


def theorem1_bound(alpha: np.ndarray, tau: float) -> float:
    """Theorem 1's bound ``√(2τ)‖α‖``.

    Standardised ``f_z, f_h`` with ``|ρ| ≥ 1 − τ`` have ``||c_z| − |c_h|| ≤ √(2τ)‖α‖``.

    (The issue's ``2τ‖α‖`` is too tight; the proof gives the square root.)

    >>> round(theorem1_bound(np.array([0.5, 0.5]), 0.25), 6)
    0.5
    """
    return float(np.sqrt(2.0 * tau) * np.linalg.norm(alpha))


def crm(
    c: np.ndarray,
    corr: Callable[[int, np.ndarray], np.ndarray],
    n_select: int,
    tau: float,
    bound: float | None,
    eligible: np.ndarray | None = None,
) -> tuple[list[int], dict[int, tuple[np.ndarray, np.ndarray]], int]:
    """Correlated redundancy matching (Algorithm 2).

    ``c``: scores ``c_j = Σ_i α_i y_i x̃_ij``; ``corr(z, idx)``: Pearson correlations of feature
    ``z`` with features ``idx`` (values below ``1 − τ`` in absolute value need not be exact);
    ``bound``: Theorem 1's ``√(2τ)‖α‖`` (``None`` scans every remaining feature: brute force);
    ``eligible``: mask of features that may be used (default all).

    Returns ``(support, groups, n_corr)``: support features in selection order, for each its
    affiliated group as ``(features, ρ)``, and the number of correlations evaluated.

    >>> c = np.array([0.9, 0.1, 0.85, 0.5])
    >>> R = np.eye(4); R[0, 2] = R[2, 0] = 0.95
    >>> s, g, _ = crm(c, lambda z, idx: R[z, idx], 2, 0.25, bound=None)
    >>> s, g[0][0].tolist()
    ([0, 3], [2])
    """
    m = c.size
    absc = np.abs(c)
    placed = np.zeros(m, dtype=bool) if eligible is None else ~np.asarray(eligible, bool)
    order = np.argsort(-absc, kind="stable")
    order = order[~placed[order]]
    sorted_abs = absc[order]
    thr = 1.0 - tau
    support: list[int] = []
    groups: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    n_corr = 0
    pos = 0
    while len(support) < n_select:
        while pos < order.size and placed[order[pos]]:
            pos += 1
        if pos >= order.size:
            break
        z = int(order[pos])
        placed[z] = True
        support.append(z)
        # Theorem 1: every h with |ρ(z, h)| ≥ 1 − τ has |c_h| ≥ |c_z| − bound; since the ranking
        # is sorted, the scan stops at the first h below that level
        if bound is None:
            end = order.size
        else:
            end = int(np.searchsorted(-sorted_abs, -(absc[z] - bound), side="right"))
        window = order[pos + 1 : end]
        window = window[~placed[window]]
        if window.size:
            rho = np.asarray(corr(z, window), dtype=np.float64)
            n_corr += window.size
            hit = np.abs(rho) >= thr
            members, rho = window[hit], rho[hit]
            placed[members] = True
        else:
            members, rho = window, np.zeros(0)
        groups[z] = (members.astype(np.int64), rho)
    return support, groups, n_corr


def redundancy_rate(X: Any, features: np.ndarray) -> float:
    """``RED(F) = 1/(m̂(m̂−1)) Σ_{i>j} |ρ(f_i, f_j)|`` of the selected columns (0 if ``m̂ < 2``).

    As in the paper the sum runs over unordered pairs, so RED ≤ ½. Constant columns count 0.

    >>> X = np.array([[1., 2., 0.], [2., 4., 1.], [3., 6., 0.]])
    >>> round(redundancy_rate(X, np.array([0, 1, 2])), 6)  # pairs: 1, 0, 0
    0.166667
    """
    features = np.asarray(features, dtype=np.int64)
    k = features.size
    if k < 2:
        return 0.0
    Xs = X[:, features]
    Xs = Xs.toarray() if sp.issparse(Xs) else np.asarray(Xs, dtype=np.float64)
    Xs = Xs - Xs.mean(axis=0)
    norms = np.linalg.norm(Xs, axis=0)
    norms[norms == 0] = np.inf
    Xs = Xs / norms
    R = np.abs(Xs.T @ Xs)
    return float(np.triu(R, 1).sum() / (k * (k - 1)))


class _Standardised:
    """Products with the standardised matrix ``x̃ = (X − mean)/scale`` without forming it."""

    def __init__(self, X: Any) -> None:
        if sp.issparse(X):
            self.X = sp.csc_matrix(X, dtype=np.float64)
            if not self.X.has_canonical_format:  # duplicate entries: sum them (on a copy)
                self.X = self.X.copy()
                self.X.sum_duplicates()
            self.X.sort_indices()
        else:
            self.X = np.asarray(X, dtype=np.float64)
        self.n, self.m = n, m = self.X.shape
        if sp.issparse(self.X):
            self.mean = np.asarray(self.X.mean(axis=0)).ravel()
            # centred sums of squares over the stored values plus the implicit zeros' share;
            # Σx² − n·mean² would cancel when the mean is large against the spread
            nnz = np.diff(self.X.indptr)
            col = np.repeat(np.arange(m), nnz)
            dev = self.X.data - self.mean[col]
            ss = np.bincount(col, weights=dev * dev, minlength=m) + (n - nnz) * self.mean**2
            dsum = np.bincount(col, weights=dev, minlength=m) - (n - nnz) * self.mean
        else:
            self.mean = self.X.mean(axis=0)
            ss = np.empty(m)
            dsum = np.empty(m)
            for k in range(0, m, 2048):  # centred sums of squares, without a full copy
                blk = slice(k, k + 2048)
                dev = self.X[:, blk] - self.mean[blk]
                ss[blk] = (dev**2).sum(axis=0)
                dsum[blk] = dev.sum(axis=0)
        # corrected two-pass: a column mean summed in order is off by up to ~n·eps relative
        # (1e-12 at n = 2e5), which gave a constant column a non-zero scale and made it a
        # feature; the deviations' own sum corrects the mean and the sum of squares
        self.mean = self.mean + dsum / n
        ss = np.maximum(ss - dsum * dsum / n, 0.0)
        scale = np.sqrt(ss)
        # relative threshold: a column that is constant up to rounding stays constant; no
        # absolute floor, which would call a column of small values (|x| ~ 1e-14) constant
        tiny = 1e-12 * np.abs(self.mean) * np.sqrt(self.n)
        self.valid = scale > tiny
        self.scale = np.where(self.valid, scale, 1.0)
        self._cache: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._scratch = np.zeros(self.m)
        self.tau = 0.0

    def scores(self, v: np.ndarray) -> np.ndarray:
        """``x̃ᵀ v`` for every feature (0 on constant features)."""
        out = (self.X.T @ v - self.mean * v.sum()) / self.scale
        return np.where(self.valid, out, 0.0)

    def dense_columns(self, idx: np.ndarray) -> np.ndarray:
        cols = self.X[:, idx]
        cols = cols.toarray() if sp.issparse(cols) else np.array(cols, dtype=np.float64)
        return (cols - self.mean[idx]) / self.scale[idx]

    def centred_column(self, z: int) -> np.ndarray:
        col = self.X[:, [z]]
        col = col.toarray().ravel() if sp.issparse(col) else col.ravel()
        return col - self.mean[z]

    def prefetch(self, features: np.ndarray, chunk: int = 64) -> None:
        """Cache the correlated sets of ``features`` with one matrix product per ``chunk``.

        CRM asks for the correlations of its support features one at a time; computing those of
        the likely ones (the top of the ranking) together turns many matrix-vector passes over
        X into a few matrix-matrix ones.
        """
        todo = [int(z) for z in features if self.valid[z] and int(z) not in self._cache]
        for k in range(0, len(todo), chunk):
            zs = np.asarray(todo[k : k + chunk])
            Zc = self.dense_columns(zs)  # standardised: (x_z − mean_z)/scale_z
            # centre x_h too: Σ(x_z − mean_z) is 0 only up to rounding, and times a large
            # mean_h that residue swamps ρ
            R = (np.asarray(self.X.T @ Zc) - np.outer(self.mean, Zc.sum(axis=0))) \
                / self.scale[:, None]
            R[~self.valid] = 0.0
            for j, z in enumerate(zs):
                keep = np.flatnonzero(np.abs(R[:, j]) >= 1.0 - self.tau)
                self._cache[int(z)] = (keep, R[keep, j].copy())

    def corr(self, z: int, idx: np.ndarray) -> np.ndarray:
        """``ρ(f_z, f_idx)``, exact where ``|ρ| ≥ 1 − tau`` (0 may stand in below it).

        Large requests are answered from a full pass over X, whose correlated set is cached
        (the same support feature is usually re-chosen in every cutting-plane round).
        """
        if not self.valid[z]:
            return np.zeros(idx.size)
        if z not in self._cache and idx.size > self.m // 16:
            self.prefetch(np.array([z]))
        if z in self._cache:
            feats, rho = self._cache[z]
            # scatter into a scratch row and gather: O(|idx|), no search
            self._scratch[feats] = rho
            out = self._scratch[idx]
            self._scratch[feats] = 0.0
            return out
        zc = self.centred_column(z) / self.scale[z]
        # centred x_h as in prefetch (rounding residue of Σ zc times mean_h)
        r = (np.asarray(self.X[:, idx].T @ zc).ravel() - self.mean[idx] * zc.sum()) \
            / self.scale[idx]
        return np.where(self.valid[idx], r, 0.0)


class GDM(ClassifierMixin, SelectorMixin, BaseEstimator):
    """Group discovery machine: support features, their affiliated groups, a linear classifier.

    A scikit-learn classifier and feature selector (batch: ``fit`` on the whole matrix).
    ``transform`` and ``get_feature_names_out`` keep the support features in ``support_``
    order; fitted on a data frame with string column names, the names are kept in
    ``feature_names_in_``.

    Parameters
    ----------
    n_features_per_step : int, default 10
        ``B``, the number of support features CRM picks per cutting-plane round.
    tau : float, default 0.25
        Features with ``|ρ| ≥ 1 − tau`` may not be selected together; they become affiliates.
    C : float, default 1.0
        Square-hinge loss weight of problem (3).
    max_iter : int, default 10
        ``T``, the maximum number of cutting-plane rounds.
    tol : float, default 1e-3
        Stop when the objective of the reduced problem (5) grows by less than ``tol`` relative.
    solver_tol : float, default 1e-6
        Relative duality-gap certificate at which the reduced problem is considered solved.
        A fit in which the solver stops at its iteration cap short of it (seen at large ``C``)
        warns with :class:`sklearn.exceptions.ConvergenceWarning`.
    solver_max_iter : int, default 500
        Cap on the reduced problem solver's outer iterations, per cutting-plane round.

    Attributes
    ----------
    support_ : (k,) int array — support features with non-zero weight, by decreasing ``|w|``:
        the features of every round's subset (``subsets_``) whose combined weight is not 0.
        The correlation constraints of ``Δ`` hold within each subset, not across rounds (the
        relaxation's ``w`` mixes the subsets, as in the paper): two support features chosen
        in different rounds may have ``|ρ| ≥ 1 − τ`` (a feature and its near-copy, both
        predictive, B = 3 of 30 features, N = 200: 12 seeds of 100), each then without the
        other as an affiliate; :func:`redundancy_rate` of ``support_`` counts them.
    selected_ : the same array as ``support_`` (every streamfs selector has ``selected_``).
    weights_ : (k,) weights ``w`` of ``support_`` on the *standardised* features.
    affiliated_ : dict ``support feature → (g,) int array`` of its affiliated features: those
        CRM put in its group in some round, each listed once (under the support feature it is
        most correlated with) and never a feature of ``support_``. A feature chosen in some
        round (see ``subsets_``) whose weight ended at 0 is not in ``support_``: it may be
        listed as an affiliate, and its own group is not reported.
    affiliated_corr_ : dict ``support feature → (g,)`` their correlations ``ρ`` with it.
    coef_, intercept_ : the classifier on raw features: ``decision_function(X) = X @ coef_ +
        intercept_``; ``predict`` maps its sign to ``classes_[1]`` (>0) / ``classes_[0]``.
    classes_ : the two labels; ``classes_[1]`` is the positive class (+1).
    alpha_ : (n,) dual variables; ``mu_`` : multipliers of the active subsets ``subsets_``.
    objective_history_ : objective of (5) after each round (non-decreasing: constraints are
        only added); ``gamma_`` : the margin ``γ = 2 Σ_t μ_t g_t(α)``; ``n_iter_``.
    stop_reason_ : why the rounds stopped: ``"max_iter"``, ``"tol"``, ``"no violated
        constraint"``, ``"no new subset"``, or ``"no feature varies"`` (every feature constant:
        nothing to select, and a warning says so).

    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((200, 30)); X[:, 1] = X[:, 0] + 0.05 * rng.standard_normal(200)
    >>> y = np.where(X[:, 0] + X[:, 5] > 0, 1, -1)
    >>> model = GDM(n_features_per_step=2).fit(X, y)
    >>> sorted(model.support_.tolist())
    [0, 5]
    >>> model.affiliated_[0].tolist()
    [1]
    >>> bool((model.predict(X) == y).mean() > 0.9)
    True
    """

    def __init__(
        self,
        n_features_per_step: int = 10,
        tau: float = 0.25,
        C: float = 1.0,
        max_iter: int = 10,
        tol: float = 1e-3,
        solver_tol: float = 1e-6,
        solver_max_iter: int = 500,
    ) -> None:
        self.n_features_per_step = n_features_per_step
        self.tau = tau
        self.C = C
        self.max_iter = max_iter
        self.tol = tol
        self.solver_tol = solver_tol
        self.solver_max_iter = solver_max_iter

    # ------------------------------------------------------------------ fitting
    def _validate_params(self) -> None:
        """Types and ranges of the parameters; ``ValueError`` naming the first bad one."""
        check_int("n_features_per_step", self.n_features_per_step, 1)
        check_number("tau", self.tau, 0.0, 1.0, low_open=True, high_open=True)
        check_number("C", self.C, 0.0, low_open=True)
        check_int("max_iter", self.max_iter, 1)
        check_number("tol", self.tol, 0.0)
        check_number("solver_tol", self.solver_tol, 0.0, low_open=True)
        check_int("solver_max_iter", self.solver_max_iter, 1)

    def _encode(self, y: Any) -> np.ndarray:
        y = np.asarray(y).ravel()
        classes = np.unique(y)
        if classes.size > 2:
            listed = _listed([c.item() if isinstance(c, np.generic) else c for c in classes])
            raise ValueError(
                f"Only binary classification is supported: GDM got the labels of "
                f"{classes.size} classes ({listed}); map them to two classes first"
            )
        if classes.size < 2:
            raise ValueError(label_problem(y, "GDM"))
        self.classes_ = classes
        return np.where(y == classes[1], 1.0, -1.0)

    def __sklearn_tags__(self):
        return binary_sparse_tags(super().__sklearn_tags__())

    @staticmethod
    def _value_limit(n_rows: int) -> tuple[float, str]:
        """The largest ``|x|`` over ``n_rows`` instances: beyond it a feature's variance
        overflows and standardisation silently zeroes the feature."""
        return max_abs_for_sums(n_rows), "GDM's standardised features"

    def fit(self, X: Any, y: Any) -> "GDM":
        """Run the cutting-plane algorithm on ``X`` (dense, scipy.sparse or a data frame,
        n × m) and binary labels."""
        self._validate_params()
        if y is None:
            raise ValueError("GDM requires y to be passed, but the target y is None")
        for name in [a for a in vars(self) if a.endswith("_") and not a.startswith("__")]:
            delattr(self, name)
        check_frame(X)
        # "numeric" first: text is refused, as by the other selectors (float64 would parse it)
        X = validate_data(self, X, reset=True, accept_sparse=("csr", "csc", "coo"),
                          dtype="numeric", ensure_all_finite=True, ensure_min_samples=2)
        X = X.astype(np.float64, copy=False)
        problem = value_problem(column_abs_max(X), X.shape[0], *self._value_limit(X.shape[0]))
        if problem is not None:
            raise ValueError(problem)
        y = column_or_1d(label_array(y), warn=True)
        check_consistent_length(X, y)
        y = check_targets(y)
        yy = self._encode(y)
        S = _Standardised(X)
        S.tau = self.tau
        if yy.size != S.n:
            raise ValueError("X and y have different numbers of rows")
        n, m = S.n, S.m
        self.n_features_in_ = m

        alpha = np.full(n, 1.0 / n)
        cols: list[int] = []  # union of active features, column order of Xs
        col_pos: dict[int, int] = {}
        Xs = np.zeros((n, 0))
        subsets: list[np.ndarray] = []  # positions into cols
        subset_keys: set[tuple[int, ...]] = set()
        mu = np.zeros(0)
        lam = np.zeros(0)  # λ_max of each subset's Gram matrix (inner Lipschitz constants)
        groups_seen: dict[int, dict[int, float]] = {}
        history: list[float] = []
        unsolved: list[tuple[int, float, int]] = []  # (round, relative gap, outer iterations)
        self.n_corr_ = 0
        self.stop_reason_ = "max_iter"
        it = 0
        for it in range(1, self.max_iter + 1):
            c = S.scores(alpha * yy)
            # the top of the ranking holds most of this round's support features
            ranked = np.argsort(-np.abs(c), kind="stable")
            S.prefetch(ranked[S.valid[ranked]][: self.n_features_per_step + 8])
            support, groups, n_corr = crm(
                c, S.corr, self.n_features_per_step, self.tau,
                theorem1_bound(alpha, self.tau), eligible=S.valid,
            )
            self.n_corr_ += n_corr
            key = tuple(sorted(support))
            if not support or key in subset_keys:
                self.stop_reason_ = "no new subset" if S.valid.any() else "no feature varies"
                it -= 1
                break
            if history:
                # most violated constraint not violated: (4) is solved on the active set
                g_new = 0.5 * float(c[support] @ c[support]) + float(alpha @ alpha) / (2 * self.C)
                if g_new <= history[-1] * (1.0 + 1e-12):
                    self.stop_reason_ = "no violated constraint"
                    it -= 1
                    break
            for z in support:
                rec = groups_seen.setdefault(z, {})
                for h, r in zip(*groups[z]):
                    rec[int(h)] = float(r)
            new = [z for z in support if z not in col_pos]
            for z in new:
                col_pos[z] = len(cols)
                cols.append(z)
            if new:
                Xs = np.hstack([Xs, S.dense_columns(np.asarray(new))])
            subset_keys.add(key)
            subsets.append(np.array([col_pos[z] for z in support], dtype=np.int64))
            lam = np.append(lam, subset_lipschitz(Xs, subsets[-1:]))
            mu0 = np.append(mu * (1.0 - 1.0 / len(subsets)), 1.0 / len(subsets))
            sol = solve_reduced(Xs, yy, subsets, self.C, alpha, mu0, tol=self.solver_tol,
                                max_outer=self.solver_max_iter, lam=lam)
            alpha, mu = sol.alpha, sol.mu
            if not sol.converged:
                unsolved.append((it, sol.gap / sol.objective, sol.n_outer))
            history.append(sol.objective)
            if len(history) > 1 and history[-1] - history[-2] <= self.tol * abs(history[-1]):
                self.stop_reason_ = "tol"
                break
        self.n_iter_ = it
        if unsolved:
            self._warn_unsolved(unsolved)
        if not S.valid.any():  # a sound empty model, said: its predict is one class
            warnings.warn("GDM selected nothing: every feature is constant on the instances it "
                          "was fitted on, so none separates the classes", UserWarning,
                          stacklevel=2)
        self.alpha_ = alpha
        self.mu_ = mu
        self.subsets_ = [np.asarray(cols, dtype=np.int64)[s] for s in subsets]
        self.objective_history_ = np.asarray(history)
        g = constraint_values(Xs, yy, subsets, alpha, self.C)
        self.gamma_ = float(2.0 * mu @ g)

        # w = Σ_t μ_t Σ_i α_i y_i x̃_i ⊙ δ_t  (combined weight d_j = Σ_{t∋j} μ_t)
        cols_a = np.asarray(cols, dtype=np.int64)
        d = np.zeros(cols_a.size)
        for m_t, s in zip(mu, subsets):
            d[s] += m_t
        w = d * (Xs.T @ (alpha * yy))
        keep = np.flatnonzero(np.abs(w) > 1e-12 * max(np.abs(w).max(initial=0.0), 1e-300))
        keep = keep[np.argsort(-np.abs(w[keep]), kind="stable")]
        self.support_ = cols_a[keep]
        self.selected_ = self.support_  # the name every streamfs selector's selection has
        self.weights_ = w[keep]
        self.coef_ = np.zeros(m)
        self.coef_[self.support_] = self.weights_ / S.scale[self.support_]
        self.intercept_ = float(-S.mean @ self.coef_)
        self._set_groups(groups_seen)
        return self

    def _warn_unsolved(self, unsolved: list[tuple[int, float, int]]) -> None:
        # the solver stops at its outer-iteration cap short of solver_tol (seen at large C):
        # alpha, mu and so the weights and later rounds' CRM then rest on an inexact solution
        rounds = ", ".join(str(r) for r, _, _ in unsolved)
        worst = max(g for _, g, _ in unsolved)
        n_outer = max(k for _, _, k in unsolved)
        warnings.warn(
            f"GDM's reduced problem (5) did not converge in cutting-plane round(s) {rounds}: "
            f"the solver stopped after {n_outer} outer iterations at a relative duality gap "
            f"of {worst:.2g}, above solver_tol={self.solver_tol:g}; weights and support may be "
            f"inaccurate. Raise solver_max_iter (now {self.solver_max_iter}), or solver_tol "
            f"(to {worst:.2g} or more to accept this gap); a smaller C than {self.C:g} is "
            f"also solved faster, but changes the model.",
            ConvergenceWarning, stacklevel=3,
        )

    def _set_groups(self, groups_seen: dict[int, dict[int, float]]) -> None:
        # an affiliate is reported once: of the support features whose CRM group it joined in
        # some round, under the one it is most correlated with. Only support_ (non-zero weight)
        # is never listed: a feature chosen in some round whose weight ended at 0 is no support
        # feature of the fit, so it is listed if it joined a support feature's group, and its
        # own group is not reported (the definition gives each support feature's group and
        # says nothing across rounds)
        sup = set(self.support_.tolist())
        best: dict[int, tuple[int, float]] = {}
        for z in self.support_.tolist():
            for h, r in groups_seen.get(z, {}).items():
                if h not in sup and (h not in best or abs(r) > abs(best[h][1])):
                    best[h] = (z, r)
        self.affiliated_ = {}
        self.affiliated_corr_ = {}
        for z in self.support_.tolist():
            hs = sorted(h for h, (zz, _) in best.items() if zz == z)
            self.affiliated_[z] = np.asarray(hs, dtype=np.int64)
            self.affiliated_corr_[z] = np.asarray([best[h][1] for h in hs], dtype=np.float64)

    # -------------------------------------------------------------- prediction
    def _check_X(self, X: Any) -> Any:
        check_is_fitted(self, "support_")
        _check_width(self, X, self.n_features_in_)
        return validate_data(self, X, reset=False, accept_sparse=_SPARSE, dtype="numeric",
                             ensure_all_finite=True)

    def decision_function(self, X: Any) -> np.ndarray:
        """``X @ coef_ + intercept_`` on raw features (dense or sparse); > 0: ``classes_[1]``."""
        X = self._check_X(X)
        return np.asarray(X @ self.coef_).ravel() + self.intercept_

    def predict(self, X: Any) -> np.ndarray:
        """Labels in the original encoding (ties at 0 go to ``classes_[0]``)."""
        score = self.decision_function(X)  # checks that the model is fitted first
        return self.classes_[(score > 0).astype(int)]

    def _get_support_mask(self) -> np.ndarray:
        return self.get_support()

    def get_support(self, indices: bool = False, *, affiliated: bool = False) -> np.ndarray:
        """Mask of the support features, or their indices in ``support_`` order (the order
        of ``transform``'s columns, as every feature-stream selector gives them);
        ``affiliated=True`` adds their affiliates (indices: after the support, each support
        feature's group in ``support_`` order, ascending within a group)."""
        check_is_fitted(self, "support_")
        idx = np.asarray(self.support_, dtype=np.int64)
        if affiliated:
            idx = np.concatenate([idx, *(np.asarray(self.affiliated_[z], dtype=np.int64)
                                         for z in self.support_.tolist())])
        if indices:
            return idx
        mask = np.zeros(self.n_features_in_, dtype=bool)
        mask[idx] = True
        return mask

    def transform(self, X: Any) -> Any:
        """The support columns of ``X``, in ``support_`` order."""
        X = self._check_X(X)
        return take_columns(X, self.support_)

    def inverse_transform(self, X: Any) -> Any:
        """Put the columns of a transformed ``X`` back at their places, zeros elsewhere."""
        check_is_fitted(self, "support_")
        return _inverse(self, X, np.asarray(self.support_, dtype=np.int64),
                        int(self.n_features_in_))

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        """Names of the support features in ``support_`` order (``x<i>`` without names)."""
        check_is_fitted(self, "support_")
        names = _input_names(self, input_features, int(self.n_features_in_))
        return names[np.asarray(self.support_, dtype=np.int64)]

    def selection(self) -> list[dict]:
        """``[{"feature", "score", "affiliated": [[feature, |ρ|], ...]}]`` by decreasing score.

        ``score`` is ``|w_j|``, the weight magnitude on the *standardised* feature (comparable
        across features, unlike ``coef_`` which depends on units).
        """
        check_is_fitted(self, "support_")
        return selection_items(self)

    # ------------------------------------------------------------------- state
    _PARAMS = ("n_features_per_step", "tau", "C", "max_iter", "tol", "solver_tol",
               "solver_max_iter")

    def to_state(self) -> dict:
        """Plain-data snapshot (str/int dict keys, numpy arrays, python scalars)."""
        state: dict = {"algorithm": "GDM", "params": {p: getattr(self, p) for p in self._PARAMS}}
        if not hasattr(self, "support_"):
            return state
        state["fitted"] = {
            "classes": np.asarray(self.classes_).tolist(),  # python scalars (labels may be str)
            "n_features_in": int(self.n_features_in_),
            "support": self.support_.copy(),
            "weights": self.weights_.copy(),
            "coef_support": self.coef_[self.support_].copy(),
            "intercept": float(self.intercept_),
            "affiliated": {int(z): a.copy() for z, a in self.affiliated_.items()},
            "affiliated_corr": {int(z): a.copy() for z, a in self.affiliated_corr_.items()},
            "alpha": self.alpha_.copy(),
            "mu": self.mu_.copy(),
            "subsets": {i: s.copy() for i, s in enumerate(self.subsets_)},
            "objective_history": self.objective_history_.copy(),
            "gamma": float(self.gamma_),
            "n_iter": int(self.n_iter_),
            "n_corr": int(self.n_corr_),
            "stop_reason": str(self.stop_reason_),
        }
        if hasattr(self, "feature_names_in_"):
            state["fitted"]["feature_names"] = [str(n) for n in self.feature_names_in_]
        return state

    @classmethod
    @reads_state
    def from_state(cls, state: dict) -> "GDM":
        """Rebuild a model from :meth:`to_state` output."""
        # states written before they recorded the algorithm: GDMStream's have refit_every
        check_state_algorithm(state, cls.__name__, ["GDM"], default=_unnamed_gdm_state(state))
        p = state["params"]
        # a parameter added after the state was written takes its default
        model = cls(**{k: p[k] for k in cls._PARAMS if k in p})
        model._validate_params()  # a state's values are refused as a constructor's are
        f = state.get("fitted")
        if f is None:
            return model
        model.classes_ = np.asarray(f["classes"])
        model.n_features_in_ = int(f["n_features_in"])
        model.support_ = np.asarray(f["support"], dtype=np.int64)
        model.selected_ = model.support_
        model.weights_ = np.asarray(f["weights"], dtype=np.float64)
        model.coef_ = np.zeros(model.n_features_in_)
        model.coef_[model.support_] = f["coef_support"]
        model.intercept_ = float(f["intercept"])
        model.affiliated_ = {int(k): np.asarray(v, np.int64) for k, v in f["affiliated"].items()}
        model.affiliated_corr_ = {
            int(k): np.asarray(v, np.float64) for k, v in f["affiliated_corr"].items()
        }
        model.alpha_ = np.asarray(f["alpha"], dtype=np.float64)
        model.mu_ = np.asarray(f["mu"], dtype=np.float64)
        subs = f["subsets"]
        model.subsets_ = [np.asarray(subs[k], np.int64) for k in sorted(subs, key=int)]
        model.objective_history_ = np.asarray(f["objective_history"], dtype=np.float64)
        model.gamma_ = float(f["gamma"])
        model.n_iter_ = int(f["n_iter"])
        model.n_corr_ = int(f["n_corr"])
        model.stop_reason_ = str(f["stop_reason"])
        if f.get("feature_names") is not None:
            model.feature_names_in_ = np.asarray([str(n) for n in f["feature_names"]],
                                                 dtype=object)
        return model
