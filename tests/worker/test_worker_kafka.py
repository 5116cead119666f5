"""The worker against a real Apache Kafka broker."""

from __future__ import annotations

import time

import pytest
from sklearn.datasets import load_breast_cancer

from streamfs.client import SelectionReader
from streamfs.codec import decode
from streamfs.producers import StreamPublisher, feature_stream_messages

pytestmark = pytest.mark.kafka


def _topics(prefix):
    from streamfs.topics import load_catalogue

    return load_catalogue(prefix)


def _first_half_applied(kafka_config, topics, stream, start_worker, seq):
    """A worker that has applied block ``seq(half)`` of the first half of a SAOLA stream of
    the breast-cancer data, in blocks of two columns (synchronised on the worker's output, not
    on time); returns the worker, every message of the stream and ``half``."""
    X, y = _dataset()
    msgs = list(feature_stream_messages(stream, X, y, "saola", {},
                                        block_bytes=X.shape[0] * 8 * 2))
    half = len(msgs) // 2
    worker = start_worker()
    with StreamPublisher(kafka_config, topics["features"].name) as pub:
        pub.send_all(msgs[:half])
    with SelectionReader(kafka_config, topics["selected"].name) as reader:
        for result in reader.updates(stream, timeout=120):
            if result["seq"] >= seq(half):
                break
    return worker, msgs, half


def _dataset():
    # the same 569 x 30 data as lofs_wdbc, bundled with scikit-learn: never skipped
    return load_breast_cancer(return_X_y=True)


def test_feature_stream_through_broker_equals_offline_saola(kafka_config, topic_prefix, start_worker):
    from streamfs.algorithms.saola import SAOLA

    X, y = _dataset()
    topics = _topics(topic_prefix)
    worker = start_worker()
    msgs = list(feature_stream_messages("wdbc", X, y, "saola", {"alpha": 0.01},
                                        block_bytes=X.shape[0] * 8 * 4))
    with StreamPublisher(kafka_config, topics["features"].name) as pub:
        pub.send_all(msgs)
    with SelectionReader(kafka_config, topics["selected"].name) as reader:
        try:
            results = list(reader.updates("wdbc", until_final=True, timeout=180))
        except TimeoutError:
            pytest.fail(f"no final result; worker log:\n{worker.log_tail()}")
    final = results[-1]
    expected = SAOLA(alpha=0.01).fit(X, y).selected_.tolist()
    assert final["final"] and [s["feature"] for s in final["selection"]] == expected
    assert [r["version"] for r in results] == list(range(1, len(results) + 1))


def test_sigkill_halfway_then_restart_reaches_same_selection(kafka_config, topic_prefix, start_worker):
    from streamfs.algorithms.saola import SAOLA

    X, y = _dataset()
    topics = _topics(topic_prefix)
    # kill once the worker has applied a block from the first half, then send the rest while
    # it is down
    worker, msgs, half = _first_half_applied(kafka_config, topics, "wdbc-crash", start_worker,
                                             lambda half: half // 2)
    worker.kill()
    with StreamPublisher(kafka_config, topics["features"].name) as pub:
        pub.send_all(msgs[half:])
    start_worker()
    with SelectionReader(kafka_config, topics["selected"].name) as reader:
        results = list(reader.updates("wdbc-crash", until_final=True, timeout=180))
    final = results[-1]
    assert [s["feature"] for s in final["selection"]] == SAOLA().fit(X, y).selected_.tolist()
    # Exactly once: every version appears once, in order (read_committed).
    assert [r["version"] for r in results] == list(range(1, final["version"] + 1))


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGHUP"])
def test_a_stop_signal_halfway_stops_cleanly_and_a_restart_goes_on(kafka_config, topic_prefix,
                                                                    start_worker, signame):
    """SIGTERM (a supervisor) and SIGHUP (the terminal or ssh session of a worker run by hand
    closed; it ended the worker at once, exit 129, its batch uncommitted) stop it after the
    batch in progress: exit 0, and the next worker goes on where it stopped."""
    import signal

    from streamfs.algorithms.saola import SAOLA

    X, y = _dataset()
    topics = _topics(topic_prefix)
    stream = f"wdbc-{signame.lower()}"
    worker, msgs, half = _first_half_applied(kafka_config, topics, stream, start_worker,
                                             lambda half: half // 2)
    worker.proc.send_signal(getattr(signal, signame))
    assert worker.proc.wait(60) == 0, worker.log_tail()
    log = worker.log_path.read_text()
    assert f"{signame}: stopping once the batch in progress is committed" in log
    assert log.rstrip().endswith("INFO streamfs.worker: worker stopped"), worker.log_tail()
    with StreamPublisher(kafka_config, topics["features"].name) as pub:
        pub.send_all(msgs[half:])
    start_worker()
    with SelectionReader(kafka_config, topics["selected"].name) as reader:
        results = list(reader.updates(stream, until_final=True, timeout=180))
    assert [s["feature"] for s in results[-1]["selection"]] == SAOLA().fit(X, y).selected_.tolist()
    assert [r["version"] for r in results] == list(range(1, results[-1]["version"] + 1))


def test_invalid_message_goes_to_dead_letter_and_worker_goes_on(kafka_config, topic_prefix,
                                                                 start_worker):
    from confluent_kafka import Consumer, TopicPartition

    X, y = _dataset()
    topics = _topics(topic_prefix)
    start_worker()
    with StreamPublisher(kafka_config, topics["features"].name) as pub:
        pub.send_raw(b"junk", b"\x00not msgpack")
        pub.send_all(feature_stream_messages("ok", X, y, "saola", {}))
    with SelectionReader(kafka_config, topics["selected"].name) as reader:
        final = list(reader.updates("ok", until_final=True, timeout=180))[-1]
    assert final["final"]
    consumer = Consumer({**kafka_config, "group.id": "dlq-check", "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(topics["dead_letter"].name, 0, 0)])
    msg = None
    for _ in range(60):
        msg = consumer.poll(1.0)
        if msg is not None and not msg.error():
            break
    consumer.close()
    assert msg is not None and not msg.error()
    letter = decode(msg.value())
    assert "undecodable" in letter["reason"] and letter["original"] == b"\x00not msgpack"


def test_an_algorithm_s_warning_in_the_worker_log_names_its_stream(kafka_config, topic_prefix,
                                                                    start_worker):
    """It was `WARNING streamfs: SAOLA(test='fisher_z') correlates ...`, for the first such
    stream only."""
    from sklearn.datasets import load_wine

    X, y = load_wine(return_X_y=True)  # three classes: SAOLA's Fisher z warns
    topics = _topics(topic_prefix)
    worker = start_worker()
    with StreamPublisher(kafka_config, topics["features"].name) as pub:
        for stream in ("wine1", "wine2"):
            pub.send_all(feature_stream_messages(stream, X, y, "saola", {}))
    with SelectionReader(kafka_config, topics["selected"].name) as reader:
        for stream in ("wine1", "wine2"):  # the warning is logged before the result is out
            assert list(reader.updates(stream, until_final=True, timeout=180))[-1]["final"]
    lines = sorted(line.split("] ", 1)[-1] for line in worker.log_path.read_text().splitlines()
                   if "correlates the features" in line)  # the streams' partitions: any order
    assert lines == [f"WARNING streamfs.worker: stream '{stream}' (saola): SAOLA(test='fisher_z') "
                     "correlates the features with the class as a number (as the authors' "
                     "implementation does): with 3 classes the selection depends on how they "
                     "are coded; test='mi' treats them as categories"
                     for stream in ("wine1", "wine2")], worker.log_tail()
    # its first line says what it runs with, before a first start's minutes of compiling
    first = worker.log_path.read_text().splitlines()[0].split("] ", 1)[-1]
    assert first.startswith("INFO streamfs.worker: streamfs ") and (
        f"Kafka at {kafka_config['bootstrap.servers']}, topics {topic_prefix}*, group " in first
        and "/health and /metrics on 127.0.0.1:" in first), first


def test_partitions_with_input_waiting_are_assigned_first(kafka_config, topic_prefix, tmp_path):
    """librdkafka sends its first fetch once the first assigned partition reaches the broker's
    thread; a fetch of empty partitions only returns after fetch.wait.max.ms."""
    from confluent_kafka import KafkaError, KafkaException, Producer, TopicPartition

    from streamfs.settings import Settings
    from streamfs.worker import app, startup

    spec = _topics(topic_prefix)["features"]
    features = spec.name
    producer = Producer(kafka_config)
    for partition, count in ((3, 1), (5, 3)):
        for _ in range(count):
            producer.produce(features, b"x", partition=partition)
    assert producer.flush(30) == 0
    settings = Settings(bootstrap_servers=kafka_config["bootstrap.servers"],
                        topic_prefix=topic_prefix, app_id="app-order",
                        data_dir=str(tmp_path / "data"))
    startup.prepare_topics(settings)  # the changelogs the restore reads
    worker = app.Worker(settings)
    deadline = time.monotonic() + 60
    try:
        while True:  # a young broker's group coordinator may still be loading
            try:
                order = worker._restore_committed(
                    [TopicPartition(features, p) for p in range(spec.partitions)])
                break
            except KafkaException as exc:
                if exc.args[0].code() != KafkaError.NOT_COORDINATOR or time.monotonic() > deadline:
                    raise
                time.sleep(0.1)  # polling the broker until its coordinator answers
    finally:
        worker.consumer.close()
    assert [(tp.partition, tp.offset) for tp in order[:2]] == [(5, 0), (3, 0)]
    assert sorted(tp.partition for tp in order) == list(range(spec.partitions))


def test_the_worker_creates_its_topics_with_min_insync_replicas(kafka_config, tmp_path):
    """Catalogue topics and changelogs get min.insync.replicas = min(2, replication factor)
    on the topic itself, not the broker's default (one broker here: 1)."""
    import uuid

    from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, ResourceType

    from streamfs.settings import Settings
    from streamfs.worker import startup

    prefix = f"t{uuid.uuid4().hex[:10]}."
    settings = Settings(bootstrap_servers=kafka_config["bootstrap.servers"], topic_prefix=prefix,
                        app_id=f"app-{uuid.uuid4().hex[:8]}", data_dir=str(tmp_path))
    startup.prepare_topics(settings)
    names = [s.name for s in _topics(prefix).values()] + [
        f"{settings.app_id}-{role}-streams-changelog" for role in ("features", "instances")]
    admin = AdminClient(kafka_config)
    futures = admin.describe_configs([ConfigResource(ResourceType.TOPIC, n) for n in names])
    entries = {r.name: f.result()["min.insync.replicas"] for r, f in futures.items()}
    assert {n: (e.value, e.source) for n, e in entries.items()} == {
        n: ("1", ConfigSource.DYNAMIC_TOPIC_CONFIG.value) for n in names}


@pytest.mark.parametrize("role", ["selected", "features", "changelog", "dead_letter"])
def test_topic_deleted_mid_run_stops_the_worker_with_one_line(kafka_config, topic_prefix,
                                                              start_worker, role):
    """An operator deletes a topic the worker writes (results, state) or reads (input) while
    it runs. The worker must not let the broker make it again with its defaults (one
    partition; for a changelog, not compacted): it stops, exit 1, one line naming the topic.
    After `topics create` a new worker goes on from the last committed batch: the final
    selection equals the offline one."""
    from confluent_kafka.admin import AdminClient

    from streamfs.algorithms.saola import SAOLA
    from streamfs.topics import create_topics, load_catalogue

    X, y = _dataset()
    topics = _topics(topic_prefix)
    worker, msgs, half = _first_half_applied(kafka_config, topics, "gone", start_worker,
                                             lambda half: half - 1)
    gone = (f"{worker.env['STREAMFS_APP_ID']}-features-streams-changelog" if role == "changelog"
            else topics[role].name)
    admin = AdminClient(kafka_config)
    admin.delete_topics([gone])[gone].result(30)
    if role != "features":  # the next results and state records fail their transaction
        with StreamPublisher(kafka_config, topics["features"].name) as pub:
            if role == "dead_letter":  # undecodable: the dead letter fails its transaction
                pub.send_raw(b"gone", b"\xc1 not msgpack")
            pub.send_all(msgs[half:])
    assert worker.proc.wait(120) == 1, worker.log_tail()
    log = worker.log_path.read_text()
    # said by the topic check, or, for the input, by the assignment that follows the
    # consumer's noticing (its metadata is refreshed every 5 s): whichever comes first
    said = (f"a topic of this worker changed while it ran: {gone!r} does not exist",
            f"input topic {gone!r} does not exist: run `streamfs topics create`")
    assert any(line in log for line in said[:1 + (role == "features")]), log[-3000:]
    assert "Traceback" not in log
    assert gone not in admin.list_topics(timeout=30).topics  # not made again by the broker
    if role != "selected":
        return  # the input, or the streams' state, went with its topic
    create_topics(kafka_config, load_catalogue(topic_prefix))
    start_worker()
    with SelectionReader(kafka_config, topics["selected"].name) as reader:
        results = list(reader.updates("gone", until_final=True, timeout=180))
    final = results[-1]
    assert [s["feature"] for s in final["selection"]] == SAOLA().fit(X, y).selected_.tolist()
    assert [r["version"] for r in results] == list(range(results[0]["version"],
                                                         final["version"] + 1))


def _dead_letters(kafka_config, topic, streams, timeout=60):
    """The dead letters (read_committed) of each of ``streams``, once every one has some."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({**kafka_config, "group.id": "dlq-check", "auto.offset.reset": "earliest",
                         "isolation.level": "read_committed", "enable.auto.commit": False,
                         "fetch.max.bytes": 64 << 20, "max.partition.fetch.bytes": 16 << 20})
    consumer.assign([TopicPartition(topic, 0, 0)])
    letters: dict[str, list] = {s: [] for s in streams}
    deadline = time.monotonic() + timeout
    try:
        while not all(letters.values()) and time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is not None and not msg.error():
                letter = decode(msg.value())
                letters.setdefault(letter["stream"], []).append((len(msg.value()), letter))
    finally:
        consumer.close()
    return letters


def test_records_the_worker_cannot_write_whole_are_dead_lettered_and_it_goes_on(
        kafka_config, topic_prefix, start_worker):
    # An operator's audit (session 49) found that the dead letter of a record within ~300
    # bytes of the topics' limit was larger than the dead-letter topic takes: its transaction
    # failed and was replayed for ever, and no partition made progress. An 'open' continuing
    # from run 2^64 - 1 made the worker exit 70, again after every restart.
    from streamfs.codec import encode
    from streamfs.settings import Settings

    X, y = _dataset()
    topics = _topics(topic_prefix)
    worker = start_worker()
    limit = Settings().max_message_bytes
    huge = b"\xc1" + bytes(limit - 300)
    opening = next(feature_stream_messages("cf", X, y, "saola", {}))
    with StreamPublisher(kafka_config, topics["features"].name) as pub:
        pub.send_raw(b"huge", huge)
        pub.send_raw(b"cf", encode(dict(opening, continue_from={"run": 2**64 - 1, "version": 0})))
        pub.send_all(feature_stream_messages("ok", X, y, "saola", {}))
    with SelectionReader(kafka_config, topics["selected"].name) as reader:
        try:
            final = list(reader.updates("ok", until_final=True, timeout=180))[-1]
        except TimeoutError:
            pytest.fail(f"no final result; worker log:\n{worker.log_tail()}")
    assert final["final"] and worker.proc.poll() is None
    letters = _dead_letters(kafka_config, topics["dead_letter"].name, ["huge", "cf"])
    [(size, letter)] = letters["huge"]
    assert size <= limit and letter["original_truncated"] and letter["original"] == huge[:1024]
    assert "must be an integer from 0 to 2^53 - 1" in letters["cf"][0][1]["reason"]


def test_a_result_over_the_worker_s_limit_refuses_its_message_and_the_stream_goes_on(
        kafka_config, topic_prefix, start_worker):
    import numpy as np

    from streamfs.producers import instance_stream_messages

    rng = np.random.default_rng(7)
    X, y = rng.normal(size=(40, 6000)), rng.integers(0, 2, 40)
    topics = _topics(topic_prefix)
    worker = start_worker(STREAMFS_MAX_MESSAGE_BYTES="200000")
    wide = list(instance_stream_messages("wide", X, y, "ofs", {"n_features_to_select": 6000},
                                         block_bytes=100_000))
    narrow = list(instance_stream_messages("narrow", X, y, "ofs", {"n_features_to_select": 5},
                                           block_bytes=100_000))
    with StreamPublisher(kafka_config, topics["instances"].name) as pub:
        pub.send_all(wide + narrow)
    with SelectionReader(kafka_config, topics["selected"].name) as reader:
        try:
            narrow_final = list(reader.updates("narrow", until_final=True, timeout=180))[-1]
            wide_results = list(reader.updates("wide", until_final=True, timeout=60))
        except TimeoutError:
            pytest.fail(f"no final result; worker log:\n{worker.log_tail()}")
    assert len(narrow_final["selection"]) == 5
    # every block of "wide" would have published 6,000 features (about 300 KB): refused,
    # and the close of a stream that learnt nothing is its one result
    assert [r["version"] for r in wide_results] == [1] and wide_results[0]["selection"] == []
    assert wide_results[0]["counters"]["rejected_messages"] == len(wide) - 2
    letters = _dead_letters(kafka_config, topics["dead_letter"].name, ["wide"])["wide"]
    assert "the result of this message would be" in letters[0][1]["reason"]
    assert worker.proc.poll() is None


def test_an_instance_stream_under_a_feature_stream_s_id_is_refused(kafka_config, topic_prefix,
                                                                    start_worker):
    """The two input topics' streams were each a processor's own: one id as both was accepted
    twice, and their results mixed under one key (a feature stream's watch ended on the
    instance stream's final)."""
    from streamfs.client import OutputReader, current_selection
    from streamfs.producers import instance_stream_messages

    X, y = _dataset()
    topics = _topics(topic_prefix)
    start_worker()
    with StreamPublisher(kafka_config, topics["features"].name) as pub:
        pub.send_all(feature_stream_messages("both", X, y, "saola", {}))
    with SelectionReader(kafka_config, topics["selected"].name) as reader:
        final = list(reader.updates("both", until_final=True, timeout=180))[-1]
    with StreamPublisher(kafka_config, topics["instances"].name) as pub:
        pub.send_all(instance_stream_messages("both", X, y, "ofs", {"n_features_to_select": 5}))
    letters = []
    with OutputReader(kafka_config, topics["dead_letter"].name) as reader:
        for item in reader.messages(timeout=120):
            if item is not None and item[1].get("stream") == "both":
                letters.append(item[1])
                if item[1]["offset"] > 0:  # the 'open', then its blocks: all refused
                    break
    assert letters[0]["reason"].startswith("stream id 'both' is a feature stream's on this "
                                           "deployment")
    # of no run: not the feature stream's (whose watcher would take it as its own refusal)
    assert letters[0]["run"] is None and letters[0]["run_refused"]
    latest = current_selection("both", kafka_config, topics["selected"].name)
    assert latest["algorithm"] == "saola" and latest["version"] == final["version"]
