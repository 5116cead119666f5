import math
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize

from streamfs.algorithms.gdm import GDM, _Standardised, crm, redundancy_rate, theorem1_bound
from streamfs.algorithms.gdm_solver import (
    constraint_values,
    project_simplex,
    solve_reduced,
    solve_simplex_qp,
)
from streamfs.codec import packb, unpackb


def _standardise(X: np.ndarray) -> np.ndarray:
    Xc = X - X.mean(axis=0)
    return Xc / np.linalg.norm(Xc, axis=0)


def _blocks(rng, n, sizes, n_noise, noise=0.1):
    """Features in correlated blocks (copies of one latent + noise), then pure noise columns."""
    cols, latents, groups = [], [], []
    for size in sizes:
        z = rng.standard_normal(n)
        latents.append(z)
        groups.append(list(range(len(cols), len(cols) + size)))
        cols += [z + noise * rng.standard_normal(n) for _ in range(size)]
    cols += [rng.standard_normal(n) for _ in range(n_noise)]
    return np.column_stack(cols), np.column_stack(latents), groups


def _random_alpha(rng, n):
    a = rng.exponential(size=n) * (rng.random(n) < 0.7)
    a[0] += 1e-3
    return a / a.sum()


# ----------------------------------------------------------------------------- simplex / QP
@given(st.lists(st.floats(-5, 5), min_size=1, max_size=12))
@settings(max_examples=60, deadline=None)
def test_project_simplex_is_the_closest_simplex_point(v):
    v = np.array(v)
    p = project_simplex(v)
    assert p.min() >= 0 and abs(p.sum() - 1) < 1e-12
    # optimality of a Euclidean projection: (v − p)ᵀ(q − p) ≤ 0 for every vertex q
    for i in range(v.size):
        q = np.zeros(v.size)
        q[i] = 1
        assert (v - p) @ (q - p) <= 1e-9


def test_simplex_qp_matches_slsqp():
    rng = np.random.default_rng(3)
    Z = rng.standard_normal((15, 4))
    a, f, gap, _ = solve_simplex_qp(Z, 0.5, np.full(15, 1 / 15), np.linalg.norm(Z, 2) ** 2 + 0.5)
    ref = minimize(
        lambda x: 0.5 * np.sum((Z.T @ x) ** 2) + 0.25 * x @ x, np.full(15, 1 / 15),
        jac=lambda x: Z @ (Z.T @ x) + 0.5 * x, bounds=[(0, 1)] * 15,
        constraints=[{"type": "eq", "fun": lambda x: x.sum() - 1}], method="SLSQP",
        options={"ftol": 1e-14, "maxiter": 500},
    )
    assert gap <= 1e-9 * f
    assert f <= ref.fun + 1e-10 and abs(f - ref.fun) <= 1e-7 * ref.fun


# ------------------------------------------------------------------------ reduced problem (5)
def _reduced_instance(seed, n=60, k=24, T=4):
    rng = np.random.default_rng(seed)
    Xs = _standardise(rng.standard_normal((n, k)))
    y = np.where(Xs[:, :6].sum(axis=1) + 0.3 * rng.standard_normal(n) > 0, 1.0, -1.0)
    subsets = [np.sort(rng.choice(k, size=6, replace=False)) for _ in range(T)]
    return Xs, y, subsets


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_reduced_solution_satisfies_kkt(seed):
    Xs, y, subsets = _reduced_instance(seed)
    C = 1.0
    sol = solve_reduced(Xs, y, subsets, C=C, tol=1e-8)
    a, mu, g = sol.alpha, sol.mu, sol.g
    gmax = g.max()
    assert np.allclose(g, constraint_values(Xs, y, subsets, a, C))
    # primal / dual feasibility
    assert a.min() >= 0 and abs(a.sum() - 1) < 1e-12
    assert mu.min() >= 0 and abs(mu.sum() - 1) < 1e-12
    # complementary slackness: μ_t > 0 only on constraints that are active (g_t = θ)
    assert np.all(mu * (gmax - g) <= 1e-7 * gmax)
    # stationarity: α minimises Σ_t μ_t g_t over the simplex, i.e. the gradient is minimal
    # (and constant) on the support of α
    Xy = Xs * y[:, None]
    grad = sum(m_t * Xy[:, s] @ (Xy[:, s].T @ a) for m_t, s in zip(mu, subsets)) + a / C
    on = a > 1e-9
    assert np.ptp(grad[on]) <= 1e-5 * np.abs(grad).max()
    assert grad[~on].min(initial=np.inf) >= grad[on].min() - 1e-5 * np.abs(grad).max()
    # more than one constraint is active in these instances: μ really is a mixture
    assert np.sum(mu > 1e-6) >= 2


def test_reduced_objective_matches_slsqp_on_epigraph_form():
    Xs, y, subsets = _reduced_instance(5, n=20, k=12, T=3)
    sol = solve_reduced(Xs, y, subsets, C=1.0, tol=1e-9)
    n = y.size

    def g_t(x, s):
        v = Xs[:, s].T @ (x[:n] * y)
        return 0.5 * v @ v + 0.5 * x[:n] @ x[:n]

    cons = [{"type": "eq", "fun": lambda x: x[:n].sum() - 1}]
    cons += [{"type": "ineq", "fun": (lambda x, s=s: x[n] - g_t(x, s))} for s in subsets]
    x0 = np.append(np.full(n, 1 / n), 1.0)
    ref = minimize(lambda x: x[n], x0, method="SLSQP", constraints=cons,
                   bounds=[(0, 1)] * n + [(None, None)], options={"ftol": 1e-15, "maxiter": 1000})
    assert ref.success
    assert abs(sol.objective - ref.fun) <= 1e-6 * ref.fun
    assert sol.gap <= 1e-9 * sol.objective


# ----------------------------------------------------------------------------------- CRM
def _corr_fn(Xt):
    return lambda z, idx: Xt[:, idx].T @ Xt[:, z]


def test_crm_correlated_block_becomes_one_support_plus_affiliates():
    rng = np.random.default_rng(0)
    n = 300
    X, latents, groups = _blocks(rng, n, sizes=[4, 1, 3], n_noise=6, noise=0.1)
    Xt = _standardise(X)
    y = np.sign(latents @ np.array([1.0, 0.8, -0.9]) + 0.05 * rng.standard_normal(n))
    alpha = np.full(n, 1 / n)
    c = Xt.T @ (alpha * y)
    support, grp, _ = crm(c, _corr_fn(Xt), 3, 0.25, theorem1_bound(alpha, 0.25))
    # one support per block, chosen first (the blocks carry the signal), rest are affiliates
    assert sorted(next(i for i, g in enumerate(groups) if z in g) for z in support) == [0, 1, 2]
    for z in support:
        block = next(g for g in groups if z in g)
        assert sorted(grp[z][0].tolist()) == sorted(set(block) - {z})
        assert np.all(np.abs(grp[z][1]) >= 0.75)
    # selected features are pairwise below the correlation threshold
    R = np.abs(np.corrcoef(X[:, support].T))
    assert np.all(R[np.triu_indices(3, 1)] < 0.75)


def test_crm_negative_correlation_is_affiliated_too():
    rng = np.random.default_rng(1)
    n = 200
    base = rng.standard_normal(n)
    X = np.column_stack([base, -base + 0.1 * rng.standard_normal(n), rng.standard_normal(n)])
    Xt = _standardise(X)
    y = np.sign(base)
    alpha = np.full(n, 1 / n)
    support, grp, _ = crm(Xt.T @ (alpha * y), _corr_fn(Xt), 2, 0.25, theorem1_bound(alpha, 0.25))
    z = support[0]
    assert z in (0, 1) and grp[z][0].tolist() == [1 - z] and grp[z][1][0] < -0.75
    assert support[1] == 2


@given(seed=st.integers(0, 2**32 - 1), tau=st.sampled_from([0.05, 0.25, 0.5]),
       B=st.integers(1, 12))
@settings(max_examples=40, deadline=None)
def test_crm_stop_rule_matches_brute_force_scan(seed, tau, B):
    rng = np.random.default_rng(seed)
    n = 40
    sizes = rng.integers(1, 5, size=8).tolist()
    X, _, _ = _blocks(rng, n, sizes, n_noise=10, noise=rng.uniform(0.05, 1.0))
    Xt = _standardise(X)
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    alpha = _random_alpha(rng, n)
    c = Xt.T @ (alpha * y)
    bound = theorem1_bound(alpha, tau)
    fast = crm(c, _corr_fn(Xt), B, tau, bound)
    brute = crm(c, _corr_fn(Xt), B, tau, None)
    assert fast[0] == brute[0]
    for z in fast[0]:
        assert fast[1][z][0].tolist() == brute[1][z][0].tolist()
    assert fast[2] <= brute[2]
    # Theorem 1 itself on every correlated pair
    R = Xt.T @ Xt
    i, j = np.nonzero(np.abs(np.triu(R, 1)) >= 1 - tau)
    assert np.all(np.abs(np.abs(c[i]) - np.abs(c[j])) <= bound + 1e-12)


def test_crm_stop_rule_actually_prunes():
    # the equivalence above is only informative if the rule cuts scans short
    pruned = 0
    for seed in range(60):
        rng = np.random.default_rng(seed)
        n = 40
        X, _, _ = _blocks(rng, n, rng.integers(1, 5, size=8).tolist(), n_noise=10, noise=0.3)
        Xt = _standardise(X)
        alpha = _random_alpha(rng, n)
        c = Xt.T @ (alpha * np.where(rng.random(n) < 0.5, 1.0, -1.0))
        fast = crm(c, _corr_fn(Xt), 6, 0.05, theorem1_bound(alpha, 0.05))
        brute = crm(c, _corr_fn(Xt), 6, 0.05, None)
        assert fast[0] == brute[0]
        pruned += fast[2] < brute[2]
    assert pruned >= 10


def test_theorem1_needs_the_square_root():
    # f_h ⟂ α̃ and f_z = 0.76 f_h + sin θ · α̃/‖α̃‖ (ρ = 0.76 ≥ 1 − τ): |c_z| − |c_h| = 0.65‖α‖,
    # above the 2τ‖α‖ = 0.5‖α‖ but below √(2τ)‖α‖ = 0.707‖α‖
    n, tau = 8, 0.25
    y = np.array([1.0, -1, 1, -1, 1, -1, 1, -1])
    alpha = np.full(n, 1 / n)
    u = y / np.sqrt(n)
    v = np.array([1.0, 1, -1, -1, 1, 1, -1, -1]) / np.sqrt(n)  # centred, ⟂ u
    fz = 0.76 * v + np.sqrt(1 - 0.76**2) * u
    noise = np.array([1.0, 1, 1, 1, -1, -1, -1, -1]) / np.sqrt(n)
    Xt = np.column_stack([fz, v, 0.3 * u + np.sqrt(1 - 0.09) * noise])
    c = Xt.T @ (alpha * y)
    assert abs(Xt[:, 0] @ Xt[:, 1] - 0.76) < 1e-12
    ok = crm(c, _corr_fn(Xt), 2, tau, theorem1_bound(alpha, tau))
    wrong = crm(c, _corr_fn(Xt), 2, tau, 2 * tau * np.linalg.norm(alpha))
    assert ok[0] == [0, 2] and ok[1][0][0].tolist() == [1]
    assert wrong[1][0][0].tolist() == []  # the 2τ rule stops the scan too early


def test_standardised_products_sparse_equal_dense():
    rng = np.random.default_rng(2)
    m = 64
    X = rng.poisson(0.3, size=(50, m)).astype(float) + 2.0 * (rng.random((50, m)) < 0.1)
    X[:, 4] = 3.0  # constant column
    X[:, 7] = 2 * X[:, 0] + 0.1 * X[:, 9]  # strongly correlated with column 0
    v = rng.standard_normal(50)
    keep = np.arange(m) != 4
    Xt = np.zeros_like(X)
    Xt[:, keep] = _standardise(X[:, keep])
    exact = Xt.T @ Xt[:, 0]
    for A in (X, sp.csc_matrix(X), sp.csr_matrix(X)):
        S = _Standardised(A)
        S.tau = 0.25
        assert not S.valid[4] and S.valid[keep].all()
        np.testing.assert_allclose(S.scores(v), Xt.T @ v, atol=1e-12)
        idx = np.array([1, 7, 63])  # small request: sliced columns, exact, not cached
        np.testing.assert_allclose(S.corr(0, idx), exact[idx], atol=1e-12)
        assert 0 not in S._cache
        rest = np.arange(1, m)  # large request: full pass; the correlated set is cached
        got = S.corr(0, rest)
        strong = np.abs(exact[rest]) >= 0.75
        assert strong.sum() == 1 and 0 in S._cache
        np.testing.assert_allclose(got[strong], exact[rest][strong], atol=1e-12)
        assert np.all(np.abs(got[~strong]) < 0.75)
        S.prefetch(np.array([9, 4]))  # constant features are skipped
        assert 9 in S._cache and 4 not in S._cache
        np.testing.assert_allclose(S.corr(9, rest[rest != 9]), 0.0 * rest[rest != 9], atol=0)


def test_redundancy_rate_brute_force():
    rng = np.random.default_rng(4)
    X = rng.standard_normal((40, 6))
    X[:, 1] += X[:, 0]
    F = np.array([0, 1, 3, 5])
    R = np.abs(np.corrcoef(X[:, F].T))
    expected = sum(R[i, j] for i in range(4) for j in range(i)) / (4 * 3)
    assert abs(redundancy_rate(X, F) - expected) < 1e-12
    assert abs(redundancy_rate(sp.csc_matrix(X), F) - expected) < 1e-12
    assert redundancy_rate(X, np.array([2])) == 0.0


# ----------------------------------------------------------------------------------- GDM
@pytest.fixture(scope="module")
def grouped_problem():
    rng = np.random.default_rng(7)
    n = 400
    sizes = [4, 3, 1, 1, 2, 1]
    X, latents, groups = _blocks(rng, n, sizes, n_noise=150, noise=0.15)
    w = np.array([1.5, -1.2, 1.0, -0.9, 0.8, 0.7])
    y = np.where(latents @ w + 0.2 * rng.standard_normal(n) > 0, "pos", "neg")
    X = X * rng.uniform(0.5, 5, size=X.shape[1]) + rng.uniform(-3, 3, size=X.shape[1])
    return X, y, groups


@pytest.fixture(scope="module")
def fitted(grouped_problem):
    X, y, _ = grouped_problem
    return GDM(n_features_per_step=6, max_iter=6, tol=1e-6).fit(X, y)


def test_gdm_recovers_groups_as_support_plus_affiliates(grouped_problem, fitted):
    X, y, groups = grouped_problem
    model = fitted
    # every planted group is covered exactly by its support feature(s) and their affiliates
    # (different rounds may pick different members of a tight group as support)
    top = model.support_[:6]
    assert {next(i for i, g in enumerate(groups) if z in g) for z in top} == set(range(6))
    for g in groups:
        sup = [int(z) for z in model.support_ if z in g]
        covered = set(sup).union(*(model.affiliated_[z].tolist() for z in sup))
        assert covered == set(g)
    for z, aff in model.affiliated_.items():
        home = [g for g in groups if z in g]
        assert all(home and h in home[0] for h in aff)  # no affiliate outside its group
    # C = 1 on unit-norm features regularises strongly; the paper's default is kept
    assert (model.predict(X) == y).mean() > 0.93
    assert set(model.classes_.tolist()) == {"neg", "pos"}


def test_gdm_objective_is_monotone_and_constraints_tight(grouped_problem, fitted):
    model = fitted
    h = model.objective_history_
    assert h.size >= 2
    assert np.all(np.diff(h) >= -1e-6 * h[1:])
    assert len(model.subsets_) == h.size == model.n_iter_
    assert all(s.size <= model.n_features_per_step for s in model.subsets_)
    X = grouped_problem[0]
    for s in model.subsets_:  # every δ_t lies in Δ: no selected pair with |ρ| ≥ 1 − τ
        R = np.abs(np.corrcoef(X[:, s].T))
        assert np.all(R[np.triu_indices(s.size, 1)] < 1 - model.tau)
    assert abs(model.mu_.sum() - 1) < 1e-12 and model.mu_.min() >= 0


def test_gdm_decision_function_on_raw_features(grouped_problem, fitted):
    X, y, _ = grouped_problem
    model = fitted
    Xt = (X - X.mean(axis=0)) / np.linalg.norm(X - X.mean(axis=0), axis=0)
    f_std = Xt[:, model.support_] @ model.weights_
    np.testing.assert_allclose(model.decision_function(X), f_std, atol=1e-10)
    np.testing.assert_allclose(model.decision_function(sp.csr_matrix(X)), f_std, atol=1e-10)
    # margin: y_i f(x_i) = γ − α_i / C on the support vectors (KKT of problem (3))
    yy = np.where(y == model.classes_[1], 1.0, -1.0)
    # the combined weights use all active subsets; on a support vector α_i > 0
    sv = model.alpha_ > 1e-8
    np.testing.assert_allclose(yy[sv] * f_std[sv] + model.alpha_[sv] / model.C, model.gamma_,
                               rtol=1e-3)
    pred = model.predict(X)
    assert np.array_equal(pred == "pos", model.decision_function(X) > 0)


def test_gdm_dense_and_sparse_fit_agree(grouped_problem, fitted):
    X, y, _ = grouped_problem
    Xq = np.round(X, 1)  # many repeated values; sparse after shifting the most common one out
    Xq[np.abs(Xq) < 1.0] = 0.0
    a = GDM(n_features_per_step=5, max_iter=3).fit(Xq, y)
    b = GDM(n_features_per_step=5, max_iter=3).fit(sp.csc_matrix(Xq), y)
    assert a.support_.tolist() == b.support_.tolist()
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-6, atol=1e-10)
    assert {k: v.tolist() for k, v in a.affiliated_.items()} == {
        k: v.tolist() for k, v in b.affiliated_.items()}


def test_gdm_support_api_and_transform(grouped_problem, fitted):
    X, _, _ = grouped_problem
    model = fitted
    mask = model.get_support()
    assert mask.shape == (X.shape[1],) and mask.sum() == model.support_.size
    full = model.get_support(affiliated=True, indices=True)
    n_aff = sum(v.size for v in model.affiliated_.values())
    assert full.size == model.support_.size + n_aff
    assert full[:model.support_.size].tolist() == model.support_.tolist()
    assert np.flatnonzero(model.get_support(affiliated=True)).tolist() == sorted(full.tolist())
    # scikit-learn's signature: the first positional argument is ``indices``; the indices are
    # transform's columns, in its order
    cols = model.get_support(True)
    assert cols.tolist() == model.support_.tolist() and cols.tolist() != sorted(cols.tolist())
    assert np.array_equal(model.transform(X), X[:, cols])
    assert np.array_equal(model.transform(X), X[:, model.support_])
    assert np.array_equal(model.transform(sp.csc_matrix(X)).toarray(), X[:, model.support_])
    assert np.flatnonzero(model.coef_).tolist() == sorted(model.support_.tolist())
    with pytest.raises(ValueError):
        model.transform(X[:, :-1])


def test_gdm_selection_and_state_round_trip_through_codec(grouped_problem, fitted):
    X, _, _ = grouped_problem
    model = fitted
    sel = model.selection()
    assert [s["feature"] for s in sel] == model.support_.tolist()
    scores = [s["score"] for s in sel]
    assert scores == sorted(scores, reverse=True) and scores[0] > 0
    assert all(r >= 0.75 for s in sel for _, r in s["affiliated"])
    state = unpackb(packb(model.to_state()))
    clone = GDM.from_state(state)
    assert clone.selection() == sel
    # selected_: the attribute every streamfs selector has, the support here
    assert clone.selected_.tolist() == model.selected_.tolist() == model.support_.tolist()
    np.testing.assert_array_equal(clone.decision_function(X), model.decision_function(X))
    np.testing.assert_array_equal(clone.predict(X), model.predict(X))
    unfitted = GDM.from_state(GDM(tau=0.1).to_state())
    assert unfitted.tau == 0.1 and not hasattr(unfitted, "support_")
    damaged = dict(state, params=dict(state["params"], tau=5))  # restored as it was
    with pytest.raises(ValueError, match="tau"):
        GDM.from_state(damaged)


def test_gdm_rejects_multiclass_and_bad_params():
    X = np.random.default_rng(0).standard_normal((9, 3))
    with pytest.raises(ValueError, match="binary"):
        GDM().fit(X, np.arange(9) % 3)
    with pytest.raises(ValueError):
        GDM(tau=1.5).fit(X, np.arange(9) % 2)


def test_gdm_stops_when_no_new_subset():
    # three informative uncorrelated features and B = 3: round 2 can only repeat round 1
    rng = np.random.default_rng(0)
    X = rng.standard_normal((100, 3))
    y = np.sign(X.sum(axis=1))
    model = GDM(n_features_per_step=3, max_iter=10).fit(X, y)
    assert model.n_iter_ == 1 and model.stop_reason_ in ("no new subset", "no violated constraint")
    assert sorted(model.support_.tolist()) == [0, 1, 2]


def test_standardisation_is_exact_up_to_the_bound_and_refused_beyond():
    # a power-of-2 rescaled feature standardises to the same bits; beyond the bound its
    # variance overflowed and the feature was silently dropped
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 8))
    y = np.where(X[:, 0] + 0.3 * X[:, 1] > 0, 1, -1)
    big = X.copy()
    big[:, 0] *= 2.0**490
    assert GDM().fit(big, y).selection() == GDM().fit(X, y).selection()
    big[:, 0] = X[:, 0] * 1e160
    with pytest.raises(ValueError, match=r"too large for GDM.s standardised features in col"):
        GDM().fit(big, y)


def test_sparse_scale_is_the_centred_norm_without_cancellation():
    # sparse input took ‖x − mean‖² as Σx² − n·mean², which cancels when the mean is large
    # against the spread: scales 1–7 % off (another support than on the dense copy), and a
    # constant column got a tiny non-zero scale and counted as a feature
    rng = np.random.default_rng(0)
    n = 200
    X = rng.standard_normal((n, 20))
    X[:, 3] = 1e5 + 1e-2 * rng.standard_normal(n)
    X[:, 4] = X[:, 3] + 1e-3 * rng.standard_normal(n)
    X[:, 5] = 3.3  # constant
    y = np.where(X[:, 3] - 1e5 + 3e-3 * rng.standard_normal(n) > 0, 1, -1)
    exact = np.linalg.norm(X - X.mean(axis=0), axis=0)
    # the same matrix with every entry stored twice, as halves (a non-canonical CSC)
    half = sp.coo_matrix(X / 2)
    rows, cols, vals = (np.r_[a, a] for a in (half.row, half.col, half.data))
    by_col = np.argsort(cols, kind="stable")
    indptr = np.r_[0, np.cumsum(np.bincount(cols, minlength=X.shape[1]))]
    doubled = sp.csc_matrix((vals[by_col], rows[by_col], indptr), X.shape)
    assert not doubled.has_canonical_format
    for A in (sp.csc_matrix(X), sp.csr_matrix(X), doubled):
        S = _Standardised(A)
        assert not S.valid[5]
        keep = np.arange(20) != 5
        np.testing.assert_allclose(S.scale[keep], exact[keep], rtol=1e-9)
    dense = GDM(n_features_per_step=3).fit(X, y)
    sparse = GDM(n_features_per_step=3).fit(sp.csr_matrix(X), y)
    assert dense.support_[0] == 3 and dense.affiliated_[3].tolist() == [4]
    assert sparse.support_.tolist() == dense.support_.tolist()
    assert sparse.affiliated_[3].tolist() == [4]


def test_correlations_and_groups_do_not_depend_on_a_shift_of_the_features():
    # ρ was (x_z − mean_z)ᵀ x_h / (scale_z scale_h): the rounding residue of Σ(x_z − mean_z)
    # times a large mean_h moved ρ = 0.78 anywhere between below 0.75 and 0.91 at an offset
    # of 1e7, so an affiliate was lost; x_h is now centred as well
    rng = np.random.default_rng(0)
    n = 2000
    Z = rng.standard_normal((n, 3))
    Q, _ = np.linalg.qr(Z - Z.mean(axis=0))
    X = np.sqrt(n) * np.column_stack([Q[:, 0], 0.78 * Q[:, 0] + 0.6258 * Q[:, 1], Q[:, 2]])
    X = np.column_stack([X, rng.standard_normal((n, 4))])
    y = np.where(X[:, 0] + X[:, 2] + 0.5 * rng.standard_normal(n) > 0, 1, -1)
    exact = np.corrcoef(X[:, 0], X[:, 1])[0, 1]
    for A in (X + 1e7, sp.csc_matrix(X + 1e7)):
        S = _Standardised(A)
        S.tau = 0.25
        assert abs(S.corr(0, np.array([1]))[0] - exact) < 1e-8  # sliced columns
        S.prefetch(np.array([0]))
        assert abs(S.corr(0, np.array([1]))[0] - exact) < 1e-8  # cached full pass
    plain = GDM(n_features_per_step=2).fit(X, y)
    assert plain.affiliated_[0].tolist() == [1]
    for A in (X + 1e7, sp.csr_matrix(X + 1e7)):
        shifted = GDM(n_features_per_step=2).fit(A, y)
        assert shifted.support_.tolist() == plain.support_.tolist()
        assert shifted.affiliated_[0].tolist() == [1]


def test_a_feature_of_small_values_is_not_taken_for_a_constant():
    # the constant-column test had an absolute floor (norm ≤ 1e-12 meant constant), so a
    # feature of values ~3e-14 was silently dropped; standardisation is scale-free on this side
    # too (a power-of-2 factor gives the same bits)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 8))
    y = np.where(X[:, 0] + 0.3 * X[:, 1] > 0, 1, -1)
    want = GDM().fit(X, y).selection()
    assert want[0]["feature"] == 0
    for e in (-45, -60, -400):
        small = X.copy()
        small[:, 0] *= 2.0**e
        assert GDM().fit(small, y).selection() == want
        assert GDM().fit(sp.csc_matrix(small), y).selection()[0]["feature"] == 0


def test_a_constant_column_stays_constant_over_many_instances():
    # the column mean, summed in order, is off by ~n·eps relative (2.6e-12 for 1/3 over
    # 200,000 rows): the constant column got a scale of 4e-10, became the unit vector along
    # the ones, and with 12 % positives it was chosen as the first support feature
    rng = np.random.default_rng(0)
    n = 200_000
    X = rng.standard_normal((n, 4))
    X[:, 3] = 1 / 3
    y = np.where(X[:, 0] + 0.5 * rng.standard_normal(n) > 1.3, 1, -1)
    for A in (X, sp.csc_matrix(X)):
        S = _Standardised(A)
        assert S.valid.tolist() == [True, True, True, False]
        exact = [math.fsum(X[:, j]) / n for j in range(4)]
        np.testing.assert_allclose(S.mean, exact, rtol=1e-15, atol=1e-15)
    model = GDM(n_features_per_step=2, max_iter=3).fit(X, y)
    assert 3 not in model.support_.tolist() and model.support_[0] == 0


# ------------------------------------------------------------------ solver convergence
def _hard_problem():
    # large C on few instances: the reduced problem needs hundreds of outer iterations at
    # full size (n = 30 took 500 iterations, 48 s, and stopped at a relative gap of 1.3e-4)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((12, 20))
    X[:, 1] = X[:, 0] + 0.1 * rng.standard_normal(12)
    y = np.where(X[:, 0] + 0.3 * rng.standard_normal(12) > 0, 1, -1)
    return X, y


def test_reduced_solver_says_when_it_stops_at_its_iteration_cap():
    Xs, y, subsets = _reduced_instance(1)
    full = solve_reduced(Xs, y, subsets, C=1e4, tol=1e-6)
    assert full.converged and full.gap <= 1e-6 * full.objective
    capped = solve_reduced(Xs, y, subsets, C=1e4, tol=1e-6, max_outer=2)
    assert capped.n_outer == 2 and not capped.converged
    assert capped.gap > 1e-6 * capped.objective
    # the reported gap is that of the returned point: still a valid certificate
    assert capped.objective - full.objective <= capped.gap * (1 + 1e-9)


def test_gdm_warns_when_the_reduced_problem_is_not_solved():
    # a low solver_max_iter provokes, in milliseconds, what large C does in minutes: silence
    # used to pass the inexact α, μ on
    from sklearn.exceptions import ConvergenceWarning

    from streamfs.algorithms.gdm_stream import GDMStream

    X, y = _hard_problem()
    with pytest.warns(ConvergenceWarning, match=r"reduced problem \(5\) did not converge") as rec:
        GDM(n_features_per_step=2, C=1e4, max_iter=4, tol=0, solver_max_iter=2).fit(X, y)
    msg = str(rec[0].message)
    assert "after 2 outer iterations" in msg and "solver_tol=1e-06" in msg
    assert "relative duality gap of" in msg
    assert "Raise solver_max_iter (now 2), or solver_tol" in msg
    # the streamed path fits the same GDM, and warns the same way
    stream = GDMStream(n_features=20, n_features_per_step=2, C=1e4, max_iter=4, tol=0,
                       solver_max_iter=2, refit_every=12, max_instances=12)
    with pytest.warns(ConvergenceWarning, match="Raise solver_max_iter"):
        stream.partial_fit(X, y)
    assert stream.n_refits_ == 1


def test_gdm_solver_max_iter_caps_the_solver_and_more_solves_it():
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    X, y = _hard_problem()
    with pytest.warns(ConvergenceWarning):
        capped = GDM(n_features_per_step=2, C=1e4, max_iter=4, tol=0, solver_max_iter=2).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        full = GDM(n_features_per_step=2, C=1e4, max_iter=4, tol=0).fit(X, y)
    # the default (500) reaches solver_tol where 2 outer iterations do not, and the fits
    # differ: the cap is what the fit ran with
    a, b = capped.objective_history_, full.objective_history_
    assert a.shape != b.shape or not np.allclose(a, b)
    assert GDM.from_state(capped.to_state()).solver_max_iter == 2


def test_gdm_state_without_solver_max_iter_restores_with_its_default(fitted):
    # states written before solver_max_iter existed ran with the solver's fixed cap of 500
    from streamfs.algorithms.gdm_stream import GDMStream

    state = unpackb(packb(fitted.to_state()))
    del state["params"]["solver_max_iter"]
    clone = GDM.from_state(state)
    assert clone.solver_max_iter == 500 and clone.selection() == fitted.selection()
    rng = np.random.default_rng(1)
    X, y = rng.standard_normal((30, 6)), np.arange(30) % 2
    stream = GDMStream(refit_every=20, solver_max_iter=7).partial_fit(X, y)
    old = stream.to_state()
    for key in ("params", "stream_params"):
        old.get(key, {}).pop("solver_max_iter", None)
    back = GDMStream.from_state(old)
    assert back.solver_max_iter == 500 and back.selection() == stream.selection()


def test_gdm_well_conditioned_fit_raises_no_convergence_warning():
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    X, y = _hard_problem()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        GDM(n_features_per_step=2).fit(X, y)
        GDM(n_features_per_step=2, C=1e4, max_iter=4, tol=0).fit(X, y)
        rng = np.random.default_rng(0)
        Z = rng.standard_normal((200, 30))
        GDM(n_features_per_step=2).fit(Z, np.where(Z[:, 0] + Z[:, 5] > 0, 1, -1))


# ------------------------------------------------------------------------ affiliated groups
def _round_blocks(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.choice([40, 80]))
    noise = float(rng.choice([0.2, 0.4]))
    cols = []
    for size in (3, 3, 3, 2, 2):
        z = rng.standard_normal(n)
        cols += [z + noise * rng.standard_normal(n) for _ in range(size)]
    X = np.column_stack(cols + [rng.standard_normal(n) for _ in range(10)])
    y = np.where(X[:, 0] - X[:, 3] + X[:, 6] + 0.8 * rng.standard_normal(n) > 0, 1, -1)
    return X, y


def test_affiliates_of_a_fit_with_zero_weight_round_choices():
    # affiliated_ as documented: support_ (non-zero weight) is never an affiliate; a feature
    # chosen in some round whose weight ended at 0 is no support feature, so it is listed if
    # it joined a support feature's CRM group, and its own group is not reported
    X, y = _round_blocks(20)  # rounds {0, 3}, {5, 6}, {3, 6}; μ of {5, 6} ends at 0
    model = GDM(n_features_per_step=2, max_iter=8, tol=0).fit(X, y)
    chosen = {int(j) for s in model.subsets_ for j in s}
    assert model.support_.tolist() == [3, 0, 6] and chosen == {0, 3, 5, 6}
    listed = {z: a.tolist() for z, a in model.affiliated_.items()}
    assert listed == {3: [4, 5], 0: [1, 2], 6: [7, 8]}
    # round 3's CRM put 5 in 3's group (|ρ| = 0.98): 5 is reported there, once
    assert abs(np.corrcoef(X[:, 3], X[:, 5])[0, 1]) >= 0.75
    X, y = _round_blocks(125)  # round 2 chose {3, 11}; its μ ends at 0, weight of 3 too
    model = GDM(n_features_per_step=2, max_iter=8, tol=0).fit(X, y)
    chosen = {int(j) for s in model.subsets_ for j in s}
    assert 3 in chosen and 3 not in model.support_.tolist()
    reported = set(model.support_.tolist()).union(*map(set, model.affiliated_.values()))
    assert min(abs(np.corrcoef(X[:, 3], X[:, h])[0, 1]) for h in (4, 5)) >= 0.75
    assert reported.isdisjoint({3, 4, 5})  # 3's group {4, 5} is not reported
    for model_z, hs in model.affiliated_.items():
        assert not set(hs.tolist()) & set(model.support_.tolist())


def test_text_is_refused_as_by_the_other_selectors():
    """float64 conversion parsed numeric text; scikit-learn's "numeric" check refuses it, as
    for SAOLA, K-OFSD and the OFS family. Objects that hold numbers are numbers."""
    from streamfs.algorithms.gdm_stream import GDMStream

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(30, 4)), np.arange(30) % 2
    for est in (GDM(), GDMStream()):
        with pytest.raises(ValueError, match="dtype='numeric' is not compatible with arrays of "
                                             "bytes/strings"):
            est.fit(X.astype(str), y)
    assert GDM().fit(X.astype(object), y).support_.tolist() == GDM().fit(X, y).support_.tolist()


def test_data_with_no_varying_feature_selects_nothing_and_says_so():
    """Every feature constant: the empty model is right, but it stopped as "no new subset"
    without a word, and predicted one class for every row."""
    X = np.tile([[1.0, -2.0, 5.0]], (40, 1))
    y = np.repeat([0, 1], 20)
    with pytest.warns(UserWarning, match="GDM selected nothing: every feature is constant"):
        model = GDM().fit(X, y)
    assert model.support_.size == 0 and model.stop_reason_ == "no feature varies"
    X[0, 1] = -1.0  # one varying feature: no warning, the usual stop
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = GDM().fit(X, y)
    assert model.stop_reason_ != "no feature varies" and model.support_.tolist() == [1]
