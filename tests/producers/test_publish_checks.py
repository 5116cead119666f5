"""The Python producer API through the real broker: what the worker would refuse is refused
before the ``open``, and a publish that stops part way says how many messages went out."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from streamfs.producers import (DeliveryError, InputDataError, StreamLeftOpen,
                                feature_stream_messages, produce_features, produce_instances)
from streamfs.producers.publish import send_messages
from streamfs.producers.sources import InstanceSource
from streamfs.topics import TopicSpec, create_topics, load_catalogue
from tests.producers.conftest import consume_stream


def records_on(kafka_config: dict, topic: str) -> int:
    """How many records ``topic`` holds (the sum of its partitions' high watermarks)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({**kafka_config, "group.id": "records-on"})
    try:
        parts = consumer.list_topics(topic, timeout=30).topics[topic].partitions
        return sum(consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
                   for p in parts)
    finally:
        consumer.close()


def _data(n: int = 200, d: int = 6, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    X = rng.normal(size=(n, d))
    X[:, 0] += 2 * y
    return X, y


def _chunks(X: np.ndarray, y: np.ndarray, rows: int, fail_at: int | None = None,
            labels: list | None = None) -> InstanceSource:
    """A source of ``rows``-row chunks whose chunk ``fail_at`` raises; ``labels`` replace y."""
    y = np.asarray(labels) if labels is not None else y

    def chunks():
        for i, a in enumerate(range(0, X.shape[0], rows)):
            if i == fail_at:
                raise RuntimeError("the reader broke")
            yield X[a:a + rows], y[a:a + rows]

    return InstanceSource(X.shape[1], chunks)


def test_dtypes_are_cast_exactly_or_refused_before_the_open(kafka_config, topic_prefix,
                                                            read_stream):
    topic = load_catalogue(topic_prefix)["features"].name
    X, y = _data()
    produce_features(kafka_config, topic, "f16", X.astype(np.float16), y)
    got = read_stream(topic, "f16")
    assert got["X"].dtype == np.float32 and np.array_equal(got["X"], X.astype(np.float16))
    frame = pd.DataFrame(X, columns=list("abcdef")).assign(n=pd.array(y * 3, dtype="Int64"))
    produce_features(kafka_config, topic, "nullable", frame, y)
    assert read_stream(topic, "nullable")["X"][:, -1].tolist() == (y * 3).tolist()
    before = records_on(kafka_config, topic)
    for bad, needle in [(X.astype(object), "dtype object"), (X.astype(complex), "complex128"),
                        (X.astype(str), "dtype <U"),
                        (frame.assign(n=pd.array([None] + [1] * 199, dtype="Int64")),
                         "column 'n': 1 missing value")]:
        with pytest.raises(InputDataError, match=needle):
            produce_features(kafka_config, topic, "bad", bad, y)
    assert records_on(kafka_config, topic) == before


def test_a_refused_delivery_stops_the_publish_and_never_closes(kafka_config, topic_prefix):
    tiny = TopicSpec("tiny", f"{topic_prefix}tiny", 1, 1, {"max.message.bytes": "200000"})
    create_topics(kafka_config, {"tiny": tiny})
    X, y = _data(n=100, d=1700)
    # group-saola keeps a group in one message: the second (1.2 MB) is over the topic's limit,
    # and the twenty small ones after it are handed over before the broker refuses it
    groups = [list(range(10)), list(range(10, 1510))] + [
        list(range(j, j + 10)) for j in range(1510, 1700, 10)]
    messages = feature_stream_messages("gap", X, y, "group-saola", groups=groups,
                                       block_bytes=9000)
    with pytest.raises(StreamLeftOpen, match=r"it stays open without 'close': publish it again "
                       r"with replace=True") as info:
        send_messages(messages, kafka_config, tiny.name)
    assert isinstance(info.value.__cause__, DeliveryError)
    assert "MSG_SIZE_TOO_LARGE" in str(info.value.__cause__)
    # the open and the first block before the refused one; those queued behind it, never
    # the close (the count included them, as if they came before the gap)
    assert info.value.messages_sent == 2
    after = info.value.delivered_after
    assert records_on(kafka_config, tiny.name) == 2 + after
    assert after > 0, "none queued behind the refused message: the case is not shown"
    assert (f"2 message(s) of stream 'gap' were already published, and {after} queued behind "
            "the refused one, which the worker refuses as a sequence gap") in str(info.value)


def test_an_error_mid_source_says_how_many_messages_went_out(kafka_config, topic_prefix,
                                                            monkeypatch):
    topic = load_catalogue(topic_prefix)["instances"].name
    X, y = _data(n=400, d=4)
    X[350, 2] = np.nan
    params = {"n_features_to_select": 2}
    # the labels' pass over the source finds the NaN first: nothing is published
    with pytest.raises(InputDataError, match=r"data rows \[350\]"):
        produce_instances(kafka_config, topic, "nan", _chunks(X, y, 100), None, "ofs", params,
                          block_bytes=1000)
    with pytest.raises(RuntimeError, match="the reader broke"):
        produce_instances(kafka_config, topic, "raise", _chunks(X, y, 100, fail_at=2), None,
                          "ofs", params, block_bytes=1000)
    assert records_on(kafka_config, topic) == 0
    # so with the classes given, and a block_bytes, which needs a pass for the widest row
    params["classes"] = [0, 1]
    with pytest.raises(InputDataError, match=r"data rows \[350\]"):
        produce_instances(kafka_config, topic, "nan", _chunks(X, y, 100), None, "ofs", params,
                          block_bytes=1000)
    assert records_on(kafka_config, topic) == 0
    # with the classes and no block_bytes there is no first pass: the publish stops at the bad
    # chunk (blocks of about 7,000 bytes: the record limit's budget)
    monkeypatch.setenv("STREAMFS_MAX_MESSAGE_BYTES", "8000")
    for stream, source, cause in [("nan", _chunks(X, y, 100), InputDataError),
                                  ("raise", _chunks(X, y, 100, fail_at=2), RuntimeError)]:
        before = records_on(kafka_config, topic)
        with pytest.raises(StreamLeftOpen, match=f"of stream '{stream}' were already "
                           "published; it stays open") as info:
            produce_instances(kafka_config, topic, stream, source, None, "ofs", params)
        assert isinstance(info.value.__cause__, cause) and info.value.messages_sent > 1
        assert records_on(kafka_config, topic) - before == info.value.messages_sent


@pytest.mark.parametrize("algorithm,labels,needle", [
    ("ofs", np.arange(200) % 3, "ofs is a binary classifier: the labels have 3 classes"),
    ("gdm", np.where(np.arange(200) == 3, np.nan, np.arange(200) % 2), "contain NaN"),
    ("ofs", pd.array([None] + [0, 1] * 99 + [0], dtype="Int64"), "1 missing value"),
    ("gdm", np.linspace(0, 1, 200), "not continuous values"),
    ("ofs", np.array([b"n", b"p"] * 100), "the labels are bytes: decode them"),
    ("ofs", np.arange(190) % 2, "X has 200 rows but there are 190 labels"),
])
def test_labels_are_checked_before_the_open(kafka_config, topic_prefix, algorithm, labels,
                                            needle):
    topic = load_catalogue(topic_prefix)["instances"].name
    X, _ = _data()
    with pytest.raises(ValueError, match=needle):
        produce_instances(kafka_config, topic, "labels", X, labels, algorithm)
    assert records_on(kafka_config, topic) == 0


def test_labels_of_every_chunk_are_checked(kafka_config, topic_prefix, monkeypatch):
    topic = load_catalogue(topic_prefix)["instances"].name
    X, y = _data(n=300, d=4)
    short = InstanceSource(4, lambda: iter([(X, y[:290])]))
    with pytest.raises(InputDataError, match=r"300 instances but labels of shape \(290,\)"):
        produce_instances(kafka_config, topic, "short", short, None, "ofs")
    third = np.r_[y[:200], np.full(100, 2)]  # a third class from the third chunk on
    with pytest.raises(InputDataError, match=r"data row 200 \(counted from 0, label 2\): .*"
                                             "the labels have 3 classes"):
        produce_instances(kafka_config, topic, "third", _chunks(X, y, 100, labels=third), None,
                          "ofs")
    said = re.escape("data row 200 (counted from 0): label 2 not among the classes [0, 1] the "
                     "stream was given")
    # the classes given and a block_bytes (a pass for the widest row): refused before the open
    with pytest.raises(InputDataError, match=said):
        produce_instances(kafka_config, topic, "third", _chunks(X, y, 100, labels=third), None,
                          "ofs", {"classes": [0, 1]}, block_bytes=1000)
    assert records_on(kafka_config, topic) == 0
    # without the block_bytes, no pass ahead: refused where the publish meets it
    monkeypatch.setenv("STREAMFS_MAX_MESSAGE_BYTES", "8000")  # blocks of about 7,000 bytes
    with pytest.raises(StreamLeftOpen, match=said) as info:
        produce_instances(kafka_config, topic, "third", _chunks(X, y, 100, labels=third), None,
                          "ofs", {"classes": [0, 1]})
    assert records_on(kafka_config, topic) == info.value.messages_sent > 1


def test_limits_topics_and_parameters_are_checked_before_the_open(kafka_config, topic_prefix,
                                                                  monkeypatch):
    monkeypatch.setenv("STREAMFS_MAX_MESSAGE_BYTES", "65536")  # the worker's record limit
    topics = load_catalogue(topic_prefix)
    features, instances = topics["features"].name, topics["instances"].name
    X, y = _data()
    wide, wide_y = _data(n=20, d=10_000)
    named = pd.DataFrame(X[:, :1].repeat(2000, axis=1),
                         columns=[f"{j:04d}" + "n" * 40 for j in range(2000)])
    cases = [
        (produce_features, features, _data(n=10_000, d=2), "saola", {},
         r"a stored column \(80000 bytes of values and up to 4096 of envelope\) would exceed "
         r"the record limit of 65536 bytes"),
        (produce_instances, instances, (named, y), "ofs", {},
         r"the 'open' message \(seq 0\) of stream 'c' is \d+ bytes \(\d+ with its key and "
         r"Kafka's record framing\), over the record limit"),
        (produce_instances, instances, (wide, wide_y), "ofs", {},
         r"need 80000 bytes each, over the record limit of 65536"),
        (produce_features, features, (X, y), "group-saola", {}, "group-saola needs the groups"),
        (produce_features, features, (X, y), "saola", {"groups": [[0, 1, 2], [3, 4, 5]]},
         "groups apply to group-saola only"),
        (produce_instances, instances, (X * 1e154, y), "ofs", {},
         r"have an L2 norm beyond float64"),
        (produce_features, features, (X, np.linspace(0, 1, 200)), "kofsd", {},
         "kofsd takes class labels, not continuous values"),
        (produce_instances, features, (X, y), "ofs", {},
         f"topic '{features}' is the catalogue's features topic: instance streams go to "
         f"'{instances}'"),
        (produce_features, features, (X, y), "saola", {"block_bytes": 70_000},
         "block_bytes must be between 1 and the record limit of 65536 bytes, got 70000"),
        # a budget under one column or row: the CLI refused it, the Python API sent 7 and 62
        # messages, each over it
        (produce_features, features, (X, y), "saola", {"block_bytes": 10},
         r"block_bytes 10 is smaller than one column of this stream \(1600 bytes\)"),
        (produce_instances, instances, (X, y), "ofs", {"block_bytes": 10},
         r"block_bytes 10 is smaller than one instance of this stream \(56 bytes\)"),
        (produce_instances, instances, (X, y), "ofs", {"block_bytes": 1000.5},
         r"block_bytes must be a whole number of bytes, got 1000.5"),
    ]
    for produce, topic, (data, labels), algorithm, kw, needle in cases:
        with pytest.raises(ValueError, match=needle):
            produce(kafka_config, topic, "c", data, labels, algorithm, **kw)
    assert records_on(kafka_config, features) == records_on(kafka_config, instances) == 0


def test_blocks_count_the_feature_names_in_their_budget(kafka_config, topic_prefix, monkeypatch):
    monkeypatch.setenv("STREAMFS_MAX_MESSAGE_BYTES", "200000")
    topic = load_catalogue(topic_prefix)["features"].name
    X = np.random.default_rng(3).normal(size=(10, 3000))
    frame = pd.DataFrame(X, columns=[f"{j:05d}" + "x" * 95 for j in range(3000)])
    produce_features(kafka_config, topic, "names", frame, np.arange(10) % 2)
    sizes: list[int] = []
    messages = consume_stream(kafka_config, topic, "names", sizes=sizes)
    assert max(sizes) <= 200_000 and len(messages) > 3
    assert [n for m in messages[1:-1] for n in m["names"]] == list(frame.columns)


@pytest.mark.parametrize("y", [np.r_[np.zeros(99), np.nan], np.ones(100),
                               np.array([b"a", b"b"] * 50, dtype=object)])
def test_label_faults_of_a_feature_stream_are_data_errors(y):
    # as for instance streams (the README: data errors raise InputDataError)
    from streamfs.producers import feature_stream_messages

    X = np.random.default_rng(0).normal(size=(100, 3))
    with pytest.raises(InputDataError, match="labels"):
        next(feature_stream_messages("s", X, y, "saola", {}))


def test_a_replace_tells_the_worker_where_the_id_s_results_stand(kafka_config, topic_prefix,
                                                                tmp_path):
    """`streamfs produce --replace` and replace=True put the run and version of the id's latest
    result in the open: a worker that dropped the id's header goes on after them."""
    from click.testing import CliRunner
    from confluent_kafka import Producer

    from streamfs.cli import main
    from streamfs.codec import encode

    topics = load_catalogue(topic_prefix)
    X, y = _data()
    results = Producer(kafka_config)
    for stream in ("api", "cli"):
        results.produce(topics["selected"].name, key=stream.encode(), value=encode(
            {"kind": "result", "stream": stream, "algorithm": "saola", "run": 1, "version": 7,
             "final": True, "selection": []}))
    assert results.flush(30) == 0
    produce_features(kafka_config, topics["features"].name, "api", X, y, replace=True)
    data = tmp_path / "d.csv"
    data.write_text("a,b,y\n" + "".join(f"{i},{i % 3},{i % 2}\n" for i in range(20)))
    out = CliRunner().invoke(main, ["-b", kafka_config["bootstrap.servers"], "--topic-prefix",
                                    topic_prefix, "produce", "features", str(data), "--stream",
                                    "cli", "-a", "saola", "--replace", "--no-progress"])
    assert out.exit_code == 0 and "run 2 replacing run 1" in out.output, out.output
    assert "(the run is the worker's to number: one more for each other replace" in out.output
    # --replace of an id without a result yet: a run still to be processed is replaced too
    # (the watch of this run had no hint at all)
    fresh = CliRunner().invoke(main, ["-b", kafka_config["bootstrap.servers"], "--topic-prefix",
                                      topic_prefix, "produce", "features", str(data),
                                      "--stream", "new", "-a", "saola", "--replace",
                                      "--no-progress"])
    assert fresh.exit_code == 0 and "no result of 'new' yet: if a run of it is still to be " \
        "processed, this one replaces it" in fresh.output, fresh.output
    for stream in ("api", "cli"):
        opening = consume_stream(kafka_config, topics["features"].name, stream)[0]
        assert opening["continue_from"] == {"run": 1, "version": 7}, stream


@pytest.mark.parametrize("replace", [False, True])
def test_an_id_with_results_of_the_other_kind_is_refused_even_with_replace(
        kafka_config, topic_prefix, replace):
    """A feature stream and an instance stream under one id would publish their results under
    one key, versions going backwards: the producer refuses it, --replace or not."""
    from streamfs.producers.publish import StreamExists
    from tests.test_client import _put, _result

    topics = load_catalogue(topic_prefix)
    features, instances = topics["features"].name, topics["instances"].name
    _put(kafka_config, topics["selected"].name, {**_result("slow1", 13, final=True)},
         {**_result("fast1", 2), "algorithm": "ofs"})
    X, y = _data()
    with pytest.raises(StreamExists, match=(
            r"stream 'slow1' already exists as a feature stream of 'saola' \(closed, run 1, "
            r"version 13\): an instance stream under the same id would mix its results with "
            r"those, even with replace=True; choose another stream id")):
        produce_instances(kafka_config, instances, "slow1", X, y, "ofs", replace=replace)
    with pytest.raises(StreamExists, match=r"stream 'fast1' already exists as an instance "
                       r"stream of 'ofs' \(open, run 1, version 2\): a feature stream"):
        produce_features(kafka_config, features, "fast1", X, y, "saola", replace=replace)
    assert records_on(kafka_config, features) == records_on(kafka_config, instances) == 0


def test_a_message_that_fits_only_without_kafka_s_framing_is_refused_before_the_open(
        kafka_config, topic_prefix):
    """The broker holds a record's batch to the topic's max.message.bytes, its framing (the
    batch header, the record's lengths, the key) counted: an ``open`` of 19,990 bytes passed
    the check against a 20,000-byte limit, then the broker refused it (DeliveryError,
    MSG_SIZE_TOO_LARGE) instead of the InputDataError naming the message."""
    from streamfs.producers.blocks import instance_messages_from_chunks
    from streamfs.codec import encode
    from streamfs.producers.checks import check_instance_source

    limit = 20_000
    small = TopicSpec("instances", f"{topic_prefix}edge", 1, 1, {"max.message.bytes": str(limit)})
    create_topics(kafka_config, {"instances": small})
    X, y = _data(n=50, d=600)
    params = {"n_features_to_select": 3}

    def source(pad: int) -> InstanceSource:
        names = [f"feature-{j:05d}" + "x" * (pad if j == 0 else 0) for j in range(X.shape[1])]
        return InstanceSource.from_arrays(X, y, names)

    def open_bytes(pad: int) -> int:
        src = source(pad)
        sent, _ = check_instance_source(src, "ofs", params, limit)
        head = next(instance_messages_from_chunks("edge", src.chunks(), src.n_features, "ofs",
                                                  sent, feature_names=src.feature_names))
        return len(encode(head))

    pad = limit - 10 - open_bytes(0)  # an open 10 bytes under the limit
    assert limit - 20 < open_bytes(pad) <= limit
    with pytest.raises(InputDataError, match=r"the 'open' message \(seq 0\) of stream 'edge'"):
        produce_instances(kafka_config, small.name, "edge", source(pad), None, "ofs", params)
    assert records_on(kafka_config, small.name) == 0


@pytest.mark.parametrize("produce, wrong, algorithm, n_classes", [
    ("produce_instances", "features", "ofs", 2), ("produce_features", "instances", "saola", 3)])
def test_a_catalogue_topic_of_the_other_kind_is_refused_before_the_data_s_advice(
        produce, wrong, algorithm, n_classes):
    """produce_instances to `<prefix>features` showed OFS's scaling advice on the data, and
    then refused the topic; it is refused first, before the broker is even asked."""
    import warnings

    from streamfs.algorithms.opening import open_advice
    from streamfs.algorithms.registry import get
    from streamfs.producers import publish

    X = np.random.default_rng(0).normal(size=(200, 6))
    X[:, 0] *= 1e4  # dominates the rows' norm: OFS advises scaling
    y = np.arange(200) % n_classes  # three classes: SAOLA's Fisher z advises test='mi'
    assert open_advice(get(algorithm).build({}), y, X=X)  # what the right topic would say
    topic = load_catalogue("t.")[wrong].name
    dead = {"bootstrap.servers": "127.0.0.1:1"}  # asked, it would fail otherwise
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=f"topic '{topic}' is the catalogue's {wrong} "
                                             "topic"):
            getattr(publish, produce)(dead, topic, "s", X, y, algorithm)


@pytest.mark.parametrize("produce, arguments, message", [
    ("produce_features", {"algorithm": "nope"}, "unknown algorithm 'nope'"),
    ("produce_features", {"params": {"alpha": -1}}, r"alpha must be a number in \(0, 1\)"),
    ("produce_features", {"stream": ""}, "the stream id is empty"),
    ("produce_features", {"groups": [[0, 1], [2, 3]]}, "groups apply to group-saola only"),
    ("produce_features", {"shuffle_seed": -1}, "shuffle_seed must be None or an integer"),
    ("produce_features", {"rate": -1}, "rate must be a finite number"),
    ("produce_features", {"block_bytes": 0}, "block_bytes must be more than 0"),
    ("produce_instances", {"algorithm": "saola"}, "consumes feature streams"),
    ("produce_instances", {"params": {"n_features_to_select": -2}}, "n_features_to_select"),
    ("produce_instances", {"block_bytes": "x"}, "block_bytes must be a whole number")])
def test_arguments_are_checked_before_the_broker_is_asked(produce, arguments, message):
    """An unknown algorithm or a bad parameter was said only once the broker answered: with
    none, as a broker-unreachable error after its wait."""
    from streamfs.producers import publish

    kind = "features" if produce == "produce_features" else "instances"
    arguments = {"stream": "s", **arguments}
    X, y = np.random.default_rng(0).random((30, 4)), np.arange(30) % 2
    dead = {"bootstrap.servers": "127.0.0.1:1"}  # asked, it would fail otherwise
    with pytest.raises(ValueError, match=message):
        getattr(publish, produce)(dead, load_catalogue("t.")[kind].name, X=X, y=y, **arguments)


def test_produce_features_warns_as_the_worker_will_once_its_checks_pass(kafka_config,
                                                                        topic_prefix):
    """The README promises the algorithm's advice through Python's warnings; only the CLI
    gave it for a feature stream (the worker logged it, where the publisher did not look)."""
    import warnings

    topic = load_catalogue(topic_prefix)["features"].name
    X, _ = _data(n=60)
    with pytest.warns(UserWarning, match=r"^SAOLA\(test='fisher_z'\) correlates the features "
                                         r"with the class as a number") as said:
        produce_features(kafka_config, topic, "three", X, np.arange(60) % 3)
    assert len(said) == 1
    with warnings.catch_warnings():  # no advice beside a refusal, nor for two classes
        warnings.simplefilter("error", UserWarning)
        with pytest.raises(InputDataError):
            produce_features(kafka_config, topic, "bad", np.r_[X[:-1], [[np.nan] * 6]],
                             np.arange(60) % 3)
        produce_features(kafka_config, topic, "two", X, np.arange(60) % 2)


def test_a_broker_gone_mid_publish_is_said_after_one_wait(kafka_config, topic_prefix,
                                                          broker_outage, monkeypatch):
    """The close's wait for the acknowledgements timed out, then the count of what got in
    waited as long again: 261 s for a broker that stopped, and an error that said 120 s."""
    from streamfs.producers import kafka as producer_kafka, publish

    monkeypatch.setattr(producer_kafka, "ACK_TIMEOUT_SECONDS", 5.0)
    waits: list = []
    settle = publish._settle
    monkeypatch.setattr(publish, "_settle",
                        lambda pub, timeout=None: waits.append(timeout) or settle(pub, timeout))
    topic = load_catalogue(topic_prefix)["features"].name
    X, y = _data(n=200, d=40)
    messages = feature_stream_messages("gone", X, y, "saola", block_bytes=200 * 8 * 5)
    outage = broker_outage()

    def stopping_the_broker():
        for i, message in enumerate(messages):
            if i == 2:  # the open and a block are out: the broker goes away
                outage.__enter__()
            yield message

    try:
        with pytest.raises(StreamLeftOpen) as info:
            send_messages(stopping_the_broker(), kafka_config, topic)
    finally:
        outage.__exit__(None, None, None)
    assert "still unacknowledged after 5 s: the broker does not answer" in str(info.value)
    assert isinstance(info.value.__cause__, producer_kafka.DeliveryTimeout)
    assert waits == [0.0]  # what was in flight was not waited for a second time


def test_an_input_topic_the_worker_refuses_gets_nothing(kafka_config, tmp_path):
    """An input topic made by hand with 4 partitions, or compacted: `produce` published the
    stream and said the results would come once a worker runs; the worker refuses the topic,
    and the streams on it had to be published again once it was made anew."""
    import os
    import subprocess
    import sys
    import uuid

    from streamfs.topics import TopicMismatch

    prefix = f"t{uuid.uuid4().hex[:10]}."
    topics = load_catalogue(prefix)
    features, instances = topics["features"], topics["instances"]
    create_topics(kafka_config, {
        "f": TopicSpec("f", features.name, 4, 1, features.config),
        "i": TopicSpec("i", instances.name, 8, 1, {**instances.config,
                                                   "cleanup.policy": "compact"})})
    X, y = _data()
    with pytest.raises(TopicMismatch) as refused:
        produce_features(kafka_config, features.name, "c", X, y)
    assert str(refused.value) == (
        f"existing topic {features.name!r} has 4 partition(s), the catalogue asks for 8\n"
        "the worker refuses the topic, so nothing was published (`streamfs topics create` "
        "says how to fix it)")
    csv = tmp_path / "d.csv"
    np.savetxt(csv, np.c_[X, y], delimiter=",")
    out = subprocess.run([sys.executable, "-m", "streamfs.cli", "--topic-prefix", prefix,
                          "produce", "instances", str(csv), "--stream", "c", "-a", "ofs"],
                         env={**os.environ,
                              "STREAMFS_BOOTSTRAP_SERVERS": kafka_config["bootstrap.servers"]},
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 1, out.stderr
    assert (f"Error: existing topic {instances.name!r} has cleanup.policy=compact, streamfs "
            "needs delete") in out.stderr
    assert "nothing was published" in out.stderr and "Traceback" not in out.stderr
    assert records_on(kafka_config, features.name) == records_on(kafka_config,
                                                                  instances.name) == 0
