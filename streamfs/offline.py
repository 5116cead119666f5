"""Run an algorithm in-process on a whole dataset with the worker's own code path."""

from __future__ import annotations

import warnings
from typing import Any

from streamfs.producers.blocks import feature_stream_messages, instance_stream_messages
from streamfs.producers.objects import from_objects
from streamfs.algorithms import registry
from streamfs.codec import decode, encode
from streamfs.worker.processor import StreamProcessor


def offline_params(algorithm: str, params: dict | None, n_rows: int) -> dict:
    """The parameters an offline run uses: for ``gdm``, a window of the whole data set
    (``max_instances``) and one fit at the end (``refit_every``), unless given, so that the
    result is batch GDM's on the data.

    >>> offline_params("gdm", {"tau": 0.5}, 200)
    {'tau': 0.5, 'max_instances': 200, 'refit_every': 200}
    """
    params = dict(params or {})
    if algorithm == "gdm":
        params.setdefault("max_instances", max(int(n_rows), 1))
        params.setdefault("refit_every", max(int(n_rows), 1))
    return params


def run_offline(algorithm: str, X: Any, y: Any, params: dict | None = None, *,
                stream: str = "offline", block_bytes: int | None = None, groups=None,
                feature_names: list[str] | None = None, naming: dict | None = None,
                shuffle_seed: int | None = None) -> dict:
    """The final result message the worker would publish for this data, computed in-process.

    It pushes the very messages a producer would send through :class:`StreamProcessor` over an
    in-memory store, so offline and worker results agree by construction (``gdm`` fits once,
    at the end, on the whole data: see :func:`offline_params`). ``X`` and ``y`` are taken
    as :func:`streamfs.producers.objects.from_objects` takes them. ``feature_names``
    and ``naming`` (see :func:`streamfs.producers.blocks.open_fields`) name the features;
    a data frame's columns do unless ``feature_names`` is given. ``shuffle_seed``: the
    columns in the seeded order a producer given it sends (feature streams; the selection
    depends on the order).
    """
    spec = registry.get(algorithm)
    # the data as produce_features / produce_instances take it (lists, frames with nullable,
    # categorical or mixed columns, a one-column label frame), so that all three agree
    X, y, names = from_objects(X, y)
    if feature_names is None:
        feature_names = names
    params = offline_params(algorithm, params, X.shape[0])
    kwargs: dict = {"feature_names": feature_names, "naming": naming}
    if block_bytes:
        kwargs["block_bytes"] = block_bytes
    if shuffle_seed is not None:
        if spec.kind != "features":
            raise ValueError("shuffle_seed applies to feature streams only")
        kwargs["shuffle_seed"] = shuffle_seed
    # the producer's checks warn of what the algorithm then warns of again as it runs: each
    # warning is given once, to the caller, in the order first given
    given: list = []
    try:
        with warnings.catch_warnings(record=True) as given:
            warnings.simplefilter("always")
            return _final_result(spec.kind, stream, X, y, algorithm, params, groups, kwargs)
    finally:
        seen: set = set()
        for w in given:
            if (w.category, str(w.message)) not in seen:
                seen.add((w.category, str(w.message)))
                warnings.warn(w.message, stacklevel=2)


def _final_result(kind: str, stream: str, X: Any, y: Any, algorithm: str, params: dict,
                  groups: Any, kwargs: dict) -> dict:
    if kind == "features":
        messages = feature_stream_messages(stream, X, y, algorithm, params, groups=groups, **kwargs)
    else:
        messages = instance_stream_messages(stream, X, y, algorithm, params, **kwargs)
    processor = StreamProcessor(kind, {}, log_dead_letters=False)  # raised below instead
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
