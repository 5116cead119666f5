"""The stream lifecycle without a broker: StreamProcessor over an in-memory store."""

import time

import numpy as np
import pytest

from streamfs.algorithms import registry
from streamfs.codec import decode, encode, packb, unpackb
from streamfs.offline import run_offline
from streamfs.producers import feature_stream_messages, instance_stream_messages
from streamfs.worker.processor import Plan, StreamProcessor
from streamfs.worker.state_records import header_key, pack_column, unpack_column


def _data(n=120, p=40, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    X = rng.normal(size=(n, p))
    X[:, ::5] += 1.5 * y[:, None]  # every fifth column informative
    X[:, 7] = X[:, 5] + 0.01 * rng.normal(size=n)  # a near copy
    return X, y


def _apply(processor: StreamProcessor, plan) -> None:
    for key, value in plan.writes:
        if value is None:
            processor.store.pop(key, None)
        else:
            processor.store[key] = value


def _run(processor, messages, *, fresh_every=None):
    """Feed encoded messages; with fresh_every=k a new processor (empty cache, same store)
    takes over every k messages, as after a worker restart."""
    results, dead = [], []
    for i, message in enumerate(messages):
        if fresh_every and i and i % fresh_every == 0:
            processor = StreamProcessor(processor.kind, processor.store)
        raw = message if isinstance(message, bytes) else encode(message)
        key = message.get("stream", "s") if isinstance(message, dict) else "s"
        plan = processor.handle(key, raw)
        _apply(processor, plan)
        if plan.result:
            results.append(plan.result)
        if plan.dead_letter:
            dead.append(decode(plan.dead_letter))
    return results, dead


def test_feature_stream_matches_offline_algorithm():
    from streamfs.algorithms.saola import SAOLA

    X, y = _data()
    msgs = list(feature_stream_messages("s", X, y, "saola", {}, block_bytes=120 * 8 * 6))
    assert len(msgs) > 4  # several blocks
    results, dead = _run(StreamProcessor("features", {}), msgs)
    assert not dead
    final = decode(results[-1])
    assert final["final"] and [r["version"] for r in map(decode, results)] == list(
        range(1, len(results) + 1))
    assert [s["feature"] for s in final["selection"]] == SAOLA().fit(X, y).selected_.tolist()


def test_rebuild_from_store_gives_identical_results():
    X, y = _data(seed=3)
    msgs = list(feature_stream_messages("s", X, y, "saola", {}, block_bytes=120 * 8 * 3))
    straight, _ = _run(StreamProcessor("features", {}), msgs)
    restarted, _ = _run(StreamProcessor("features", {}), msgs, fresh_every=2)
    assert restarted == straight  # byte-identical result sequence


def test_redelivered_messages_are_skipped():
    X, y = _data()
    msgs = list(feature_stream_messages("s", X, y, "saola", {}, block_bytes=120 * 8 * 6))
    once, _ = _run(StreamProcessor("features", {}), msgs)
    doubled = [m for m in msgs for _ in range(2)]
    twice, dead = _run(StreamProcessor("features", {}), doubled)
    assert twice == once and not dead


def _reasons(messages, kind="features"):
    _, dead = _run(StreamProcessor(kind, {}), messages)
    return [d["reason"] for d in dead]


def test_invalid_inputs_become_dead_letters_with_reasons():
    X, y = _data()
    ok = list(feature_stream_messages("s", X, y, "saola", {}, block_bytes=120 * 8 * 10))
    bad_len = dict(ok[1], X=X[:-1, :3])
    nan = dict(ok[1], X=np.full((120, 2), np.nan))
    cases = {
        "undecodable": [b"\x00garbage"],
        "before 'open'": [ok[1]],
        "unknown algorithm": [dict(ok[0], algorithm="nope")],
        "unknown parameter": [dict(ok[0], params={"bogus": 1})],
        "single class": [dict(ok[0], y=np.zeros(120, dtype=np.int64))],
        "NaN": [dict(ok[0], y=np.r_[np.nan, y[1:].astype(float)])],
        "length": [ok[0], bad_len],
        # the algorithm's own check, which names the block's columns
        "rejected by saola: X contains NaN or infinite values in block columns [0, 1]":
            [ok[0], nan],
        "rejected by saola: X has values too small for the Fisher-z test's correlations in "
        "block columns [1]": [ok[0], dict(ok[1], X=X[:, :2] * [1.0, 1e-200])],
        "sequence gap": [ok[0], dict(ok[2])],
        "after 'close'": [ok[0], dict(ok[-1], seq=1), dict(ok[1], seq=2)],
        "instances": [ok[0], {"kind": "instances", "stream": "s", "seq": 1, "X": X, "y": y}],
        # sent to the wrong topic (its stream open on the other): not "data before 'open'"
        "'instances' message on the features topic (stream 's' has no 'open' here)":
            [{"kind": "instances", "stream": "s", "seq": 1, "X": X, "y": y}],
        "'result' message on the features topic (stream 's' has no 'open' here)":
            [{"kind": "result", "stream": "s", "seq": 1}],
    }
    for needle, messages in cases.items():
        reasons = _reasons(messages)
        assert len(reasons) == 1 and needle in reasons[0], (needle, reasons)


def test_values_too_large_for_kofsd_are_dead_lettered_and_the_stream_goes_on():
    # a hang of the worker before: NaN distances sent the neighbour search into a loop
    X, y = _data()
    huge = X[:, :2] * 1e300
    ok = list(feature_stream_messages("s", X, y, "kofsd", {}, block_bytes=120 * 8 * 10))
    shifted = [dict(m, seq=m["seq"] + 1) for m in ok[1:]]
    results, dead = _run(StreamProcessor("features", {}),
                         [ok[0], dict(ok[1], X=huge)] + shifted)
    assert len(dead) == 1
    assert "rejected by kofsd: X has values too large" in dead[0]["reason"]
    assert decode(results[-1])["final"]


def test_rejected_data_consumes_its_sequence_number_and_stream_goes_on():
    X, y = _data()
    ok = list(feature_stream_messages("s", X, y, "saola", {}, block_bytes=120 * 8 * 10))
    bad = dict(ok[1], X=X[:-1])  # wrong N, at seq 1
    shifted = [dict(m, seq=m["seq"] + 1) for m in ok[1:]]
    results, dead = _run(StreamProcessor("features", {}), [ok[0], bad] + shifted)
    assert len(dead) == 1 and decode(results[-1])["final"]
    assert decode(results[-1])["counters"]["rejected_messages"] == 1


def test_a_second_open_of_the_run_consumes_its_seq_as_refused_data_does():
    """An 'open' at the next seq of an open stream (its own run) was refused without using up
    that seq: every later message of the stream was then a sequence gap."""
    X, y = _data()
    ok = list(feature_stream_messages("s", X, y, "saola", {}, block_bytes=120 * 8 * 10))
    again = dict(ok[0], seq=1)
    shifted = [dict(m, seq=m["seq"] + 1) for m in ok[1:]]
    results, dead = _run(StreamProcessor("features", {}), [ok[0], again] + shifted)
    assert [d["reason"] for d in dead] == [
        "stream 's' is already open: an 'open' starts a run, at seq 0; refused, its seq 1 "
        "consumed, and the stream goes on"]
    final = decode(results[-1])
    assert final["final"] and final["counters"]["rejected_messages"] == 1
    expected = decode(_run(StreamProcessor("features", {}), ok)[0][-1])["selection"]
    assert final["selection"] == expected
    # its redelivery is skipped, as any message's at a consumed seq
    processor = StreamProcessor("features", {})
    _run(processor, [ok[0], again])
    assert processor.handle("s", encode(again)).skipped


def test_oversized_message_is_refused_clearly():
    processor = StreamProcessor("features", {}, max_message_bytes=1000)
    plan = processor.handle("s", b"\x00" * 2000)
    assert "exceeds the worker limit" in decode(plan.dead_letter)["reason"]
    assert decode(plan.dead_letter)["original_truncated"] is True


def test_key_must_match_stream_id():
    X, y = _data()
    first = next(feature_stream_messages("s", X, y, "saola"))
    plan = StreamProcessor("features", {}).handle(b"other", encode(first))
    assert "differs from the stream id" in decode(plan.dead_letter)["reason"]


def test_a_key_that_is_not_utf8_is_refused():
    # decoded with replacement, the keys b"s\xff" and b"s\xfe" (two partitions, perhaps) were
    # both taken as the stream "s\ufffd", whose results went out under a third key
    X, y = _data()
    opening, block = list(feature_stream_messages("s\ufffd", X, y, "saola"))[:2]
    processor = StreamProcessor("features", {})
    plans = [processor.handle(b"s\xff", encode(opening)), processor.handle(b"s\xfe", encode(block))]
    for plan in plans:
        letter = decode(plan.dead_letter)
        assert "is not UTF-8 text" in letter["reason"] and letter["stream"] == "s\ufffd"
        assert not plan.writes and plan.result is None


def test_columns_are_stored_one_record_per_feature():
    X, y = _data()
    store: dict = {}
    processor = StreamProcessor("features", store)
    _run(processor, list(feature_stream_messages("s", X, y, "saola", {},
                                                 block_bytes=120 * 8 * 8))[:-1])  # not closed

    h = unpackb(store[header_key("s")])
    assert h["status"] == "open" and len(h["columns"]) >= 1
    col_keys = [k for k in store if "\x1fc\x1f" in k]
    assert sorted(int(k.rsplit("\x1f", 1)[1]) for k in col_keys) == h["columns"]
    assert max(len(store[k]) for k in col_keys) < 120 * 8 + 200  # one column per record


@pytest.mark.parametrize("nonzero", [0, 1, 30, 60, 62, 100])
def test_kept_columns_round_trip_bit_for_bit_and_mostly_zero_ones_pack_small(nonzero):
    rng = np.random.default_rng(nonzero)
    column = np.zeros(100)
    column[rng.choice(100, nonzero, replace=False)] = rng.normal(size=nonzero)
    if nonzero:
        column[np.flatnonzero(column)[0]] = -0.0  # a stored negative zero is kept as such
    data = pack_column(column)
    back = unpack_column(data)
    assert back.dtype == np.float64 and back.shape == (100,)
    assert back.tobytes() == column.tobytes()
    if nonzero <= 60:  # sparse: 12 bytes a non-zero and a small header, under 800
        assert len(data) < 12 * nonzero + 100 and len(data) < 100 * 8
    else:
        assert len(data) >= 100 * 8  # dense


def test_sparse_feature_stream_rebuilt_from_sparse_column_records_is_identical():
    import scipy.sparse as sp

    rng = np.random.default_rng(5)
    n, p = 300, 400
    y = rng.integers(0, 2, n)
    X = sp.random(n, p, density=0.05, random_state=5, format="lil")
    for j in range(0, 40, 5):  # a few words that mostly occur in class 1
        X[:, j] = (y * (rng.random(n) < 0.4)).astype(float)[:, None]
    X = X.tocsc()
    msgs = list(feature_stream_messages("s", X, y, "saola", {"test": "fisher_z"},
                                        block_bytes=4000))
    store: dict = {}
    straight, dead = _run(StreamProcessor("features", store), msgs[:-1])
    assert not dead
    col_keys = [k for k in store if "\x1fc\x1f" in k]
    assert col_keys and all(len(store[k]) < n * 8 / 2 for k in col_keys)  # packed sparse
    restarted, _ = _run(StreamProcessor("features", {}), msgs, fresh_every=1)
    once, _ = _run(StreamProcessor("features", {}), msgs)
    assert restarted == once and decode(once[-1])["selection"]


def test_offline_runner_equals_algorithm_for_instances():
    from streamfs.algorithms.ofs import OFS

    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 20))
    y = np.where(X[:, 0] + X[:, 3] > 0, 1, -1)
    final = run_offline("ofs", X, y, {"n_features_to_select": 4}, block_bytes=20 * 8 * 37)
    ref = OFS(n_features_to_select=4).partial_fit(X, y)
    assert sorted(s["feature"] for s in final["selection"]) == sorted(ref.selected_.tolist())
    assert final["counters"]["mistakes"] == ref.mistakes_


@pytest.mark.parametrize("no_labels", [[], np.zeros(0, dtype=np.int64)])
def test_an_instance_block_of_no_rows_learns_nothing(no_labels):
    # it was dead-lettered ("labels 'y' is empty"), where a feature block of no columns is not
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 20))
    y = np.where(X[:, 0] + X[:, 3] > 0, 1, -1)
    opening, *blocks = list(instance_stream_messages("i", X, y, "ofs", {"n_features_to_select": 4},
                                                     block_bytes=20 * 8 * 37))
    assert opening["seq"] == 0 and [m["seq"] for m in blocks] == list(range(1, len(blocks) + 1))
    empty = dict(blocks[0], X=np.zeros((0, 20)), y=no_labels)
    # one before the first block (nothing learned yet) and one between two blocks
    mixed = [empty, blocks[0], empty, *blocks[1:]]
    messages = [opening] + [dict(m, seq=i) for i, m in enumerate(mixed, 1)]
    results, dead = _run(StreamProcessor("instances", {}), messages)
    expected, _ = _run(StreamProcessor("instances", {}), [opening, *blocks])
    assert not dead
    # the first step of a stream publishes its first version, here one of no features (as
    # after a first feature block whose columns are all irrelevant); the rest as without them
    first, *rest = [decode(r) for r in results]
    assert (first["version"], first["selection"], first["counters"]["n_seen"]) == (1, [], 0)
    assert [r["selection"] for r in rest] == [decode(r)["selection"] for r in expected]
    assert rest[-1]["counters"] == decode(expected[-1])["counters"]
    # rows without labels, or labels without rows, are still refused
    assert _reasons([opening, dict(empty, X=np.zeros((0, 20)), y=None)], "instances") == [
        "labels 'y' must be a 1-D array or list of labels"]
    assert _reasons([opening, dict(empty, X=X[:2], y=[])], "instances") == [
        "labels 'y' is empty"]


def test_instance_stream_messages_round_trip_blocks():
    X = np.arange(60, dtype=np.float64).reshape(20, 3)
    y = np.arange(20) % 2
    msgs = list(instance_stream_messages("i", X, y, "ofs", block_bytes=100))
    blocks = [m for m in msgs if m["kind"] == "instances"]
    assert np.array_equal(np.vstack([b["X"] for b in blocks]), X)
    assert [m["seq"] for m in msgs] == list(range(len(msgs)))


@pytest.mark.parametrize("seed", range(6))
def test_crash_after_any_prefix_of_writes_then_redelivery(seed):
    """A kill can persist any prefix of one message's writes (the changelog keeps their order)
    and the consumer restarts from any earlier committed offset: results stay identical."""
    X, y = _data(seed=seed)
    msgs = [encode(m) for m in feature_stream_messages("s", X, y, "saola", {},
                                                       block_bytes=120 * 8 * 3)]
    expected, _ = _run(StreamProcessor("features", {}), msgs)

    rng = np.random.default_rng(seed)
    store: dict = {}
    published: list[bytes] = []
    committed = 0
    position = 0
    for _ in range(4):  # four crashes at random points
        processor = StreamProcessor("features", store)
        crash_at = int(rng.integers(position, len(msgs)))
        for i in range(committed, crash_at + 1):
            plan = processor.handle("s", msgs[i])
            if plan.result:
                published.append(plan.result)
            writes = plan.writes if i < crash_at else plan.writes[: int(rng.integers(0, len(plan.writes) + 1))]
            for key, value in writes:
                if value is None:
                    store.pop(key, None)
                else:
                    store[key] = value
        position = crash_at
        committed = int(rng.integers(0, crash_at + 1))  # offsets may lag arbitrarily
    processor = StreamProcessor("features", store)
    for i in range(committed, len(msgs)):
        plan = processor.handle("s", msgs[i])
        _apply(processor, plan)
        if plan.result:
            published.append(plan.result)
    by_version: dict[int, bytes] = {}
    for raw in published:
        assert by_version.setdefault(decode(raw)["version"], raw) == raw  # duplicates identical
    assert [by_version[v] for v in sorted(by_version)] == expected


def test_string_labels_are_stored_and_used():
    from streamfs.algorithms.saola import SAOLA

    X, y = _data(seed=5)
    labels = np.where(y == 1, "malignant", "benign")
    msgs = list(feature_stream_messages("s", X, labels, "saola", {}, block_bytes=120 * 8 * 6))
    results, dead = _run(StreamProcessor("features", {}), msgs, fresh_every=2)
    assert not dead
    assert [s["feature"] for s in decode(results[-1])["selection"]] == \
        SAOLA().fit(X, labels).selected_.tolist()


def test_shuffled_feature_order_is_reported_in_source_column_ids():
    from streamfs.algorithms.saola import SAOLA
    from streamfs.producers.blocks import feature_order

    X, y = _data(seed=8)
    msgs = list(feature_stream_messages("s", X, y, "saola", {}, shuffle_seed=3,
                                        block_bytes=120 * 8 * 5))
    assert any("columns" in m for m in msgs)
    results, dead = _run(StreamProcessor("features", {}), msgs, fresh_every=3)
    assert not dead
    order = feature_order(X.shape[1], shuffle_seed=3)[0]
    ref = SAOLA().fit(X[:, order], y)
    final = decode(results[-1])["selection"]
    assert [s["feature"] for s in final] == [int(order[f]) for f in ref.selected_]
    for item, f in zip(final, ref.selected_):
        assert [a[0] for a in item["affiliated"]] == [int(order[a]) for a, _ in ref.affiliated_[int(f)]]


# ------------------------------------------------------------------ names, runs, formats
def test_results_name_features_from_block_names_and_shuffles():
    X, y = _data(seed=8)
    names = [f"gene_{j}" for j in range(X.shape[1])]
    msgs = list(feature_stream_messages("s", X, y, "saola", {}, shuffle_seed=3,
                                        block_bytes=120 * 8 * 5, feature_names=names))
    results, dead = _run(StreamProcessor("features", {}), msgs, fresh_every=3)
    assert not dead
    final = decode(results[-1])["selection"]
    assert final and all(item["name"] == names[item["feature"]] for item in final)
    assert all(a[2] == names[a[0]] for item in final for a in item["affiliated"])


def test_unnamed_features_follow_the_naming_rule():
    X, y = _data(seed=2)
    plain = decode(_run(StreamProcessor("features", {}),
                        list(feature_stream_messages("s", X, y, "saola")))[0][-1])
    assert all(i["name"] == f"x{i['feature']}" for i in plain["selection"])
    # affiliated features too, as [source id, strength, name]
    affiliated = [a for i in plain["selection"] for a in i["affiliated"]]
    assert affiliated and all(len(a) == 3 and a[2] == f"x{a[0]}" for a in affiliated)
    libsvm = decode(_run(StreamProcessor("features", {}), list(feature_stream_messages(
        "s", X, y, "saola", naming={"name_prefix": "", "name_base": 1})))[0][-1])
    assert all(i["name"] == str(i["feature"] + 1) for i in libsvm["selection"])


def test_instance_stream_results_carry_feature_names():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 6))
    y = np.where(X[:, 2] > 0, 1, -1)
    names = ["a", "b", "signal", "d", "e", "f"]
    final = run_offline("ofs", X, y, {"n_features_to_select": 2}, feature_names=names)
    assert {i["name"] for i in final["selection"]} == {names[i["feature"]]
                                                       for i in final["selection"]}
    assert "signal" in {i["name"] for i in final["selection"]}


def test_keyless_record_is_dead_lettered():
    X, y = _data()
    first = next(feature_stream_messages("s", X, y, "saola"))
    plan = StreamProcessor("features", {}).handle(None, encode(first))
    reason = decode(plan.dead_letter)["reason"]
    assert "record has no key" in reason and "'s'" in reason and not plan.writes
    assert plan.stream == "s" and decode(plan.dead_letter)["stream"] == "s"


def test_empty_message_reason_is_said_once():
    plan = StreamProcessor("features", {}).handle("s", b"")
    reason = decode(plan.dead_letter)["reason"]
    assert reason.startswith("empty message") and reason.count("empty") == 1


@pytest.mark.parametrize("params,needle", [
    ({"alpha": -0.5}, "alpha"), ({"alpha": 0}, "alpha"), ({"alpha": float("nan")}, "alpha"),
    ({"alpha": "abc"}, "alpha"), ({"alfa": 0.01}, "alfa"),
])
def test_out_of_range_parameters_are_refused_at_open(params, needle):
    # the producers refuse these first (tests/producers/test_blocks.py); other producers may not
    X, y = _data()
    opening = dict(next(feature_stream_messages("s", X, y, "saola")), params=params)
    _, dead = _run(StreamProcessor("features", {}), [opening])
    assert len(dead) == 1 and needle in dead[0]["reason"]


def test_open_for_the_wrong_kind_and_bad_labels_are_refused():
    X, y = _data()
    opening = next(feature_stream_messages("s", X, y, "saola"))
    assert "consumes instance streams" in _reasons([dict(opening, algorithm="ofs")])[0]
    inst = next(instance_stream_messages("i", np.ones((300, 2)), np.arange(300) % 2, "ofs"))
    assert "consumes feature streams" in _reasons([dict(inst, algorithm="kofsd")],
                                                  "instances")[0]
    # said before what the other kind's 'open' lacks (an operator audit: an OFS 'open' on the
    # features topic was told "must carry the class vector 'y'")
    ofs_open = {k: v for k, v in inst.items() if k != "n_features"}
    assert _reasons([ofs_open]) == ["algorithm 'ofs' consumes instance streams, not feature "
                                    "streams"]
    saola_open = {k: v for k, v in opening.items() if k != "y"}
    assert _reasons([saola_open], "instances") == ["algorithm 'saola' consumes feature "
                                                   "streams, not instance streams"]
    y3 = np.arange(120) % 3
    assert "class" in _reasons([dict(opening, y=np.zeros(120))])[0]
    assert not _reasons([dict(opening, y=y3)])  # multi-class ok


def test_reusing_a_finished_stream_id_is_dead_lettered_and_changes_nothing():
    X, y = _data()
    first = list(feature_stream_messages("s", X, y, "saola", block_bytes=120 * 8 * 6))
    again = list(feature_stream_messages("s", X[:, ::-1], y, "saola", block_bytes=120 * 8 * 6))
    processor = StreamProcessor("features", {})
    results, _ = _run(processor, first)
    more, dead = _run(processor, again)
    assert not more and len(dead) == len(again)
    assert "already exists (closed" in dead[0]["reason"] and "replace" in dead[0]["reason"]
    assert all("belongs to run" in d["reason"] and "(the stream is closed)" in d["reason"]
               for d in dead[1:])
    # no run of the stream: neither run 1 (it went on fine) nor a run 2 a --replace may start
    assert all(d["run"] is None and d["run_refused"] for d in dead)


def test_replace_starts_a_new_run_whose_versions_continue():
    X, y = _data()
    processor = StreamProcessor("features", {})
    first, _ = _run(processor, list(feature_stream_messages("s", X, y, "saola")))
    swapped = X[:, ::-1].copy()
    replay = list(feature_stream_messages("s", swapped, y, "saola", replace=True))
    second, dead = _run(processor, replay + replay)  # the second copy: redelivery, skipped
    assert not dead
    results = [decode(r) for r in first + second]
    assert [r["version"] for r in results] == list(range(1, len(results) + 1))
    assert {r["run"] for r in map(decode, second)} == {2}
    fresh = run_offline("saola", swapped, y)
    assert [i["feature"] for i in decode(second[-1])["selection"]] == \
        [i["feature"] for i in fresh["selection"]]
    assert list(processor.store) == [header_key("s")]  # closed: the old run's records are gone


def test_a_replaced_run_s_messages_after_the_replace_are_refused_not_skipped():
    """Producer A publishes, producer B's replace starts run 2 part way: A's messages after
    it were skipped as redeliveries of a replaced run, without a dead letter, and A's user
    was told nothing. Only A's true redeliveries are skipped now."""
    X, y = _data()
    processor = StreamProcessor("features", {})
    a = list(feature_stream_messages("s", X, y, "saola", block_bytes=120 * 8 * 10))
    b = list(feature_stream_messages("s", X[:, ::-1].copy(), y, "saola", replace=True))
    assert len(a) > 4
    _, dead = _run(processor, a[:3] + b[:1])  # A applied seqs 0..2 when B's 'open' came
    assert not dead
    results, dead = _run(processor, a[1:3] + a[3:] + b[1:])
    # A's seqs 1 and 2 again: redeliveries, skipped; the rest of A: refused, no run's
    assert [d["reason"].split(" belongs")[0] for d in dead] == [
        f"{m['kind']!r} (seq {m['seq']})" for m in a[3:]]
    assert all("which a replace ended after its seq 2 (the stream is at run 2)" in d["reason"]
               for d in dead)
    assert {decode(r)["run"] for r in results} == {2} and decode(results[-1])["final"]
    fresh = run_offline("saola", X[:, ::-1].copy(), y)
    assert [i["feature"] for i in decode(results[-1])["selection"]] == \
        [i["feature"] for i in fresh["selection"]]


def test_a_run_opened_without_a_header_continues_after_the_producer_s_last_result():
    """The header of a closed stream went with its retention; the producer read run 1,
    version 7 from the results topic: the new run is 2, its versions from 8."""
    X, y = _data()
    replay = list(feature_stream_messages("s", X, y, "saola", replace=True))
    replay[0]["continue_from"] = {"run": 1, "version": 7}
    results, dead = _run(StreamProcessor("features", {}), replay)
    assert not dead
    results = [decode(r) for r in results]
    assert {r["run"] for r in results} == {2}
    assert [r["version"] for r in results] == list(range(8, 8 + len(results)))


def test_a_stream_s_header_knows_better_than_continue_from():
    X, y = _data()
    processor = StreamProcessor("features", {})
    first, _ = _run(processor, list(feature_stream_messages("s", X, y, "saola")))
    replay = list(feature_stream_messages("s", X, y, "saola", replace=True))
    replay[0]["continue_from"] = {"run": 5, "version": 0}
    second, dead = _run(processor, replay)
    assert not dead
    assert [(r["run"], r["version"]) for r in map(decode, second)][0] == (2, len(first) + 1)


@pytest.mark.parametrize("value,needle", [
    ([1, 2], "'continue_from' must be a map with 'run' and 'version' only, got [1, 2]"),
    ({"run": 1}, "'continue_from' must be a map with 'run' and 'version' only"),
    ({"run": 1, "version": -1}, "'continue_from' 'version' must be an integer from 0 to 2^53 - 1, got -1"),
    ({"run": True, "version": 3}, "'continue_from' 'run' must be an integer from 0 to 2^53 - 1, got True"),
])
def test_a_malformed_continue_from_is_dead_lettered(value, needle):
    X, y = _data()
    opening = next(feature_stream_messages("s", X, y, "saola"))
    assert needle in _reasons([dict(opening, continue_from=value)])[0]


def _tokenless(messages):
    return [{k: v for k, v in m.items() if k != "run"} for m in messages]


@pytest.mark.parametrize("closed", [True, False])
def test_a_tokenless_open_is_a_redelivery_only_if_byte_identical(closed):
    X, y = _data()
    first = _tokenless(feature_stream_messages("s", X, y, "saola"))
    processor = StreamProcessor("features", {})
    _run(processor, first if closed else first[:-1])
    again, dead = _run(processor, first[:1])  # redelivered: skipped
    assert not again and not dead
    other = _tokenless(feature_stream_messages("s", X, y, "saola", {"alpha": 0.2}))
    _, dead = _run(processor, other[:1])
    state = "closed" if closed else "open"
    assert dead[0]["reason"].startswith(f"stream 's' already exists ({state}")
    assert "a re-used stream id" in dead[0]["reason"] and "'run' token" in dead[0]["reason"]
    assert "replace=true" in dead[0]["reason"] and dead[0]["run_refused"]


def test_a_tokenless_replace_starts_a_new_run():
    X, y = _data()
    processor = StreamProcessor("features", {})
    first, _ = _run(processor, _tokenless(feature_stream_messages("s", X, y, "saola")))
    replay = _tokenless(feature_stream_messages("s", X[:, ::-1].copy(), y, "saola",
                                                {"alpha": 0.2}, replace=True))
    second, dead = _run(processor, replay[:1] + replay)  # the open twice: once applied
    assert not dead and {decode(r)["run"] for r in second} == {2}
    assert [decode(r)["version"] for r in first + second] == \
        list(range(1, len(first) + len(second) + 1))


@pytest.mark.parametrize("defer", [False, True])
@pytest.mark.parametrize("unreadable", [b"\xc1 not msgpack", b"\x00" * 70_000])
def test_a_stream_that_lost_an_unreadable_message_says_so_not_sequence_gap(unreadable, defer):
    X, y = _data()
    msgs = list(feature_stream_messages("s", X, y, "saola", block_bytes=120 * 8 * 6))
    store: dict = {}
    processor = StreamProcessor("features", store, max_message_bytes=65_536)

    def handle(raw, offset):
        plan = processor.handle("s", raw, origin={"topic": "in", "partition": 3, "offset": offset},
                                defer=defer)
        _apply(processor, plan)
        _apply(processor, Plan(writes=processor.flush()))
        return decode(plan.dead_letter)["reason"] if plan.dead_letter else None

    assert handle(encode(msgs[0]), 0) is None
    assert handle(encode(msgs[1]), 1) is None
    lost = handle(unreadable, 2)  # message seq 2, lost for good
    assert "lost" not in lost
    for offset, message in enumerate(msgs[3:], 3):
        reason = handle(encode(message), offset)
        assert reason.startswith("stream 's' lost a message the worker could not read (in[3]@2: ")
        assert "publish the stream again" in reason and "--replace" in reason
    processor = StreamProcessor("features", store)  # a restart: the store still says so
    assert "lost a message" in handle(encode(msgs[-1]), 99)
    replay = list(feature_stream_messages("s", X, y, "saola", replace=True))
    assert not _run(processor, replay)[1]  # a new run goes through


def test_results_say_where_their_runs_open_was_read():
    """``open_input``: the position of the run's ``open``, so that a reader can tell a dead
    letter without a run read before it (not the run's input) from one read after it."""
    X, y = _data()
    store: dict = {}

    def results(messages, first_offset):
        processor = StreamProcessor("features", store)  # a restart: the header keeps it
        out = []
        for offset, message in enumerate(messages, first_offset):
            plan = processor.handle("s", encode(message),
                                    origin={"topic": "in", "partition": 3, "offset": offset})
            _apply(processor, plan)
            out += [decode(plan.result)] if plan.result else []
        return out

    run1 = list(feature_stream_messages("s", X, y, "saola", block_bytes=120 * 8 * 6))
    first = results(run1[:3], 10) + results(run1[3:], 13)
    assert len(first) > 2 and all(
        r["open_input"] == {"topic": "in", "partition": 3, "offset": 10} for r in first)
    replaced = results(feature_stream_messages("s", X, y, "saola", replace=True), 50)
    assert replaced and {r["run"] for r in replaced} == {2}
    assert all(r["open_input"]["offset"] == 50 for r in replaced)
    # a processor not told where its input was read (as in these tests) says nothing
    unplaced, _ = _run(StreamProcessor("features", {}), feature_stream_messages("s", X, y, "saola"))
    assert unplaced and all(decode(r)["open_input"] is None for r in unplaced)


@pytest.mark.parametrize("labels,kind", [([None] * 120, "NoneType"), ([b"a"] * 120, "bytes"),
                                         ([[1]] * 120, "list"), ([1, None] * 60, "NoneType")])
def test_labels_of_no_label_type_are_named(labels, kind):
    X, y = _data()
    opening = next(feature_stream_messages("s", X, y, "saola"))
    assert _reasons([dict(opening, y=labels)]) == [
        f"class vector 'y' holds ['{kind}'] values: a label is a string or a number"]


@pytest.mark.parametrize("labels,kinds", [([True, 1] * 60, "['bool', 'int']"),
                                          ([False, 0.5] * 60, "['bool', 'float']"),
                                          (["a", 1] * 60, "['int', 'str']")])
def test_labels_of_two_types_are_refused_naming_them(labels, kinds):
    # a producer of the user's own sends a list: numpy would make True and 1 one class
    X, y = _data()
    opening = next(feature_stream_messages("s", X, y, "saola"))
    assert _reasons([dict(opening, y=labels)]) == [f"class vector 'y' mixes label types {kinds}"]
    assert not _reasons([dict(opening, y=[True, False] * 60)])
    assert not _reasons([dict(opening, y=[1, 0.0] * 60)])


def test_integer_labels_no_64_bit_type_holds_are_refused():
    # as floats, numpy's array of such a list, 2**64 - 1 and 2**64 - 2 were one class
    X, y = _data()
    opening = next(feature_stream_messages("s", X, y, "saola"))
    assert _reasons([dict(opening, y=[2 ** 64 - 1, 2 ** 64 - 2, -1] * 40)]) == [
        "class vector 'y': integer labels from -1 to 18446744073709551615, which no 64-bit "
        "integer type holds together (as floats, neighbouring labels would be one class): map "
        "them to smaller classes first"]
    assert not _reasons([dict(opening, y=[2 ** 64 - 1, 2 ** 64 - 2] * 60)])  # uint64: exact


def test_group_ids_that_are_not_contiguous_or_come_back_are_named():
    X, y = _data()
    msgs = list(feature_stream_messages("s", X[:, :8], y, "group-saola",
                                        groups=[[0, 1, 2, 3], [4, 5, 6, 7]]))
    opening, block = msgs[0], msgs[1]
    assert block["groups"] == [0, 0, 0, 0, 1, 1, 1, 1]
    split = dict(block, groups=[1, 2, 1, 2, 3, 3, 3, 3])
    again = dict(block, seq=2, X=X[:, 8:16], groups=[1] * 8)
    reasons = _reasons([opening, dict(block, groups=[1, 1, 1, 1, 2, 2, 2, 2]), again])
    assert reasons == ["rejected by group-saola: group ids must be unique: 1 was used by an "
                       "earlier block (a group's columns all come in one block)"]
    assert _reasons([opening, split]) == [
        "group id 1 comes back after another group in 'groups': a group's columns must be "
        "contiguous in the block (one run of equal ids)"]
    assert _reasons([opening, dict(block, groups=[[1]] * 8)]) == [
        "group ids must be integers or strings, got [1]"]



@pytest.mark.parametrize("fresh_every", [None, 1])
def test_group_id_of_a_discarded_group_is_refused_later(fresh_every):
    # the wire contract: an id an earlier block used is refused, also when that group was
    # discarded (it was taken as a new group under the same id), also after a restart
    X, y = _data()
    opening, block = list(feature_stream_messages("s", X[:, :4], y, "group-saola",
                                                  groups=[[0, 1, 2, 3]]))[:2]
    noise = dict(block, X=np.ones((120, 4)), groups=[0, 0, 1, 1])  # both groups discarded
    again = dict(block, seq=2, X=X[:, [0, 5]], groups=[1, 1])
    fresh = dict(block, seq=3, X=X[:, [0, 5]], groups=[2, 2])
    results, dead = _run(StreamProcessor("features", {}), [opening, noise, again, fresh],
                         fresh_every=fresh_every)
    assert [d["reason"] for d in dead] == [
        "rejected by group-saola: group ids must be unique: 1 was used by an earlier block (a "
        "group's columns all come in one block)"]
    assert {s["group"] for s in decode(results[-1])["selection"]} == {2}



def test_group_saola_block_of_no_columns_is_no_group():
    # it was an internal error (IndexError in reading its group ids), as SAOLA takes it
    X, y = _data()
    opening, block = list(feature_stream_messages("s", X[:, :4], y, "group-saola",
                                                  groups=[[0, 1, 2, 3]]))[:2]
    empty = dict(block, X=np.zeros((120, 0)), groups=[])
    results, dead = _run(StreamProcessor("features", {}), [opening, empty, dict(block, seq=2)])
    assert not dead
    assert [s["group"] for s in decode(results[-1])["selection"]] == [0]


def test_a_block_of_no_columns_may_carry_empty_columns_and_names():
    # its empty 'columns' decoded as floats and were refused as "one source column index per
    # column", which they are; the blocks after it keep their own ids and names
    X, y = _data()
    names = [f"f{j}" for j in range(6)]
    opening, *blocks = list(feature_stream_messages("s", X[:, :6], y, "saola",
                                                    feature_names=names, block_bytes=120 * 8 * 3))
    empty = dict(blocks[0], X=np.zeros((120, 0)), columns=[], names=[])
    later = [dict(m, seq=m["seq"] + 1) for m in blocks]
    results, dead = _run(StreamProcessor("features", {}), [opening, empty, *later])
    assert not dead
    expected, _ = _run(StreamProcessor("features", {}), [opening, *blocks])
    final, want = decode(results[-1])["selection"], decode(expected[-1])["selection"]
    assert final == want and all(s["name"] == names[s["feature"]] for s in final)


def test_blocks_of_no_columns_record_no_columns_or_names():
    # a producer that flushes on a timer sends many: each recorded an empty names (or
    # columns) record and spent an entry of the stream's block lists, which are bounded
    X, y = _data()
    names = [f"f{j}" for j in range(6)]
    opening, *blocks, _close = list(feature_stream_messages(
        "s", X[:, :6], y, "saola", feature_names=names, block_bytes=120 * 8 * 3))
    empties = [dict(blocks[0], X=np.zeros((120, 0)), columns=[], names=[], seq=blocks[0]["seq"] + i)
               for i in range(3)]
    later = [dict(m, seq=m["seq"] + 3) for m in blocks]
    with_empties = StreamProcessor("features", {})
    _, dead = _run(with_empties, [opening, *empties, *later])
    without = StreamProcessor("features", {})
    _run(without, [opening, *blocks])
    assert not dead and set(with_empties.store) == set(without.store)
    header, reference = (unpackb(p.store[header_key("s")]) for p in (with_empties, without))
    assert header["name_blocks"] == reference["name_blocks"] and len(reference["name_blocks"]) > 1


def test_groups_on_another_algorithm_and_bad_columns_are_dead_lettered():
    X, y = _data()
    opening, block = list(feature_stream_messages("s", X[:, :4], y, "saola"))[:2]
    assert _reasons([opening, dict(block, groups=[0, 0, 1, 1])]) == [
        "'groups' apply to group-saola streams only, not to 'saola'"]
    assert _reasons([opening, dict(block, columns=[1, 1, 1, 1])]) == [
        "'columns' names source column 1 more than once: each column of a block is another "
        "source column"]
    assert _reasons([opening, dict(block, columns=[-1, 0, 1, 2])]) == [
        "'columns' holds a negative source column index (-1)"]


def test_results_and_dead_letters_in_json():
    import json

    X, y = _data()
    processor = StreamProcessor("features", {}, output_format="json")
    msgs = list(feature_stream_messages("s", X, y, "saola"))
    plans = [processor.handle("s", encode(m)) for m in msgs[:1]]
    for p in plans:
        _apply(processor, p)
    result = None
    for m in msgs[1:]:
        plan = processor.handle("s", encode(m))
        _apply(processor, plan)
        result = plan.result or result
    final = json.loads(result)
    assert final["final"] and final["selection"][0]["name"].startswith("x")
    dead = json.loads(processor.handle("s", b"\x00junk").dead_letter)
    assert dead["kind"] == "dead_letter" and isinstance(dead["original"], str)


def test_a_closed_stream_keeps_only_its_header():
    X, y = _data()
    msgs = list(feature_stream_messages("s", X, y, "saola", block_bytes=120 * 8 * 4))
    store: dict = {}
    results, _ = _run(StreamProcessor("features", store), msgs)
    assert list(store) == [header_key("s")] and len(store[header_key("s")]) < 600
    header = unpackb(store[header_key("s")])
    assert header["status"] == "closed" and header["columns"] == [] and header["states"] == {}
    # it still skips redeliveries and refuses re-use
    again, dead = _run(StreamProcessor("features", store), msgs)
    assert not again and not dead
    _, dead = _run(StreamProcessor("features", store),
                   list(feature_stream_messages("s", X, y, "saola"))[:1])
    assert "already exists (closed" in dead[0]["reason"]


def test_a_closed_stream_s_retention_counts_from_the_worker_s_clock():
    """A replay of history carries record timestamps of a year ago: had the retention counted
    from them, the header would go at the next sweep and a redelivery be applied again."""
    import time

    X, y = _data()
    store: dict = {}
    processor = StreamProcessor("features", store)
    closing = time.time()
    for m in feature_stream_messages("s", X, y, "saola"):
        _apply(processor, processor.handle("s", encode(m), timestamp=closing - 365 * 86400))
    header = unpackb(store[header_key("s")])
    assert header["status"] == "closed" and header["closed_at"] >= closing


def _run_deferred(processor, messages, flush_every):
    """As the worker does: steps with ``defer=True``, a checkpoint every ``flush_every``
    messages (the batch), and after the last one."""
    results, dead = [], []
    for i, message in enumerate(messages):
        raw = message if isinstance(message, bytes) else encode(message)
        plan = processor.handle("s", raw, defer=True)
        _apply(processor, plan)
        results += [plan.result] if plan.result else []
        dead += [decode(plan.dead_letter)] if plan.dead_letter else []
        if (i + 1) % flush_every == 0 or i == len(messages) - 1:
            for key, value in processor.flush():
                if value is None:
                    processor.store.pop(key, None)
                else:
                    processor.store[key] = value
    return results, dead


@pytest.mark.parametrize("flush_every", [1, 3, 1000])
def test_deferred_checkpoints_give_the_same_results_and_store(flush_every):
    X, y = _data(seed=5)
    msgs = list(feature_stream_messages("s", X, y, "saola", {}, block_bytes=120 * 8 * 3))
    msgs = msgs[:-1]  # no close: the open stream's state must be checkpointed
    eager = StreamProcessor("features", {})
    straight, _ = _run(eager, msgs)
    deferred = StreamProcessor("features", {})
    results, dead = _run_deferred(deferred, msgs, flush_every)
    assert results == straight and not dead
    assert deferred.store == eager.store  # same records: a restart restores the same state
    assert deferred.flush() == []


def test_deferred_state_is_not_in_the_store_until_flushed():
    X, y = _data()
    msgs = list(feature_stream_messages("s", X, y, "saola", {}, block_bytes=120 * 8 * 10))
    processor = StreamProcessor("features", {})
    for m in msgs[:2]:  # open, one block
        _apply(processor, processor.handle("s", encode(m), defer=True))
    assert unpackb(processor.store[header_key("s")])["last_seq"] == 0
    _apply(processor, type("P", (), {"writes": processor.flush()}))
    assert unpackb(processor.store[header_key("s")])["last_seq"] == 1
    # a new owner of the store resumes where the checkpoint is
    results, dead = _run(StreamProcessor("features", processor.store), msgs[2:])
    assert not dead and decode(results[-1])["final"]


def test_deferred_refusal_before_the_algorithm_keeps_the_unflushed_steps():
    X, y = _data()
    ok = list(feature_stream_messages("s", X, y, "saola", {}, block_bytes=120 * 8 * 10))
    bad = dict(ok[2], X=X[:-1])  # wrong N: refused before the algorithm runs
    shifted = [dict(m, seq=m["seq"] + 1) for m in ok[2:]]
    results, dead = _run_deferred(StreamProcessor("features", {}), ok[:2] + [bad] + shifted,
                                  flush_every=1000)
    straight, _ = _run(StreamProcessor("features", {}), ok)
    assert len(dead) == 1 and "length" in dead[0]["reason"]
    assert decode(results[-1])["selection"] == decode(straight[-1])["selection"]
    assert decode(results[-1])["counters"]["rejected_messages"] == 1


def test_a_failure_inside_the_algorithm_of_an_unflushed_stream_asks_for_a_replay(monkeypatch):
    from streamfs.algorithms.saola import SAOLA
    from streamfs.worker.processor import StateLost

    X, y = _data()
    msgs = list(feature_stream_messages("s", X, y, "saola", {}, block_bytes=120 * 8 * 10))
    real = SAOLA.partial_fit
    calls = {"n": 0}

    def fails_on_second_block(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            self.n_features_seen_ += 1  # half-done: the object is no longer trustworthy
            raise ValueError("boom")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(SAOLA, "partial_fit", fails_on_second_block)
    processor = StreamProcessor("features", {})
    for m in msgs[:2]:
        _apply(processor, processor.handle("s", encode(m), defer=True))
    with pytest.raises(StateLost):
        processor.handle("s", encode(msgs[2]), defer=True)
    # the worker's replay: a fresh processor on the last checkpoint, one message at a time
    calls["n"] = 0
    replay = StreamProcessor("features", {})
    results, dead = _run(replay, msgs[:3])
    assert [d["reason"] for d in dead] == ["rejected by saola: boom"]
    assert unpackb(replay.store[header_key("s")])["last_seq"] == 2  # consumed; stream goes on


def test_a_bug_inside_the_algorithm_loses_only_its_message(monkeypatch):
    """An error that is no ValueError (a bug, a resource error) on one block: that block is
    dead-lettered with its cause and the stream goes on, as for invalid data. Its sequence
    number was left unconsumed, so every later message of the stream became a 'sequence gap'
    dead letter and the stream never reached its final result. (Deferred, the failure asks
    for a replay first, one message at a time as here: the test above.)"""
    from streamfs.algorithms.saola import SAOLA

    X, y = _data()
    msgs = list(feature_stream_messages("s", X, y, "saola", {}, block_bytes=120 * 8 * 10))
    assert len(msgs) == 6  # open, four blocks, close
    real = SAOLA.partial_fit
    calls = {"n": 0}

    def fails_on_second_block(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            raise IndexError("bug")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(SAOLA, "partial_fit", fails_on_second_block)
    processor = StreamProcessor("features", {})
    results, dead = _run(processor, msgs)
    assert [d["reason"] for d in dead] == ["internal error: IndexError: bug"]
    final = decode(results[-1])
    assert final["final"] and final["counters"]["rejected_messages"] == 1
    # the stream went on without the second block: as a stream that never had it
    monkeypatch.setattr(SAOLA, "partial_fit", real)
    without = [m for i, m in enumerate(msgs) if i != 2]
    without = without[:2] + [dict(m, seq=m["seq"] - 1) for m in without[2:]]
    straight, _ = _run(StreamProcessor("features", {}), without)
    assert final["selection"] == decode(straight[-1])["selection"]


def test_deferred_replace_of_an_unflushed_run_leaves_only_the_new_run():
    X, y = _data()
    first = list(feature_stream_messages("s", X, y, "saola", block_bytes=120 * 8 * 10))
    swapped = X[:, ::-1].copy()
    second = list(feature_stream_messages("s", swapped, y, "saola", replace=True,
                                          block_bytes=120 * 8 * 10))
    # run 1 stops half-way, its steps not checkpointed, when run 2 replaces it (one batch)
    processor = StreamProcessor("features", {})
    results, dead = _run_deferred(processor, first[:3] + second, flush_every=1000)
    assert not dead and decode(results[-1])["run"] == 2
    fresh = run_offline("saola", swapped, y)
    assert [i["feature"] for i in decode(results[-1])["selection"]] == \
        [i["feature"] for i in fresh["selection"]]
    assert list(processor.store) == [header_key("s")]  # nothing of run 1 is left


def test_a_kofsd_open_whose_distances_would_not_fit_is_dead_lettered():
    X, y = _data()
    opening = next(feature_stream_messages("s", X, y, "kofsd"))
    reasons = _reasons([dict(opening, params={"max_buffer_bytes": 10_000})])
    assert len(reasons) == 1 and "exceed max_buffer_bytes=10000; use at most N = " in reasons[0]


def test_an_open_above_the_worker_s_buffer_cap_is_dead_lettered():
    X, y = _data()
    opening = next(feature_stream_messages("s", X, y, "kofsd"))
    capped = StreamProcessor("features", {}, max_buffer_bytes=1 << 20)
    _, dead = _run(capped, [dict(opening, params={"max_buffer_bytes": (1 << 20) + 1})])
    assert [d["reason"] for d in dead] == [
        "max_buffer_bytes=1048577 exceeds this worker's cap of 1048576 bytes "
        "(STREAMFS_MAX_BUFFER_BYTES)"]
    _, dead = _run(capped, [dict(opening, params={"max_buffer_bytes": 1 << 20})])
    assert not dead


def test_a_block_declaring_more_columns_than_the_buffer_cap_allows_is_refused():
    """A sparse block of a few bytes can declare millions of empty columns: 200 million took a
    worker's step 12 GB and 30 s (killed for memory on every replay with less); the block is
    refused, its seq consumed, and the stream goes on."""
    import scipy.sparse as sp

    from streamfs.worker.processor import COLUMN_STEP_BYTES

    X, y = _data()
    msgs = list(feature_stream_messages("s", X, y, "saola", {}, block_bytes=120 * 8 * 10))
    cap = 1 << 20
    most = cap // COLUMN_STEP_BYTES
    wide = sp.csr_matrix((np.zeros(0), np.zeros(0, np.int32), np.zeros(121, np.int32)),
                         shape=(120, most + 1))
    renumbered = [dict(m, seq=m["seq"] + 1) for m in msgs[1:]]
    results, dead = _run(StreamProcessor("features", {}, max_buffer_bytes=cap),
                         [msgs[0], dict(msgs[1], X=wide), *renumbered])
    assert [d["reason"] for d in dead] == [
        f"feature block has {most + 1} columns: processing takes about {COLUMN_STEP_BYTES} bytes "
        f"a column, so a block may have at most {most} (max_buffer_bytes = {cap}, "
        f"STREAMFS_MAX_BUFFER_BYTES); send the columns in several blocks"]
    final = decode(results[-1])
    assert final["final"] and final["counters"]["n_features_seen"] == X.shape[1]
    # as many empty columns as the cap allows are taken
    _, dead = _run(StreamProcessor("features", {}, max_buffer_bytes=cap),
                   [msgs[0], dict(msgs[1], X=wide[:, :most])])
    assert not dead


def test_a_cap_below_the_default_bounds_a_stream_that_sets_none():
    # K-OFSD's 1 GiB default went past a worker's lower cap: the cap did not bound memory
    X, y = _data()  # N = 120: distances and sort keys need 16 * 120 * 120 = 230,400 bytes
    opening = next(feature_stream_messages("s", X, y, "kofsd"))
    roomy = StreamProcessor("features", {}, max_buffer_bytes=1 << 20)
    _, dead = _run(roomy, [opening])
    assert not dead
    assert unpackb(roomy.store[header_key("s")])["params"]["max_buffer_bytes"] == 1 << 20
    tight = StreamProcessor("features", {}, max_buffer_bytes=100_000)
    _, dead = _run(tight, [opening])
    assert len(dead) == 1 and dead[0]["reason"].endswith(
        "exceed max_buffer_bytes=100000; use at most N = 71 instances or a larger "
        "max_buffer_bytes (this worker's cap on max_buffer_bytes, STREAMFS_MAX_BUFFER_BYTES, "
        "is 100000 bytes)")
    default = StreamProcessor("features", {})
    _run(default, [opening])
    assert "max_buffer_bytes" not in unpackb(default.store[header_key("s")])["params"]


def test_the_worker_s_buffer_cap_comes_from_its_settings(monkeypatch):
    from streamfs.settings import Settings
    from streamfs.worker.restore import PartitionState

    monkeypatch.setenv("STREAMFS_MAX_BUFFER_BYTES", "4096")
    state = PartitionState("features", Settings.from_env())
    assert state.processor.max_buffer_bytes == 4096


def test_an_instance_open_whose_state_would_not_fit_is_dead_lettered():
    opening = next(instance_stream_messages("i", np.ones((4, 3)), np.arange(4) % 2, "ofs"))
    reasons = _reasons([dict(opening, n_features=10**10)], "instances")
    assert len(reasons) == 1 and "exceeds max_buffer_bytes=1073741824" in reasons[0]


def test_a_block_that_would_overflow_the_weights_is_dead_lettered():
    # refused before learning (an error after the learner changed its weights would have the
    # processor rebuild it from the store): the stream ends as if the block had not been sent
    rng = np.random.default_rng(2)
    X = rng.standard_normal((300, 4))
    y = np.where(X[:, 0] > 0, 1, -1)
    params = {"n_features_to_select": 2, "normalize": False}
    msgs = list(instance_stream_messages("s", X, y, "ofs", params, block_bytes=60 * 4 * 8))
    bad = dict(msgs[2], X=np.where(msgs[2]["y"][:, None] > 0, -1.7e308, 1.7e308)  # mistakes
               * np.ones((1, 4)))
    without = [dict(m, seq=m["seq"] - 1) if m["seq"] > 2 else m for m in msgs if m is not msgs[2]]
    shifted = msgs[:2] + [bad] + msgs[3:]
    results, dead = _run(StreamProcessor("instances", {}), shifted)
    expected, _ = _run(StreamProcessor("instances", {}), without)
    assert len(dead) == 1 and "rescale the features" in dead[0]["reason"]
    assert decode(results[-1])["selection"] == decode(expected[-1])["selection"]


def _blocks_in_place_data():
    import scipy.sparse as sp

    rng = np.random.default_rng(0)
    X = rng.standard_normal((400, 300))
    S = sp.random(400, 300, 0.2, format="csr", random_state=1)
    S.data += 0.5
    return [(X, (X[:, 0] + X[:, 1] > 0).astype(int)),
            (S, (np.asarray(S[:, :5].sum(axis=1)).ravel() > 0.2).astype(int))]


@pytest.mark.parametrize("algorithm", sorted(registry.ALGORITHMS))
def test_blocks_read_in_place_give_the_selections_of_copies(algorithm, monkeypatch):
    # the processor hands the selectors read-only views of a message's aligned arrays; a
    # selector that wrote into its input would fail here (or select differently)
    import streamfs.worker.processor as processor_module

    groups = ([list(range(i, i + 10)) for i in range(0, 300, 10)]
              if algorithm.startswith("group") else None)
    for X, y in _blocks_in_place_data():
        read_only: list[bool] = []

        def spy(raw, **options):
            message = decode(raw, **options)
            read_only.extend(not v.flags.writeable for v in message.values()
                             if isinstance(v, np.ndarray))
            return message

        monkeypatch.setattr(processor_module, "decode", spy)
        in_place = run_offline(algorithm, X, y, block_bytes=1 << 18, groups=groups)
        assert any(read_only) or not isinstance(X, np.ndarray)  # dense blocks came as views
        monkeypatch.setattr(processor_module, "decode", lambda raw, **options: decode(raw))
        copied = run_offline(algorithm, X, y, block_bytes=1 << 18, groups=groups)
        assert in_place["selection"] == copied["selection"]
        assert in_place.get("scores") == copied.get("scores")


def test_a_message_without_run_token_on_a_stream_opened_with_one_says_so():
    X, y = _data()
    msgs = list(feature_stream_messages("s", X, y, "saola", block_bytes=120 * 8 * 6))
    processor = StreamProcessor("features", {})
    _run(processor, msgs)
    late = {k: v for k, v in msgs[-1].items() if k != "run"}
    _, dead = _run(processor, [dict(late, seq=late["seq"] + 1)])
    assert "carries no run token" in dead[0]["reason"]
    assert "(the stream is closed)" in dead[0]["reason"]


# ---- records the worker writes fit its topics (an operator's audit, session 49: a dead
# letter or result over the limit failed its transaction at every replay, for ever)

def _fits(processor, plan, key=b"s"):
    budget = processor.value_budget(key)
    for value in [plan.result, plan.dead_letter] + [v for _, v in plan.writes]:
        assert value is None or len(value) <= budget, (len(value), budget)


def test_a_dead_letter_of_a_record_near_the_limit_fits_the_topic():
    processor = StreamProcessor("features", {}, max_message_bytes=64 * 1024)
    raw = b"\xc1" + bytes(64 * 1024 - 100)  # within the limit, undecodable
    plan = processor.handle("s", raw)
    letter = decode(plan.dead_letter)
    _fits(processor, plan)
    assert letter["original_truncated"] is True and letter["original"] == raw[:1024]
    assert letter["original_size"] == len(raw)  # how much was cut, said
    small = processor.handle("s", b"\xc1")  # one that fits keeps its original whole
    assert decode(small.dead_letter)["original"] == b"\xc1"
    assert decode(small.dead_letter)["original_truncated"] is False
    assert decode(small.dead_letter)["original_size"] == 1


def test_a_reason_quoting_megabytes_of_input_is_cut():
    X, y = _data()
    opening = next(feature_stream_messages("s", X, y, "saola"))
    processor = StreamProcessor("features", {}, max_message_bytes=2 * 1024 * 1024)
    raw = encode(dict(opening, params=[0] * 500_000))
    plan = processor.handle("s", raw)
    _fits(processor, plan)
    reason = decode(plan.dead_letter)["reason"]
    assert reason.startswith("'params' must be a map") and len(reason) < 2100
    assert "characters in all)" in reason


@pytest.mark.parametrize("field", ["run", "version"])
def test_a_continue_from_beyond_2_53_is_refused_not_a_crash(field):
    # run 2^64 - 1 made the next run 2^64, which msgpack cannot write: the dead letter itself
    # failed to encode and the worker exited, again on every restart
    X, y = _data()
    messages = list(feature_stream_messages("s", X, y, "saola"))
    value = {"run": 0, "version": 0, field: 2**64 - 1}
    results, dead = _run(StreamProcessor("features", {}),
                         [dict(messages[0], continue_from=value)] + messages[1:])
    assert f"'continue_from' {field!r} must be an integer from 0 to 2^53 - 1" in dead[0]["reason"]
    assert not results  # every later message: data before 'open'
    assert all("before 'open'" in d["reason"] for d in dead[1:])


def test_source_column_ids_beyond_int64_are_refused():
    # as uint64 they passed the check for negative ids, then wrapped to -1 as int64
    X, y = _data()
    ok = list(feature_stream_messages("s", X, y, "saola", {}, block_bytes=120 * 8 * 10))
    bad = dict(ok[1], X=X[:, :2], columns=np.array([2**64 - 1, 2**63], dtype=np.uint64),
               names=["a", "b"])
    reasons = _reasons([ok[0], bad])
    assert len(reasons) == 1 and "source column index beyond 2^63 - 1" in reasons[0]


def test_names_that_are_not_strings_are_named_in_the_reason():
    X, y = _data()
    ok = list(feature_stream_messages("s", X, y, "saola", {}, block_bytes=120 * 8 * 10))
    reasons = _reasons([ok[0], dict(ok[1], X=X[:, :2], names=["a", 7])])
    assert "got int 7 at position 1" in reasons[0]


def test_state_entries_larger_than_a_record_are_written_in_parts():
    # OFS's running statistics of d features are 24 d bytes: one record of a million
    # features' was 24 MB, over any topic's limit
    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(40, 6000)), rng.integers(0, 2, 40)
    params = {"n_features_to_select": 20, "normalize": "standardize"}
    messages = list(instance_stream_messages("s", X, y, "ofs", params, block_bytes=60_000))
    small = StreamProcessor("instances", {}, max_message_bytes=100_000)
    results, parts = [], 0
    for i, message in enumerate(messages):
        if i == len(messages) // 2:  # a restart: the state is read back from its parts
            small = StreamProcessor("instances", small.store, max_message_bytes=100_000)
        plan = small.handle("s", encode(message))
        _fits(small, plan)
        _apply(small, plan)
        parts += sum(1 for k, _ in plan.writes if k.count("\x1f") == 4)
        results.append(plan.result)
    assert parts > 0  # the statistics (144 KB) went in parts
    big, _ = _run(StreamProcessor("instances", {}), messages)
    assert decode(results[-1])["selection"] == decode(big[-1])["selection"]
    assert list(small.store) == [header_key("s")]  # closed: every part deleted


@pytest.mark.parametrize("limits", [{"max_message_bytes": 60_000},
                                    # the worker's limit raised above its topics'
                                    {"max_message_bytes": 16 << 20, "output_bytes": 60_000}])
def test_a_result_over_the_limit_is_refused_and_the_stream_goes_on(limits):
    rng = np.random.default_rng(4)
    X, y = rng.normal(size=(60, 3000)), rng.integers(0, 2, 60)
    messages = list(instance_stream_messages("s", X, y, "ofs", {"n_features_to_select": 2000},
                                             block_bytes=50_000))
    processor = StreamProcessor("instances", {}, **limits)
    dead = []
    for message in messages:
        plan = processor.handle("s", encode(message))
        _fits(processor, plan)
        _apply(processor, plan)
        if plan.dead_letter:
            dead.append(decode(plan.dead_letter)["reason"])
    assert dead and all("the result of this message would be" in r for r in dead)
    assert "2000 selected features" in dead[0]


def test_a_name_twice_in_a_block_or_an_open_is_refused():
    X, y = _data()
    ok = list(feature_stream_messages("s", X, y, "saola", {}, block_bytes=120 * 8 * 10))
    reasons = _reasons([ok[0], dict(ok[1], X=X[:, :3], names=["a", "b", "a"])])
    assert "'names' of a feature block names 'a' more than once" in reasons[0]
    opening = next(instance_stream_messages("i", np.ones((4, 3)), np.arange(4) % 2, "ofs"))
    reasons = _reasons([dict(opening, feature_names=["u", "v", "v"])], "instances")
    assert "'feature_names' names 'v' more than once" in reasons[0]


def test_the_worker_writes_no_record_larger_than_its_output_topics_take(monkeypatch):
    from streamfs.settings import Settings
    from streamfs.topics import load_catalogue
    from streamfs.worker.app import output_limit
    from streamfs.worker.restore import PartitionState

    specs = load_catalogue("t.")
    assert output_limit(specs) == int(specs["selected"].config["max.message.bytes"]) == 8388608
    monkeypatch.setenv("STREAMFS_MAX_MESSAGE_BYTES", str(16 << 20))
    state = PartitionState("features", Settings.from_env(), output_limit(specs))
    assert state.processor.value_budget(b"s") < 8388608 < state.processor.max_message_bytes


def test_boolean_labels_after_integer_ones_are_refused():
    # one message mixing them was refused; across messages True and False were taken as 1, 0
    rng = np.random.default_rng(5)
    X, y = rng.normal(size=(40, 3)), np.arange(40) % 2
    messages = list(instance_stream_messages("s", X, y, "ofs", {"n_features_to_select": 2},
                                             block_bytes=20 * 3 * 8))
    blocks = [i for i, m in enumerate(messages) if m["kind"] == "instances"]
    messages[blocks[-1]] = dict(messages[blocks[-1]],
                                y=messages[blocks[-1]]["y"].astype(bool))
    reasons = _reasons(messages, "instances")
    assert len(reasons) == 1 and "Mix of label input types (boolean and number)" in reasons[0]


@pytest.mark.parametrize("labels", ["third class", "continuous"])
def test_instance_labels_the_learner_would_refuse_cost_no_replay(labels):
    # refused from inside the learner, a block of a stream with a deferred checkpoint asked
    # for a replay of the whole batch (StateLost); its labels are now checked before
    rng = np.random.default_rng(6)
    X, y = rng.normal(size=(40, 3)), np.arange(40) % 2
    messages = list(instance_stream_messages("s", X, y, "ofs", {"n_features_to_select": 2},
                                             block_bytes=20 * 3 * 8))
    processor = StreamProcessor("instances", {})
    for m in messages[:2]:  # the open and a first block: the stream's state is in memory
        _apply(processor, processor.handle("s", encode(m), defer=True))
    n = len(messages[2]["y"])
    bad = np.full(n, 2) if labels == "third class" else np.linspace(0.1, 0.9, n)
    plan = processor.handle("s", encode(dict(messages[2], y=bad)), defer=True)
    reason = decode(plan.dead_letter)["reason"]
    assert reason.startswith("rejected by ofs: ofs ")
    assert ("3 classes" if labels == "third class" else "not continuous values") in reason


@pytest.mark.parametrize("seq,taken", [(3, "a block"), (0, "the 'open'")])
def test_a_close_at_an_applied_seq_is_refused_and_the_stream_stays_open(seq, taken):
    # it was skipped as a redelivery: no final, no dead letter, the stream open for ever
    X, y = _data()
    msgs = list(feature_stream_messages("s", X, y, "saola", {}, block_bytes=120 * 8 * 10))
    assert [m["kind"] for m in msgs] == ["open"] + ["features"] * 4 + ["close"]
    processor = StreamProcessor("features", {})
    _run(processor, msgs[:4])
    results, dead = _run(processor, [dict(msgs[-1], seq=seq)])
    assert not results and [d["reason"] for d in dead] == [
        f"'close' with seq {seq}, but seq {seq} was already taken ({taken}): a 'close' takes "
        f"the next seq, 4; the stream stays open"]
    # a correct close follows; then redeliveries are skipped as before
    results, dead = _run(processor, [dict(msgs[-1], seq=4), dict(msgs[-1], seq=4), msgs[2]])
    assert len(results) == 1 and decode(results[0])["final"] and not dead


@pytest.mark.parametrize("algorithm,labels,problem", [
    *((name, labels, f"Mix of label input types ({kind} and number)")
      for name, spec in registry.ALGORITHMS.items() if spec.kind == "instances"
      for labels, kind in (([True, False], "boolean"), (["0", "1"], "string"))),
    ("gdm", [0, 2], "is a binary classifier: the labels have 3 classes (0, 1, 2)"),
])
def test_labels_that_do_not_go_with_earlier_blocks_cost_no_replay(algorithm, labels, problem):
    # in one list with the classes of earlier blocks (0 and 1), numpy made True 1 and 1 "1",
    # and GDM's classes went unseen: the learner refused the block, and a deferred stream
    # asked for a replay of the whole batch (StateLost)
    rng = np.random.default_rng(6)
    X, y = rng.normal(size=(40, 3)), np.arange(40) % 2
    messages = list(instance_stream_messages("s", X, y, algorithm, {}, block_bytes=20 * 3 * 8))
    processor = StreamProcessor("instances", {})
    for m in messages[:2]:
        _apply(processor, processor.handle("s", encode(m), defer=True))
    n = len(messages[2]["y"])
    plan = processor.handle("s", encode(dict(messages[2], y=labels * (n // 2) + labels[:n % 2])),
                            defer=True)
    reason = decode(plan.dead_letter)["reason"]
    assert reason.startswith(f"rejected by {algorithm}: ") and problem in reason
    if "Mix" in problem:
        assert reason.endswith("; the stream's labels so far are 0, 1: send labels of their type")


@pytest.mark.parametrize("field,where", [("X", "a 'features' block"), ("y", "the 'open'"),
                                         ("names", "a 'features' block"),
                                         ("columns", "a 'features' block")])
def test_a_close_carrying_data_is_refused_and_a_correct_close_can_follow(field, where):
    # the close was applied and its data lost without a word
    X, y = _data()
    msgs = list(feature_stream_messages("s", X, y, "saola", {}, block_bytes=120 * 8 * 10))
    value = {"X": msgs[1]["X"], "y": y, "names": ["a", "b"], "columns": [0, 1]}[field]
    bad = dict(msgs[-1], **{field: value})
    processor = StreamProcessor("features", {})
    _run(processor, msgs[:-1])
    results, dead = _run(processor, [bad, bad])  # the second a redelivery: skipped
    assert not results and [d["reason"] for d in dead] == [
        f"'close' carries {field!r} (it belongs in {where}), which it does not read: refused, "
        f"its seq 5 consumed and the stream still open; send the data in a block with seq 6 "
        f"and a 'close' after it, or a 'close' with seq 6 and nothing else"]
    results, dead = _run(processor, [msgs[-1], dict(msgs[-1], seq=6)])
    assert [d["reason"] for d in dead] == [
        "'close' with seq 5, but seq 5 was already taken (a refused 'close'): a 'close' takes "
        "the next seq, 6; the stream stays open"]
    assert len(results) == 1 and decode(results[0])["final"]
    assert decode(results[0])["counters"]["rejected_messages"] == 1


def test_an_instance_close_with_labels_and_a_feature_open_with_feature_names_are_refused():
    rng = np.random.default_rng(6)
    X, y = rng.normal(size=(40, 3)), np.arange(40) % 2
    msgs = list(instance_stream_messages("s", X, y, "ofs", {}, block_bytes=20 * 3 * 8))
    reasons = _reasons(msgs[:-1] + [dict(msgs[-1], y=y[:5])], "instances")
    assert len(reasons) == 1 and reasons[0].startswith(
        "'close' carries 'y' (it belongs in an 'instances' block), which it does not read")
    opening = next(feature_stream_messages("s", *_data(), "saola"))
    assert _reasons([dict(opening, feature_names=["a"] * 40)]) == [
        "'open' carries 'feature_names' (it belongs in an instance stream's 'open'; a feature "
        "stream's blocks name their columns in 'names'), which it does not read: send the "
        "'open' without it"]


def _raw_block(block: dict, **fields) -> bytes:
    """``block`` encoded with ``fields`` in raw msgpack (ext values as a producer wrote them)."""
    import msgpack

    return msgpack.packb({**msgpack.unpackb(encode(block), raw=False, ext_hook=msgpack.ExtType),
                          **fields}, use_bin_type=True)


def _ext1(dtype: str, arr: np.ndarray) -> object:
    import msgpack

    return msgpack.ExtType(1, msgpack.packb([dtype, list(arr.shape), arr.tobytes()],
                                            use_bin_type=True))


@pytest.mark.parametrize("large", [False, True])  # read in place, or by msgpack whole
def test_an_unknown_ext_type_in_an_unknown_field_is_ignored(large):
    # the message was undecodable ("unknown msgpack ext type 7") and the stream lost
    import msgpack

    X, y = _data(n=120 if not large else 400, p=60)
    msgs = list(feature_stream_messages("s", X, y, "saola", {}, block_bytes=400 * 8 * 70))
    raw = _raw_block(msgs[1], extra=msgpack.ExtType(7, b"xyz"))
    assert (len(raw) > 65536) == large
    expected, _ = _run(StreamProcessor("features", {}), msgs)
    results, dead = _run(StreamProcessor("features", {}), [msgs[0], raw] + msgs[2:])
    assert not dead and results == expected


@pytest.mark.parametrize("dtype,accepted", [(">f8", False), ("float64", False), ("<i1", True),
                                            ("<u1", True), ("<b1", True)])
def test_an_array_of_a_wrong_dtype_string_refuses_its_block_only(dtype, accepted):
    # the stream was lost; "<i1" (numpy's "|i1") and its kin are taken as the type they mean
    X, y = _data()
    msgs = list(feature_stream_messages("s", X, y, "saola", {}, block_bytes=120 * 8 * 10))
    values = {"f": X[:, :3], "i": np.ones((120, 3), np.int8), "u": np.ones((120, 3), np.uint8),
              "b": (X[:, :3] > 0)}[dtype.lstrip("<>")[0]]
    raw = _raw_block(msgs[1], X=_ext1(dtype, values.astype(np.dtype(dtype))))
    results, dead = _run(StreamProcessor("features", {}), [msgs[0], raw, dict(msgs[-1], seq=2)])
    assert decode(results[-1])["final"]
    if accepted:
        assert not dead and decode(results[-1])["counters"]["n_features_seen"] == 3
        return
    assert [d["reason"] for d in dead] == [
        f"'X' could not be decoded (unsupported array dtype {dtype!r}: one of |b1, |i1, <i2, "
        f"<i4, <i8, |u1, <u2, <u4, <u8, <f4, <f8, <b1, <i1, <u1 (numpy's little-endian type "
        f"strings)): the block is refused, its seq 1 consumed, and the stream goes on"]


def test_a_malformed_array_payload_refuses_its_block_only():
    import msgpack

    X, y = _data()
    msgs = list(feature_stream_messages("s", X, y, "saola", {}, block_bytes=120 * 8 * 10))
    raw = _raw_block(msgs[1], X=msgpack.ExtType(1, b"\xc1"))
    results, dead = _run(StreamProcessor("features", {}), [msgs[0], raw, dict(msgs[-1], seq=2)])
    assert decode(results[-1])["final"] and len(dead) == 1
    assert dead[0]["reason"].startswith("'X' could not be decoded (malformed array payload: ")


def test_fields_under_bin_keys_are_named_and_refuse_their_message_only():
    # the reasons said the field was missing ("must carry the class vector 'y'"); a block's
    # X under a bin key was refused as a block without data, not why
    import msgpack

    X, y = _data()
    msgs = list(feature_stream_messages("s", X, y, "saola", {}, block_bytes=120 * 8 * 10))
    fields = msgpack.unpackb(encode(msgs[1]), raw=False, ext_hook=msgpack.ExtType)
    block = msgpack.packb({key.encode() if key in ("X", "names") else key: value
                           for key, value in fields.items()}, use_bin_type=True)
    opening = msgpack.unpackb(encode(msgs[0]), raw=False, ext_hook=msgpack.ExtType)
    bad_open = msgpack.packb({key.encode() if key == "y" else key: value
                              for key, value in opening.items()}, use_bin_type=True)
    results, dead = _run(StreamProcessor("features", {}),
                         [bad_open, msgs[0], block, dict(msgs[-1], seq=2)])
    assert decode(results[-1])["final"]
    assert [d["reason"].split(" came as bytes")[0] for d in dead] == [
        "map keys must be msgpack strings (str), not bin: 'y'",
        "map keys must be msgpack strings (str), not bin: 'X'" + (", 'names'" if "names" in fields
                                                                  else "")]
    assert dead[1]["reason"].endswith("its seq 1 consumed, and the stream goes on")
    # a seq under a bin key is unknown: the block is refused, not consumed (it said "got None")
    no_seq = msgpack.packb({key.encode() if key == "seq" else key: value
                            for key, value in fields.items()}, use_bin_type=True)
    results, dead = _run(StreamProcessor("features", {}), [msgs[0], no_seq] + msgs[1:])
    assert decode(results[-1])["final"]
    assert [d["reason"].split(" came as bytes")[0] for d in dead] == [
        "map keys must be msgpack strings (str), not bin: 'seq'"]
    # and a stream id under a bin key: said so, not "no 'stream' id"
    no_id = msgpack.packb({key.encode() if key == "stream" else key: value
                           for key, value in fields.items()}, use_bin_type=True)
    results, dead = _run(StreamProcessor("features", {}), [msgs[0], no_id] + msgs[1:])
    assert decode(results[-1])["final"]
    assert [d["reason"].split(" came as bytes")[0] for d in dead] == [
        "map keys must be msgpack strings (str), not bin: 'stream'"]


def test_a_field_under_a_number_key_refuses_its_message_by_name():
    """A key of another type than text (a producer that keyed fields by position) was
    ignored without a word: its block stepped without what it meant to carry."""
    import msgpack

    X, y = _data()
    msgs = list(feature_stream_messages("s", X, y, "saola", {}, block_bytes=120 * 8 * 10))
    fields = msgpack.unpackb(encode(msgs[1]), raw=False, ext_hook=msgpack.ExtType)
    block = msgpack.packb({**fields, 3: "names?"}, use_bin_type=True)
    results, dead = _run(StreamProcessor("features", {}), [msgs[0], block, dict(msgs[-1], seq=2)])
    assert decode(results[-1])["final"] and len(dead) == 1
    assert dead[0]["reason"].startswith(
        "map keys must be msgpack strings (str), the field names: 3 (int) is not"), dead


@pytest.mark.parametrize("other_run", [7, b"t2"])
def test_a_later_wire_version_naming_a_run_of_another_type_does_not_lose_the_stream(other_run):
    # a run that is no string is no run of this stream either (the re-audit lost a stream so)
    X, y = _data()
    msgs = list(feature_stream_messages("s", X, y, "saola", {}, block_bytes=120 * 8 * 10))
    processor = StreamProcessor("features", {})
    _run(processor, msgs[:2])
    results, dead = _run(processor, [dict(msgs[2], v=2, run=other_run)] + msgs[2:])
    assert [(d["run"], d["run_refused"]) for d in dead] == [(None, True)]
    assert "refused as another run's message" in dead[0]["reason"]
    assert decode(results[-1])["final"]


def test_a_later_wire_version_of_another_run_does_not_lose_the_stream():
    # the stream was lost to it: "run 1, run_refused false" on a message not of its run
    X, y = _data()
    msgs = list(feature_stream_messages("s", X, y, "saola", {}, block_bytes=120 * 8 * 10))
    other = next(feature_stream_messages("s", X, y, "saola"))["run"]
    processor = StreamProcessor("features", {})
    _run(processor, msgs[:2])
    results, dead = _run(processor, [dict(msgs[2], v=2, run=other)] + msgs[2:])
    assert [(d["run"], d["run_refused"]) for d in dead] == [(None, True)]
    assert dead[0]["reason"] == (
        f"unsupported wire version 2 (this worker reads 1), and it belongs to run {other!r}, "
        f"but stream 's' is at run {msgs[0]['run']!r}: refused as another run's message")
    assert decode(results[-1])["final"]


@pytest.mark.parametrize("tokens", [True, False])
def test_a_replace_that_is_not_a_boolean_is_named(tokens):
    # refused as a re-used id, saying to send replace=true: which it seemed to have done
    X, y = _data()
    msgs = list(feature_stream_messages("s", X, y, "saola", {}, block_bytes=120 * 8 * 10))
    again = next(feature_stream_messages("s", X, y, "saola"))
    if not tokens:
        msgs, again = _tokenless(msgs), _tokenless([again])[0]
    reasons = _reasons(msgs + [dict(again, replace=1, algorithm="kofsd")])
    assert reasons == ["'replace' must be a boolean (true to start a new run of the stream id), "
                       "got int 1"]


@pytest.mark.parametrize("replace", [1, "yes"])
def test_a_replace_that_is_not_a_boolean_is_refused_on_a_new_stream_id_too(replace):
    """It was checked only where the id existed: `replace: 1` on a new id opened the stream,
    and the same producer's next --replace would have been taken as no replace."""
    X, y = _data()
    msgs = list(feature_stream_messages("s", X, y, "saola", {}, block_bytes=120 * 8 * 10))
    reasons = _reasons([dict(msgs[0], replace=replace)])
    assert reasons == [f"'replace' must be a boolean (true to start a new run of the stream "
                       f"id), got {type(replace).__name__} {replace!r}"]
    results, dead = _run(StreamProcessor("features", {}), [dict(msgs[0], replace=False)]
                         + msgs[1:])
    assert not dead and decode(results[-1])["final"]  # a boolean false opens it


def test_run_tokens_are_bounded_and_so_are_the_replaced_runs_a_header_keeps():
    """Three runs with 3 MB tokens made a stream's header larger than a changelog record: every
    transaction failed (MSG_SIZE_TOO_LARGE) and every partition stalled. Tokens are at most
    RUN_TOKEN_CHARS long, and a header keeps the tokens of the last PAST_RUNS_KEPT runs."""
    from streamfs.codec import RUN_TOKEN_CHARS
    from streamfs.worker.processor import PAST_RUNS_KEPT

    X, y = _data()
    opening = next(feature_stream_messages("s", X, y, "saola"))
    reasons = _reasons([dict(opening, run="r" * (RUN_TOKEN_CHARS + 1)), dict(opening, run="")])
    assert reasons == [
        f"'run' must be a non-empty string of at most {RUN_TOKEN_CHARS} characters (a token the "
        f"producer draws for each run, e.g. a UUID), got a string of {RUN_TOKEN_CHARS + 1} "
        f"characters",
        f"'run' must be a non-empty string of at most {RUN_TOKEN_CHARS} characters (a token the "
        f"producer draws for each run, e.g. a UUID), got ''"]
    processor = StreamProcessor("features", {})
    tokens = [f"{i:0{RUN_TOKEN_CHARS}d}" for i in range(PAST_RUNS_KEPT + 5)]
    _, dead = _run(processor, [dict(opening, run=t, replace=True) for t in tokens])
    assert not dead
    header = unpackb(processor.store[header_key("s")])
    assert header["run"] == len(tokens) and header["past_runs"] == tokens[-PAST_RUNS_KEPT - 1:-1]
    # a redelivery of a kept replaced run is skipped; a message it never applied (each run
    # ended at its 'open') is not one; an older run's message is refused
    block = next(m for m in feature_stream_messages("s", X, y, "saola") if m["seq"] == 1)
    assert header["past_seqs"] == [0] * PAST_RUNS_KEPT
    results, dead = _run(processor, [dict(opening, run=tokens[-2], replace=True),
                                     dict(block, run=tokens[-2]), dict(block, run=tokens[0])])
    assert not results and [d["reason"] for d in dead] == [
        f"'features' (seq 1) belongs to run {tokens[-2]!r} of stream 's', which a replace "
        f"ended after its seq 0 (the stream is at run {len(tokens)}): publish it again "
        "(streamfs produce --replace) as a run of its own",
        f"'features' (seq 1) belongs to run {tokens[0]!r}, but stream 's' is at run "
        f"{tokens[-1]!r} (was its 'open' rejected?)"]


@pytest.mark.parametrize("field", ["columns", "names"])
def test_blocks_with_columns_or_names_are_bounded_by_what_the_header_lists(field):
    """The header lists every block that carried columns or names, and is one record: a
    stream sent a column a block outgrew it and every transaction failed. Past the bound a
    block is refused, before the algorithm, and the stream goes on."""
    from streamfs.worker.processor import BLOCK_LIST_BYTES, RECORD_OVERHEAD

    X, y = _data(p=60)
    msgs = list(feature_stream_messages("s", X, y, "saola", {}, block_bytes=120 * 8))
    assert len(msgs) == 62  # one column a block
    most = 50
    # results and dead letters of 1,600 bytes: 50 such blocks a stream
    limit = most * BLOCK_LIST_BYTES + RECORD_OVERHEAD + len(b"s")
    tagged = [dict(m, **{field: [m["seq"] - 1] if field == "columns" else [f"c{m['seq']}"]})
              if m["kind"] == "features" else m for m in msgs]
    results, dead = _run(StreamProcessor("features", {}, output_bytes=limit), tagged)
    assert len(dead) == 60 - most and dead[0]["reason"] == (
        f"stream 's' has had {most} blocks with {field!r}, as many as its state lists in one "
        f"record: send more columns per block (a feature stream sends them in blocks of up to "
        f"the message limit, not one by one)")
    final = decode(results[-1])
    assert final["final"] and final["counters"]["n_features_seen"] == most


@pytest.mark.parametrize("kept", ["header", "all but the class vector"])
def test_a_stream_whose_state_records_are_missing_is_lost_with_the_reason(kept):
    # a changelog made again under the worker kept the header but not the state it names:
    # the next block was an "internal error: KeyError", the rest "sequence gap" dead letters
    X, y = _data()
    msgs = list(feature_stream_messages("s", X, y, "saola", {}, block_bytes=120 * 8 * 6))
    store: dict = {}
    _run(StreamProcessor("features", store), msgs[:3])
    lost = [k for k in store if k != header_key("s")]
    if kept != "header":
        lost = [k for k in lost if "__y__" in k]  # written once, at the open
        assert len(lost) == 1
    for key in lost:
        del store[key]
    results, dead = _run(StreamProcessor("features", store), msgs[3:])
    assert not results and len(dead) == len(msgs) - 3
    reasons = {d["reason"] for d in dead}
    assert len(reasons) == 1, reasons
    (reason,) = reasons
    assert reason.startswith("stream 's' cannot go on: its state in the changelog is "
                             "incomplete (the record ") and reason.endswith("replace=true)")
    # a new run of the stream id starts afresh
    again = list(feature_stream_messages("s", X, y, "saola", {}, run="r2", replace=True,
                                         block_bytes=120 * 8 * 6))
    results, dead = _run(StreamProcessor("features", store), again)
    assert not dead and decode(results[-1])["final"]


def test_an_id_the_other_kind_of_stream_holds_is_refused():
    """A feature stream and an instance stream under one id were both accepted (each input
    topic's streams are a processor's own) and published their results under one key: a
    `watch --until-final` of the feature stream ended on the instance stream's final."""
    X, y = _data()
    features = StreamProcessor("features", {})
    instances = StreamProcessor("instances", {})
    features.other_kind_has = lambda stream: header_key(stream) in instances.store
    instances.other_kind_has = lambda stream: header_key(stream) in features.store
    results, dead = _run(features, list(feature_stream_messages("s", X, y, "saola")))
    assert not dead and decode(results[-1])["final"]
    for replace in (False, True):  # a replace starts a run of its own kind's stream only
        results, dead = _run(instances, list(instance_stream_messages(
            "s", X, y, "ofs", {"n_features_to_select": 5}, replace=replace)))
        assert not results and dead[0]["run"] is None and dead[0]["reason"] == (
            "stream id 's' is a feature stream's on this deployment (open, or closed and "
            "kept): the two would publish their results under one key of the results topic, "
            "mixed; use another stream id")
    assert header_key("s") not in instances.store
    # another id is taken
    results, dead = _run(instances, list(instance_stream_messages(
        "t", X, y, "ofs", {"n_features_to_select": 5})))
    assert not dead and decode(results[-1])["final"]


def _age_input(processor: StreamProcessor, stream: str, seconds: float | None) -> None:
    """Make ``stream``'s last input ``seconds`` old (None: a header from before ``input_at``)."""
    header = unpackb(processor.store[header_key(stream)])
    header.pop("input_at")
    if seconds is not None:
        header["input_at"] = time.time() - seconds
    processor.store[header_key(stream)] = packb(header)


def test_an_open_stream_without_input_past_the_idle_timeout_is_dropped_with_a_dead_letter():
    """A stream whose producer died mid-stream loses its columns and algorithm state at the
    idle timeout (its header stays, closed, saying why), its run gets a dead letter, and a
    stream with recent input or a closed one is left alone; the gone producer's late messages
    are refused with the reason, and a replace starts run 2, whose versions go on."""
    X, y = _data()
    gone = list(feature_stream_messages("gone", X, y, "saola", block_bytes=120 * 8 * 6))
    live = list(feature_stream_messages("live", X, y, "saola", block_bytes=120 * 8 * 6))
    done = list(feature_stream_messages("done", X, y, "saola", block_bytes=120 * 8 * 6))
    processor = StreamProcessor("features", {})
    first, _ = _run(processor, gone[:-2] + live[:-1] + done)
    _age_input(processor, "gone", 3600)
    _age_input(processor, "done", 3600)  # closed: the closed retention's business
    before = dict(processor.store)
    writes, letters = processor.expire_idle(1800.0, now=time.time(), since=time.time())
    assert processor.store == before  # nothing changed before the caller commits
    _apply(processor, Plan(writes=writes))  # committed
    processor.forget("gone")
    assert [k for k in processor.store if k.startswith("gone")] == [header_key("gone")]
    assert {k for k in processor.store if not k.startswith("gone")} == {
        k for k in before if not k.startswith("gone")}
    header = unpackb(processor.store[header_key("gone")])
    assert header["status"] == "closed" and header["columns"] == [] and header["states"] == {}
    assert 3600 <= header["expired_after"] < 3700
    (letter,) = [decode(plan.dead_letter) for plan in letters]
    assert (letter["stream"], letter["run"], letter["run_refused"]) == ("gone", 1, False)
    assert "no input for 3600 s" in letter["reason"]
    assert "STREAMFS_OPEN_IDLE_TIMEOUT" in letter["reason"] and "--replace" in letter["reason"]
    late, dead = _run(processor, gone[-2:] + live[-1:])
    assert [decode(r)["stream"] for r in late] == ["live"] and decode(late[-1])["final"]
    assert [d["stream"] for d in dead] == ["gone", "gone"]
    assert all("was dropped by the worker at" in d["reason"] and "is refused" in d["reason"] for d in dead)
    again = list(feature_stream_messages("gone", X, y, "saola", replace=True))
    second, dead = _run(processor, again)
    assert not dead and {decode(r)["run"] for r in second} == {2}
    versions = [decode(r)["version"] for r in first + second if decode(r)["stream"] == "gone"]
    assert versions == list(range(1, len(versions) + 1))
    assert decode(second[-1])["selection"] == decode(late[-1])["selection"]  # same data


def test_the_idle_timeout_counts_headers_without_input_at_from_since():
    """Headers written before they kept their last input's time count from ``since`` (the
    worker's start), not from the epoch: an upgrade drops no live stream at once."""
    X, y = _data()
    processor = StreamProcessor("features", {})
    _run(processor, list(feature_stream_messages("old", X, y, "saola"))[:-1])
    _age_input(processor, "old", None)
    now = time.time()
    assert processor.expire_idle(60.0, now=now, since=now - 30)[0] == []
    writes, letters = processor.expire_idle(60.0, now=now, since=now - 90)
    assert (header_key("old"), ) == tuple(k for k, v in writes if v is not None)
    assert [p.stream for p in letters] == ["old"]


def test_an_idle_instance_stream_is_dropped_as_a_feature_stream_is():
    """OFS on an instance stream: its state records go, its header stays closed, and its
    late close is refused with the reason."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 20))
    y = np.where(X[:, 0] + X[:, 3] > 0, 1, -1)
    msgs = list(instance_stream_messages("i", X, y, "ofs", {"n_features_to_select": 4},
                                         block_bytes=20 * 8 * 37))
    processor = StreamProcessor("instances", {})
    _run(processor, msgs[:-1])
    assert len(processor.store) > 1
    _age_input(processor, "i", 100)
    writes, letters = processor.expire_idle(60.0, now=time.time(), since=time.time())
    _apply(processor, Plan(writes=writes))
    processor.forget("i")
    assert list(processor.store) == [header_key("i")] and len(letters) == 1
    _, dead = _run(processor, msgs[-1:])
    assert "was dropped by the worker at" in dead[0]["reason"] and "'close'" in dead[0]["reason"]
