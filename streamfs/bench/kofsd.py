"""K-OFSD selections and throughput on the microarray sets and a large synthetic stream.

Run ``python -m streamfs.bench.kofsd`` (``--help`` for options). Timings include everything
after the data is loaded (label encoding, all kernels) but not numba compilation, which is
triggered on a tiny stream first; each microarray timing is the best of ``--repeats`` runs
(default 3; the synthetic stream runs once). Multi-class sets are made binary as one class
versus the rest, as the paper does; the minority is the smallest class (ties: the first in sorted order),
encoded as 1 and the rest as 0 so that ``compat="zhou"`` (label 0 = large class) applies.
Each dataset gets two rows: ``mode`` None (the clean semantics) and ``zhou`` (the authors'
implementation, ``compat="zhou"``).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from streamfs.algorithms.kofsd import KOFSD
from streamfs.argtypes import dataset_names, positive_int, run_module

MICROARRAY = (
    "colon",
    "leukemia",
    "leukemia_golub38_multtest",
    "lung",
    "lym",
    "srbct",
    "glioma",
    "dlbcl_gems5469",
    "dlbcl_shipp7129",
    "car_substitute_11tumors",
)


def _warm_up() -> None:
    rng = np.random.default_rng(0)
    y = np.r_[np.zeros(20, int), np.ones(5, int)]
    X = rng.normal(size=(25, 4))
    X[:, 1] += 3 * y
    for compat in (None, "zhou"):
        KOFSD(k=3, compat=compat).fit(X, y)


def minority_vs_rest(y: np.ndarray) -> tuple[np.ndarray, object]:
    """Binary 0/1 labels (1 = the smallest class) and the minority label."""
    classes, counts = np.unique(y, return_counts=True)
    minority = classes[int(np.argmin(counts))]
    return (y == minority).astype(np.int64), minority


def run(X: np.ndarray, y: np.ndarray, repeats: int = 1, **params) -> dict:
    """Fit K-OFSD on the whole stream ``X`` and time it (best of ``repeats``)."""
    seconds = cpu_seconds = float("inf")
    for _ in range(max(1, repeats)):
        start, cpu_start = time.perf_counter(), time.process_time()
        sel = KOFSD(**params).fit(X, y)
        seconds = min(seconds, time.perf_counter() - start)
        cpu_seconds = min(cpu_seconds, time.process_time() - cpu_start)
    return {
        "n_selected": int(sel.selected_.size),
        "selected": sel.selected_.tolist(),
        "dependency": sel.dependency_,
        "n_irrelevant": sel.n_irrelevant_,
        "n_redundant": sel.n_redundant_,
        "seconds": seconds,
        "cpu_seconds": cpu_seconds,  # wall time is inflated when other jobs share the cores
        "features_per_s": X.shape[1] / seconds,
        "features_per_cpu_s": X.shape[1] / cpu_seconds,
    }


def bench_dataset(name: str, compat: str | None = None, repeats: int = 3, **params) -> dict:
    """One microarray set, minority class versus the rest."""
    from streamfs.datasets import load

    X, y = load(name)
    y01, minority = minority_vs_rest(y)
    _warm_up()
    out = {
        "dataset": name,
        "shape": X.shape,
        "minority": minority.item() if hasattr(minority, "item") else minority,
        "n_minority": int(y01.sum()),
        "compat": compat,
    }
    out.update(run(np.asarray(X, dtype=np.float64), y01, repeats, compat=compat, **params))
    return out


def synthetic(n: int = 2000, p: int = 20000, minority: float = 0.05, n_info: int = 20,
              seed: int = 0) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Gaussian noise with ``n_info`` features shifting a ``minority`` class by 2 sd."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < minority).astype(np.int64)
    X = rng.normal(size=(n, p))
    X[:, :: max(1, p // n_info)] += 2.0 * y[:, None]
    return X, y


def bench_synthetic(n: int = 2000, p: int = 20000, compat: str | None = None, **params) -> dict:
    """Throughput on the synthetic stream."""
    X, y = synthetic(n, p)
    _warm_up()
    out = {"dataset": f"synthetic N={n} p={p}", "shape": X.shape, "minority": 1,
           "n_minority": int(y.sum()), "compat": compat}  # fmt: skip
    out.update(run(X, y, compat=compat, **params))
    return out


def _row(r: dict) -> str:
    n, p = r["shape"]
    idx = r["selected"]
    shown = ",".join(map(str, idx[:12])) + (f",...(+{len(idx) - 12})" if len(idx) > 12 else "")
    return (
        f"{r['dataset']:<26} {n:>4}x{p:<6} {str(r['minority']):<14} {r['n_minority']:>4} "
        f"{str(r['compat']):<5} {r['n_selected']:>4} {r['seconds']:>8.2f} {r['cpu_seconds']:>7.2f} "
        f"{r['features_per_s']:>9.0f} {r['features_per_cpu_s']:>9.0f}  [{shown}]"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m streamfs.bench.kofsd", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", nargs="*", default=list(MICROARRAY),
                        help="datasets of $STREAMFS_DATASETS (default: the microarray sets)")
    parser.add_argument("--synthetic-p", type=positive_int, default=20000,
                        help="features of the synthetic stream (default 20000)")
    parser.add_argument("--synthetic-n", type=positive_int, default=2000,
                        help="instances of the synthetic stream (default 2000; more than k)")
    parser.add_argument("--no-synthetic", action="store_true",
                        help="leave out the synthetic stream")
    parser.add_argument("--repeats", type=positive_int, default=3,
                        help="best of N (microarray sets)")
    args = parser.parse_args(argv)
    if args.datasets:
        dataset_names(parser, "--datasets", args.datasets)
    if args.synthetic_n < 10:  # K-OFSD's k = 7 neighbours of each instance, two classes
        parser.error(f"--synthetic-n: at least 10 instances, got {args.synthetic_n}")
    print(
        f"{'dataset':<26} {'N x p':<11} {'minority':<14} {'#min':>4} {'mode':<5} {'#sel':>4} "
        f"{'wall s':>8} {'cpu s':>7} {'feat/s':>9} {'f/cpu-s':>9}  selected (0-based)"
    )
    for name in args.datasets:
        for compat in (None, "zhou"):
            print(_row(bench_dataset(name, compat, args.repeats)), flush=True)
    if not args.no_synthetic:
        print(_row(bench_synthetic(args.synthetic_n, args.synthetic_p)), flush=True)


if __name__ == "__main__":
    run_module(main)
