"""Feature names of a data source, for results that name what they select.

Names come from the source where it has them: a CSV/TSV header, Parquet or DataFrame columns,
scikit-learn's bundled datasets (``feature_names``), an ``.npz`` array ``feature_names`` and a
MATLAB variable ``feature_names``/``featureNames``. Sources without names get the worker's
naming rule: ``x0, x1, ...`` by column index, and LIBSVM files their indices as written in the
file (``1, 2, ...`` one-based, ``0, 1, ...`` zero-based), see :func:`naming_rule`.

>>> naming_rule("data.svm", index_base=1), naming_rule("data.npz")
({'name_prefix': '', 'name_base': 1}, {})
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np

from streamfs.producers.delimited import (DelimitedReader, feature_columns, label_index,
                                          refuse_duplicate_names)
from streamfs.producers.errors import InputFileError
from streamfs.producers.files import (LIBSVM_SUFFIXES, npz_member, open_parquet,
                                      parquet_columns)


def load_named(source: str, *, label: str | int | None = None, header: bool | None = None,
               n_features: int | None = None, zero_based: bool | str = "auto",
               drop: Sequence[str | int] = ()) -> tuple[Any, np.ndarray, list[str] | None, dict]:
    """``(X, y, feature names or None, naming rule)`` of a whole source (see
    :func:`streamfs.producers.files.load_file`); :class:`InputFileError` for a bad file."""
    from streamfs.producers.files import load_file

    X, y = load_file(source, label=label, header=header, n_features=n_features,
                     zero_based=zero_based, drop=drop)
    names = check_names(source_feature_names(source, label=label, header=header, drop=drop),
                        X.shape[1], source)
    return X, y, names, naming_rule(source, libsvm_index_base(source, zero_based))


def libsvm_index_base(source: str, zero_based: bool | str) -> int | None:
    """The index base a LIBSVM file is read with (its features are named by their indices as
    written); ``None`` for other sources."""
    from streamfs.producers.libsvm import detect_index_base

    if Path(source).suffix.lower() not in LIBSVM_SUFFIXES or not Path(source).is_file():
        return None
    return detect_index_base(source, zero_based)


def rule_names(naming: dict, n_features: int) -> list[str]:
    """The names the naming rule gives ``n_features`` unnamed features.

    >>> rule_names({}, 3), rule_names({"name_prefix": "", "name_base": 1}, 2)
    (['x0', 'x1', 'x2'], ['1', '2'])
    """
    return list(RuleNames(naming, n_features))


class RuleNames(Sequence[str]):
    """:func:`rule_names` made one at a time where they are read (a message naming a few of
    a million features makes no list of a million names).

    >>> names = RuleNames({"name_prefix": "", "name_base": 1}, 3)
    >>> len(names), names[0], list(names)
    (3, '1', ['1', '2', '3'])
    """

    def __init__(self, naming: dict, n_features: int) -> None:
        self._prefix = naming.get("name_prefix", "x")
        self._base = naming.get("name_base", 0)
        self._n = n_features

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, j: Any) -> Any:
        if isinstance(j, slice):
            return [self[i] for i in range(*j.indices(self._n))]
        j = int(j)
        if not -self._n <= j < self._n:
            raise IndexError(j)
        return f"{self._prefix}{j % self._n + self._base}"


def naming_rule(source: str, index_base: int | None = None) -> dict:
    """The ``open`` fields that name unnamed features of ``source`` (empty: ``x<index>``)."""
    if Path(source).suffix.lower() in LIBSVM_SUFFIXES:
        return {"name_prefix": "", "name_base": 1 if index_base is None else int(index_base)}
    return {}


def source_feature_names(source: str, *, label: str | int | None = None,
                         header: bool | None = None,
                         drop: Sequence[str | int] = ()) -> list[str] | None:
    """The feature names ``source`` carries (label column and ``drop``'s excluded), or
    ``None``."""
    if source.startswith("sklearn:"):
        import sklearn.datasets as skd

        loader = getattr(skd, f"load_{source.split(':', 1)[1]}", None)
        names = getattr(loader(), "feature_names", None) if loader is not None else None
        return [str(n) for n in names] if names is not None else None
    path = Path(source)
    if not path.is_file():
        from streamfs import datasets

        path = datasets.datasets_dir() / source / f"{source}.npz"  # a dataset name
        if not path.is_file():
            return None
    suffix = path.suffix.lower()
    if suffix in (".csv", ".tsv"):
        return DelimitedReader(path, label=label, header=header, drop=drop,
                               delimiter="\t" if suffix == ".tsv" else ",").feature_names
    if suffix == ".parquet":
        names = parquet_columns(open_parquet(path))
        li = label_index(names, label, len(names), path, "among the columns")
        return [names[j] for j in feature_columns(names, li, drop, len(names), path,
                                                  "among the columns")]
    if suffix == ".npz":
        try:
            with np.load(path, allow_pickle=False) as data:
                if "feature_names" in data:
                    names = npz_member(data, "feature_names", path)
                    return _once_each([str(v) for v in names.ravel()], path)
        except InputFileError:
            raise
        except Exception as exc:  # noqa: BLE001 - as read_npz: not an archive, truncated...
            raise InputFileError(f"{path}: not a readable .npz archive ({exc})") from None
        return None
    if suffix == ".mat":
        return _once_each(_mat_names(path), path)
    return None


def _once_each(names: list[str] | None, path: Path) -> list[str] | None:
    """``names`` stored with the data (``.npz``, ``.mat``), refused if one repeats (see
    :func:`~streamfs.producers.delimited.refuse_duplicate_names`)."""
    if names is not None:
        refuse_duplicate_names(names, f"{path}, feature names", kind="feature")
    return names


def _mat_names(path: Path) -> list[str] | None:
    import h5py

    if h5py.is_hdf5(path):
        return None  # v7.3 cell arrays of strings are references; not worth decoding here
    import scipy.io

    try:
        arrays = scipy.io.loadmat(path)
    except Exception:  # noqa: BLE001 - load_file reports unreadable files
        return None
    for key in ("feature_names", "featureNames", "names"):
        if key in arrays:
            return [_mat_string(v) for v in np.asarray(arrays[key], dtype=object).ravel()]
    return None


def _mat_string(value: Any) -> str:
    """A MATLAB cell entry: a char array, possibly wrapped in 1x1 object arrays."""
    while isinstance(value, np.ndarray) and value.dtype == object and value.size == 1:
        value = value.item()
    if isinstance(value, np.ndarray):
        return "".join(value.ravel().tolist()) if value.dtype.kind == "U" else str(value.tolist())
    return str(value)


def check_names(names: list[str] | None, n_columns: int, source: str) -> list[str] | None:
    """``names`` if there is one per column; a clear error otherwise."""
    if names is not None and len(names) != n_columns:
        raise InputFileError(f"{source}: {len(names)} feature names for {n_columns} columns")
    return names
