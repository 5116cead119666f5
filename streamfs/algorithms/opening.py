"""The checks a stream's ``open`` must pass, in one place: ``streamfs produce`` and
``streamfs select`` run them before anything is published or computed, and the worker runs
them again on every ``open`` it receives (other producers may skip the first line of defence).

>>> import numpy as np
>>> spec, algo, params = check_open("features", "saola", {"alpha": 0.05}, y=np.array([0, 1, 1, 0]))
>>> type(algo).__name__, params
('SAOLA', {'alpha': 0.05})
>>> check_open("instances", "saola", {})
Traceback (most recent call last):
...
ValueError: algorithm 'saola' consumes feature streams, not instance streams
>>> check_open("instances", "ofs", {"n_features": 10}, n_features=30)
Traceback (most recent call last):
...
ValueError: n_features=10 but the instances have d = 30 features: a stream's d is its data's (leave n_features out)
>>> check_values("features", algo, np.array([[1.0, np.nan], [2.0, 3.0], [0.0, 1.0]]))
Traceback (most recent call last):
...
ValueError: X contains NaN or infinite values in columns [1]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from streamfs.algorithms import registry
from streamfs.algorithms.measures.columns import column_abs_max, value_problem

_PLURAL = {"features": "feature streams", "instances": "instance streams"}

#: joins a stream id to the parts of its state keys, so no id may contain it
STATE_KEY_SEP = "\x1f"
#: the longest stream id, in characters (at most 4,000 bytes of UTF-8): the id is the key and
#: part of the value of each of its messages, of its results and of its state records
MAX_STREAM_ID_CHARS = 1000


def check_stream_id(stream: Any) -> str:
    """``stream`` if the worker takes it as a stream id: a non-empty string of at most
    :data:`MAX_STREAM_ID_CHARS` characters without the ``\\x1f`` character; otherwise
    :class:`ValueError` saying why.

    >>> check_stream_id("")
    Traceback (most recent call last):
    ...
    ValueError: the stream id is empty
    >>> check_stream_id("s" * 1001)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: the stream id is 1001 characters long ('sss...'...), over the limit of 1000: ...
    """
    if not isinstance(stream, str):
        raise ValueError(f"the stream id must be a string, got {type(stream).__name__}")
    if not stream:
        raise ValueError("the stream id is empty")
    if len(stream) > MAX_STREAM_ID_CHARS:  # its start only: the messages below quote it whole
        raise ValueError(f"the stream id is {len(stream)} characters long ({stream[:20]!r}...), "
                         f"over the limit of {MAX_STREAM_ID_CHARS}: choose a shorter id")
    if STATE_KEY_SEP in stream:
        raise ValueError("the stream id must not contain the \\x1f character")
    try:
        stream.encode("utf-8")  # the record key
    except UnicodeEncodeError as exc:
        raise ValueError(f"the stream id {stream!r} is not valid Unicode text (a lone surrogate "
                         f"at position {exc.start}, e.g. bytes that are not UTF-8): it travels "
                         f"as the UTF-8 record key") from None
    return stream


def check_kind(kind: str, algorithm: Any) -> registry.AlgorithmSpec:
    """The spec of ``algorithm``, or ``ValueError`` when it is no algorithm's name or its
    algorithm consumes the other ``kind`` of stream (said before what that kind's ``open``
    lacks: an OFS ``open`` sent as a feature stream was told it lacks the class vector).

    >>> check_kind("features", "ofs")
    Traceback (most recent call last):
    ...
    ValueError: algorithm 'ofs' consumes instance streams, not feature streams
    """
    if not isinstance(algorithm, str):
        raise ValueError(f"'algorithm' must be a name, got {algorithm!r}")
    spec = registry.get(algorithm)
    if spec.kind != kind:
        raise ValueError(f"algorithm {algorithm!r} consumes {_PLURAL[spec.kind]}, "
                         f"not {_PLURAL.get(kind, kind)}")
    return spec


def check_open(kind: str, algorithm: Any, params: Any, *, n_features: int | None = None,
               y: Any = None, seed: int | None = None, buffer_cap: int | None = None
               ) -> tuple[registry.AlgorithmSpec, Any, dict]:
    """``(spec, algorithm object, effective params)`` or ``ValueError`` with one clear line.

    Checks the algorithm's name and stream kind, its parameters' names, types and ranges (the
    algorithm's own ``_validate_params``) and, given ``y``, whether the labels suit it (two
    classes at least; exactly two for binary learners) and whether the algorithm can run on
    ``len(y)`` instances (K-OFSD: more than ``k``, and distances that fit its
    ``max_buffer_bytes``; SAOLA's Fisher z: more than 3). ``n_features`` is passed to the
    instance-stream learners; ``seed`` becomes ``random_state`` where the algorithm draws
    random numbers and none was given. ``buffer_cap`` (a worker's STREAMFS_MAX_BUFFER_BYTES):
    a ``max_buffer_bytes`` over it is refused, and where none is given and the algorithm's
    default is over it, the cap becomes the stream's ``max_buffer_bytes`` (its effective
    params say so), so that an operator's lower cap bounds every stream.
    """
    spec = check_kind(kind, algorithm)
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise ValueError(f"'params' must be a map of parameter names to values, got {params!r}")
    params = dict(params)
    allowed = spec.allowed_params()
    if "n_features" in allowed and kind == "instances" and n_features is not None:
        given = params.get("n_features")
        if given is not None and (isinstance(given, bool) or given != n_features):
            # a user's n_features was silently replaced by the data's d, while the estimator
            # itself refuses the mismatch: refused here the same way
            raise ValueError(f"n_features={given!r} but the instances have d = {n_features} "
                             f"features: a stream's d is its data's (leave n_features out)")
        params["n_features"] = n_features
    if "random_state" in allowed and params.get("random_state") is None and seed is not None:
        params["random_state"] = seed
    algo = spec.build(params)
    if buffer_cap is not None and "max_buffer_bytes" in allowed:
        if "max_buffer_bytes" in params:
            check_buffer_cap(params, buffer_cap)
        elif algo.max_buffer_bytes > buffer_cap:
            params["max_buffer_bytes"] = int(buffer_cap)
            try:
                algo = spec.build(params)
            except ValueError as exc:
                raise _cap_said(exc, buffer_cap) from None
    if y is not None:
        check_open_data(spec, algo, y, buffer_cap=buffer_cap)
    return spec, algo, params


def _cap_said(exc: ValueError, cap: int | None) -> ValueError:
    """``exc`` saying the worker's cap where it asks for a larger ``max_buffer_bytes`` (a
    stream that sets none has the cap as its value, which the user did not write)."""
    if cap is None or "max_buffer_bytes" not in str(exc):
        return exc
    return type(exc)(f"{exc} (this worker's cap on max_buffer_bytes, STREAMFS_MAX_BUFFER_BYTES, "
                     f"is {int(cap)} bytes)")


def check_buffer_cap(params: Any, cap: int | None) -> None:
    """``ValueError`` when ``params`` ask for a ``max_buffer_bytes`` over ``cap``, the most a
    worker lets an ``open`` ask for (STREAMFS_MAX_BUFFER_BYTES); a value that is not an
    integer is left to the algorithm's own check.

    >>> check_buffer_cap({"max_buffer_bytes": 2048}, 1024)
    Traceback (most recent call last):
    ...
    ValueError: max_buffer_bytes=2048 exceeds this worker's cap of 1024 bytes (STREAMFS_MAX_BUFFER_BYTES)
    """
    asked = params.get("max_buffer_bytes") if isinstance(params, dict) else None
    if cap is None or not isinstance(asked, (int, np.integer)) or isinstance(asked, bool):
        return
    if asked > cap:
        raise ValueError(f"max_buffer_bytes={asked} exceeds this worker's cap of {cap} bytes "
                         f"(STREAMFS_MAX_BUFFER_BYTES)")


def check_open_data(spec: registry.AlgorithmSpec, algo: Any, y: Any, *,
                    buffer_cap: int | None = None) -> None:
    """The part of :func:`check_open` that depends on the data: ``ValueError`` when the labels
    ``y`` do not suit ``algo`` or it cannot run on ``len(y)`` instances (a caller that names
    the data's source in the message calls it apart); its message gives the worker's
    ``buffer_cap`` where it asks for a larger ``max_buffer_bytes``."""
    spec.check_labels(y)
    if hasattr(algo, "_check_n_instances"):  # parameters and memory that depend on N
        try:
            algo._check_n_instances(len(y))
        except ValueError as exc:
            raise _cap_said(exc, buffer_cap) from None
    if hasattr(algo, "_check_target"):  # labels the algorithm cannot compute with
        algo._check_target(y)


def open_advice(algo: Any, y: Any = None, X: Any = None, names: Any = None) -> list[str]:
    """The warnings ``algo`` gives when a stream with the labels ``y`` and the data ``X``
    (an instance stream's first rows; ``names``: its feature names) starts: advice on the
    data or the parameters, not a refusal (SAOLA's Fisher z on more than two classes, a
    parameter the setting does not use, unit-norm scaling where a few columns dominate the
    norm), for a caller that checks a stream before it runs: the algorithm warns at its first
    block, which runs in the worker, not where the stream is published.

    >>> from streamfs.algorithms.registry import get
    >>> open_advice(get("saola").build({}), [0, 1, 2, 1])  # doctest: +ELLIPSIS
    ["SAOLA(test='fisher_z') correlates the features with the class as a number ..."]
    >>> open_advice(get("saola").build({}), [0, 1, 1, 0]), open_advice(get("kofsd").build({}),
    ...                                                                  [0, 1, 2])
    ([], [])
    >>> print(*open_advice(get("ofs").build({}), X=[[2000.0, 0.1, 0.2], [900.0, 0.3, 0.1]]))
    ... # doctest: +ELLIPSIS
    OFS(normalize=True) scales each instance to unit L2 norm, and column 0 reaches over 1,000 ...
    """
    found = []
    if y is not None and (advise := getattr(algo, "_label_advice", None)) is not None:
        found.append(advise(y))
    if y is not None and (advise := getattr(algo, "_params_advice", None)) is not None:
        found.append(advise())  # a feature stream's (y at its open): once a stream
    if X is not None and (advise := getattr(algo, "_data_advice", None)) is not None:
        found.append(advise(X, names))
    if X is not None and (advise := getattr(algo, "_budget_advice", None)) is not None:
        found.append(advise(int(np.shape(X)[1])))
    return [a for a in found if a]


def check_stored_column(n_instances: int, record_limit: int) -> None:
    """``ValueError`` when a feature stream of ``n_instances`` rows cannot run under the record
    limit: the worker stores each kept column (8 bytes a value) as one record.

    >>> check_stored_column(1_100_000, 8 * 1024 * 1024)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: N = 1100000 instances: a stored column (8800000 bytes of values and up to 4096 ...
    """
    if n_instances * 8 + 4096 > record_limit:
        raise ValueError(
            f"N = {n_instances} instances: a stored column ({n_instances * 8} bytes of values "
            f"and up to 4096 of envelope) would exceed the record limit of {record_limit} "
            f"bytes; raise "
            f"STREAMFS_MAX_MESSAGE_BYTES (and the topics' max.message.bytes)")


def check_values(kind: str, algo: Any, X: Any, *, first_row: int = 0,
                 names: Any = None) -> None:
    """``ValueError`` with one clear line when the worker would refuse the values of ``X``:
    a whole feature stream's columns (``N x p``: NaN, infinite, or beyond what the algorithm's
    sums can hold, naming the columns, with their ``names`` if given) or a block of an
    instance stream (NaN or infinite, naming its rows, counted from ``first_row``; beyond
    what the algorithm's sums hold, if it says, naming the feature columns)."""
    if kind == "features":
        limit, measure = algo._value_limit(X.shape[0])
        problem = value_problem(column_abs_max(X), X.shape[0], limit, measure, names=names)
        if problem is not None:
            raise ValueError(problem)
        return
    bad = np.flatnonzero(~np.isfinite(column_abs_max(X.T)))
    if bad.size:
        rows = (bad[:10] + first_row).tolist()
        raise ValueError(f"X contains NaN or infinite values in data rows {rows}"
                         f"{' ...' if bad.size > 10 else ''} (counted from 0)")
    if hasattr(algo, "_check_values"):  # GDM: its window's variances must stay finite
        algo._check_values(X, names, first_row=first_row)
