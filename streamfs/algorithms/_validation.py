"""Checks shared by the algorithms: parameter ranges, labels and column names.

Every algorithm class has one ``_validate_params()`` method built from these helpers. It runs
at the start of ``fit`` / ``partial_fit`` (constructors only store their arguments, as in
scikit-learn) and when :meth:`streamfs.algorithms.registry.AlgorithmSpec.build` creates an
algorithm for a stream. A bad value raises ``ValueError`` with one line naming the parameter,
the allowed values and the value given:

>>> check_number("alpha", -0.5, 0, 1, low_open=True, high_open=True)
Traceback (most recent call last):
...
ValueError: alpha must be a number in (0, 1), got -0.5
>>> check_int("k", 0, 1)
Traceback (most recent call last):
...
ValueError: k must be an integer >= 1, got 0

Numbers must be real numbers: strings, booleans and NaN are refused whatever the range.
"""

from __future__ import annotations

import functools
import math
from typing import Any, Callable, Sequence, TypeVar

import numpy as np
import scipy.sparse as sp
from sklearn.utils.multiclass import check_classification_targets

from streamfs.algorithms._suggest import did_you_mean

T = TypeVar("T")

__all__ = [
    "check_number",
    "check_int",
    "check_choice",
    "check_budget",
    "check_random_state",
    "check_bool",
    "check_state_algorithm",
    "check_label_types",
    "check_targets",
    "numbers_of_objects",
    "check_no_missing_labels",
    "check_finite_labels",
    "label_problem",
    "label_array",
    "check_integers_not_floats",
    "is_missing",
    "column_names",
    "check_frame",
    "lazy_problem",
    "group_members",
    "shown",
    "writable",
    "binary_sparse_tags",
]


def shown(value: Any) -> str:
    """``repr`` of a parameter value, with numpy scalars shown as Python ones."""
    if isinstance(value, np.generic):
        value = value.item()
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _is_bool(value: Any) -> bool:
    return isinstance(value, (bool, np.bool_))


def _is_real(value: Any) -> bool:
    """A real number: int or float (Python or numpy), not a bool, not NaN."""
    if _is_bool(value) or not isinstance(value, (int, float, np.integer, np.floating)):
        return False
    return not math.isnan(value)


def _interval(low: float | None, high: float | None, low_open: bool, high_open: bool) -> str:
    def num(v: float) -> str:
        return repr(int(v)) if float(v).is_integer() else repr(float(v))

    if low is not None and high is not None:
        return f"in {'(' if low_open else '['}{num(low)}, {num(high)}{')' if high_open else ']'}"
    if low is not None:
        return f"{'>' if low_open else '>='} {num(low)}"
    if high is not None:
        return f"{'<' if high_open else '<='} {num(high)}"
    return ""


def check_number(
    name: str,
    value: Any,
    low: float | None = None,
    high: float | None = None,
    *,
    low_open: bool = False,
    high_open: bool = False,
    allow_inf: bool = False,
    allow_none: bool = False,
) -> None:
    """``value`` is a real number in the interval (bounds ``None`` mean unbounded).

    ``allow_inf`` admits ``+inf`` on an unbounded upper side.

    >>> check_number("eta", "abc", 0, low_open=True)
    Traceback (most recent call last):
    ...
    ValueError: eta must be a finite number > 0, got 'abc'
    """
    if allow_none and value is None:
        return
    ok = _is_real(value)
    if ok:
        v = float(value)
        if math.isinf(v) and not (allow_inf and v > 0 and high is None):
            ok = False
        elif low is not None and (v < low or (low_open and v == low)):
            ok = False
        elif high is not None and (v > high or (high_open and v == high)):
            ok = False
    if not ok:
        what = "a number" if (high is not None or allow_inf) else "a finite number"
        rng = _interval(low, high, low_open, high_open)
        none = "None or " if allow_none else ""
        raise ValueError(f"{name} must be {none}{what}{' ' + rng if rng else ''}, "
                         f"got {shown(value)}")


def check_int(
    name: str, value: Any, low: int | None = None, high: int | None = None, *,
    allow_none: bool = False,
) -> None:
    """``value`` is an integer (``int`` or numpy integer, not a bool) in ``[low, high]``.

    >>> check_int("n_bins", 2.5, 2, allow_none=True)
    Traceback (most recent call last):
    ...
    ValueError: n_bins must be None or an integer >= 2, got 2.5
    """
    if allow_none and value is None:
        return
    ok = isinstance(value, (int, np.integer)) and not _is_bool(value)
    if ok and ((low is not None and value < low) or (high is not None and value > high)):
        ok = False
    if not ok:
        rng = _interval(low, high, False, False)
        none = "None or " if allow_none else ""
        raise ValueError(f"{name} must be {none}an integer{' ' + rng if rng else ''}, "
                         f"got {shown(value)}")


def check_choice(name: str, value: Any, choices: Sequence[Any]) -> None:
    """``value`` is one of ``choices`` (same type and equal: ``1`` is not ``True``).

    >>> check_choice("test", "chi2", ("fisher_z", "mi"))
    Traceback (most recent call last):
    ...
    ValueError: test must be one of 'fisher_z', 'mi', got 'chi2'
    >>> check_choice("test", "fisher", ("fisher_z", "mi"))
    Traceback (most recent call last):
    ...
    ValueError: test must be one of 'fisher_z', 'mi', got 'fisher' (did you mean 'fisher_z'?)
    """
    if not any(type(value) is type(c) and value == c for c in choices):
        listed = ", ".join(shown(c) for c in choices)
        raise ValueError(f"{name} must be one of {listed}, got {shown(value)}"
                         f"{did_you_mean(value, choices)}")


def check_bool(name: str, value: Any) -> None:
    """``value`` is ``True`` or ``False``."""
    if not _is_bool(value):
        raise ValueError(f"{name} must be True or False, got {shown(value)}")


def check_budget(name: str, value: Any) -> None:
    """``None``, an integer ``>= 1`` or a fraction (float) in ``(0, 1]``.

    >>> check_budget("n_features_to_select", -3)
    Traceback (most recent call last):
    ...
    ValueError: n_features_to_select must be None, an integer >= 1 or a fraction in (0, 1], got -3
    """
    if value is None:
        return
    if isinstance(value, (int, np.integer)) and not _is_bool(value) and value >= 1:
        return
    if isinstance(value, (float, np.floating)) and _is_real(value) and 0.0 < value <= 1.0:
        return
    raise ValueError(
        f"{name} must be None, an integer >= 1 or a fraction in (0, 1], got {shown(value)}"
    )


def check_random_state(name: str, value: Any) -> None:
    """``None``, an integer ``>= 0``, a ``numpy.random.Generator`` or a
    ``numpy.random.RandomState`` (scikit-learn's)."""
    if value is None or isinstance(value, (np.random.Generator, np.random.RandomState)):
        return
    if isinstance(value, (int, np.integer)) and not _is_bool(value) and value >= 0:
        return
    raise ValueError(
        f"{name} must be None, an integer >= 0, a numpy Generator or RandomState, got "
        f"{shown(value)}"
    )


def check_state_algorithm(state: Any, owner: str, accepted: Sequence[str], *,
                          default: str | None = None) -> str:
    """The algorithm a ``to_state()`` dict records (``default`` for states written before it
    was recorded); ``ValueError`` naming it and what ``owner.from_state`` restores when that is
    not one of ``accepted``.

    >>> check_state_algorithm({"algorithm": "SAOLA"}, "OFS", ["OFS"])
    Traceback (most recent call last):
    ...
    ValueError: OFS.from_state was given a state of algorithm 'SAOLA', not of 'OFS'
    """
    found = state.get("algorithm", default) if isinstance(state, dict) else None
    if found not in accepted:
        want = (shown(accepted[0]) if len(accepted) == 1
                else "one of " + ", ".join(shown(a) for a in accepted))
        what = ("a state that records no algorithm" if found is None
                else f"a state of algorithm {shown(found)}")
        raise ValueError(f"{owner}.from_state was given {what}, not of {want}")
    return found


def reads_state(from_state: Callable[..., T]) -> Callable[..., T]:
    """A ``from_state`` whose state lacks an entry it reads (not a ``to_state()`` dict, or a
    damaged one) raises ``ValueError`` naming the entry, not a bare ``KeyError``.

    >>> class Model:
    ...     @classmethod
    ...     @reads_state
    ...     def from_state(cls, state):
    ...         return state["params"]
    >>> Model.from_state({"algorithm": "Model"})
    Traceback (most recent call last):
    ...
    ValueError: Model.from_state was given a state without its 'params' entry (not a to_state() dict, or a damaged one)
    """
    @functools.wraps(from_state)
    def read(cls: Any, state: Any, *args: Any, **kwargs: Any) -> T:
        try:
            return from_state(cls, state, *args, **kwargs)
        except KeyError as e:
            raise ValueError(
                f"{cls.__name__}.from_state was given a state without its {e.args[0]!r} entry "
                "(not a to_state() dict, or a damaged one)") from e
    return read


# ------------------------------------------------------------------------------------ labels


def _listed(values: list, limit: int = 10) -> str:
    head = ", ".join(shown(v) for v in values[:limit])
    return head + (f", ... ({len(values)} in all)" if len(values) > limit else "")


def label_problem(y: Any, name: str, binary_only: bool = False, *, min_classes: int = 2,
                  continuous: bool = True) -> str | None:
    """Why the labels ``y`` cannot work for algorithm ``name`` (one line), or ``None``:
    missing labels (NaN, None), bytes (they travel as text only once decoded), strings
    mixed with numbers, fewer than ``min_classes`` classes, more than two for a
    ``binary_only`` learner and, unless ``continuous``, real-valued targets (every instance its own class: scikit-learn's
    ``check_classification_targets`` refuses them).

    >>> label_problem([1, 1, 1], "saola")
    'saola needs at least two classes: the labels have a single class (1)'
    >>> label_problem([0, 1, 2], "ofs", binary_only=True)
    'ofs is a binary classifier: the labels have 3 classes (0, 1, 2); map them to two classes first'
    >>> label_problem(["a", "b"], "ofs", binary_only=True) is None
    True
    >>> label_problem([0.5, 1.25], "kofsd", continuous=False)
    'kofsd takes class labels, not continuous values (such as 0.5): map them to classes first'
    """
    try:
        arr = label_array(y, "the labels")
    except ValueError as exc:
        return str(exc)
    if arr.ndim == 2 and 1 in arr.shape:
        arr = arr.ravel()
    if arr.ndim != 1:
        return f"the labels must be a 1-D sequence, got shape {arr.shape}"
    if arr.size == 0:
        return "the labels are empty"
    missing = _missing_labels(arr)
    if missing:
        what = "NaN" if arr.dtype.kind == "f" else "missing values (None, NaN or NA)"
        return f"the labels contain {what} ({missing} of {arr.size}); every instance needs a class"
    infinite = _infinite_labels(arr)
    if infinite:  # the worker refuses a class vector that is not finite
        return (f"the labels contain infinite values ({infinite} of {arr.size}); every "
                f"instance needs a finite class")
    if arr.dtype.kind == "S" or (arr.dtype.kind == "O" and any(isinstance(v, bytes) for v in arr)):
        return "the labels are bytes: decode them to text first (e.g. y.astype(str))"
    if len(label_kinds(arr)) > 1:
        return "the labels mix strings and numbers: use one type for every label"
    if len(_bool_kinds(arr)) > 1:
        return "the labels mix booleans and numbers (True and 1 would be one class): use one type"
    try:
        classes = [c.item() if isinstance(c, np.generic) else c for c in np.unique(arr)]
    except TypeError:
        return "the labels mix types that cannot be compared (e.g. numbers and strings)"
    k = len(classes)
    if k < min_classes:
        return (f"{name} needs at least two classes: the labels have a single class "
                f"({_listed(classes)})")
    if binary_only and k > 2:
        return (
            f"{name} is a binary classifier: the labels have {k} classes ({_listed(classes)}); "
            "map them to two classes first"
        )
    if not continuous:
        fractional = [c for c in classes if isinstance(c, float) and not c.is_integer()]
        if fractional:
            return (f"{name} takes class labels, not continuous values (such as "
                    f"{shown(fractional[0])}): map them to classes first")
    return None


def _bool_kinds(values: Any) -> set[bool]:
    """``{is a boolean}`` over the numeric labels ``values`` (an array or a sequence): two
    members, booleans beside other numbers (one numeric dtype cannot hold both: numpy made
    such booleans numbers already)."""
    if isinstance(values, np.ndarray) and values.dtype.kind != "O":
        return {values.dtype.kind == "b"} if values.size and values.dtype.kind in "biuf" else set()
    return {isinstance(v, (bool, np.bool_)) for v in np.asarray(values, dtype=object).ravel()
            if isinstance(v, (int, float, np.number, np.bool_))}


def label_kinds(values: Any) -> set[bool]:
    """``{is a string}`` over the labels ``values`` (an array or a sequence)."""
    if isinstance(values, np.ndarray) and values.dtype.kind != "O":
        return {values.dtype.kind in "US"} if values.size else set()
    items = values.ravel() if isinstance(values, np.ndarray) else values
    return {isinstance(v, (str, np.str_)) for v in items}


def check_label_types(y: Any, known: Sequence[Any] = ()) -> None:
    """scikit-learn's ``ValueError`` for labels that mix strings with numbers (or other
    values), in ``y`` or between ``y`` and the ``known`` labels of earlier blocks: such labels
    have no order (numpy's and Python's sorts raise a bare ``TypeError``) and are easily one
    class written two ways (``1`` and ``"1"``).

    >>> check_label_types(np.array(["a", 1], dtype=object))
    Traceback (most recent call last):
    ...
    ValueError: Mix of label input types (string and number)
    >>> check_label_types(np.array([2, 1]), known=["a"])
    Traceback (most recent call last):
    ...
    ValueError: Mix of label input types (string and number)
    >>> check_label_types(np.array([True, False]), known=[0, 1])
    Traceback (most recent call last):
    ...
    ValueError: Mix of label input types (boolean and number): True and 1 would be one class
    """
    if len(_bool_kinds(y) | _bool_kinds(known)) > 1:
        # with the known labels too: a block of True/False after one of 0/1 was taken as them
        raise ValueError("Mix of label input types (boolean and number): True and 1 would be "
                         "one class")
    if len(label_kinds(y) | label_kinds(known)) > 1:
        # text with gaps (pandas' NA, None) is not text mixed with numbers
        check_no_missing_labels(np.asarray(y, dtype=object))
        raise ValueError("Mix of label input types (string and number)")
    arr = label_array(y)  # a list's integers numpy would make floats: refused
    if len(known):
        # earlier blocks' integers with these: one 64-bit type must hold them all (a model's
        # classes_ is their array); the ends of an integer block stand for it
        if arr.dtype.kind == "O":
            ints = [v for v in arr.ravel().tolist()
                    if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))]
            ends = [min(ints), max(ints)] if ints else []
        elif arr.dtype.kind in "iu" and arr.size:
            ends = [arr.min().item(), arr.max().item()]
        else:
            ends = []
        label_array([*known, *ends])


def check_targets(y: np.ndarray, known: Sequence[Any] = ()) -> np.ndarray:
    """Class labels for a classifier, returned as the learner is to use them (numbers held as
    objects as a numeric array, see :func:`numbers_of_objects`): :func:`check_label_types`,
    then scikit-learn's ``check_classification_targets`` (which would fail on mixed labels
    with a bare ``TypeError``).

    >>> check_targets(np.array([1, 0, 1], dtype=object)).dtype
    dtype('int64')
    """
    check_label_types(y, known)
    # before scikit-learn's check: numbers with gaps held as objects it calls "unknown"
    check_finite_labels(y)
    y = numbers_of_objects(y)
    if y.ndim == 1 and y.dtype.kind in "biu":
        # integers are classes: scikit-learn would find them "binary" or "multiclass", after a
        # pass of its own over every block's labels (5 % of an instance stream's steps)
        return y
    check_classification_targets(y)
    return y


def check_no_missing_labels(y: np.ndarray) -> None:
    """``ValueError`` counting the missing labels (None, NaN, pandas' NA) of ``y``, if any."""
    missing = _missing_labels(y.ravel())
    if missing:
        raise ValueError(f"y contains missing labels (None, NaN or NA; {missing} of {y.size}): "
                         f"every instance needs a class")


def label_array(y: Any, what: str = "y") -> np.ndarray:
    """``np.asarray(y)`` for class labels, with ``ValueError`` where numpy would hold integer
    labels as floats: Python ints above 2**63 - 1 beside negative ones fit no 64-bit integer
    type, and as float64 neighbouring labels are one class.

    >>> label_array([2 ** 64 - 1, 2 ** 64 - 2, -1])
    Traceback (most recent call last):
    ...
    ValueError: y: integer labels from -1 to 18446744073709551615, which no 64-bit integer type holds together (as floats, neighbouring labels would be one class): map them to smaller classes first
    """
    if sp.issparse(y):  # numpy would make it a 0-d array of one object
        raise ValueError(f"{what} is a scipy.sparse matrix: pass the class labels as a dense "
                         "1-D array")
    arr = np.asarray(y)
    if not isinstance(y, np.ndarray):
        check_integers_not_floats(y, arr, what)
    return arr


def check_integers_not_floats(items: Any, arr: np.ndarray, what: str = "y") -> None:
    """``ValueError`` when ``arr``, numpy's array of the labels ``items`` (a sequence, or
    objects), is float although every label is an integer (see :func:`label_array`)."""
    if arr.dtype.kind != "f" or not arr.size or not np.nanmax(np.abs(arr)) >= 2.0 ** 63:
        return  # numpy makes ints floats only when they span more than one 64-bit type
    values = np.asarray(items, dtype=object).ravel().tolist()
    if all(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
           for v in values):
        raise ValueError(f"{what}: integer labels from {min(values)} to {max(values)}, which no "
                         f"64-bit integer type holds together (as floats, neighbouring labels "
                         f"would be one class): map them to smaller classes first")


def check_finite_labels(y: np.ndarray) -> None:
    """``ValueError`` counting the missing (None, NaN, NA) labels of ``y``, then its infinite
    ones, if any: one wording for every learner (scikit-learn's differ between fit and
    partial_fit, "NaN", "NaN or infinity", "infinity or a value too large").

    >>> check_finite_labels(np.array([0.0, np.inf, 1.0]))
    Traceback (most recent call last):
    ...
    ValueError: y contains infinite labels (1 of 3): every instance needs a finite label
    """
    if y.dtype.kind not in "fO":
        return
    check_no_missing_labels(y)
    infinite = _infinite_labels(y.ravel())
    if infinite:
        raise ValueError(f"y contains infinite labels ({infinite} of {y.size}): every instance "
                         f"needs a finite label")


def numbers_of_objects(y: np.ndarray, what: str = "y") -> np.ndarray:
    """Labels held as objects that are all numbers (or all booleans) as a numeric array,
    other arrays as they are: a pandas column of Python ints has dtype object, whose type
    scikit-learn calls "unknown", while the producers send its labels as numbers.

    >>> numbers_of_objects(np.array([2, 10], dtype=object)).tolist()
    [2, 10]
    >>> numbers_of_objects(np.array(["a", 1], dtype=object)).dtype
    dtype('O')
    """
    if y.dtype.kind != "O" or not y.size:
        return y
    items = y.ravel().tolist()
    flags = [isinstance(v, (bool, np.bool_)) for v in items]
    numbers = all(isinstance(v, (int, float, np.number)) for v in items)
    if not numbers or (any(flags) and not all(flags)):  # True and 1 would be one class
        return y
    out = np.array(items)
    check_integers_not_floats(items, out, what)
    return out.reshape(y.shape) if out.dtype.kind in "biuf" else y  # ints beyond 64 bits


def _infinite_labels(arr: np.ndarray) -> int:
    """How many of the labels ``arr`` are +-inf."""
    if arr.dtype.kind == "f":
        return int(np.count_nonzero(np.isinf(arr)))
    if arr.dtype.kind == "O":
        return sum(1 for v in arr if isinstance(v, float) and math.isinf(v))
    return 0


def _missing_labels(arr: np.ndarray) -> int:
    """How many of the labels ``arr`` are NaN or None."""
    if arr.dtype.kind == "f":
        return int(np.count_nonzero(np.isnan(arr)))
    if arr.dtype.kind == "O":
        return sum(1 for v in arr if is_missing(v))
    return 0


def is_missing(label: Any) -> bool:
    """Whether one label is missing: None, NaN or pandas' ``NA`` (whose truth value raises,
    so it would break the comparisons of any label it came to stand among).

    >>> import pandas as pd
    >>> [is_missing(v) for v in (None, float("nan"), pd.NA, 0, "a")]
    [True, True, True, False, False]
    """
    if label is None or (isinstance(label, (float, np.floating)) and math.isnan(label)):
        return True
    return type(label).__name__ == "NAType"  # pandas is not a dependency


# ------------------------------------------------------------------------------ column names


def column_names(X: Any) -> list[str] | None:
    """The column names of a data frame (pandas, polars, a pyarrow Table, ...) when they are
    all strings.

    ``None`` for arrays, sparse matrices and frames whose column names are not strings (the
    default ``0, 1, ...`` of pandas); frames that mix string and other names raise
    ``TypeError``, as in scikit-learn.
    """
    if isinstance(X, np.ndarray) or not hasattr(X, "shape"):
        return None  # (a polars LazyFrame would resolve its schema for its columns)
    cols = getattr(X, "column_names", None)  # a pyarrow Table's columns are its columns
    if cols is None:
        cols = getattr(X, "columns", None)
    if cols is None:
        return None
    names = list(cols)
    if not names:
        return None
    strs = [isinstance(c, str) for c in names]
    if all(strs):
        return names
    if any(strs):
        kinds = sorted({type(c).__name__ for c in names})
        raise TypeError(
            "feature names are only supported if all columns have string names, got the "
            f"column name types {kinds}; convert them with X.columns = X.columns.astype(str)"
        )
    return None


def _temporal(dtype: Any) -> bool:
    """A dtype of dates, times or durations: polars', numpy's and pandas', or pyarrow's."""
    is_temporal = getattr(dtype, "is_temporal", None)  # polars
    if callable(is_temporal):
        return bool(is_temporal())
    kind = getattr(dtype, "kind", None)
    if isinstance(kind, str):
        return kind in "mM"
    return str(dtype).startswith(("date", "timestamp", "time", "duration"))  # pyarrow


def lazy_problem(X: Any, what: str = "X") -> str | None:
    """Why ``X`` cannot be read as data because it is a lazy query (a polars LazyFrame), or
    None: numpy would make it one object."""
    if hasattr(X, "collect") and not hasattr(X, "shape"):
        return f"{what} is a {type(X).__name__}, a query not yet run: pass {what}.collect()"
    return None


def check_real(X: np.ndarray, what: str = "X") -> None:
    """``ValueError`` for an array of dates, durations or complex numbers, which numpy turns
    into numbers silently (day counts; the real part, with only a ComplexWarning), and which
    scikit-learn's ``check_array`` lets through (dates) or refuses (complex numbers) only
    where it is called: the streaming steps take numeric arrays as they are.

    >>> check_real(np.array(["2020-01-01"], dtype="datetime64[D]"))
    Traceback (most recent call last):
    ...
    ValueError: X holds dates or durations (dtype datetime64[D]): features are real numbers; convert them first (e.g. to days since a date)
    """
    kind = X.dtype.kind
    if kind in "mM":
        raise ValueError(f"{what} holds dates or durations (dtype {X.dtype}): features are real "
                         "numbers; convert them first (e.g. to days since a date)")
    if kind == "c":
        # (scikit-learn's words, which its estimator checks look for)
        raise ValueError(f"Complex data not supported: {what} holds complex numbers (dtype "
                         f"{X.dtype}), features are real numbers")


def check_frame(X: Any) -> None:
    """``ValueError`` for a lazy query (see :func:`lazy_problem`; scikit-learn called it a
    "scalar array") and naming the columns of data frame ``X`` that hold dates, times or
    durations: numpy makes a polars frame's numbers (days, microseconds, ...), which would be
    selected as features, and fails on pandas' and pyarrow's with a ``DTypePromotionError``.

    >>> import pandas as pd
    >>> check_frame(pd.DataFrame({"a": [1.0], "d": pd.to_datetime(["2020-01-01"])}))
    Traceback (most recent call last):
    ...
    ValueError: X has date, time or duration column(s) d: features are numbers; convert them first (e.g. to days since a date)
    """
    if (problem := lazy_problem(X)) is not None:
        raise ValueError(problem)
    if isinstance(X, np.ndarray):
        check_real(X)
        return
    if not hasattr(X, "shape") or len(X.shape) != 2:
        return
    dtypes = getattr(X, "dtypes", None)  # pandas, polars
    if dtypes is None:
        schema = getattr(X, "schema", None)  # a pyarrow Table
        dtypes = getattr(schema, "types", None)
    if dtypes is None:
        return
    names = getattr(X, "column_names", None)
    names = list(getattr(X, "columns", ()) if names is None else names)
    bad = [str(n) for n, t in zip(names, list(dtypes)) if _temporal(t)]
    if bad:
        raise ValueError(f"X has date, time or duration column(s) {', '.join(bad[:5])}"
                         f"{' ...' if len(bad) > 5 else ''}: features are numbers; convert them "
                         "first (e.g. to days since a date)")


def group_members(groups: Any, n_columns: int, what: str = "the block's columns"
                  ) -> list[np.ndarray]:
    """group-SAOLA's ``groups`` (a list of lists of column indices) as one int64 array per
    group, once they are checked to partition the columns ``0..n_columns-1``; ``ValueError``
    naming the culprit. Indices must be integers: ``np.asarray(g, dtype=np.int64)`` alone
    would read ``1.5`` as column 1 and a flat ``[0, 1, 2]`` as three groups.

    >>> group_members([[0, 1.5], [2]], 3)
    Traceback (most recent call last):
    ...
    ValueError: groups must be a list of lists of column indices (integers): group 0 has 1.5
    >>> group_members([[0, 1], [1, 2]], 3)
    Traceback (most recent call last):
    ...
    ValueError: groups must partition the block's columns 0..2 (each exactly once): column 1 is in groups 0 and 1
    """
    head = "groups must be a list of lists of column indices"
    if isinstance(groups, (str, bytes, dict)) or not hasattr(groups, "__len__"):
        raise ValueError(f"{head}, got {shown(groups)}")
    members = []
    for g, group in enumerate(groups):
        if isinstance(group, (str, bytes, dict)) or not hasattr(group, "__len__") or (
                isinstance(group, np.ndarray) and group.ndim != 1):
            raise ValueError(f"{head}: group {g} is {shown(group)}, not a list")
        if not (isinstance(group, np.ndarray) and group.dtype.kind in "iu"):
            bad = [v for v in group
                   if not isinstance(v, (int, np.integer)) or isinstance(v, (bool, np.bool_))]
            if bad:
                raise ValueError(f"{head} (integers): group {g} has {shown(bad[0])}")
        if not len(group):
            raise ValueError(f"groups must not be empty: group {g} has no columns")
        members.append(np.asarray(group, dtype=np.int64))
    flat = np.concatenate(members) if members else np.empty(0, dtype=np.int64)
    if flat.size == n_columns and np.array_equal(np.sort(flat), np.arange(n_columns)):
        return members
    where = f"groups must partition {what} 0..{n_columns - 1} (each exactly once)"
    seen = np.full(n_columns, -1, dtype=np.int64)
    for g, arr in enumerate(members):
        for j in arr.tolist():
            if not 0 <= j < n_columns:
                raise ValueError(f"{where}: group {g} has column {j}")
            if seen[j] >= 0:
                raise ValueError(f"{where}: column {j} is in groups {seen[j]} and {g}")
            seen[j] = g
    missing = np.flatnonzero(seen < 0)
    raise ValueError(f"{where}: column {missing[0]} is in no group "
                     f"({missing.size} column(s) missing)")


def writable(value: Any, _depth: int = 0) -> Any:
    """``value`` with read-only numpy arrays (e.g. memory-mapped by joblib when an estimator
    is unpickled with ``mmap_mode``) replaced by writable copies, inside dicts, lists, tuples
    and plain helper objects; the compiled kernels update the state arrays in place."""
    if isinstance(value, np.ndarray):
        return value if value.flags.writeable else value.copy()
    if _depth > 4:
        return value
    if isinstance(value, dict):
        for k, v in value.items():
            value[k] = writable(v, _depth + 1)
    elif isinstance(value, list):
        value[:] = [writable(v, _depth + 1) for v in value]
    elif isinstance(value, tuple):
        return tuple(writable(v, _depth + 1) for v in value)
    elif hasattr(value, "__dict__") and type(value).__module__.startswith("streamfs."):
        for k, v in vars(value).items():
            setattr(value, k, writable(v, _depth + 1))
    return value


def binary_sparse_tags(tags: Any) -> Any:
    """scikit-learn tags of a binary classifier that takes sparse input and needs labels."""
    tags.classifier_tags.multi_class = False
    tags.input_tags.sparse = True
    tags.target_tags.required = True
    return tags
