"""A seeded workload of the instance-stream algorithms the mixed workload leaves out (GDM on a
sliding window and the OFS paper's baselines), with varied parameters, for the crash and
rebalance tests."""

from __future__ import annotations

import numpy as np

from streamfs.algorithms import registry
from streamfs.producers import instance_stream_messages

from .workload import StreamCase

#: (algorithm, params, n instances, d); GDM's windows are crossed (the window slides), and one
#: GDM stream is long enough that its window spans complete 1 MiB chunk records
INSTANCE_ALGORITHMS = [
    ("gdm", {"refit_every": 200, "max_instances": 450, "n_features_per_step": 4}, 1500, 40),
    ("pe-trun", {"n_features_to_select": 6}, 1500, 40),
    ("rand", {"n_features_to_select": 8}, 1500, 40),  # no random_state: the worker seeds it
    ("ofs-rand", {"n_features_to_select": 6, "random_state": 11, "normalize": "standardize"},
     1500, 40),
    ("pe-rand", {"n_features_to_select": 6, "normalize": "standardize"}, 1500, 40),
    ("gdm", {"refit_every": 350, "max_instances": 2500, "n_features_per_step": 5, "tau": 0.4},
     9000, 30),
    ("pe-trun", {"n_features_to_select": 0.2, "eta": 0.5, "normalize": "standardize"}, 1500, 40),
    ("rand", {"n_features_to_select": 5, "redraw": True, "random_state": 3}, 1500, 40),
    ("ofs-rand", {"n_features_to_select": 0.15, "eta": 0.1, "normalize": "standardize"},
     1500, 40),
    ("pe-rand", {"n_features_to_select": 7, "random_state": 5, "normalize": "standardize"},
     1500, 40),
    ("gdm", {"refit_every": 120, "max_instances": 300}, 1300, 25),
    ("rand", {"n_features_to_select": 4, "redraw": True, "normalize": "standardize"}, 1500, 40),
]


def instance_data(seed: int, n: int, d: int):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    w = np.zeros(d)
    w[rng.choice(d, 6, replace=False)] = rng.normal(size=6)
    # the relevant features drift half-way: a sliding window selects other ones later
    w2 = np.zeros(d)
    w2[rng.choice(d, 6, replace=False)] = rng.normal(size=6)
    score = np.where(np.arange(n) < n // 2, X @ w, X @ w2)
    y = np.where(score + 0.3 * rng.normal(size=n) > 0, 1, -1)
    return X, y


def make_instance_case(i: int, algorithm: str, params: dict, n: int, d: int,
                       prefix: str = "i", seed: int = 0) -> StreamCase:
    stream = f"{prefix}{i:02d}-{algorithm}"
    X, y = instance_data(1000 * seed + i, n, d)
    case = StreamCase(stream, algorithm, params, X, y)
    case.messages = list(instance_stream_messages(stream, X, y, algorithm, params,
                                                  block_bytes=d * 8 * 100))
    return case


def instance_workload(n_streams: int, prefix: str = "i", seed: int = 0) -> list[StreamCase]:
    return [make_instance_case(i, *INSTANCE_ALGORITHMS[i % len(INSTANCE_ALGORITHMS)],
                               prefix=prefix, seed=seed) for i in range(n_streams)]


def offline_features(case: StreamCase, params: dict) -> list[int]:
    """The offline API's final selection with ``params`` (the worker's effective ones: a
    random learner opened without a ``random_state`` is seeded from its stream id)."""
    algo = registry.get(case.algorithm).build(params)
    algo.partial_fit(case.X, case.y)
    if hasattr(algo, "finish"):
        algo.finish()
    return [s["feature"] for s in algo.selection()]
