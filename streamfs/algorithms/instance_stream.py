"""The base class of the instance-stream learners, and its helpers.

:class:`InstanceStreamSelector` handles what every learner of :mod:`streamfs.algorithms.ofs`
shares (the conventions are listed in that module's docstring): labels, lazy allocation, block
processing through the numba kernels of :mod:`streamfs.algorithms.ofs_kernels`, the
scikit-learn and River-style APIs, and ``to_state()`` / ``from_state``. Its input conversion
(dense, sparse, data frames, dicts) is :mod:`streamfs.algorithms.instance_input`'s, its scaling
advice and value checks :mod:`streamfs.algorithms.instance_advice`'s (mixins it inherits). A
learner defines its update rule through ``_kernel_params`` and checks its own parameters in
``_validate_params``.
"""

from __future__ import annotations

import contextlib
import inspect
import numbers
import warnings
from typing import Any, Iterator, Sequence

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import NotFittedError
from sklearn.feature_selection import SelectorMixin
from sklearn.utils.validation import (
    check_array,
    check_consistent_length,
    check_is_fitted,
    column_or_1d,
    validate_data,
)

from streamfs.algorithms import ofs_kernels as _k
from streamfs.algorithms._stream_params import StreamParamsMixin
from streamfs.algorithms.base import _SPARSE
from streamfs.algorithms.instance_advice import DataAdviceMixin
from streamfs.algorithms.instance_input import CSR, InstanceInputMixin, is_series
from streamfs.algorithms.rounding import round_half_away
from streamfs.algorithms._validation import (
    binary_sparse_tags,
    check_budget,
    check_frame,
    check_int,
    check_label_types,
    check_state_algorithm,
    check_targets,
    column_names,
    is_missing,
    label_array,
    reads_state,
    shown,
    writable,
)

__all__ = [
    "InstanceStreamSelector",
]

_NORM_MODES = {False: 0, None: 0, "none": 0, True: 1, "l2": 1, "standardize": 2}
_M64 = (1 << 64) - 1


def _rng_from_seed(random_state: Any) -> np.ndarray:
    """PCG64 state ``[state_hi, state_lo, inc_hi, inc_lo]`` seeded like numpy would."""
    if isinstance(random_state, np.random.Generator):
        # derive a seed so that the caller's generator advances, as scikit-learn does
        random_state = int(random_state.integers(0, 2**63 - 1))
    elif isinstance(random_state, np.random.RandomState):
        random_state = int(random_state.randint(0, 2**63 - 1, dtype=np.int64))
    st = np.random.PCG64(random_state).state["state"]
    return _rng_pack(st["state"], st["inc"])


def _generator_state(random_state: Any) -> dict | None:
    """The state of a numpy generator (``Generator`` or ``RandomState``) as plain data, for
    a learner saved before its stream opened (the seed is drawn from it at open); integers
    past 64 bits (PCG64's words) as decimal text, as msgpack stops there. ``None`` for a
    seed or ``None``, which the parameters carry."""
    if isinstance(random_state, np.random.Generator):
        kind, state = "Generator", random_state.bit_generator.state
    elif isinstance(random_state, np.random.RandomState):
        kind, state = "RandomState", random_state.get_state(legacy=False)
    else:
        return None

    def plain(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        if isinstance(v, int) and not -(2**63) <= v < 2**63:
            return str(v)
        return v

    return {"kind": kind, "state": plain(state)}


def _generator_from_state(saved: dict) -> np.random.Generator | np.random.RandomState:
    """The generator :func:`_generator_state` saved."""
    def python(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: python(x) for k, x in v.items()}
        return int(v) if isinstance(v, str) and v.lstrip("-").isdigit() else v

    state = python(saved["state"])
    if saved["kind"] == "RandomState":
        rs = np.random.RandomState()
        rs.set_state(state)
        return rs
    bits = getattr(np.random, state["bit_generator"])()
    bits.state = state
    return np.random.Generator(bits)


def _rng_pack(state: int, inc: int) -> np.ndarray:
    return np.array([state >> 64, state & _M64, inc >> 64, inc & _M64], dtype=np.uint64)


def budget_for(k: int | float | None, d: int) -> int:
    """The number of weights ``B`` a learner keeps: ``k`` features, a fraction ``k`` of ``d``
    or, for ``None``, ``round(0.1 d)``; halves round up (MATLAB's ``round``), then ``B`` is
    clipped to ``1..d``.

    >>> budget_for(None, 25), budget_for(0.5, 5), budget_for(40, 30), budget_for(None, 4)
    (3, 3, 30, 1)
    """
    if k is None:
        B = round_half_away(0.1 * d)
    elif isinstance(k, (float, np.floating)) and 0.0 < k <= 1.0:
        B = round_half_away(float(k) * d)
    else:
        B = int(k)
    return min(max(B, 1), d)


class _MixedClasses(ValueError):
    """``classes`` mixes numbers and text (said as such, not as labels that are not two)."""


class InstanceStreamSelector(ClassifierMixin, SelectorMixin, StreamParamsMixin,
                             InstanceInputMixin, DataAdviceMixin, BaseEstimator):
    """Base class of the instance-stream learners: budgeted linear classifiers whose non-zero
    weights are the selected features.

    Subclasses define the update rule through :meth:`_kernel_params` and check their own
    parameters in :meth:`_validate_params`; this class handles input conversion, labels,
    lazy allocation, block processing and state.

    The learners are scikit-learn classifiers and feature selectors (``ClassifierMixin``,
    ``SelectorMixin``, ``BaseEstimator``): ``fit(X, y)`` is one pass over the rows of ``X``
    in order from a fresh state, ``partial_fit`` continues the stream, ``transform`` keeps the
    selected features (non-zero weights) in ascending index order, ``predict`` and
    ``decision_function`` use the current weights. Fitted on a pandas data frame with string
    column names, a learner records them in ``feature_names_in_`` (and in ``to_state()``), and
    the dict API (``learn_one``, ``predict_one``, ``transform_one``) then accepts those names
    as keys besides integer feature indices.
    """

    _partial: bool = False

    def __init__(
        self,
        n_features_to_select: int | float | None = None,
        *,
        n_features: int | None = None,
        normalize: bool | str = True,
        classes: list | None = None,
        max_buffer_bytes: int = 1 << 30,
    ) -> None:
        self.n_features_to_select = n_features_to_select
        self.n_features = n_features
        self.normalize = normalize
        self.classes = classes
        self.max_buffer_bytes = max_buffer_bytes

    # ------------------------------------------------------------------ parameters
    def _validate_params(self) -> None:
        """Check the parameters shared by every learner; subclasses add their own."""
        check_budget("n_features_to_select", self.n_features_to_select)
        check_int("n_features", self.n_features, 1, allow_none=True)
        norm = self._norm_key()
        if not any(type(norm) is type(k) and norm == k for k in _NORM_MODES):
            raise ValueError(
                "normalize must be one of True, 'l2', 'standardize', False, got "
                f"{shown(self.normalize)}"
            )
        if self._partial and _NORM_MODES[norm] == 1:
            raise ValueError(
                f"normalize must be False or 'standardize' for {type(self).__name__}, got "
                f"{shown(self.normalize)}: it reads only the observed attributes, so it cannot "
                "scale instances to unit norm (pre-scale the stream and pass normalize=False)"
            )
        check_int("max_buffer_bytes", self.max_buffer_bytes, 1)
        if self.n_features is not None:
            self._check_memory(int(self.n_features))
        if self.classes is not None:
            try:
                self._check_classes(self.classes)
            except _MixedClasses:
                raise
            except (TypeError, ValueError):
                raise ValueError(
                    f"classes must be None or a list of two distinct labels, got "
                    f"{shown(self.classes)}"
                ) from None

    def _state_params(self) -> dict:
        """The parameters in constructor order (the order ``to_state`` has always used); a
        random generator as ``None`` (the generator's state, saved apart, supersedes it)."""
        params = {name: getattr(self, name) for name in _init_names(type(self))}
        rs = params.get("random_state")
        if rs is not None:
            params["random_state"] = int(rs) if isinstance(rs, (int, np.integer)) else None
        return params

    def _kernel_params(self, d: int, B: int) -> tuple[list[float], int, int]:
        """``([eta, decay, radius, threshold, epsilon], obs_mode, weighted)``."""
        raise NotImplementedError

    def _budget(self, d: int) -> int:
        return budget_for(self.n_features_to_select, d)

    def _norm_key(self) -> Any:
        """``normalize`` as a key of the scaling modes: text in lower case, a numpy boolean as
        Python's (a grid of ``np.array([True, False])`` gives numpy's)."""
        norm = self.normalize
        if isinstance(norm, str):
            return norm.lower()
        return bool(norm) if isinstance(norm, np.bool_) else norm

    def _norm_mode(self) -> int:
        mode = _NORM_MODES[self._norm_key()]
        if self._partial and mode == 2:
            mode = 3
        return mode

    def __sklearn_tags__(self):
        return binary_sparse_tags(super().__sklearn_tags__())

    # ------------------------------------------------------------------ allocation
    def _ensure_init(self, d: int | None) -> None:
        if hasattr(self, "d_"):
            if d is not None and d != self.d_:
                raise ValueError(
                    f"X has {d} features, but {type(self).__name__} is expecting {self.d_} "
                    "features as input"
                )
            return
        self._validate_params()
        if self.n_features is not None:
            if d is not None and d != self.n_features:
                raise ValueError(f"instance has {d} features but n_features={self.n_features}")
            d = int(self.n_features)
        if d is None:
            raise ValueError(
                "the dimension is unknown: pass n_features= (needed before the first instance "
                "for dict input and attributes_to_observe)"
            )
        if (advice := self._budget_advice(int(d))) is not None:
            warnings.warn(advice, UserWarning, stacklevel=4)
        self._allocate(int(d))

    def _budget_advice(self, d: int) -> str | None:
        """A budget over the dimension ``d`` selects nothing out: said as scikit-learn's
        SelectKBest says it, when the stream opens and before it is published (a fraction
        or ``None`` cannot exceed ``d``).

        >>> from streamfs.algorithms.ofs import OFS
        >>> OFS(40)._budget_advice(30)
        'n_features_to_select=40 is greater than n_features=30: all the features will be kept'
        """
        k = self.n_features_to_select
        if isinstance(k, (int, np.integer)) and not isinstance(k, bool) and k > d:
            return f"n_features_to_select={int(k)} is greater than n_features={d}: all the " \
                   "features will be kept"
        return None

    def _bytes_per_feature(self) -> int:
        """The learner's arrays of length ``d``, in bytes per feature."""
        from streamfs.algorithms.ofs import RandomSelection  # the learners' module imports this

        mode = self._norm_mode()
        redraw = getattr(self, "redraw", False) is True
        # w, heap keys, buffers (8 bytes each), heap and positions (4 each), the support
        # bitmap (an eighth of a byte, counted as one)
        per = 57
        per += 8 if self._partial or mode == 2 else 0  # a dense copy of the instance
        per += 32 if mode in (2, 3) else 0  # running counts, means, squared deviations, units
        per += 8 if self._partial or redraw else 0  # stamps of the random draws
        per += 8 if self._partial else 0  # the attributes chosen
        per += 9 if isinstance(self, RandomSelection) and not redraw else 0  # its fixed draw
        return per

    def _check_memory(self, d: int) -> None:
        """``ValueError`` with the numbers when ``d`` features need more than
        ``max_buffer_bytes``: refused at ``open`` instead of failing the first block, or the
        out-of-memory killer stopping the worker where the memory was promised but not there."""
        per = self._bytes_per_feature()
        if d * per > self.max_buffer_bytes:
            fits = int(self.max_buffer_bytes) // per
            raise ValueError(
                f"{type(self).__name__} state of n_features={d} x {per} bytes = {d * per} bytes "
                f"exceeds max_buffer_bytes={int(self.max_buffer_bytes)} (room for "
                f"{fits} feature{'s' * (fits != 1)}): give max_buffer_bytes={d * per} or more")

    def _allocate(self, d: int) -> None:
        self._check_memory(d)
        self._begin_stream_params()
        self.d_ = d
        self.n_features_in_ = d
        self.budget_ = B = self._budget(d)
        fp, obs_mode, weighted = self._kernel_params(d, B)
        self._fp = np.array(fp, dtype=np.float64)
        self._ip = np.array([B, d, self._norm_mode(), obs_mode, weighted], dtype=np.int64)
        self._fst = np.array([1.0, 0.0])
        self._ist = np.zeros(6, dtype=np.int64)
        self._v = np.zeros(d)
        self._hpos = np.full(d, -1, dtype=np.int32)
        self._member = np.zeros((d + 7) // 8, dtype=np.uint8)  # support bitmap (the kernels')
        self._heap = np.zeros(d, dtype=np.int32)
        self._hkey = np.zeros(d)
        self._nbuf = np.zeros(d, dtype=np.int64)
        self._nval = np.zeros(d)
        self._widx = np.zeros(d, dtype=np.int64)
        self._wval = np.zeros(d)
        needs_buf = self._partial or self._ip[2] == 2
        self._xbuf = np.zeros(d if needs_buf else 0)
        stats = d if self._ip[2] in (2, 3) else 0
        self._cnt = np.zeros(stats)
        self._mean = np.zeros(stats)
        self._m2 = np.zeros(stats)
        self._unit = np.ones(stats)  # each column's units for its statistics (the kernels')
        self._allowed = np.zeros(0, dtype=np.bool_)
        self._rng = np.zeros(4, dtype=np.uint64)
        # per-attribute stamps of the random draws (partial input, RAND with redraw)
        self._mark = np.zeros(d if self._partial or obs_mode == 4 else 0, dtype=np.int64)
        if self._partial:
            self._cidx = np.zeros(d, dtype=np.int64)
        self._pending: np.ndarray | None = None
        if not hasattr(self, "_labels"):
            self._labels: list = [] if self.classes is None else self._check_classes(self.classes)
        self._init_random()

    def _init_random(self) -> None:
        """Seed the generator of learners that take a ``random_state`` (when the stream opens);
        subclasses that draw something at open time extend this."""
        if hasattr(self, "random_state"):
            self._rng = _rng_from_seed(self.random_state)

    def __setstate__(self, state: dict) -> None:
        # an estimator unpickled from a memory map has read-only arrays: the kernels update
        # the learned state in place, so it gets writable copies
        super().__setstate__(state)
        for name, value in vars(self).items():
            setattr(self, name, writable(value))

    # learned state in private attributes (besides the public ones ending in "_")
    _STATE = ("_fp", "_ip", "_fst", "_ist", "_v", "_hpos", "_member", "_heap", "_hkey", "_nbuf",
              "_nval", "_widx", "_wval", "_xbuf", "_cnt", "_mean", "_m2", "_unit", "_allowed",
              "_rng", "_mark", "_cidx", "_pending", "_labels", "_name_pos", "_partial_names")

    def _reset(self) -> None:
        """Forget everything learned; the parameters and scikit-learn's own attributes
        (``set_output`` configuration, callback contexts, ...) stay."""
        for name in list(vars(self)):
            if (name.endswith("_") and not name.startswith("__")) or name in self._STATE:
                delattr(self, name)

    @contextlib.contextmanager
    def _unopened_unless_learned(self, learns: bool = True) -> Iterator[None]:
        """Leave a learner that had not started (no ``d_``) as it was when the call in this
        block is refused before it learned a row (a partial-input learner keeps the rows
        before a refused one), or, for a call that does not learn (``learns=False``), in any
        case: a refused first block must not fix the dimension, the names or the parameters
        (a retry was then refused for them), and a prediction must not start a stream."""
        started = hasattr(self, "d_")
        try:
            yield
        except BaseException:
            if not started and not getattr(self, "n_seen_", 0):
                self._reset()
            raise
        if not learns and not started:
            self._reset()

    @staticmethod
    def _check_classes(classes: list) -> list:
        values = {np.asarray(c).item() for c in classes}
        if len({isinstance(v, str) for v in values}) > 1:  # sorted() fails: not "distinct"
            raise _MixedClasses(f"classes mixes numbers and text ({shown(list(classes))}): "
                                f"the larger in sort order is +1, and a number and a text do "
                                f"not compare; give both as numbers or both as text")
        cl = sorted(values)
        if len(cl) != 2:
            raise ValueError(f"binary classifier: classes must name two labels, got {cl}")
        return cl

    @property
    def classes_(self) -> np.ndarray:
        """The labels seen so far (or given by ``classes``), sorted; ``classes_[1]`` is the
        positive class. Before the second label arrives it holds the first one only."""
        if not hasattr(self, "_labels"):
            raise AttributeError("classes_ is available once the learner has seen data")
        return np.asarray(self._labels)

    # ------------------------------------------------------------------ labels
    def _encode(self, y: np.ndarray) -> list[tuple[int, np.ndarray]]:
        """Map labels to +-1 as ``[(start, ysign), ...]`` segments of the block; a segment
        with ``start == -1`` means "negate w here" (the first class seen turned out to be
        the positive one once the second class appeared)."""
        if len(self._labels) == 2:
            if y.shape == (1,):
                label = y[0]
                if label == self._labels[1]:
                    return [(0, np.ones(1))]
                if label == self._labels[0]:
                    return [(0, -np.ones(1))]
            return [(0, self._sign(y))]
        uniq, first = np.unique(y, return_index=True)
        new = [_py(u) for u, _ in sorted(zip(uniq, first), key=lambda t: t[1])]
        labels = list(self._labels) + [c for c in new if c not in self._labels]
        check_label_types(labels)  # a block's own labels were checked; not with earlier ones
        if len(labels) > 2:
            raise ValueError(self._multiclass_message(labels))
        provisional = labels[0]
        s0 = self._provisional_sign(provisional)
        if len(labels) < 2:
            self._labels = labels
            return [(0, np.full(len(y), s0))]
        second = labels[1]
        cut = int(np.flatnonzero(y == second)[0])
        segments = [(0, np.full(cut, s0))] if cut > 0 else []
        self._labels = sorted(labels)
        if (1.0 if provisional == self._labels[1] else -1.0) != s0:
            segments.append((-1, np.empty(0)))
        segments.append((cut, self._sign(y[cut:])))
        return segments

    def _multiclass_message(self, labels: list) -> str:
        return (
            f"Only binary classification is supported: {type(self).__name__} got the labels "
            f"{shown(sorted(labels, key=str))}; map them to two classes first or wrap the "
            "learner in OneVsRest"
        )

    @staticmethod
    def _provisional_sign(label: Any) -> float:
        # before the second class is known: positive numbers are +1, anything else -1
        try:
            return 1.0 if float(label) > 0 else -1.0
        except (TypeError, ValueError):
            return -1.0

    def _sign(self, y: np.ndarray) -> np.ndarray:
        pos = y == self._labels[1]
        bad = ~(pos | (y == self._labels[0]))
        if bad.any():
            others = sorted({_py(v) for v in np.unique(y[bad])}, key=str)
            raise ValueError(
                f"{type(self).__name__}: y has the label(s) {shown(others)} besides its two "
                f"classes {list(self._labels)}; only binary classification is supported: map "
                "the labels to two classes first or wrap the learner in OneVsRest")
        return np.where(pos, 1.0, -1.0)

    def _decode(self, score: np.ndarray) -> np.ndarray:
        """Labels of scores: the positive class for ``score >= 0``; the only label seen, if
        one; :class:`NotFittedError` if none (a class would be made up)."""
        if not self._labels:
            raise NotFittedError(f"{type(self).__name__} has learned no label yet: call "
                                 "fit, partial_fit or learn_one first")
        return np.where(score >= 0.0, self._labels[-1], self._labels[0])

    def _knows_a_label(self) -> bool:
        """Whether a label has been seen, or given by ``classes``."""
        return bool(getattr(self, "_labels", None)) or self.classes is not None

    # ------------------------------------------------------------------ kernel calls
    def _run(self, M: CSR, ysign: np.ndarray, learn: bool, first_row: int = 0) -> np.ndarray:
        indptr, indices, data = M
        out = np.empty(indptr.size - 1)
        if self._partial:
            row, m = _k.run_partial(
                indptr, indices, data, ysign, learn, self._v, self._hpos, self._member, self._heap,
                self._hkey, self._nbuf, self._nval, self._widx, self._wval, self._cidx,
                self._xbuf, self._mark, self._rng, self._cnt, self._mean, self._m2, self._unit,
                self._fp, self._ip, self._fst, self._ist, out,
            )
            if row >= 0:
                # it reads only some attributes, so only those are checked: refused here,
                # before the row is learned (a NaN would void the weights)
                bad = self._widx[:m][~np.isfinite(self._wval[:m])]
                raise _RowRefused(
                    first_row + row,
                    f"{type(self).__name__}: row {first_row + row} has NaN or infinite values "
                    f"in the attributes {bad.tolist()} it read ("
                    + ("earlier rows were learned, this one was not)" if learn
                       else "no prediction without them)"))
        else:
            _k.run_full(
                indptr, indices, data, ysign, learn, self._v, self._hpos, self._member, self._heap,
                self._hkey, self._nbuf, self._nval, self._widx, self._wval, self._xbuf, self._cnt,
                self._mean, self._m2, self._unit, self._allowed, self._mark, self._rng, self._fp,
                self._ip, self._fst, self._ist, out,
            )
        return out

    def _learn_block(self, M: CSR, y: Any) -> None:
        if self._pending is not None:
            raise RuntimeError("attributes_to_observe() is pending: call learn_observed first")
        self._check_norms(M)
        # a partial-input learner reads the attributes it observes only: its advice comes
        # from the producer and the worker, which have every value anyway (_data_advice)
        if (self.n_seen_ == 0 and not self._partial
                and (advice := self._scale_advice(M)) is not None):
            warnings.warn(advice, UserWarning, stacklevel=3)  # the caller of fit & co.
        labels = list(self._labels)
        flipped = False
        try:
            for start, ysign in self._encode(y):
                if start < 0:
                    self._fst[0] = -self._fst[0]
                    flipped = True
                    continue
                self._run(self._rows(M, start, start + len(ysign)), ysign, True, start)
        except _RowRefused as e:
            # the rows before the refused one were learned, it and the later ones were not:
            # the labels (and the sign of w, flipped when the second class came) must be
            # those of the rows learned, or w keeps the first class's provisional sign while
            # the labels say otherwise, and the stream goes on with the wrong sign
            self._labels = labels
            now = e.row > 0 and any(s < 0 for s, _ in self._encode(y[: e.row]))
            if flipped and not now:
                self._fst[0] = -self._fst[0]
            raise
        self._check_overflow(M)

    # ------------------------------------------------------------------ scikit-learn API
    def fit(self, X: Any, y: Any) -> "InstanceStreamSelector":
        """One pass over the rows of ``X`` in order, from a fresh state.

        ``X``: dense array, scipy.sparse matrix or data frame; ``y``: two classes (or exactly
        the pair given by ``classes``).
        """
        self._validate_params()
        if y is None:
            raise ValueError(
                f"{type(self).__name__} requires y to be passed, but the target y is None"
            )
        self._reset()
        check_frame(X)
        X = validate_data(self, X, reset=True, accept_sparse=_SPARSE, dtype="numeric",
                          ensure_all_finite=True, ensure_min_samples=1)
        y = column_or_1d(label_array(y), warn=True)
        check_consistent_length(X, y)
        y = check_targets(y)
        labels = [_py(c) for c in np.unique(y)]
        if len(labels) > 2:
            raise ValueError(self._multiclass_message(labels))
        if len(labels) < 2 and self.classes is None:
            raise ValueError(
                f"{type(self).__name__} needs at least two classes: the labels have 1 class "
                f"({shown(labels[0])})"
            )
        M = self._as_csr(X, single=False)
        if M[0].size > 1:
            self._learn_block(M, y)
        return self

    def partial_fit(self, X: Any, y: Any, classes: Any = None) -> "InstanceStreamSelector":
        """Learn from the rows of ``X`` (dense 2-D, scipy sparse or data frame) in order.

        ``classes`` (optional, scikit-learn style) fixes the two labels on the first call,
        like the ``classes`` parameter; later calls may repeat the same pair.
        """
        self._validate_params()
        self._check_stream_params()
        first = not hasattr(self, "d_")
        named = False
        if not first and self.n_seen_ == 0 and self._known_names() is None:
            # opened early (n_features=, attributes_to_observe) but not fed yet: take names
            names = column_names(X)
            if names is not None and len(names) == self.d_:
                self.feature_names_in_ = np.asarray(names, dtype=object)
                named = True
        try:
            with self._unopened_unless_learned():
                self._partial_fit(X, y, classes, first)
        except BaseException:
            if named:  # the names of a refused block are not the stream's
                del self.feature_names_in_
            raise
        return self

    def _partial_fit(self, X: Any, y: Any, classes: Any, first: bool) -> None:
        check_frame(X)
        validate_data(self, X, reset=first, skip_check_array=True)
        if not (sp.issparse(X) or (isinstance(X, np.ndarray) and X.dtype.kind in "biuf")):
            # (text too: numpy would parse "1.5")
            X = check_array(X, accept_sparse=True, dtype="numeric", ensure_all_finite=False,
                            ensure_min_samples=0, ensure_min_features=0, input_name="X")
        if classes is not None:
            self._set_classes(classes)
        M = self._as_csr(X, single=False)
        y = _block_labels(y, self._labels)
        n = M[0].size - 1
        if y.shape[0] != n:
            raise ValueError(f"X has {n} rows but y has {y.shape[0]} labels")
        if n:
            self._learn_block(M, y)

    def _set_classes(self, classes: Any) -> None:
        try:
            cl = self._check_classes(list(classes))
        except _MixedClasses:
            raise
        except (TypeError, ValueError):
            raise ValueError(
                f"classes must be a list of two distinct labels, got {shown(classes)}"
            ) from None
        known = getattr(self, "_labels", None)
        if known is None and self.classes is not None:  # the stream opens here, with these
            if (given := self._check_classes(self.classes)) != cl:
                raise ValueError(f"partial_fit's classes={cl} differs from the learner's "
                                 f"classes={given}")
        if known is not None and len(known) == 2 and list(known) != cl:
            raise ValueError(f"classes={cl} differs from the classes {list(known)} of the stream")
        if known and len(known) < 2:
            if known[0] not in cl:
                raise ValueError(self._multiclass_message(list(known) + cl))
            # the provisional sign of the first label becomes final: flip w if it was wrong
            if (1.0 if known[0] == cl[1] else -1.0) != self._provisional_sign(known[0]):
                self._fst[0] = -self._fst[0]
        self._labels = cl

    def decision_function(self, X: Any) -> np.ndarray:
        """Scores ``w.x`` (scaled as in learning, running statistics not updated).

        ``X``: rows as a dense 2-D array, scipy.sparse matrix or data frame (or one instance as
        a dict, see :meth:`predict_one`).
        """
        if isinstance(X, dict) and not sp.issparse(X):
            with self._unopened_unless_learned(learns=False):
                return self._run(self._as_csr(X, single=True), np.zeros(1), False)
        check_is_fitted(self, "d_")
        X = validate_data(self, X, reset=False, accept_sparse=_SPARSE, dtype="numeric",
                          ensure_all_finite=True)
        M = self._as_csr(X, single=False)
        return self._run(M, np.zeros(M[0].size - 1), False)

    def predict(self, X: Any) -> np.ndarray:
        """Labels ``sgn(w.x)`` for the rows of ``X`` (ties go to the positive class)."""
        return self._decode(self.decision_function(X))

    def _get_support_mask(self) -> np.ndarray:
        check_is_fitted(self, "d_")
        mask = np.zeros(self.d_, dtype=bool)
        mask[self.selected_] = True
        return mask

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        """Names of the selected features, ascending by index: ``feature_names_in_``'s, or
        ``x<i>``; a learner started on named dicts with some features not named yet gives
        the names it has and ``x<i>`` for the others."""
        return super().get_feature_names_out(
            _names_in(self.__dict__.get("_partial_names"), input_features))

    # ------------------------------------------------------------------ River-style API
    def learn_one(self, x: Any, y: Any) -> "InstanceStreamSelector":
        """Predict ``x`` (counted in ``mistakes_``), then learn from ``(x, y)``.

        ``x``: a dict ``{feature: value}`` (absent features are 0) whose keys are int feature
        indices or names: those of ``feature_names_in_`` (a DataFrame's), or, for a learner
        started on dicts keyed by name (River's datasets), names taken in the order they
        first come; or a dense 1-D array or a scipy sparse row. Dict input needs the
        dimension up front (``n_features=``) unless the learner has already seen data.

        >>> from streamfs.algorithms.ofs import OFS
        >>> m = OFS(n_features_to_select=1, n_features=3, normalize=False)
        >>> m = m.learn_one({0: 0.5, 2: 1.0}, "spam").learn_one({1: 2.0}, "ham")
        >>> m.n_seen_, m.selected_.tolist(), m.classes_.tolist()
        (2, [1], ['ham', 'spam'])
        """
        self._check_stream_params()
        with self._unopened_unless_learned():
            M, new, slots = self._one_to_learn(x)
            if self._pending is not None:
                self.learn_observed(self._pending, _values_at(M, self._pending), y)
            else:
                self._learn_block(M, _one_label(y, self._labels))
        if new:
            self._name_features(new, slots)
        return self

    def predict_one(self, x: Any) -> Any:
        """Label predicted for one instance without learning from it.

        ``x`` as in :meth:`learn_one`; with names, the keys are the columns of the data
        frame the learner was fitted on. Ties (score 0) go to the positive class. ``None``
        before any label was learned or given by ``classes``, as River's classifiers do (``x``
        is then not looked at); with one label seen, that label.

        >>> from streamfs.algorithms.ofs import OFS
        >>> import pandas as pd
        >>> X = pd.DataFrame({"a": [1.0, -1.0, 0.5, -0.5], "b": [0.1, 0.2, -0.1, 0.0]})
        >>> m = OFS(n_features_to_select=1).fit(X, ["yes", "no", "yes", "no"])
        >>> m.predict_one({"a": 2.0}), m.predict_one({0: -2.0})
        ('yes', 'no')
        """
        if not self._knows_a_label():
            return None
        with self._unopened_unless_learned(learns=False):
            M = self._as_csr(x, single=True, method="predict_one")
            return self._decode(self._run(M, np.zeros(1), False))[0].item()

    def transform_one(self, x: Any) -> dict:
        """The entries of ``x`` (a dict, keys as in :meth:`learn_one`, or a pandas Series,
        read by its labels as in :meth:`learn_one`) whose feature is currently selected, in the
        order of ``x``. Empty before the learner has seen data.

        >>> from streamfs.algorithms.ofs import OFS
        >>> import pandas as pd
        >>> X = pd.DataFrame({"a": [1.0, -1.0, 0.5, -0.5], "b": [0.1, 0.2, -0.1, 0.0]})
        >>> m = OFS(n_features_to_select=1).fit(X, [1, -1, 1, -1])
        >>> m.get_feature_names_out().tolist()
        ['a']
        >>> m.transform_one({"b": 3.0, "a": 4.0}), m.transform_one({0: 4.0, 1: 3.0})
        ({'a': 4.0}, {0: 4.0})
        """
        if is_series(x):
            x = x.to_dict()
        if not isinstance(x, dict):
            raise TypeError(f"transform_one expects a dict or a pandas Series, got "
                            f"{type(x).__name__}")
        if not hasattr(self, "d_"):
            return {}
        selected = set(self.selected_.tolist())
        names = self._feature_index()
        out = {}
        for key, value in x.items():
            i = self._key_index(key, names)
            if i == -1 and isinstance(key, str):
                continue  # a name the learner has not seen: not selected
            if not 0 <= i < self.d_:
                raise ValueError(f"feature index out of range [0, {self.d_})")
            if i in selected:
                out[key] = value
        return out

    # ------------------------------------------------------------------ learned attributes
    @property
    def n_seen_(self) -> int:
        return int(self._ist[2]) if hasattr(self, "d_") else 0

    @property
    def mistakes_(self) -> int:
        return int(self._ist[3]) if hasattr(self, "d_") else 0

    @property
    def n_updates_(self) -> int:
        return int(self._ist[4]) if hasattr(self, "d_") else 0

    def _support(self) -> tuple[np.ndarray, np.ndarray]:
        idx = self._heap[: self._ist[0]].astype(np.int64)
        w = self._fst[0] * self._v[idx]
        order = np.lexsort((idx, -np.abs(w)))
        return idx[order], w[order]

    @property
    def selected_(self) -> np.ndarray:
        """Selected features (non-zero weights), by decreasing ``|w_i|`` (ties: lower index)."""
        return self._support()[0] if hasattr(self, "d_") else np.zeros(0, dtype=np.int64)

    @property
    def coef_(self) -> np.ndarray:
        """Dense weight vector ``w`` (length ``d``)."""
        check_is_fitted(self, "d_")
        w = np.zeros(self.d_)
        idx, vals = self._support()
        w[idx] = vals
        return w

    def selection(self) -> list[dict]:
        """``[{"feature": i, "score": w_i, "affiliated": []}, ...]`` for the non-zero weights,
        ordered by decreasing ``|w_i|`` (ties: lower index first). ``score`` is the signed
        weight in the scaled input space (positive favours the larger class)."""
        if not hasattr(self, "d_"):
            return []
        idx, w = self._support()
        return [  # via lists: Python ints and floats without a conversion per item
            {"feature": i, "score": s, "affiliated": []} for i, s in zip(idx.tolist(), w.tolist())
        ]

    # ------------------------------------------------------------------ state
    def to_state(self) -> dict:
        """Plain-data snapshot; ``from_state`` continues bit-identically (RNG included: a
        learner saved before its stream opened keeps its ``random_state`` generator's state)."""
        state: dict = {"algorithm": type(self).__name__, "params": self._state_params()}
        if not hasattr(self, "d_"):
            # a generator's seed is drawn when the stream opens: its state goes too
            if (saved := _generator_state(getattr(self, "random_state", None))) is not None:
                state["random_state"] = saved
            return state
        n = int(self._ist[0])
        heap = self._heap[:n].astype(np.int64)  # heap order kept: sums run in the same order
        st_hi, st_lo, inc_hi, inc_lo = (int(u) for u in self._rng)
        state.update(
            {
                "n_features": self.d_,
                "classes": list(self._labels),
                "scale": float(self._fst[0]),
                "sq": float(self._fst[1]),
                "counters": [int(c) for c in self._ist],
                "heap": heap,
                "values": self._v[heap].copy(),
                "stats": None
                if self._cnt.size == 0
                else {"count": self._cnt.copy(), "mean": self._mean.copy(), "m2": self._m2.copy(),
                      # None while every column is in units of 1 (nearly always): no state grows
                      "unit": self._unit.copy() if (self._unit != 1.0).any() else None},
                "fixed": np.flatnonzero(self._allowed).astype(np.int64),
                # 128-bit PCG64 words as decimal strings (msgpack ints stop at 64 bits)
                "rng": {
                    "bit_generator": "PCG64",
                    "state": str((st_hi << 64) | st_lo),
                    "inc": str((inc_hi << 64) | inc_lo),
                },
                "pending": None if self._pending is None else self._pending.copy(),
            }
        )
        names = self._known_names()
        if names is not None:  # None: not named yet (dict input)
            state["feature_names"] = [None if n is None else str(n) for n in names]
        return self._put_stream_params(state)

    @classmethod
    @reads_state
    def from_state(cls, state: dict) -> "InstanceStreamSelector":
        """Rebuild a learner from :meth:`to_state` output."""
        from streamfs.algorithms.ofs import _REGISTRY  # the learners' module imports this

        # the base class restores any learner of the family, a learner its own kind (and kinds
        # derived from it)
        kinds = [name for name, c in _REGISTRY.items() if issubclass(c, cls)]
        target = _REGISTRY[check_state_algorithm(state, cls.__name__, kinds)]
        params, later = cls._stream_params_of(state)
        obj = target(**params)
        if "n_features" not in state:
            if "random_state" in state:
                obj.random_state = _generator_from_state(state["random_state"])
            return obj
        obj._validate_params()
        obj._labels = list(state["classes"])
        obj._allocate(int(state["n_features"]))
        obj._fst[:] = [state["scale"], state["sq"]]
        obj._ist[:] = np.asarray(state["counters"], dtype=np.int64)
        heap = np.asarray(state["heap"], dtype=np.int64)
        n = heap.size
        obj._heap[:n] = heap
        obj._v[heap] = np.asarray(state["values"], dtype=np.float64)
        obj._hpos[heap] = np.arange(n, dtype=np.int32)
        _k.set_members(obj._member, obj._heap, n)
        obj._hkey[:n] = np.abs(obj._v[heap])  # the stored order is already a valid heap
        if state["stats"] is not None:
            obj._cnt[:] = state["stats"]["count"]
            obj._mean[:] = state["stats"]["mean"]
            obj._m2[:] = state["stats"]["m2"]
            # None, or absent (states written before the units existed): units of 1
            unit = state["stats"].get("unit")
            obj._unit[:] = 1.0 if unit is None else unit
        fixed = np.asarray(state["fixed"], dtype=np.int64)
        if fixed.size:
            obj._allowed[:] = False
            obj._allowed[fixed] = True
        obj._rng[:] = _rng_pack(int(state["rng"]["state"]), int(state["rng"]["inc"]))
        pend = state["pending"]
        obj._pending = None if pend is None else np.asarray(pend, dtype=np.int64)
        names = state.get("feature_names")
        if names is not None:
            names = np.asarray([None if v is None else str(v) for v in names], dtype=object)
            if any(v is None for v in names.tolist()):  # partly named (dict input)
                obj._partial_names = names
            else:
                obj.feature_names_in_ = names
        obj._set_later_params(later)
        return obj


def _block_labels(y: Any, known: list) -> np.ndarray:
    """A block's labels as a 1-D array (a column vector with scikit-learn's warning), with the
    errors of :func:`check_targets` (missing or infinite labels, continuous values, strings
    mixed with numbers, also with ``known``, the labels of earlier blocks); a block may hold
    one class."""
    y = column_or_1d(label_array(y), warn=True)
    if y.size:
        y = check_targets(y, known)
    return y


class _RowRefused(ValueError):
    """A partial-input learner refused row ``row`` of a block (NaN or inf among the attributes
    it read); the rows before it were learned."""

    def __init__(self, row: int, message: str) -> None:
        super().__init__(message)
        self.row = row


def _values_at(M: CSR, idx: np.ndarray) -> np.ndarray:
    """The values of the one-row ``M`` (sorted indices) at the features ``idx``; 0 where
    it has none."""
    _, cols, data = M
    pos = np.minimum(np.searchsorted(cols, idx), max(cols.size - 1, 0))
    hit = cols[pos] == idx if cols.size else np.zeros(idx.size, bool)
    return np.where(hit, data[pos] if data.size else 0.0, 0.0)


def _one_label(y: Any, known: Sequence[Any]) -> np.ndarray:
    """One instance's label as a one-label block, refused as partial_fit refuses a block's
    labels (:func:`_block_labels`, with ``known``, the labels of earlier blocks): missing or
    infinite, continuous, booleans after numbers, strings after numbers, ...; ``TypeError``
    for what is not one label (a list, a tuple, a dict, an array)."""
    # a known class (known labels are Python scalars; y of zip(X, y) numpy's) was checked
    # when it first came: learn_one is a per-instance path
    v = y.item() if isinstance(y, np.generic) else y
    for k in known:
        if type(v) is type(k) and v == k:
            return np.asarray([v])
    if is_missing(y) and not isinstance(y, (float, np.floating)):  # pandas' NA: not a class
        raise ValueError(f"the label y is missing ({y})")
    if isinstance(y, (float, np.floating)) and not np.isfinite(y):
        raise ValueError(f"the label y must be finite, got {y}")
    if isinstance(y, np.ndarray) and y.ndim == 0:
        y = y.item()
    if not isinstance(y, (str, bytes, numbers.Number, np.generic)):
        raise TypeError(f"y must be one label (a string, a number or a boolean), got a "
                        f"{type(y).__name__}: {shown(y)}")
    return _block_labels([y], known)


def _py(value: Any) -> Any:
    """A numpy scalar as the Python scalar (labels of object arrays already are)."""
    return value.item() if isinstance(value, np.generic) else value


def _init_names(cls: type) -> list[str]:
    """Constructor parameter names of ``cls`` in signature order."""
    sig = inspect.signature(cls.__init__)
    return [p.name for p in sig.parameters.values()
            if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def _names_in(partial: np.ndarray | None, input_features: Any) -> Any:
    """The ``input_features`` scikit-learn's ``get_feature_names_out`` takes: a partly named
    learner's names (``partial``, ``None`` for a feature no key has named so far) with
    ``x<i>`` for the unnamed, unless ``input_features`` are given."""
    if input_features is not None or partial is None:
        return input_features
    return np.asarray([f"x{i}" if n is None else n for i, n in enumerate(partial.tolist())],
                      dtype=object)

