"""The class vector of a SAOLA-family selector (:mod:`streamfs.algorithms.saola`) as numbers:
label encoding and its checks."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from sklearn.exceptions import DataConversionWarning

from ._validation import (
    check_finite_labels,
    check_label_types,
    check_no_missing_labels,
    label_kinds,
    label_array,
    numbers_of_objects,
)

__all__ = ["encode_y", "non_integer"]


def encode_y(y: Any) -> tuple[np.ndarray, list[str] | None]:
    """Numeric class vector: numbers as they are, strings as their index in sorted order.

    Numbers held as Python objects (a pandas ``object`` column of ints, say) are numbers, not
    text. Integers that float64 cannot hold exactly (beyond 2**53) are taken as their distance
    from the smallest label, which leaves Pearson's r and the MI states as they are: as
    floats, neighbouring ones would be one class."""
    arr = label_array(y)
    if arr.ndim == 2 and 1 in arr.shape:
        warnings.warn("A column-vector y was passed when a 1d array was expected. Please "
                      "change the shape of y to (n_samples, ), for example using ravel().",
                      DataConversionWarning, stacklevel=8)  # the caller of fit / partial_fit
        arr = arr.ravel()
    if arr.ndim != 1 or len(arr) == 0:
        raise ValueError(f"y must be a non-empty 1-D vector of class labels, got shape "
                         f"{arr.shape}")
    # as scikit-learn: as text, 1 and "1" would silently become one class
    check_label_types(arr)
    # objects hold numbers (a pandas column of ints) or text (pandas' str, string and
    # category columns): only numbers are numbers
    wide = False
    if arr.dtype.kind == "O" and label_kinds(arr) == {False}:
        arr = numbers_of_objects(arr)
        wide = arr.dtype.kind == "O"
        if wide:
            _check_wide_integers(arr)
    if arr.dtype.kind in "iu" or wide:
        num = _exact_integer_labels(arr)
        classes = None
    elif arr.dtype.kind in "bf":
        num = arr.astype(np.float64)
        check_finite_labels(num)
        classes = None
    else:
        cls, inv = np.unique(arr.astype(str), return_inverse=True)
        num = inv.astype(np.float64)
        classes = [str(c) for c in cls]
    if len(np.unique(num)) < 2:
        raise ValueError("y has a single class; feature relevance is undefined")
    return num, classes


def non_integer(num: np.ndarray) -> float | None:
    """The first value of the numeric class vector ``num`` that is not an integer, or None:
    scikit-learn's "continuous" target."""
    frac = np.flatnonzero(num != np.floor(num))
    return float(num[frac[0]]) if frac.size else None


def _check_wide_integers(arr: np.ndarray) -> None:
    """``ValueError`` unless the labels ``arr``, objects that :func:`numbers_of_objects` left
    as they were, are integers (Python ints beyond 64 bits)."""
    bads = [v for v in arr if not isinstance(v, int) or isinstance(v, bool)]
    if not bads:
        return
    check_no_missing_labels(arr)
    bad = bads[0]
    if isinstance(bad, (float, np.number, bool, np.bool_)):
        raise ValueError("y mixes integers beyond 64 bits or booleans with other numbers: "
                         "use one type of number for every label")
    raise ValueError(f"y must hold numbers or strings, not {type(bad).__name__} ({bad!r})")


def _exact_integer_labels(arr: np.ndarray) -> np.ndarray:
    """Integer labels as float64: as they are when float64 holds them exactly (as the authors'
    implementation does), else as their distance from the smallest label; ``ValueError`` if
    two labels are one float even so."""
    if arr.dtype.kind != "O" and (arr.size == 0 or (int(arr.min()) >= -_EXACT_INT
                                                    and int(arr.max()) <= _EXACT_INT)):
        return arr.astype(np.float64)
    classes, inv = np.unique(arr, return_inverse=True)
    low = int(classes[0])
    offsets = np.array([float(int(c) - low) for c in classes])
    if len(np.unique(offsets)) < len(classes):
        raise ValueError(f"y has integer labels too far apart to tell apart as float64 "
                         f"(from {low} to {int(classes[-1])}): map them to classes first")
    return offsets[inv.ravel()]


#: the largest integer magnitude up to which float64 holds every integer exactly
_EXACT_INT = 2 ** 53
