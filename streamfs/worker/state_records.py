"""The records of a stream's state in a partition's table, and their keys (the table's layout:
:mod:`streamfs.worker.processor`)."""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from streamfs.algorithms.opening import STATE_KEY_SEP as SEP
from streamfs.codec import packb, unpackb


def content_digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def header_key(stream: str) -> str:
    return f"{stream}{SEP}h"


def header_stream(key: str) -> str | None:
    """The stream whose header ``key`` is (:func:`header_key`), or None for another record.

    >>> header_stream(header_key("s1")), header_stream(column_key("s1", 3))
    ('s1', None)
    """
    return key[:-2] if key.endswith(f"{SEP}h") else None


def state_keys(stream: str, name: str, ref: str) -> list[str]:
    """The keys of a state entry's records. ``ref`` is the digest of the entry's bytes, with
    ``+<parts>`` where the entry was written in parts
    (:meth:`~streamfs.worker.processor.StreamProcessor._persist`)."""
    digest, _, parts = ref.partition("+")
    key = f"{stream}{SEP}s{SEP}{name}{SEP}{digest}"
    return [key] + [f"{key}{SEP}{i}" for i in range(1, int(parts or 1))]


def map_key(stream: str, start: int) -> str:
    return f"{stream}{SEP}m{SEP}{start}"


def column_key(stream: str, feature: int) -> str:
    return f"{stream}{SEP}c{SEP}{feature}"


def names_key(stream: str, start: int) -> str:
    return f"{stream}{SEP}n{SEP}{start}"


def pack_column(column: Any) -> bytes:
    """A kept column for the changelog: a mostly-zero float64 column (a bag-of-words feature)
    travels as its length and its non-zeros (rows and values, 12 bytes each, and a header of
    about 50) where that is smaller than its 8 bytes a row. Non-zero is bitwise, so ``-0.0``
    is kept as stored and :func:`unpack_column` gives back the same bits."""
    column = np.asarray(column)
    if column.dtype == np.float64 and column.ndim == 1:
        rows = np.flatnonzero(column.view(np.uint64))
        if 12 * len(rows) + 64 < 8 * len(column):
            return packb({"n": len(column), "rows": rows.astype(np.int32),
                          "values": column[rows]})
    return packb(column)


def unpack_column(data: bytes) -> np.ndarray:
    """The dense column :func:`pack_column` packed."""
    value = unpackb(data)
    if not isinstance(value, dict):
        return value
    column = np.zeros(value["n"])
    column[value["rows"]] = value["values"]
    return column
