"""GDM studies: the synthetic group-recovery study (§4.1), USPS digits pictures, dorothea timing.

Run ``python -m streamfs.bench.gdm synthetic|digits|dorothea`` (``--help`` for options).

Synthetic data (our reading of §4.1; the paper does not give every constant): ``n`` training and
``n_test`` test instances, ``m`` features. 200 predictive groups: 30 *correlated* groups of
``group_size`` features, each member a noisy copy ``z_g + σ e`` of a latent ``z_g ~ N(0, 1)``
(σ = ``copy_noise``; pairwise ρ ≈ 1/(1+σ²) = 0.94 at σ = 0.25), and 170 *single* features
``z_g`` itself; every other feature is N(0, 1) noise. Labels ``y = sign(Σ_g v_g z_g + ε)`` with
``|v_g| ~ U[0.5, 1.5]``, random signs and ``ε ~ N(0, label_noise²)``.

Methods compared at the same number ``k`` of selected features (``k`` = GDM's support size):
GDM, ranking by ``|corr(f_j, y)|``, and L1-regularised logistic regression (scikit-learn,
liblinear; ``C`` bisected until exactly ``k`` non-zero weights, or the ``k`` largest ``|w|``).
Accuracy = a linear SVM (``LinearSVC``, standardised features) trained on the selected columns
of the training set and scored on the test set; for GDM also on support ∪ affiliated features.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from streamfs.algorithms.gdm import GDM, redundancy_rate
from streamfs.argtypes import (dataset_names, positive_int, positive_number, run_module,
                               whole_number)

#: where the digits' picture goes by default: out/ of the working directory (beside the
#: package it was lib/python3.x/out/ in an installed copy)
OUT_DIR = Path("out")


# ---------------------------------------------------------------------------------- data
#: the predictive features of :func:`make_synthetic`'s defaults (30 groups of 5, 170 single)
MIN_SYNTHETIC_FEATURES = 30 * 5 + 170


def make_synthetic(
    n: int = 2048,
    n_test: int = 2048,
    m: int = 10_000,
    n_correlated_groups: int = 30,
    group_size: int = 5,
    n_single: int = 170,
    copy_noise: float = 0.25,
    label_noise: float = 0.5,
    seed: int = 0,
) -> dict[str, Any]:
    """Synthetic grouped data; returns ``X, y, X_test, y_test, groups`` (list of index arrays).

    The first ``n_correlated_groups`` groups are the correlated ones. Feature positions are
    shuffled so that indices carry no information.

    >>> d = make_synthetic(n=50, n_test=10, m=300, n_correlated_groups=3, n_single=5)
    >>> d["X"].shape, len(d["groups"]), [g.size for g in d["groups"]][:4]
    ((50, 300), 8, [5, 5, 5, 1])
    """
    rng = np.random.default_rng(seed)
    n_groups = n_correlated_groups + n_single
    n_pred = n_correlated_groups * group_size + n_single
    if n_pred > m:
        raise ValueError("more predictive features than m")
    perm = rng.permutation(m)
    groups, start = [], 0
    for g in range(n_groups):
        size = group_size if g < n_correlated_groups else 1
        groups.append(np.sort(perm[start : start + size]))
        start += size
    v = rng.uniform(0.5, 1.5, n_groups) * rng.choice([-1.0, 1.0], n_groups)

    def draw(k: int) -> tuple[np.ndarray, np.ndarray]:
        X = rng.standard_normal((k, m))
        Z = rng.standard_normal((k, n_groups))
        for g, idx in enumerate(groups):
            if idx.size == 1:
                X[:, idx[0]] = Z[:, g]
            else:
                X[:, idx] = Z[:, [g]] + copy_noise * rng.standard_normal((k, idx.size))
        y = np.where(Z @ v + label_noise * rng.standard_normal(k) > 0, 1, -1)
        return X, y

    X, y = draw(n)
    X_test, y_test = draw(n_test)
    return {"X": X, "y": y, "X_test": X_test, "y_test": y_test, "groups": groups, "v": v}


# ---------------------------------------------------------------------------- evaluation
def svm_accuracy(X, y, X_test, y_test, features: np.ndarray) -> float:
    """Test accuracy of a linear SVM trained on the given columns (standardised)."""
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import LinearSVC

    features = np.asarray(features, dtype=np.int64)
    if features.size == 0:
        return float(max(np.mean(y_test == v) for v in np.unique(y)))
    clf = make_pipeline(StandardScaler(), LinearSVC(C=1.0, max_iter=20_000))
    clf.fit(X[:, features], y)
    return float(np.mean(clf.predict(X_test[:, features]) == y_test))


def corr_ranking(X: np.ndarray, y: np.ndarray, k: int) -> np.ndarray:
    """The ``k`` features with the largest ``|corr(f_j, y)|``."""
    Xc = X - X.mean(axis=0)
    yc = y - y.mean()
    r = np.abs(Xc.T @ yc) / np.maximum(np.linalg.norm(Xc, axis=0) * np.linalg.norm(yc), 1e-300)
    return np.argsort(-r, kind="stable")[:k]


def l1_logreg(X: np.ndarray, y: np.ndarray, k: int, n_bisect: int = 14) -> np.ndarray:
    """``k`` features from L1 logistic regression: bisect ``C`` (log scale) for ``k`` non-zeros."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    import sklearn

    Xs = StandardScaler().fit_transform(X)
    major, minor = (int(v) for v in sklearn.__version__.split(".")[:2])
    # scikit-learn ≥ 1.8 deprecates penalty= in favour of l1_ratio (earlier versions ignore it)
    l1 = {"l1_ratio": 1.0} if (major, minor) >= (1, 8) else {"penalty": "l1"}
    lo, hi = 1e-4, 10.0
    best = None
    for _ in range(n_bisect):
        C = np.sqrt(lo * hi)
        w = LogisticRegression(solver="liblinear", C=C, tol=1e-4, **l1).fit(Xs, y).coef_
        w = w.ravel()
        nnz = int(np.count_nonzero(w))
        if nnz >= k:
            best, hi = w, C
            if nnz == k:
                break
        else:
            lo = C
    if best is None:  # never reached k: use the densest fit
        best = w
    order = np.argsort(-np.abs(best), kind="stable")
    return order[: min(k, int(np.count_nonzero(best)))]


def redundant_pairs(X: np.ndarray, features: np.ndarray, tau: float = 0.25) -> int:
    """Number of selected pairs with ``|ρ| ≥ 1 − τ`` (pairs GDM's constraint forbids in a δ)."""
    F = np.asarray(features, dtype=np.int64)
    if F.size < 2:
        return 0
    Xc = X[:, F] - X[:, F].mean(axis=0)
    Xc /= np.maximum(np.linalg.norm(Xc, axis=0), 1e-300)
    return int(np.sum(np.abs(np.triu(Xc.T @ Xc, 1)) >= 1.0 - tau))


def group_recovery(selected: np.ndarray, groups: list[np.ndarray], m: int,
                   n_correlated: int) -> dict[str, float]:
    """Group-level recall/precision of a selected feature set."""
    owner = np.full(m, -1)
    for g, idx in enumerate(groups):
        owner[idx] = g
    own = owner[np.asarray(selected, dtype=np.int64)]
    hit = np.unique(own[own >= 0])
    k = max(len(selected), 1)
    return {
        "groups_hit": float(hit.size / len(groups)),
        "correlated_groups_hit": float(np.sum(hit < n_correlated) / n_correlated),
        "single_hit": float(np.sum(hit >= n_correlated) / (len(groups) - n_correlated)),
        "precision": float(np.sum(own >= 0) / k),
        "duplicates": int(np.sum(own >= 0) - hit.size),  # extra picks from an already-hit group
    }


def affiliate_recovery(model: GDM, groups: list[np.ndarray], n_correlated: int,
                       m: int) -> dict[str, float]:
    """For correlated groups hit by the support: share of their members found as support or
    affiliates of those support features; and share of affiliates in their support's group."""
    owner = np.full(m, -1)
    for g, idx in enumerate(groups):
        owner[idx] = g
    found, total, aff_ok, aff_all = 0, 0, 0, 0
    for z, aff in model.affiliated_.items():
        aff_all += aff.size
        aff_ok += int(np.sum(owner[aff] == owner[z])) if owner[z] >= 0 else 0
    for g in range(n_correlated):
        sup = [int(z) for z in model.support_ if owner[z] == g]
        if not sup:
            continue
        covered = set(sup).union(*(model.affiliated_[z].tolist() for z in sup))
        found += len(covered & set(groups[g].tolist()))
        total += groups[g].size
    return {
        "member_recall_in_hit_groups": float(found / total) if total else float("nan"),
        "affiliate_precision": float(aff_ok / aff_all) if aff_all else float("nan"),
        "n_affiliated": int(aff_all),
    }


def synthetic_study(n_features_per_step: int = 100, max_iter: int = 10, seed: int = 0,
                    **data_kw: Any) -> dict[str, Any]:
    """Run the §4.1-style study; returns a dict of results (also printed by the CLI)."""
    d = make_synthetic(seed=seed, **data_kw)
    X, y, Xt, yt, groups = d["X"], d["y"], d["X_test"], d["y_test"], d["groups"]
    m = X.shape[1]
    n_corr = sum(g.size > 1 for g in groups)
    t0 = time.perf_counter()
    model = GDM(n_features_per_step=n_features_per_step, max_iter=max_iter).fit(X, y)
    t_gdm = time.perf_counter() - t0
    sup = model.support_
    k = sup.size
    both = np.flatnonzero(model.get_support(affiliated=True))  # ascending, as before
    rows: dict[str, dict[str, Any]] = {}
    rows["GDM"] = {
        "k": int(k),
        "seconds": t_gdm,
        "acc_svm": svm_accuracy(X, y, Xt, yt, sup),
        "acc_svm_support+affiliated": svm_accuracy(X, y, Xt, yt, both),
        "acc_own_classifier": float(np.mean(model.predict(Xt) == yt)),
        "RED": redundancy_rate(X, sup),
        "redundant_pairs": redundant_pairs(X, sup),
        **group_recovery(sup, groups, m, n_corr),
        **affiliate_recovery(model, groups, n_corr, m),
        "n_iter": model.n_iter_,
        "stop": model.stop_reason_,
    }
    for name, baseline in (("|corr| ranking", corr_ranking), ("L1 logistic", l1_logreg)):
        t0 = time.perf_counter()
        sel = baseline(X, y, k)
        rows[name] = {"k": int(sel.size), "seconds": time.perf_counter() - t0,
                      "acc_svm": svm_accuracy(X, y, Xt, yt, sel),
                      "RED": redundancy_rate(X, sel),
                      "redundant_pairs": redundant_pairs(X, sel),
                      **group_recovery(sel, groups, m, n_corr)}
    return {"shape": list(X.shape), "n_test": int(yt.size), "B": n_features_per_step,
            "objective_history": model.objective_history_.tolist(),
            "notes": {"B": "features added to the working set per round",
                      "objective_history": "objective of the reduced problem (5) after each "
                      "round: it rises as rounds add constraints (the primal falls)"},
            "results": rows}


# -------------------------------------------------------------------------------- digits
def digits_study(dataset: str = "usps_test2007", pair: tuple[int, int] = (3, 8),
                 n_features_per_step: int = 10, max_iter: int = 10, tau: float = 0.25,
                 out: Path | None = None) -> dict[str, Any]:
    """GDM on two digit classes; saves a PNG of support and affiliated pixels.

    ``usps_test2007`` stores digit ``d`` as label ``d + 1`` (checked on the class means) and
    images row-major 16×16; ``mnist_subset4000`` stores ``d`` as ``d``, 28×28 row-major.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap

    from streamfs.datasets import load

    X, y = load(dataset)
    offset = 1 if dataset.startswith("usps") else 0
    a, b = pair[0] + offset, pair[1] + offset
    keep = (y == a) | (y == b)
    X, y = np.asarray(X[keep], dtype=np.float64), np.where(y[keep] == a, pair[0], pair[1])
    side = int(round(np.sqrt(X.shape[1])))
    t0 = time.perf_counter()
    model = GDM(n_features_per_step=n_features_per_step, max_iter=max_iter, tau=tau).fit(X, y)
    secs = time.perf_counter() - t0

    out = Path(out) if out is not None else OUT_DIR / f"gdm_{dataset}_{pair[0]}v{pair[1]}.png"
    out.parent.mkdir(parents=True, exist_ok=True)
    mean_a = X[y == pair[0]].mean(axis=0).reshape(side, side)
    mean_b = X[y == pair[1]].mean(axis=0).reshape(side, side)
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.6))
    # (1) background: class-mean difference; support pixels coloured by the sign of their weight
    ax = axes[0]
    ax.imshow(mean_a - mean_b, cmap="gray")
    rr, cc = np.divmod(model.support_, side)
    wpos = model.coef_[model.support_] > 0
    ax.scatter(cc[wpos], rr[wpos], s=60, c="tab:red", marker="s", label=f"w>0 (→ {pair[1]})")
    ax.scatter(cc[~wpos], rr[~wpos], s=60, c="tab:blue", marker="s", label=f"w<0 (→ {pair[0]})")
    ax.set_title(f"{len(model.support_)} support pixels on mean({pair[0]}) − mean({pair[1]})")
    ax.legend(loc="lower left", fontsize=7)
    # (2) affiliated groups: each group's pixels share a colour; support pixel outlined
    ax = axes[1]
    lab = np.full(X.shape[1], -1.0)
    groups = [(z, aff) for z, aff in model.affiliated_.items() if aff.size]
    for gi, (z, aff) in enumerate(groups):
        lab[aff] = gi
        lab[z] = gi
    palette = [i for i in range(20) if i not in (14, 15)]  # tab20 without its greys
    cmap = ListedColormap(plt.cm.tab20(palette))
    img = np.ma.masked_less(lab.reshape(side, side), 0)
    ax.imshow(0.5 * (mean_a + mean_b), cmap="gray", alpha=0.5)
    ax.imshow(img % len(palette), cmap=cmap, vmin=0, vmax=len(palette) - 1,
              interpolation="nearest")
    for gi, (z, aff) in enumerate(groups):
        r, c = divmod(int(z), side)
        ax.scatter([c], [r], s=80, facecolors="none", edgecolors="black", linewidths=1.5)
    ax.set_title(f"{len(groups)} affiliated groups ({sum(a.size for _, a in groups)} pixels);\n"
                 "support pixel circled, colour = group", fontsize=9)
    # (3) all selected pixels: support vs affiliated
    ax = axes[2]
    kind = np.zeros(X.shape[1])
    kind[model.get_support(affiliated=True)] = 1
    kind[model.support_] = 2
    ax.imshow(kind.reshape(side, side), cmap=ListedColormap(["black", "gold", "red"]),
              vmin=0, vmax=2, interpolation="nearest")
    ax.set_title("red: support, gold: affiliated")
    for ax in axes:
        ax.set_xticks([])
        ax.set_yticks([])
    fig.suptitle(f"GDM on {dataset}, digits {pair[0]} vs {pair[1]} (n={len(y)}, "
                 f"B={n_features_per_step}, τ={tau}, {model.n_iter_} rounds)", y=0.99)
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return {"png": str(out), "n": int(len(y)), "seconds": secs, "n_iter": model.n_iter_,
            "n_support": int(model.support_.size),
            "n_affiliated": int(sum(a.size for a in model.affiliated_.values())),
            "train_acc": float(np.mean(model.predict(X) == y)),
            "RED_support": redundancy_rate(X, model.support_),
            "RED_support+affiliated": redundancy_rate(
                X, model.get_support(indices=True, affiliated=True))}


# ------------------------------------------------------------------------------ dorothea
def dorothea_timing(n_features_per_step: int = 50, max_iter: int = 10) -> dict[str, Any]:
    """Fit GDM on dorothea (800 × 100,000, converted to sparse CSC) and time it."""
    from streamfs.datasets import load

    X, y = load("dorothea")
    t0 = time.perf_counter()
    Xs = sp.csc_matrix(X, dtype=np.float64)
    t_conv = time.perf_counter() - t0
    t0 = time.perf_counter()
    model = GDM(n_features_per_step=n_features_per_step, max_iter=max_iter).fit(Xs, y)
    t_fit = time.perf_counter() - t0
    return {"shape": list(X.shape), "nnz": int(Xs.nnz), "convert_seconds": t_conv,
            "fit_seconds": t_fit, "B": n_features_per_step, "n_iter": model.n_iter_,
            "stop": model.stop_reason_, "n_support": int(model.support_.size),
            "n_affiliated": int(sum(a.size for a in model.affiliated_.values())),
            "n_correlations": int(model.n_corr_),
            "train_acc": float(np.mean(model.predict(Xs) == y))}


def _print_table(res: dict[str, Any]) -> None:
    rows = res["results"]
    cols = ["k", "acc_svm", "acc_svm_support+affiliated", "acc_own_classifier", "RED",
            "redundant_pairs",
            "groups_hit", "correlated_groups_hit", "single_hit", "precision", "duplicates",
            "member_recall_in_hit_groups", "affiliate_precision", "n_affiliated", "seconds"]
    print("| method | " + " | ".join(cols) + " |")
    print("|---" * (len(cols) + 1) + "|")
    for name, r in rows.items():
        cells = []
        for c in cols:
            v = r.get(c, "")
            cells.append(f"{v:.3f}" if isinstance(v, float) else str(v))
        print(f"| {name} | " + " | ".join(cells) + " |")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m streamfs.bench.gdm", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    rounds = "cutting-plane rounds at most (T)"
    per_round = "features added to the working set per round (B)"
    s = sub.add_parser("synthetic", help="the paper's synthetic study (Sec. 4.1)")
    s.add_argument("--B", type=positive_int, default=100, help=per_round)
    s.add_argument("--max-iter", type=positive_int, default=10, help=rounds)
    s.add_argument("--seed", type=whole_number, default=0, help="seed of the synthetic data")
    s.add_argument("--m", type=positive_int, default=10_000,
                   help="number of features (at least 320: the predictive ones)")
    s.add_argument("--n", type=positive_int, default=2048,
                   help="training instances (the test set has 2,048 whatever this is)")
    dg = sub.add_parser("digits", help="support and affiliated pixels of two digits, a picture")
    dg.add_argument("--dataset", default="usps_test2007", help="a dataset of 16x16 digits")
    dg.add_argument("--pair", type=int, nargs=2, default=(3, 8), help="the two digits")
    dg.add_argument("--B", type=positive_int, default=10, help=per_round)
    dg.add_argument("--max-iter", type=positive_int, default=10, help=rounds)
    dg.add_argument("--tau", type=positive_number, default=0.25,
                    help="GDM's correlation threshold tau, in (0, 1)")
    dg.add_argument("--out", default=None,
                    help=f"where to write the picture (default: {OUT_DIR}/gdm_<dataset>_"
                    "<a>v<b>.png)")
    do = sub.add_parser("dorothea", help="fit time on dorothea (100,000 sparse features)")
    do.add_argument("--B", type=positive_int, default=50, help=per_round)
    do.add_argument("--max-iter", type=positive_int, default=10, help=rounds)
    a = p.parse_args(argv)
    if a.cmd == "synthetic" and a.m < MIN_SYNTHETIC_FEATURES:
        p.error(f"--m: at least {MIN_SYNTHETIC_FEATURES} features (30 correlated groups of 5 "
                f"and 170 single predictive features), got {a.m}")
    if a.cmd == "synthetic" and a.n < 20:  # both classes in the training part
        p.error(f"--n: at least 20 training instances, got {a.n}")
    if a.cmd == "digits":
        dataset_names(p, "--dataset", [a.dataset])
        if not a.tau < 1:
            p.error(f"--tau: must be below 1, got {a.tau}")
        if not all(0 <= d <= 9 for d in a.pair) or a.pair[0] == a.pair[1]:
            p.error(f"--pair: two different digits from 0 to 9, got {a.pair[0]} {a.pair[1]}")
        where = Path(a.out).parent if a.out is not None else OUT_DIR
        try:  # now, not after the fit: a traceback then
            where.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            p.error(f"--out: cannot make {where}: {exc.strerror or exc}")
    if a.cmd == "synthetic":
        res = synthetic_study(a.B, a.max_iter, a.seed, m=a.m, n=a.n)
        _print_table(res)
        print(json.dumps({k: v for k, v in res.items() if k != "results"}))
    elif a.cmd == "digits":
        print(json.dumps(digits_study(a.dataset, tuple(a.pair), a.B, a.max_iter, a.tau,
                                      out=a.out), indent=1))
    else:
        print(json.dumps(dorothea_timing(a.B, a.max_iter), indent=1))


if __name__ == "__main__":
    run_module(main)
