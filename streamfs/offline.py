"""Run an algorithm in-process on a whole dataset with the worker's own code path."""

from __future__ import annotations

from typing import Any

from streamfs.producers.blocks import feature_stream_messages, instance_stream_messages
from streamfs.algorithms import registry
from streamfs.codec import decode, encode
from streamfs.worker.processor import StreamProcessor


def run_offline(algorithm: str, X: Any, y: Any, params: dict | None = None, *,
                stream: str = "offline", block_bytes: int | None = None, groups=None,
                feature_names: list[str] | None = None, naming: dict | None = None) -> dict:
    """The final result message the worker would publish for this data, computed in-process.

    It pushes the very messages a producer would send through :class:`StreamProcessor` over an
    in-memory store, so offline and worker results agree by construction. ``feature_names``
    and ``naming`` (see :func:`streamfs.producers.blocks.open_fields`) name the features.
    """
    if algorithm == "gdm":
        return _gdm(X, y, params or {}, stream, feature_names)
    spec = registry.get(algorithm)
    kwargs: dict = {"feature_names": feature_names, "naming": naming}
    if block_bytes:
        kwargs["block_bytes"] = block_bytes
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


def _gdm(X: Any, y: Any, params: dict, stream: str, names: list[str] | None) -> dict:
    """GDM is a batch method: fit once, shaped like the worker's final result."""
    from streamfs.algorithms.gdm import GDM

    try:
        model = GDM(**params)
    except TypeError as exc:
        raise ValueError(f"bad parameters for 'gdm': {exc}") from None
    model.fit(X, y)

    def name(f: int) -> str:
        return names[f] if names is not None else f"x{f}"

    selection = [{"feature": item["feature"], "name": name(item["feature"]),
                  **{k: v for k, v in item.items() if k not in ("feature", "affiliated")},
                  **({"affiliated": [[a, d, name(a)] for a, d in item["affiliated"]]}
                     if "affiliated" in item else {})}
                 for item in model.selection()]
    return {"kind": "result", "stream": stream, "algorithm": "gdm", "params": params,
            "version": 1, "seq": None, "final": True, "selection": selection,
            "counters": {"n_features_seen": int(X.shape[1]), "n_iter": int(model.n_iter_)}}
