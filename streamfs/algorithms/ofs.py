"""Online Feature Selection for instance streams (Wang, Zhao, Hoi & Jin, TKDE 2014).

An *instance* stream fixes the ``d`` features and delivers labelled instances one at a time.
Every learner here keeps a linear classifier ``w`` with at most ``B`` non-zero weights; it
predicts ``sgn(w.x)`` before learning from each instance (prequential), and the selected
features at any time are the non-zero coordinates of ``w``.

Full input (the learner may read every attribute):

* :class:`OFS` -- Algorithm 3: if ``y w.x <= 1``: ``w~ = (1 - lam eta) w + eta y x``,
  ``w^ = min(1, radius/||w~||) w~`` (``radius = 1/sqrt(lam)`` by default), ``w = Truncate(w^,
  B)``; else ``w = (1 - lam eta) w``.
* :class:`PerceptronTruncation` -- PE_trun, Algorithm 1: on a mistake ``w = Truncate(w + eta y
  x, B)``.
* :class:`RandomSelection` -- RAND: a perceptron on a fixed random set of ``B`` features
  (``redraw=True``: a fresh random set after every mistake, as in the authors' scripts).

Partial input (the learner reads only ``B`` attributes of each instance):

* :class:`OFSPartial` -- OFS_P, Algorithm 4: with probability ``epsilon`` observe ``B`` random
  attributes, else the support of ``w``; if ``y w.x~ <= 1``: ``x^_i = x~_i / ((B/d) epsilon +
  1[w_i != 0] (1 - epsilon))``, ``w = Truncate(min(1, R/||w~||) w~, B)`` with ``w~ = w + eta y
  x^``.
* :class:`OFSRandomPartial` -- OFS_rand (Sec. 4.3.1): the OFS_P update, but the ``B`` observed
  attributes are always chosen at random (OFS_P with ``epsilon = 1``, so ``x^ = (d/B) x~``).
* :class:`PerceptronRandomPartial` -- PE_rand (Sec. 4.3.1): a perceptron on ``B`` attributes
  chosen at random for each instance, truncated to ``B`` weights after each mistake.

Conventions shared by all learners (documented choices where the paper is silent):

* ``B = n_features_to_select``: an int, a fraction of ``d`` (float in ``(0, 1]``) or ``None``
  for ``round(0.1 d)`` (fractions rounded halves up, as MATLAB's ``round`` in the authors'
  scripts: ``d = 25`` keeps 3); ``d`` is fixed when the stream opens (``n_features=`` or the first
  instance).
* labels: two classes, the larger one (in sort order) is ``+1``; more classes raise a
  ``ValueError`` naming them (pass ``classes=`` to fix the pair up front, or wrap the learner
  in :class:`OneVsRest`). Until the second class appears the first is provisionally ``+1``
  if it is a positive number, else ``-1``; if the guess was wrong, ``w`` is negated -- exact,
  because every update rule is odd in ``y``.
* mistakes: a margin ``y w.x <= 0`` counts as a mistake (a zero score carries no information;
  the authors' experiment scripts count the same way); ``predict_one`` breaks the tie towards
  the positive class. Before any label (none seen, none given by ``classes``) ``predict_one``
  returns ``None``, as River's classifiers do, and ``predict`` raises ``NotFittedError``; with
  one label seen, both predict that label.
* truncation keeps the ``B`` largest ``|w_i|``; ties keep the lower feature index.
* state: ``to_state()`` is plain data (support in heap order with the lazy scale, counters,
  running statistics and their units, the PCG64 generator with its 128-bit words as decimal
  strings, a pending observation choice); ``from_state`` continues bit-identically.
* scaling (``normalize``): ``True``/``"l2"`` divides each instance by its L2 norm (the paper's
  ``||x|| <= 1``); ``"standardize"`` first z-scores every feature with running mean and
  variance (updated with the instance before it is scaled; ``predict`` does not update them),
  then divides by the L2 norm -- ``O(d)`` per instance since it densifies ``x``; ``False``
  leaves ``x`` as given. Partial-input learners cannot compute the norm of an instance they
  do not fully read: they accept ``False`` (default: data pre-scaled upstream) or
  ``"standardize"`` (running z-scores of the observed attributes, divided by ``sqrt(d)`` so
  that ``E||x||^2 = 1``). Each column's running statistics are kept in units of a power of
  two of its own, 1 unless its values are all tiny (under 2^-400): z-scores do not depend on
  a column's scale, and a column of values near 1e-200 would otherwise have squared
  deviations that underflow to a variance of 0 and z-scores of 0.
* parameters are checked by ``_validate_params()`` when the stream opens and at the start of
  ``fit`` / ``partial_fit`` (constructors only store them); once the stream is open they are
  fixed: a learning step (``partial_fit``, ``learn_one``, ``attributes_to_observe``,
  ``learn_observed``) refuses parameters changed since, ``fit`` starts over with them
  (:mod:`streamfs.algorithms._stream_params`).
* NaN and inf: refused by ``fit``, ``predict`` and ``decision_function``, and by
  ``partial_fit`` / ``learn_one`` of the full-input learners. Partial-input learners read
  only ``B`` attributes of an instance, so their ``partial_fit`` / ``learn_one`` /
  ``predict_one`` refuse NaN and inf among those only, before learning the row (earlier rows
  of a block are learned; the stream goes on as if the row had not come), and do not look at
  the others (``learn_observed`` refuses NaN among the values it is given).
* scikit-learn: every learner is a classifier and a feature selector (``fit`` is one pass
  over the rows in order from a fresh state; ``transform`` keeps the selected features in
  ascending index order). River-style: ``learn_one``, ``predict_one`` and ``transform_one``
  take dicts keyed by int feature index or, for a learner fitted on a data frame with string
  column names, by the names in ``feature_names_in_``, or, for a learner started on dicts
  keyed by name, by the names taken from their keys (``feature_names_in_`` once every
  feature has one, as scikit-learn defines it; until then the learner keeps the names it has
  privately and is, to scikit-learn, fitted without names); other string keys raise
  ``ValueError``.

Example (the paper's parameters on a toy stream):

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> X = rng.normal(size=(500, 20))
>>> y = np.where(X[:, 3] - X[:, 7] > 0, 1, -1)
>>> model = OFS(n_features_to_select=4).partial_fit(X, y)
>>> [(s["feature"], s["score"] > 0) for s in model.selection()][:2]
[(7, False), (3, True)]
>>> len(model.selected_), model.n_seen_, model.mistakes_ < 50
(4, 500, True)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from streamfs.algorithms import ofs_kernels as _k
from streamfs.algorithms._validation import check_bool, check_number, check_random_state, shown
from streamfs.algorithms.instance_stream import InstanceStreamSelector, _one_label

__all__ = [
    "OFS",
    "PerceptronTruncation",
    "RandomSelection",
    "OFSPartial",
    "OFSRandomPartial",
    "PerceptronRandomPartial",
]


class _PartialMixin:
    """Partial input: ask which attributes to observe, then pass only their values."""

    _partial = True

    def attributes_to_observe(self) -> np.ndarray:
        """Indices the learner will read from the next instance (draws from its generator;
        repeated calls return the same pending choice until :meth:`learn_observed`)."""
        self._check_stream_params()
        self._ensure_init(None)
        if self._pending is None:
            m = _k.choose(self._cidx, self._heap, self._mark, self._rng, self._fp, self._ip,
                          self._ist)
            self._pending = self._cidx[:m].copy()
        return self._pending.copy()

    def learn_observed(self, idx: Any, values: Any, y: Any) -> "_PartialMixin":
        """Learn from the values of the attributes returned by :meth:`attributes_to_observe`."""
        self._check_stream_params()
        if self._pending is None:
            raise RuntimeError("call attributes_to_observe() first")
        idx = np.asarray(idx, dtype=np.int64)
        if not np.array_equal(idx, self._pending):
            raise ValueError("idx must be the attributes returned by attributes_to_observe()")
        vals = np.asarray(values, dtype=np.float64).reshape(-1)
        if vals.shape != idx.shape:
            raise ValueError("values must have one entry per observed attribute")
        if not np.isfinite(vals).all():
            raise ValueError("values contain NaN or infinite values")
        # partial_fit's checks of the values, as one row of the observed attributes; a
        # refused instance or label keeps the choice pending, so the caller can retry
        M = (np.array([0, idx.size], dtype=np.int64), idx, vals)
        self._check_norms(M)
        segments = self._encode(_one_label(y, self._labels))
        self._pending = None
        for start, ysign in segments:
            if start < 0:
                self._fst[0] = -self._fst[0]
                continue
            _k.learn_observed(
                idx, vals, idx.size, ysign[0], self._v, self._hpos, self._member, self._heap,
                self._hkey, self._nbuf, self._nval, self._widx, self._wval, self._cnt, self._mean,
                self._m2, self._unit, self._fp, self._ip, self._fst, self._ist,
            )
        self._check_overflow(M)
        return self


class OFS(InstanceStreamSelector):
    """OFS with full input (Algorithm 3): hinge-triggered gradient step with decay
    ``(1 - lam eta)``, projection onto the L2 ball of radius ``1/sqrt(lam)``, truncation to
    ``B`` weights. The authors' experiment script leaves the decay out (``w + eta y x``, then
    the ball of radius 10): ``OFS(lam=0, radius=10)``, which selects other features on some
    streams (``tests/algorithms/test_ofs_authors_variant.py``).

    Parameters
    ----------
    eta : float, default 0.2
        Step size ``eta > 0``.
    lam : float, default 0.01
        Regularisation ``lam``: every instance decays ``w`` by ``1 - lam eta``, so
        ``0 <= lam < 1/eta``.
    radius : float or None, default None
        Radius of the L2 ball ``w`` is projected onto; ``None``: ``1/sqrt(lam)`` (no ball for
        ``lam = 0``).
    {parameters every instance-stream learner shares}

    >>> m = OFS(n_features_to_select=1, normalize=False)
    >>> m.learn_one(np.array([0.6, 0.8]), 1).coef_   # w = trunc(0.2 * x, 1)
    array([0.  , 0.16])
    >>> m.mistakes_, m.n_updates_
    (1, 1)
    """

    def __init__(
        self,
        n_features_to_select: int | float | None = None,
        eta: float = 0.2,
        lam: float = 0.01,
        normalize: bool | str = True,
        *,
        radius: float | None = None,
        n_features: int | None = None,
        classes: list | None = None,
        max_buffer_bytes: int = 1 << 30,
    ) -> None:
        super().__init__(
            n_features_to_select, n_features=n_features, normalize=normalize, classes=classes,
            max_buffer_bytes=max_buffer_bytes,
        )
        self.eta = eta
        self.lam = lam
        self.radius = radius

    def _validate_params(self) -> None:
        """Shared parameters, then ``eta > 0``, ``0 <= lam < 1/eta`` (the decay ``1 - lam
        eta`` must stay positive) and ``radius`` ``None`` or ``> 0``."""
        super()._validate_params()
        check_number("eta", self.eta, 0.0, low_open=True)
        check_number("lam", self.lam, 0.0)
        if self.lam * self.eta >= 1.0:
            raise ValueError(
                f"lam must be a number in [0, 1/eta) = [0, {shown(1.0 / self.eta)}) so that the "
                f"decay 1 - lam*eta stays positive, got {shown(self.lam)}"
            )
        check_number("radius", self.radius, 0.0, low_open=True, allow_inf=True, allow_none=True)

    def _kernel_params(self, d, B):
        if self.radius is not None:
            radius = self.radius
        else:
            radius = np.inf if self.lam == 0 else 1.0 / np.sqrt(self.lam)
        return [self.eta, 1.0 - self.lam * self.eta, radius, 1.0, 0.0], 0, 0


class PerceptronTruncation(InstanceStreamSelector):
    """PE_trun (Algorithm 1): perceptron step ``w + eta y x`` on each mistake, then truncation
    to the ``B`` largest weights.

    Parameters
    ----------
    eta : float, default 1.0
        Step size of the perceptron update, ``eta > 0``.
    {parameters every instance-stream learner shares}

    >>> m = PerceptronTruncation(n_features_to_select=1, normalize=False)
    >>> m.partial_fit(np.array([[1.0, 2.0], [3.0, 1.0]]), [1, -1]).coef_
    array([-3.,  0.])
    """

    def __init__(
        self,
        n_features_to_select: int | float | None = None,
        eta: float = 1.0,
        normalize: bool | str = True,
        *,
        n_features: int | None = None,
        classes: list | None = None,
        max_buffer_bytes: int = 1 << 30,
    ) -> None:
        super().__init__(
            n_features_to_select, n_features=n_features, normalize=normalize, classes=classes,
            max_buffer_bytes=max_buffer_bytes,
        )
        self.eta = eta

    def _validate_params(self) -> None:
        """Shared parameters, then ``eta > 0``."""
        super()._validate_params()
        check_number("eta", self.eta, 0.0, low_open=True)

    def _kernel_params(self, d, B):
        return [self.eta, 1.0, np.inf, 0.0, 0.0], 0, 0


class RandomSelection(InstanceStreamSelector):
    """RAND: perceptron restricted to ``B`` features drawn at random when the stream opens.
    Only those attributes are read (``attributes_to_observe`` returns them), so it serves as
    a baseline for both full and partial input. Scaling (``normalize``) is computed on the
    whole instance, like the full-input learners, before the restriction.

    ``redraw=True`` is RAND as the authors' experiment scripts run it: on each mistake the
    perceptron step ``w + eta y x`` is taken on the whole instance, then only the coordinates
    inside a fresh random draw of ``B`` attributes (out of all ``d``) are kept. It reads whole
    instances, so it is a full-input baseline only.

    Parameters
    ----------
    eta : float, default 1.0
        Step size of the perceptron update, ``eta > 0``.
    {random_state}
    redraw : bool, default False
        Draw a fresh set of ``B`` attributes after every mistake (the authors' scripts)
        instead of one set when the stream opens.
    {parameters every instance-stream learner shares}

    >>> m = RandomSelection(n_features_to_select=2, n_features=10, random_state=0)
    >>> m.attributes_to_observe().tolist() == sorted(m.attributes_to_observe().tolist())
    True
    >>> X = np.eye(10)[:4] + 0.1
    >>> r = RandomSelection(2, redraw=True, random_state=0).partial_fit(X, [1, -1, 1, -1])
    >>> len(r.selected_) <= 2
    True
    """

    def __init__(
        self,
        n_features_to_select: int | float | None = None,
        eta: float = 1.0,
        normalize: bool | str = True,
        random_state: int | np.random.Generator | np.random.RandomState | None = None,
        redraw: bool = False,
        *,
        n_features: int | None = None,
        classes: list | None = None,
        max_buffer_bytes: int = 1 << 30,
    ) -> None:
        super().__init__(
            n_features_to_select, n_features=n_features, normalize=normalize, classes=classes,
            max_buffer_bytes=max_buffer_bytes,
        )
        self.eta = eta
        self.random_state = random_state
        self.redraw = redraw

    def _validate_params(self) -> None:
        """Shared parameters, then ``eta > 0``, ``random_state`` and ``redraw``."""
        super()._validate_params()
        check_number("eta", self.eta, 0.0, low_open=True)
        check_random_state("random_state", self.random_state)
        check_bool("redraw", self.redraw)

    def _kernel_params(self, d, B):
        return [self.eta, 1.0, np.inf, 0.0, 0.0], 4 if self.redraw else 3, 0

    def _init_random(self) -> None:
        super()._init_random()
        if self.redraw:
            return
        cidx = np.zeros(self.budget_, dtype=np.int64)
        mark = np.zeros(self.d_, dtype=np.int64)
        ip = self._ip.copy()
        ip[3] = 2  # draw B attributes once with the kernel's sampler
        _k.choose(cidx, self._heap, mark, self._rng, self._fp, ip, np.zeros(6, np.int64))
        self._allowed = np.zeros(self.d_, dtype=np.bool_)
        self._allowed[cidx] = True

    def attributes_to_observe(self) -> np.ndarray:
        """The fixed attributes, ascending."""
        self._check_stream_params()
        if self.redraw:
            raise ValueError("RandomSelection(redraw=True) reads whole instances: it has no "
                             "fixed attributes to observe")
        self._ensure_init(None)
        return np.flatnonzero(self._allowed).astype(np.int64)


class OFSPartial(_PartialMixin, InstanceStreamSelector):
    """OFS_P (Algorithm 4): partial input, ``B`` attributes read per instance.

    Parameters
    ----------
    eta : float, default 0.2
        Step size ``eta > 0``.
    epsilon : float, default 0.2
        Exploration probability in ``(0, 1]``: read ``B`` random attributes instead of the
        support of ``w``.
    radius : float, default 10.0
        Radius ``R`` of the L2 ball ``w`` is projected onto (the paper's experiments use 10).
    {random_state}
    {parameters every instance-stream learner shares}

    >>> m = OFSPartial(n_features_to_select=2, n_features=4, random_state=1)
    >>> idx = m.attributes_to_observe()   # w = 0: explore with prob. epsilon, else nothing
    >>> m = m.learn_observed(idx, np.full(idx.size, 0.5), 1)
    >>> m.n_seen_, int(np.count_nonzero(m.coef_)) <= 2
    (1, True)
    """

    def __init__(
        self,
        n_features_to_select: int | float | None = None,
        eta: float = 0.2,
        epsilon: float = 0.2,
        radius: float = 10.0,
        normalize: bool | str = False,
        random_state: int | np.random.Generator | np.random.RandomState | None = None,
        *,
        n_features: int | None = None,
        classes: list | None = None,
        max_buffer_bytes: int = 1 << 30,
    ) -> None:
        super().__init__(
            n_features_to_select, n_features=n_features, normalize=normalize, classes=classes,
            max_buffer_bytes=max_buffer_bytes,
        )
        self.eta = eta
        self.epsilon = epsilon
        self.radius = radius
        self.random_state = random_state

    def _validate_params(self) -> None:
        """Shared parameters, then ``eta > 0``, ``epsilon`` in ``(0, 1]``, ``radius > 0`` and
        ``random_state``."""
        super()._validate_params()
        check_number("eta", self.eta, 0.0, low_open=True)
        check_number("epsilon", self.epsilon, 0.0, 1.0, low_open=True)
        check_number("radius", self.radius, 0.0, low_open=True, allow_inf=True)
        check_random_state("random_state", self.random_state)

    def _kernel_params(self, d, B):
        return [self.eta, 1.0, self.radius, 1.0, self.epsilon], 1, 1


class OFSRandomPartial(OFSPartial):
    """OFS_rand (Sec. 4.3.1): the OFS_P update (importance weight ``d/B``, projection onto
    the ball of radius ``R``, truncation) on ``B`` attributes drawn at random for every
    instance -- OFS_P with ``epsilon = 1``.

    Parameters
    ----------
    eta : float, default 0.2
        Step size ``eta > 0``.
    radius : float, default 10.0
        Radius ``R`` of the L2 ball ``w`` is projected onto.
    {random_state}
    {parameters every instance-stream learner shares}

    >>> OFSRandomPartial(3, n_features=30, random_state=0).attributes_to_observe().size
    3
    """

    def __init__(
        self,
        n_features_to_select: int | float | None = None,
        eta: float = 0.2,
        radius: float = 10.0,
        normalize: bool | str = False,
        random_state: int | np.random.Generator | np.random.RandomState | None = None,
        *,
        n_features: int | None = None,
        classes: list | None = None,
        max_buffer_bytes: int = 1 << 30,
    ) -> None:
        super().__init__(
            n_features_to_select, eta=eta, epsilon=1.0, radius=radius, normalize=normalize,
            random_state=random_state, n_features=n_features, classes=classes,
            max_buffer_bytes=max_buffer_bytes,
        )
        del self.epsilon  # not a parameter of this learner

    def _validate_params(self) -> None:
        """Shared parameters, then ``eta > 0``, ``radius > 0`` and ``random_state``."""
        InstanceStreamSelector._validate_params(self)  # no epsilon here
        check_number("eta", self.eta, 0.0, low_open=True)
        check_number("radius", self.radius, 0.0, low_open=True, allow_inf=True)
        check_random_state("random_state", self.random_state)

    def _kernel_params(self, d, B):
        return [self.eta, 1.0, self.radius, 1.0, 1.0], 2, 1


class PerceptronRandomPartial(_PartialMixin, InstanceStreamSelector):
    """PE_rand (Sec. 4.3.1): perceptron on ``B`` attributes drawn at random for every
    instance (no importance weighting), truncated to ``B`` weights after each mistake.

    Parameters
    ----------
    eta : float, default 1.0
        Step size of the perceptron update, ``eta > 0``.
    {random_state}
    {parameters every instance-stream learner shares}

    >>> PerceptronRandomPartial(2, n_features=5, random_state=0).attributes_to_observe().size
    2
    """

    def __init__(
        self,
        n_features_to_select: int | float | None = None,
        eta: float = 1.0,
        normalize: bool | str = False,
        random_state: int | np.random.Generator | np.random.RandomState | None = None,
        *,
        n_features: int | None = None,
        classes: list | None = None,
        max_buffer_bytes: int = 1 << 30,
    ) -> None:
        super().__init__(
            n_features_to_select, n_features=n_features, normalize=normalize, classes=classes,
            max_buffer_bytes=max_buffer_bytes,
        )
        self.eta = eta
        self.random_state = random_state

    def _validate_params(self) -> None:
        """Shared parameters, then ``eta > 0`` and ``random_state``."""
        super()._validate_params()
        check_number("eta", self.eta, 0.0, low_open=True)
        check_random_state("random_state", self.random_state)

    def _kernel_params(self, d, B):
        return [self.eta, 1.0, np.inf, 0.0, 1.0], 2, 0


#: the random learners' seed, in place of the marker line of their docstrings
_RANDOM_STATE_PARAMETER = """\
    random_state : int, numpy Generator, RandomState or None, default None
        Seed of the learner's PCG64 generator (its draws are saved with the state, so a
        restored learner draws on exactly as the live one would).
"""

#: the parameters every learner shares, in place of the marker line of its docstring
_SHARED_PARAMETERS = """\
    n_features_to_select : int, float or None, default None
        The budget ``B``, the most non-zero weights ``w`` keeps: an int, a fraction of ``d``
        in ``(0, 1]``, or ``None`` for ``round(0.1 d)`` (halves rounded up, as MATLAB's
        ``round``); a budget above ``d`` keeps every feature.
    normalize : bool or {"l2", "standardize"}
        Scaling of each instance: ``True`` or ``"l2"`` (full input only) divides it by its L2
        norm (the paper's ``||x|| <= 1``), ``"standardize"`` first z-scores every feature with
        running statistics (then divides by the L2 norm; partial input: by ``sqrt(d)``),
        ``False`` (or ``None``, ``"none"``; text in any case) takes it as given. The default
        is ``True`` for full input and ``False`` (pre-scaled data) for partial input, which
        cannot compute a norm it does not read; details in the module docstring ("scaling").
    n_features : int or None, default None
        The dimension ``d``, fixed when the stream opens; dict input (``learn_one``) needs it
        up front, otherwise the first instance gives it.
    classes : list of two labels or None, default None
        The two labels up front (the larger in sort order is ``+1``); without it the labels
        are taken as they come, and a third is refused.
    max_buffer_bytes : int, default 1 GiB
        Memory allowed for the per-feature state; a larger ``n_features`` is refused when
        the stream opens, with the numbers.
"""


_REGISTRY = {
    c.__name__: c
    for c in (
        OFS,
        PerceptronTruncation,
        RandomSelection,
        OFSPartial,
        OFSRandomPartial,
        PerceptronRandomPartial,
    )
}
for _cls in _REGISTRY.values():
    if _cls.__doc__:  # None under python -OO
        _cls.__doc__ = _cls.__doc__.replace(
            "    {parameters every instance-stream learner shares}\n", _SHARED_PARAMETERS
        ).replace("    {random_state}\n", _RANDOM_STATE_PARAMETER)
del _cls


def __getattr__(name: str) -> Any:
    """``OneVsRest``, which lived in this module before it had one of its own
    (:mod:`streamfs.algorithms.one_vs_rest`): pickles written then name it
    ``streamfs.algorithms.ofs.OneVsRest``, and still load."""
    if name == "OneVsRest":
        from streamfs.algorithms.one_vs_rest import OneVsRest

        return OneVsRest
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
