"""Instance sources: row chunks read incrementally where the format allows.

CSV/TSV, LIBSVM, ``.npy`` (memory-mapped) and Parquet (row-group batches) are streamed with
bounded memory; ``.npz``, ``.mat``, dataset names and in-memory objects are loaded whole and
served as one chunk.

>>> import numpy as np
>>> src = InstanceSource.from_arrays(np.eye(3), np.arange(3))
>>> src.n_features, [X.shape for X, _ in src.chunks()], src.progress()
(3, [(3, 3)], (3, 3))
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from streamfs.producers.checks import Chunk, sendable_labels
from streamfs.producers.delimited import DelimitedReader, feature_columns, label_index
from streamfs.producers.errors import InputFileError
from streamfs.producers.files import (LIBSVM_SUFFIXES, check_source, load_file, open_parquet,
                                      parquet_columns)
from streamfs.producers.libsvm import DEFAULT_CHUNK_BYTES, LibsvmReader



@dataclass
class InstanceSource:
    """What an instance stream needs: d up front, then row chunks ``(X, y)``.

    ``chunks()`` returns a new iterator over the same rows on each call (a generator
    function, not a generator): a publish reads the source once to check it, and again to
    send it (see :func:`~streamfs.producers.checks.check_instance_source`).
    ``progress()`` returns ``(done, total)`` in ``unit`` ("bytes" of the file, or "rows").
    """

    n_features: int
    chunks: Callable[[], Iterator[Chunk]]
    feature_names: list[str] | None = None
    unit: str = "rows"
    progress: Callable[[], tuple[int, int | None]] = field(default=lambda: (0, None))
    #: LIBSVM sources: 0 or 1, the base of the file's indices (None for other sources)
    index_base: int | None = None

    @classmethod
    def from_arrays(cls, X: Any, y: Any, feature_names: list[str] | None = None) -> "InstanceSource":
        """One chunk holding everything (data already in memory)."""
        done = [0]

        def chunks() -> Iterator[Chunk]:
            yield X, sendable_labels(y)  # a list's ints could have become floats
            done[0] = X.shape[0]

        return cls(X.shape[1], chunks, feature_names, "rows", lambda: (done[0], X.shape[0]))

    @classmethod
    def from_reader(cls, reader: Any) -> "InstanceSource":
        """A file reader with ``n_features``, ``chunks()``, ``bytes_read`` and ``size``."""
        return cls(reader.n_features, reader.chunks, reader.feature_names, "bytes",
                   lambda: (reader.bytes_read, reader.size))


def open_instances(source: str, *, label: str | int | None = None, header: bool | None = None,
                   n_features: int | None = None,
                   chunk_bytes: int = DEFAULT_CHUNK_BYTES,
                   zero_based: bool | str = "auto",
                   drop: Sequence[str | int] = ()) -> InstanceSource:
    """An :class:`InstanceSource` for a file path or dataset name (see :func:`load_file`,
    also for ``drop``).

    LIBSVM sources also get ``index_base`` (0 or 1, see ``zero_based`` of
    :class:`~streamfs.producers.libsvm.LibsvmReader`)."""
    path = Path(source)
    suffix = path.suffix.lower()
    if path.exists():
        check_source(path, label, drop, header=header, n_features=n_features,
                     zero_based=zero_based)
    if path.is_file():
        if suffix in (".csv", ".tsv"):
            return InstanceSource.from_reader(DelimitedReader(
                path, label=label, header=header, delimiter="\t" if suffix == ".tsv" else ",",
                chunk_bytes=chunk_bytes, drop=drop))
        if suffix in LIBSVM_SUFFIXES:
            reader = LibsvmReader(path, n_features, chunk_bytes=chunk_bytes, zero_based=zero_based)
            libsvm = InstanceSource.from_reader(reader)
            libsvm.index_base = reader.index_base
            return libsvm
        if suffix == ".npy" and not (label is not None and str(label).endswith(".npy")):
            return _npy_source(path, label, chunk_bytes, drop)
        if suffix == ".parquet":
            return _parquet_source(path, label, chunk_bytes, drop)
    from streamfs.producers.names import source_feature_names

    X, y = load_file(source, label=label, header=header, n_features=n_features, drop=drop)
    # the names a feature stream of the same source carries (sklearn: bundles, .npz, .mat)
    return InstanceSource.from_arrays(X, y, source_feature_names(source, label=label,
                                                                 header=header, drop=drop))


def _npy_source(path: Path, label: str | int | None, chunk_bytes: int,
                drop: Sequence[str | int]) -> InstanceSource:
    try:
        A = np.load(path, mmap_mode="r", allow_pickle=False)  # pages in on demand only
    except ValueError as exc:
        raise InputFileError(f"{path}: not a readable .npy array ({exc})") from None
    if A.ndim != 2 or A.shape[1] < 2:
        raise InputFileError(f"{path}: expected a 2-D array with a label column, got shape {A.shape}")
    li = label_index(None, label, A.shape[1], path)
    features = feature_columns(None, li, drop, A.shape[1], path)
    step = max(1, chunk_bytes // (A.shape[1] * A.itemsize))
    done = [0]

    def chunks() -> Iterator[Chunk]:
        for a in range(0, A.shape[0], step):
            block = np.asarray(A[a:a + step])
            yield block[:, features], block[:, li].copy()
            done[0] = min(a + step, A.shape[0])

    return InstanceSource(len(features), chunks, None, "rows", lambda: (done[0], A.shape[0]))


def _parquet_source(path: Path, label: str | int | None, chunk_bytes: int,
                    drop: Sequence[str | int]) -> InstanceSource:
    pf = open_parquet(path)
    if not pf.metadata.num_rows:  # said so, rather than "the labels are empty"
        raise InputFileError(f"{path}: no data rows")
    names = parquet_columns(pf)  # not the columns of a pandas index
    li = label_index(names, label, len(names), path, "among the columns")
    kept = feature_columns(names, li, drop, len(names), path, "among the columns")
    for j in kept:
        f = pf.schema_arrow.field(names[j])
        if not (f.type.num_fields == 0 and _numeric(f.type)):
            raise InputFileError(f"{path}, column {j} ({f.name!r}): not numeric (type {f.type})")
    features = [names[j] for j in kept]
    rows = max(1, chunk_bytes // (8 * len(names)))
    done = [0]
    total = pf.metadata.num_rows

    def chunks() -> Iterator[Chunk]:
        for batch in pf.iter_batches(batch_size=rows):
            X = np.column_stack([batch.column(n).to_numpy(zero_copy_only=False).astype(np.float64)
                                 for n in features]) if features else np.empty((batch.num_rows, 0))
            y = batch.column(names[li]).to_numpy(zero_copy_only=False)
            if y.dtype.kind == "O":
                missing = next((i for i, v in enumerate(y) if v is None), None)
                if missing is not None:  # str() would make it a class 'None'
                    raise InputFileError(f"{path}, data row {done[0] + missing} (counted from "
                                         "0): the label is missing; every instance needs a "
                                         "class")
                y = np.array([str(v) for v in y])
            done[0] += batch.num_rows
            yield X, y

    return InstanceSource(len(features), chunks, features, "rows", lambda: (done[0], total))


def _numeric(t: Any) -> bool:
    import pyarrow.types as pat

    return pat.is_integer(t) or pat.is_floating(t) or pat.is_boolean(t)
