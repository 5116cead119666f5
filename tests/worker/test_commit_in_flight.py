"""A batch's transaction completes on a helper thread while the loop steps the next batch: the
overlap really happens, and a transaction that fails there makes the worker rewind, so every
version still reaches a ``read_committed`` subscriber exactly once. Real broker; the worker runs
in this process so that its commit can be held back or made to fail."""

from __future__ import annotations

import threading

import pytest
from prometheus_client import REGISTRY

from streamfs.client import SelectionReader
from streamfs.worker.processor import StreamProcessor
from tests.worker.inprocess import one_at_a_time, saola_stream, without_timestamp, worker_thread

pytestmark = pytest.mark.kafka


def test_next_batch_is_stepped_while_a_commit_is_in_flight_and_a_failed_commit_rewinds(
        kafka_config, topic_prefix, tmp_path, monkeypatch):
    from streamfs.worker import app

    msgs = saola_stream("inflight", seed=7, p=40)
    assert len(msgs) == 10  # open, eight blocks of five columns, close
    expected, _ = one_at_a_time(msgs)

    stepped = threading.Event()  # a message was stepped
    commits: list[str] = []  # what each call of _complete did
    real_complete, real_handle = app.Worker._complete, StreamProcessor.handle

    def handle(self, *args, **kwargs):
        stepped.set()
        return real_handle(self, *args, **kwargs)

    def complete(self, batch):
        if not commits:
            # hold the first commit back until the loop steps a message of the next batch:
            # that happens only if the loop does not wait for this commit first
            stepped.clear()
            commits.append("overlapped" if stepped.wait(60) else "not overlapped")
            return real_complete(self, batch)
        if len(commits) == 1:
            commits.append("failed")
            self._abort()  # as a broker refusing the commit: abort, Rewind on the loop
        commits.append("committed")
        return real_complete(self, batch)

    monkeypatch.setattr(app.Worker, "_complete", complete)
    monkeypatch.setattr(StreamProcessor, "handle", handle)
    rewinds = REGISTRY.get_sample_value("streamfs_rewinds_total") or 0.0
    began = REGISTRY.get_sample_value("streamfs_transactions_total") or 0.0
    # five batches of two messages; batch_ms: the wait for input never ends a batch early
    with worker_thread(kafka_config, topic_prefix, tmp_path / "data", msgs,
                       batch_ms=5_000.0, batch_messages=2) as topics:
        with SelectionReader(kafka_config, topics["selected"].name) as reader:
            results = list(reader.updates("inflight", until_final=True, timeout=120))
    assert commits[:2] == ["overlapped", "failed"]
    assert REGISTRY.get_sample_value("streamfs_rewinds_total") > rewinds
    # a transaction per batch: the five, and the failed one again
    assert REGISTRY.get_sample_value("streamfs_transactions_total") >= began + 6
    # the failed batch's versions were aborted and published again: each once, in order
    assert [r["version"] for r in results] == list(range(1, len(expected) + 1))
    assert without_timestamp(results) == without_timestamp(expected)
