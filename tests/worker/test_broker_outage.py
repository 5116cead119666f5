"""What /health says while the broker is down (a broker this test session started)."""

from __future__ import annotations

import time

import pytest

pytestmark = pytest.mark.kafka


def test_health_says_the_broker_is_unreachable_while_it_is(start_worker, broker_outage):
    """With the broker stopped, /health said "ok" (and the lag last read) until the worker's
    session timed out, then "rebalancing"; it says "broker-unreachable" from the first lost
    connection, and "ok" again once the broker is back and the partitions assigned."""
    worker = start_worker(STREAMFS_SESSION_TIMEOUT="60")  # longer than the outage below
    worker.wait_ready()

    def wait_for(status: str, timeout: float) -> dict:
        deadline = time.monotonic() + timeout
        while (body := worker.health()) is None or body["status"] != status:
            assert time.monotonic() < deadline, (body, worker.log_tail())
            time.sleep(0.1)  # polling the worker's endpoint
        return body

    with broker_outage():
        body = wait_for("broker-unreachable", 20)
        assert body["assigned"] and body["unreachable_seconds"] >= 0
    body = wait_for("ok", 120)
    assert body["assigned"] and "unreachable_seconds" not in body
    # the log says so too (its last word on the broker was the outage's), and says nothing of
    # a Ctrl-C to a service
    log = worker.log_path.read_text()
    assert "INFO streamfs.worker: the broker answers again (" in log, worker.log_tail()
    assert "the broker does not answer" in log and "still trying" in log, worker.log_tail()
    assert "Ctrl-C" not in log, worker.log_tail()


def test_a_new_producer_outwaits_an_outage_and_then_commits(kafka_bootstrap, topic_prefix,
                                                            broker_outage, monkeypatch):
    """The worker replaces a producer whose transactional call hung, which happens when the
    broker goes down mid-transaction; the new one's ``init_transactions`` then timed out
    (after 60 s) and the worker exited 70. Against the real broker: the calls time out with
    a retriable error while it is down, the worker keeps asking, and once the broker is back
    the producer commits a transaction."""
    import threading

    from confluent_kafka import Consumer

    from streamfs import broker
    from streamfs.settings import Settings
    from streamfs.worker import app
    from streamfs.worker.broker_contact import BrokerContact

    calls: list[float] = []
    started = threading.Event()

    class Counted:
        """The real producer, its init_transactions calls counted."""

        def __init__(self, conf):
            self.inner = broker.make_client(__import__("confluent_kafka").Producer, conf)

        def init_transactions(self, timeout):
            calls.append(timeout)
            started.set()
            return self.inner.init_transactions(timeout)

        def __getattr__(self, name):
            return getattr(self.inner, name)

    monkeypatch.setattr(app, "INIT_TRANSACTIONS_SECONDS", 1.0)
    monkeypatch.setattr(app, "make_client", lambda cls, conf: Counted(conf))
    worker = object.__new__(app.Worker)
    worker.settings = Settings(bootstrap_servers=kafka_bootstrap, topic_prefix=topic_prefix)
    worker.health, worker.running = app.Health(), True
    worker.producer_log = broker.LogLines(broker.KAFKA_LOGGER)
    worker.broker = BrokerContact(worker.settings, worker.health, [], {}, lambda: worker.running)
    made: list = []
    with broker_outage():
        thread = threading.Thread(target=lambda: made.append(worker._producer()))
        thread.start()
        deadline = time.monotonic() + 60
        while len(calls) < 3:  # three calls timed out: longer than one call's wait
            assert thread.is_alive() and time.monotonic() < deadline, calls
            time.sleep(0.05)  # polling the counter the worker's thread appends to
        assert worker.health.unreachable_since is not None
    thread.join(120)
    assert not thread.is_alive() and made, calls
    assert worker.health.unreachable_since is None
    producer = made[0]
    topic = f"{topic_prefix}dead-letter"
    producer.begin_transaction()
    producer.produce(topic, key=b"outage", value=b"committed after the outage")
    producer.commit_transaction(30)
    reader = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": f"{topic_prefix}r",
                       "isolation.level": "read_committed", "auto.offset.reset": "earliest"})
    reader.subscribe([topic])
    try:
        deadline = time.monotonic() + 60
        while True:
            assert time.monotonic() < deadline
            msg = reader.poll(1.0)
            if msg is not None and msg.error() is None and msg.key() == b"outage":
                break
    finally:
        reader.close()


def test_sigterm_while_the_broker_is_down_stops_the_worker(start_worker, broker_outage):
    """README, Guarantees: a SIGTERM while no broker answers stops the worker (exit 0, within
    10 s: closing its consumer does not wait for a group coordinator that is gone)."""
    import signal

    worker = start_worker(STREAMFS_SESSION_TIMEOUT="60")
    worker.wait_ready()
    with broker_outage():
        deadline = time.monotonic() + 20
        while (body := worker.health()) is None or body["status"] != "broker-unreachable":
            assert time.monotonic() < deadline, (body, worker.log_tail())
            time.sleep(0.1)  # polling the worker's endpoint
        signalled = time.monotonic()
        worker.proc.send_signal(signal.SIGTERM)
        code = worker.proc.wait(60)
        took = time.monotonic() - signalled
    assert code == 0, worker.log_tail()
    assert took < 10, (took, worker.log_tail())
    assert "Traceback" not in worker.log_path.read_text()
