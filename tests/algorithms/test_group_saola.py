"""Group-SAOLA: rules against a naive reference, group ids, groups refused (the machinery it
shares with SAOLA is tested in test_saola.py, with the helpers this module uses)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from streamfs import codec
from streamfs.algorithms.group_saola import GroupSAOLA
from tests.algorithms.test_saola import _Ref, _tied_binary_columns, make_stream

# ---------------------------------------------------------------- naive reference


def ref_group_saola(X, y, groups, test, lofs=False):
    ref = _Ref(X, y, test)
    sel, dep = [], {}
    for g in groups:
        cand = [i for i in g if ref.relevant(i)]
        for i in cand:
            dep[i] = ref.strength(i, None)
        kept = []
        for f in cand:
            out = False
            for Y in list(kept):
                d = ref.strength(f, Y)
                if not ref.dependent(d):
                    continue
                m = min(dep[f], dep[Y])
                if dep[Y] >= dep[f] and d > m:
                    out = True
                    break
                if dep[f] > dep[Y] and d > m:
                    kept.remove(Y)
            if not out:
                kept.append(f)
        new = list(kept)
        snapshot = list(kept)
        for gm in sel:
            old = list(gm)
            for a in (snapshot if lofs else list(new)):
                if not lofs and a not in new:
                    continue
                for b in (old if lofs else list(gm)):
                    d = ref.strength(a, b)
                    if not ref.dependent(d):
                        continue
                    m = min(dep[a], dep[b])
                    if dep[b] > dep[a] and d > m:
                        if a in new:
                            new.remove(a)
                        break
                    if dep[a] >= dep[b] and d > m and b in gm:
                        gm.remove(b)
        sel = [gm for gm in sel if gm]
        if new:
            sel.append(new)
    return sel


# ---------------------------------------------------------------- rules


@pytest.mark.parametrize("test", ["fisher_z", "mi"])
@pytest.mark.parametrize("compat", [None, "lofs"])
def test_group_matches_reference(test, compat):
    for seed in range(10):
        X, y = make_stream(seed, p=48, test=test)
        rng = np.random.default_rng(100 + seed)
        cuts = np.sort(rng.choice(np.arange(1, 48), size=7, replace=False))
        groups = np.split(np.arange(48), cuts)
        groups = [rng.permutation(g) for g in groups]  # in-group order need not be sorted
        g = GroupSAOLA(test=test, compat=compat).fit(X, y, groups=groups)
        ref = ref_group_saola(X, y, groups, test, lofs=compat == "lofs")
        assert [feats.tolist() for _, feats in g.selected_groups_] == ref, f"seed {seed}"
        assert g.selected_.tolist() == [f for grp in ref for f in grp]


def test_group_lofs_removed_features_still_compare():
    # G0 = [b1]; G1 = [a1, a2]. a1 removes b1 (dep(a1) >= dep(b1), d > m). a2 shares b1's
    # noise: dep(b1) > dep(a2) and d(a2, b1) > dep(a2), but d(a2, a1) < dep(a2).
    # Clean: G0 is gone when a2's turn comes, both a1 and a2 stay. compat="lofs": b1 still
    # takes part and removes a2.
    rng = np.random.default_rng(0)
    n = 4000
    y = rng.integers(0, 2, n).astype(float)
    s = y + 0.5 * rng.standard_normal(n)
    e = 0.5 * rng.standard_normal(n)
    b1 = s + e
    a1 = s + 0.05 * rng.standard_normal(n)
    a2 = 0.3 * y + e + 0.3 * rng.standard_normal(n)
    r = lambda u, v: abs(np.corrcoef(u, v)[0, 1])  # noqa: E731
    assert r(a1, y) >= r(b1, y) and r(a1, b1) > r(b1, y)
    assert r(b1, y) > r(a2, y) and r(a2, b1) > r(a2, y) and r(a2, a1) < r(a2, y)
    X = np.column_stack([b1, a1, a2])
    groups = [[0], [1, 2]]
    clean = GroupSAOLA().fit(X, y, groups=groups)
    lofs = GroupSAOLA(compat="lofs").fit(X, y, groups=groups)
    assert [(g, f.tolist()) for g, f in clean.selected_groups_] == [(1, [1, 2])]
    assert [(g, f.tolist()) for g, f in lofs.selected_groups_] == [(1, [1])]
    assert [a for a, _ in lofs.affiliated_[1]] == [0, 2]


@pytest.mark.parametrize("test", ["fisher_z", "mi"])
def test_group_ties_go_to_the_newcomer(test):
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 200)
    x = np.floor(y * 2 + rng.standard_normal(200))
    # intra-group: dep(Y) >= dep(F) on a tie removes the newcomer F
    g = GroupSAOLA(test=test).fit(np.column_stack([x, x]), y, groups=[[0, 1]])
    assert g.selected_.tolist() == [0]
    # inter-group: dep(a) >= dep(b) on a tie removes the earlier group's b
    g = GroupSAOLA(test=test).fit(np.column_stack([x, x]), y, groups=[[0], [1]])
    assert [(gid, f.tolist()) for gid, f in g.selected_groups_] == [(1, [1])]
    assert g.affiliated_[1][0][0] == 0 and g.n_groups_discarded_ == 0


def test_group_fisher_exact_tie_of_binary_columns_goes_to_the_newcomer():
    y, pairs = _tied_binary_columns()
    for first, second in pairs:
        X = np.column_stack([first, second])
        g = GroupSAOLA(alpha=0.05).fit(X, y, groups=[[0, 1]])
        assert g.selected_.tolist() == [0]
        g = GroupSAOLA(alpha=0.05).fit(X, y, groups=[[0], [1]])
        assert [(gid, f.tolist()) for gid, f in g.selected_groups_] == [(1, [1])]


def test_group_ids_and_discarded_groups():
    rng = np.random.default_rng(3)
    n = 300
    y = rng.integers(0, 2, n)
    info = y + 0.5 * rng.standard_normal(n)
    g = GroupSAOLA()
    g.partial_fit(rng.standard_normal((n, 3)), y, group_ids=["noise"])
    g.partial_fit(np.column_stack([info, rng.standard_normal(n)]), group_ids=["sig"])
    assert g.n_groups_seen_ == 2 and g.n_groups_discarded_ == 1
    assert [(gid, f.tolist()) for gid, f in g.selected_groups_] == [("sig", [3])]
    assert g.selection()[0]["group"] == "sig"
    with pytest.raises(ValueError, match="unique"):
        g.partial_fit(rng.standard_normal((n, 1)), group_ids=["sig"])
    with pytest.raises(ValueError, match="partition"):
        g.partial_fit(rng.standard_normal((n, 3)), groups=[[0, 1], [1, 2]])


@pytest.mark.parametrize("round_trip", [False, True])
def test_group_ids_name_one_group_for_the_whole_stream(round_trip):
    # an id is refused once any earlier group had it: a discarded group, a group all of whose
    # features were removed since, or an explicit id that a default id would take again (it
    # was checked against the selected groups only, so two groups came out under one id)
    rng = np.random.default_rng(4)
    n = 300
    y = rng.integers(0, 2, n)
    sig = y + 0.5 * rng.standard_normal(n)

    def step(g, X, **kw):
        g.partial_fit(X, y if not hasattr(g, "n_features_seen_") else None, **kw)
        return GroupSAOLA.from_state(g.to_state()) if round_trip else g

    g = step(GroupSAOLA(), np.ones((n, 2)), group_ids=["a"])  # constant: discarded
    assert g.n_groups_discarded_ == 1 and g.selected_groups_ == []
    with pytest.raises(ValueError, match="'a' was used by an earlier block"):
        g.partial_fit(sig[:, None], group_ids=["a"])
    g = step(GroupSAOLA(), sig[:, None], group_ids=[7])
    g = step(g, sig[:, None], group_ids=[8])  # a copy: the newcomer removes group 7's feature
    assert [(gid, f.tolist()) for gid, f in g.selected_groups_] == [(8, [1])]
    with pytest.raises(ValueError, match="7 was used by an earlier block"):
        g.partial_fit(rng.standard_normal((n, 1)), group_ids=[7])
    g = step(GroupSAOLA(), sig[:, None], group_ids=[1])
    with pytest.raises(ValueError, match="default group id 1 .* given to an earlier group"):
        g.partial_fit((y + 0.5 * rng.standard_normal(n))[:, None])
    g = step(g, (y + 0.5 * rng.standard_normal(n))[:, None], group_ids=["b"])
    assert len({gid for gid, _ in g.selected_groups_}) == len(g.selected_groups_)
    # ids already taken are all still refused, and fresh ones accepted, after these steps
    for gid in ([1], ["b"]):
        with pytest.raises(ValueError, match="unique"):
            g.partial_fit(rng.standard_normal((n, 1)), group_ids=gid)
    g = step(g, rng.standard_normal((n, 3)), groups=[[0], [1, 2]], group_ids=[0, "1"])
    assert g.n_groups_seen_ == 4
    old = g.to_state()
    del old["group_ids"]  # a state saved before the ids were kept: its selected groups' count
    selected = g.selected_groups_[0][0]
    with pytest.raises(ValueError, match="unique"):
        GroupSAOLA.from_state(old).partial_fit(rng.standard_normal((n, 1)), group_ids=[selected])


def test_group_ids_of_64_bits_survive_the_state_s_codec():
    from streamfs.codec import packb, unpackb

    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 50)
    X = (y + 0.1 * rng.standard_normal((3, 50))).T
    g = GroupSAOLA().partial_fit(X, y, groups=[[0], [1], [2]], group_ids=[2**64 - 1, -2**63, 7])
    restored = GroupSAOLA.from_state(unpackb(packb(g.to_state())))
    assert restored.selection() == g.selection()
    with pytest.raises(ValueError, match="unique"):
        restored.partial_fit(X[:, :1], group_ids=[2**64 - 1])


@pytest.mark.parametrize("ids,message", [
    ([True], "group ids must be ints or strings, got True"),  # was taken as group 1
    ([[1]], "group ids must be ints or strings, got [1]"),  # was a bare TypeError
    ([1.0], "group ids must be ints or strings, got 1.0"),
    (["a", "a"], "group ids must be unique: 'a' names two groups of the block"),
    ([0, np.int64(0)], "group ids must be unique: 0 names two groups of the block"),
    # taken, then the state's encoding failed: CodecError "cannot encode object of type int"
    ([2**64], "group ids must be strings or integers of 64 bits (from -2**63 to 2**64 - 1), "
              f"got {2**64}"),
])
def test_group_ids_refused_as_the_worker_refuses_them_naming_the_id(ids, message):
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 50)
    g = GroupSAOLA()
    with pytest.raises(ValueError, match=re.escape(message) + "$"):
        g.partial_fit(rng.standard_normal((50, len(ids))), y,
                      groups=[[k] for k in range(len(ids))], group_ids=ids)
    g = GroupSAOLA().partial_fit((y + 0.1 * rng.standard_normal(50))[:, None], y,
                                 group_ids=[np.str_("z")])
    assert type(g.selected_groups_[0][0]) is str  # as after to_state/from_state


def test_group_saola_block_of_no_columns_has_no_group():
    # the default "one group" made an empty group of it: counted as seen and discarded, and
    # it took the default id 0 (explicit empty groups are refused)
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 50)
    g = GroupSAOLA().partial_fit(np.zeros((50, 0)), y)
    assert (g.n_groups_seen_, g.n_groups_discarded_, g.n_features_seen_) == (0, 0, 0)
    g.partial_fit((y + 0.1 * rng.standard_normal(50))[:, None])
    assert [(gid, f.tolist()) for gid, f in g.selected_groups_] == [(0, [0])]


def test_used_group_ids_as_ranges():
    from streamfs.algorithms.group_saola import _UsedGroupIds

    rng = np.random.default_rng(0)
    ids = _UsedGroupIds()
    plain: set = set()
    for gid in [int(v) for v in rng.permutation(60)[:45]] + [-3, "x", "3", 10**30]:
        ids.add(gid)
        plain.add(gid)
        state = ids.to_state()
        back = _UsedGroupIds.from_state(state if gid == 10**30  # (no 64-bit type holds it)
                                        else codec.unpackb(codec.packb(state)))
        for probe in list(range(-5, 65)) + [10**30, "x", "3", "4"]:
            assert (probe in ids) == (probe in back) == (probe in plain)
    ids = _UsedGroupIds()
    for gid in range(1000):
        ids.add(gid)
    assert ids.to_state() == {"ranges": [0, 999], "strings": []}  # a producer's ids: one range


@pytest.mark.parametrize("groups, message", [
    ([[0, 1.5], [2]], r"list of lists of column indices \(integers\): group 0 has 1\.5$"),
    ([[True, 1], [2]], r"\(integers\): group 0 has True$"),
    ([0, 1, 2], r"column indices: group 0 is 0, not a list$"),
    ("012", r"column indices, got '012'$"),
    ([[0, 1], [1, 2]], r"partition the block's columns 0\.\.2 \(each exactly once\): column 1 "
                       r"is in groups 0 and 1$"),
    ([[0, 1], [3]], r"\(each exactly once\): group 1 has column 3$"),
    ([[0, 1, 2], []], r"^groups must not be empty: group 1 has no columns$"),
])
def test_group_saola_refuses_groups_that_are_not_lists_of_column_indices(groups, message):
    """Group indices were cast with np.asarray(g, dtype=int64): 1.5 was read as column 1 and
    a flat list as one group per column, silently; a string gave numpy's own error."""
    from sklearn.datasets import load_breast_cancer

    from streamfs.offline import run_offline  # the producers' messages through the worker

    X, y = load_breast_cancer(return_X_y=True)
    with pytest.raises(ValueError, match=message):
        GroupSAOLA().fit(X[:, :3], y, groups=groups)
    with pytest.raises(ValueError, match=message.replace("block's columns", "columns")):
        run_offline("group-saola", X[:, :3], y, groups=groups)
    ok = [np.array([2, 0]), range(1, 2)]  # integer arrays and ranges are lists of indices
    assert (GroupSAOLA().fit(X[:, :3], y, groups=ok).selected_.tolist()
            == [item["feature"] for item in run_offline("group-saola", X[:, :3], y,
                                                        groups=ok)["selection"]])


def test_a_pickle_written_when_group_saola_lived_in_saola_still_loads():
    """Pickles name a class by module: those written before GroupSAOLA moved to its own module
    name it streamfs.algorithms.saola.GroupSAOLA, its used group ids
    streamfs.algorithms.saola._UsedGroupIds and its stored columns
    streamfs.algorithms.saola._Pool."""
    import io
    import pickle

    X, y = make_stream(2, p=24)
    g = GroupSAOLA().fit(X, y, groups=np.array_split(np.arange(24), 4))
    new = pickle.dumps(g, protocol=0)  # text opcodes: the module paths can be rewritten
    old = new
    for now, then in [(b"streamfs.algorithms.group_saola\nGroupSAOLA\n",
                       b"streamfs.algorithms.saola\nGroupSAOLA\n"),
                      (b"streamfs.algorithms.group_saola\n_UsedGroupIds\n",
                       b"streamfs.algorithms.saola\n_UsedGroupIds\n"),
                      (b"streamfs.algorithms.saola_pool\nPool\n",
                       b"streamfs.algorithms.saola\n_Pool\n")]:
        assert now in old
        old = old.replace(now, then)
    assert b"group_saola" not in old and b"saola_pool" not in old
    back = pickle.load(io.BytesIO(old))
    assert type(back) is GroupSAOLA
    assert back.to_state().keys() == g.to_state().keys()
    assert [(gid, f.tolist()) for gid, f in back.selected_groups_] == [
        (gid, f.tolist()) for gid, f in g.selected_groups_]
    more = np.column_stack([X[:, :3], y + np.random.default_rng(0).standard_normal(len(y))])
    back.partial_fit(more)
    g.partial_fit(more)
    assert back.selection() == g.selection()


def test_a_mistaken_keyword_names_group_saola():
    """``groups`` belongs to fit; given to the constructor, the error named SAOLABase."""
    with pytest.raises(TypeError, match=r"^GroupSAOLA\.__init__\(\) got an unexpected keyword"):
        GroupSAOLA(groups=[[0, 1]])
    assert GroupSAOLA(alpha=0.05).get_params() == dict(
        test="fisher_z", alpha=0.05, delta=0.0, bound="min", compat=None, n_bins=None)
