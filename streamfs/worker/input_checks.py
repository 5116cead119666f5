"""Checks of an input message's fields that need no stream state: each refuses with
:class:`InvalidInput`, whose text is the dead letter's reason."""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from streamfs.algorithms._validation import label_array
from streamfs.codec import Undecodable, bin_keys_problem


#: a reason longer than this is cut: many quote the input, which can be megabytes
REASON_CHARS = 2000


#: the largest run or version a stream may continue from: a JSON reader's exact integers
MAX_COUNTER = 2**53 - 1


class InvalidInput(ValueError):
    """An input message that goes to the dead-letter topic; the text is the reason."""


def clipped(text: str, limit: int = REASON_CHARS) -> str:
    """``text``, cut to ``limit`` characters and said so where it is longer."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… (cut: {len(text)} characters in all)"


def check_feature_names(names: Any, n: int, what: str) -> list[str]:
    if not isinstance(names, list) or len(names) != n:
        got = f"{len(names)} entries" if isinstance(names, list) else type(names).__name__
        raise InvalidInput(f"{what} must be a list of {n} strings (one per feature), got {got}")
    bad = next((i for i, v in enumerate(names) if not isinstance(v, str)), None)
    if bad is not None:
        raise InvalidInput(f"{what} must be a list of {n} strings (one per feature), got "
                           f"{type(names[bad]).__name__} {clipped(repr(names[bad]), 80)} at "
                           f"position {bad}")
    if len(set(names)) != n:  # two features of a result under one name (producers refuse it)
        seen: set[str] = set()
        twice = next(name for name in names if name in seen or seen.add(name))
        raise InvalidInput(f"{what} names {clipped(repr(twice), 80)} more than once: every "
                           f"feature needs a name of its own")
    return names


def unnamed_rule(message: dict) -> dict:
    """How features without a name are named: ``prefix + str(index + base)``; producers of
    LIBSVM files send prefix "" and the file's index base, so names are the indices as written."""
    prefix, base = message.get("name_prefix", "x"), message.get("name_base", 0)
    if not isinstance(prefix, str):
        raise InvalidInput(f"'name_prefix' must be a string, got {prefix!r}")
    if not isinstance(base, int) or isinstance(base, bool) or base < 0:
        raise InvalidInput(f"'name_base' must be an integer >= 0, got {base!r}")
    return {"names": None, "prefix": prefix, "base": base}


#: known fields in a message of the wrong kind (stream topic, message kind), and where they
#: belong: ignored, their data was lost without a word
MISPLACED = {
    ("features", "close"): {"X": "a 'features' block", "y": "the 'open'",
                            "names": "a 'features' block", "columns": "a 'features' block",
                            "groups": "a 'features' block"},
    ("instances", "close"): {"X": "an 'instances' block", "y": "an 'instances' block"},
    ("features", "open"): {"feature_names": "an instance stream's 'open'; a feature stream's "
                                            "blocks name their columns in 'names'"},
}


#: the fields the worker reads in each kind of input message (beside the envelope's)
READ = {
    "open": ("algorithm", "params", "y", "n_features", "feature_names", "replace",
             "continue_from", "name_prefix", "name_base"),
    "features": ("X", "groups", "columns", "names"),
    "instances": ("X", "y"),
}


def undecodable_field(message: dict) -> str | None:
    """Why a field the worker reads could not be decoded, or None; one it does not read is
    ignored (so is its value). A key written as msgpack bin is named: its field was missing
    in the reason the worker gave ('must carry the class vector 'y'')."""
    binary = bin_keys_problem(message)
    if binary:
        return binary
    for name in READ.get(message["kind"], ()):
        value = message.get(name)
        if isinstance(value, Undecodable):
            return f"{name!r} could not be decoded ({value.reason})"
    return None


def misplaced_fields(topic: str, message: dict) -> str | None:
    """What a message carries that belongs in another kind of message, or None."""
    wrong = MISPLACED.get((topic, message["kind"]), {})
    found = [f"{name!r} (it belongs in {wrong[name]})" for name in wrong
             if message.get(name) is not None]
    if not found:
        return None
    return f"{message['kind']!r} carries {', '.join(found)}, which it does not read"


def check_replace(message: dict) -> None:
    """Refuses an ``open`` whose ``replace`` is not a boolean: ``1`` was taken as no replace,
    and the reason said to send replace=true."""
    replace = message.get("replace")
    if replace is not None and not isinstance(replace, bool):
        raise InvalidInput(f"'replace' must be a boolean (true to start a new run of the "
                           f"stream id), got {type(replace).__name__} "
                           f"{clipped(repr(replace), 80)}")


def continue_from(message: dict) -> tuple[int, int] | None:
    """The run and version of the stream id's latest result as the producer read them from the
    results topic (``continue_from`` of an ``open``), or None."""
    value = message.get("continue_from")
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) != {"run", "version"}:
        raise InvalidInput(f"'continue_from' must be a map with 'run' and 'version' only, "
                           f"got {value!r}")
    for name, number in value.items():
        # bounded: the run after it and the versions after it are written and published
        if (not isinstance(number, int) or isinstance(number, bool) or number < 0
                or number > MAX_COUNTER):
            raise InvalidInput(f"'continue_from' {name!r} must be an integer from 0 to "
                               f"2^53 - 1, got {number!r}")
    return value["run"], value["version"]


def group_runs(groups: Any, n_columns: int) -> dict:
    """The groups and group ids of a group-saola block from its ``groups`` (one id a column):
    a group is a run of equal ids, so an id that comes back after another is refused."""
    if isinstance(groups, np.ndarray) and groups.ndim == 1 and groups.dtype.kind in "iu":
        groups = groups.tolist()  # an integer array, as 'columns' may be one
    if groups is None:
        raise InvalidInput("a group-saola block needs 'groups': one group id per column")
    if not isinstance(groups, list) or len(groups) != n_columns:
        got = (f"{len(groups)} ids" if isinstance(groups, list) else
               f"an array of shape {groups.shape} and dtype {groups.dtype}"
               if isinstance(groups, np.ndarray) else type(groups).__name__)
        raise InvalidInput(f"a group-saola block's 'groups' must give one group id (an integer "
                           f"or a string) per column, {n_columns} here; got {got}")
    # a block of no columns has no group (the first run began at index 0 even without one)
    starts = [i for i in range(len(groups)) if i == 0 or groups[i] != groups[i - 1]]
    ids = [groups[a] for a in starts]
    seen: set = set()
    for gid in ids:
        if not isinstance(gid, (int, str)) or isinstance(gid, bool):
            raise InvalidInput(f"group ids must be integers or strings, got {gid!r}")
        if gid in seen:
            raise InvalidInput(f"group id {gid!r} comes back after another group in 'groups': "
                               f"a group's columns must be contiguous in the block (one run of "
                               f"equal ids)")
        seen.add(gid)
    bounds = starts + [len(groups)]
    return {"groups": [np.arange(a, b) for a, b in zip(bounds, bounds[1:])], "group_ids": ids}


#: what the ``X`` of each kind of block must be
BLOCK_ARRAY = {"features": "'X' of a feature block must be a 2-D array (N x columns)",
               "instances": "'X' of an instance block must be a 2-D array (instances x d)"}


def block_array(X: Any, kind: str) -> Any:
    """The ``X`` of a ``features`` or ``instances`` block (``kind``), if it is a 2-D array
    (dense or sparse)."""
    if not (isinstance(X, np.ndarray) or sp.issparse(X)) or X.ndim != 2:
        raise InvalidInput(BLOCK_ARRAY[kind])
    return X


def block_groups(groups: Any, algorithm: str, n_columns: int) -> dict:
    """The ``partial_fit`` keywords a feature block's ``groups`` give its ``algorithm``
    (:func:`group_runs` for group-saola); ``groups`` sent to another algorithm are refused,
    not ignored."""
    if algorithm == "group-saola":
        return group_runs(groups, n_columns)
    if groups is not None:
        raise InvalidInput(f"'groups' apply to group-saola streams only, not to {algorithm!r}")
    return {}


def source_columns(columns: Any, n_columns: int) -> np.ndarray | None:
    """A feature block's ``columns`` (the source column index of each of its ``n_columns``
    columns) as int64, or None where it has none: distinct integers from 0 to 2^63 - 1."""
    if columns is None:
        return None
    columns = np.asarray(columns)
    if n_columns == 0 and columns.shape == (0,):
        # a block of no columns maps nothing (an empty list decodes as floats: it was refused)
        return None
    if columns.shape != (n_columns,) or columns.dtype.kind not in "iu":
        raise InvalidInput("'columns' must list one source column index per column")
    if columns.size and columns.min() < 0:
        raise InvalidInput(f"'columns' holds a negative source column index "
                           f"({int(columns.min())})")
    if columns.size and int(columns.max()) > np.iinfo(np.int64).max:
        # uint64 beyond int64: stored as int64 they wrapped to negative ids
        raise InvalidInput(f"'columns' holds a source column index beyond 2^63 - 1 "
                           f"({int(columns.max())})")
    unique, counts = np.unique(columns, return_counts=True)
    if (counts > 1).any():
        raise InvalidInput(f"'columns' names source column {int(unique[counts > 1][0])} "
                           f"more than once: each column of a block is another source column")
    return columns.astype(np.int64)


def check_finite(arr: Any, what: str) -> None:
    values = arr.data if sp.issparse(arr) else np.asarray(arr)
    if values.dtype.kind == "f" and not np.isfinite(values).all():
        raise InvalidInput(f"{what} contains NaN or infinite values")


def check_labels(y: Any, what: str) -> np.ndarray:
    if isinstance(y, list):
        if not y:
            raise InvalidInput(f"{what} is empty")
        kinds = {type(v) for v in y}
        other = kinds - {str, int, float, bool}
        if other:
            raise InvalidInput(f"{what} holds {sorted(k.__name__ for k in other)} values: a "
                               f"label is a string or a number")
        if not (kinds <= {str} or kinds <= {int, float} or kinds == {bool}):
            # True and 1 would become one class in the array below: refused as the producers
            # and the estimators refuse them
            raise InvalidInput(f"{what} mixes label types {sorted(k.__name__ for k in kinds)}")
        try:
            y = label_array(y, what)
        except ValueError as exc:  # ints spanning int64 and uint64 would have become floats
            raise InvalidInput(str(exc)) from None
    if not isinstance(y, np.ndarray) or y.ndim != 1:
        raise InvalidInput(f"{what} must be a 1-D array or list of labels")
    check_finite(y, what)
    return y
