"""A step that fails half-way inside the algorithm while earlier steps of its stream are not yet
checkpointed (same batch): the worker gives the batch up and replays it with a checkpoint after
every message, and the failing message becomes an ordinary dead letter. Real broker; the worker
runs in this process so that the algorithm can be made to fail."""

from __future__ import annotations

import numpy as np
import pytest
from prometheus_client import REGISTRY

from streamfs.client import OutputReader, SelectionReader
from tests.worker.inprocess import one_at_a_time, saola_stream, without_timestamp, worker_thread

pytestmark = pytest.mark.kafka


def test_failed_step_of_an_unflushed_stream_is_replayed_and_dead_lettered(
        kafka_config, topic_prefix, tmp_path, monkeypatch):
    from streamfs.algorithms.saola import SAOLA

    msgs = saola_stream("boom", seed=4, p=30)
    assert len(msgs) == 8  # open, six blocks of five columns, close
    poison = msgs[3]["X"][:, 0].copy()  # the third block: two unflushed steps before it
    real = SAOLA.partial_fit

    def fails_on_the_third_block(self, X, *args, **kwargs):
        if isinstance(X, np.ndarray) and np.array_equal(X[:, 0], poison):  # not the warm-up's
            self.n_features_seen_ += 1  # half-done: this object can no longer be trusted
            raise ValueError("boom")
        return real(self, X, *args, **kwargs)

    monkeypatch.setattr(SAOLA, "partial_fit", fails_on_the_third_block)
    expected, expected_dead = one_at_a_time(msgs)
    assert [d["reason"] for d in expected_dead] == ["rejected by saola: boom"]

    rewinds = REGISTRY.get_sample_value("streamfs_rewinds_total") or 0.0
    counters = _counters(topic_prefix)
    # batch_ms: whatever is fetched goes into one batch
    with worker_thread(kafka_config, topic_prefix, tmp_path / "data", msgs,
                       batch_ms=5_000.0) as topics:
        with SelectionReader(kafka_config, topics["selected"].name) as reader:
            results = list(reader.updates("boom", until_final=True, timeout=120))
        with OutputReader(kafka_config, topics["dead_letter"].name) as reader:
            dead = [item[1] for item in reader.messages(to_end=True)
                    if item is not None and item[1].get("stream") == "boom"]
    # the batch was given up and replayed
    assert REGISTRY.get_sample_value("streamfs_rewinds_total") > rewinds
    assert [d["reason"] for d in dead] == ["rejected by saola: boom"]
    assert dead[0]["offset"] == 3  # the third block (open is offset 0)
    assert without_timestamp(results) == without_timestamp(expected)  # once each, exact
    # the counters count the committed batches only: the given-up batch's work was counted
    # too (results 2 for 1 published, dead letters 21 for 19, in an operator's audit)
    counted = {k: v - counters[k] for k, v in _counters(topic_prefix).items()}
    assert counted == {"applied": len(msgs) - 1, "dead_letter": 1, "results": len(results),
                       "finals": 1, "dead_letters": 1}, counted


def _counters(topic_prefix: str) -> dict[str, float]:
    """The worker's counts (``/metrics``) of the input messages on the features topic applied
    and dead-lettered, of the results published (finals too) and of the dead letters."""
    from streamfs.topics import load_catalogue

    topic = load_catalogue(topic_prefix)["features"].name

    def value(name: str, **labels: str) -> float:
        return REGISTRY.get_sample_value(name, labels) or 0.0

    return {"applied": value("streamfs_messages_total", topic=topic, outcome="applied"),
            "dead_letter": value("streamfs_messages_total", topic=topic, outcome="dead_letter"),
            "results": value("streamfs_results_total", final="false")
            + value("streamfs_results_total", final="true"),
            "finals": value("streamfs_results_total", final="true"),
            "dead_letters": value("streamfs_dead_letters_total", topic=topic)}
