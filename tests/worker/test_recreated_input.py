"""An input topic deleted and re-created under a group with committed offsets, against a real
broker. The new topic's offsets start again from 0: read from the old topic's offsets, its
first messages were skipped without a word and the later messages of their streams
dead-lettered as "data before 'open'". Each committed offset now carries its topic's id; a
worker reads a partition whose offsets count in another topic from its beginning, with the
streams' state kept, and a running worker stops when an input topic's id changes."""

from __future__ import annotations

import json
import time

import pytest

from streamfs.client import OutputReader
from streamfs.producers import StreamPublisher, feature_stream_messages
from streamfs.topics import TopicsNotCreated, create_topics, load_catalogue
from streamfs.worker.commit_metadata import changelog_target, committed_topic_id, offset_metadata

from .test_worker_acceptance import _strip, reference_versions, wait_finals
from .workload import StreamCase, feature_data, kafka_partition

pytestmark = pytest.mark.kafka


def _streams_on(partition: int, partitions: int, n: int, prefix: str) -> list[str]:
    """``n`` stream ids that the publisher's partitioner (Kafka's murmur2 of the key) puts on
    ``partition``."""
    names, i = [], 0
    while len(names) < n:
        name = f"{prefix}{i}"
        if kafka_partition(name.encode(), partitions) == partition:
            names.append(name)
        i += 1
    return names


def _case(stream: str, seed: int, columns_per_block: int) -> StreamCase:
    """A SAOLA stream of 150 instances and 48 features."""
    X, y = feature_data(seed)
    msgs = list(feature_stream_messages(stream, X, y, "saola", {},
                                        block_bytes=X.shape[0] * 8 * columns_per_block))
    return StreamCase(stream, "saola", {}, X, y, messages=msgs)


def _publish(kafka_config: dict, topic: str, cases: list[StreamCase]) -> None:
    with StreamPublisher(kafka_config, topic) as pub:
        for case in cases:
            pub.send_all(case.messages)


def _topic_id(kafka_config: dict, topic: str) -> str:
    from confluent_kafka import TopicCollection
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(kafka_config)  # alive until it answers
    return str(admin.describe_topics(TopicCollection([topic]))[topic].result(30).topic_id)


def _recreate(kafka_config: dict, prefix: str) -> str:
    """Delete the features topic and make it again (as `streamfs topics create` does); returns
    the new topic's id."""
    from confluent_kafka.admin import AdminClient

    spec = load_catalogue(prefix)["features"]
    old = _topic_id(kafka_config, spec.name)
    admin = AdminClient(kafka_config)  # alive until it answers
    admin.delete_topics([spec.name])[spec.name].result(30)
    deadline = time.monotonic() + 60
    while True:  # the broker refuses the name, or still has the old topic, while it deletes
        try:
            if create_topics(kafka_config, {"features": spec})[spec.name] == "created":
                break
        except TopicsNotCreated:
            pass
        assert time.monotonic() < deadline, "the features topic was not made again in 60 s"
        time.sleep(0.2)  # polling the broker until the deletion completes
    new = _topic_id(kafka_config, spec.name)
    assert new != old
    return new


def _committed(kafka_config: dict, group: str, topic: str, partitions: int) -> dict:
    """``{partition: (offset, metadata)}`` of the group's committed offsets in ``topic``."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({**kafka_config, "group.id": group})
    try:
        tps = consumer.committed([TopicPartition(topic, p) for p in range(partitions)],
                                 timeout=30)
    finally:
        consumer.close()
    return {tp.partition: (tp.offset, tp.metadata) for tp in tps if tp.offset >= 0}


def _commit(kafka_config: dict, group: str, topic: str, offsets: dict) -> None:
    """Commit ``{partition: (offset, metadata)}`` for the group (no member running)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({**kafka_config, "group.id": group, "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[TopicPartition(topic, p, o, metadata=m)
                                 for p, (o, m) in offsets.items()], asynchronous=False)
    finally:
        consumer.close()


def _high(kafka_config: dict, topic: str, partition: int) -> int:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({**kafka_config, "group.id": "watermarks"})
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=30)[1]
    finally:
        consumer.close()


def _dead_letters(kafka_config: dict, prefix: str) -> list[dict]:
    with OutputReader(kafka_config, load_catalogue(prefix)["dead_letter"].name) as reader:
        return [item[1] for item in reader.messages(to_end=True) if item is not None]


def _assert_finals_exact(kafka_config: dict, prefix: str, cases: list[StreamCase],
                         worker) -> None:
    """Every version of every stream once, in order, equal to the in-process run; none of
    their input dead-lettered."""
    got = wait_finals(kafka_config, prefix, [c.stream for c in cases], timeout=240)
    for case in cases:
        assert [_strip(r) for r in got[case.stream]] == reference_versions(case), (
            case.stream, worker.log_tail(40))
    letters = [d for d in _dead_letters(kafka_config, prefix)
               if d.get("stream") in {c.stream for c in cases}]
    assert letters == [], letters[:3]


def test_offsets_committed_in_the_old_topic_are_not_used_in_the_new_one(
        kafka_config, topic_prefix, start_worker):
    """The silent loss, reproduced: stream ``a`` leaves offset 6 committed on partition P; the
    features topic is deleted and made again, and the new topic holds 18 + 12 messages on P
    before any worker reads it; offset 6 is committed again with the metadata a worker still
    reading from the old offsets commits (a worker paused, or running, across the
    re-creation). Read from offset 6, ``b``'s open and first blocks would be skipped and its
    later messages dead-lettered. The next worker logs one ERROR line and reads P from its
    beginning: every stream of the new topic ends equal to the in-process run, with its
    versions once; ``a``'s result stays as it was."""
    features = load_catalogue(topic_prefix)["features"]
    p = 3
    name_a, name_b, name_c = _streams_on(p, features.partitions, 3, "old")
    (name_d,) = [s for s in _streams_on((p + 1) % features.partitions, features.partitions, 1,
                                        "other")]
    a = _case(name_a, 0, 12)  # open, 4 blocks, close: 6 messages
    new_cases = [_case(name_b, 1, 3), _case(name_c, 2, 4), _case(name_d, 3, 6)]
    assert len(a.messages) == 6 and len(new_cases[0].messages) == 18

    worker = start_worker()
    app_id = worker.env["STREAMFS_APP_ID"]
    old_id = _topic_id(kafka_config, features.name)
    _publish(kafka_config, features.name, [a])
    a_results = wait_finals(kafka_config, topic_prefix, [a.stream])[a.stream]
    worker.stop()
    stale = _committed(kafka_config, app_id, features.name, features.partitions)
    assert list(stale) == [p] and stale[p][0] == 6
    assert committed_topic_id(stale[p][1]) == old_id  # the worker commits the topic's id

    new_id = _recreate(kafka_config, topic_prefix)
    _publish(kafka_config, features.name, new_cases)
    assert _high(kafka_config, features.name, p) >= stale[p][0]  # the case that lost input
    _commit(kafka_config, app_id, features.name, stale)

    worker = start_worker()
    _assert_finals_exact(kafka_config, topic_prefix, new_cases, worker)
    log = worker.log_path.read_text()
    errors = [line for line in log.splitlines() if " ERROR streamfs.worker:" in line]
    assert len(errors) == 1, log
    assert (f"input topic {features.name!r} was deleted and re-created after offsets were "
            f"committed in it (topic id {old_id} then, {new_id} now): partition(s) {p} "
            f"(offset 6) read from the new topic's beginning") in errors[0]
    # the new offsets count in the new topic
    after = _committed(kafka_config, app_id, features.name, features.partitions)
    assert {committed_topic_id(m) for _, m in after.values()} == {new_id}
    with_a = wait_finals(kafka_config, topic_prefix, [a.stream])[a.stream]
    assert with_a == a_results  # nothing more published for the old topic's stream


def test_a_running_worker_stops_when_its_input_topic_is_re_created(kafka_config, topic_prefix,
                                                                   start_worker):
    """The features topic is deleted and made again between two of the worker's topic checks
    (the worker is paused meanwhile, so that no check sees the topic missing: a long session
    timeout keeps its partitions). The worker stops with one line, exit 1, rather than read
    the new topic from the old offsets; the next one reads it from its beginning (the broker
    dropped the group's offsets with the old topic: a warning says so) and every stream of the
    new topic ends equal to the in-process run."""
    features = load_catalogue(topic_prefix)["features"]
    p = 5
    name_a, name_b = _streams_on(p, features.partitions, 2, "run")
    a, b = _case(name_a, 4, 12), _case(name_b, 5, 3)
    worker = start_worker(STREAMFS_SESSION_TIMEOUT="120")
    old_id = _topic_id(kafka_config, features.name)
    _publish(kafka_config, features.name, [a])
    wait_finals(kafka_config, topic_prefix, [a.stream])
    worker.pause()
    try:
        new_id = _recreate(kafka_config, topic_prefix)
    finally:
        worker.resume()
    assert worker.proc.wait(120) == 1, worker.log_tail()
    log = worker.log_path.read_text()
    assert (f"a topic of this worker changed while it ran: {features.name!r} was deleted and "
            f"re-created (topic id {old_id} when its partitions were assigned, {new_id} now). "
            "The worker stops rather than read the new topic from the old topic's offsets"
            ) in log, worker.log_tail()
    assert "Traceback" not in log

    _publish(kafka_config, features.name, [b])
    worker = start_worker()
    _assert_finals_exact(kafka_config, topic_prefix, [b], worker)
    assert (f"input partition {features.name}:{p} has no committed offset but its changelog "
            "holds 1 stream(s)") in worker.log_path.read_text()


def test_offsets_committed_without_a_topic_id_are_used_as_before(kafka_config, topic_prefix,
                                                                 start_worker):
    """Offsets committed by a worker from before topic ids (metadata with the changelog end
    only): the next worker goes on from them, as it did, and its own commits carry the id."""
    from sklearn.datasets import load_breast_cancer

    from streamfs.algorithms.saola import SAOLA
    from streamfs.client import SelectionReader

    features = load_catalogue(topic_prefix)["features"]
    X, y = load_breast_cancer(return_X_y=True)
    msgs = list(feature_stream_messages("legacy", X, y, "saola", {},
                                        block_bytes=X.shape[0] * 8 * 2))
    half = len(msgs) // 2
    worker = start_worker()
    app_id = worker.env["STREAMFS_APP_ID"]
    with StreamPublisher(kafka_config, features.name) as pub:
        pub.send_all(msgs[:half])
    with SelectionReader(kafka_config, load_catalogue(topic_prefix)["selected"].name) as reader:
        for result in reader.updates("legacy", timeout=120):
            if result["seq"] == half - 1:
                break
    worker.stop()
    committed = _committed(kafka_config, app_id, features.name, features.partitions)
    (p,) = committed
    offset, metadata = committed[p]
    assert offset == half and committed_topic_id(metadata) is not None
    legacy = offset_metadata(changelog_target(metadata))
    assert json.loads(legacy) == {"changelog_end": changelog_target(metadata)}
    _commit(kafka_config, app_id, features.name, {p: (offset, legacy)})

    worker = start_worker()
    with StreamPublisher(kafka_config, features.name) as pub:
        pub.send_all(msgs[half:])
    with SelectionReader(kafka_config, load_catalogue(topic_prefix)["selected"].name) as reader:
        results = list(reader.updates("legacy", until_final=True, timeout=180))
    final = results[-1]
    assert [s["feature"] for s in final["selection"]] == SAOLA().fit(X, y).selected_.tolist()
    assert [r["version"] for r in results] == list(range(1, final["version"] + 1))
    log = worker.log_path.read_text()
    assert "re-created" not in log and "no committed offset" not in log, worker.log_tail()
    # read on from the committed offset: the first half was not read (nor skipped) again
    assert _skipped_messages(worker) == 0
    after = _committed(kafka_config, app_id, features.name, features.partitions)
    assert committed_topic_id(after[p][1]) == _topic_id(kafka_config, features.name)


def _skipped_messages(worker) -> float:
    """The worker's count of input messages skipped as already applied (``/metrics``)."""
    from urllib.request import urlopen

    port = worker.env["STREAMFS_WEB_PORT"]
    text = urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("streamfs_messages_total{") and 'outcome="skipped"' in line)
