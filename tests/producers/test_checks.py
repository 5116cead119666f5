"""What the worker would refuse is refused where the stream is published, before its 'open'
(no broker: the message generators and the checks they run)."""

import warnings

import numpy as np
import pytest
from click.testing import CliRunner

from streamfs.cli import main
from streamfs.codec import decode, encode
from streamfs.producers import feature_stream_messages, instance_stream_messages
from streamfs.producers.blocks import instance_messages_from_chunks
from streamfs.producers.errors import InputDataError, InputLabelError
from streamfs.worker.processor import StreamProcessor



# ---------------------------------------------------------------- labels the codec cannot carry


def _int_labels():
    rng = np.random.default_rng(0)
    return rng.normal(size=(40, 4)), rng.integers(0, 2, 40)


@pytest.mark.parametrize("make", [feature_stream_messages, instance_stream_messages])
def test_float16_labels_are_widened_and_encode(make):
    X, y = _int_labels()
    msgs = list(make("s", X, y.astype(np.float16), "saola" if make is feature_stream_messages
                     else "ofs"))
    for m in msgs:
        encode(m)  # CodecError before the fix: "cannot encode arrays of dtype float16"


@pytest.mark.parametrize("make", [feature_stream_messages, instance_stream_messages])
@pytest.mark.parametrize("labels", [lambda y: y.astype(complex),
                                    lambda y: y.astype("datetime64[D]"),
                                    lambda y: np.where(y == 1, "a\udcff", "b"),
                                    lambda y: np.array([2 ** 70 + int(v) for v in y],
                                                       dtype=object)])
def test_labels_that_cannot_travel_are_refused_before_the_open(make, labels):
    X, y = _int_labels()
    gen = make("s", X, labels(y), "saola" if make is feature_stream_messages else "ofs")
    with pytest.raises(InputLabelError, match="labels"):
        next(gen)  # nothing yielded: no 'open' left on the topic without its data


@pytest.mark.parametrize("make", [feature_stream_messages, instance_stream_messages])
def test_64_bit_integer_labels_travel(make):
    X, y = _int_labels()
    for labels in (y.astype(np.uint64) + np.uint64(2 ** 64 - 2),
                   np.array([-2 ** 63 if v else 2 ** 63 - 1 for v in y], dtype=object)):
        for m in make("s", X, labels, "saola" if make is feature_stream_messages else "ofs"):
            encode(m)
    # together, no 64-bit type holds these: as floats the worker would not have them exactly
    both = np.array([-2 ** 63 if v else 2 ** 64 - 1 for v in y], dtype=object)
    with pytest.raises(InputLabelError, match="no 64-bit integer type holds together"):
        next(make("s", X, both, "saola" if make is feature_stream_messages else "ofs"))


# ---------------------------------------------------------------- infinite labels


def _infinite_labels():
    rng = np.random.default_rng(0)
    y = rng.normal(size=40)  # SAOLA takes real-valued targets
    y[7] = np.inf
    return rng.normal(size=(40, 4)), y


def test_the_worker_refuses_infinite_labels():
    X, y = _infinite_labels()
    opening = {"kind": "open", "stream": "s", "seq": 0, "algorithm": "saola", "params": {},
               "y": y, "run": "r"}
    plan = StreamProcessor("features", {}, log_dead_letters=False).handle("s", encode(opening))
    assert "infinite" in decode(plan.dead_letter)["reason"]


@pytest.mark.parametrize("algorithm", ["saola", "saola-max", "group-saola"])
def test_the_producer_refuses_infinite_labels_before_the_open(algorithm):
    X, y = _infinite_labels()
    groups = [[0, 1], [2, 3]] if algorithm == "group-saola" else None
    gen = feature_stream_messages("s", X, y, algorithm, groups=groups)
    with pytest.raises(InputLabelError, match=r"infinite values \(1 of 40\)"):
        next(gen)


# ---------------------------------------------------------------- parameters as they travel


def _text_labels():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 40)
    return rng.normal(size=(40, 4)), np.where(y == 1, "yes", "no")


def test_text_classes_from_np_unique_are_published_and_accepted():
    X, y = _text_labels()
    msgs = list(instance_stream_messages("s", X, y, "ofs", {"classes": np.unique(y)}))
    processor = StreamProcessor("instances", {}, log_dead_letters=False)
    for m in msgs:  # CodecError before the fix: "cannot encode arrays of dtype <U3"
        plan = processor.handle("s", encode(m))
        assert plan.dead_letter is None, decode(plan.dead_letter)["reason"]
        for key, value in plan.writes:
            processor.store[key] = value
    assert msgs[0]["params"]["classes"] == ["no", "yes"]


@pytest.mark.parametrize("make,algorithm", [(instance_stream_messages, "ofs-partial"),
                                            (feature_stream_messages, "saola")])
def test_a_value_no_message_carries_is_refused_naming_the_parameter(make, algorithm):
    X, y = _text_labels()
    params = {"random_state": 2 ** 70} if algorithm == "ofs-partial" else {"max_features": 2 ** 70}
    gen = make("s", X, y, algorithm, params)
    with pytest.raises(ValueError, match=r"parameter '(random_state|max_features)' = \d+ cannot travel"):
        next(gen)


# ---------------------------------------------------------------- the worker's buffer cap


def test_feature_stream_over_the_cap_is_refused_before_the_open():
    X, y = _int_labels()
    gen = feature_stream_messages("s", X, y, "kofsd", {"max_buffer_bytes": 1 << 20},
                                  buffer_cap=1 << 19)
    with pytest.raises(ValueError, match="max_buffer_bytes=1048576 exceeds this worker.s cap"):
        next(gen)


def test_instance_stream_over_the_cap_is_refused_before_the_open():
    X, y = _int_labels()
    gen = instance_messages_from_chunks("s", [(X, y)], 4, "ofs", {"max_buffer_bytes": 1 << 20},
                                        buffer_cap=1 << 19)
    with pytest.raises(ValueError, match="max_buffer_bytes=1048576 exceeds this worker.s cap"):
        next(gen)


@pytest.mark.parametrize("cap,refused", [(100_000, True), (1 << 20, False)])
def test_a_cap_below_the_default_applies_to_a_stream_that_sets_none(cap, refused):
    X, y = _int_labels()
    X, y = np.tile(X, (3, 1)), np.tile(y, 3)  # K-OFSD over N = 120 needs about 230 kB
    gen = feature_stream_messages("s", X, y, "kofsd", buffer_cap=cap)
    if refused:
        with pytest.raises(ValueError, match="STREAMFS_MAX_BUFFER_BYTES, is 100000 bytes"):
            next(gen)
    else:
        assert next(gen)["params"] == {}  # the worker applies the same cap itself


def test_cli_refuses_a_buffer_over_the_cap_before_reading_the_file(monkeypatch, tmp_path):
    monkeypatch.setenv("STREAMFS_MAX_BUFFER_BYTES", "1024")
    result = CliRunner().invoke(main, ["-b", "127.0.0.1:1", "produce", "features",
                                       str(tmp_path / "missing.npz"), "--stream", "s", "-a",
                                       "kofsd", "-p", "max_buffer_bytes=2048", "--no-progress"])
    assert result.exit_code == 2, result.output
    assert "max_buffer_bytes=2048 exceeds this worker's cap of 1024 bytes" in result.output


# ---------------------------------------------------------------- rows named in the source


def _chunks(value):
    rng = np.random.default_rng(0)
    A, B = rng.normal(size=(10, 3)), rng.normal(size=(10, 3))
    B[2, 1] = value
    y = np.tile([0, 1], 5)
    return [(A, y), (B, y)]


@pytest.mark.parametrize("algorithm,params,value", [
    ("ofs", {}, 1e300),  # unit-norm scaling: the row's L2 norm overflows
    ("pe-trun", {}, 1e300),
    ("ofs-partial", {"normalize": False}, 1e50),  # raw values beyond RAW_ABS_LIMIT
])
def test_the_source_row_is_named(algorithm, params, value):
    with pytest.raises(InputDataError, match=r"data rows \[12\] \(counted from 0\)"):
        list(instance_messages_from_chunks("s", _chunks(value), 3, algorithm, params))


def test_the_worker_still_names_the_rows_of_its_block():
    from streamfs.algorithms.ofs import OFS

    X = np.ones((4, 3))
    X[2, 1] = 1e300
    with pytest.raises(ValueError, match=r"rows \[2\] of the block"):
        OFS(2, n_features=3).partial_fit(X, [0, 1, 0, 1])


def test_an_instance_file_whose_columns_dominate_unit_norm_rows_is_warned_of_before_publishing(
        tmp_path):
    # the worker warns at the stream's first block, in its log: the producer says it first

    from sklearn.datasets import load_breast_cancer

    from streamfs.producers.checks import check_instance_source
    from streamfs.producers.sources import open_instances

    path = tmp_path / "bc.csv"
    load_breast_cancer(as_frame=True).frame.to_csv(path, index=False)
    with pytest.warns(UserWarning, match=r"^OFS\(normalize=True\) scales each instance to unit "
                                         r"L2 norm, and columns 3 \('mean area'\), 23 \('worst "
                                         r"area'\) reach") as rec:
        check_instance_source(open_instances(str(path), label="target"), "ofs", {})
    assert len(rec) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        check_instance_source(open_instances(str(path), label="target"), "ofs",
                              {"normalize": "standardize"})


def test_a_source_with_its_classes_given_is_advised_from_its_first_rows_not_read_whole(tmp_path):
    # classes= spares the pass over the whole file; the advice needs the first rows only
    from sklearn.datasets import load_breast_cancer

    from streamfs.producers.checks import check_instance_source
    from streamfs.producers.sources import open_instances

    frame = load_breast_cancer(as_frame=True).frame
    path = tmp_path / "bc.csv"
    frame.to_csv(path, index=False)
    src = open_instances(str(path), label="target", chunk_bytes=100 * 31 * 8)  # 100 rows
    read = []
    chunks = src.chunks
    src.chunks = lambda: (read.append(len(c[0])) or c for c in chunks())
    with pytest.warns(UserWarning, match=r"columns 3 \('mean area'\), 23 \('worst area'\)"):
        check_instance_source(src, "ofs", {"classes": [0, 1]})
    assert read == [100]  # the first chunk, not the whole file

    # rows the worker would refuse get the refusal, with no advice beside it
    frame.iloc[1, 0] = 1e300  # its unit-norm scaling overflows
    frame.to_csv(path, index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        with pytest.raises(InputDataError, match=r"data rows \[1\]"):
            check_instance_source(open_instances(str(path), label="target"), "ofs",
                                  {"classes": [0, 1]})


def test_a_selection_too_large_for_a_result_is_warned_of_before_publishing(tmp_path):
    """20,000 x 2 million sparse instances with OFS's default B (200,000) were published, and
    the worker refused two of the three blocks: a result naming 200,000 features is over the
    8 MiB record limit. The producer says so first, with the B that fits; the same stream
    under the limit is published without a word."""
    import scipy.sparse as sp

    from streamfs.producers.checks import check_instance_source
    from streamfs.producers.sources import open_instances
    from streamfs.worker.processor import RECORD_OVERHEAD

    from sklearn.datasets import dump_svmlight_file

    rng = np.random.default_rng(0)
    X = sp.random(40, 3000, density=0.01, random_state=1, format="lil")
    X[0, 2999] = X[1, 0] = 1.0  # d = 3000, read as zero-based (an index 0)
    X = X.tocsr()
    y = rng.integers(0, 2, 40)
    path = tmp_path / "wide.svm"
    dump_svmlight_file(X, y, str(path), zero_based=True)
    limit = RECORD_OVERHEAD + 8000  # room for ~200 entries of ~40 bytes
    with pytest.warns(UserWarning, match=r"OFS keeps up to B = 300 of the 3000 features "
                                         r"\(n_features_to_select=None\); a result naming them "
                                         r"takes at least \d+ bytes, over the 8000 bytes a "
                                         r"result may take .* past about (\d+) features") as rec:
        check_instance_source(open_instances(str(path)), "ofs", {}, limit)
    said = str(rec[0].message)
    fits = int(said.rsplit("n_features_to_select=", 1)[1].split()[0])
    floor = int(said.split("takes at least ")[1].split()[0])
    assert 150 < fits < 300
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        check_instance_source(open_instances(str(path)), "ofs",
                              {"n_features_to_select": fits}, limit)
        check_instance_source(open_instances(str(path)), "ofs", {}, limit * 4)
    # a floor: any 300 features, named as the worker names them, take at least that much
    from streamfs.codec import packb
    for seed in range(5):
        chosen = np.random.default_rng(seed).choice(3000, 300, replace=False)
        entries = [{"feature": int(j), "name": f"x{j}", "score": float(w), "affiliated": []}
                   for j, w in zip(chosen, np.random.default_rng(seed).normal(size=300))]
        assert len(packb(entries)) >= floor


def _one_shot(n_chunks: int = 4, rows: int = 50):
    """An InstanceSource whose chunks() hands out the same generator each time (a user's
    ``lambda: gen``): a pass over it uses it up."""
    from streamfs.producers.sources import InstanceSource

    rng = np.random.default_rng(0)
    chunks = [(rng.normal(size=(rows, 5)), np.arange(rows) % 2) for _ in range(n_chunks)]
    gen = iter(chunks)
    return InstanceSource(5, lambda: gen)


def test_a_one_shot_source_checked_whole_is_refused_before_its_open_not_lost():
    """produce_instances published an open and a close and nothing between: the check's pass
    had used the generator up (the worker's final: n_seen 0)."""
    from streamfs.producers.blocks import instance_messages_from_chunks
    from streamfs.producers.checks import check_instance_source

    src = _one_shot()
    params, chunks = check_instance_source(src, "ofs", {})
    messages = instance_messages_from_chunks("s", chunks, 5, "ofs", params)
    with pytest.raises(InputDataError, match=r"^the source gave 0 rows to publish, 200 to the "
                                             r"check before: InstanceSource.chunks\(\) must "
                                             r"return a new iterator"):
        next(messages)  # before the 'open'


def test_a_one_shot_source_with_its_classes_is_read_once_and_published_whole():
    """With the classes given, the first chunk read for the advice was lost (n_seen 150 of
    200)."""
    from streamfs.producers.blocks import instance_messages_from_chunks
    from streamfs.producers.checks import check_instance_source

    params, chunks = check_instance_source(_one_shot(), "ofs", {"classes": [0, 1]})
    messages = list(instance_messages_from_chunks("s", chunks, 5, "ofs", params))
    assert sum(m["X"].shape[0] for m in messages if m["kind"] == "instances") == 200
    # a budget chosen needs a pass of its own: then it is refused as above
    _, chunks = check_instance_source(_one_shot(), "ofs", {"classes": [0, 1]},
                                      block_bytes=10_000)
    with pytest.raises(InputDataError, match=r"gave 0 rows to publish, 200 to the check"):
        next(chunks)


def test_a_source_that_gives_other_rows_the_second_time_is_stopped_where_it_differs():
    """Rows from a queue: those published were never checked."""
    from streamfs.producers.checks import check_instance_source
    from streamfs.producers.sources import InstanceSource

    X, y = np.ones((30, 3)), np.arange(30) % 2
    calls = []

    def chunks():
        calls.append(1)
        n = 30 if len(calls) == 1 else 40
        yield np.ones((n, 3)), np.arange(n) % 2

    _, published = check_instance_source(InstanceSource(3, chunks), "ofs", {})
    with pytest.raises(InputDataError, match=r"gave more than 30 rows to publish, 30 to the"):
        list(published)
    # the same rows each time pass as they are
    src = InstanceSource.from_arrays(X, y)
    _, published = check_instance_source(src, "ofs", {})
    assert [len(c[0]) for c in published] == [30]


@pytest.mark.parametrize("classes,bools", [([False, True], False), ([0, 1], True)])
def test_classes_of_another_label_type_than_the_data_are_refused_before_publishing(classes,
                                                                                   bools):
    """As a set, {False, True} holds 0 and 1: the stream was published, and the worker
    refused every block ("Mix of label input types (boolean and number)")."""
    from streamfs.producers.checks import check_instance_source
    from streamfs.producers.sources import InstanceSource

    X, y = np.ones((60, 5)), np.arange(60) % 2
    src = InstanceSource.from_arrays(X, y.astype(bool) if bools else y)
    with pytest.raises(InputDataError, match=r"^data rows 0..59 and the classes \[.*\] the "
                                             r"stream was given: the labels mix booleans and "
                                             r"numbers"):
        check_instance_source(src, "ofs", {"classes": classes})
    # of one type they pass
    check_instance_source(InstanceSource.from_arrays(X, y.astype(bool) if bools else y), "ofs",
                          {"classes": [False, True] if bools else [0, 1]})


def test_a_source_of_one_class_is_a_data_error_as_for_feature_streams():
    """It raised the plain LabelError, not InputDataError as the README says data errors do
    (and as a feature stream's one class does)."""
    from streamfs.producers.checks import check_instance_source
    from streamfs.producers.sources import InstanceSource

    with pytest.raises(InputDataError, match="class"):
        check_instance_source(InstanceSource.from_arrays(np.ones((10, 3)), np.zeros(10)), "ofs",
                              {})
