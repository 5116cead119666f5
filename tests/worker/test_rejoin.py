"""A worker left out of its group (no assignment for longer than any rebalance takes, its
broker answering) joins the group again with a new consumer, and its streams go on exactly
once. Seen once in CI: a consumer whose session timed out during a broker restart never
rejoined. Here the consumer is made to leave its group behind the worker's back (it
unsubscribes, on the worker's own loop thread: called from another thread, it deadlocked with
the revoke callback it causes, seen in CI; as a consumer that drops out of the group without
rejoining). Real broker; the worker runs in this process so that its consumer can be
reached."""

from __future__ import annotations

import logging
import threading

import pytest
from prometheus_client import REGISTRY

from streamfs.client import SelectionReader
from streamfs.producers import StreamPublisher
from tests.worker.inprocess import one_at_a_time, saola_stream, without_timestamp, worker_thread

pytestmark = pytest.mark.kafka


def test_a_worker_left_out_of_its_group_joins_it_again_and_its_stream_goes_on(
        kafka_config, topic_prefix, tmp_path, monkeypatch, caplog):
    from streamfs.worker import app

    msgs = saola_stream("left-out", seed=11, p=40)
    expected, _ = one_at_a_time(msgs)
    half = len(msgs) // 2

    assigned, leave, revoked, left = (threading.Event(), threading.Event(), threading.Event(),
                                      [])
    workers: list[app.Worker] = []
    real_on_assign, real_rejoin = app.Worker._on_assign, app.Worker._rejoin_if_left_out
    real_on_revoke = app.Worker._on_revoke

    def on_assign(self, consumer, partitions):
        real_on_assign(self, consumer, partitions)
        workers.append(self)
        assigned.set()

    def on_revoke(self, consumer, partitions):
        real_on_revoke(self, consumer, partitions)
        revoked.set()

    def rejoin_if_left_out(self):  # called on the loop's thread every 2 s
        if leave.is_set() and not left:
            left.append(self.consumer)
            self.consumer.unsubscribe()  # out of the group; the worker is not told
        real_rejoin(self)

    monkeypatch.setattr(app.Worker, "_on_assign", on_assign)
    monkeypatch.setattr(app.Worker, "_rejoin_if_left_out", rejoin_if_left_out)
    monkeypatch.setattr(app.Worker, "_on_revoke", on_revoke)
    monkeypatch.setattr(app, "rejoin_seconds", lambda session_timeout: 3.0)
    rejoins = REGISTRY.get_sample_value("streamfs_rejoins_total") or 0.0
    caplog.set_level(logging.INFO, logger="streamfs.worker")
    with worker_thread(kafka_config, topic_prefix, tmp_path / "data", msgs[:half]) as topics:
        assert assigned.wait(120), "the worker got no partitions"
        with SelectionReader(kafka_config, topics["selected"].name) as reader:
            next(reader.updates("left-out", timeout=120))  # it is working on the stream
        worker = workers[0]
        leave.set()
        assert revoked.wait(60), "the consumer did not leave its group"
        with StreamPublisher(kafka_config, topics["features"].name) as pub:
            pub.send_all(msgs[half:])
        with SelectionReader(kafka_config, topics["selected"].name) as reader:
            results = list(reader.updates("left-out", until_final=True, timeout=180))
        assert left and worker.consumer is not left[0]
        assert worker.health.unassigned_since is None and worker.health.ready
    assert REGISTRY.get_sample_value("streamfs_rejoins_total") == rejoins + 1
    assert any("joining it again with a new consumer" in r.getMessage()
               for r in caplog.records), caplog.text[-3000:]
    # every version once, in order, equal to a processor checkpointing after every message
    assert [r["version"] for r in results] == list(range(1, len(expected) + 1))
    assert without_timestamp(results) == without_timestamp(expected)
