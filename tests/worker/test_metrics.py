"""The worker's metrics: what one message's plan counts, and bounded per-stream series (no
broker: plans are made by hand)."""

import logging

from prometheus_client import REGISTRY

from streamfs.worker import metrics
from streamfs.worker.processor import Plan
from streamfs.worker.state_records import SEP, header_key


def _value(name, **labels):
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_a_revoked_partition_s_streams_lose_their_series():
    """Per-stream series stay bounded: a stream whose partition moved to another worker is
    that worker's to report; the others' stay."""
    for stream in ("moved-a", "moved-b", "kept"):
        metrics.SELECTION_SIZE.labels(stream=stream).set(3)
    metrics.drop_stream_series({header_key("moved-a"): b"", f"moved-a{SEP}c{SEP}4": b"",
                        header_key("moved-b"): b""})
    shown = {s.labels["stream"] for f in metrics.SELECTION_SIZE.collect() for s in f.samples}
    assert "kept" in shown and not shown & {"moved-a", "moved-b"}
    metrics.drop_stream("kept")


def test_a_committed_plan_counts_its_outcome_items_and_selection(caplog):
    topic = "metrics-test-topic"
    before = (_value("streamfs_messages_total", topic=topic, outcome="applied"),
              _value("streamfs_items_total", kind="features"))
    metrics.count_committed(Plan(result=b"r", stream="m1", n_items=5, selection_size=2), topic,
                            "features")
    assert _value("streamfs_messages_total", topic=topic, outcome="applied") == before[0] + 1
    assert _value("streamfs_items_total", kind="features") == before[1] + 5
    assert _value("streamfs_selection_size", stream="m1") == 2
    # the final result drops the stream's gauge; a dead letter is counted and said once
    metrics.count_committed(Plan(result=b"r", stream="m1", selection_size=2, final=True), topic,
                            "features")
    assert REGISTRY.get_sample_value("streamfs_selection_size", {"stream": "m1"}) is None
    with caplog.at_level(logging.WARNING, logger="streamfs.worker"):
        metrics.count_committed(Plan(dead_letter=b"d", reason="bad 'X'", stream="m2"), topic,
                                "features")
    assert _value("streamfs_dead_letters_total", topic=topic) == 1
    assert _value("streamfs_messages_total", topic=topic, outcome="dead_letter") == 1
    assert caplog.messages == ["dead letter for stream 'm2': bad 'X'"]


def test_a_step_is_observed_unless_skipped_or_dead_lettered():
    def count():
        return _value("streamfs_step_seconds_count", algorithm="metrics-test-algorithm")

    before = count()
    metrics.observe_step(Plan(algorithm="metrics-test-algorithm", step_seconds=0.01), 0.02)
    metrics.observe_step(Plan(algorithm="metrics-test-algorithm", skipped=True), 0.0)
    metrics.observe_step(Plan(algorithm="metrics-test-algorithm", dead_letter=b"d"), 0.0)
    assert count() == before + 1
