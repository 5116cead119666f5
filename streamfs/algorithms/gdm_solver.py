"""Solver of GDM's reduced problem (5): ``min_{α∈A} max_t g_t(α)`` over the active feature subsets.

For an active set of feature subsets ``δ_1..δ_T`` (index arrays into the columns of a dense,
standardised block ``Xs``) and labels ``y ∈ {±1}^n``::

    g_t(α) = ½ ‖Xs[:, δ_t]ᵀ (α ⊙ y)‖² + ‖α‖² / (2C),    α ∈ A = {α ≥ 0, Σ α_i = 1}.

We solve the equivalent saddle problem ``max_{μ∈Δ_T} h(μ)``, ``h(μ) = min_{α∈A} Σ_t μ_t g_t(α)``
(the multiple-kernel form of FGM: kernel ``Σ_t μ_t K_t + I/C``). ``h`` is concave and, because
the inner problem is strongly convex (``I/C``), differentiable with ``∇h(μ) = g(α*(μ))``
(Danskin). The outer maximisation is spectral projected gradient ascent (Barzilai-Borwein steps,
non-monotone line search); the inner one is FISTA with adaptive restart over the simplex
(exact Euclidean projection).

Both are stopped by certificates, not iteration counts:

* inner: the Frank-Wolfe gap ``∇fᵀα − min_i ∇f_i`` bounds ``f(α) − min f``;
* outer: ``max_t g_t(α) − Σ_t μ_t g_t(α) + FW gap`` bounds the distance of both the primal value
  ``max_t g_t(α)`` and the dual value ``h(μ)`` to the optimum of (5). At zero gap the KKT
  conditions of ``min_{α∈A,θ} θ s.t. θ ≥ g_t(α)`` hold with multipliers ``μ``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def project_simplex(v: np.ndarray) -> np.ndarray:
    """Euclidean projection of ``v`` onto ``{x ≥ 0, Σ x = 1}`` (sort-based, exact).

    >>> project_simplex(np.array([0.5, 2.0, -1.0]))
    array([0., 1., 0.])
    >>> float(project_simplex(np.array([0.2, 0.3, 0.1])).sum())
    1.0
    """
    v = np.asarray(v, dtype=np.float64)
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - 1.0
    k = np.arange(1, v.size + 1)
    cond = u - css / k > 0
    r = k[cond][-1]
    theta = css[cond][-1] / r
    return np.maximum(v - theta, 0.0)


def _fw_gap(grad: np.ndarray, alpha: np.ndarray) -> float:
    # f(α) − min_A f ≤ ∇f(α)ᵀ(α − e_i*) for a convex f over the simplex
    return float(grad @ alpha - grad.min())


def solve_simplex_qp(
    Z: np.ndarray,
    inv_C: float,
    alpha0: np.ndarray,
    lipschitz: float,
    tol: float = 1e-9,
    max_iter: int = 20000,
) -> tuple[np.ndarray, float, float, int]:
    """Minimise ``f(α) = ½‖Zᵀα‖² + (inv_C/2)‖α‖²`` over the simplex.

    ``lipschitz`` must bound ``λ_max(Z Zᵀ) + inv_C``. Stops when the Frank-Wolfe gap is at most
    ``tol * f(α)``. Returns ``(α, f(α), gap, iterations)``.

    >>> Z = np.array([[1.0], [-1.0]])
    >>> a, f, gap, _ = solve_simplex_qp(Z, 1.0, np.array([1.0, 0.0]), 3.0)
    >>> np.round(a, 6).tolist(), round(f, 6)
    ([0.5, 0.5], 0.25)
    """
    step = 1.0 / lipschitz
    x = project_simplex(alpha0)
    yk = x.copy()
    t = 1.0
    f = gap = np.inf
    it = 0
    for it in range(1, max_iter + 1):
        grad_y = Z @ (Z.T @ yk) + inv_C * yk
        x_new = project_simplex(yk - step * grad_y)
        # gradient-based adaptive restart (O'Donoghue & Candès): keeps FISTA monotone-ish
        if (yk - x_new) @ (x_new - x) > 0:
            t = 1.0
            yk = x_new.copy()
        else:
            t_new = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
            yk = x_new + ((t - 1.0) / t_new) * (x_new - x)
            t = t_new
        x = x_new
        if it % 10 == 0 or it == max_iter:
            u = Z.T @ x
            grad = Z @ u + inv_C * x
            f = 0.5 * float(u @ u) + 0.5 * inv_C * float(x @ x)
            gap = _fw_gap(grad, x)
            if gap <= tol * f:
                break
    return x, f, gap, it


@dataclass
class ReducedSolution:
    """Result of :func:`solve_reduced` (all values for the standardised block)."""

    alpha: np.ndarray  # (n,) dual variables in the simplex
    mu: np.ndarray  # (T,) multipliers of the active constraints, in the simplex
    g: np.ndarray  # (T,) g_t(alpha)
    objective: float  # max_t g_t(alpha): primal value of (5)
    gap: float  # certificate: objective − optimum ≤ gap
    n_outer: int
    converged: bool  # gap ≤ tol · objective; False: stopped by ``max_outer`` short of it


def constraint_values(
    Xs: np.ndarray, y: np.ndarray, subsets: list[np.ndarray], alpha: np.ndarray, C: float
) -> np.ndarray:
    """``g_t(α)`` for every active subset ``t``.

    >>> Xs = np.eye(2); y = np.array([1.0, -1.0])
    >>> constraint_values(Xs, y, [np.array([0]), np.array([0, 1])], np.array([.5, .5]), 1.0)
    array([0.375, 0.5  ])
    """
    v = Xs.T @ (alpha * y)
    reg = float(alpha @ alpha) / (2.0 * C)
    return np.array([0.5 * float(v[s] @ v[s]) + reg for s in subsets])


def _weights(subsets: list[np.ndarray], mu: np.ndarray, n_cols: int) -> np.ndarray:
    # d_j = Σ_{t: j ∈ δ_t} μ_t: the combined kernel is Σ_t μ_t K_t = Y Xs diag(d) Xsᵀ Y
    d = np.zeros(n_cols)
    for m_t, s in zip(mu, subsets):
        d[s] += m_t
    return d


def subset_lipschitz(Xs: np.ndarray, subsets: list[np.ndarray]) -> np.ndarray:
    """``λ_max(K_t) = ‖Xs[:, δ_t]‖₂²`` per subset.

    >>> subset_lipschitz(np.eye(3), [np.array([0, 2])]).tolist()
    [1.0]
    """
    return np.array(
        [np.linalg.eigvalsh(Xs[:, s].T @ Xs[:, s])[-1] if s.size else 0.0 for s in subsets]
    )


def solve_reduced(
    Xs: np.ndarray,
    y: np.ndarray,
    subsets: list[np.ndarray],
    C: float = 1.0,
    alpha0: np.ndarray | None = None,
    mu0: np.ndarray | None = None,
    tol: float = 1e-6,
    max_outer: int = 500,
    lam: np.ndarray | None = None,
) -> ReducedSolution:
    """Solve ``min_{α∈A} max_t g_t(α)`` (problem (5)) to relative gap ``tol``.

    ``Xs``: dense (n, k) standardised columns of the union of the active subsets; ``subsets``:
    index arrays into those columns; ``y``: labels in {±1}; ``lam``: optional cached
    ``λ_max(Xs[:, δ_t]ᵀ Xs[:, δ_t])`` per subset (see :func:`subset_lipschitz`).

    >>> rng = np.random.default_rng(0)
    >>> Xs = rng.standard_normal((30, 4)); y = np.sign(Xs[:, 0] + 0.1)
    >>> sol = solve_reduced(Xs, y, [np.array([0, 1]), np.array([2, 3])])
    >>> bool(sol.gap <= 1e-6 * sol.objective), round(float(sol.mu.sum()), 12), sol.converged
    (True, 1.0, True)

    ``max_outer`` caps the outer iterations; a solution stopped there short of ``tol`` has
    ``converged`` False (its ``gap`` is still a valid certificate).
    """
    n = Xs.shape[0]
    T = len(subsets)
    inv_C = 1.0 / C
    Xy = Xs * y[:, None]
    # λ_max(K_t) per subset: Σ_t μ_t λ_t + 1/C bounds the inner Lipschitz constant for every μ
    lam = subset_lipschitz(Xs, subsets) if lam is None else np.asarray(lam, dtype=np.float64)
    alpha = np.full(n, 1.0 / n) if alpha0 is None else project_simplex(alpha0)
    if mu0 is None:
        mu = np.full(T, 1.0 / T)
    else:
        mu = project_simplex(np.asarray(mu0, dtype=np.float64))
    inner_tol = min(1e-3 * tol, 1e-9)

    def inner(mu_: np.ndarray, a0: np.ndarray) -> tuple[np.ndarray, float, float, np.ndarray]:
        d = _weights(subsets, mu_, Xs.shape[1])
        keep = d > 0
        Z = Xy[:, keep] * np.sqrt(d[keep])[None, :]
        L = 1.0001 * float(mu_ @ lam) + inv_C
        a, f, gap, _ = solve_simplex_qp(Z, inv_C, a0, L, tol=inner_tol)
        return a, f, gap, constraint_values(Xs, y, subsets, a, C)

    # Spectral (Barzilai-Borwein) projected gradient ascent on the concave, smooth h, with a
    # non-monotone Armijo safeguard (Birgin-Martínez-Raydan). Gradient steps resolve μ far
    # better than value-based schemes: near the optimum h is flat to rounding, g is not.
    alpha, f, fw, g = inner(mu, alpha)
    recent = [f - fw]
    step = 1.0 / (T * max(float(np.ptp(g)), 1e-300))
    gap = np.inf
    n_outer = 0
    for n_outer in range(1, max_outer + 1):
        gap = float(g.max() - mu @ g) + fw
        if T == 1 or gap <= tol * g.max():
            break
        direction = project_simplex(mu + step * g) - mu
        t = 1.0
        while True:
            mu_new = mu + t * direction
            a_new, f_new, fw_new, g_new = inner(mu_new, alpha)
            if f_new + fw_new >= min(recent) + 1e-4 * t * float(g @ direction) or t < 1e-12:
                break
            t *= 0.5
        s_, r_ = mu_new - mu, g_new - g
        curv = -float(s_ @ r_)  # ≥ 0 for concave h
        step = float(s_ @ s_) / curv if curv > 0 else 2.0 * step
        mu, alpha, f, fw, g = mu_new, a_new, f_new, fw_new, g_new
        recent = (recent + [f - fw])[-10:]
    else:
        # out of outer iterations: the gap above was that of the point before the last step
        gap = float(g.max() - mu @ g) + fw
    return ReducedSolution(alpha, mu, g, float(g.max()), gap, n_outer,
                           bool(gap <= tol * g.max()))
