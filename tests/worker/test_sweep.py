"""Closed streams past their retention (and, opted in, open streams without input past
STREAMFS_OPEN_IDLE_TIMEOUT) are dropped when the sweep is due, also on a worker whose input
never pauses; the sweep's transaction is fenced as a batch's is (a fenced worker's
sweep commits nothing) and commits the input offsets unchanged, with the changelog end moved
past its tombstones. Real broker; the worker runs in this process so that the sweep's
interval can be shortened."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from contextlib import contextmanager
from typing import Any, Callable, Iterator

import numpy as np
import pytest
from prometheus_client import REGISTRY

from streamfs.producers import StreamPublisher
from streamfs.topics import load_catalogue
from tests.worker.inprocess import saola_stream, take_instance_id, worker_thread

pytestmark = pytest.mark.kafka


class _Dropped(logging.Handler):
    """Sets ``event`` when the worker logs that it dropped closed streams."""

    def __init__(self) -> None:
        super().__init__()
        self.event = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if "closed streams past the retention" in record.getMessage():
            self.event.set()


def test_closed_streams_are_swept_while_input_keeps_coming(kafka_config, topic_prefix, tmp_path,
                                                           monkeypatch, caplog):
    from streamfs.worker import app

    monkeypatch.setattr(app, "SWEEP_SECONDS", 0.5)
    closed = saola_stream("swept", seed=1, p=5)
    busy = saola_stream("busy", seed=2, p=5)[:1]  # its open: blocks follow below, no close
    dropped = _Dropped()
    caplog.set_level(logging.INFO, logger="streamfs.worker")
    logging.getLogger("streamfs.worker").addHandler(dropped)
    rng = np.random.default_rng(0)
    stop = threading.Event()

    def trickle(topic: str) -> None:
        # a block every 20 ms: with a batch time of 5 s the worker's wait for input never
        # times out, so it is never idle
        with StreamPublisher(kafka_config, topic) as pub:
            seq = 1
            while not stop.is_set():
                pub.send_all([{"kind": "features", "stream": "busy", "seq": seq,
                               "run": busy[0]["run"], "X": rng.normal(size=(200, 1))}])
                seq += 1
                stop.wait(0.02)

    try:
        with worker_thread(kafka_config, topic_prefix, tmp_path / "data", closed + busy,
                           closed_retention=0.0, batch_ms=5_000.0) as topics:
            sender = threading.Thread(target=trickle, args=(topics["features"].name,))
            sender.start()
            try:
                assert dropped.event.wait(60), "no sweep while the input kept coming"
            finally:
                stop.set()
                sender.join(30)
    finally:
        logging.getLogger("streamfs.worker").removeHandler(dropped)


def _holds_a_closed_stream(worker) -> bool:
    """Whether a store of ``worker`` holds the header of a closed stream (so the batch that
    closed it has committed: the loop settles before it sweeps)."""
    from streamfs.codec import unpackb
    from streamfs.worker.state_records import SEP

    return any(key.endswith(f"{SEP}h") and unpackb(value).get("status") == "closed"
               for state in worker.partitions.values() for key, value in state.store.items())


def _one_sweep(monkeypatch, around: Callable[[Any, Callable[[], None]], None]) -> threading.Event:
    """Sweep often, but run the worker's real sweep once only, as soon as a closed stream's
    header is in a store, through ``around(worker, sweep)``; the event is set once it ran."""
    from streamfs.worker import app

    real = app.Worker._sweep
    done = threading.Event()

    def sweep(self, retention: float, idle_timeout: float) -> None:
        if done.is_set() or not _holds_a_closed_stream(self):
            return
        try:
            around(self, lambda: real(self, retention, idle_timeout))
        finally:
            done.set()

    monkeypatch.setattr(app, "SWEEP_SECONDS", 0.2)
    monkeypatch.setattr(app.Worker, "_sweep", sweep)
    return done


@contextmanager
def _running(kafka_config, topic_prefix, data_dir, messages: list[dict],
             **settings: Any) -> Iterator[tuple[Any, list[BaseException], threading.Thread]]:
    """Publish ``messages`` to the features topic, then run a worker (closed streams past
    their retention at once, unless ``settings`` say otherwise) on a thread; yields it, what
    ``run`` raised, and the thread."""
    from streamfs.settings import Settings
    from streamfs.worker import app, startup

    conf = Settings(bootstrap_servers=kafka_config["bootstrap.servers"],
                    topic_prefix=topic_prefix, app_id=f"app-{uuid.uuid4().hex[:8]}",
                    data_dir=str(data_dir), session_timeout=10.0,
                    **{"closed_retention": 0.0, **settings})
    startup.warm_up()
    startup.prepare_topics(conf)
    with StreamPublisher(kafka_config, load_catalogue(topic_prefix)["features"].name) as pub:
        pub.send_all(messages)
    worker = app.Worker(conf)
    outcome: list[BaseException] = []

    def run() -> None:
        try:
            worker.run()
        except BaseException as exc:  # noqa: BLE001 - the test looks at it
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield worker, outcome, thread
    finally:
        worker.running = False
        thread.join(120)
    assert not thread.is_alive(), "the worker did not stop within 120 s"


def _changelog_records(kafka_config, topic: str, committed: bool) -> list[tuple[int, int, str,
                                                                              bytes | None]]:
    """Every record of ``topic`` as (partition, offset, key, value), read with read_committed
    (``committed``) or read_uncommitted, once no transaction is open on it (its stable end
    has reached its end: the commit or abort markers of the last one are written)."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    def reader(isolation: str) -> Any:
        return Consumer({**kafka_config, "group.id": f"check-{uuid.uuid4().hex[:8]}",
                         "enable.auto.commit": False, "isolation.level": isolation,
                         "enable.partition.eof": True})

    stable, raw = reader("read_committed"), reader("read_uncommitted")
    try:
        parts = [TopicPartition(topic, p)
                 for p in stable.list_topics(topic, timeout=30).topics[topic].partitions]
        deadline = time.monotonic() + 60
        while any(stable.get_watermark_offsets(tp, timeout=30)[1]
                  != raw.get_watermark_offsets(tp, timeout=30)[1] for tp in parts):
            assert time.monotonic() < deadline, f"a transaction stays open on {topic}"
            time.sleep(0.1)  # polling the broker for the markers
        consumer = stable if committed else raw
        consumer.assign([TopicPartition(topic, tp.partition, OFFSET_BEGINNING) for tp in parts])
        pending, records = {tp.partition for tp in parts}, []
        while pending:
            assert time.monotonic() < deadline, f"{topic} not read to its end"
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            if msg.error() is not None:
                assert msg.error().code() == KafkaError._PARTITION_EOF, msg.error()
                pending.discard(msg.partition())
                continue
            records.append((msg.partition(), msg.offset(), msg.key().decode(), msg.value()))
        return records
    finally:
        stable.close()
        raw.close()


def test_a_fenced_worker_s_sweep_commits_no_tombstone(kafka_config, topic_prefix, tmp_path,
                                                      monkeypatch):
    """Another member takes the worker's instance id just before a sweep that drops a closed
    stream's header (its first turn after being fenced is a sweep turn). The sweep's
    transaction sends the input offsets with the worker's stale membership: the broker
    refuses them, the tombstone is aborted, and the worker stops as a fenced worker stops
    (:class:`InstanceFenced`, no rewind). Before the sweep sent offsets, its tombstone was
    committed behind the new member's back."""
    from streamfs.worker import app
    from streamfs.worker.state_records import header_key

    rivals: list = []

    def fenced_first(worker, sweep) -> None:
        rivals.append(take_instance_id(kafka_config, worker))
        sweep()

    swept = _one_sweep(monkeypatch, fenced_first)
    aborts = REGISTRY.get_sample_value("streamfs_transaction_aborts_total") or 0.0
    rewinds = REGISTRY.get_sample_value("streamfs_rewinds_total") or 0.0
    try:
        with _running(kafka_config, topic_prefix, tmp_path / "data",
                      saola_stream("swept", seed=1, p=5), instance_id="w0") as (
                worker, outcome, thread):
            thread.join(120)
            assert not thread.is_alive(), "the fenced worker did not stop within 120 s"
    finally:
        for rival in rivals:
            rival.close()
    assert swept.is_set() and len(rivals) == 1, "no sweep ran"
    assert len(outcome) == 1 and isinstance(outcome[0], app.InstanceFenced), outcome
    changelog, key = worker.changelog["features"], header_key("swept")
    produced = [r for r in _changelog_records(kafka_config, changelog, committed=False)
                if r[2] == key]
    assert produced[-1][3] is None, produced  # the sweep got as far as its tombstone
    visible = [r for r in _changelog_records(kafka_config, changelog, committed=True)
               if r[2] == key]
    assert visible and all(value is not None for *_, value in visible), visible
    assert (REGISTRY.get_sample_value("streamfs_transaction_aborts_total") or 0.0) == aborts + 1
    assert (REGISTRY.get_sample_value("streamfs_rewinds_total") or 0.0) == rewinds


def test_a_sweep_commits_the_same_offsets_with_the_changelog_end_past_its_tombstones(
        kafka_config, topic_prefix, tmp_path, monkeypatch):
    """The sweep's offsets are those last committed, unchanged (no input skipped or read
    again); only the changelog end in the swept partition's metadata moves, past the
    tombstone, so that the next owner's restore reads on to it."""
    from confluent_kafka import Consumer, TopicPartition

    from streamfs.worker.commit_metadata import changelog_target, committed_topic_id
    from streamfs.worker.state_records import SEP, header_key

    features = load_catalogue(topic_prefix)["features"]
    seen: dict[str, Any] = {}

    def committed(app_id: str) -> dict[int, tuple[int, str | None]]:
        group = Consumer({**kafka_config, "group.id": app_id})
        try:
            return {tp.partition: (tp.offset, tp.metadata) for tp in group.committed(
                [TopicPartition(features.name, p) for p in range(features.partitions)],
                timeout=30)}
        finally:
            group.close()

    def around(worker, sweep) -> None:
        seen["before"] = committed(worker.settings.app_id)
        sweep()
        seen["after"] = committed(worker.settings.app_id)
        seen["headers"] = [k for state in worker.partitions.values() for k in state.store
                           if k.endswith(f"{SEP}h")]

    swept = _one_sweep(monkeypatch, around)
    msgs = saola_stream("swept", seed=1, p=5)
    with _running(kafka_config, topic_prefix, tmp_path / "data", msgs) as (worker, outcome, _):
        assert swept.wait(120), "no sweep ran"
    assert not outcome, outcome
    assert "after" in seen, seen  # the sweep returned
    before, after = seen["before"], seen["after"]
    (p,) = [p for p, (offset, _) in before.items() if offset >= 0]  # one stream, one partition
    assert before[p][0] == len(msgs)  # everything applied and committed before the sweep
    assert {q: o for q, (o, _) in after.items()} == {q: o for q, (o, _) in before.items()}
    assert {q: m for q, (_, m) in after.items() if q != p} == {
        q: m for q, (_, m) in before.items() if q != p}
    assert committed_topic_id(after[p][1]) == committed_topic_id(before[p][1]) is not None
    records = _changelog_records(kafka_config, worker.changelog["features"], committed=True)
    (tombstone,) = [r for r in records if r[2] == header_key("swept") and r[3] is None]
    assert tombstone[0] == p
    assert changelog_target(before[p][1]) < tombstone[1]
    assert changelog_target(after[p][1]) == tombstone[1] + 1
    assert seen["headers"] == []  # and the store lost it with the commit


def test_an_abandoned_stream_is_dropped_at_the_idle_timeout_and_its_watcher_told(
        kafka_config, topic_prefix, tmp_path, monkeypatch):
    """A stream whose producer stopped before its close: at STREAMFS_OPEN_IDLE_TIMEOUT the
    worker commits tombstones for its columns and state (the committed changelog keeps its
    closed header only), a dead letter of its run ends a reader waiting for its final result,
    the producer's late close is refused with the reason, and a replace runs to a final
    result equal to the in-process one. A closed stream beside it is left alone."""
    from streamfs.client import OutputReader, SelectionReader, StreamRejected
    from streamfs.codec import unpackb
    from streamfs.producers import feature_stream_messages
    from streamfs.worker import app
    from streamfs.worker.state_records import header_key
    from tests.worker.inprocess import one_at_a_time

    monkeypatch.setattr(app, "SWEEP_SECONDS", 0.5)
    gone, done = saola_stream("gone", seed=1, p=10), saola_stream("done", seed=2, p=5)
    dropped = REGISTRY.get_sample_value("streamfs_idle_streams_dropped_total") or 0.0
    topics = load_catalogue(topic_prefix)
    with _running(kafka_config, topic_prefix, tmp_path / "data", gone[:-1] + done,
                  closed_retention=3600.0, open_idle_timeout=2.0) as (worker, outcome, _):
        with SelectionReader(kafka_config, topics["selected"].name,
                             dead_letters=topics["dead_letter"].name) as reader:
            with pytest.raises(StreamRejected, match="'gone' .run 1. was dropped by the worker.*no input for"):
                for _ in reader.updates("gone", until_final=True, timeout=120):
                    pass
        records = _changelog_records(kafka_config, worker.changelog["features"], committed=True)
        replayed: dict[str, bytes] = {}
        for _, _, key, value in records:
            if value is None:
                replayed.pop(key, None)
            else:
                replayed[key] = value
        assert [k for k in replayed if k.startswith("gone")] == [header_key("gone")]
        assert unpackb(replayed[header_key("gone")])["expired_after"] >= 2.0
        done_keys = [k for k in replayed if k.startswith("done")]
        assert done_keys == [header_key("done")]  # closed: its header, kept for the retention
        with StreamPublisher(kafka_config, topics["features"].name) as pub:
            pub.send_all(gone[-1:])  # the gone producer's close, late
        letters = []
        with OutputReader(kafka_config, topics["dead_letter"].name,
                          kinds=("dead_letter",)) as dead:
            for item in dead.messages(timeout=120):
                if item is not None and item[1].get("stream") == "gone":
                    letters.append(item[1])
                if len(letters) == 2:
                    break
        assert "STREAMFS_OPEN_IDLE_TIMEOUT" in letters[0]["reason"]
        assert letters[0].get("topic") is None and letters[0]["run"] == 1
        assert "'close' (seq" in letters[1]["reason"] and "is refused" in letters[1]["reason"]
        rng = np.random.default_rng(3)
        y = rng.integers(0, 2, 200)
        X = rng.normal(size=(200, 10)) + 0.8 * y[:, None] * (np.arange(10) % 3 == 0)
        again = list(feature_stream_messages("gone", X, y, "saola", {}, replace=True,
                                             block_bytes=200 * 8 * 5))
        with StreamPublisher(kafka_config, topics["features"].name) as pub:
            pub.send_all(again)
        with SelectionReader(kafka_config, topics["selected"].name) as reader:
            final = [r for r in reader.updates("gone", run=2, until_final=True, timeout=120)][-1]
    assert not outcome, outcome
    assert REGISTRY.get_sample_value("streamfs_idle_streams_dropped_total") == dropped + 1
    expected, _ = one_at_a_time(again)
    assert final["final"] and final["selection"] == expected[-1]["selection"]
