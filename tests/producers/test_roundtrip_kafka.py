"""Every adapter through the real broker: file → topic → decoded blocks equal the source."""

from __future__ import annotations

import json
import time
import uuid

import h5py
import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_breast_cancer
import scipy.io
import scipy.sparse as sp
from click.testing import CliRunner

from streamfs.cli import main
from streamfs.producers.kafka import StreamPublisher
from streamfs.producers.publish import produce_features, produce_instances
from streamfs.producers.sources import open_instances
from streamfs.topics import create_topics, load_catalogue

from .conftest import consume_stream, reassemble
from .data import sparse_dataset, write_libsvm

pytestmark = pytest.mark.kafka


def _wdbc():
    # the same 569 x 30 data as lofs_wdbc, bundled with scikit-learn: never skipped
    return load_breast_cancer(return_X_y=True)


def _produce(kafka_config, prefix, *args):
    result = CliRunner().invoke(main, ["-b", kafka_config["bootstrap.servers"],
                                       "--topic-prefix", prefix, "produce", *map(str, args),
                                       "--no-progress"])
    assert result.exit_code == 0, result.output
    return result


def _exact(a, b) -> None:
    if sp.issparse(a) or sp.issparse(b):
        a, b = sp.csr_matrix(a), sp.csr_matrix(b)
        assert a.shape == b.shape and (a != b).nnz == 0
    else:
        assert a.shape == b.shape and np.array_equal(a, b)


def test_libsvm_instances_with_absent_features(kafka_config, topic_prefix, read_stream, tmp_path):
    X, y = sparse_dataset(seed=11, n=3000, d=200, density=0.05)
    X = X[:, :190]  # the last 10 columns of the source are all zero
    X = sp.hstack([X, sp.csr_matrix((3000, 10))], format="csr")
    path = tmp_path / "d.svm"
    write_libsvm(path, X, y)
    assert np.diff(X.indptr).min() == 0  # some rows have no feature at all
    # without --n-features the first pass finds d = largest index present
    _produce(kafka_config, topic_prefix, "instances", path, "--stream", "svm", "-a", "ofs",
             "--block-bytes", 20000)
    _produce(kafka_config, topic_prefix, "instances", path, "--stream", "svm-d", "-a", "ofs",
             "--n-features", 200)
    topic = load_catalogue(topic_prefix)["instances"].name
    got = read_stream(topic, "svm")
    d = int(X.indices.max()) + 1
    assert d <= 190 and got["open"]["n_features"] == d and got["n_messages"] > 10
    _exact(got["X"], X[:, :d])
    assert got["y"].tolist() == y.tolist()
    padded = read_stream(topic, "svm-d")
    assert padded["open"]["n_features"] == 200
    _exact(padded["X"], X)


def test_libsvm_features(kafka_config, topic_prefix, read_stream, tmp_path):
    X, y = sparse_dataset(seed=12, n=200, d=80)
    path = tmp_path / "d.libsvm"
    write_libsvm(path, X, y)
    _produce(kafka_config, topic_prefix, "features", path, "--stream", "f", "-a", "saola",
             "--n-features", 80, "--block-bytes", 2000, "--shuffle-seed", 4)
    got = read_stream(load_catalogue(topic_prefix)["features"].name, "f")
    assert got["order"] != list(range(80))
    _exact(got["X"], X)
    assert got["y"].tolist() == y.tolist()


def test_csv_with_header_and_string_label(kafka_config, topic_prefix, read_stream, tmp_path):
    X, y = _wdbc()
    labels = np.where(y == 1, "malignant", "benign")
    names = [f"f{j}" for j in range(X.shape[1])]
    path = tmp_path / "wdbc.csv"
    pd.DataFrame(X, columns=names).assign(diagnosis=labels).to_csv(path, index=False,
                                                                    float_format="%.17g")
    for kind, algo in (("instances", "ofs"), ("features", "saola")):
        _produce(kafka_config, topic_prefix, kind, path, "--stream", f"csv-{kind}", "-a", algo,
                 "--label", "diagnosis", "--block-bytes", 8000)
        got = read_stream(load_catalogue(topic_prefix)[kind].name, f"csv-{kind}")
        _exact(got["X"], X)
        assert got["y"].tolist() == labels.tolist()
        if kind == "instances":
            assert got["open"]["feature_names"] == names and got["n_messages"] > 10


def test_csv_with_a_dropped_row_id(kafka_config, topic_prefix, read_stream, tmp_path):
    """--drop id: the row id is neither sent nor named, in either kind of stream."""
    X, y = _wdbc()
    names = [f"f{j}" for j in range(X.shape[1])]
    frame = pd.DataFrame(X, columns=names)
    frame.insert(0, "diagnosis", y)
    frame.insert(0, "id", np.arange(len(y)) * 7 + 842302)
    path = tmp_path / "kaggle.csv"
    frame.to_csv(path, index=False, float_format="%.17g")
    for kind, algo in (("instances", "ofs"), ("features", "saola")):
        _produce(kafka_config, topic_prefix, kind, path, "--stream", f"drop-{kind}", "-a", algo,
                 "--label", "diagnosis", "--drop", "id", "--block-bytes", 8000)
        messages = consume_stream(kafka_config, load_catalogue(topic_prefix)[kind].name,
                                  f"drop-{kind}")
        got = reassemble(messages)
        _exact(got["X"], X)
        assert got["y"].tolist() == y.tolist()
        sent = (got["open"]["feature_names"] if kind == "instances"
                else [n for m in messages if m["kind"] == "features" for n in m["names"]])
        assert sent == names


def test_tsv_without_header(kafka_config, topic_prefix, read_stream, tmp_path):
    X, y = _wdbc()
    path = tmp_path / "wdbc.tsv"
    np.savetxt(path, np.column_stack([y, X]), delimiter="\t", fmt="%.17g")
    _produce(kafka_config, topic_prefix, "instances", path, "--stream", "tsv", "-a", "ofs",
             "--label", 0, "--no-header")
    got = read_stream(load_catalogue(topic_prefix)["instances"].name, "tsv")
    _exact(got["X"], X)
    assert got["y"].tolist() == y.astype(int).tolist()


def test_mat_v5_and_v73_from_wdbc(kafka_config, topic_prefix, read_stream, tmp_path):
    X, y = _wdbc()
    scipy.io.savemat(tmp_path / "v5.mat", {"X": X, "Y": y.reshape(-1, 1)})
    with h5py.File(tmp_path / "v73.mat", "w", userblock_size=512) as fh:
        fh["X"], fh["Y"] = X.T, y.reshape(1, -1)  # column-major, as MATLAB writes it
    groups = [list(range(j, j + 10)) for j in (20, 0, 10)]
    (tmp_path / "groups.json").write_text(json.dumps(groups))
    topics = load_catalogue(topic_prefix)
    for name in ("v5", "v73"):
        _produce(kafka_config, topic_prefix, "features", tmp_path / f"{name}.mat", "--stream",
                 f"mat-{name}", "-a", "group-saola", "--groups", tmp_path / "groups.json",
                 "--block-bytes", 569 * 8 * 12)
        got = read_stream(topics["features"].name, f"mat-{name}")
        _exact(got["X"], X)
        assert got["y"].tolist() == y.tolist()
        assert got["order"] == [j for g in groups for j in g]
        _produce(kafka_config, topic_prefix, "instances", tmp_path / f"{name}.mat", "--stream",
                 f"mat-{name}-i", "-a", "ofs")
        got = read_stream(topics["instances"].name, f"mat-{name}-i")
        _exact(got["X"], X)


def test_npy_npz_parquet(kafka_config, topic_prefix, read_stream, tmp_path):
    X, y = _wdbc()
    np.save(tmp_path / "a.npy", np.column_stack([X, y]))
    np.savez(tmp_path / "d.npz", X=X, y=y)
    frame = pd.DataFrame(X, columns=[f"c{j}" for j in range(30)]).assign(label=y.astype(int))
    frame.to_parquet(tmp_path / "d.parquet", row_group_size=100)
    topics = load_catalogue(topic_prefix)
    for kind, algo in (("instances", "ofs"), ("features", "saola")):
        for name in ("a.npy", "d.npz", "d.parquet"):
            stream = f"{kind}-{name}"
            _produce(kafka_config, topic_prefix, kind, tmp_path / name, "--stream", stream,
                     "-a", algo, "--block-bytes", 10000)
            got = read_stream(topics[kind].name, stream)
            _exact(got["X"], X)
            assert got["y"].tolist() == y.tolist(), stream


def test_python_objects(kafka_config, topic_prefix, read_stream):
    X, y = _wdbc()
    topics = load_catalogue(topic_prefix)
    frame = pd.DataFrame(X, columns=[f"c{j}" for j in range(30)])
    n = produce_instances(kafka_config, topics["instances"].name, "df", frame,
                          pd.Series(np.where(y == 1, "m", "b")), "ofs", block_bytes=5000)
    got = read_stream(topics["instances"].name, "df")
    assert got["n_messages"] == n and got["open"]["feature_names"] == list(frame.columns)
    _exact(got["X"], X)
    assert got["y"].tolist() == np.where(y == 1, "m", "b").tolist()
    Xs, ys = sparse_dataset(seed=13, n=100, d=40)
    produce_features(kafka_config, topics["features"].name, "sparse", Xs, ys, "saola",
                     block_bytes=500, shuffle_seed=1)
    got = read_stream(topics["features"].name, "sparse")
    _exact(got["X"], Xs)
    assert sp.issparse(got["X"])


def test_blocks_fill_what_the_topic_accepts(kafka_config, topic_prefix, tmp_path):
    """Without a block size, a message carries 7/8 of the topic's max.message.bytes, at most
    4 MiB: the catalogue's topics (8 MiB) get 4 MiB blocks (`streamfs produce`), a topic with
    Kafka's stock 1 MiB limit blocks that it accepts (`produce_features`)."""
    from streamfs.producers.blocks import MAX_BLOCK_BYTES
    from streamfs.topics import TopicSpec

    rng = np.random.default_rng(21)
    X, y = rng.normal(size=(1000, 1200)), rng.integers(0, 2, 1000)  # 9.6 MB of columns
    np.savez(tmp_path / "wide.npz", X=X, y=y)
    catalogue = load_catalogue(topic_prefix)["features"].name
    _produce(kafka_config, topic_prefix, "features", tmp_path / "wide.npz", "--stream", "big",
             "--algorithm", "saola")
    sizes: list[int] = []
    _exact(reassemble(consume_stream(kafka_config, catalogue, "big", sizes=sizes))["X"], X)
    blocks = sizes[1:-1]
    assert len(blocks) == 3 and MAX_BLOCK_BYTES / 2 < max(blocks) <= MAX_BLOCK_BYTES + 65536

    stock = 1048588  # Kafka's default message.max.bytes
    small = TopicSpec("features", f"{topic_prefix}small", 1, 1, {"max.message.bytes": str(stock)})
    create_topics(kafka_config, {"features": small})
    produce_features(kafka_config, small.name, "small", X, y, "saola")
    sizes = []
    _exact(reassemble(consume_stream(kafka_config, small.name, "small", sizes=sizes))["X"], X)
    assert max(sizes) <= stock and len(sizes) - 2 == 11  # 896 KiB blocks


def test_a_topic_under_a_megabyte_takes_a_stream_in_one_go(kafka_config, topic_prefix):
    """Blocks of 7/8 of a small topic's limit fit it one by one, and so must the producer's
    batches of them: librdkafka batched up to its batch.size (1 MB) and the broker refused
    each batch over the topic's max.message.bytes (MSG_SIZE_TOO_LARGE, nothing published)."""
    from streamfs.topics import TopicSpec

    rng = np.random.default_rng(22)
    X, y = rng.normal(size=(500, 200)), rng.integers(0, 2, 500)  # 800 KB of columns
    limit = 100_000
    small = TopicSpec("features", f"{topic_prefix}under1m", 1, 1,
                      {"max.message.bytes": str(limit)})
    create_topics(kafka_config, {"features": small})
    n = produce_features(kafka_config, small.name, "u", X, y, "saola")
    sizes: list[int] = []
    _exact(reassemble(consume_stream(kafka_config, small.name, "u", sizes=sizes))["X"], X)
    assert n == len(sizes) > 10 and max(sizes) <= limit


def test_a_message_over_16_mib_goes_out_where_topic_and_worker_take_it(kafka_config,
                                                                      topic_prefix,
                                                                      monkeypatch):
    """STREAMFS_MAX_MESSAGE_BYTES goes up to ~1 GB and the check before the open lets through a
    message within it and the topic's limit; the publisher's client refused one over its own
    fixed message.max.bytes (16 MiB) after the open went out (MSG_SIZE_TOO_LARGE, the stream
    left open)."""
    from streamfs.topics import TopicSpec

    limit = 32 * 1024 * 1024
    monkeypatch.setenv("STREAMFS_MAX_MESSAGE_BYTES", str(limit))
    big = TopicSpec("features", f"{topic_prefix}big", 1, 1, {"max.message.bytes": str(limit)})
    create_topics(kafka_config, {"features": big})
    rng = np.random.default_rng(23)
    X, y = rng.normal(size=(1000, 2200)), rng.integers(0, 2, 1000)  # one 17.6 MB group
    produce_features(kafka_config, big.name, "g", X, y, "group-saola",
                     groups=[list(range(2200))])
    sizes: list[int] = []
    _exact(reassemble(consume_stream(kafka_config, big.name, "g", sizes=sizes))["X"], X)
    assert max(sizes) > 16 * 1024 * 1024


def test_rate_limited_replay_is_paced(kafka_config, topic_prefix, read_stream, tmp_path):
    import time

    X, y = sparse_dataset(seed=14, n=60, d=10)
    path = tmp_path / "d.svm"
    write_libsvm(path, X, y)
    topic = load_catalogue(topic_prefix)["instances"].name
    t0 = time.monotonic()
    n = produce_instances(kafka_config, topic, "paced", open_instances(str(path)), None, "ofs",
                          rate=40)
    elapsed = time.monotonic() - t0
    # 60 rows at 40/s with a 1 s burst: at least 0.5 s; one second's rows per message
    assert elapsed >= 0.5 and n == 2 + 2
    got = read_stream(topic, "paced")
    assert [m for m in got["X"].shape] == [60, X.indices.max() + 1]



def test_rate_limited_feature_stream_sends_a_second_of_columns_per_message(kafka_config,
                                                                           topic_prefix):
    import time

    rng = np.random.default_rng(15)
    X, y = rng.normal(size=(30, 50)), rng.integers(0, 2, 30)
    topics = load_catalogue(topic_prefix)
    create_topics(kafka_config, {"features": topics["features"]})
    t0 = time.monotonic()
    n = produce_features(kafka_config, topics["features"].name, "paced-f", X, y, "saola",
                         rate=20)
    elapsed = time.monotonic() - t0
    # was: every column in one message, sent after the wait; now 20 columns a message
    got = consume_stream(kafka_config, topics["features"].name, "paced-f")
    widths = [m["X"].shape[1] for m in got if m["kind"] == "features"]
    assert widths == [20, 20, 10] and n == 2 + 3
    assert elapsed >= 1.0  # 50 columns at 20/s with a 1 s burst
    _exact(reassemble(got)["X"], X)


def test_publisher_connect_then_send(kafka_config, topic_prefix):
    topics = load_catalogue(topic_prefix)
    create_topics(kafka_config, {"features": topics["features"]})
    with StreamPublisher(kafka_config, topics["features"].name) as pub:
        pub.connect()
        pub.send({"stream": "s", "kind": "open", "seq": 0})
        pub.send({"stream": "s", "kind": "close", "seq": 1})
    got = consume_stream(kafka_config, topics["features"].name, "s")
    assert [(m["kind"], m["seq"]) for m in got] == [("open", 0), ("close", 1)]


def test_streams_land_where_kafkas_key_hash_puts_them(kafka_config, topic_prefix):
    """The partition of a stream is that of Kafka's own key hash (murmur2: the Java client's,
    kafkajs', franz-go's), so a producer written with another client sends a stream's later
    messages (a replace, a close) to the partition holding its state. With librdkafka's
    default (CRC-32) a stream published by streamfs and replaced from Java was two streams."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    from ..worker.workload import kafka_partition

    topic = load_catalogue(topic_prefix)["features"].name
    streams = [f"p{i}" for i in range(40)]
    with StreamPublisher(kafka_config, topic) as pub:
        pub.connect()
        for s in streams:
            pub.send({"stream": s, "kind": "open", "seq": 0})
    consumer = Consumer({**kafka_config, "group.id": f"test-{uuid.uuid4().hex}"})
    try:
        parts = consumer.list_topics(topic, timeout=30).topics[topic].partitions
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in parts])
        landed: dict[str, int] = {}
        deadline = time.monotonic() + 60
        while len(landed) < len(streams) and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                landed[msg.key().decode()] = msg.partition()
    finally:
        consumer.close()
    assert landed == {s: kafka_partition(s.encode(), len(parts)) for s in streams}
    assert len(set(landed.values())) > 1  # a hash, not one partition for every key
