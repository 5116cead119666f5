"""Group-SAOLA (Yu, Wu, Ding, Pei, Algorithm 2): online selection of groups of features, on the
machinery of :class:`~streamfs.algorithms.saola.SAOLABase`."""

from __future__ import annotations

import bisect
from typing import Any

import numpy as np

from ._validation import group_members, reads_state
from .measures.columns import ColumnBlock
from .saola import SAOLABase

__all__ = ["GroupSAOLA"]


class _UsedGroupIds:
    """Every group id a stream has used, its discarded and removed groups' included (an id
    names one group for the whole stream). Integers are kept as sorted closed ranges, so a
    producer's ids 0, 1, 2, ... stay one range however many groups come; strings as a set."""

    def __init__(self) -> None:
        self._lo: list[int] = []
        self._hi: list[int] = []
        self._str: set[str] = set()

    def __contains__(self, gid: int | str) -> bool:
        if isinstance(gid, str):
            return gid in self._str
        i = bisect.bisect_right(self._lo, gid) - 1
        return i >= 0 and gid <= self._hi[i]

    def add(self, gid: int | str) -> None:
        if isinstance(gid, str):
            self._str.add(gid)
            return
        i = bisect.bisect_right(self._lo, gid) - 1  # the last range starting at or before gid
        if i >= 0 and gid <= self._hi[i]:
            return
        left = i >= 0 and self._hi[i] == gid - 1
        right = i + 1 < len(self._lo) and self._lo[i + 1] == gid + 1
        if left and right:
            self._hi[i] = self._hi.pop(i + 1)
            del self._lo[i + 1]
        elif left:
            self._hi[i] = gid
        elif right:
            self._lo[i + 1] = gid
        else:
            self._lo.insert(i + 1, gid)
            self._hi.insert(i + 1, gid)

    def to_state(self) -> dict:
        # plain ints (not int64): a Python-API id may be up to 2**64 - 1
        return {"ranges": [v for pair in zip(self._lo, self._hi) for v in pair],
                "strings": sorted(self._str)}

    @classmethod
    def from_state(cls, state: dict) -> "_UsedGroupIds":
        obj = cls()
        ranges = [int(v) for v in state["ranges"]]
        obj._lo, obj._hi = ranges[0::2], ranges[1::2]
        obj._str = {str(v) for v in state["strings"]}
        return obj


class GroupSAOLA(SAOLABase):
    """Group-SAOLA: online selection of groups of features (intra- and inter-group redundancy).

    Features arrive in non-overlapping groups. A group's irrelevant features are dropped (the
    group is discarded if none is left). Intra-group: its features are taken in the group's
    order, like a SAOLA step against the group's features kept so far, with the bound
    ``m = min(dep(F), dep(Y))`` (``max`` with ``bound="max"``) and ties going to the newcomer:
    ``dep(Y) >= dep(F)`` and ``d > m`` removes ``F``; ``dep(F) > dep(Y)`` and ``d > m`` removes
    ``Y``. Inter-group: for every earlier selected group in order, for each feature ``a`` of the
    new group and each ``b`` of that group, ``dep(b) > dep(a)`` and ``d > m`` removes ``a``,
    ``dep(a) >= dep(b)`` and ``d > m`` removes ``b``. Empty groups disappear.

    Parameters are those of :class:`~streamfs.algorithms.saola.SAOLA` except ``max_features``.
    With ``compat="lofs"`` the inter-group loops run over the group contents as they were when
    the inter-group step began (removed features still take part), as in the authors' toolbox.

    Attributes
    ----------
    selected_groups_ : list of (group id, ndarray of int64)
        The selected groups in arrival order, each with its selected features.
    selected_, scores_, affiliated_ : as in :class:`~streamfs.algorithms.saola.SAOLA`;
        ``selected_`` concatenates the groups in order.
    group_of_ : dict
        ``{selected feature: group id}``.
    n_groups_seen_ : int
        Groups received.
    n_groups_discarded_ : int
        Groups that kept no feature through their own step (none relevant, or every one
        redundant). An earlier group that a later one empties leaves ``selected_groups_``
        without being counted here: ``n_groups_seen_ - len(selected_groups_)`` counts both.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 300)
    >>> s = y + 0.5 * rng.standard_normal(300)
    >>> X = np.column_stack([rng.standard_normal(300), s,
    ...                      s + 0.3 * rng.standard_normal(300),
    ...                      y + 0.5 * rng.standard_normal(300)])
    >>> g = GroupSAOLA().fit(X, y, groups=[[1, 0], [2, 3]])
    >>> [(gid, feats.tolist()) for gid, feats in g.selected_groups_]
    [(0, [1]), (1, [3])]
    """

    _algorithm = "GroupSAOLA"

    # its own signature, so that a mistaken keyword (``groups=``, which ``fit`` and
    # ``partial_fit`` take) is said of GroupSAOLA, not of the SAOLABase a user never met
    def __init__(
        self,
        test: str = "fisher_z",
        alpha: float = 0.01,
        delta: float = 0.0,
        bound: str = "min",
        compat: str | None = None,
        n_bins: int | None = None,
    ) -> None:
        super().__init__(test=test, alpha=alpha, delta=delta, bound=bound, compat=compat,
                         n_bins=n_bins)

    def _start(self, y: Any) -> None:
        self._st_groups: list[list] = []  # [group id, [features]]
        self._st_group_ids = _UsedGroupIds()
        self.n_groups_seen_ = 0
        self.n_groups_discarded_ = 0
        super()._start(y)

    def _order(self) -> list[int]:
        return [f for _, feats in self._st_groups for f in feats]

    def _sync(self) -> None:
        super()._sync()
        self.selected_groups_ = [
            (gid, np.asarray(feats, dtype=np.int64)) for gid, feats in self._st_groups
        ]
        self.group_of_ = {f: gid for gid, feats in self._st_groups for f in feats}

    def selection(self) -> list[dict]:
        out = super().selection()
        for item in out:
            item["group"] = self.group_of_[item["feature"]]
        return out

    def fit(self, X: Any, y: Any, groups: Any = None) -> "GroupSAOLA":
        """Run the whole stream ``X``; ``groups`` lists the column indices of each group."""
        return self._batch_fit(X, y, groups=groups)

    def partial_fit(
        self, X: Any, y: Any = None, groups: Any = None, group_ids: Any = None
    ) -> "GroupSAOLA":
        """Process one block; ``groups`` partitions its columns (default: one group).

        ``group_ids``: one id (int or str) per group. An id names one group for the whole
        stream: an id an earlier group had is refused, even if that group was discarded or has
        lost all its features since. Default: each group's number in the stream (0 for the
        first group), refused likewise if an earlier group was given it explicitly."""
        return self._stream_step(X, y, groups=groups, group_ids=group_ids)

    def _partial_fit(
        self, X: Any, y: Any = None, groups: Any = None, group_ids: Any = None
    ) -> None:
        self._accept_y(y)
        block = self._check_block(X)
        b = block.n_cols
        if groups is None:  # one group; none for a block of no columns (a group is never empty)
            groups = [np.arange(b)] if b else []
        else:
            groups = group_members(groups, b)
        # an id names one group for the whole stream: the ids of discarded groups, and of
        # groups whose features were all removed since, are taken too (checking only the
        # selected groups let a later group take such an id, or a default id an explicit one,
        # and two groups were then reported under one id)
        known = self._st_group_ids
        if group_ids is None:
            group_ids = list(range(self.n_groups_seen_, self.n_groups_seen_ + len(groups)))
            taken = next((gid for gid in group_ids if gid in known), None)
            if taken is not None:
                raise ValueError(
                    f"the default group id {taken!r} (the number of groups before it in the "
                    f"stream) was given to an earlier group: pass group_ids (an id names one "
                    f"group of the stream)")
        else:
            group_ids = list(group_ids)
            if len(group_ids) != len(groups):
                raise ValueError("group_ids must have one id per group")
            for gid in group_ids:  # first: the checks below compare and hash the ids
                # a bool is no id (True would be group 1), as in the worker's check
                if not isinstance(gid, (int, np.integer, str)) or isinstance(gid, bool):
                    raise ValueError(f"group ids must be ints or strings, got {gid!r}")
            group_ids = [str(gid) if isinstance(gid, str) else int(gid) for gid in group_ids]
            # the state keeps them: what its codec (msgpack) encodes, as the wire's are
            if (wide := next((gid for gid in group_ids if isinstance(gid, int)
                              and not -(2**63) <= gid < 2**64), None)) is not None:
                raise ValueError(f"group ids must be strings or integers of 64 bits (from "
                                 f"-2**63 to 2**64 - 1), got {wide}")
            in_block: set = set()
            for gid in group_ids:
                if gid in in_block:
                    raise ValueError(f"group ids must be unique: {gid!r} names two groups of "
                                     f"the block")
                in_block.add(gid)
            reused = next((gid for gid in group_ids if gid in known), None)
            if reused is not None:
                raise ValueError(f"group ids must be unique: {reused!r} was used by an earlier "
                                 f"block (a group's columns all come in one block)")
        rel = self._relevance(block)
        base = self.n_features_seen_
        for gid in group_ids:
            known.add(gid)
        for gid, cols in zip(group_ids, groups):
            self._group_step(block, rel, base, gid, cols)
        self.n_features_seen_ = base + b
        self._sync()

    def _group_step(self, block: ColumnBlock, rel: dict, base: int, gid: Any,
                    cols: np.ndarray) -> None:
        self.n_groups_seen_ += 1
        relevant = rel["relevant"][cols]
        self.n_irrelevant_ += int(len(cols) - np.count_nonzero(relevant))
        cand = [int(c) for c in cols[relevant]]
        if not cand:
            self.n_groups_discarded_ += 1
            return
        use_max = self.bound == "max"
        prep: dict[int, tuple] = {}
        exact: dict[int, tuple] = {}  # each newcomer's exact sums (_signs)
        dead: list[int] = []  # removed during this step; slots released at the end
        # intra-group
        kept: list[int] = []
        for j in cand:
            f = base + j
            dep_f = float(rel["dep"][j])
            prep[f] = self._prep(block, j, rel)
            exact[f] = self._exact_of(rel, j)
            self._st_aff.setdefault(f, [])
            if kept:
                slots = np.asarray([self._st_slot[g] for g in kept], dtype=np.int64)
                deps = np.asarray([self._st_dep[g] for g in kept])
                d, dependent = self._pair(prep[f], slots)
                syf, sdf, sdy = self._signs(prep[f], exact[f], dep_f, slots, deps, d)
                # d > m, m = max (or min) of the two strengths
                ok = dependent & (((sdf > 0) & (sdy > 0)) if use_max else ((sdf > 0) | (sdy > 0)))
                first = ok & (syf >= 0)
                second = ok & (syf < 0)
                stop = int(np.argmax(first)) if first.any() else len(kept)
                gone = [kept[q] for q in np.flatnonzero(second[:stop])]
                for q in np.flatnonzero(second[:stop]):
                    self._affiliate(kept[q], f, float(d[q]))
                for g in gone:
                    self._drop(g)
                self.n_redundant_ += len(gone)
                if stop < len(kept):
                    self._affiliate(f, kept[stop], float(d[stop]))
                    self.n_redundant_ += 1
                    kept = [g for g in kept if g not in gone]
                    self._st_aff.pop(f, None)
                    continue
                kept = [g for g in kept if g not in gone]
            self._store(f, block, j, dep_f)
            kept.append(f)
        # inter-group
        lofs = self.compat == "lofs"
        new_now = list(kept)
        new_alive = set(kept)
        for entry in self._st_groups:
            if not new_alive and not lofs:
                break
            members = list(entry[1])
            alive = set(members)
            for a in (kept if lofs else list(new_now)):
                if not lofs and a not in new_alive:
                    continue
                bs = members if lofs else [g for g in members if g in alive]
                if not bs:
                    break
                slots = np.asarray([self._st_slot[g] for g in bs], dtype=np.int64)
                deps = np.asarray([self._st_dep[g] for g in bs])
                dep_a = self._st_dep[a]
                d, dependent = self._pair(prep[a], slots)
                syf, sdf, sdy = self._signs(prep[a], exact[a], dep_a, slots, deps, d)
                ok = dependent & (((sdf > 0) & (sdy > 0)) if use_max else ((sdf > 0) | (sdy > 0)))
                first = ok & (syf > 0)
                second = ok & (syf <= 0)
                stop = int(np.argmax(first)) if first.any() else len(bs)
                for q in np.flatnonzero(second[:stop]):
                    g = bs[q]
                    if g in alive:
                        alive.discard(g)
                        self._affiliate(g, a, float(d[q]))
                        self._st_forward[g] = a
                        dead.append(g)
                        self.n_redundant_ += 1
                if stop < len(bs) and a in new_alive:
                    new_alive.discard(a)
                    self._affiliate(a, bs[stop], float(d[stop]))
                    self._st_forward[a] = bs[stop]
                    dead.append(a)
                    self.n_redundant_ += 1
            entry[1] = [g for g in members if g in alive]
            new_now = [g for g in new_now if g in new_alive]
        self._st_groups = [e for e in self._st_groups if e[1]]
        for g in dead:
            self._st_aff.pop(g, None)
            self._drop(g)
        self._st_forward.clear()
        new_now = [g for g in kept if g in new_alive]
        if new_now:
            self._st_groups.append([gid, new_now])
        else:
            self.n_groups_discarded_ += 1

    def to_state(self) -> dict:
        state = self._base_state()
        if state["started"]:
            state["groups"] = [
                [gid, np.asarray(feats, dtype=np.int64)] for gid, feats in self._st_groups
            ]
            state["n_groups_seen"] = int(self.n_groups_seen_)
            state["n_groups_discarded"] = int(self.n_groups_discarded_)
            state["group_ids"] = self._st_group_ids.to_state()
        return state

    @classmethod
    @reads_state
    def from_state(cls, state: dict) -> "GroupSAOLA":
        obj = cls._from_base_state(state)
        if state["started"]:
            obj._st_groups = [
                [gid, [int(f) for f in np.asarray(feats)]] for gid, feats in state["groups"]
            ]
            obj.n_groups_seen_ = int(state["n_groups_seen"])
            obj.n_groups_discarded_ = int(state["n_groups_discarded"])
            if "group_ids" in state:
                obj._st_group_ids = _UsedGroupIds.from_state(state["group_ids"])
            else:  # a state saved before the ids were kept: the selected groups' are known
                for gid, _ in obj._st_groups:
                    obj._st_group_ids.add(gid)
            obj._sync()
        return obj
