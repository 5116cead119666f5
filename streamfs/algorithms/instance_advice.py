"""The instance-stream learners' checks of the values they are given (:class:`DataAdviceMixin`,
a base of :class:`~streamfs.algorithms.instance_stream.InstanceStreamSelector`): advice against
unit-norm scaling where a few columns outweigh the others, and refusals of values whose float64
arithmetic would overflow or underflow, before a block is learned (and of weights that
overflowed, after)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import numpy as np

from streamfs.algorithms.instance_input import CSR
from streamfs.algorithms.measures.columns import DBL_MAX, MIN_ABS_FOR_SUMS
from streamfs.algorithms._validation import shown

__all__ = ["ADVICE_ROWS", "DOMINANT_RATIO", "DataAdviceMixin", "RAW_ABS_LIMIT", "naming_columns"]

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


class DataAdviceMixin:
    """The value checks and scaling advice of
    :class:`~streamfs.algorithms.instance_stream.InstanceStreamSelector`, on rows as
    :class:`~streamfs.algorithms.instance_input.InstanceInputMixin` gives them; they read the
    learner's scaling (``normalize``, ``_norm_mode``), its ``_partial`` flag and, after a
    block, its scale and running statistics."""

    def _data_advice(self, X: Any, names: Any = None) -> str | None:
        """What the learner warns of when a stream starts with the rows of ``X`` (see
        :meth:`_scale_advice`), for a caller that checks the data before it is published:
        the learner warns at its first block, which runs in the worker."""
        return self._scale_advice(self._as_csr(X[:ADVICE_ROWS], single=False), names)

    def _scale_advice(self, M: CSR, names: Any = None) -> str | None:
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

    def _check_norms(self, M: CSR, first_row: int | None = None) -> None:
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
                why = ("its running means and variances of the raw values overflow float64"
                       if self._norm_key() == "standardize" else "without unit-norm scaling "
                       "its weights' arithmetic overflows float64")
                raise ValueError(
                    f"{type(self).__name__}: |x| up to {largest:.3g}; with "
                    f"normalize={shown(self.normalize)} values must stay within "
                    f"{RAW_ABS_LIMIT:.0e}, or {why}: rescale the features ({where(rows)})")
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

    def _check_overflow(self, M: CSR) -> None:
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
