"""A step that fails half-way inside the algorithm while earlier steps of its stream are not yet
checkpointed (same batch): the worker aborts the batch and replays it with a checkpoint after
every message, and the failing message becomes an ordinary dead letter. Real broker; the worker
runs in this process so that the algorithm can be made to fail."""

from __future__ import annotations

import threading
import uuid

import numpy as np
import pytest
from prometheus_client import REGISTRY

from streamfs.client import OutputReader, SelectionReader
from streamfs.codec import decode, encode
from streamfs.producers import StreamPublisher, feature_stream_messages
from streamfs.settings import Settings
from streamfs.topics import load_catalogue
from streamfs.worker.processor import StreamProcessor

pytestmark = pytest.mark.kafka


def _one_at_a_time(messages: list[dict]) -> tuple[list[dict], list[dict]]:
    """Results and dead letters of the processor checkpointing after every message."""
    proc = StreamProcessor("features", {})
    results, dead = [], []
    for m in messages:
        plan = proc.handle(m["stream"], encode(m))
        for k, v in plan.writes:
            if v is None:
                proc.store.pop(k, None)
            else:
                proc.store[k] = v
        results += [decode(plan.result)] if plan.result else []
        dead += [decode(plan.dead_letter)] if plan.dead_letter else []
    return results, dead


def test_failed_step_of_an_unflushed_stream_is_replayed_and_dead_lettered(
        kafka_config, topic_prefix, tmp_path, monkeypatch):
    from streamfs.algorithms.saola import SAOLA
    from streamfs.worker import app

    rng = np.random.default_rng(4)
    y = rng.integers(0, 2, 200)
    X = rng.normal(size=(200, 30)) + 0.8 * y[:, None] * (np.arange(30) % 3 == 0)
    msgs = list(feature_stream_messages("boom", X, y, "saola", {}, block_bytes=200 * 8 * 5))
    assert len(msgs) == 8  # open, six blocks of five columns, close
    poison = msgs[3]["X"][:, 0].copy()  # the third block: two unflushed steps before it
    real = SAOLA.partial_fit

    def fails_on_the_third_block(self, X, *args, **kwargs):
        if np.array_equal(np.asarray(X)[:, 0], poison):
            self.n_features_seen_ += 1  # half-done: this object can no longer be trusted
            raise ValueError("boom")
        return real(self, X, *args, **kwargs)

    monkeypatch.setattr(SAOLA, "partial_fit", fails_on_the_third_block)
    expected, expected_dead = _one_at_a_time(msgs)
    assert [d["reason"] for d in expected_dead] == ["rejected by saola: boom"]

    settings = Settings(bootstrap_servers=kafka_config["bootstrap.servers"],
                        topic_prefix=topic_prefix, app_id=f"app-{uuid.uuid4().hex[:8]}",
                        data_dir=str(tmp_path / "data"), session_timeout=10.0,
                        batch_ms=5_000.0)  # whatever is fetched goes into one batch
    app.warm_up()  # compiled kernels: no step is slow enough to cut the batch
    app.prepare_topics(settings)
    topics = load_catalogue(topic_prefix)
    with StreamPublisher(kafka_config, topics["features"].name) as pub:
        pub.send_all(msgs)  # all on the topic before the worker starts
    worker = app.Worker(settings)
    rewinds = REGISTRY.get_sample_value("streamfs_rewinds_total")
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    try:
        with SelectionReader(kafka_config, topics["selected"].name) as reader:
            results = list(reader.updates("boom", until_final=True, timeout=120))
        with OutputReader(kafka_config, topics["dead_letter"].name) as reader:
            dead = [item[1] for item in reader.messages(to_end=True)
                    if item is not None and item[1].get("stream") == "boom"]
    finally:
        worker.running = False
        thread.join(60)
    # the batch was given up and replayed
    assert REGISTRY.get_sample_value("streamfs_rewinds_total") > rewinds
    assert [d["reason"] for d in dead] == ["rejected by saola: boom"]
    assert dead[0]["offset"] == 3  # the third block (open is offset 0)
    strip = lambda r: {k: v for k, v in r.items() if k != "input_timestamp"}  # noqa: E731
    assert [strip(r) for r in results] == [strip(r) for r in expected]  # once each, exact
