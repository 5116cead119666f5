"""GDM on instance streams: a sliding window of instances, refitted every ``refit_every``.

:class:`GDMStream` keeps the most recent ``max_instances`` instances of an instance stream
(a sliding window: older instances are forgotten), and fits the batch
:class:`~streamfs.algorithms.gdm.GDM` on that window

* whenever the number of instances seen reaches a multiple of ``refit_every`` (a block that
  crosses several multiples is fitted once, at the last of them: the window at that instance
  count, exactly as if the block had been cut there; earlier fits would never be observed);
* at ``finish()`` (the stream's ``close``), on the whole window, unless the last fit was
  already on it.

Between fits the selection is that of the last fit (empty before the first one). A fit is
skipped when the window holds a single class (GDM needs two); the previous selection stays.
The selection has GDM's format: support features with their weight magnitude on standardised
features and their affiliated groups.

Memory. The window is stored dense, float64, ``max_instances × n_features × 8`` bytes (sparse
blocks are densified a few rows at a time as they are copied in), plus one label code per
instance. ``_validate_params`` refuses parameters whose window cannot fit in
``max_buffer_bytes`` (default 1 GiB), so an instance stream that asks for too much is refused
at ``open``. The buffer is allocated once at the first block; pages are committed by the
operating system as rows are written. ``fit`` (one block, known in full) holds only its rows,
if fewer: the window grows to ``max_instances`` if a ``partial_fit`` continues the stream. GDM's own working memory during a fit comes on top
(a few vectors of the window's length and a few columns of it, not a copy of the window).

Parameters are fixed once the stream has started: ``partial_fit`` and ``finish`` refuse
parameters changed since (``fit`` starts over with them), see
:mod:`streamfs.algorithms._stream_params`.

Labels: any two values; ``GDM`` maps them (sorted, the larger is ``+1``). A third class raises
``ValueError`` before anything is learned from the block.

State (:meth:`GDMStream.to_state`) is plain data. The window is laid out as one flat float64
sequence of rows ``[x_1 … x_d, label code]`` numbered from the first instance of the stream;
``"columns"`` maps chunk ``k`` to a copy of the values at flat positions ``[k·C, (k+1)·C)``
with ``C = 131072`` (1 MiB), for the complete chunks that overlap the window, and ``"tail"``
holds the incomplete last chunk. The column names of a learner fed data frames travel under
``"feature_names"`` (a list of ``str``, present only when there are names), as in the other
selectors' states. A complete chunk's values inside the window never change, so
the worker writes each chunk record once (``to_state(stored_columns=...)`` copies only the
chunks it does not hold yet) and deletes it when the window has moved past it
(values of instances already forgotten may read as 0). The last fit's support, weights and
affiliated groups are kept, so a restored learner gives the same ``selection()`` without
refitting, and the same selections afterwards (bit for bit).

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> X = rng.standard_normal((300, 12)); y = np.where(X[:, 2] - X[:, 7] > 0, 1, -1)
>>> model = GDMStream(n_features_per_step=2, refit_every=100, max_instances=250)
>>> for a in range(0, 290, 40):
...     _ = model.partial_fit(X[a:min(a + 40, 290)], y[a:min(a + 40, 290)])
>>> model.n_seen_, model.n_buffered_, model.last_fit_at_, model.n_refits_
(290, 250, 200, 2)
>>> _ = model.finish()
>>> sorted(s["feature"] for s in model.selection()), model.last_fit_at_
([2, 7], 290)
>>> GDMStream(n_features=2000)._validate_params()
Traceback (most recent call last):
...
ValueError: gdm window of max_instances=100000 x n_features=2000 x 8 bytes = 1600000000 bytes exceeds max_buffer_bytes=1073741824; use max_instances <= 67108 or a larger max_buffer_bytes
"""

from __future__ import annotations

import warnings
from collections.abc import Collection
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError
from sklearn.feature_selection import SelectorMixin
from sklearn.utils.validation import (check_consistent_length, check_is_fitted, column_or_1d,
                                      validate_data)

from ._stream_params import StreamParamsMixin
from ._validation import (_listed, check_int, check_frame, check_state_algorithm,
                          check_targets, label_array, reads_state)
from .gdm import GDM, _unnamed_gdm_state, selection_items
from .measures.columns import column_abs_max, value_problem

__all__ = ["GDMStream"]

#: float64 values per chunk record of the window (1 MiB)
CHUNK_VALUES = 131072
#: rows of a sparse block densified at once, and of a block swapped at a time (in values)
_WORK_VALUES = 1 << 20

_GDM_PARAMS = ("n_features_per_step", "tau", "C", "max_iter", "tol", "solver_tol",
               "solver_max_iter")


def _py(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def _reverse_rows(a: np.ndarray, lo: int, hi: int, block: int) -> None:
    """Reverse ``a[lo:hi]`` along axis 0 in place, with a temporary of ``block`` rows."""
    i, j = lo, hi
    while j - i >= 2:
        k = min(block, (j - i) // 2)
        top = a[i:i + k].copy()
        a[i:i + k] = a[j - k:j][::-1]
        a[j - k:j] = top[::-1]
        i += k
        j -= k


class GDMStream(SelectorMixin, StreamParamsMixin, BaseEstimator):
    """GDM refitted on a sliding window of an instance stream (see the module docstring).

    Parameters
    ----------
    n_features : int or None, default None
        ``d``, fixed when the stream opens (``None``: taken from the first block, and the
        memory rule is checked then).
    n_features_per_step, tau, C, max_iter, tol, solver_tol, solver_max_iter :
        :class:`~streamfs.algorithms.gdm.GDM`'s parameters, with its defaults.
    refit_every : int, default 1000
        Fit GDM on the window whenever the number of instances seen reaches a multiple of it.
    max_instances : int, default 100000
        Size of the sliding window: the most recent ``max_instances`` instances are kept.
    max_buffer_bytes : int, default 1 GiB
        Memory allowed for the window: ``max_instances * n_features * 8`` must not exceed it.

    Attributes
    ----------
    n_seen_ : instances seen; ``n_buffered_`` : instances in the window;
    n_refits_ : GDM fits run; ``last_fit_at_`` : ``n_seen_`` at the last fit (0: none yet);
    n_iter_ : cutting-plane iterations of the last fit (0: none yet);
    selected_, support_ : support features of the last fit, by decreasing ``|w|``;
    weights_, affiliated_, affiliated_corr_ : as in :class:`~streamfs.algorithms.gdm.GDM`.
    """

    def __init__(
        self,
        n_features: int | None = None,
        n_features_per_step: int = 10,
        tau: float = 0.25,
        C: float = 1.0,
        max_iter: int = 10,
        tol: float = 1e-3,
        solver_tol: float = 1e-6,
        solver_max_iter: int = 500,
        refit_every: int = 1000,
        max_instances: int = 100_000,
        max_buffer_bytes: int = 1 << 30,
    ) -> None:
        self.n_features = n_features
        self.n_features_per_step = n_features_per_step
        self.tau = tau
        self.C = C
        self.max_iter = max_iter
        self.tol = tol
        self.solver_tol = solver_tol
        self.solver_max_iter = solver_max_iter
        self.refit_every = refit_every
        self.max_instances = max_instances
        self.max_buffer_bytes = max_buffer_bytes

    _PARAMS = ("n_features", *_GDM_PARAMS, "refit_every", "max_instances", "max_buffer_bytes")

    # ------------------------------------------------------------------ parameters
    def _gdm(self) -> GDM:
        return GDM(**{p: getattr(self, p) for p in _GDM_PARAMS})

    def _validate_params(self, d: int | None = None, rows: int | None = None, *,
                         window: bool = True) -> None:
        """Types and ranges, then (``window``) the memory rule for a window of ``rows``
        instances (``max_instances`` if ``None``); ``ValueError`` with one line."""
        check_int("n_features", self.n_features, 1, allow_none=True)
        self._gdm()._validate_params()
        check_int("refit_every", self.refit_every, 1)
        check_int("max_instances", self.max_instances, 1)
        check_int("max_buffer_bytes", self.max_buffer_bytes, 1)
        d = self.n_features if d is None else d
        if d is None or not window:
            return
        window_is = (f"max_instances={int(self.max_instances)}" if rows is None
                     else f"{int(rows)} instances (the rows of X)")
        rows = int(self.max_instances) if rows is None else int(rows)
        need = rows * int(d) * 8
        if need > self.max_buffer_bytes:
            most = int(self.max_buffer_bytes) // (8 * int(d))
            fix = (f"use max_instances <= {most}" if most >= 1
                   else f"one instance needs {8 * int(d)} bytes")
            raise ValueError(
                f"gdm window of {window_is} x n_features={int(d)} "
                f"x 8 bytes = {need} bytes exceeds max_buffer_bytes="
                f"{int(self.max_buffer_bytes)}; {fix} or a larger max_buffer_bytes")

    # ------------------------------------------------------------------ buffer
    def _init(self, d: int, rows: int | None = None) -> None:
        """Open the stream with a window of ``rows`` instances (fewer than ``max_instances``:
        a batch fit's data, or such a fit's state; it grows to ``max_instances`` when a later
        block needs it) or of ``max_instances``."""
        rows = None if rows is None or rows >= self.max_instances else max(int(rows), 1)
        self._validate_params(d, rows)
        self._begin_stream_params()
        self.n_features_in_ = int(d)
        self.n_seen_ = 0
        self.n_refits_ = 0
        self.n_iter_ = 0
        self.last_fit_at_ = 0
        self.classes_seen_: list = []
        cap = int(self.max_instances) if rows is None else rows
        self._X = np.empty((cap, int(d)), dtype=np.float64)
        self._codes = np.empty(cap, dtype=np.float64)
        self._start = 0  # ring position of the oldest instance
        self.n_buffered_ = 0
        self._set_fit(np.zeros(0, np.int64), np.zeros(0), {}, {})

    def _set_fit(self, support, weights, affiliated, affiliated_corr) -> None:
        self.support_ = np.asarray(support, dtype=np.int64)
        self.weights_ = np.asarray(weights, dtype=np.float64)
        self.affiliated_ = affiliated
        self.affiliated_corr_ = affiliated_corr
        self.selected_ = self.support_

    def _codes_of(self, y: np.ndarray) -> np.ndarray:
        """Label codes (index into ``classes_seen_``); a third class raises before anything
        is changed."""
        values, first = np.unique(y, return_index=True)
        known = list(self.classes_seen_)
        new = [_py(values[i]) for i in np.argsort(first, kind="stable")
               if not any(values[i] == c for c in known)]
        if len(known) + len(new) > 2:
            listed = _listed(sorted(known + new, key=repr))
            raise ValueError(
                f"Only binary classification is supported: {type(self).__name__} got the labels of "
                f"{len(known) + len(new)} classes ({listed}); map them to two classes first")
        self.classes_seen_ = known + new
        codes = np.empty(y.shape[0], dtype=np.float64)
        for i, c in enumerate(self.classes_seen_):
            codes[y == c] = i
        return codes

    def _grow(self) -> None:
        """The window of a batch fit (its rows) at ``max_instances``, for a block beyond it:
        the memory rule of a stream's window applies from here."""
        self._validate_params(self.n_features_in_)
        self._ordered()
        n = self.n_buffered_
        X = np.empty((int(self.max_instances), self.n_features_in_), dtype=np.float64)
        codes = np.empty(int(self.max_instances), dtype=np.float64)
        X[:n], codes[:n] = self._X[:n], self._codes[:n]
        self._X, self._codes = X, codes

    def _append(self, X: Any, codes: np.ndarray, a: int, b: int) -> None:
        """Copy rows ``a:b`` of ``X`` (dense or CSR) into the window."""
        if self._X.shape[0] < self.max_instances and self.n_buffered_ + b - a > self._X.shape[0]:
            self._grow()
        cap = self._X.shape[0]
        self.n_seen_ += b - a
        if b - a >= cap:  # only the last cap rows stay
            a = b - cap
            self._start, self.n_buffered_ = 0, 0
        step = max(1, _WORK_VALUES // max(self.n_features_in_, 1))
        for lo in range(a, b, step):
            hi = min(b, lo + step)
            rows = X[lo:hi]
            rows = rows.toarray() if sp.issparse(rows) else rows
            m = hi - lo
            end = (self._start + self.n_buffered_) % cap
            first = min(m, cap - end)
            self._X[end:end + first] = rows[:first]
            self._codes[end:end + first] = codes[lo:lo + first]
            if first < m:
                self._X[:m - first] = rows[first:]
                self._codes[:m - first] = codes[lo + first:hi]
            over = self.n_buffered_ + m - cap
            if over > 0:
                self._start = (self._start + over) % cap
                self.n_buffered_ = cap
            else:
                self.n_buffered_ += m

    def _ordered(self) -> None:
        """Rotate the ring so that the window is ``_X[:n_buffered_]`` in arrival order."""
        s = self._start
        if s == 0:
            return
        n = self.n_buffered_  # == capacity: the ring only wraps when full
        block = max(1, _WORK_VALUES // max(self.n_features_in_, 1))
        _reverse_rows(self._X, 0, s, block)
        _reverse_rows(self._X, s, n, block)
        _reverse_rows(self._X, 0, n, block)
        self._codes[:n] = np.roll(self._codes[:n], -s)
        self._start = 0

    def _refit(self) -> None:
        n = self.n_buffered_
        if n < 2:
            return
        self._ordered()
        codes = self._codes[:n]
        if codes.min() == codes.max():
            return  # a single class in the window: GDM cannot fit, keep the last selection
        y = np.asarray(self.classes_seen_)[codes.astype(np.int64)]
        model = self._gdm().fit(self._X[:n], y)
        self._set_fit(model.support_, model.weights_, model.affiliated_, model.affiliated_corr_)
        self.n_refits_ += 1
        self.n_iter_ = int(model.n_iter_)
        self.last_fit_at_ = self.n_seen_

    def _check_values(self, X: Any, names: Any = None, first_row: int = 0) -> None:
        """``ValueError`` naming the features (with their ``names``) whose values a fit on a
        full window of ``max_instances`` could not standardise (see GDM's limit); it names
        columns, not rows (``first_row`` unused)."""
        problem = value_problem(column_abs_max(X), self.max_instances,
                                *GDM._value_limit(self.max_instances), names=names)
        if problem is not None:
            raise ValueError(problem)

    # ------------------------------------------------------------------ learning
    def partial_fit(self, X: Any, y: Any) -> "GDMStream":
        """Append the instances of ``X`` (dense or sparse, n × d; a data frame's columns name
        the features) with their labels; fit GDM when the count of instances seen reaches a
        multiple of ``refit_every``."""
        return self._partial_fit(X, y)

    def _partial_fit(self, X: Any, y: Any, window: int | None = None) -> "GDMStream":
        """:meth:`partial_fit`; ``window``: the rows of a stream's window, when it opens
        here, if fewer than ``max_instances`` (see :meth:`_init`, which checks its memory)."""
        self._validate_params(window=window is None)
        self._check_stream_params()
        first = not hasattr(self, "n_seen_")
        if first and self.n_features is not None and getattr(X, "ndim", 2) == 2 \
                and np.shape(X)[1] != self.n_features:
            raise ValueError(f"X has {np.shape(X)[1]} features, n_features is {self.n_features}")
        # scikit-learn's checks and messages (finite, numeric, 2-D; the width and the column
        # names of the first block on every later one)
        check_frame(X)
        X = validate_data(self, X, reset=first, accept_sparse="csr", dtype="numeric",
                          ensure_min_samples=0).astype(np.float64, copy=False)  # text refused
        self._check_values(X)
        y = column_or_1d(label_array(y), warn=True)
        check_consistent_length(X, y)
        if first:
            self._init(X.shape[1], window)
        n = X.shape[0]
        if n == 0:
            return self
        # as GDM.fit will, before anything is changed; labels of earlier blocks included
        y = check_targets(y, self.classes_seen_)
        codes = self._codes_of(y)
        r = int(self.refit_every)
        last = ((self.n_seen_ + n) // r) * r  # the last refit point this block reaches
        cut = last - self.n_seen_ if last > self.n_seen_ else 0
        for a, b, fit in ((0, cut, True), (cut, n, False)):
            if b > a:
                self._append(X, codes, a, b)
            if fit and cut:
                self._refit()
        return self

    def finish(self) -> "GDMStream":
        """Fit GDM on the window (the stream is closing), unless the last fit was on it; warn
        when no window of the stream could be fitted (it selects nothing). scikit-learn's
        ``NotFittedError`` before any ``partial_fit``, as the feature-stream selectors': there
        is no stream to end."""
        if not hasattr(self, "n_seen_"):
            raise NotFittedError(f"{type(self).__name__}: finish() called before any "
                                 "partial_fit (no stream to end)")
        self._check_stream_params()
        if self.last_fit_at_ != self.n_seen_:
            self._refit()
        if self.n_refits_ == 0 and self.n_seen_ > 0:
            warnings.warn(
                f"{type(self).__name__} selected nothing: no window of the stream held two "
                f"classes (max_instances={int(self.max_instances)}, {self.n_seen_} "
                f"instances seen, classes {_listed(self.classes_seen_)}), and GDM needs "
                "both to fit", UserWarning, stacklevel=2)
        return self

    def fit(self, X: Any, y: Any) -> "GDMStream":
        """Forget everything, stream ``X`` in one block, then :meth:`finish`."""
        self._validate_params(window=False)  # the window holds X's rows: checked with them
        if y is None:  # before scikit-learn's checks, which would call it a 0-d array
            raise ValueError(
                f"{type(self).__name__} requires y to be passed, but the target y is None"
            )
        for name in [a for a in vars(self) if a.endswith("_") or a in ("_X", "_codes", "_start")]:
            delattr(self, name)
        check_frame(X)
        n = validate_data(self, X, accept_sparse="csr", dtype="numeric").shape[0]  # 1 at least
        y = column_or_1d(label_array(y), warn=True)
        check_consistent_length(X, y)  # before the classes: a cut y may hold one class
        y = check_targets(y)
        if np.unique(y).size < 2:  # a stream may begin with one class; a fit cannot
            raise ValueError(f"{type(self).__name__} needs two classes, y has one class "
                             f"({_listed(np.unique(y))})")
        # a window of the rows it is given, not of max_instances: one block, known in full
        return self._partial_fit(X, y, window=n).finish()

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.target_tags.required = True
        return tags

    # ------------------------------------------------------------------ results
    def _get_support_mask(self) -> np.ndarray:
        check_is_fitted(self, "selected_")
        mask = np.zeros(self.n_features_in_, dtype=bool)
        mask[self.selected_] = True
        return mask

    def selection(self) -> list[dict]:
        """GDM's selection of the last fit (empty before it), same items as
        :meth:`GDM.selection <streamfs.algorithms.gdm.GDM.selection>`."""
        if not hasattr(self, "support_"):
            return []
        return selection_items(self)

    # ------------------------------------------------------------------ state
    def _flat(self, p: int, q: int) -> np.ndarray:
        """Values at flat positions ``[p, q)`` of the window's row sequence (0 outside it)."""
        w = self.n_features_in_ + 1
        row0 = self.n_seen_ - self.n_buffered_
        out = np.zeros(q - p, dtype=np.float64)
        first, last = max(p // w, row0), min((q - 1) // w, self.n_seen_ - 1)
        if last < first:
            return out
        cap = self._X.shape[0]
        ring = (self._start + np.arange(first - row0, last - row0 + 1)) % cap
        rows = np.empty((ring.size, w))
        rows[:, :-1] = self._X[ring]
        rows[:, -1] = self._codes[ring]
        flat = rows.ravel()
        lo = max(p, first * w)
        hi = min(q, (last + 1) * w)
        out[lo - p:hi - p] = flat[lo - first * w:hi - first * w]
        return out

    def _unflat(self, values: np.ndarray, p: int) -> None:
        """Write values at flat positions ``p, p + 1, …`` into the (ordered) window."""
        w = self.n_features_in_ + 1
        d = w - 1
        row0 = self.n_seen_ - self.n_buffered_
        q = p + values.size
        lo, hi = max(p, row0 * w), min(q, self.n_seen_ * w)
        if hi <= lo:
            return
        first, last = lo // w, (hi - 1) // w
        rows = np.empty((last - first + 1) * w)
        rows[lo - first * w:hi - first * w] = values[lo - p:hi - p]
        rows = rows.reshape(-1, w)
        # a partial row at either end keeps what is in the buffer already
        a, b = lo - first * w, hi - first * w
        r0, r1 = first - row0, last - row0 + 1
        full = self._X[r0:r1], self._codes[r0:r1]
        mask = np.zeros(rows.size, dtype=bool)
        mask[a:b] = True
        mask = mask.reshape(-1, w)
        full[0][...] = np.where(mask[:, :d], rows[:, :d], full[0])
        full[1][...] = np.where(mask[:, d], rows[:, d], full[1])

    def _state_params(self) -> dict:
        return {p: _py(getattr(self, p)) for p in self._PARAMS}

    def to_state(self, stored_columns: Collection[int] = ()) -> dict:
        """Plain-data snapshot; see the module docstring for the layout of the window.

        ``stored_columns``: chunk keys of ``"columns"`` that the caller already holds from an
        earlier state of this learner (a complete chunk's values never change while it is in
        the window); they map to ``None`` instead of a copy. The worker passes the chunks it
        has stored, so a checkpoint copies only the new ones."""
        state: dict = {"algorithm": "GDMStream", "params": self._state_params()}
        if not hasattr(self, "n_seen_"):
            return state
        w = self.n_features_in_ + 1
        a, b = (self.n_seen_ - self.n_buffered_) * w, self.n_seen_ * w
        tail_start = (b // CHUNK_VALUES) * CHUNK_VALUES
        if self._X.shape[0] < self.max_instances:  # a batch fit's window (streams': absent)
            state["window_rows"] = int(self._X.shape[0])
        state["counters"] = {
            "d": int(self.n_features_in_), "n_seen": int(self.n_seen_),
            "n_buffered": int(self.n_buffered_), "n_refits": int(self.n_refits_),
            "last_fit_at": int(self.last_fit_at_), "n_iter": int(self.n_iter_),
        }
        state["classes"] = [_py(c) for c in self.classes_seen_]
        state["fit"] = {
            "support": self.support_.copy(),
            "weights": self.weights_.copy(),
            "affiliated": {int(z): np.asarray(v, np.int64).copy()
                           for z, v in self.affiliated_.items()},
            "affiliated_corr": {int(z): np.asarray(v, np.float64).copy()
                                for z, v in self.affiliated_corr_.items()},
        }
        if hasattr(self, "feature_names_in_"):
            state["feature_names"] = [str(n) for n in self.feature_names_in_]
        state["tail"] = self._flat(tail_start, b)
        stored = set(stored_columns)
        state["columns"] = {k: None if k in stored else self._flat(k * CHUNK_VALUES,
                                                                    (k + 1) * CHUNK_VALUES)
                            for k in range(a // CHUNK_VALUES, b // CHUNK_VALUES)}
        return self._put_stream_params(state)

    @classmethod
    @reads_state
    def from_state(cls, state: dict) -> "GDMStream":
        """Rebuild a learner from :meth:`to_state` output."""
        check_state_algorithm(state, cls.__name__, ["GDMStream"], default=_unnamed_gdm_state(state))
        p, later = cls._stream_params_of(state)
        # a parameter added after the state was written takes its default
        model = cls(**{k: p[k] for k in cls._PARAMS if k in p})
        model._validate_params()
        c = state.get("counters")
        if c is None:
            return model
        model._init(int(c["d"]), state.get("window_rows"))
        model.n_seen_ = int(c["n_seen"])
        model.n_buffered_ = int(c["n_buffered"])
        model.n_refits_ = int(c["n_refits"])
        model.last_fit_at_ = int(c["last_fit_at"])
        model.n_iter_ = int(c.get("n_iter", 0))  # (states before it was kept: 0)
        model.classes_seen_ = list(state["classes"])
        names = state.get("feature_names")  # absent: no names (and states before they were kept)
        if names is not None:
            model.feature_names_in_ = np.asarray([str(n) for n in names], dtype=object)
        f = state["fit"]
        model._set_fit(
            f["support"], f["weights"],
            {int(z): np.asarray(v, np.int64) for z, v in f["affiliated"].items()},
            {int(z): np.asarray(v, np.float64) for z, v in f["affiliated_corr"].items()},
        )
        w = model.n_features_in_ + 1
        b = model.n_seen_ * w
        for k, values in state.get("columns", {}).items():
            if values is None:
                raise ValueError(f"chunk {k} of the window is missing: a state taken with "
                                 "stored_columns needs those chunks put back first")
            model._unflat(np.asarray(values, dtype=np.float64), int(k) * CHUNK_VALUES)
        model._unflat(np.asarray(state["tail"], dtype=np.float64),
                      (b // CHUNK_VALUES) * CHUNK_VALUES)
        model._set_later_params(later)
        return model
