"""Shared surface of the feature-stream selectors (SAOLA family, K-OFSD).

A feature stream fixes the instances (and the class vector ``y``) and delivers features one
block of columns at a time. Every selector:

* stores its constructor parameters only (learned attributes end in ``_``); the parameters are
  checked by ``_validate_params()`` at the start of ``fit`` and ``partial_fit``, and are fixed
  once the stream has started: ``partial_fit`` refuses parameters changed since then, ``fit``
  starts over with them (:mod:`streamfs.algorithms._stream_params`);
* learns from one block with ``partial_fit(X_block, y)``: the first call fixes ``y``, later
  calls may pass ``y`` again (it must be equal) or ``None``; columns get global indices
  ``n_features_seen_, n_features_seen_ + 1, ...`` in arrival order;
* ends the stream with ``finish()`` (end-of-stream rules such as a fallback selection);
  ``fit(X, y)`` is ``partial_fit`` on the whole matrix followed by ``finish()``;
* round-trips exactly through ``to_state()`` / ``from_state()``. The state is plain data
  (dict keys ``str`` or ``int``; values ``None``, ``bool``, ``int`` (64-bit), ``float``, ``str``,
  ``bytes``, lists, dicts and numpy arrays), which ``streamfs.codec`` encodes bit-exactly. The
  stored columns of kept features live under the key ``"columns"`` as ``{feature_index: 1-D
  array}`` so that the worker can persist them one record per feature.

scikit-learn. The selectors are scikit-learn estimators (``BaseEstimator`` + ``SelectorMixin``):
``clone``, ``get_params`` / ``set_params``, pipelines and grid search, ``fit_transform``,
``set_output(transform="pandas")`` and ``get_feature_names_out()`` work as usual.
``n_features_in_`` is the number of columns seen so far (``n_features_seen_``). Fitted on
pandas data frames whose column names are strings, a selector records them in
``feature_names_in_``; since each ``partial_fit`` block brings *new* columns, the names
accumulate block by block and ``feature_names_in_`` is their concatenation in arrival order (a
name seen in an earlier block is refused; blocks with and without names cannot be mixed: the
names are then dropped with a warning). The names travel in ``to_state()`` under
``"feature_names"`` (a list of ``str``, present only when there are names).

``transform`` keeps the selected columns *in output order* (the order of ``selected_``), and
``get_feature_names_out()`` and ``get_support(indices=True)`` follow the same order.

>>> import numpy as np, pandas as pd
>>> rng = np.random.default_rng(0)
>>> y = rng.integers(0, 2, 200)
>>> from streamfs.algorithms.saola import SAOLA
>>> sel = SAOLA().partial_fit(pd.DataFrame({"noise": rng.normal(size=200)}), y)
>>> sel = sel.partial_fit(pd.DataFrame({"signal": y + 0.3 * rng.normal(size=200)}))
>>> sel.feature_names_in_.tolist(), sel.n_features_in_, sel.get_feature_names_out().tolist()
(['noise', 'signal'], 2, ['signal'])
"""

from __future__ import annotations

import warnings
from abc import abstractmethod
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError
from sklearn.feature_selection import SelectorMixin
from sklearn.utils.validation import (check_array, check_consistent_length, check_is_fitted,
                                      validate_data)

from ._stream_params import StreamParamsMixin
from ._validation import check_frame, column_names, writable
from .measures.columns import DBL_MAX

# sparse formats kept as they are where values are checked (others become CSR: a DOK or LIL
# matrix cannot be checked for NaN)
_SPARSE = ("csr", "csc", "coo")


def _check_lengths(X: Any, y: Any) -> None:
    """scikit-learn's error when a block's instances and the labels given with it differ in
    number, before the labels' own checks: a cut ``y`` was refused as holding a single class
    where its length was the mistake."""
    try:
        n_labels = len(y)
    except TypeError:  # None, a scalar: the labels' own checks say what is wrong
        return
    if getattr(X, "ndim", 2) == 2 and n_labels and not isinstance(y, (str, bytes)):
        check_consistent_length(X, y)  # (a column given as 1-D: the column's own check)


class FeatureStreamSelector(SelectorMixin, StreamParamsMixin, BaseEstimator):
    """Base class: selection bookkeeping shared by every feature-stream algorithm."""

    #: global 0-based indices of the selected features, in the algorithm's output order
    selected_: np.ndarray
    #: number of columns received so far
    n_features_seen_: int

    def _value_limit(self, n_rows: int) -> tuple[float, str]:
        """The largest ``|x|`` a block of columns of length ``n_rows`` may hold, and what
        needs the limit (the producer checks a whole stream against it before publishing).
        By default only finite values."""
        return DBL_MAX, ""

    def _unused_params(self) -> dict[str, str]:
        """The parameters the current setting does not use, each with the setting that does
        (SAOLA's ``delta`` with Fisher's z: ``"test='mi'"``); none by default."""
        return {}

    def _params_advice(self) -> str | None:
        """What the stream's start warns of (and a producer before it publishes, see
        :func:`streamfs.algorithms.opening.open_advice`): parameters set away from their
        defaults that the setting does not use, silently ignored before; or None.

        >>> from streamfs.algorithms.saola import SAOLA
        >>> SAOLA(delta=0.1)._params_advice()
        "SAOLA(test='fisher_z') ignores delta=0.1 (used with test='mi' only)"
        >>> SAOLA(test="mi", delta=0.1)._params_advice() is None
        True
        """
        import inspect

        defaults = inspect.signature(type(self).__init__).parameters
        unused = self._unused_params()
        moved = [f"{name}={getattr(self, name)!r} (used with {users} only)"
                 for name, users in unused.items()
                 if getattr(self, name) != defaults[name].default]
        if not moved:
            return None
        setting = ", ".join(f"{key}={getattr(self, key)!r}" for key in self._setting_params)
        return f"{type(self).__name__}({setting}) ignores {' and '.join(moved)}"

    #: the parameters that decide which others are used (:meth:`_unused_params`)
    _setting_params: tuple[str, ...] = ()

    # ------------------------------------------------------------------ to implement
    @abstractmethod
    def _validate_params(self) -> None:
        """Check the constructor parameters (types and ranges); ``ValueError`` naming one."""

    @abstractmethod
    def _partial_fit(self, X: Any, y: Any = None, **kwargs: Any) -> None:
        """Consume one validated block of new columns (numeric ndarray or scipy.sparse)."""

    @abstractmethod
    def _reset(self) -> None:
        """Forget everything learned (keep parameters and scikit-learn's own settings)."""

    @abstractmethod
    def to_state(self) -> dict:
        """Plain-data snapshot of parameters and learned state (dicts, lists, numbers,
        numpy arrays): ``streamfs.codec.packb`` turns it into bytes, ``unpackb`` back."""

    @classmethod
    @abstractmethod
    def from_state(cls, state: dict) -> "FeatureStreamSelector":
        """Rebuild an instance that continues exactly where ``to_state`` was taken."""

    @abstractmethod
    def selection(self) -> list[dict]:
        """The current selection as ``[{"feature": int, "score": float,
        "affiliated": [[feature, strength], ...]}, ...]`` in output order."""

    # ------------------------------------------------------------------ learning
    def partial_fit(self, X: Any, y: Any = None) -> "FeatureStreamSelector":
        """Consume one block of new columns (dense array, scipy.sparse or data frame); a
        1-D array is one new column."""
        return self._stream_step(X, y)

    def finish(self) -> "FeatureStreamSelector":
        """Apply end-of-stream rules (the default has none); scikit-learn's
        ``NotFittedError`` before any ``partial_fit``: there is no stream to end; a parameter
        changed since the stream began is refused, as by the steps."""
        self._check_started()
        self._check_stream_params()
        return self

    def _check_started(self) -> None:
        if not hasattr(self, "n_features_seen_"):
            raise NotFittedError(f"{type(self).__name__}: finish() called before any "
                                 "partial_fit (no stream to end)")

    def fit(self, X: Any, y: Any) -> "FeatureStreamSelector":
        """Run the whole stream ``X`` (columns in order) from a fresh state."""
        return self._batch_fit(X, y)

    def _stream_step(self, X: Any, y: Any, **kwargs: Any) -> "FeatureStreamSelector":
        self._validate_params()
        self._check_stream_params()
        X, names = self._begin_block(X, batch=False)
        _check_lengths(X, y)
        started = hasattr(self, "n_features_seen_")
        before = int(getattr(self, "n_features_seen_", 0))
        try:
            self._partial_fit(X, y, **kwargs)
        except BaseException:
            # a refused first block leaves no stream behind (its y, parameters and an empty
            # selection would otherwise stay: a retry with a corrected y was refused as "y
            # differs", and the selector looked fitted); later blocks are refused before
            # they change anything
            if not started:
                self._reset()
            raise
        self._end_block(names, before)
        return self

    def _batch_fit(self, X: Any, y: Any, **kwargs: Any) -> "FeatureStreamSelector":
        self._validate_params()
        if y is None:
            raise ValueError(
                f"{type(self).__name__} requires y to be passed, but the target y is None"
            )
        self._reset()
        try:
            X, names = self._begin_block(X, batch=True)
            _check_lengths(X, y)
            self._partial_fit(X, y, **kwargs)
            self._end_block(names, 0)
            return self.finish()
        except BaseException:
            self._reset()  # a refused fit leaves no half-started stream
            raise

    def _begin_block(self, X: Any, batch: bool) -> tuple[Any, list[str] | None]:
        """Convert a block to a numeric ndarray or sparse matrix; check its column names."""
        check_frame(X)
        names = column_names(X)
        if batch:
            # the whole stream at once: scikit-learn's input rules (2-D, at least one column
            # and two instances); NaN and inf are refused by the algorithm's own block check
            X = check_array(X, accept_sparse=True, dtype="numeric", ensure_all_finite=False,
                            ensure_min_samples=2, ensure_min_features=1, input_name="X")
        elif not (sp.issparse(X) or (isinstance(X, np.ndarray) and X.dtype.kind in "biuf")):
            X = check_array(X, accept_sparse=True, dtype="numeric", ensure_all_finite=False,
                            ensure_2d=False, ensure_min_samples=1, ensure_min_features=0,
                            input_name="X")
        if names is not None:
            seen = set(getattr(self, "feature_names_in_", ()))
            dup = [n for n in names if n in seen]
            if not dup and len(set(names)) != len(names):
                dup = sorted({n for n in names if names.count(n) > 1})
            if dup:
                raise ValueError(
                    f"column name {dup[0]!r} appears twice in the stream: each block must bring "
                    "new, uniquely named columns"
                )
        return X, names

    def _end_block(self, names: list[str] | None, before: int) -> None:
        """Record the block's column names after it was processed; set ``n_features_in_``."""
        total = int(self.n_features_seen_)
        n_cols = total - before
        if names is not None and n_cols > 0:
            if before == 0:
                self.feature_names_in_ = np.asarray(names, dtype=object)
            elif hasattr(self, "feature_names_in_"):
                self.feature_names_in_ = np.concatenate(
                    [self.feature_names_in_, np.asarray(names, dtype=object)])
            else:
                warnings.warn(
                    f"X has feature names, but {type(self).__name__} received earlier blocks "
                    "without names: the names are ignored",
                    UserWarning, stacklevel=3,
                )
        elif n_cols > 0 and hasattr(self, "feature_names_in_"):
            warnings.warn(
                f"X does not have valid feature names, but {type(self).__name__} received "
                "earlier blocks with names: feature_names_in_ is dropped",
                UserWarning, stacklevel=3,
            )
            del self.feature_names_in_
        self.n_features_in_ = total

    def __setstate__(self, state: dict) -> None:
        # an estimator unpickled from a memory map has read-only arrays: the kernels update
        # the learned state in place, so it gets writable copies
        super().__setstate__(state)
        for name, value in vars(self).items():
            setattr(self, name, writable(value))

    # ------------------------------------------------------------------ state helpers
    def _names_state(self, state: dict) -> dict:
        if hasattr(self, "feature_names_in_"):
            state["feature_names"] = [str(n) for n in self.feature_names_in_]
        return state

    def _restore_names(self, state: dict) -> None:
        if hasattr(self, "n_features_seen_"):
            self.n_features_in_ = int(self.n_features_seen_)
        names = state.get("feature_names")
        if names is not None:
            self.feature_names_in_ = np.asarray([str(n) for n in names], dtype=object)

    # ------------------------------------------------------------------ selection
    def _get_support_mask(self) -> np.ndarray:
        check_is_fitted(self, "selected_")
        mask = np.zeros(self.n_features_seen_, dtype=bool)
        mask[np.asarray(self.selected_, dtype=np.int64)] = True
        return mask

    def get_support(self, indices: bool = False) -> np.ndarray:
        """Boolean mask over the features seen so far, or the selected indices (output
        order)."""
        if indices:
            check_is_fitted(self, "selected_")
            return np.asarray(self.selected_, dtype=np.int64)
        return self._get_support_mask()

    def transform(self, X: Any) -> Any:
        """Keep the selected columns of ``X`` (in output order)."""
        check_is_fitted(self, "selected_")
        _check_width(self, X, self.n_features_seen_)
        X = validate_data(self, X, reset=False, accept_sparse=_SPARSE, dtype=None,
                          ensure_all_finite=True)
        cols = np.asarray(self.selected_, dtype=np.int64)
        return take_columns(X, cols)

    def inverse_transform(self, X: Any) -> Any:
        """Put the columns of a transformed ``X`` back at their places, zeros elsewhere."""
        check_is_fitted(self, "selected_")
        return _inverse(self, X, np.asarray(self.selected_, dtype=np.int64),
                        int(self.n_features_seen_))

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        """Names of the selected features in output order (``x<i>`` without names)."""
        check_is_fitted(self, "selected_")
        names = _input_names(self, input_features, int(self.n_features_seen_))
        return names[np.asarray(self.selected_, dtype=np.int64)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.target_tags.required = True
        return tags


# ------------------------------------------------------------------ helpers shared with GDM


def _check_width(est: Any, X: Any, n: int) -> None:
    """The number of columns, before scikit-learn's checks (which would say the same without
    "seen"); frames with names are left to those checks, which compare the names first."""
    shape = getattr(X, "shape", None)
    if shape is not None and len(shape) == 2 and shape[1] != n and column_names(X) is None:
        raise ValueError(
            f"X has {shape[1]} features, but {type(est).__name__} is expecting {n} features "
            f"as input (the selector has seen {n} features)"
        )


def _input_names(est: Any, input_features: Any, n: int) -> np.ndarray:
    known = getattr(est, "feature_names_in_", None)
    if input_features is None:
        if known is not None:
            return np.asarray(known, dtype=object)
        return np.asarray([f"x{i}" for i in range(n)], dtype=object)
    names = np.asarray(input_features, dtype=object)
    if names.ndim != 1 or names.size != n:
        raise ValueError(
            f"input_features should have length equal to number of features ({n}), "
            f"got {names.size}"
        )
    if known is not None and not np.array_equal(names, known):
        raise ValueError("input_features is not equal to feature_names_in_")
    return names


def take_columns(X: Any, cols: np.ndarray) -> Any:
    """The columns ``cols`` of a validated ``X``, in that order. Sparse input comes back as
    CSR of the same container (``csr_array`` or ``csr_matrix``), as scikit-learn's selectors
    return it; no column at all is warned about, as they warn (the estimator next in a
    pipeline would otherwise fail on zero features with no word of why)."""
    if len(cols) == 0:
        warnings.warn("No features were selected: either the data is too noisy or the "
                      "selection test too strict.", UserWarning, stacklevel=3)
    if sp.issparse(X):
        return X.tocsr()[:, cols]
    return np.asarray(X)[:, cols]


def _inverse(est: Any, X: Any, cols: np.ndarray, n: int) -> Any:
    check_is_fitted(est)
    X = check_array(X, accept_sparse=_SPARSE, dtype=None, ensure_min_features=0)
    if X.shape[1] != cols.size:
        raise ValueError(
            f"X has {X.shape[1]} columns but {type(est).__name__} selected {cols.size} features"
        )
    if sp.issparse(X):
        # a csc_matrix, as scikit-learn's SelectorMixin.inverse_transform gives (OFS uses it)
        place = sp.csr_matrix(
            (np.ones(cols.size), (np.arange(cols.size), cols)), shape=(cols.size, n)
        )
        return sp.csc_matrix(sp.csr_matrix(X) @ place, dtype=X.dtype)
    out = np.zeros((X.shape[0], n), dtype=X.dtype)
    out[:, cols] = X
    return out
