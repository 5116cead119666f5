"""SAOLA family: online feature selection with pairwise redundancy analysis.

Implements SAOLA (Yu, Wu, Ding, Pei: "Scalable and accurate online feature selection for big
data", Algorithm 1), its SAOLA-max and top-k variants (§3.4.3) and the machinery group-SAOLA
(Algorithm 2, :mod:`streamfs.algorithms.group_saola`) shares with them (:class:`SAOLABase`).
The compiled kernels are in :mod:`streamfs.algorithms.saola_kernels`, the stored columns of the
kept features in :mod:`streamfs.algorithms.saola_pool`, the class vector's encoding in
:mod:`streamfs.algorithms.saola_labels`.

For each arriving feature ``F`` (a column of length N, the class vector ``C`` being fixed):

1. discard ``F`` if it is not relevant to ``C``;
2. compare it, in selection order, with every feature ``Y`` of the current selection ``S``
   (skipping pairs that are not dependent; ``d`` is the pair strength, ``dep`` the strength
   with the class): if ``dep(Y) > dep(F)`` (``>=`` for Fisher's z) and ``d > dep(F)``, discard
   ``F``; else if ``dep(F) > dep(Y)`` and ``d > dep(Y)``, remove ``Y`` from ``S``;
3. if ``F`` survived, append it to ``S``.

Block processing. The relevance test of a whole block runs in one compiled pass (it does not
depend on the selection; with Fisher's z the block's columns are split over
``STREAMFS_KERNEL_THREADS`` threads, :mod:`streamfs.algorithms.parallel`). With Fisher's z the
redundancy step of the whole block (every survivor against the current selection, removals,
the top-k rule, storing kept columns) is one compiled call (``_nb_saola_fisher``, GIL
released) that writes removals and discards as events; the affiliation lists are rebuilt
from those events when they are read. With the MI test the step is replayed survivor by
survivor (one compiled call per survivor for its strengths). Each strength depends only on
the values of the two columns (see :mod:`streamfs.algorithms.measures`), so the result is
identical to one-feature-at-a-time processing, for any block split and for dense or sparse
input.

In the default mode with Fisher's z, a column's |r| with the class comes from exact sums where
its values allow (binary or count data,
:func:`streamfs.algorithms.measures.exact.exact_abs_r`), so columns whose |r| is
mathematically equal tie to the bit and the tie rule keeps the earlier. Between two such
columns, a pair strength within a relative 1e-8 of a strength it is compared with is compared
from the exact sums too (:func:`streamfs.algorithms.measures.exact._nb_pair_signs`): the rules'
``d > dep`` is strict, and a d equal to a dep (a copy of the class makes every later feature's
d with it equal its dep) must not go the way the last bit of d fell.

``compat="lofs"`` with Fisher's z computes every r in the authors' arithmetic (``cov`` of the
two columns, entries divided by N - 1, ``r = C12 / sqrt(C11 C22)``, ``W = sqrt(N - 3) * 0.5 *
log((1 + r) / (1 - r))``, independent iff ``|W| < sqrt(2) erfinv(1 - alpha)``, NaN r skipped):
on binary data many strengths are mathematically equal and the last bit of that arithmetic
decides SAOLA's tie rule, see :func:`streamfs.algorithms.measures.lofs.lofs_pearson_r`.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
from sklearn.utils.validation import check_is_fitted

from ._validation import (
    check_choice,
    check_int,
    check_number,
    check_state_algorithm,
    reads_state,
)
from .base import FeatureStreamSelector
from .measures.columns import (
    ColumnBlock,
    _EMPTY_B,
    _EMPTY_CODE,
    _EMPTY_F,
    as_column_block,
    check_column_values,
    max_abs_for_sums,
    values_within,
)
from .measures.pearson import (
    _nb_block_fisher,
    _nb_fisher_verdict,
    _nb_refine_offset_means,
    _nb_sparse_fisher_relevance,
    _nb_col_stats,
    centred_on_mean,
    fisher_z_critical,
)
from .measures.exact import exact_sums, exact_target
from .measures.lofs import (
    _nb_block_fisher_lofs,
    lofs_centred,
    lofs_fisher_critical,
)
from .measures.information import _nb_block_su, _nb_entropy_counts
from .parallel import map_column_ranges
from .saola_kernels import (
    EV_DISCARDED,
    EV_DROPPED,
    EV_REMOVED,
    _nb_lofs_dependent_many,
    _nb_pair_signs_many,
    _nb_saola_fisher,
    fisher_bracket,
    fisher_dependent,
)
from .saola_labels import encode_y, non_integer
from .saola_pool import Pool

__all__ = ["SAOLA", "SAOLABase"]

_TESTS = ("fisher_z", "mi")
_BOUNDS = ("min", "max")
_COMPATS = (None, "lofs")


# --------------------------------------------------------------------------------------------
# shared machinery
# --------------------------------------------------------------------------------------------


class SAOLABase(FeatureStreamSelector):
    """Parameters, class vector, relevance pass, stored columns, affiliations and state."""

    _algorithm = ""

    def __init__(
        self,
        test: str = "fisher_z",
        alpha: float = 0.01,
        delta: float = 0.0,
        bound: str = "min",
        compat: str | None = None,
        n_bins: int | None = None,
    ) -> None:
        self.test = test
        self.alpha = alpha
        self.delta = delta
        self.bound = bound
        self.compat = compat
        self.n_bins = n_bins

    # -- parameters -----------------------------------------------------------------------

    def _state_params(self) -> dict:
        return {
            "test": self.test,
            "alpha": float(self.alpha),
            "delta": float(self.delta),
            "bound": self.bound,
            "compat": self.compat,
            "n_bins": None if self.n_bins is None else int(self.n_bins),
        }

    def _validate_params(self) -> None:
        """Types and ranges of the parameters; ``ValueError`` naming the first bad one."""
        check_choice("test", self.test, _TESTS)
        check_number("alpha", self.alpha, 0.0, 1.0, low_open=True, high_open=True)
        check_number("delta", self.delta, 0.0)
        check_choice("bound", self.bound, _BOUNDS)
        check_choice("compat", self.compat, _COMPATS)
        check_int("n_bins", self.n_bins, 2, allow_none=True)

    _setting_params = ("test",)

    def _unused_params(self) -> dict[str, str]:
        if self.test == "mi":
            return {"alpha": "test='fisher_z'"}
        return {"delta": "test='mi'", "n_bins": "test='mi'"}

    # -- learned state ----------------------------------------------------------------------

    def _reset(self) -> None:
        for name in list(vars(self)):
            if name.endswith("_") and not name.startswith("__") or name.startswith("_st_"):
                delattr(self, name)

    def _is_started(self) -> bool:
        return hasattr(self, "_st_n")

    def _check_n_instances(self, n: int) -> None:
        """``ValueError`` when the test cannot run on ``n`` instances: called at ``open``
        (and by the producers, before they publish), not only at the first block."""
        if self.test == "fisher_z" and n <= 3:
            raise ValueError(f"Fisher's z needs more than 3 instances, got {n}")

    def _check_target(self, y: Any) -> None:
        """``ValueError`` when the test cannot use the class vector ``y``: the MI test takes
        its values as classes, so a continuous target (non-integer numbers) would be as many
        classes as values and every feature would look relevant; Fisher's z correlates the
        features with ``y`` as numbers, and labels beyond :func:`max_abs_for_sums` overflow
        its sum of squares, so every feature would silently look independent. Asked before a
        stream is published too (:func:`streamfs.algorithms.opening.check_open_data`)."""
        num = encode_y(y)[0]
        if self.test == "mi":
            # compat="lofs" floors the labels, as the authors' implementation does
            if self.compat is None and (frac := non_integer(num)) is not None:
                raise ValueError(
                    f"{type(self).__name__}(test='mi') takes the values of y as classes, but y "
                    f"holds non-integer numbers (e.g. {frac!r}): a continuous target. Use "
                    "test='fisher_z', which correlates the features with y as a number, or "
                    "bin y into classes")
            return
        limit = max_abs_for_sums(len(num))
        top = float(np.abs(num).max())
        if top > limit:
            raise ValueError(
                f"y has class labels too large for the Fisher-z test's correlations (|y| up "
                f"to {top:.3g}; with N = {len(num)} instances |y| must stay below {limit:.3g}, "
                "or the sums of squares overflow): recode the classes, e.g. as 0, 1, ...")

    def _label_advice(self, y: Any) -> str | None:
        """What :meth:`_start` warns of for the class vector ``y``, or None; asked before a
        stream is published too (:func:`streamfs.algorithms.opening.open_advice`), where no
        block runs."""
        num = encode_y(y)[0]
        k = np.unique(num).size
        # a continuous target is a number to correlate with, not coded classes
        if self.test != "fisher_z" or k <= 2 or non_integer(num) is not None:
            return None
        return (f"{type(self).__name__}(test='fisher_z') correlates the features with the "
                f"class as a number (as the authors' implementation does): with {k} classes "
                "the selection depends on how they are coded; test='mi' treats them as "
                "categories")

    def _start(self, y: Any) -> None:
        num, classes = encode_y(y)
        n = len(num)
        self._check_n_instances(n)
        self._check_target(num)
        self._begin_stream_params()
        self._st_n = n
        self._st_y = num
        self._st_classes = classes
        self._st_lofs_z = self.test == "fisher_z" and self.compat == "lofs"
        if self._st_lofs_z:
            self._st_zcrit = lofs_fisher_critical(float(self.alpha))
        else:
            self._st_zcrit = fisher_z_critical(float(self.alpha))
        self._st_sqrt_n3 = math.sqrt(n - 3.0) if n > 3 else 0.0
        self._st_exact_target = (exact_target(num) if self.test == "fisher_z"
                                 and self.compat is None else None)
        self._st_pool = Pool(n, self.test, self.n_bins, self._st_lofs_z,
                              self._st_exact_target)
        self._st_dep: dict[int, float] = {}
        self._st_slot: dict[int, int] = {}
        self._st_raw: dict[int, np.ndarray] = {}
        self._st_affd: dict[int, list] = {}
        self._st_affq: list[tuple] = []  # compiled steps' events, not yet replayed
        self._st_forward: dict[int, int] = {}
        self._prepare_target()
        self.n_features_seen_ = 0
        self.n_irrelevant_ = 0
        self.n_redundant_ = 0
        self._sync()

    def _prepare_target(self) -> None:
        num = self._st_y
        if self.test == "fisher_z":
            self._st_tc, self._st_tsum, self._st_tss, _ = centred_on_mean(num)
            self._st_tlc, self._st_tlvar = lofs_centred(num)
        else:
            lab = np.floor(num) if self.compat == "lofs" else num
            _, codes = np.unique(lab, return_inverse=True)
            self._st_tcodes = codes.astype(np.int64)
            self._st_tcounts = np.bincount(self._st_tcodes).astype(np.int64)
            self._st_th = _nb_entropy_counts(self._st_tcounts, len(num))

    def _accept_y(self, y: Any) -> None:
        if not self._is_started():
            if y is None:
                raise ValueError("the first partial_fit call must pass the class vector y")
            self._start(y)
            # said when a stream starts, not when a saved one is restored (from_state):
            # a worker's every restart repeated it
            for advice in (self._label_advice(self._st_y), self._params_advice()):
                if advice is not None:
                    warnings.warn(advice, UserWarning, stacklevel=3)
            return
        if y is not None:
            num, classes = encode_y(y)
            if classes != self._st_classes or not np.array_equal(num, self._st_y):
                raise ValueError("y differs from the class vector given in the first call")

    # -- per-block relevance ----------------------------------------------------------------

    def _fisher_stats(self, block: ColumnBlock, first: int = 0) -> dict[str, np.ndarray]:
        """The per-column statistics of the Fisher-z test (compiled kernels, GIL released):
        ``dep``, ``relevant``, and ``mean`` and ``ss`` for centring the relevant columns;
        with an exact class, the exact sums of the columns that may be relevant
        (:func:`exact_sums`, ``xcols`` counted from ``first``: ``block`` is the part of a
        larger block from there)."""
        n = self._st_n
        bracket = fisher_bracket(n, self._st_zcrit)
        if not block.dense and self._checks_values_in_relevance():  # the fused kernel checks
            dep, code, mean, ss, within = _nb_sparse_fisher_relevance(
                block.indptr, block.indices, block.data, n, self._st_tc, self._st_tsum,
                self._st_tss, *bracket, self._value_limit(n)[0],
            )
            if not within:
                return {"bad_values": np.ones(1, dtype=np.bool_)}  # _relevance names them
            _nb_refine_offset_means(block.indptr, block.indices, block.data, n, False,
                                    self._st_tc, self._st_tsum, mean, ss, _EMPTY_F, _EMPTY_B,
                                    dep, code, self._st_tss, *bracket)
            return self._verdicts(block, first, dep, code, mean=mean, ss=ss)
        seqsum, mean, ss, const, cross, amax = _nb_block_fisher(
            block.indptr, block.indices, block.data, n, block.dense, self._st_tc, self._st_tsum,
        )
        if self._checks_values_in_relevance() and not values_within(
                seqsum, amax, self._value_limit(n)[0]):
            return {"bad_values": np.ones(1, dtype=np.bool_)}  # _relevance names the columns
        if self._st_lofs_z:
            # the authors' arithmetic: cov, r = C12 / sqrt(C11 C22), NaN r is skipped
            _, cxx, r = _nb_block_fisher_lofs(
                block.indptr, block.indices, block.data, n, block.dense,
                self._st_tlc, self._st_tlvar,
            )
            return dict(dep=np.abs(r), relevant=_nb_lofs_dependent_many(
                r, self._st_sqrt_n3, self._st_zcrit), mean=mean, ss=ss, cxx=cxx, seqsum=seqsum)
        # means far from zero for their spread refined (not in the authors' arithmetic, above)
        _nb_refine_offset_means(block.indptr, block.indices, block.data, n, block.dense,
                                self._st_tc, self._st_tsum, mean, ss, cross, const, _EMPTY_F,
                                _EMPTY_CODE, 0.0, 0.0, 0.0)
        # the verdict on the same thread (numpy's ufuncs release the GIL too)
        return self._verdicts(block, first, *_nb_fisher_verdict(
            cross, ss, const, self._st_tss, *bracket), mean=mean, ss=ss)

    def _verdicts(self, block: ColumnBlock, first: int, dep: np.ndarray, code: np.ndarray,
                  **stats: np.ndarray) -> dict:
        if self._st_exact_target is not None:
            # the columns that may be relevant get their |r| from exact sums where their
            # values allow (exact ties stay ties for the tie rule, exact_abs_r), and keep
            # those sums for the pair strengths' ties (_nb_pair_signs)
            sums = exact_sums(block, np.flatnonzero(code), self._st_exact_target, dep)
            sums["xcols"] = sums["xcols"] + first
            stats.update(sums)
        relevant = code == 1
        near = np.flatnonzero(code == 2)  # near the critical |r|: the exact test decides
        relevant[near] = self._dependent(dep[near])
        return dict(dep=dep, relevant=relevant, **stats)

    def _relevance(self, block: ColumnBlock) -> dict[str, np.ndarray]:
        """dep (strength with the class), relevant mask and per-column statistics."""
        n = self._st_n
        out: dict[str, np.ndarray] = {}
        if self.test == "fisher_z":
            # independent columns: split over the kernel threads (the same bits any split)
            parts = map_column_ranges(
                lambda lo, hi: self._fisher_stats(block.columns(lo, hi), lo),
                block.n_cols) or [self._fisher_stats(block)]
            if any("bad_values" in part for part in parts):
                # the first pass over the values found NaN, infinite or too large ones: the
                # check _check_block left to it names them, before any state changes
                check_column_values(block.indptr, block.data, n, *self._value_limit(n))
            out = parts[0] if len(parts) == 1 else {
                key: np.concatenate([part[key] for part in parts]) for key in parts[0]}
            dep, rel = out["dep"], out["relevant"]
        else:
            if self.compat == "lofs":
                seqsum, mean, ss, const = _nb_col_stats(
                    block.indptr, block.indices, block.data, n, block.dense
                )
                out.update(seqsum=seqsum, mean=mean, ss=ss, const=const)
            dep, k = _nb_block_su(
                block.indptr, block.indices, block.data, block.dense, n,
                -1 if self.n_bins is None else int(self.n_bins),
                self._st_tcodes, self._st_tcounts, self._st_th, self._st_pool.work,
            )
            rel = dep > self.delta
            if self.compat is None and self.n_bins is None:
                many = int(np.count_nonzero(k > n / 2))
                if many:
                    warnings.warn(
                        f"{many} of {len(k)} columns have more than N/2 = {n / 2:g} distinct "
                        "states after floor(); the MI test then treats almost every value as "
                        "its own state. Pass n_bins=<int> to discretise first, or use "
                        "test='fisher_z' for continuous data.",
                        UserWarning,
                        stacklevel=3,
                    )
            out.setdefault("mean", np.zeros(len(dep)))
            out.setdefault("ss", np.zeros(len(dep)))
        if self.compat == "lofs":
            rel &= out["seqsum"] != 0.0
        out["dep"] = dep
        out["relevant"] = rel
        return out

    def _exact_columns(self, rel: dict, cols: np.ndarray) -> tuple[np.ndarray, ...]:
        """The exact sums (:func:`exact_sums`) of the block's columns ``cols``, one entry
        each (``ok`` False for all without an exact class)."""
        if "xok" not in rel:
            k = len(cols)
            z = np.zeros(k)
            return np.zeros(k, dtype=np.bool_), np.zeros(k, dtype=np.int64), z, z, z
        at = np.searchsorted(rel["xcols"], cols)  # cols are among xcols: they may be relevant
        return tuple(rel[key][at] for key in ("xok", "xe", "xs", "xv", "xa"))

    def _exact_class_var(self) -> float:
        target = self._st_exact_target
        return 0.0 if target is None else float(target[3])

    def _dependent(self, d: np.ndarray) -> np.ndarray:
        """Pair (or class) dependence verdict for strengths ``d``."""
        if self._st_lofs_z:
            return _nb_lofs_dependent_many(d, self._st_sqrt_n3, self._st_zcrit)
        if self.test == "fisher_z":
            return fisher_dependent(d, self._st_n, self._st_zcrit)
        return d > self.delta

    def _pair(self, prep: tuple, slots: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Strengths ``d`` between a prepared feature and stored ones, and which pairs are
        dependent (``compat="lofs"``: tested on the signed r, NaN pairs are skipped)."""
        d = self._st_pool.strengths(prep, slots)
        dependent = self._dependent(d)
        if self._st_lofs_z:
            d = np.abs(d)
        return d, dependent

    def _signs(self, prep: tuple, fstats: tuple, dep_f: float, slots: np.ndarray,
               deps: np.ndarray, d: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``sign(deps - dep_f)``, ``sign(d - dep_f)`` and ``sign(d - deps)`` for a prepared
        newcomer (``fstats``: its exact sums, :meth:`_exact_of`) against the kept features
        in ``slots``, exact near ties where both have exact sums (:func:`_nb_pair_signs`)."""
        if self._st_exact_target is None or not fstats[0]:
            return np.sign(deps - dep_f), np.sign(d - dep_f), np.sign(d - deps)
        pool = self._st_pool
        rows, vals = prep[0], prep[1]
        return _nb_pair_signs_many(rows, vals, self._st_n, d, dep_f, deps, *fstats, pool.T,
                                   slots, pool.xok, pool.xe, pool.xm, pool.xs, pool.xv,
                                   pool.xa, self._exact_class_var())

    def _exact_of(self, rel: dict, j: int) -> tuple:
        """Column ``j``'s exact sums ``(ok, e, s, v, a)`` (``ok`` False without them)."""
        ok, e, s, v, a = (values[0] for values in self._exact_columns(rel, np.array([j])))
        return bool(ok), int(e), float(s), float(v), float(a)

    def _prep(self, block: ColumnBlock, j: int, rel: dict) -> tuple:
        if self._st_lofs_z:
            return self._st_pool.prepare(None, None, 0.0, 0.0, block.dense_column(j))
        rows, vals = block.column(j)
        # zeros contribute nothing the kernels cannot infer (they skip them / count them by
        # subtraction), so dropping them changes no bit of the result and makes dense
        # mostly-zero columns as cheap as sparse ones
        nz = vals != 0.0
        if not nz.all():
            rows, vals = rows[nz], vals[nz]
        return self._st_pool.prepare(rows, vals, float(rel["mean"][j]), float(rel["ss"][j]))

    def _store(self, feature: int, block: ColumnBlock, j: int, dep: float) -> None:
        x = block.dense_column(j)
        self._st_raw[feature] = x
        self._st_slot[feature] = self._st_pool.add(x)
        self._st_dep[feature] = dep
        self._st_aff.setdefault(feature, [])

    def _drop(self, feature: int) -> None:
        self._st_pool.release(self._st_slot.pop(feature))
        del self._st_raw[feature]
        del self._st_dep[feature]

    @property
    def _st_aff(self) -> dict[int, list]:
        """``{feature: [[affiliated feature, strength], ...]}`` after replaying the events
        of the compiled steps (replayed on access: lists move on every removal)."""
        if self._st_affq:
            self._replay_events()
        return self._st_affd

    def _replay_events(self) -> None:
        aff = self._st_affd
        for kind, a, b, d in self._st_affq:
            a_l, b_l, d_l = a.tolist(), b.tolist(), d.tolist()
            for q, k in enumerate(kind.tolist()):
                if k == EV_DROPPED:
                    aff.pop(a_l[q], None)
                    continue
                # a removed by b (EV_REMOVED) or a discarded because of b (EV_DISCARDED)
                lst = aff.get(b_l[q])
                if lst is None:
                    lst = aff[b_l[q]] = []
                lst.append([a_l[q], d_l[q]])
                moved = aff.pop(a_l[q], None)
                if moved:
                    lst.extend(moved)
        self._st_affq.clear()

    def _affiliate(self, feature: int, owner: int, d: float) -> None:
        """``feature`` was discarded/removed because of ``owner``: it and its affiliates move."""
        # owner itself already removed (possible only in compat="lofs" group steps): follow
        # the chain of removers; a chain leading back to `feature` keeps the direct owner
        seen = {owner}
        target = owner
        while target in self._st_forward:
            target = self._st_forward[target]
            if target == feature or target in seen:
                target = owner
                break
            seen.add(target)
        owner = target
        lst = self._st_aff.setdefault(owner, [])
        lst.append([int(feature), float(d)])
        lst.extend(self._st_aff.pop(feature, []))

    def _value_limit(self, n_rows: int) -> tuple[float, str]:
        if self.test != "fisher_z":  # MI counts states: any finite value will do
            return super()._value_limit(n_rows)
        return max_abs_for_sums(n_rows), "the Fisher-z test's correlations"

    def _checks_values_in_relevance(self) -> bool:
        # Fisher's z (not the authors' LOFS arithmetic): the relevance kernel's pass over the
        # values also checks them, which saves a pass of its own (20 of 165 ms on the dense
        # bench stream's 320 MB)
        return self.test == "fisher_z" and not self._st_lofs_z

    def _check_block(self, X: Any) -> ColumnBlock:
        return as_column_block(X, self._st_n, *self._value_limit(self._st_n),
                               check_values=not self._checks_values_in_relevance())

    # -- results -----------------------------------------------------------------------------

    def _order(self) -> list[int]:
        raise NotImplementedError

    def _sync(self) -> None:
        order = self._order()
        self.selected_ = np.asarray(order, dtype=np.int64)
        self.scores_ = np.asarray([self._st_dep[f] for f in order], dtype=np.float64)

    @property
    def affiliated_(self) -> dict[int, list[list]]:
        """``{selected feature: [[feature, strength], ...]}`` (built on access: the lists can
        be long, and copying them after every block would cost more than the block)."""
        if not self._is_started():
            raise AttributeError("affiliated_ is available after the first partial_fit")
        return {
            int(f): [list(p) for p in self._st_aff.get(int(f), [])] for f in self.selected_
        }

    def selection(self) -> list[dict]:
        check_is_fitted(self, "selected_")
        aff = self.affiliated_
        return [
            {"feature": int(f), "score": float(s), "affiliated": aff[int(f)]}
            for f, s in zip(self.selected_, self.scores_)
        ]

    # -- state -------------------------------------------------------------------------------

    def _base_state(self) -> dict:
        if not self._is_started():
            return {"algorithm": self._algorithm, "version": 1, "params": self._state_params(),
                    "started": False}
        aff = {}
        for f in self.selected_:
            lst = self._st_aff.get(int(f), [])
            aff[int(f)] = {
                "features": np.asarray([p[0] for p in lst], dtype=np.int64),
                "strengths": np.asarray([p[1] for p in lst], dtype=np.float64),
            }
        return self._put_stream_params(self._names_state({
            "algorithm": self._algorithm,
            "version": 1,
            "params": self._state_params(),
            "started": True,
            "y": self._st_y.copy(),
            "classes": None if self._st_classes is None else list(self._st_classes),
            "n_features_seen": int(self.n_features_seen_),
            "n_irrelevant": int(self.n_irrelevant_),
            "n_redundant": int(self.n_redundant_),
            "selected": self.selected_.copy(),
            "scores": self.scores_.copy(),
            "affiliated": aff,
            "columns": {int(f): self._st_raw[int(f)].copy() for f in self.selected_},
        }))

    @classmethod
    def _from_base_state(cls, state: dict, **extra: Any) -> "SAOLABase":
        check_state_algorithm(state, cls.__name__, [cls._algorithm])
        params, later = cls._stream_params_of(state)
        obj = cls(**params, **extra)
        if not state["started"]:
            return obj
        obj._validate_params()
        classes = state["classes"]
        y = np.asarray(state["y"], dtype=np.float64)
        obj._start(np.asarray(classes)[y.astype(np.int64)] if classes is not None else y)
        obj.n_features_seen_ = int(state["n_features_seen"])
        obj.n_irrelevant_ = int(state["n_irrelevant"])
        obj.n_redundant_ = int(state["n_redundant"])
        obj._restore_names(state)
        cols = {int(k): v for k, v in state["columns"].items()}
        aff = {int(k): v for k, v in state["affiliated"].items()}
        for f, s in zip(np.asarray(state["selected"]), np.asarray(state["scores"])):
            f = int(f)
            x = np.ascontiguousarray(cols[f], dtype=np.float64)
            obj._st_raw[f] = x
            obj._st_slot[f] = obj._st_pool.add(x)
            obj._st_dep[f] = float(s)
            a = aff[f]
            obj._st_aff[f] = [
                [int(g), float(d)] for g, d in zip(np.asarray(a["features"]),
                                                   np.asarray(a["strengths"]))
            ]
        # the rest of the state does not depend on the parameters
        obj._set_later_params(later)
        return obj


# --------------------------------------------------------------------------------------------
# SAOLA
# --------------------------------------------------------------------------------------------


class SAOLA(SAOLABase):
    """SAOLA online feature selection (with the SAOLA-max and top-k variants).

    Parameters
    ----------
    test : {"fisher_z", "mi"}, default "fisher_z"
        ``"fisher_z"`` for continuous data: strength ``|r|`` (Pearson), a pair or a feature and
        the class are dependent iff ``sqrt(N-3) |atanh r| >= z_{1-alpha/2}``. The class is
        correlated as a number, as in the authors' implementation (string labels as their
        index in sorted order): with more than two classes the relevance depends on how the
        classes are coded, which a ``UserWarning`` says; ``"mi"`` does not. ``"mi"`` for
        discrete data: values are binned with ``floor()`` (states numbered from the minimum),
        strength is the symmetrical uncertainty ``SU``, dependent iff ``SU > delta``.
    alpha : float, default 0.01
        Significance level of Fisher's z test.
    delta : float, default 0.0
        Relevance / dependence threshold on SU for ``test="mi"``.
    bound : {"min", "max"}, default "min"
        ``"min"``: SAOLA's bounds (``d > dep(F)`` to discard ``F``, ``d > dep(Y)`` to remove
        ``Y``); ``"max"``: SAOLA-max, both bounds become ``max(dep(F), dep(Y))``.
    max_features : int or None, default None
        Top-k variant: after each step keep only the ``k`` features with the highest ``dep``
        (ties keep the earlier feature).
    compat : {None, "lofs"}, default None
        ``"lofs"`` reproduces the authors' MATLAB toolbox: a column whose values sum to exactly
        0 (float64, left to right) is skipped as irrelevant, the class is binned with
        ``floor()`` like the features for ``test="mi"``, and Fisher's z computes r, W and the
        critical value in the authors' arithmetic (see the module docstring; a constant
        column has r = NaN and is skipped).
    n_bins : int or None, default None
        ``test="mi"`` only: if an int, discretise every column into ``n_bins`` equal-width bins
        over its own range before the test, instead of ``floor()``. Without it, columns with
        more than N/2 distinct states trigger a warning (the default mode only).

    Attributes
    ----------
    selected_ : ndarray of int64
        Global 0-based indices of the selected features, in stream order.
    scores_ : ndarray of float64
        ``dep`` (strength with the class) of each selected feature.
    affiliated_ : dict
        ``{selected feature: [[feature, strength], ...]}``: the features it made redundant
        (directly or by inheriting them from a feature it removed).
    n_features_seen_, n_irrelevant_, n_redundant_, n_dropped_ : int
        Counters (``n_dropped_``: removed by the top-k rule).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 300)
    >>> s = y + 0.5 * rng.standard_normal(300)
    >>> X = np.column_stack([rng.standard_normal(300),          # noise: irrelevant
    ...                      s,                                 # |r| with y: 0.74
    ...                      s + 0.3 * rng.standard_normal(300),  # 0.67, |r| with s: 0.94
    ...                      y + 0.5 * rng.standard_normal(300)])  # 0.70, |r| with s: 0.52
    >>> sel = SAOLA().fit(X, y)
    >>> sel.selected_.tolist()
    [1, 3]
    >>> [round(v, 2) for v in sel.scores_.tolist()], sel.affiliated_[1][0][0]
    ([0.74, 0.7], 2)
    """

    _algorithm = "SAOLA"

    def __init__(
        self,
        test: str = "fisher_z",
        alpha: float = 0.01,
        delta: float = 0.0,
        bound: str = "min",
        max_features: int | None = None,
        compat: str | None = None,
        n_bins: int | None = None,
    ) -> None:
        super().__init__(test=test, alpha=alpha, delta=delta, bound=bound, compat=compat,
                         n_bins=n_bins)
        self.max_features = max_features

    def _state_params(self) -> dict:
        p = super()._state_params()
        p["max_features"] = None if self.max_features is None else int(self.max_features)
        return p

    def _validate_params(self) -> None:
        """Types and ranges of the parameters; ``ValueError`` naming the first bad one."""
        super()._validate_params()
        check_int("max_features", self.max_features, 1, allow_none=True)

    def _start(self, y: Any) -> None:
        self._st_S: list[int] = []
        self.n_dropped_ = 0
        super()._start(y)

    def _order(self) -> list[int]:
        return list(self._st_S)

    def _partial_fit(self, X: Any, y: Any = None) -> None:
        """Process one block of new columns (dense or scipy.sparse, shape ``(N, b)``)."""
        self._accept_y(y)
        block = self._check_block(X)
        rel = self._relevance(block)
        base = self.n_features_seen_
        relevant = rel["relevant"]
        self.n_irrelevant_ += int(block.n_cols - np.count_nonzero(relevant))
        if self.test == "fisher_z":
            self._fisher_step(block, rel, base, np.flatnonzero(relevant))
        else:
            self._python_step(block, rel, base, relevant)
        self.n_features_seen_ = base + block.n_cols
        self._sync()

    def _fisher_step(self, block: ColumnBlock, rel: dict, base: int,
                     rel_cols: np.ndarray) -> None:
        """The block's redundancy step in one compiled call (a few more when the pool of
        stored columns has to grow); affiliations are replayed from its events on access."""
        pool = self._st_pool
        n_old = len(self._st_S)
        n_rel = len(rel_cols)
        cap = n_old + n_rel
        S = np.empty(cap, dtype=np.int64)
        Sslot = np.empty(cap, dtype=np.int64)
        Sdep = np.empty(cap)
        S[:n_old] = self._st_S
        Sslot[:n_old] = [self._st_slot[f] for f in self._st_S]
        Sdep[:n_old] = [self._st_dep[f] for f in self._st_S]
        n_ev = n_old + 3 * n_rel + 1
        ev_kind = np.empty(n_ev, dtype=np.int8)
        ev_a = np.empty(n_ev, dtype=np.int64)
        ev_b = np.empty(n_ev, dtype=np.int64)
        ev_d = np.empty(n_ev)
        xc = np.empty(self._st_n if self._st_lofs_z else 0)
        gone = np.zeros(cap, dtype=np.bool_)
        cxx = rel.get("cxx", rel["ss"])
        kmax = -1 if self.max_features is None else int(self.max_features)
        pos, ns, nev = 0, n_old, 0
        while True:
            pos, ns, nfree, nev = _nb_saola_fisher(
                block.indptr, block.indices, block.data, self._st_n, block.dense, rel_cols,
                rel["dep"], rel["mean"], rel["ss"], cxx, pos, base,
                pool.T, pool.tsum, pool.ss, pool.lvar, pool.free, pool.nfree,
                S, Sslot, Sdep, ns, self._st_lofs_z, self.bound == "max", kmax,
                self._st_zcrit, self._st_sqrt_n3, ev_kind, ev_a, ev_b, ev_d, nev, xc, gone,
                *self._exact_columns(rel, rel_cols), pool.xok, pool.xe, pool.xm,
                pool.xs, pool.xv, pool.xa, self._exact_class_var(),
            )
            pool.nfree = nfree
            if pos >= n_rel:
                break
            pool.reserve(max(1, pool.cap))  # no free slot: grow and go on from pos
        if nev:
            kind = ev_kind[:nev]
            self._st_affq.append((kind, ev_a[:nev], ev_b[:nev], ev_d[:nev]))
            counts = np.bincount(kind, minlength=3)
            self.n_redundant_ += int(counts[EV_REMOVED] + counts[EV_DISCARDED])
            self.n_dropped_ += int(counts[EV_DROPPED])
        sel = S[:ns].tolist()
        raw = self._st_raw
        self._st_raw = {f: raw[f] if f < base else block.dense_column(f - base) for f in sel}
        self._st_slot = dict(zip(sel, Sslot[:ns].tolist()))
        self._st_dep = dict(zip(sel, Sdep[:ns].tolist()))
        self._st_S = sel

    def _python_step(self, block: ColumnBlock, rel: dict, base: int,
                     relevant: np.ndarray) -> None:
        """The redundancy step replayed feature by feature (``test="mi"``)."""
        S = np.asarray(self._st_S, dtype=np.int64)
        slots = np.asarray([self._st_slot[f] for f in self._st_S], dtype=np.int64)
        deps = np.asarray([self._st_dep[f] for f in self._st_S], dtype=np.float64)
        fisher = self.test == "fisher_z"
        k = self.max_features
        for j in np.flatnonzero(relevant):
            f = base + int(j)
            dep_f = float(rel["dep"][j])
            discard_at = -1
            removed = np.empty(0, dtype=np.int64)
            if len(S):
                d, dependent = self._pair(self._prep(block, int(j), rel), slots)
                if self.bound == "min":
                    b1, b2 = dep_f, deps
                else:
                    b1 = b2 = np.maximum(dep_f, deps)
                first = dependent & ((deps >= dep_f) if fisher else (deps > dep_f)) & (d > b1)
                second = dependent & (dep_f > deps) & (d > b2)
                if first.any():
                    discard_at = int(np.argmax(first))
                    owner, d_owner = int(S[discard_at]), float(d[discard_at])
                    second[discard_at:] = False  # the scan stopped there
                removed = np.flatnonzero(second)
            if len(removed):
                self._st_aff.setdefault(f, [])
                for q in removed:
                    self._affiliate(int(S[q]), f, float(d[q]))
                    self._drop(int(S[q]))
                keep = np.ones(len(S), dtype=bool)
                keep[removed] = False
                S, slots, deps = S[keep], slots[keep], deps[keep]
                self.n_redundant_ += len(removed)
            if discard_at >= 0:
                self._affiliate(f, owner, d_owner)
                self.n_redundant_ += 1
                continue
            self._store(f, block, int(j), dep_f)
            S = np.append(S, f)
            slots = np.append(slots, self._st_slot[f])
            deps = np.append(deps, dep_f)
            if k is not None and len(S) > k:
                # lowest dep goes; among equal deps the latest one
                q = len(deps) - 1 - int(np.argmin(deps[::-1]))
                self._st_aff.pop(int(S[q]), None)
                self._drop(int(S[q]))
                S, slots, deps = np.delete(S, q), np.delete(slots, q), np.delete(deps, q)
                self.n_dropped_ += 1
        self._st_S = [int(v) for v in S]

    def to_state(self) -> dict:
        state = self._base_state()
        if state["started"]:
            state["n_dropped"] = int(self.n_dropped_)
        return state

    @classmethod
    @reads_state
    def from_state(cls, state: dict) -> "SAOLA":
        obj = cls._from_base_state(state)
        if state["started"]:
            obj._st_S = [int(f) for f in np.asarray(state["selected"])]
            obj.n_dropped_ = int(state["n_dropped"])
            obj._sync()
        return obj


def __getattr__(name: str) -> Any:
    """What lived in this module before it had one of its own: ``GroupSAOLA`` and its
    ``_UsedGroupIds`` (:mod:`streamfs.algorithms.group_saola`), and ``_Pool``, now
    :class:`~streamfs.algorithms.saola_pool.Pool`. Pickles written then name them
    ``streamfs.algorithms.saola.GroupSAOLA`` (a fitted selector's pool
    ``streamfs.algorithms.saola._Pool``), and still load."""
    if name in ("GroupSAOLA", "_UsedGroupIds"):
        from streamfs.algorithms import group_saola

        return getattr(group_saola, name)
    if name == "_Pool":
        return Pool
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
