"""What /health says of input that waits: the worker's lag against a real broker."""

from __future__ import annotations

import threading
import time
import uuid

import pytest
from prometheus_client import REGISTRY

from streamfs.producers import StreamPublisher
from streamfs.settings import Settings
from streamfs.topics import load_catalogue
from tests.worker.inprocess import saola_stream

pytestmark = pytest.mark.kafka


def _set_topic_config(kafka_config: dict, topic: str, key: str, value: str) -> None:
    from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry,
                                       ConfigResource, ResourceType)

    resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)])
    admin = AdminClient(kafka_config)  # kept until answered: its futures fail once it goes
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(30)


def test_a_worker_whose_transactions_keep_failing_reports_its_input_as_lag(
        kafka_config, topic_prefix, tmp_path):
    """The results topic's max.message.bytes lowered under a running worker: every batch's
    transaction fails (MSG_SIZE_TOO_LARGE), is aborted and rewound, and its input is fetched
    again. Lag was counted from the consumer's position, past the input fetched again, so
    /health said "ok" with lag 0 for minutes while nothing was committed; it is counted from
    the committed offsets, so the input waits as lag and, once nothing has been committed for
    a minute, the worker is "lagging-idle"."""
    from streamfs.worker import app, startup
    from streamfs.worker.errors import StoppedWhileUnreachable

    conf = Settings(bootstrap_servers=kafka_config["bootstrap.servers"],
                    topic_prefix=topic_prefix, app_id=f"app-{uuid.uuid4().hex[:8]}",
                    data_dir=str(tmp_path), session_timeout=10.0)
    startup.prepare_topics(conf)  # checked at start-up as the catalogue has them
    topics = load_catalogue(topic_prefix)
    _set_topic_config(kafka_config, topics["selected"].name, "max.message.bytes", "100")
    messages = saola_stream("lagging", 0, 10)
    with StreamPublisher(kafka_config, topics["features"].name) as pub:
        pub.send_all(messages)

    def rewinds() -> float:
        return REGISTRY.get_sample_value("streamfs_rewinds_total") or 0.0

    before = rewinds()
    worker = app.Worker(conf)
    failures: list[BaseException] = []

    def run() -> None:
        try:
            worker.run()
        except StoppedWhileUnreachable:  # stopped mid-rewind: the stop asked for (run_worker)
            pass
        except BaseException as exc:  # noqa: BLE001 - asserted below
            failures.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 90
        # its transactions fail (polling the worker's count), and its lag has been read
        while rewinds() < before + 2 or worker.health.snapshot()[1]["lag"] == 0:
            assert thread.is_alive() and time.monotonic() < deadline, worker.health.snapshot()
            time.sleep(0.1)
        # from here on, over three more rewinds and lag updates, every message still waits
        seen = rewinds()
        while rewinds() < seen + 3:
            code, body = worker.health.snapshot()
            assert body["lag"] == len(messages), body
            assert thread.is_alive() and time.monotonic() < deadline, body
            time.sleep(0.1)
        assert code == 200 and body["status"] == "ok"  # under a minute: not idle yet
        with worker.health.lock:  # no batch committed for a minute
            worker.health.last_batch -= 61
        code, body = worker.health.snapshot()
        assert code == 503 and body["status"] == "lagging-idle", body
        assert body["lag"] == len(messages)
    finally:
        worker.running = False
        thread.join(60)
    assert not thread.is_alive(), "the worker did not stop within 60 s"
    assert not failures, failures


def test_input_from_a_transactional_producer_leaves_no_lag_once_committed(
        kafka_config, topic_prefix, tmp_path):
    """An upstream job publishing with transactions ends its input with a commit marker, one
    offset past the last message. Counted from the committed offset (one past the last
    message), the worker kept a lag of one per transaction for good, and after a minute idle
    /health said "lagging-idle" (503) with nothing left to do; the consumer's position passes
    the marker, so input fetched and committed counts from there."""
    from confluent_kafka import Producer

    from streamfs.codec import encode
    from streamfs.worker import app, startup

    conf = Settings(bootstrap_servers=kafka_config["bootstrap.servers"],
                    topic_prefix=topic_prefix, app_id=f"app-{uuid.uuid4().hex[:8]}",
                    data_dir=str(tmp_path), session_timeout=10.0)
    startup.prepare_topics(conf)
    topics = load_catalogue(topic_prefix)
    messages = saola_stream("upstream-eos", 0, 10)
    producer = Producer({**kafka_config, "transactional.id": f"upstream-{uuid.uuid4().hex}"})
    producer.init_transactions(30)
    for m in messages:  # one transaction a message: a marker after each
        producer.begin_transaction()
        producer.produce(topics["features"].name, key=m["stream"].encode(), value=encode(m))
        producer.commit_transaction(30)

    worker = app.Worker(conf)
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 90
        key = None
        # every message committed (the offsets past the stream's last message) ...
        while True:
            assert thread.is_alive() and time.monotonic() < deadline, worker.health.snapshot()
            done = [k for k, end in worker.resume_at.items() if k[0] == topics["features"].name
                    and end > 0 and end == worker.fetched_end.get(k)]
            if done and not worker.fetched:
                key = done[0]
                break
            time.sleep(0.1)
        assert worker.resume_at[key] == 2 * len(messages) - 1  # the last marker after it
        # ... and the lag read since then is nothing
        while worker.health.snapshot()[1]["lag"] != 0:
            assert thread.is_alive() and time.monotonic() < deadline, worker.health.snapshot()
            time.sleep(0.1)
        with worker.health.lock:  # idle for a minute: still ready, nothing waits
            worker.health.last_batch -= 61
        code, body = worker.health.snapshot()
        assert code == 200 and body["status"] == "ok", body
    finally:
        worker.running = False
        thread.join(60)
    assert not thread.is_alive(), "the worker did not stop within 60 s"


def test_input_held_back_by_an_open_upstream_transaction_is_said(kafka_config, topic_prefix,
                                                                  tmp_path, caplog):
    """An upstream producer that leaves its transaction open holds the input back (a
    read_committed reader stops at the last stable offset): /health said "lagging-idle" with
    no reason and the log nothing, until the broker aborted the transaction. Both now say why,
    and the reason goes with the transaction."""
    from confluent_kafka import Producer

    from streamfs.codec import encode
    from streamfs.worker import app, startup
    from streamfs.worker.health import held_reason

    conf = Settings(bootstrap_servers=kafka_config["bootstrap.servers"],
                    topic_prefix=topic_prefix, app_id=f"app-{uuid.uuid4().hex[:8]}",
                    data_dir=str(tmp_path), session_timeout=10.0)
    startup.prepare_topics(conf)
    topics = load_catalogue(topic_prefix)
    messages = saola_stream("held", 0, 10)[:3]
    producer = Producer({**kafka_config, "transactional.id": f"upstream-{uuid.uuid4().hex}",
                         "transaction.timeout.ms": 600_000})
    producer.init_transactions(30)
    producer.begin_transaction()
    for m in messages:
        producer.produce(topics["features"].name, key=m["stream"].encode(), value=encode(m))
    producer.flush(30)  # written, not committed

    worker = app.Worker(conf)
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 90

        def snapshot_until(done) -> dict:
            while not done(body := worker.health.snapshot()[1]):
                assert thread.is_alive() and time.monotonic() < deadline, body
                time.sleep(0.1)  # polling the worker's own health
            return body

        snapshot_until(lambda b: b["status"] == "ok" and b["lag"] == len(messages))
        with worker.health.lock:  # nothing processed for a minute
            worker.health.last_batch -= 61
        body = snapshot_until(lambda b: "reason" in b)
        assert body["status"] == "lagging-idle" and body["reason"] == held_reason(3), body
        assert held_reason(3) in caplog.text
        producer.abort_transaction(30)  # the reason goes with it
        body = snapshot_until(lambda b: b["lag"] == 0)
        assert body["status"] == "ok" and "reason" not in body, body
    finally:
        worker.running = False
        thread.join(60)
    assert not thread.is_alive(), "the worker did not stop within 60 s"
