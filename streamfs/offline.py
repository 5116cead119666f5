"""Run an algorithm in-process on a whole dataset with the worker's own code path."""

from __future__ import annotations

from typing import Any

from streamfs.producers.blocks import feature_stream_messages, instance_stream_messages
from streamfs.algorithms import registry
from streamfs.codec import decode, encode
from streamfs.worker.processor import StreamProcessor


def run_offline(algorithm: str, X: Any, y: Any, params: dict | None = None, *,
                stream: str = "offline", block_bytes: int | None = None, groups=None) -> dict:
    """The final result message the worker would publish for this data, computed in-process.

    It pushes the very messages a producer would send through :class:`StreamProcessor` over an
    in-memory store, so offline and worker results agree by construction.
    """
    if algorithm == "gdm":
        return _gdm(X, y, params or {}, stream)
    spec = registry.get(algorithm)
    kwargs = {"block_bytes": block_bytes} if block_bytes else {}
    if spec.kind == "features":
        messages = feature_stream_messages(stream, X, y, algorithm, params, groups=groups, **kwargs)
    else:
        messages = instance_stream_messages(stream, X, y, algorithm, params, **kwargs)
    processor = StreamProcessor(spec.kind, {})
    final = None
    for message in messages:
        plan = processor.handle(stream, encode(message))
        if plan.dead_letter is not None:
            raise ValueError(decode(plan.dead_letter)["reason"])
        for key, value in plan.writes:
            if value is None:
                processor.store.pop(key, None)
            else:
                processor.store[key] = value
        if plan.result is not None:
            final = decode(plan.result)
    return final


def _gdm(X: Any, y: Any, params: dict, stream: str) -> dict:
    """GDM is a batch method: fit once, shaped like the worker's final result."""
    from streamfs.algorithms.gdm import GDM

    try:
        model = GDM(**params)
    except TypeError as exc:
        raise ValueError(f"bad parameters for 'gdm': {exc}") from None
    model.fit(X, y)
    return {"kind": "result", "stream": stream, "algorithm": "gdm", "params": params,
            "version": 1, "seq": None, "final": True, "selection": model.selection(),
            "counters": {"n_features_seen": int(X.shape[1]), "n_iter": int(model.n_iter_)}}
