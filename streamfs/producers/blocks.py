"""Cut a dataset into the messages of a stream (pure: no Kafka).

Blocks are bounded by bytes, not counts: a faust agent handles a few thousand messages a
second, so each message should carry as many columns or instances as fit the size limit.
"""

from __future__ import annotations

from typing import Any, Iterator, Sequence

import numpy as np
import scipy.sparse as sp

#: default payload budget per message; below the 1 MiB default limit of Kafka brokers
DEFAULT_BLOCK_BYTES = 900 * 1024


def _column_bytes(X: Any, j0: int, j1: int) -> int:
    if sp.issparse(X):
        nnz = X.indptr[j1] - X.indptr[j0]
        return int(nnz) * (X.data.itemsize + X.indices.itemsize) + 8 * (j1 - j0)
    return X.shape[0] * (j1 - j0) * X.dtype.itemsize


def column_blocks(X: Any, block_bytes: int = DEFAULT_BLOCK_BYTES,
                  boundaries: Sequence[int] | None = None) -> Iterator[tuple[int, int]]:
    """Yield ``(start, stop)`` column ranges of at most ``block_bytes`` each.

    ``boundaries`` (sorted column positions) are never split: a range may end only at one of
    them, so a group of columns always travels in one message (a group larger than the budget
    gets a message of its own).

    >>> list(column_blocks(np.zeros((10, 7)), block_bytes=240))
    [(0, 3), (3, 6), (6, 7)]
    """
    X = X.tocsc() if sp.issparse(X) else X
    n = X.shape[1]
    cuts = list(boundaries) if boundaries is not None else list(range(1, n + 1))
    if cuts and cuts[-1] != n:
        cuts.append(n)
    start = 0
    prev = 0
    for cut in cuts:
        if cut <= prev:
            continue
        if cut - start > 0 and prev > start and _column_bytes(X, start, cut) > block_bytes:
            yield start, prev
            start = prev
        prev = cut
    if prev > start:
        yield start, prev


def row_blocks(X: Any, block_bytes: int = DEFAULT_BLOCK_BYTES) -> Iterator[tuple[int, int]]:
    """Yield ``(start, stop)`` row ranges of at most ``block_bytes`` each (at least one row)."""
    n = X.shape[0]
    if sp.issparse(X):
        X = X.tocsr()
        per_row = np.diff(X.indptr) * (X.data.itemsize + X.indices.itemsize) + 8
    else:
        per_row = np.full(n, X.shape[1] * X.dtype.itemsize + 8)
    start, acc = 0, 0
    for i in range(n):
        if i > start and acc + per_row[i] > block_bytes:
            yield start, i
            start, acc = i, 0
        acc += int(per_row[i])
    if n > start:
        yield start, n


def feature_stream_messages(stream: str, X: Any, y: Any, algorithm: str, params: dict | None = None,
                            *, groups: Sequence[Sequence[int]] | None = None,
                            block_bytes: int = DEFAULT_BLOCK_BYTES) -> Iterator[dict]:
    """The messages of a feature stream: ``open`` (with ``y``), column blocks, ``close``.

    With ``groups`` (index arrays partitioning the columns), columns are sent group by group in
    the given order, each block carrying the group id (the group's position) of every column.
    """
    X = X.tocsc() if sp.issparse(X) else np.asarray(X)
    y = np.asarray(y)
    labels = y.tolist() if y.dtype.kind in "OUS" else y
    yield {"kind": "open", "stream": stream, "seq": 0, "algorithm": algorithm,
           "params": dict(params or {}), "y": labels}
    gid = None
    boundaries = None
    if groups is not None:
        order = np.concatenate([np.asarray(g, dtype=np.int64) for g in groups])
        if np.sort(order).tolist() != list(range(X.shape[1])):
            raise ValueError("groups must partition the columns 0..p-1 exactly once")
        gid = np.repeat(np.arange(len(groups)), [len(g) for g in groups])
        X = X[:, order]
        boundaries = np.cumsum([len(g) for g in groups]).tolist()
    seq = 0
    for a, b in column_blocks(X, block_bytes, boundaries):
        seq += 1
        msg = {"kind": "features", "stream": stream, "seq": seq, "start": a, "X": X[:, a:b]}
        if gid is not None:
            msg["groups"] = gid[a:b].tolist()
        yield msg
    yield {"kind": "close", "stream": stream, "seq": seq + 1}


def instance_stream_messages(stream: str, X: Any, y: Any, algorithm: str,
                             params: dict | None = None, *, feature_names: list[str] | None = None,
                             block_bytes: int = DEFAULT_BLOCK_BYTES) -> Iterator[dict]:
    """The messages of an instance stream: ``open`` (with d), row blocks with labels, ``close``."""
    X = X.tocsr() if sp.issparse(X) else np.asarray(X)
    y = np.asarray(y)
    yield {"kind": "open", "stream": stream, "seq": 0, "algorithm": algorithm,
           "params": dict(params or {}), "n_features": int(X.shape[1]),
           "feature_names": feature_names}
    seq = 0
    for a, b in row_blocks(X, block_bytes):
        seq += 1
        labels = y[a:b].tolist() if y.dtype.kind in "OUS" else y[a:b]
        yield {"kind": "instances", "stream": stream, "seq": seq, "X": X[a:b], "y": labels}
    yield {"kind": "close", "stream": stream, "seq": seq + 1}
