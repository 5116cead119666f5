"""Read whole datasets from files into ``(X, y)``; errors name the file and the line or column.

Feature streams need every instance of a column, so they load the file whole; instance
streams read incrementally where the format allows (see :mod:`streamfs.producers.sources`).
"""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import scipy.sparse as sp

from streamfs.algorithms._suggest import did_you_mean
from streamfs.producers.delimited import (DelimitedReader, default_label_note, feature_columns,
                                          label_index, labels_from_text, refuse_duplicate_names)
from streamfs.producers.errors import InputFileError
from streamfs.producers.libsvm import LibsvmReader

__all__ = ["InputFileError", "check_groups", "load_file", "read_csv", "read_groups", "read_libsvm",
           "read_mat", "read_npy", "read_npz", "read_parquet"]

#: suffixes read as LIBSVM/svmlight
LIBSVM_SUFFIXES = (".svm", ".libsvm", ".svmlight", ".txt")
#: formats whose labels are not a column of the data
OWN_LABELS = (".npz", ".mat", *LIBSVM_SUFFIXES)
KNOWN_SUFFIXES = (".npy", ".csv", ".tsv", ".parquet", *OWN_LABELS)


def load_file(source: str | os.PathLike, *, label: str | int | None = None,
              header: bool | None = None, n_features: int | None = None,
              zero_based: bool | str = "auto", drop: Sequence[str | int] = ()
              ) -> tuple[Any, np.ndarray]:
    """Load ``(X, y)`` from a path, a dataset name of ``$STREAMFS_DATASETS`` or ``sklearn:NAME``.

    Formats by suffix: ``.npz`` (arrays ``X`` and ``y``), ``.npy`` (one 2-D array; label
    column by index, default the last, or ``label`` naming a ``.npy`` file of labels),
    ``.csv``/``.tsv`` (label column by name or index, default the last; ``header`` True, False
    or None to detect), LIBSVM/svmlight (``.svm``, ``.libsvm``, ``.svmlight``, ``.txt``;
    sparse; d from ``n_features`` or the largest index; ``zero_based`` True, False or
    "auto": 0-based if an index 0 occurs, as in scikit-learn's ``load_svmlight_file``),
    MATLAB ``.mat`` (v5 and v7.3; variables ``X``/``y`` or the first 2-D and 1-D arrays),
    ``.parquet`` (label as for CSV). ``drop``: columns of CSV/TSV, Parquet and ``.npy``
    files that are neither features nor the label (names or indices, as ``label``), such as a
    row id.
    """
    source = os.fspath(source)
    if source.startswith("sklearn:"):
        return _sklearn(source.split(":", 1)[1])
    path = Path(source)
    if not path.exists():
        from streamfs import datasets

        names = datasets.available()
        if source in names:
            return datasets.load(source)
        raise InputFileError(f"{source}: no such file or dataset{did_you_mean(source, names)}")
    suffix = path.suffix.lower()
    check_source(path, label, drop, header=header, n_features=n_features, zero_based=zero_based)
    if suffix == ".npz":
        return read_npz(path)
    if suffix == ".npy":
        return read_npy(path, label=label, drop=drop)
    if suffix in (".csv", ".tsv"):
        return read_csv(path, label=label, delimiter="\t" if suffix == ".tsv" else ",",
                        header=header, drop=drop)
    if suffix in LIBSVM_SUFFIXES:
        return read_libsvm(path, n_features=n_features, zero_based=zero_based)
    if suffix == ".mat":
        return read_mat(path)
    if suffix == ".parquet":
        return read_parquet(path, label=label, drop=drop)
    raise InputFileError(f"{path}: unknown format {suffix!r} (known: "
                         f"{', '.join(sorted(KNOWN_SUFFIXES))})")


def check_source(path: Path, label: str | int | None, drop: Sequence[str | int] = (), *,
                 header: bool | None = None, n_features: int | None = None,
                 zero_based: bool | str = "auto") -> None:
    """:class:`InputFileError` for a directory, and for a setting the format does not read
    (it was ignored without a word): a ``label`` column, or columns to ``drop``, for a format
    that carries its labels apart; ``header`` but for CSV/TSV; ``n_features`` or
    ``zero_based`` but for LIBSVM."""
    if path.is_dir():
        raise InputFileError(f"{path}: is a directory, not a data file")
    suffix = path.suffix.lower()
    if header is not None and suffix not in (".csv", ".tsv"):
        raise InputFileError(f"{path}: --header/--no-header applies to CSV/TSV files; "
                             f"{suffix or 'these'} files have none")
    if n_features is not None and suffix not in LIBSVM_SUFFIXES:
        raise InputFileError(f"{path}: --n-features applies to LIBSVM files, whose width "
                             f"the file does not say; {suffix or 'these'} files carry their "
                             f"shape")
    if zero_based != "auto" and suffix not in LIBSVM_SUFFIXES:
        raise InputFileError(f"{path}: --zero-based/--one-based applies to LIBSVM files; "
                             f"{suffix or 'these'} files have no feature indices")
    if label is not None and suffix in OWN_LABELS:
        raise InputFileError(f"{path}: a label column applies to CSV/TSV, Parquet and .npy "
                             f"files; {suffix} files carry their labels")
    if drop and suffix in OWN_LABELS:
        raise InputFileError(f"{path}: --drop applies to CSV/TSV, Parquet and .npy files, "
                             f"whose columns are features and label; not to {suffix} files")


def label_column_note(source: str, label: str | int | None, header: bool | None = None,
                      why: str = "") -> str:
    """What a label error about ``source`` adds (see
    :func:`~streamfs.producers.delimited.default_label_note`) when no ``label`` was given and
    its format takes the label from a column (CSV/TSV, Parquet, ``.npy``): the last column was
    taken (``why`` it looks wrong, if said); ``""`` otherwise (labels kept apart, a label
    given)."""
    path = Path(source)
    if label is not None or not path.is_file():  # sklearn: and dataset names carry labels
        return ""
    suffix = path.suffix.lower()
    if suffix in (".csv", ".tsv"):
        reader = DelimitedReader(path, header=header, delimiter="\t" if suffix == ".tsv" else ",")
        return default_label_note(None, reader.names, reader.width, why)
    if suffix == ".parquet":
        names = parquet_columns(open_parquet(path))
        return default_label_note(None, names, len(names), why)
    if suffix == ".npy":
        return default_label_note(None, None, np.load(path, mmap_mode="r").shape[1], why)
    return ""


#: header names that say "this column is the label" (compared in lower case)
LABEL_WORDS = frozenset({"class", "label", "labels", "target", "y", "outcome", "diagnosis"})


def guessed_label_warning(source: str, label: str | int | None, header: bool | None,
                          y: Any, names: list[str] | None) -> str | None:
    """A warning when no ``label`` was given, the last column of ``source`` was taken as the
    label (:func:`label_column_note`), and that looks wrong: its values are not whole numbers
    (a measurement, not classes; SAOLA's Fisher z takes it without a word), or another column
    (among the features' ``names``) is named as labels are. None otherwise."""
    if label is not None:
        return None
    values = np.asarray(y)
    reasons = []
    if values.dtype.kind == "f" and not np.all(np.isfinite(values) & (values == np.round(values))):
        reasons.append(f"its values are not whole numbers: {len(np.unique(values))} distinct")
    named = [n for n in names or [] if str(n).strip().lower() in LABEL_WORDS]
    if named:
        reasons.append(f"column {named[0]!r} is read as a feature")
    note = label_column_note(source, label, header, "; ".join(reasons)) if reasons else ""
    return f"{source}: {note[2:]}" if note else None


#: header names of a row id (compared in lower case; also any name ending in "_id", " id",
#: "-id" or, as in "PatientID", a capital "ID"/"Id" after a lower-case letter)
ROW_ID_WORDS = frozenset({"id", "index", "idx", "row", "rowid", "unnamed: 0", "sample"})


def _row_id_name(name: str) -> bool:
    """Whether ``name`` reads as a row id's.

    >>> [_row_id_name(n) for n in ("id", "patient_id", "PatientID", "CustomerId", "fluid", "acid")]
    [True, True, True, True, False, False]
    """
    low = name.strip().lower()
    return (low in ROW_ID_WORDS or low.endswith(("_id", " id", "-id"))
            or re.search(r"[a-z](ID|Id)$", name.strip()) is not None)


def row_id_warnings(source: str, X: Any, names: list[str] | None) -> list[str]:
    """Warnings for feature columns of ``X`` (rows of ``source``: all, or the first ones)
    that look like row ids rather than measurements: named as ids are (``id``,
    ``patient_id``, ``PatientID``, pandas' ``Unnamed: 0``, ...) and holding distinct whole
    numbers, one per row. Read as features they may be selected (an id numbered in the
    order the classes were collected predicts the class); ``--drop`` leaves them out."""
    if not names or X.shape[0] < 2:
        return []
    said = []
    for j, name in enumerate(names):
        if not _row_id_name(str(name)):
            continue
        column = X[:, [j]].toarray().ravel() if sp.issparse(X) else np.asarray(X[:, j])
        if np.all(column == np.round(column)) and len(np.unique(column)) == len(column):
            said.append(f"{source}: column {name!r} (feature {j}) looks like a row id, not a "
                        f"measurement: {len(column)} distinct whole numbers, one per row; it is "
                        f"read as a feature and may be selected: leave it out with --drop "
                        f"{shlex.quote(str(name))}")
    return said


def _sklearn(name: str) -> tuple[np.ndarray, np.ndarray]:
    import sklearn.datasets as skd

    loader = getattr(skd, f"load_{name}", None)
    if loader is None:
        raise InputFileError(f"sklearn:{name}: scikit-learn has no bundled dataset {name!r}")
    X, y = loader(return_X_y=True)
    return np.asarray(X, dtype=np.float64), np.asarray(y)


def npz_member(data: Any, key: str, path: Path) -> np.ndarray:
    """Array ``key`` of an open ``.npz`` archive; an array of Python objects (what numpy
    saves of a pandas column or Index of text) is refused naming it and the fix: loading it
    would unpickle, which can run code from the file."""
    try:
        return data[key]
    except ValueError as exc:
        if "allow_pickle" not in str(exc):
            raise
        raise InputFileError(
            f"{path}: {key!r} is an array of Python objects (as numpy saves a pandas column or "
            "Index of text), which streamfs does not unpickle: save it with a fixed type, "
            f"e.g. np.asarray(..., dtype=str) for text") from None


def read_npz(path: Path) -> tuple[Any, np.ndarray]:
    """Arrays ``X`` and ``y`` of an ``.npz`` archive (no pickled objects)."""
    try:
        with np.load(path, allow_pickle=False) as data:
            if "X" not in data or "y" not in data:
                raise InputFileError(f"{path}: an .npz needs arrays 'X' and 'y', has {list(data)}")
            return _one_label_per_row(path, npz_member(data, "X", path),
                                      npz_member(data, "y", path))
    except InputFileError:
        raise
    except Exception as exc:  # noqa: BLE001 - BadZipFile, pickled objects, truncation...
        raise InputFileError(f"{path}: not a readable .npz archive ({exc})") from None


def read_npy(path: Path, *, label: str | int | None = None,
             drop: Sequence[str | int] = ()) -> tuple[np.ndarray, np.ndarray]:
    """A 2-D ``.npy`` array with the label in one column, or features plus a labels file;
    ``drop``: indices of columns that are neither."""
    try:
        A = np.load(path, mmap_mode="r", allow_pickle=False)
    except ValueError as exc:
        raise InputFileError(f"{path}: not a readable .npy array ({exc})") from None
    if A.ndim != 2:
        raise InputFileError(f"{path}: expected a 2-D array, got shape {A.shape}")
    if label is not None and str(label).endswith(".npy"):
        y = np.load(label, allow_pickle=False)
        if y.shape != (A.shape[0],):
            raise InputFileError(f"{label}: expected {A.shape[0]} labels, got shape {y.shape}")
        return np.asarray(A[:, feature_columns(None, None, drop, A.shape[1], path)]), y
    li = label_index(None, label, A.shape[1], path)
    return (np.asarray(A[:, feature_columns(None, li, drop, A.shape[1], path)]),
            np.asarray(A[:, li]))


def read_csv(path: Path, *, label: str | int | None = None, delimiter: str = ",",
             header: bool | None = None, drop: Sequence[str | int] = ()
             ) -> tuple[np.ndarray, np.ndarray]:
    """Numeric feature columns plus one label column (numbers if all are numbers, else text);
    ``drop``: columns that are neither."""
    reader = DelimitedReader(path, label=label, delimiter=delimiter, header=header, drop=drop)
    blocks, labels = [], []
    for X, text, _ in reader.text_chunks():
        blocks.append(X)
        labels.extend(text)
    X = np.concatenate(blocks) if blocks else np.empty((0, reader.n_features))
    return X, labels_from_text(labels, str(path))


def read_libsvm(path: Path, n_features: int | None = None, *,
                zero_based: bool | str = "auto") -> tuple[sp.csr_matrix, np.ndarray]:
    """LIBSVM/svmlight: ``label idx:value ...`` per line, sparse CSR.

    Indices are 1-based, or 0-based (scikit-learn's ``dump_svmlight_file``) with
    ``zero_based=True``; ``"auto"``: 0-based if an index 0 occurs in the file. The base used
    is :func:`streamfs.producers.libsvm.detect_index_base` (``LibsvmReader.index_base``).
    """
    chunks = list(LibsvmReader(path, n_features, zero_based=zero_based).chunks())
    if not chunks:
        return sp.csr_matrix((0, n_features or 0)), np.empty(0, dtype=np.int64)
    y = np.concatenate([c[1] for c in chunks])
    return sp.vstack([c[0] for c in chunks], format="csr"), y


def read_groups(path: Path | str) -> list[list[int]]:
    """Group definitions for group-SAOLA: a JSON list of lists of column indices."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except OSError as exc:  # a missing file is no "JSON file of groups" problem
        raise InputFileError(f"{path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        byte = exc.object[exc.start]
        raise InputFileError(f"{path}: not a JSON file of groups (byte 0x{byte:02x} at offset "
                             f"{exc.start} is not UTF-8 text)") from None
    try:
        groups = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputFileError(f"{path}: not a JSON file of groups ({exc})") from None
    if not isinstance(groups, list) or not all(
            isinstance(g, list) and all(isinstance(j, int) and not isinstance(j, bool) for j in g)
            for g in groups):
        raise InputFileError(f"{path}: groups must be a JSON list of lists of column indices")
    return groups


def check_groups(groups: Sequence[Sequence[int]], n_columns: int, source: str) -> None:
    """Groups must partition the columns ``0..n_columns-1``; the error names the culprit."""
    seen: dict[int, int] = {}
    for g, members in enumerate(groups):
        if not len(members):  # group-SAOLA refuses it (group_members), without the file's name
            raise InputFileError(f"{source}: group {g} is empty")
        for j in members:
            if not 0 <= j < n_columns:
                raise InputFileError(f"{source}: group {g} has column {j}, outside 0..{n_columns - 1}")
            if j in seen:
                raise InputFileError(f"{source}: column {j} is in groups {seen[j]} and {g}")
            seen[j] = g
    if len(seen) != n_columns:
        missing = next(j for j in range(n_columns) if j not in seen)
        raise InputFileError(f"{source}: column {missing} is in no group "
                             f"({n_columns - len(seen)} column(s) missing)")


def read_mat(path: Path) -> tuple[Any, np.ndarray]:
    """MATLAB .mat, v5 (scipy) or v7.3 (HDF5 via h5py; arrays are stored transposed)."""
    import h5py

    if h5py.is_hdf5(path):  # v7.3 (MATLAB's 512-byte header sits in the HDF5 user block)
        with h5py.File(path, "r") as fh:
            arrays = {k: _h5_variable(v) for k, v in fh.items() if not k.startswith("#")}
            arrays = {k: v for k, v in arrays.items() if v is not None}
    else:
        import scipy.io

        try:
            arrays = {k: v for k, v in scipy.io.loadmat(path).items() if not k.startswith("__")}
        except Exception as exc:  # noqa: BLE001 - scipy raises MatReadError, ValueError, ...
            raise InputFileError(f"{path}: not a MATLAB file ({exc})") from None
    X = arrays.get("X")
    y = arrays.get("Y", arrays.get("y"))
    if X is None:
        X = next((v for v in arrays.values() if getattr(v, "ndim", 0) == 2 and min(v.shape) > 1), None)
    if y is None:
        y = next((v for v in arrays.values() if getattr(v, "ndim", 0) == 2 and min(v.shape) == 1), None)
    if X is None or y is None:
        raise InputFileError(f"{path}: needs a 2-D data variable and a label vector; has {list(arrays)}")
    return _one_label_per_row(path, X, np.asarray(y).ravel())


def _one_label_per_row(path: Path, X: Any, y: np.ndarray) -> tuple[Any, np.ndarray]:
    """``(X, y)`` of a format that stores them apart, or :class:`InputFileError` naming the
    file when ``X`` is not 2-D or ``y`` is not one label per row of ``X``."""
    if X.ndim != 2:  # a 1-D X was taken as one column's rows, then failed on X.shape[1]
        raise InputFileError(f"{path}: X has shape {X.shape}; it needs 2 dimensions, instances "
                             "x features" + (" (one feature: save X.reshape(-1, 1))"
                                             if X.ndim == 1 else ""))
    if y.ndim == 0 or y.shape[0] != X.shape[0]:
        raise InputFileError(f"{path}: X has {X.shape[0]} rows (instances) but y has shape "
                             f"{y.shape}: one label per row")
    return X, y


def _h5_variable(node: Any) -> Any:
    """A MATLAB v7.3 variable: datasets are stored transposed, sparse ones as CSC parts."""
    import h5py

    if isinstance(node, h5py.Dataset):
        return np.asarray(node).T if node.dtype.kind in "biuf" else None
    if isinstance(node, h5py.Group) and "MATLAB_sparse" in node.attrs and "jc" in node:
        jc = np.asarray(node["jc"])
        ir = np.asarray(node["ir"]) if "ir" in node else np.empty(0, dtype=np.int64)
        data = np.asarray(node["data"]) if "data" in node else np.empty(0)
        return sp.csc_matrix((data, ir, jc), shape=(int(node.attrs["MATLAB_sparse"]), jc.size - 1))
    return None


def open_parquet(path: Path) -> Any:
    """The ``pyarrow.parquet.ParquetFile`` at ``path``; :class:`InputFileError` for a file
    that is not Parquet, or whose columns repeat a name (pyarrow writes such files, but
    reading them by name fails)."""
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path)
    except Exception as exc:  # noqa: BLE001 - pyarrow raises several types for bad files
        raise InputFileError(f"{path}: not a readable Parquet file ({exc})") from None
    refuse_duplicate_names(pf.schema_arrow.names, str(path))
    return pf


def parquet_columns(pf: Any) -> list[str]:
    """The data columns of Parquet file ``pf`` (a ``pyarrow.parquet.ParquetFile``): its
    columns without those that hold a pandas index (``__index_level_0__``, which pandas
    writes for an index other than 0, 1, 2, …, such as a filtered frame's, or a named index),
    as ``to_pandas()`` makes them the index rather than columns: the label and the features
    are the same columns whether the file is read whole or in batches."""
    names = pf.schema_arrow.names
    index = {c for c in (pf.schema_arrow.pandas_metadata or {}).get("index_columns", [])
             if isinstance(c, str)}  # a RangeIndex is a dict, stored as metadata only
    return [n for n in names if n not in index]


def read_parquet(path: Path, *, label: str | int | None = None,
                 drop: Sequence[str | int] = ()) -> tuple[np.ndarray, np.ndarray]:
    """A Parquet table: numeric feature columns plus one label column; ``drop``: columns
    that are neither."""
    pf = open_parquet(path)
    try:
        frame = pf.read().to_pandas()
    except Exception as exc:  # noqa: BLE001 - pyarrow raises several types for bad files
        raise InputFileError(f"{path}: not a readable Parquet file ({exc})") from None
    if not len(frame):  # said so, rather than "the labels are empty"
        raise InputFileError(f"{path}: no data rows")
    columns = list(map(str, frame.columns))
    li = label_index(columns, label, frame.shape[1], path, "among the columns")
    y = frame.iloc[:, li].to_numpy()
    kept = feature_columns(columns, li, drop, frame.shape[1], path, "among the columns")
    X = frame.iloc[:, kept]
    for col, name in zip(kept, X.columns):
        if X[name].dtype.kind not in "biuf":
            raise InputFileError(f"{path}, column {col} ({str(name)!r}): not numeric "
                                 f"(dtype {X[name].dtype})"
                                 + default_label_note(label, list(map(str, frame.columns)),
                                                      frame.shape[1]))
    return X.to_numpy(dtype=np.float64), y
