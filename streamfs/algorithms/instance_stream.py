"""The base class of the instance-stream learners, and its helpers.

:class:`InstanceStreamSelector` handles what every learner of :mod:`streamfs.algorithms.ofs`
shares (the conventions are listed in that module's docstring): input conversion (dense,
sparse, data frames, dicts), labels, scaling and its advice, lazy allocation, block processing
through the numba kernels of :mod:`streamfs.algorithms.ofs_kernels`, the scikit-learn and
River-style APIs, and ``to_state()`` / ``from_state``. A learner defines its update rule
through ``_kernel_params`` and checks its own parameters in ``_validate_params``.
"""

from __future__ import annotations

import inspect
import math
import numbers
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Sequence

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
from streamfs.algorithms.measures.columns import DBL_MAX, MIN_ABS_FOR_SUMS, is_float_matrix
from streamfs.algorithms.rounding import round_half_away
from streamfs.algorithms._validation import (
    binary_sparse_tags,
    check_budget,
    check_int,
    check_label_types,
    check_state_algorithm,
    check_targets,
    check_frame,
    column_names,
    is_missing,
    label_array,
    shown,
    writable,
)

__all__ = [
    "InstanceStreamSelector",
]

_CSR = tuple  # (indptr int64, indices int64, data float64)
_NORM_MODES = {False: 0, None: 0, "none": 0, True: 1, "l2": 1, "standardize": 2}
#: the largest |x| the learners take unscaled (normalize False or "standardize"): the kernel
#: keeps w = scale * v and folds the scale only below 1e-100, so an update's (eta x / scale)^2
#: overflows from about |x| = 1e54 (importance weights make it earlier); measured: no overflow
#: up to 1e50 over 90 random streams of every learner, the first at 1e55
RAW_ABS_LIMIT = 1e40
#: unit-norm scaling is advised against (a warning, not a refusal) when some column's largest
#: |x| is this many times the median column's: such columns make up almost all of every
#: instance's norm (scikit-learn's breast cancer: the areas, 5,400 times in 64 instances)
DOMINANT_RATIO = 1000.0
#: instances of the first block that advice looks at: a gap that wide shows in any few of them
ADVICE_ROWS = 64
_M64 = (1 << 64) - 1
#: the names of an instance stream's features where its caller keeps them (see
#: :func:`naming_columns`)
_column_names: ContextVar[Any] = ContextVar("streamfs_ofs_column_names", default=None)


@contextmanager
def naming_columns(names: Any) -> Iterator[None]:
    """Within the block, a learner without ``feature_names_in_`` names its columns ``names``
    (a sequence of ``d`` names, or None) in its advice. The worker keeps an instance stream's
    names itself, for naming results: set on the learner, they would make scikit-learn warn
    of every block that comes without them.

    >>> from streamfs.algorithms.ofs import OFS
    >>> X = np.column_stack([np.linspace(500, 2500, 8), np.linspace(0.1, 0.3, 8),
    ...                      np.linspace(0.2, 0.1, 8)])
    >>> with naming_columns(["area", "symmetry", "concavity"]):
    ...     print(OFS()._data_advice(X))  # doctest: +ELLIPSIS
    OFS(normalize=True) scales each instance to unit L2 norm, and column 0 ('area') reaches ...
    """
    token = _column_names.set(names)
    try:
        yield
    finally:
        _column_names.reset(token)


def _rng_from_seed(random_state: Any) -> np.ndarray:
    """PCG64 state ``[state_hi, state_lo, inc_hi, inc_lo]`` seeded like numpy would."""
    if isinstance(random_state, np.random.Generator):
        # derive a seed so that the caller's generator advances, as scikit-learn does
        random_state = int(random_state.integers(0, 2**63 - 1))
    elif isinstance(random_state, np.random.RandomState):
        random_state = int(random_state.randint(0, 2**63 - 1, dtype=np.int64))
    st = np.random.PCG64(random_state).state["state"]
    return _rng_pack(st["state"], st["inc"])


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


class InstanceStreamSelector(ClassifierMixin, SelectorMixin, StreamParamsMixin, BaseEstimator):
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
            raise ValueError(
                f"{type(self).__name__} state of n_features={d} x {per} bytes = {d * per} bytes "
                f"exceeds max_buffer_bytes={int(self.max_buffer_bytes)}; use n_features <= "
                f"{int(self.max_buffer_bytes) // per} or a larger max_buffer_bytes")

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

    @staticmethod
    def _check_classes(classes: list) -> list:
        cl = sorted({np.asarray(c).item() for c in classes})
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

    # ------------------------------------------------------------------ input conversion
    def _known_names(self) -> np.ndarray | None:
        """``feature_names_in_``, or, for a learner started on dicts keyed by name with some
        features not named yet, ``_partial_names`` (``None`` where not named yet: scikit-learn
        defines ``feature_names_in_`` only when every feature has a name); ``None`` without
        names."""
        names = self.__dict__.get("feature_names_in_")
        return self.__dict__.get("_partial_names") if names is None else names

    def _feature_index(self) -> dict[str, int] | None:
        """``{name: index}`` of :meth:`_known_names` (built once), or ``None``. Slots not
        named yet (names taken from dict keys, see :meth:`_key_index`) are left out."""
        names = self._known_names()
        if names is None:
            return None
        cache = self.__dict__.get("_name_pos")
        if cache is None or cache[0] is not names:
            cache = (names, {str(n): i for i, n in enumerate(names) if n is not None})
            self._name_pos = cache
        return cache[1]

    def _key_index(self, key: Any, names: dict[str, int] | None) -> int:
        """Feature index of one dict key: an int index or a feature name; -1 for a name not
        seen yet (its weight is 0: it adds nothing to a score; learning names it, see
        :meth:`_dict_to_csr`).

        A learner that starts on dicts with names as keys (no DataFrame gave it
        ``feature_names_in_``, no instance taught it features by position) names its features
        from the keys it learns from, as River's learners take features from their input: the
        first new name is feature 0, the next 1, and so on, up to ``n_features`` names."""
        if isinstance(key, (int, np.integer)) and not isinstance(key, (bool, np.bool_)):
            return int(key)
        if not isinstance(key, str):
            raise ValueError(
                f"dict keys must be int feature indices or str feature names, got {key!r}")
        if names is not None and key in names:
            return names[key]
        if names is None and self.n_seen_ > 0:  # it learned features by position
            raise ValueError(
                f"{type(self).__name__} has no feature names, so dict keys must be int "
                f"feature indices, got {key!r}; fit or partial_fit it on a pandas "
                "DataFrame, or start it on dicts with names as keys, to use names")
        if names is not None and len(names) == self.d_:
            raise ValueError(
                f"unknown feature name {key!r}: not one of the {len(names)} names in "
                f"feature_names_in_ (the learner has {self.d_} features, all named)")
        return -1

    def _unnamed_slots(self, k: int) -> np.ndarray:
        """The first ``k`` features without a name (names from keys fill them in order);
        ``ValueError`` when fewer are left."""
        names = self._known_names()
        free = (np.arange(self.d_) if names is None
                else np.flatnonzero(np.fromiter((n is None for n in names), bool, self.d_)))
        if free.size < k:
            raise ValueError(
                f"x brings {k} new feature names but {type(self).__name__} has "
                f"{free.size} of its n_features={self.d_} features left to name: a learner "
                "started on dicts names at most n_features features")
        return free[:k]

    def _name_features(self, keys: list[str], slots: np.ndarray) -> None:
        """Name the features ``slots`` ``keys``: in ``_partial_names`` until every feature
        has a name, which then become ``feature_names_in_`` (all strings, as scikit-learn
        has them)."""
        names = self.__dict__.get("_partial_names")
        if names is None:
            names = self._partial_names = np.full(self.d_, None, dtype=object)
        index = self._feature_index()
        for key, slot in zip(keys, slots.tolist()):
            names[slot] = key  # in place: the cached index is updated alongside
            index[key] = slot
        if len(index) == self.d_:  # all named (the same array: the cached index holds)
            self.feature_names_in_ = names
            del self._partial_names

    def _dict_to_csr(self, x: dict, learn: bool = False) -> tuple[_CSR, list[str], np.ndarray]:
        """The row, and the names it brings with the features they are to name. ``learn``:
        names not seen yet take the first unnamed features (see :meth:`_key_index`); the
        caller names them once the instance is learned (a refused instance names nothing).
        Otherwise they are left out."""
        self._ensure_init(None)
        n = len(x)
        new: list[str] = []
        slots = _EMPTY_INDEX
        if all(type(k) is int for k in x):
            keys = np.fromiter(x.keys(), dtype=np.int64, count=n)
        else:
            names = self._feature_index()
            keys = np.fromiter((self._key_index(k, names) for k in x), dtype=np.int64,
                               count=n)
            if (keys < 0).any():
                unseen = keys < 0
                if learn:
                    new = [k for k, u in zip(x, unseen.tolist()) if u]
                    keys[unseen] = slots = self._unnamed_slots(len(new))
                else:  # names not seen yet weigh 0: left out
                    x = {k: x[k] for k, u in zip(list(x), unseen.tolist()) if not u}
                    keys = keys[~unseen]
                    n = keys.size
            if np.unique(keys).size != n:
                raise ValueError("a feature appears twice in the dict (by index and by name)")
        try:
            vals = np.fromiter((v if type(v) is float else _number(v) for v in x.values()),
                               dtype=np.float64, count=n)
        except (TypeError, ValueError):
            bad = next(k for k, v in x.items() if not _is_float(v))
            raise ValueError(f"the value of feature {bad!r} is not a number: {x[bad]!r}") \
                from None
        if keys.size and (keys.min() < 0 or keys.max() >= self.d_):
            raise ValueError(f"feature index out of range [0, {self.d_})")
        if not self._partial and not np.isfinite(vals).all():
            raise ValueError("x contains NaN or infinite values")
        order = np.argsort(keys, kind="stable")
        keys, vals = keys[order], vals[order]
        keep = vals != 0.0
        keys, vals = keys[keep], vals[keep]
        return (np.array([0, keys.size], dtype=np.int64), keys, vals), new, slots

    def _one_to_learn(self, x: Any) -> tuple[_CSR, list[str], np.ndarray]:
        """:meth:`_as_csr` of one instance to learn, with the names a dict (or Series) brings
        and the features they are to name (:meth:`_name_features`, once it is learned)."""
        if _is_series(x):
            x = x.to_dict()
        if isinstance(x, dict) and not sp.issparse(x):
            return self._dict_to_csr(x, learn=True)
        return self._as_csr(x, single=True), [], _EMPTY_INDEX

    def _as_csr(self, X: Any, single: bool, method: str = "learn_one") -> _CSR:
        """``(indptr, indices, data)`` with sorted indices, no duplicates and no zeros, so that
        dense, sparse and dict inputs run through identical arithmetic. A dict's names not
        seen yet are left out (they weigh 0). ``single``: one instance, for ``method``."""
        if isinstance(X, dict) and not sp.issparse(X):  # (a dok_matrix is a dict)
            return self._dict_to_csr(X)[0]
        if single and _is_series(X):
            # a pandas Series (df.iloc[i], iterrows()): its labels say which feature each
            # value is, not its positions
            return self._dict_to_csr(X.to_dict())[0]
        if sp.issparse(X):
            # X itself where it is one already (the worker's decoded blocks, whose canonical
            # flag the decoder set); copied below only where it must change
            M = X if is_float_matrix(X, "csr") else sp.csr_matrix(X, dtype=np.float64)
            if single and M.shape[0] != 1:
                raise _not_one_instance(method, f"a sparse matrix of {M.shape[0]} rows")
            self._ensure_init(M.shape[1])
        else:
            A = np.asarray(X, dtype=np.float64)
            if single:
                if A.ndim != 1:
                    raise _not_one_instance(method, f"an array of {A.ndim} dimension(s)")
                self._ensure_init(A.shape[0])
                nz = np.flatnonzero(A)
                if not self._partial and not np.isfinite(A[nz]).all():
                    raise ValueError("x contains NaN or infinite values")
                return np.array([0, nz.size], dtype=np.int64), nz.astype(np.int64), A[nz]
            if A.ndim != 2:
                raise ValueError(f"expected a 2-D array, got {A.ndim} dimension(s)")
            self._ensure_init(A.shape[1])
            M = _k.dense_to_csr(np.ascontiguousarray(A))
            if not self._partial and not np.isfinite(M[2]).all():
                raise ValueError("X contains NaN or infinite values")
            return M
        if not (M.has_canonical_format and M.data.all()):
            M = M.copy()  # X stays as it was
            M.sum_duplicates()  # also sorts the indices
            M.eliminate_zeros()
        if not self._partial and not np.isfinite(M.data).all():
            raise ValueError("X contains NaN or infinite values")
        return (
            M.indptr.astype(np.int64, copy=False),
            M.indices.astype(np.int64, copy=False),
            M.data.astype(np.float64, copy=False),
        )

    @staticmethod
    def _rows(M: _CSR, a: int, b: int) -> _CSR:
        indptr, indices, data = M
        lo, hi = indptr[a], indptr[b]
        return indptr[a : b + 1] - lo, indices[lo:hi], data[lo:hi]

    # ------------------------------------------------------------------ kernel calls
    def _run(self, M: _CSR, ysign: np.ndarray, learn: bool, first_row: int = 0) -> np.ndarray:
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

    def _learn_block(self, M: _CSR, y: Any) -> None:
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

    def _data_advice(self, X: Any, names: Any = None) -> str | None:
        """What the learner warns of when a stream starts with the rows of ``X`` (see
        :meth:`_scale_advice`), for a caller that checks the data before it is published:
        the learner warns at its first block, which runs in the worker."""
        return self._scale_advice(self._as_csr(X[:ADVICE_ROWS], single=False), names)

    def _scale_advice(self, M: _CSR, names: Any = None) -> str | None:
        """Advice against unit-norm scaling (the full-input learners' default, the paper's)
        or none (``normalize=False``, the partial-input learners' default) where it lets a
        few columns outweigh every other: some column's largest ``|x|`` over the first
        ``ADVICE_ROWS`` instances is ``DOMINANT_RATIO`` times the median column's (of those
        with a value). None otherwise, and with ``normalize="standardize"``.

        >>> from streamfs.algorithms.ofs import OFS
        >>> X = np.column_stack([np.linspace(0.05, 0.15, 8), np.linspace(500, 2500, 8),
        ...                      np.linspace(0.1, 0.3, 8), np.linspace(0.2, 0.0, 8)])
        >>> print(OFS()._data_advice(X, ["smoothness", "area", "symmetry", "concavity"]))
        ... # doctest: +NORMALIZE_WHITESPACE
        OFS(normalize=True) scales each instance to unit L2 norm, and column 1 ('area') reaches
        over 1,000 times the median column's |x| at the stream's start: such columns make up
        almost all of every instance's norm, so the other features barely move the weights.
        Pass normalize='standardize' (running z-scores, then unit norm) or scale the features
        first
        >>> OFS(normalize="standardize")._data_advice(X) is None
        True
        """
        mode = self._norm_mode()
        if mode >= 2:
            return None
        indptr, indices, data = self._rows(M, 0, min(M[0].size - 1, ADVICE_ROWS))
        if not data.size:
            return None
        # each column's largest |x| over the columns with a value only: d may be millions
        order = np.argsort(indices, kind="stable")
        cols = indices[order]
        starts = np.flatnonzero(np.r_[True, cols[1:] != cols[:-1]])
        peak = np.maximum.reduceat(np.abs(data[order]), starts)
        cols = cols[starts]
        present = peak[peak > 0]  # (NaN, which a partial-input learner may be given, is not)
        if not present.size:
            return None
        typical = float(np.median(present))
        dominant = cols[peak >= DOMINANT_RATIO * typical]
        if not dominant.size:
            return None
        if names is None:
            names = getattr(self, "feature_names_in_", None)
        if names is None:
            names = _column_names.get()
        if names is None:
            names = self._known_names()  # partly named: the names known so far
        shown_cols = ", ".join(f"{j} ({str(names[j])!r})"
                               if names is not None and names[j] is not None else str(j)
                               for j in dominant[:5].tolist())
        more = f" and {dominant.size - 5} more" if dominant.size > 5 else ""
        which = (f"column {shown_cols} reaches" if dominant.size == 1
                 else f"columns {shown_cols}{more} reach")
        does, share = (("scales each instance to unit L2 norm", "every instance's norm")
                       if mode == 1 else ("takes the values as they are", "every score"))
        # no figure of this block in the text: one stream's (or one evaluation's) blocks
        # give the same message, which Python and the worker's log then show once
        return (
            f"{type(self).__name__}(normalize={shown(self.normalize)}) {does}, and {which} over "
            f"{DOMINANT_RATIO:,.0f} times the median column's |x| at the stream's start: such "
            f"columns make up almost all of {share}, so the other features barely move the "
            f"weights. Pass normalize='standardize' (running z-scores, then unit norm) or "
            f"scale the features first")

    def _check_values(self, X: Any, names: Any = None, first_row: int = 0) -> None:
        """The check of :meth:`_check_norms` on a block ``X`` about to be published (see
        :func:`streamfs.algorithms.opening.check_values`), naming the data rows from
        ``first_row``; ``names`` are not needed: it names rows."""
        self._check_norms(self._as_csr(X, single=False), first_row)

    def _check_norms(self, M: _CSR, first_row: int | None = None) -> None:
        """``ValueError``, before anything is learned from the block: where instances are
        scaled to unit norm, naming the rows whose L2 norm overflows float64 (they would
        silently become all zeros); where they are not, for values beyond
        :data:`RAW_ABS_LIMIT`, naming their rows; in every mode, naming the rows whose values
        all lie under :data:`~streamfs.algorithms.measures.columns.MIN_ABS_FOR_SUMS` (their
        squares and products underflow: unit-norm scaling divides by a norm of 0, raw margins
        come out 0). Rows are the block's, or with ``first_row`` (a publisher's chunk of a
        source) the source's data rows."""

        def where(rows: np.ndarray) -> str:
            shown_rows = f"{rows[:10].tolist()}{' ...' if rows.size > 10 else ''}"
            if first_row is None:
                return f"rows {shown_rows} of the block"
            return f"data rows {(rows[:10] + first_row).tolist()}" \
                   f"{' ...' if rows.size > 10 else ''} (counted from 0)"

        indptr, _, data = M
        if not data.size:
            return
        magnitude = np.abs(data)
        largest = float(np.max(magnitude))
        if self._partial and not math.isfinite(largest):
            # NaN and inf are refused where a partial-input learner reads them, not elsewhere
            finite = data[np.isfinite(data)]
            largest = float(np.max(np.abs(finite))) if finite.size else 0.0
        # Each row's largest |x|, where some row may lie wholly under the bound: a row that
        # does has a first value that small, so one look a row decides (a pass over every
        # value, measured alone, cost about 6 ms of the dense-instances bench stream's 0.1 s
        # of steps); for one row (learn_one) its largest is known already.
        top = None
        if indptr.size == 2:
            if 0.0 < largest < MIN_ABS_FOR_SUMS:
                top = np.array([largest])
        else:
            filled = np.diff(indptr) > 0
            starts = indptr[:-1][filled]
            if (magnitude[starts] < MIN_ABS_FOR_SUMS).any():  # rare: look closer
                top = np.zeros(indptr.size - 1)
                top[filled] = np.maximum.reduceat(magnitude, starts)
        if top is not None:
            rows = np.flatnonzero((top > 0.0) & (top < MIN_ABS_FOR_SUMS))
            if rows.size:
                raise ValueError(
                    f"{type(self).__name__}: {where(rows)} hold only values under "
                    f"{MIN_ABS_FOR_SUMS:.3g} (|x| at most {float(top[rows].max()):.3g}), whose "
                    f"squares and products underflow float64: rescale the features")
        if self._norm_mode() != 1:
            if largest > RAW_ABS_LIMIT:
                with np.errstate(invalid="ignore"):
                    over = np.abs(data) > RAW_ABS_LIMIT
                rows = np.unique(np.searchsorted(indptr, np.flatnonzero(over), side="right") - 1)
                raise ValueError(
                    f"{type(self).__name__}: |x| up to {largest:.3g}; without unit-norm scaling "
                    f"(normalize={shown(self.normalize)}) values must stay within "
                    f"{RAW_ABS_LIMIT:.0e}, or its weights' arithmetic overflows float64: "
                    f"rescale the features ({where(rows)})")
            return
        widest = data.size if indptr.size == 2 else int(np.max(np.diff(indptr)))
        if largest <= math.sqrt(DBL_MAX / widest):
            return  # no row's sum of squares can overflow
        with np.errstate(over="ignore"):
            sums = np.add.reduceat(data * data, indptr[:-1]) * (np.diff(indptr) > 0)
        rows = np.flatnonzero(~np.isfinite(sums))
        if rows.size:
            raise ValueError(
                f"{type(self).__name__}: {where(rows)} have an L2 norm beyond "
                f"float64 (|x| up to {largest:.3g}), so they cannot be "
                f"scaled to unit norm: rescale the features")

    def _check_overflow(self, M: _CSR) -> None:
        """``ValueError`` when values too large for float64 arithmetic (products and sums of
        squares of the inputs) made the weights or the running statistics NaN or infinite:
        the model learned from this block is void. The worker then rebuilds it from the last
        checkpoint and dead-letters the block; in Python, fit again."""
        # the kernel turns the scale NaN when the weights' squared norm overflows; O(1) and
        # O(nnz) checks, so that learn_one stays cheap
        ok = math.isfinite(self._fst[0]) and math.isfinite(self._fst[1])
        if ok and self._norm_mode() >= 2:
            # running means and squared deviations overflow where this block's values are (a
            # zero moves a statistic by its own, finite, mean only)
            cols = M[1]
            ok = np.isfinite(self._m2[cols]).all() and np.isfinite(self._mean[cols]).all()
        if not ok:
            data = M[2]
            largest = float(np.max(np.abs(data))) if data.size else 0.0
            raise ValueError(
                f"{type(self).__name__}: its weights or running statistics overflowed float64 "
                f"while learning from instances with |x| up to {largest:.3g}: rescale the "
                f"features (this model is void; fit it again)")

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
        if not first and self.n_seen_ == 0 and self._known_names() is None:
            # opened early (n_features=, attributes_to_observe) but not fed yet: take names
            names = column_names(X)
            if names is not None and len(names) == self.d_:
                self.feature_names_in_ = np.asarray(names, dtype=object)
        check_frame(X)
        validate_data(self, X, reset=first, skip_check_array=True)
        if not (sp.issparse(X) or isinstance(X, np.ndarray)):
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
        return self

    def _set_classes(self, classes: Any) -> None:
        try:
            cl = self._check_classes(list(classes))
        except (TypeError, ValueError):
            raise ValueError(
                f"classes must be a list of two distinct labels, got {shown(classes)}"
            ) from None
        known = getattr(self, "_labels", None)
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
            M = self._as_csr(X, single=True)
        else:
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
        if _is_series(x):
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
        """Plain-data snapshot; ``from_state`` continues bit-identically (RNG included)."""
        state: dict = {"algorithm": type(self).__name__, "params": self._state_params()}
        if not hasattr(self, "d_"):
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


_EMPTY_INDEX = np.empty(0, dtype=np.int64)


class _RowRefused(ValueError):
    """A partial-input learner refused row ``row`` of a block (NaN or inf among the attributes
    it read); the rows before it were learned."""

    def __init__(self, row: int, message: str) -> None:
        super().__init__(message)
        self.row = row


def _values_at(M: _CSR, idx: np.ndarray) -> np.ndarray:
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


def _not_one_instance(method: str, got: str) -> ValueError:
    return ValueError(f"{method} expects one instance (a dict, a pandas Series, a 1-D array or "
                      f"a sparse row), got {got}")


def _is_series(x: Any) -> bool:
    """Whether ``x`` is a pandas Series (duck-typed: pandas is not a dependency)."""
    return getattr(x, "ndim", None) == 1 and hasattr(x, "index") and hasattr(x, "to_dict")


def _number(value: Any) -> float:
    """A dict value as a float; text is refused, as scikit-learn refuses it in arrays (float()
    would take "1.5")."""
    if isinstance(value, (str, bytes)):
        raise TypeError(f"text is not a number: {value!r}")
    return float(value)


def _is_float(value: Any) -> bool:
    try:
        _number(value)
    except (TypeError, ValueError):
        return False
    return True


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
