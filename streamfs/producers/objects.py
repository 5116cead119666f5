"""Python objects as datasets: numpy arrays, scipy.sparse matrices, pandas or polars
DataFrame/Series, pyarrow Table/Array (neither polars nor pyarrow is imported here).

>>> import pandas as pd
>>> frame = pd.DataFrame({"a": [1.0, 2.0], "b": [3, 4], "cls": ["x", "y"]})
>>> X, y, names = from_objects(frame, label="cls")
>>> X.tolist(), y.tolist(), names
([[1.0, 3.0], [2.0, 4.0]], ['x', 'y'], ['a', 'b'])
"""

from __future__ import annotations

from collections import Counter
from numbers import Real
from typing import Any

import numpy as np
import scipy.sparse as sp

from streamfs.algorithms._suggest import did_you_mean
from streamfs.algorithms._validation import (is_missing, label_array, lazy_problem,
                                             numbers_of_objects)
from streamfs.producers.checks import sendable
from streamfs.producers.errors import InputDataError, InputLabelError


def _is_frame(obj: Any) -> bool:
    """A pandas or polars DataFrame, or a pyarrow Table."""
    name = type(obj).__name__
    return ((name == "DataFrame" and hasattr(obj, "columns"))
            or (name == "Table" and hasattr(obj, "column_names")))


def _column_labels(X: Any) -> Any:
    """The column names of frame ``X`` (a pyarrow Table's ``columns`` are its columns)."""
    names = getattr(X, "column_names", None)
    return X.columns if names is None else names


def _column(X: Any, j: int) -> Any:
    """Column ``j`` of frame ``X``: a pandas or polars Series, a pyarrow ChunkedArray."""
    if hasattr(X, "iloc"):
        return X.iloc[:, j]
    return X.to_series(j) if hasattr(X, "to_series") else X.column(j)


def _null_count(values: Any) -> int | None:
    """The nulls of a polars Series (a method) or pyarrow array (a number); None for others
    (pandas' missing values are NaN, None or NA in the values)."""
    nulls = getattr(values, "null_count", None)
    if nulls is None:
        return None
    return int(nulls() if callable(nulls) else nulls)


def _numpy_values(values: Any, what: str) -> np.ndarray:
    """A pandas, polars or pyarrow column or Series as numpy: nullable dtypes (pandas' Int64,
    Float64, boolean; polars and pyarrow columns) as their numpy dtype when no value is missing;
    :class:`InputDataError` when some are (numpy would make them NaN, None or objects)."""
    if not hasattr(values, "to_numpy"):
        return np.asarray(values)
    nulls = _null_count(values)
    if nulls is not None:
        if nulls:
            raise InputDataError(f"{what}: {nulls} missing value(s) (null); fill or drop them")
        return np.asarray(values)  # pyarrow's to_numpy() refuses to copy unless told
    numpy_dtype = getattr(values.dtype, "numpy_dtype", None)  # pandas' nullable dtypes
    if numpy_dtype is None:
        return values.to_numpy()
    missing = int(values.isna().sum())
    if missing:
        raise InputDataError(f"{what}: {missing} missing value(s) (NA); fill or drop them")
    return values.to_numpy(dtype=numpy_dtype)


def _labels(y: Any) -> np.ndarray:
    if _is_frame(y):
        if y.shape[1] != 1:
            raise InputLabelError(f"y must be one label column (1-D), got a frame of shape "
                                  f"{tuple(y.shape)}: pass the label column alone")
        y = _column(y, 0)  # a one-column frame: the column vector scikit-learn takes
    categorical = getattr(getattr(y, "dtype", None), "categories", None) is not None  # pandas
    try:
        # label_array: a list of ints spanning int64 and uint64 would become floats
        arr = (_numpy_values(y, "the labels") if hasattr(y, "to_numpy")
               else label_array(y, "the labels"))
    except ValueError as exc:
        raise InputLabelError(str(exc)) from None
    if arr.dtype.kind == "U" and not isinstance(y, np.ndarray) and not hasattr(y, "to_numpy"):
        # numpy made every label of a list text: [1, "1"] would be one class
        items = np.asarray(y, dtype=object)
        if not all(isinstance(v, str) for v in items.ravel()):
            arr = items
    arr = arr.ravel() if arr.ndim == 2 and 1 in arr.shape else arr
    if arr.ndim != 1:
        raise InputDataError(f"labels must be 1-D, got shape {arr.shape}")
    if arr.dtype.kind == "O" and not any(_unusable(v) for v in arr):
        # pandas text / categorical labels: numpy text for the codec; numbers as numbers,
        # integers as integers (as floats, 2**53 and 2**53 + 1 were one class; beyond 64
        # bits they stay objects, which sendable_labels refuses naming one; booleans among
        # other numbers too, which label_problem names). Strings beside other values stay
        # objects, for label_problem to refuse: as text 1 and "1" were one class
        try:
            if all(isinstance(v, Real) for v in arr):
                arr = numbers_of_objects(arr, "the labels")
            else:
                strings = [isinstance(v, str) for v in arr]
                if all(strings) or (categorical and not any(strings)):  # pd.cut's intervals
                    arr = np.array([str(v) for v in arr])
        except ValueError as exc:
            raise InputLabelError(str(exc)) from None
    return arr  # missing or bytes labels stay as they are: label_problem names them


def _unusable(label: Any) -> bool:
    """A missing label (None, NaN, pandas' NA) or bytes: left for the label checks to name
    (as text, NA became the class "<NA>")."""
    return is_missing(label) or isinstance(label, bytes)


def _frame_features(X: Any) -> tuple[np.ndarray, list[str]]:
    """A DataFrame's feature values and column names; :class:`InputDataError` naming the
    columns that are duplicated, unnamed, not numeric or have missing values."""
    labels = _column_labels(X)
    names = [str(c) for c in labels]
    unnamed = [j for j, c in enumerate(labels) if c is None or (isinstance(c, float)
                                                               and np.isnan(c))]
    if unnamed:
        raise InputDataError(f"columns at position(s) {unnamed[:10]} have no name (None/NaN): "
                             "name every column, the results name features by them")
    unwritable = [j for j, n in enumerate(names) if not _utf8(n)]
    if unwritable:
        raise InputDataError(f"the names of columns at position(s) {unwritable[:10]} are not "
                             "valid Unicode text (lone surrogates)")
    dupes = sorted(n for n, k in Counter(names).items() if k > 1)
    if dupes:
        raise InputDataError(f"duplicate column names: {', '.join(dupes[:10])}")
    if not hasattr(X, "iloc"):
        return _arrow_like_features(X, names), names
    bad = [n for n, t in zip(names, X.dtypes) if not _numeric_column(t)]
    if bad:
        raise InputDataError(f"non-numeric feature column(s): {', '.join(bad[:5])}")
    plain = all(t.kind in "biuf" and not hasattr(t, "numpy_dtype") for t in X.dtypes)
    values = X.to_numpy() if plain else None
    if values is not None and (values.dtype.kind in "biuf" or not names):
        return values, names
    # nullable (Int64, Float64, boolean) and categorical columns, and bool columns among
    # numbers, one by one: as one array they become objects
    columns = [_numpy_values(X.iloc[:, j], f"column {n!r}") for j, n in enumerate(names)]
    return np.column_stack(columns), names


def _arrow_like_features(X: Any, names: list[str]) -> np.ndarray:
    """The values of a polars DataFrame or pyarrow Table, column by column (as one array,
    numbers beside booleans or text become objects); :class:`InputDataError` naming the
    columns that are not numeric, then the first with nulls (numpy would make them NaN)."""
    # not np.asarray(X): polars makes dates and durations numbers there
    columns = X.get_columns() if hasattr(X, "get_columns") else X.columns  # polars, pyarrow
    values = [c.to_numpy() for c in columns]
    bad = [n for n, v in zip(names, values) if v.dtype.kind not in "biuf"
           and not (v.dtype.kind == "O" and all(v_ is None or isinstance(v_, (bool, np.bool_))
                                                for v_ in v))]  # booleans with nulls
    if bad:
        raise InputDataError(f"non-numeric feature column(s): {', '.join(bad[:5])}")
    for n, c in zip(names, columns):
        _numpy_values(c, f"column {n!r}")  # the first column with nulls
    return np.column_stack(values) if values else np.empty((X.shape[0], 0))


def _numeric_column(dtype: Any) -> bool:
    """A column of numbers: a numeric dtype (nullable ones too) or categories that are
    numbers (as scikit-learn takes them)."""
    categories = getattr(dtype, "categories", None)
    if categories is not None:
        return categories.dtype.kind in "biuf"
    return dtype.kind in "biuf"


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _label_column(X: Any, label: str | int) -> Any:
    """The label column of frame ``X`` named ``label``, or at position ``label``."""
    columns = _column_labels(X)
    if label in columns:
        return label
    if isinstance(label, int) and not isinstance(label, bool) and -X.shape[1] <= label < X.shape[1]:
        return columns[label]
    raise InputDataError(f"label column {label!r} is not in the frame"
                         f"{did_you_mean(label, [str(c) for c in columns])} (columns: "
                         f"{', '.join(str(c) for c in columns[:10])}"
                         f"{' ...' if X.shape[1] > 10 else ''})")


def _split_label(X: Any, col: Any) -> tuple[Any, Any]:
    """The label column ``col`` of frame ``X``, and ``X`` without it."""
    if hasattr(X, "iloc"):  # pandas
        return X[col], X.drop(columns=[col])
    j = list(_column_labels(X)).index(col)
    rest = X.remove_column(j) if hasattr(X, "remove_column") else X.drop(col)  # pyarrow, polars
    return _column(X, j), rest


def from_objects(X: Any, y: Any = None, *, label: str | int | None = None
                 ) -> tuple[Any, np.ndarray, list[str] | None]:
    """``(X, y, feature_names)`` from in-memory data; :class:`InputDataError` naming what is
    wrong with it.

    ``X``: ndarray, scipy.sparse matrix/array, DataFrame (pandas or polars) or pyarrow Table
    (numeric columns, nullable ones without missing values; its label column named or indexed
    by ``label`` when ``y`` is None). ``y``: array-like, Series or pyarrow array. float16
    values are widened to float32.
    """
    names = None
    for value, what in ((X, "X"), (y, "y")):
        if (problem := lazy_problem(value, what)) is not None:
            raise InputDataError(problem)
    if _is_frame(X):
        if y is None:
            if label is None:
                raise InputDataError("a DataFrame needs y= or label= (the label column)")
            y, X = _split_label(X, _label_column(X, label))
        elif label is not None:
            raise InputDataError("give the labels as y= or as label= (a column), not both")
        X, names = _frame_features(X)
    elif sp.issparse(X):
        X = sp.csc_matrix(X) if X.format == "csc" else sp.csr_matrix(X)  # also *_array types
    else:
        X = np.asarray(X)
    if y is None:
        raise InputDataError("labels y are required")
    y = _labels(y)
    if X.ndim != 2:
        raise InputDataError(f"X must be 2-D (instances x features), got shape {X.shape}")
    if X.shape[0] != y.shape[0]:
        raise InputDataError(f"X has {X.shape[0]} rows but there are {y.shape[0]} labels")
    return sendable(X), y, names
