"""One-vs-rest over the binary full-input learners of :mod:`streamfs.algorithms.ofs`, for
instance streams of more than two classes."""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin, clone
from sklearn.feature_selection import SelectorMixin
from sklearn.utils.validation import (
    check_array,
    check_consistent_length,
    check_is_fitted,
    column_or_1d,
    validate_data,
)

from streamfs.algorithms._stream_params import StreamParamsMixin
from streamfs.algorithms._stream_params import _same as _same_param
from streamfs.algorithms._stream_params import kept
from streamfs.algorithms.base import _SPARSE
from streamfs.algorithms.instance_input import is_series, not_one_instance
from streamfs.algorithms.instance_stream import (
    InstanceStreamSelector,
    _block_labels,
    _names_in,
    _one_label,
    _py,
)
from streamfs.algorithms.ofs import _REGISTRY, _PartialMixin
from streamfs.algorithms._validation import (
    check_frame,
    check_label_types,
    check_state_algorithm,
    check_targets,
    column_names,
    label_array,
    reads_state,
    shown,
)

__all__ = [
    "OneVsRest",
]


class OneVsRest(StreamParamsMixin, MetaEstimatorMixin, ClassifierMixin, SelectorMixin,
                BaseEstimator):
    """One-vs-rest wrapper for more than two classes (full-input learners only).

    One binary copy of ``estimator`` (its parameters, fresh state) per class ``c`` learns
    ``y == c`` against the rest; ``predict`` takes the class of the largest score (ties: the
    first class in ``classes_``). A class that first appears mid-stream gets a new learner from
    that instance on, with the others' dimension and feature names (pass ``classes`` to open
    every learner at the start). ``selection()`` is
    the union of the supports, each feature scored by its largest-magnitude weight over the
    classes, by decreasing ``|score|``.

    A scikit-learn classifier and feature selector like the learners it wraps: ``fit`` is one
    pass from a fresh state with every class of ``y`` open from the first row (as scikit-learn's
    ``OneVsRestClassifier``), ``classes_`` is sorted, ``transform`` keeps the union of the
    supports, ``decision_function`` has one column per class (for two classes, scikit-learn's
    single column: the second class's score minus the first's). River-style ``learn_one``,
    ``predict_one`` and ``transform_one`` too.

    Once the stream is open its parameters are fixed, as the learners' own are: ``classes``
    and the wrapped estimator's parameters (``estimator__eta``, ...; every learner, also one
    opened later, is a clone of it), refused by the next ``partial_fit`` / ``learn_one`` when
    changed (``fit`` starts over with them).

    Parameters
    ----------
    estimator : OFS, PerceptronTruncation or RandomSelection
        The binary full-input learner each class gets a clone of (its ``classes`` is set to
        ``[False, True]``).
    classes : list or None, default None
        Labels whose learners open at the start; other labels open a learner when they first
        come.

    >>> from streamfs.algorithms.ofs import OFS
    >>> X = np.eye(3).repeat(20, axis=0)
    >>> y = np.array(["a", "b", "c"]).repeat(20)
    >>> m = OneVsRest(OFS(1)).partial_fit(X, y)
    >>> m.predict(np.eye(3)).tolist(), len(m.selection()), m.transform(X).shape
    (['a', 'b', 'c'], 3, (60, 3))
    """

    def __init__(self, estimator: InstanceStreamSelector, classes: list | None = None) -> None:
        self.estimator = estimator
        self.classes = classes

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.target_tags.required = True
        return tags

    # ------------------------------------------------------------------ learners
    def _check_estimator(self) -> None:
        if not isinstance(self.estimator, InstanceStreamSelector) or isinstance(
                self.estimator, _PartialMixin):
            raise ValueError(
                "one-vs-rest needs a full-input learner (shared observations): OFS, "
                f"PerceptronTruncation or RandomSelection, got {shown(self.estimator)}")

    def _open(self, labels: Any) -> None:
        """A learner for each label not seen yet, kept in ``classes_`` order (sorted)."""
        if not hasattr(self, "learners_"):
            self._check_estimator()
            self._begin_stream_params()
            self._labels: list = []
            self.learners_: list[InstanceStreamSelector] = []
            if self.classes is not None:
                labels = [*(np.asarray(c).item() for c in self.classes), *labels]
        for label in labels:
            if label not in self._labels:
                check_label_types(np.asarray([label], dtype=object), self._labels)
                at = int(np.searchsorted(np.asarray(self._labels, dtype=object), label)) \
                    if self._labels else 0
                self._labels.insert(at, label)
                self.learners_.insert(at, self._new_learner())

    @contextlib.contextmanager
    def _classes_kept_on_refusal(self) -> Iterator[None]:
        """Undo the classes (and learners) a refused call opened: a label that came with a
        refused instance is not a class of the stream (``predict`` then failed on its
        learner, which had learned nothing)."""
        had = "learners_" in vars(self)
        labels, learners = (list(self._labels), list(self.learners_)) if had else ([], [])
        try:
            yield
        except BaseException:
            if had:
                self._labels, self.learners_ = labels, learners
            else:
                for attr in ("learners_", "_labels", "_stream_params_"):
                    self.__dict__.pop(attr, None)
            raise

    def _started_peer(self) -> InstanceStreamSelector | None:
        """A learner that has started (its dimension and names are every learner's)."""
        return next((m for m in getattr(self, "learners_", ()) if hasattr(m, "d_")), None)

    def _new_learner(self) -> InstanceStreamSelector:
        learner = clone(self.estimator).set_params(classes=[False, True])
        peer = self._started_peer()
        if peer is not None:
            # the learners see the same instances and must number their features alike: one
            # opened mid-stream takes the others' dimension (dict input needs it) and names
            # (dict input names features in the order they first come: it would start afresh)
            learner.set_params(n_features=peer.d_)
            if hasattr(peer, "feature_names_in_"):
                learner.feature_names_in_ = peer.feature_names_in_.copy()
            elif "_partial_names" in vars(peer):
                learner._partial_names = peer._partial_names.copy()
        return learner

    # ------------------------------------------------------------------ fixed parameters
    def _stream_snapshot(self, estimator: Any, classes: Any) -> dict:
        """The parameters a stream keeps: ``classes``, the wrapped estimator's class and its
        parameters as ``estimator__<name>`` (containers copied: a list changed in place is a
        change)."""
        snap = {"classes": kept(classes), "estimator": type(estimator).__name__}
        for k, v in estimator.get_params(deep=False).items():
            snap[f"estimator__{k}"] = kept(v)
        return snap

    def _begin_stream_params(self) -> None:
        self._stream_params_ = self._stream_snapshot(self.estimator, self.classes)

    def _changed_params(self) -> dict[str, tuple[Any, Any]]:
        started = self.__dict__.get("_stream_params_")
        if started is None:
            return {}
        est = self.estimator
        # the attributes themselves, not get_params (too slow before every learn_one)
        now = {k: getattr(est, k[len("estimator__"):], None) for k in started
               if k.startswith("estimator__")}
        now["classes"], now["estimator"] = self.classes, type(est).__name__
        return {k: (v, now[k]) for k, v in started.items()
                if now[k] is not v and not _same_param(v, now[k])}

    def _stream_estimator(self) -> InstanceStreamSelector:
        """The wrapped estimator with the parameters the stream started with."""
        started = self._stream_params_
        params = {k[len("estimator__"):]: v for k, v in started.items()
                  if k.startswith("estimator__")}
        return _REGISTRY[started["estimator"]](**params)

    @property
    def classes_(self) -> np.ndarray:
        """The labels seen so far (or given by ``classes``), sorted; ``learners_`` in the same
        order."""
        if not hasattr(self, "_labels"):
            raise AttributeError("classes_ is available once the learner has seen data")
        return np.asarray(self._labels)

    @property
    def n_features_in_(self) -> int:
        """The learners' number of features (they all see the same rows)."""
        for m in getattr(self, "learners_", ()):
            if hasattr(m, "n_features_in_"):
                return m.n_features_in_
        raise AttributeError("n_features_in_ is available once the learner has seen data")

    @property
    def feature_names_in_(self) -> np.ndarray:
        """The learners' feature names (a data frame's column names)."""
        for m in getattr(self, "learners_", ()):
            if hasattr(m, "feature_names_in_"):
                return m.feature_names_in_
        raise AttributeError("feature_names_in_ is set when the learner saw named columns")

    # ------------------------------------------------------------------ scikit-learn API
    def fit(self, X: Any, y: Any) -> "OneVsRest":
        """One pass over the rows of ``X`` in order, from fresh learners: one for each class
        of ``y`` (and of ``classes``) from the first row."""
        self._check_estimator()
        if y is None:
            raise ValueError("OneVsRest requires y to be passed, but the target y is None")
        check_frame(X)
        checked = check_array(X, accept_sparse=_SPARSE, dtype="numeric", ensure_all_finite=True,
                              ensure_min_samples=1, input_name="X")
        y = column_or_1d(label_array(y), warn=True)
        check_consistent_length(checked, y)
        y = check_targets(y)
        if np.unique(y).size < 2 and self.classes is None:
            raise ValueError(f"OneVsRest needs at least two classes: the labels have 1 class "
                             f"({shown(_py(y[0]))})")
        for attr in ("learners_", "_labels", "_stream_params_"):
            self.__dict__.pop(attr, None)
        # fit sees every label: each class's learner learns every row, as a learner of a
        # binary y == c does (opened at a class's first row, it missed the rows before it)
        return self.partial_fit(X if column_names(X) is not None else checked, y,
                                classes=[_py(c) for c in np.unique(y)])

    def partial_fit(self, X: Any, y: Any, classes: Any = None) -> "OneVsRest":
        """Learn the rows of ``X`` in order (classes open at their first row; ``classes``,
        scikit-learn style, opens these on the first call)."""
        self._check_stream_params()
        check_frame(X)
        y = _block_labels(y, getattr(self, "_labels", ()))
        n = X.shape[0] if hasattr(X, "shape") else len(X)
        if n != y.shape[0]:
            # before any learner learns: the rows are cut by the positions of the labels
            raise ValueError(f"X has {n} rows but y has {y.shape[0]} labels")
        # the names, the width and the values of every row checked before any learner
        # learns the first ones (the learners check only their own segment of the block)
        if (peer := self._started_peer()) is not None:
            validate_data(peer, X, reset=False, skip_check_array=True)
        check_array(X, accept_sparse=_SPARSE, dtype="numeric", ensure_all_finite=True,
                    ensure_min_samples=0, ensure_min_features=0, input_name="X")
        with self._classes_kept_on_refusal():
            self._partial_fit(X, y, classes)
        return self

    def _partial_fit(self, X: Any, y: np.ndarray, classes: Any) -> None:
        if classes is not None:
            self._open([np.asarray(c).item() for c in classes])
        if sp.issparse(X) and not sp.isspmatrix_csr(X) and not isinstance(X, sp.csr_array):
            X = X.tocsr()  # row slices
        rows = X.iloc if hasattr(X, "iloc") else X
        uniq, first = np.unique(y, return_index=True)
        order = sorted(zip(first.tolist(), (_py(u) for u in uniq)))
        if not hasattr(self, "learners_"):
            self._open([order[0][1]] if order else [])
        start = 0
        new = [(i, c) for i, c in order if c not in self._labels] + [(len(y), None)]
        for i, c in new:
            if i > start:  # rows [start, i) only involve the classes opened so far
                block, labels = rows[start:i], y[start:i]
                for cl, m in zip(self._labels, self.learners_):
                    m.partial_fit(block, labels == cl)
            if c is not None:
                self._open([c])
            start = i

    def _scores(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "learners_")
        return np.column_stack([m.decision_function(X) for m in self.learners_])

    def decision_function(self, X: Any) -> np.ndarray:
        """Scores, one column per class in ``classes_`` order; for two classes one column,
        the second class's score minus the first's."""
        scores = self._scores(X)
        return scores[:, 1] - scores[:, 0] if scores.shape[1] == 2 else scores

    def predict(self, X: Any) -> np.ndarray:
        best = self._scores(X).argmax(1)
        return self.classes_[best]

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        """Names of the selected features, as the learners' ``get_feature_names_out``."""
        partial = next((vars(m)["_partial_names"] for m in getattr(self, "learners_", ())
                        if "_partial_names" in vars(m)), None)
        return super().get_feature_names_out(_names_in(partial, input_features))

    def _get_support_mask(self) -> np.ndarray:
        check_is_fitted(self, "learners_")
        mask = np.zeros(self.n_features_in_, dtype=bool)
        for m in self.learners_:
            if hasattr(m, "d_"):
                mask |= m._get_support_mask()
        return mask

    # ------------------------------------------------------------------ River-style API
    def learn_one(self, x: Any, y: Any) -> "OneVsRest":
        """Learn ``(x, y)`` in every binary learner."""
        self._check_stream_params()
        label = _py(_one_label(y, getattr(self, "_labels", ()))[0])
        with self._classes_kept_on_refusal():
            self._open([label])
            for c, m in zip(self._labels, self.learners_):
                m.learn_one(x, c == label)
        return self

    def predict_one(self, x: Any) -> Any:
        """The class of the largest score; ``None`` before any label was learned."""
        if not getattr(self, "learners_", None):
            return None
        if is_series(x):
            x = x.to_dict()  # read by its labels, as the learners' predict_one reads it
        if sp.issparse(x) and x.shape[0] != 1:  # (the learners would score every row)
            raise not_one_instance("predict_one", f"a sparse matrix of {x.shape[0]} rows")
        if not sp.issparse(x) and not isinstance(x, dict):
            x = np.asarray(x)
            if x.ndim != 1:
                raise not_one_instance("predict_one", f"an array of {x.ndim} dimension(s)")
            x = x[None, :]
        scores = [m.decision_function(x)[0] for m in self.learners_]
        return self._labels[int(np.argmax(scores))]

    def transform_one(self, x: Any) -> dict:
        """The entries of ``x`` (a dict or a pandas Series, keys as in the learners'
        ``transform_one``) whose feature is in the union of the supports, in the order of
        ``x``. Empty before the learners have seen data."""
        if is_series(x):
            x = x.to_dict()
        if not isinstance(x, dict):
            raise TypeError(f"transform_one expects a dict or a pandas Series, got "
                            f"{type(x).__name__}")
        kept: set = set()
        for m in getattr(self, "learners_", ()):
            kept.update(m.transform_one(x))
        return {key: value for key, value in x.items() if key in kept}

    @property
    def mistakes_(self) -> int:
        """Mistakes of the binary learners, summed; 0 before any data, as theirs."""
        return sum(m.mistakes_ for m in getattr(self, "learners_", ()))

    @property
    def selected_(self) -> np.ndarray:
        """Selected features, the union of the supports, in :meth:`selection`'s order (by
        decreasing ``|score|``); empty before any data, as the wrapped learners'."""
        return np.asarray([s["feature"] for s in self.selection()], dtype=np.int64)

    def selection(self) -> list[dict]:
        best: dict[int, float] = {}
        for m in getattr(self, "learners_", []):
            for s in m.selection():
                f, w = s["feature"], s["score"]
                if f not in best or abs(w) > abs(best[f]):
                    best[f] = w
        items = sorted(best.items(), key=lambda t: (-abs(t[1]), t[0]))
        return [{"feature": f, "score": w, "affiliated": []} for f, w in items]

    def to_state(self) -> dict:
        state: dict = {"algorithm": "OneVsRest", "estimator": self.estimator.to_state(),
                       "classes": self.classes}
        if hasattr(self, "learners_"):
            state["classes_"] = list(self._labels)
            state["learners"] = [m.to_state() for m in self.learners_]
            if self._changed_params():
                state["stream_params"] = {"estimator": self._stream_estimator().to_state(),
                                          "classes": self._stream_params_["classes"]}
        return state

    @classmethod
    @reads_state
    def from_state(cls, state: dict) -> "OneVsRest":
        check_state_algorithm(state, cls.__name__, ["OneVsRest"])
        obj = cls(InstanceStreamSelector.from_state(state["estimator"]), state["classes"])
        if "learners" in state:
            # sorted, as classes_ is now (states written before kept first-seen order)
            pairs = sorted(zip(state["classes_"], state["learners"]), key=lambda t: t[0])
            obj._labels = [c for c, _ in pairs]
            obj.learners_ = [InstanceStreamSelector.from_state(s) for _, s in pairs]
            started = state.get("stream_params")
            obj._stream_params_ = obj._stream_snapshot(
                obj.estimator if started is None
                else InstanceStreamSelector.from_state(started["estimator"]),
                obj.classes if started is None else started["classes"])
        return obj
