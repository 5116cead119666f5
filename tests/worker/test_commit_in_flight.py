"""A batch's transaction completes on a helper thread while the loop steps the next batch: the
overlap really happens, and a transaction that fails there makes the worker rewind, so every
version still reaches a ``read_committed`` subscriber exactly once. Real broker; the worker runs
in this process so that its commit can be held back or made to fail."""

from __future__ import annotations

import threading
import uuid

import numpy as np
import pytest
from prometheus_client import REGISTRY

from streamfs.client import SelectionReader
from streamfs.producers import StreamPublisher, feature_stream_messages
from streamfs.settings import Settings
from streamfs.topics import load_catalogue
from streamfs.worker.processor import StreamProcessor
from tests.worker.test_replay_after_failed_step import _one_at_a_time

pytestmark = pytest.mark.kafka


def test_next_batch_is_stepped_while_a_commit_is_in_flight_and_a_failed_commit_rewinds(
        kafka_config, topic_prefix, tmp_path, monkeypatch):
    from streamfs.worker import app

    rng = np.random.default_rng(7)
    y = rng.integers(0, 2, 200)
    X = rng.normal(size=(200, 40)) + 0.8 * y[:, None] * (np.arange(40) % 4 == 0)
    msgs = list(feature_stream_messages("inflight", X, y, "saola", {}, block_bytes=200 * 8 * 5))
    assert len(msgs) == 10  # open, eight blocks of five columns, close
    expected, _ = _one_at_a_time(msgs)

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
    settings = Settings(bootstrap_servers=kafka_config["bootstrap.servers"],
                        topic_prefix=topic_prefix, app_id=f"app-{uuid.uuid4().hex[:8]}",
                        data_dir=str(tmp_path / "data"), session_timeout=10.0,
                        batch_ms=5_000.0, batch_messages=2)  # five batches of two messages
    app.warm_up()
    app.prepare_topics(settings)
    topics = load_catalogue(topic_prefix)
    with StreamPublisher(kafka_config, topics["features"].name) as pub:
        pub.send_all(msgs)  # all on the topic before the worker starts
    worker = app.Worker(settings)
    rewinds = REGISTRY.get_sample_value("streamfs_rewinds_total") or 0.0
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    try:
        with SelectionReader(kafka_config, topics["selected"].name) as reader:
            results = list(reader.updates("inflight", until_final=True, timeout=120))
    finally:
        worker.running = False
        thread.join(60)
    assert not thread.is_alive()
    assert commits[:2] == ["overlapped", "failed"]
    assert REGISTRY.get_sample_value("streamfs_rewinds_total") > rewinds
    # the failed batch's versions were aborted and published again: each once, in order
    strip = lambda r: {k: v for k, v in r.items() if k != "input_timestamp"}  # noqa: E731
    assert [r["version"] for r in results] == list(range(1, len(expected) + 1))
    assert [strip(r) for r in results] == [strip(r) for r in expected]
