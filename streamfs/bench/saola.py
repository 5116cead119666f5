"""In-process throughput of SAOLA on synthetic feature streams (block-wise path).

Two workloads, generated block by block with a seed (only ``partial_fit`` is timed):

* ``bench_dense``: continuous data, N = 2,000 instances, 200,000 features: planted informative
  features (class signal plus noise), noisy redundant copies of them later in the stream, and
  pure noise everywhere else.
* ``bench_sparse``: binary text-like data shaped like news20 in the SAOLA paper (about 1.36M
  features, 10,000 instances, about 4.5M non-zeros): Zipf-distributed document frequencies, a
  small fraction of class-dependent terms, near-duplicate terms, CSC blocks.

The SAOLA paper reports 944 s for its MATLAB SAOLA on news20 (``PAPER_NEWS20_SECONDS``).

``bench_datasets`` times ``fit`` on the shared datasets (``$STREAMFS_DATASETS``; best of a
few repeats after a warm-up, so that neither compilation nor the first touch of the data is
counted); by default dexter, leukemia, lung, arcene and lym with Fisher's z.

Run ``python -m streamfs.bench.saola`` (``--quick`` for a small smoke run, ``--only datasets``
for the dataset table, ``--datasets a,b`` to choose them, ``--compat lofs`` for the authors'
arithmetic).

>>> r = bench_dense(n=300, p=2_000, block=500, n_informative=5, seed=1)
>>> r["features"], r["clusters_represented"], r["clusters_with_two_or_more"]
(2000, 5, 0)
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
import scipy.sparse as sp

from streamfs.algorithms.saola import SAOLA
from streamfs.argtypes import dataset_names, known_names, positive_int, run_module, whole_number

PAPER_NEWS20_SECONDS = 944.0
#: the paper's news20 time compares only with a stream about as wide (news20: about 1.36M);
#: --quick's 100,000 features gave a "speed-up" of 35,000
NEWS20_FEATURES = 1_000_000

__all__ = ["PAPER_NEWS20_SECONDS", "DATASETS", "bench_dense", "bench_sparse", "bench_datasets",
           "main"]

DATASETS = ("dexter", "leukemia", "lung", "arcene", "lym")


def _dense_blocks(
    n: int, p: int, block: int, n_informative: int, copies: int, seed: int
) -> tuple[np.ndarray, dict, Iterator[np.ndarray]]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    # informative features in the first half, their noisy copies anywhere after them
    info_pos = np.sort(rng.choice(p // 2, size=n_informative, replace=False))
    plan: dict[int, tuple[str, int, float]] = {}
    for k, pos in enumerate(info_pos):
        plan[int(pos)] = ("info", k, float(rng.uniform(0.4, 1.2)))
        for _ in range(copies):
            at = int(rng.integers(pos + 1, p))
            while at in plan:
                at = int(rng.integers(pos + 1, p))
            plan[at] = ("copy", k, float(rng.uniform(0.1, 0.5)))
    truth = {"informative": info_pos.tolist(),
             "copies": sorted(i for i, v in plan.items() if v[0] == "copy"),
             "cluster": {i: v[1] for i, v in plan.items()}}

    def gen() -> Iterator[np.ndarray]:
        base: dict[int, np.ndarray] = {}
        for lo in range(0, p, block):
            b = min(block, p - lo)
            X = rng.standard_normal((b, n)).T  # Fortran order: columns contiguous
            for j in range(b):
                item = plan.get(lo + j)
                if item is None:
                    continue
                kind, k, w = item
                if kind == "info":
                    X[:, j] += w * 2.0 * y
                    base[k] = X[:, j].copy()
                else:
                    X[:, j] = base[k] + w * X[:, j]
            yield X

    return y, truth, gen()


def bench_dense(
    n: int = 2_000,
    p: int = 200_000,
    block: int = 5_000,
    n_informative: int = 40,
    copies: int = 4,
    seed: int = 0,
    test: str = "fisher_z",
) -> dict[str, Any]:
    """Dense continuous stream with planted informative and redundant features."""
    y, truth, blocks = _dense_blocks(n, p, block, n_informative, copies, seed)
    sel = SAOLA(test=test) if test == "fisher_z" else SAOLA(test=test, n_bins=8)
    elapsed = 0.0
    t_all = time.perf_counter()
    first = True
    for X in blocks:
        t = time.perf_counter()
        sel.partial_fit(X, y if first else None)
        elapsed += time.perf_counter() - t
        first = False
    chosen = set(sel.selected_.tolist())
    informative = set(truth["informative"])
    copies_set = set(truth["copies"])
    per_cluster = np.bincount([truth["cluster"][f] for f in chosen if f in truth["cluster"]],
                              minlength=n_informative)
    return {
        "workload": "dense continuous",
        "test": test,
        "instances": n,
        "features": p,
        "block": block,
        "seconds": round(elapsed, 3),
        "seconds_incl_generation": round(time.perf_counter() - t_all, 3),
        "features_per_second": round(p / elapsed),
        "selected": len(chosen),
        "recovered_informative": len(chosen & informative),
        "selected_copies": len(chosen & copies_set),
        "selected_noise": len(chosen - informative - copies_set),
        # planted cluster = an informative feature and its noisy copies
        "clusters_represented": int(np.count_nonzero(per_cluster)),
        "clusters_with_two_or_more": int(np.count_nonzero(per_cluster > 1)),
        "passed_relevance": p - sel.n_irrelevant_,
        "redundant": sel.n_redundant_,
    }


def _sparse_blocks(
    n: int, p: int, nnz_target: int, block: int, seed: int, informative_rate: float,
    duplicate_rate: float,
) -> tuple[np.ndarray, Iterator[sp.csc_matrix]]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    pos_rows = np.flatnonzero(y == 1)
    mean_df = nnz_target / p
    # Zipf document frequencies (capped at n / 4), rescaled to the target mean per block
    a = 2.2

    def gen() -> Iterator[sp.csc_matrix]:
        for lo in range(0, p, block):
            b = min(block, p - lo)
            df = np.minimum(rng.zipf(a, b), n // 4).astype(np.float64)
            df = np.maximum(1, np.rint(df * (mean_df / df.mean()))).astype(np.int64)
            cols = np.repeat(np.arange(b), df)
            rows = rng.integers(0, n, len(cols))
            informative = rng.random(b) < informative_rate
            biased = informative[cols] & (rng.random(len(cols)) < 0.6)
            rows[biased] = pos_rows[rng.integers(0, len(pos_rows), int(biased.sum()))]
            # near-duplicate terms: copy an earlier column of the block, move ~10% of its rows
            dup = np.flatnonzero(rng.random(b) < duplicate_rate)
            dup = dup[dup > 0]
            extra_c, extra_r = [], []
            keep = np.ones(len(cols), dtype=bool)
            starts = np.concatenate([[0], np.cumsum(df)])
            for j in dup:
                src = int(rng.integers(0, j))
                src_rows = rows[starts[src]:starts[src + 1]].copy()
                move = rng.random(len(src_rows)) < 0.1
                src_rows[move] = rng.integers(0, n, int(move.sum()))
                keep[starts[j]:starts[j + 1]] = False
                extra_c.append(np.full(len(src_rows), j))
                extra_r.append(src_rows)
            if extra_c:
                cols = np.concatenate([cols[keep]] + extra_c)
                rows = np.concatenate([rows[keep]] + extra_r)
            key = np.unique(cols * n + rows)
            c, r = key // n, key % n
            indptr = np.searchsorted(c, np.arange(b + 1))
            yield sp.csc_matrix((np.ones(len(r)), r, indptr), shape=(n, b))

    return y, gen()


def bench_sparse(
    n: int = 10_000,
    p: int = 1_360_000,
    nnz: int = 4_500_000,
    block: int = 20_000,
    seed: int = 0,
    test: str = "fisher_z",
    informative_rate: float = 0.01,
    duplicate_rate: float = 0.005,
) -> dict[str, Any]:
    """Sparse binary text-like stream shaped like news20 (CSC blocks)."""
    y, blocks = _sparse_blocks(n, p, nnz, block, seed, informative_rate, duplicate_rate)
    sel = SAOLA(test=test)
    elapsed = 0.0
    total_nnz = 0
    t_all = time.perf_counter()
    first = True
    for X in blocks:
        total_nnz += X.nnz
        t = time.perf_counter()
        sel.partial_fit(X, y if first else None)
        elapsed += time.perf_counter() - t
        first = False
    return {
        "workload": "sparse binary (news20-shaped)",
        "test": test,
        "instances": n,
        "features": p,
        "nnz": int(total_nnz),
        "block": block,
        "seconds": round(elapsed, 3),
        "seconds_incl_generation": round(time.perf_counter() - t_all, 3),
        "features_per_second": round(p / elapsed),
        "paper_matlab_seconds_news20": PAPER_NEWS20_SECONDS,
        # against the paper's time on the real news20: only for a stream of its shape
        **({"speedup_vs_paper": round(PAPER_NEWS20_SECONDS / elapsed, 1)}
           if p >= NEWS20_FEATURES else {}),
        "selected": len(sel.selected_),
        "passed_relevance": p - sel.n_irrelevant_,
        "redundant": sel.n_redundant_,
    }


def bench_datasets(
    names: tuple[str, ...] | list[str] = DATASETS,
    test: str = "fisher_z",
    compat: str | None = None,
    repeats: int = 5,
) -> list[dict[str, Any]]:
    """Seconds of ``SAOLA(test, compat=compat).fit(X, y)`` per dataset (best of ``repeats``);
    datasets that are not available are reported with ``seconds: None``."""
    from streamfs.datasets import load

    out = []
    for name in names:
        try:
            X, y = load(name)
        except FileNotFoundError:
            out.append({"workload": f"dataset {name}", "test": test, "seconds": None})
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            SAOLA(test=test, compat=compat).fit(X, y)  # warm-up
            best = float("inf")
            for _ in range(repeats):
                t = time.perf_counter()
                sel = SAOLA(test=test, compat=compat).fit(X, y)
                best = min(best, time.perf_counter() - t)
        out.append({
            "workload": f"dataset {name}",
            "test": test,
            "compat": compat,
            "instances": int(X.shape[0]),
            "features": int(X.shape[1]),
            "seconds": round(best, 4),
            "features_per_second": round(X.shape[1] / best),
            "selected": len(sel.selected_),
            "passed_relevance": int(X.shape[1] - sel.n_irrelevant_),
        })
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m streamfs.bench.saola", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    parser.add_argument("--only", choices=["dense", "sparse", "datasets"], default=None)
    parser.add_argument("--datasets", default=",".join(DATASETS),
                        help="comma-separated shared datasets for the dataset table")
    parser.add_argument("--compat", default=None, choices=["lofs"],
                        help="compat mode for the dataset table")
    parser.add_argument("--repeats", type=positive_int, default=5,
                        help="repeats per dataset (the best is reported)")
    parser.add_argument("--tests", default="fisher_z,mi",
                        help="comma-separated tests to run (fisher_z, mi); mi runs on the "
                        "sparse workload only with --only sparse, on the datasets only with "
                        "--only datasets")
    parser.add_argument("--seed", type=whole_number, default=0,
                        help="seed of the synthetic streams (default 0)")
    args = parser.parse_args(argv)
    tests = known_names(parser, "--tests", args.tests.split(","), ("fisher_z", "mi"), "test")
    names = (dataset_names(parser, "--datasets", args.datasets.split(","))
             if args.only in (None, "datasets") else [])
    # warm the compiled kernels so that compilation is not timed
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for t in tests:
            bench_dense(n=50, p=200, block=100, n_informative=2, test=t)
            bench_sparse(n=200, p=500, nnz=2_000, block=250, test=t)
    runs = []
    for t in tests:
        if args.only in (None, "dense"):
            kw = dict(n=500, p=20_000) if args.quick else {}
            runs.append(bench_dense(seed=args.seed, test=t, **kw))
            print(json.dumps(runs[-1]), flush=True)
        if args.only in (None, "sparse") and (t == "fisher_z" or args.only == "sparse"):
            # mi on the news20-shaped stream did not finish in 5 minutes (a symmetrical
            # uncertainty per pair over 1.36M features): run only when asked alone
            kw = dict(n=2_000, p=100_000, nnz=330_000) if args.quick else {}
            runs.append(bench_sparse(seed=args.seed, test=t, **kw))
            print(json.dumps(runs[-1]), flush=True)
    if args.only in (None, "datasets"):
        for t in tests:
            if t != "fisher_z" and args.only != "datasets":
                continue  # the targets are for Fisher's z; ask for mi with --only datasets
            rows = bench_datasets(names, test=t, compat=args.compat, repeats=args.repeats)
            for r in rows:
                print(json.dumps(r), flush=True)
            done = [r["seconds"] for r in rows if r["seconds"] is not None]
            runs.extend(r for r in rows if r["seconds"] is not None)
            print(f"datasets ({t}): {sum(done):.3f} s in total for {len(done)} datasets",
                  flush=True)
    print()
    print(f"{'workload':32s} {'test':8s} {'features':>9s} {'seconds':>8s} {'feat/s':>9s} "
          f"{'selected':>8s}")
    for r in runs:
        print(f"{r['workload']:32s} {r['test']:8s} {r['features']:9d} {r['seconds']:8.3f} "
              f"{r['features_per_second']:9d} {r['selected']:8d}")
    for r in runs:
        if "paper_matlab_seconds_news20" in r and not args.quick:
            print(f"news20-shaped ({r['test']}): {r['seconds']:.1f} s here vs "
                  f"{PAPER_NEWS20_SECONDS:.0f} s for the paper's MATLAB SAOLA on news20")
    print("(timings are in-process and noisy: other jobs share this 2-core machine)")


if __name__ == "__main__":
    run_module(main)
