"""Read datasets from files into ``(X, y)``; errors name the file and the line or column."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp


class InputFileError(ValueError):
    """A data file that cannot be read; the message names the file and where."""


def load_file(source: str, *, label: str | int | None = None) -> tuple[Any, np.ndarray]:
    """Load ``(X, y)`` from a path, a dataset name of ``$STREAMFS_DATASETS`` or ``sklearn:NAME``.

    Formats by suffix: ``.npz`` (arrays ``X`` and ``y``), ``.csv``/``.tsv`` (label column by
    name or index, default the last), LIBSVM/svmlight (``.svm``, ``.libsvm``, ``.txt``; sparse),
    MATLAB ``.mat`` (v5 and v7.3; variables ``X``/``y`` or the first 2-D and 1-D arrays),
    ``.parquet`` (label column as for CSV).
    """
    if source.startswith("sklearn:"):
        return _sklearn(source.split(":", 1)[1])
    path = Path(source)
    if not path.exists():
        from streamfs import datasets

        if source in datasets.available():
            return datasets.load(source)
        raise InputFileError(f"{source}: no such file or dataset")
    suffix = path.suffix.lower()
    if suffix == ".npz":
        with np.load(path, allow_pickle=False) as data:
            if "X" not in data or "y" not in data:
                raise InputFileError(f"{path}: an .npz needs arrays 'X' and 'y', has {list(data)}")
            return data["X"], data["y"]
    if suffix in (".csv", ".tsv"):
        return read_csv(path, label=label, delimiter="\t" if suffix == ".tsv" else ",")
    if suffix in (".svm", ".libsvm", ".svmlight", ".txt"):
        return read_libsvm(path)
    if suffix == ".mat":
        return read_mat(path)
    if suffix == ".parquet":
        return read_parquet(path, label=label)
    raise InputFileError(f"{path}: unknown format {suffix!r}")


def _sklearn(name: str) -> tuple[np.ndarray, np.ndarray]:
    import sklearn.datasets as skd

    loader = getattr(skd, f"load_{name}", None)
    if loader is None:
        raise InputFileError(f"sklearn:{name}: scikit-learn has no bundled dataset {name!r}")
    X, y = loader(return_X_y=True)
    return np.asarray(X, dtype=np.float64), np.asarray(y)


def _label_index(header: list[str] | None, label: str | int | None, width: int, path: Path) -> int:
    if label is None:
        return width - 1
    if header is not None and str(label) in header:
        return header.index(str(label))
    try:
        idx = int(label)
    except ValueError:
        raise InputFileError(f"{path}: no label column named {label!r} in the header") from None
    if not -width <= idx < width:
        raise InputFileError(f"{path}: label column index {idx} outside 0..{width - 1}")
    return idx % width


def read_csv(path: Path, *, label: str | int | None = None, delimiter: str = ",",
             header: bool | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Numeric feature columns plus one label column (numbers or strings)."""
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh, delimiter=delimiter))
    rows = [r for r in rows if r]
    if not rows:
        raise InputFileError(f"{path}: empty file")
    if header is None:  # a header is a first row with a non-numeric field outside the label
        header = any(not _is_number(v) for v in rows[0][:-1]) or (
            label is not None and not str(label).lstrip("-").isdigit())
    names = [h.strip() for h in rows[0]] if header else None
    body = rows[1:] if header else rows
    width = len(rows[0])
    li = _label_index(names, label, width, path)
    X = np.empty((len(body), width - 1))
    y: list[str] = []
    first = 2 if header else 1
    for i, row in enumerate(body):
        if len(row) != width:
            raise InputFileError(f"{path}, line {i + first}: {len(row)} fields, expected {width}")
        y.append(row[li].strip())
        values = row[:li] + row[li + 1:]
        try:
            X[i] = [float(v) for v in values]
        except ValueError:
            bad = next(j for j, v in enumerate(values) if not _is_number(v))
            col = bad if bad < li else bad + 1
            name = f" ({names[col]!r})" if names else ""
            raise InputFileError(
                f"{path}, line {i + first}, column {col}{name}: not a number: {values[bad]!r}"
            ) from None
    return X, _labels(y)


def _is_number(v: str) -> bool:
    try:
        float(v)
        return True
    except ValueError:
        return False


def _labels(values: list[str]) -> np.ndarray:
    if all(_is_number(v) for v in values):
        arr = np.array([float(v) for v in values])
        return arr.astype(np.int64) if np.all(arr == np.round(arr)) else arr
    return np.array(values)


def read_libsvm(path: Path, n_features: int | None = None) -> tuple[sp.csr_matrix, np.ndarray]:
    """LIBSVM/svmlight: ``label idx:value ...`` per line, 1-based indices, sparse CSR."""
    indptr, indices, data, y = [0], [], [], []
    with open(path) as fh:
        for lineno, line in enumerate(fh, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            try:
                y.append(float(parts[0]))
                for item in parts[1:]:
                    idx, val = item.split(":", 1)
                    j = int(idx)
                    if j < 1:
                        raise ValueError(f"feature index {j} < 1")
                    indices.append(j - 1)
                    data.append(float(val))
            except ValueError as exc:
                raise InputFileError(f"{path}, line {lineno}: {exc}") from None
            indptr.append(len(indices))
    d = (max(indices) + 1 if indices else 0) if n_features is None else n_features
    X = sp.csr_matrix((np.asarray(data), np.asarray(indices, dtype=np.int64), np.asarray(indptr)),
                      shape=(len(y), d))
    X.sum_duplicates()
    yarr = np.asarray(y)
    return X, yarr.astype(np.int64) if np.all(yarr == np.round(yarr)) else yarr


def read_mat(path: Path) -> tuple[Any, np.ndarray]:
    """MATLAB .mat, v5 (scipy) or v7.3 (HDF5 via h5py; arrays are stored transposed)."""
    arrays: dict[str, Any] = {}
    try:
        import scipy.io

        arrays = {k: v for k, v in scipy.io.loadmat(path).items() if not k.startswith("__")}
    except NotImplementedError:  # v7.3
        import h5py

        with h5py.File(path, "r") as fh:
            arrays = {k: np.asarray(v).T for k, v in fh.items() if isinstance(v, h5py.Dataset)}
    except ValueError as exc:
        raise InputFileError(f"{path}: not a MATLAB file ({exc})") from None
    X = arrays.get("X")
    y = arrays.get("Y", arrays.get("y"))
    if X is None:
        X = next((v for v in arrays.values() if getattr(v, "ndim", 0) == 2 and min(v.shape) > 1), None)
    if y is None:
        y = next((v for v in arrays.values() if getattr(v, "ndim", 0) == 2 and min(v.shape) == 1), None)
    if X is None or y is None:
        raise InputFileError(f"{path}: needs a 2-D data variable and a label vector; has {list(arrays)}")
    return X, np.asarray(y).ravel()


def read_parquet(path: Path, *, label: str | int | None = None) -> tuple[np.ndarray, np.ndarray]:
    import pandas as pd

    frame = pd.read_parquet(path)
    li = _label_index(list(map(str, frame.columns)), label, frame.shape[1], path)
    y = frame.iloc[:, li].to_numpy()
    X = frame.drop(columns=frame.columns[li])
    try:
        return X.to_numpy(dtype=np.float64), y
    except (TypeError, ValueError) as exc:
        raise InputFileError(f"{path}: non-numeric feature column ({exc})") from None
