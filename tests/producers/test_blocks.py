"""Pure message cutting: shuffle with source column ids, groups, re-chunking, pacing."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from streamfs.producers import feature_stream_messages, instance_stream_messages
from streamfs.producers.blocks import (column_value_bytes, instance_messages_from_chunks,
                                       largest_column_bytes)
from streamfs.producers.errors import InputDataError, InputLabelError
from streamfs.producers.objects import from_objects
from streamfs.producers.rate import TokenBucket, throttle

from .data import sparse_dataset


def _reassemble_features(messages):
    cols, order, gids = [], [], []
    for m in messages[1:-1]:
        cols.append(m["X"])
        order.extend(m.get("columns", range(m["start"], m["start"] + m["X"].shape[1])))
        gids.extend(m.get("groups", []))
    X = sp.hstack(cols, format="csc") if sp.issparse(cols[0]) else np.hstack(cols)
    return X, np.asarray(order), gids


@pytest.mark.parametrize("sparse", [False, True])
def test_shuffled_feature_stream_carries_source_columns(sparse):
    X, y = sparse_dataset(seed=4, n=60, d=30)
    X = X.tocsc() if sparse else X.toarray()
    msgs = list(feature_stream_messages("s", X, y, "saola", shuffle_seed=7, block_bytes=300))
    assert len(msgs) > 4 and all("columns" in m for m in msgs[1:-1])
    sent, order, _ = _reassemble_features(msgs)
    assert sorted(order.tolist()) == list(range(30)) and order.tolist() != list(range(30))
    restored = sent[:, np.argsort(order)]
    assert (sp.csc_matrix(restored) != sp.csc_matrix(X)).nnz == 0
    again = list(feature_stream_messages("s", X, y, "saola", shuffle_seed=7, block_bytes=300))
    assert [m.get("columns") for m in again] == [m.get("columns") for m in msgs]  # seeded


def test_unshuffled_stream_has_no_columns_field():
    msgs = list(feature_stream_messages("s", np.ones((4, 4)), [0, 1, 0, 1], "saola"))
    assert all("columns" not in m for m in msgs)


def test_shuffled_groups_stay_whole_and_keep_their_ids():
    X = np.arange(40.0).reshape(4, 10)
    groups = [[0, 1, 2], [3, 4], [5, 6, 7, 8, 9]]
    msgs = list(feature_stream_messages("s", X, [0, 1, 0, 1], "group-saola", groups=groups,
                                        shuffle_seed=3, block_bytes=4 * 8 * 4))
    sent, order, gids = _reassemble_features(msgs)
    assert np.array_equal(sent, X[:, order])
    for m in msgs[1:-1]:  # a group never spans messages, ids are the source group positions
        for j, g in zip(m["columns"], m["groups"]):
            assert j in groups[g]
    runs = [g for k, g in enumerate(gids) if k == 0 or gids[k - 1] != g]
    assert sorted(runs) == [0, 1, 2]


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("how", [{}, {"shuffle_seed": 2}, {"groups": [[0, 3], [1, 2, 4, 5]]}])
def test_largest_column_bytes_is_the_largest_column_the_blocks_count(sparse, how):
    """What `produce --block-bytes` is held to: the largest column as sent (values, name,
    source index, group id); without groups, the smallest budget every block keeps to."""
    X, y = sparse_dataset(seed=6, n=50, d=6)
    X = X.tocsc() if sparse else X.toarray()
    names = ["a", "bb", "a much longer name", "c", "dd", "e"]
    algorithm = "group-saola" if "groups" in how else "saola"
    smallest = largest_column_bytes(X, feature_names=names, **how)

    def blocks(budget: int) -> list[list[int]]:
        """The bytes of each column of each block, as the blocks count them."""
        msgs = list(feature_stream_messages("s", X, y, algorithm, block_bytes=budget,
                                            feature_names=names, **how))
        return [[int(column_value_bytes(m["X"])[j]) + len(name.encode()) + 5
                 + 9 * (("columns" in m) + ("groups" in m)) for j, name in enumerate(m["names"])]
                for m in msgs[1:-1]]

    assert max(max(block) for block in blocks(1)) == smallest
    if "groups" not in how:  # a group travels whole, over any budget below it
        assert all(sum(block) <= smallest for block in blocks(smallest))
        assert any(sum(block) > smallest - 1 for block in blocks(smallest - 1))


def test_rechunked_instances_are_cut_as_if_in_one_piece():
    X, y = sparse_dataset(seed=5, n=400, d=30)
    whole = list(instance_stream_messages("s", X, y, "ofs", block_bytes=2000))
    pieces = [(X[a:a + 37], y[a:a + 37]) for a in range(0, 400, 37)]
    chunked = list(instance_messages_from_chunks("s", pieces, 30, "ofs", block_bytes=2000))
    assert [m["seq"] for m in chunked] == list(range(len(chunked)))
    assert [m["X"].shape for m in chunked[1:-1]] == [m["X"].shape for m in whole[1:-1]]
    Xr = sp.vstack([m["X"] for m in chunked[1:-1]])
    assert (Xr != X).nnz == 0
    assert np.concatenate([m["y"] for m in chunked[1:-1]]).tolist() == y.tolist()


def test_max_rows_caps_instance_blocks():
    msgs = list(instance_stream_messages("s", np.ones((10, 2)), np.zeros(10), "ofs", max_rows=3))
    assert [m["X"].shape[0] for m in msgs[1:-1]] == [3, 3, 3, 1]


@pytest.mark.parametrize("arguments, message", [
    ({"block_bytes": 0}, "block_bytes must be more than 0, got 0"),  # one column a message
    ({"block_bytes": "x"}, "block_bytes must be a whole number of bytes, got 'x'"),
    ({"max_rows": 0}, "max_rows must be None or an integer >= 1, got 0"),  # was no limit
    ({"max_rows": -1}, "max_rows must be None or an integer >= 1, got -1"),
    ({"max_columns": 0}, "max_columns must be None or an integer >= 1, got 0")])
def test_block_sizes_that_mean_nothing_are_refused_naming_them(arguments, message):
    from streamfs.producers import column_blocks, row_blocks

    X = np.zeros((5, 3))
    blocks = column_blocks if "max_columns" in arguments or "block_bytes" in arguments \
        else row_blocks
    with pytest.raises(ValueError, match=re.escape(message)):
        list(blocks(X, **arguments))
    if "max_columns" not in arguments:
        with pytest.raises(ValueError, match=re.escape(message)):
            list(instance_stream_messages("s", X, np.arange(5) % 2, "ofs", **arguments))


def test_objects_dataframe_series_and_sparse():
    frame = pd.DataFrame({"a": [1.5, 2.0, 3.0], "b": [1, 2, 3]})
    X, y, names = from_objects(frame, pd.Series(["u", "v", "u"], dtype="category"))
    assert X.tolist() == [[1.5, 1.0], [2.0, 2.0], [3.0, 3.0]] and names == ["a", "b"]
    assert y.dtype.kind == "U" and y.tolist() == ["u", "v", "u"]
    Xs, ys, _ = from_objects(sp.coo_matrix(np.eye(3)), [1, 2, 3])
    assert Xs.format == "csr" and ys.tolist() == [1, 2, 3]
    with pytest.raises(ValueError, match="non-numeric feature column"):
        from_objects(frame.assign(c=["x", "y", "z"]), label="b")
    with pytest.raises(ValueError, match="X has 3 rows but there are 2 labels"):
        from_objects(np.ones((3, 2)), [1, 2])


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_token_bucket_paces_at_the_rate():
    clock = FakeClock()
    bucket = TokenBucket(50, clock=clock, sleep=clock.sleep)
    start = clock.now
    for _ in range(20):
        bucket.acquire(25)  # 500 items at 50/s: 10 s, less the initial burst of 50
    assert clock.now - start == pytest.approx(9.0)
    assert all(s == pytest.approx(0.5) for s in clock.slept)


def test_token_bucket_counts_time_spent_elsewhere():
    clock = FakeClock()
    bucket = TokenBucket(10, clock=clock, sleep=clock.sleep)
    bucket.acquire(10)
    clock.now += 3.0  # slow reader: more than enough time passed, no sleep, no burst beyond 10
    bucket.acquire(10)
    assert clock.slept == []
    bucket.acquire(10)
    assert clock.slept == [pytest.approx(1.0)]


def test_throttle_counts_rows_or_columns():
    clock = FakeClock()
    msgs = list(instance_stream_messages("s", np.ones((40, 2)), np.zeros(40), "ofs", max_rows=10))
    out = list(throttle(msgs, TokenBucket(20, clock=clock, sleep=clock.sleep)))
    assert out == msgs and sum(clock.slept) == pytest.approx(1.0)  # 40 rows, 20 in the burst
    with pytest.raises(ValueError):
        TokenBucket(0)


@pytest.mark.parametrize("X_change, algorithm, params, needle", [
    (lambda X: X, "saola", {"alpha": 2}, "alpha must be"),
    (lambda X: X, "ofs", {}, "consumes instance streams"),
    (lambda X: np.where(np.arange(X.shape[1]) == 3, np.nan, X), "saola", {}, "columns [3]"),
    (lambda X: np.where(np.arange(X.shape[1]) == 5, 1e300, X), "kofsd", {}, "too large"),
    (lambda X: sp.csc_matrix(np.where(np.arange(X.shape[1]) == 1, np.inf, X)), "saola", {},
     "infinite values in columns [1]"),
])
def test_a_feature_stream_the_worker_would_refuse_yields_nothing(X_change, algorithm, params,
                                                                 needle):
    X, y = sparse_dataset(seed=4, n=60, d=30)
    messages = feature_stream_messages("s", X_change(X.toarray()), y, algorithm, params)
    with pytest.raises(ValueError, match=re.escape(needle)):
        next(messages)  # not even the 'open'


@pytest.mark.parametrize("algorithm, params, n, needle", [
    ("kofsd", {"k": 10}, 10, "k=10 needs more than k instances, y has 10"),
    ("saola", {}, 3, "Fisher's z needs more than 3 instances, got 3"),
])
def test_a_parameter_the_data_is_too_small_for_is_refused_before_the_open(algorithm, params, n,
                                                                         needle):
    # found at the first block, the block was dead-lettered and the stream closed empty
    from streamfs.algorithms.opening import check_open

    X, y = np.random.default_rng(1).normal(size=(n, 4)), np.arange(n) % 2
    with pytest.raises(ValueError, match=re.escape(needle)):
        next(feature_stream_messages("s", X, y, algorithm, params))
    with pytest.raises(ValueError, match=re.escape(needle)):
        check_open("features", algorithm, params, y=y)  # the worker's open


def test_a_feature_stream_needs_one_label_per_row():
    # the open would say N = 8 and each block bring columns of 10 values: all dead-lettered
    with pytest.raises(InputDataError, match="X has 10 rows but there are 8 labels"):
        next(feature_stream_messages("s", np.ones((10, 3)), np.arange(8) % 2, "saola"))


def test_an_instance_block_the_worker_would_refuse_is_not_yielded():
    X = np.ones((10, 3))
    X[7, 1] = np.nan
    chunks = [(X[:4], np.arange(4) % 2), (X[4:], np.arange(6) % 2)]
    messages = instance_messages_from_chunks("s", chunks, 3, "ofs", block_bytes=48)
    sent = []
    with pytest.raises(InputDataError, match=re.escape("data rows [7]")):
        for m in messages:
            sent.append(m)
    assert sum(m["X"].shape[0] for m in sent if m["kind"] == "instances") <= 4
    with pytest.raises(ValueError, match="unknown parameter"):
        next(instance_messages_from_chunks("s", chunks, 3, "ofs", {"alfa": 1}))
    bad_first = [(X[4:], np.arange(6) % 2)]
    with pytest.raises(InputDataError, match=re.escape("data rows [3]")):
        next(instance_messages_from_chunks("s", bad_first, 3, "ofs"))  # before 'open'


@pytest.mark.parametrize("classes", [[1, 2], ["a", "b"]])
def test_labels_outside_the_given_classes_are_refused_at_their_block(classes):
    # two labels, so no "3 classes": the worker dead-lettered the block after produce exited 0
    X, y = np.ones((10, 3)), np.where(np.arange(10) % 2, 1, -1)
    needle = ("data row 0 (counted from 0): label -1 not among the classes [1, 2] the stream "
              "was given" if classes[0] == 1 else "data rows 0..9 and the classes ['a', 'b'] "
              "the stream was given: the labels mix strings and numbers")
    with pytest.raises(InputDataError, match=re.escape(needle)):
        next(instance_messages_from_chunks("s", [(X, y)], 3, "ofs", {"classes": classes}))
    assert len(list(instance_messages_from_chunks("s", [(X, y)], 3, "ofs",
                                                  {"classes": [-1, 1]}))) == 3


def test_a_group_larger_than_a_record_is_refused_before_the_open():
    X = np.ones((100, 20))  # 800 bytes a column
    y = np.arange(100) % 2
    groups = [list(range(12)), list(range(12, 20))]  # 9,600 and 6,400 bytes
    # 9,600 bytes of values and an envelope's allowance (4,096 and the id twice) over 13,000
    msgs = feature_stream_messages("s", X, y, "group-saola", groups=groups, shuffle_seed=2,
                                   block_bytes=2000, record_limit=13000)
    with pytest.raises(InputDataError, match=r"group 0 \(12 columns: .*\) needs 13\d{3} bytes "
                                             r"in one message, over the record limit of 13000"):
        next(msgs)  # the open is never yielded
    fits = list(feature_stream_messages("s", X, y, "group-saola", groups=groups,
                                        block_bytes=2000, record_limit=14000))
    assert [len(m["groups"]) for m in fits[1:-1]] == [12, 8]  # a message of its own each


def test_a_feature_stream_refuses_labels_the_worker_would_refuse_as_not_1d():
    # a column vector passed the producer's checks and the worker dead-lettered the open
    with pytest.raises(InputDataError, match=re.escape("the labels must be 1-D (one per row), "
                                                       "got shape (10, 1)")):
        next(feature_stream_messages("s", np.ones((10, 3)), (np.arange(10) % 2)[:, None],
                                     "saola"))


def test_booleans_among_numeric_labels_are_refused_before_the_open():
    X = np.arange(12.0).reshape(4, 3)
    _, y, _ = from_objects(X, pd.Series([True, 1, 0, False], dtype=object))
    assert y.tolist() == [True, 1, 0, False]  # not [1, 1, 0, 0]: two classes, not four rows
    with pytest.raises(InputLabelError, match="the labels mix booleans and numbers"):
        next(feature_stream_messages("s", X, y, "saola"))


@pytest.mark.parametrize("held", ["list", "objects", "series"])
def test_integer_labels_no_64_bit_type_holds_are_refused_before_the_open(held):
    # numpy makes such ints floats: 2**64 - 1 and 2**64 - 2 would travel as one class
    X = np.arange(12.0).reshape(4, 3)
    codes = [2 ** 64 - 1, 2 ** 64 - 2, -1, -1]
    y = {"list": codes, "objects": np.array(codes, dtype=object),
         "series": pd.Series(codes, dtype=object)}[held]
    needle = "integer labels from -1 to 18446744073709551615, which no 64-bit integer type"
    with pytest.raises(InputLabelError, match=needle):
        next(feature_stream_messages("s", X, y, "saola"))
    with pytest.raises(InputLabelError, match=needle):
        next(instance_stream_messages("s", X, y, "gdm"))
    with pytest.raises(InputLabelError, match=f"^the labels: {needle}"):
        from_objects(X, y)
    # each 64-bit type alone is taken, exactly
    _, unsigned, _ = from_objects(X, codes[:2] * 2)
    assert unsigned.dtype == np.uint64 and len(set(unsigned.tolist())) == 2


def test_objects_take_labels_and_frames_as_the_estimators_do():
    X = np.arange(12.0).reshape(4, 3)
    # integers held as objects stay integers: as floats 2**53 and 2**53 + 1 were one class
    _, y, _ = from_objects(X, pd.Series([2 ** 53, 2 ** 53 + 1] * 2, dtype=object))
    assert y.dtype.kind == "i" and len(set(y.tolist())) == 2
    _, y, _ = from_objects(X, pd.DataFrame({"cls": [0, 1, 0, 1]}))  # a one-column frame
    assert y.tolist() == [0, 1, 0, 1]
    # a gap in text labels is missing, not the class "<NA>"
    _, y, _ = from_objects(X, pd.Series(["a", None, "b", "a"], dtype="string"))
    with pytest.raises(InputLabelError, match=re.escape("the labels contain missing values "
                                                        "(None, NaN or NA) (1 of 4)")):
        next(feature_stream_messages("s", X, y, "saola"))
    # bool columns among numbers, numeric categories: numbers, not objects
    frame = pd.DataFrame({"a": [1.5, 2.0, 3.0, 4.0], "b": [True, False, True, True],
                          "c": pd.Series([3, 1, 3, 2], dtype="category")})
    Xf, _, names = from_objects(frame, [0, 1, 0, 1])
    assert Xf.dtype == np.float64 and names == ["a", "b", "c"]
    assert Xf.tolist() == [[1.5, 1.0, 3.0], [2.0, 0.0, 1.0], [3.0, 1.0, 3.0], [4.0, 1.0, 2.0]]
    Xi, _, _ = from_objects(frame[["b", "c"]], [0, 1, 0, 1])
    assert Xi.dtype == np.int64


@pytest.mark.parametrize("build, algorithm", [(feature_stream_messages, "saola"),
                                              (instance_stream_messages, "ofs")])
def test_an_x_that_is_not_a_matrix_is_refused_naming_its_shape(build, algorithm):
    """Both raised IndexError (tuple index out of range): a 1-D array, or a polars LazyFrame
    (which numpy makes one object)."""
    with pytest.raises(InputDataError, match=re.escape("X must be 2-D (instances x features), "
                                                       "got shape (4,)")):
        next(build("s", np.ones(4), [0, 1, 0, 1], algorithm))
    pl = pytest.importorskip("polars")
    with pytest.raises(InputDataError, match=re.escape("pass X.collect()")):
        next(build("s", pl.LazyFrame({"a": [1.0, 2.0]}), [0, 1], algorithm))


@pytest.mark.parametrize("run", ["", "r" * 129, 7])
def test_a_run_token_the_worker_would_refuse_is_refused_before_publishing(run):
    X = np.zeros((4, 2))
    y = np.array([0, 1, 0, 1])
    with pytest.raises(ValueError, match="'run' must be a non-empty string of at most 128"):
        next(feature_stream_messages("s", X, y, "saola", run=run))


@pytest.mark.parametrize("X, names, needle", [
    # 12 bytes a non-zero: passed the 8-bytes-a-value check of the open, failed at its block
    (sp.csc_matrix(np.random.default_rng(0).normal(size=(10000, 3))), None,
     "column 0 (and 2 more) needs 124106 bytes in one message (120008 of values, 4098 of "
     "envelope), over the record limit of 100000 bytes"),
    (np.ones((50, 3)), ["a", "b" * 200000, "c"],
     "column 1 ('bbbbbbbb"),
])
def test_a_column_over_the_record_limit_is_refused_before_the_open(X, names, needle):
    y = np.arange(X.shape[0]) % 2
    with pytest.raises(InputDataError, match=re.escape(needle)):
        next(feature_stream_messages("s", X, y, "saola", feature_names=names,
                                     record_limit=100000))
    advice = "send X dense (X.toarray())" if names is None else "shorten its name"
    with pytest.raises(InputDataError, match=re.escape(advice)):
        next(feature_stream_messages("s", X, y, "saola", feature_names=names, shuffle_seed=1,
                                     record_limit=100000))


def test_the_columns_a_record_limit_lets_through_fit_their_messages():
    from streamfs.codec import encode
    from streamfs.producers.blocks import block_budget

    limit, rng = 100000, np.random.default_rng(1)
    X = sp.csc_matrix(rng.normal(size=(7991, 3)))  # 95900 bytes a column, and 4098 around it
    msgs = list(feature_stream_messages("s", X, np.arange(7991) % 2, "saola",
                                        block_bytes=block_budget(limit), record_limit=limit))
    # as send_messages counts a record: its value, its key and Kafka's framing (80 bytes)
    assert max(len(encode(m)) + 1 + 80 for m in msgs) <= limit
    with pytest.raises(InputDataError, match="needs 100010 bytes in one message"):
        next(feature_stream_messages("s", sp.csc_matrix(rng.normal(size=(7992, 3))),
                                     np.arange(7992) % 2, "saola", record_limit=limit))


@pytest.mark.parametrize("names, needle", [
    (list("aabcd"), "feature_names: duplicate feature name 'a' (features 0 and 1): name each "
                    "feature once"),
    ([0, "0", "b", "c", "d"], "duplicate feature name '0' (features 0 and 1)"),
    (["a", None, "c", "d", "e"], "the name at position 1 is NoneType None, not text"),
    (["a", "b", b"c", "d", "e"], "the name at position 2 is bytes b'c', not text"),
    (["a", "b", "c", 1.5, "e"], "the name at position 3 is float 1.5, not text"),
    (["a", "b", "c", "d", "e\ud800"], "the name at position 4 ('e\\ud800') is not valid "
                                      "Unicode text"),
])
@pytest.mark.parametrize("build, algorithm", [(feature_stream_messages, "saola"),
                                              (instance_stream_messages, "ofs")])
def test_feature_names_the_worker_would_refuse_are_refused_before_the_open(build, algorithm,
                                                                           names, needle):
    X, y = np.random.default_rng(2).normal(size=(50, 5)), np.arange(50) % 2
    with pytest.raises(InputDataError, match=re.escape(needle)):
        next(build("s", X, y, algorithm, feature_names=names))


def test_feature_names_travel_as_text():
    X, y = np.random.default_rng(2).normal(size=(50, 3)), np.arange(50) % 2
    names = np.array([10, 11, 12])  # numbers name columns as a DataFrame's do: their digits
    features = list(feature_stream_messages("s", X, y, "saola", feature_names=names))
    assert [type(n) for n in features[1]["names"]] == [str] * 3
    assert features[1]["names"] == ["10", "11", "12"]
    opened = next(instance_stream_messages("s", X, y, "ofs", feature_names=np.array(list("abc"))))
    assert opened["feature_names"] == ["a", "b", "c"] and type(opened["feature_names"][0]) is str


@pytest.mark.parametrize("seed", [-1, "a", True, 1.5])
def test_a_shuffle_seed_that_is_not_a_seed_is_refused_naming_it(seed):
    X, y = np.ones((4, 3)), np.arange(4) % 2
    needle = f"shuffle_seed must be None or an integer >= 0, got {seed!r}"
    with pytest.raises(ValueError, match=re.escape(needle)):
        next(feature_stream_messages("s", X, y, "saola", shuffle_seed=seed))
    with pytest.raises(ValueError, match=re.escape(needle)):
        largest_column_bytes(X, shuffle_seed=seed)
    assert largest_column_bytes(X, shuffle_seed=np.uint8(3)) == 32 + 9  # and its source index


@pytest.mark.parametrize("build, algorithm", [(feature_stream_messages, "saola"),
                                              (instance_stream_messages, "ofs")])
def test_missing_labels_are_said_missing(build, algorithm):
    # was "X has 50 rows but there are 1 labels" (numpy makes None one label)
    with pytest.raises(InputLabelError, match=re.escape("the labels are missing (y is None)")):
        next(build("s", np.ones((50, 3)), None, algorithm))
