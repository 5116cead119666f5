"""Python objects as datasets: numpy arrays, scipy.sparse matrices, pandas DataFrame/Series.

>>> import pandas as pd
>>> frame = pd.DataFrame({"a": [1.0, 2.0], "b": [3, 4], "cls": ["x", "y"]})
>>> X, y, names = from_objects(frame, label="cls")
>>> X.tolist(), y.tolist(), names
([[1.0, 3.0], [2.0, 4.0]], ['x', 'y'], ['a', 'b'])
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp


def _is_frame(obj: Any) -> bool:
    return type(obj).__name__ == "DataFrame" and hasattr(obj, "columns")


def _labels(y: Any) -> np.ndarray:
    arr = y.to_numpy() if hasattr(y, "to_numpy") else np.asarray(y)
    arr = arr.ravel() if arr.ndim == 2 and 1 in arr.shape else arr
    if arr.ndim != 1:
        raise ValueError(f"labels must be 1-D, got shape {arr.shape}")
    if arr.dtype.kind == "O":  # pandas text / categorical labels: numpy text for the codec
        kinds = {type(v) for v in arr}
        arr = np.array([str(v) for v in arr]) if not kinds <= {int, float, bool} else arr.astype(float)
    return arr


def from_objects(X: Any, y: Any = None, *, label: str | int | None = None
                 ) -> tuple[Any, np.ndarray, list[str] | None]:
    """``(X, y, feature_names)`` from in-memory data.

    ``X``: ndarray, scipy.sparse matrix/array, or DataFrame (numeric columns; its label column
    named or indexed by ``label`` when ``y`` is None). ``y``: array-like or Series.
    """
    names = None
    if _is_frame(X):
        if y is None:
            if label is None:
                raise ValueError("a DataFrame needs y= or label= (the label column)")
            col = label if label in X.columns else X.columns[int(label)]
            y, X = X[col], X.drop(columns=[col])
        bad = [str(c) for c in X.columns if X[c].dtype.kind not in "biuf"]
        if bad:
            raise ValueError(f"non-numeric feature column(s): {', '.join(bad[:5])}")
        names = [str(c) for c in X.columns]
        X = X.to_numpy()
    elif sp.issparse(X):
        X = sp.csc_matrix(X) if X.format == "csc" else sp.csr_matrix(X)  # also *_array types
    else:
        X = np.asarray(X)
    if y is None:
        raise ValueError("labels y are required")
    y = _labels(y)
    if X.ndim != 2 or X.shape[0] != y.shape[0]:
        raise ValueError(f"X of shape {X.shape} does not match {y.shape[0]} labels")
    return X, y, names
