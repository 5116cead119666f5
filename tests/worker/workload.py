"""A seeded mixed workload of feature and instance streams, with the offline expectations."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from streamfs.algorithms import registry
from streamfs.producers import feature_stream_messages, instance_stream_messages

ALGORITHMS = [
    ("saola", {}),
    ("saola-max", {}),
    ("saola", {"max_features": 3}),  # top-k
    ("group-saola", {}),
    ("kofsd", {}),
    ("ofs", {"n_features_to_select": 5}),
    ("ofs-partial", {"n_features_to_select": 5, "random_state": 7}),
]


@dataclass
class StreamCase:
    stream: str
    algorithm: str
    params: dict
    X: Any
    y: Any
    groups: list | None = None
    messages: list[dict] = field(default_factory=list)

    @property
    def kind(self) -> str:
        return registry.get(self.algorithm).kind

    def expected_features(self) -> list[int]:
        """The offline API's final selection (same order)."""
        algo = registry.get(self.algorithm).build(self.params)
        if self.kind == "instances":
            algo.partial_fit(self.X, self.y)
        elif self.groups is not None:
            algo.fit(self.X, self.y, groups=self.groups)
        else:
            algo.fit(self.X, self.y)
        return [s["feature"] for s in algo.selection()]


def feature_data(seed: int, n: int = 150, p: int = 48):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.3).astype(np.int64)
    X = rng.normal(size=(n, p))
    X[:, ::4] += 1.2 * y[:, None] * rng.uniform(0.5, 1.5, size=len(range(0, p, 4)))
    X[:, 1::8] = X[:, ::8] + 0.3 * rng.normal(size=(n, len(range(1, p, 8))))  # noisy copies
    return X, y


def instance_data(seed: int, n: int = 1500, d: int = 40):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    w = np.zeros(d)
    w[rng.choice(d, 6, replace=False)] = rng.normal(size=6)
    y = np.where(X @ w + 0.3 * rng.normal(size=n) > 0, 1, -1)
    return X, y


def make_case(i: int, algorithm: str, params: dict, prefix: str = "s") -> StreamCase:
    stream = f"{prefix}{i:02d}-{algorithm}"
    kind = registry.get(algorithm).kind
    if kind == "features":
        X, y = feature_data(i)
        groups = None
        if algorithm == "group-saola":
            cuts = np.sort(np.random.default_rng(i).choice(np.arange(1, X.shape[1]), 7, replace=False))
            groups = [g for g in np.split(np.arange(X.shape[1]), cuts)]
        case = StreamCase(stream, algorithm, params, X, y, groups)
        case.messages = list(feature_stream_messages(stream, X, y, algorithm, params, groups=groups,
                                                     block_bytes=X.shape[0] * 8 * 6))
    else:
        X, y = instance_data(i)
        case = StreamCase(stream, algorithm, params, X, y)
        case.messages = list(instance_stream_messages(stream, X, y, algorithm, params,
                                                      block_bytes=X.shape[1] * 8 * 100))
    return case


def mixed_workload(n_streams: int, prefix: str = "s") -> list[StreamCase]:
    return [make_case(i, *ALGORITHMS[i % len(ALGORITHMS)], prefix=prefix) for i in range(n_streams)]


def interleave(cases: list[StreamCase]) -> list[dict]:
    """Round-robin over the streams, each stream's messages in order."""
    out, i = [], 0
    while any(i < len(c.messages) for c in cases):
        out.extend(c.messages[i] for c in cases if i < len(c.messages))
        i += 1
    return out


def kafka_partition(key: bytes, partitions: int) -> int:
    """The partition Kafka's default key hash gives ``key`` (murmur2 as in the Java client's
    ``Utils.murmur2``, then ``& 0x7fffffff`` modulo the count): librdkafka's
    ``murmur2_random``, which the publisher uses."""
    m, h = 0x5BD1E995, (0x9747B28C ^ len(key)) & 0xFFFFFFFF
    whole = len(key) & ~3
    for i in range(0, whole, 4):
        k = (int.from_bytes(key[i:i + 4], "little") * m) & 0xFFFFFFFF
        k = ((k ^ (k >> 24)) * m) & 0xFFFFFFFF
        h = ((h * m) & 0xFFFFFFFF) ^ k
    tail = key[whole:]
    if tail:
        h ^= int.from_bytes(tail, "little")
        h = (h * m) & 0xFFFFFFFF
    h = ((h ^ (h >> 13)) * m) & 0xFFFFFFFF
    h ^= h >> 15
    return (h & 0x7FFFFFFF) % partitions
