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


def test_a_committed_plan_counts_its_outcome_items_and_selection(caplog, monkeypatch):
    # a log of its own: other tests of this process may have used up the minute's lines
    monkeypatch.setattr(metrics, "DEAD_LETTER_LOG", metrics.DeadLetterLog())
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


def test_an_open_stream_s_series_comes_back_with_its_restored_partition():
    """Dropped at a revoke (or gone with a restart), an open stream's series came back only
    with its next result: a stream whose producer had stopped never showed again."""
    import numpy as np

    from streamfs.codec import decode, encode
    from streamfs.producers import feature_stream_messages
    from streamfs.worker.processor import StreamProcessor

    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 100)
    X = rng.normal(size=(100, 20))
    X[:, :3] += 2.0 * y[:, None]
    store: dict = {}
    processor = StreamProcessor("features", store)
    messages = list(feature_stream_messages("restored-open", X, y, "saola", {},
                                            block_bytes=4000))
    results = []
    for message in messages[:-1]:  # no close: the stream stays open
        plan = processor.handle("restored-open", encode(message))
        results += [plan.result] if plan.result else []
        for key, value in plan.writes:
            store[key] = value
    for key, value in processor.flush():
        store[key] = value
    closed = StreamProcessor("features", {})  # a closed stream has no series to restore
    for message in messages:
        for key, value in closed.handle("restored-closed", encode(message)).writes:
            if value is not None:
                closed.store[key] = value
    size = len(decode(results[-1])["selection"])
    assert size > 0
    metrics.drop_stream_series(store)
    assert REGISTRY.get_sample_value("streamfs_selection_size", {"stream": "restored-open"}) \
        is None
    metrics.restore_stream_series({**store, **closed.store})
    assert _value("streamfs_selection_size", stream="restored-open") == size
    assert REGISTRY.get_sample_value("streamfs_selection_size",
                                     {"stream": "restored-closed"}) is None
    metrics.drop_stream("restored-open")


def test_dead_letters_are_logged_a_few_a_minute_and_cut(caplog):
    """1,000 junk records made 1,000 WARNING lines of up to 2,000 characters each."""
    now = [0.0]
    said = metrics.DeadLetterLog(per_minute=3, chars=20, clock=lambda: now[0])
    with caplog.at_level(logging.WARNING, logger="streamfs.worker"):
        for i in range(10):
            said.say("junk", f"bad record {i} " + "x" * 50)
        now[0] = 61.0
        said.say("junk", "short")
    assert caplog.messages == [
        *(f"dead letter for stream 'junk': {f'bad record {i} ' + 'x' * 50:.20}... "
          f"({len(f'bad record {i} ') + 50} characters)" for i in range(3)),
        "7 more dead letters in the minute of the 3 above, not logged one by one (streamfs "
        "dead-letters lists them)",
        "dead letter for stream 'junk': short"]


def test_the_dead_letters_left_out_are_counted_when_the_minute_ends(caplog):
    """The count was said only with the next dead letter: an hour later, or never."""
    now = [0.0]
    said = metrics.DeadLetterLog(per_minute=2, clock=lambda: now[0])
    with caplog.at_level(logging.WARNING, logger="streamfs.worker"):
        for i in range(5):
            said.say("junk", f"bad {i}")
        now[0] = 59.0
        said.flush()  # the minute is not over
        assert len(caplog.messages) == 2
        now[0] = 60.0
        said.flush()
        said.flush()  # once
        now[0] = 3600.0
        said.flush()
    assert caplog.messages[2:] == ["3 more dead letters in the minute of the 2 above, not "
                                   "logged one by one (streamfs dead-letters lists them)"]


def test_a_worker_s_counters_have_their_series_at_0_from_its_start():
    """A series first seen at 1 is no increase to Prometheus: an alert on
    increase(streamfs_dead_letters_total[5m]) missed the first dead letter after a start."""
    inputs = {"series-test-features": "features", "series-test-instances": "instances"}
    metrics.start_series(inputs)
    for topic in inputs:
        assert REGISTRY.get_sample_value("streamfs_dead_letters_total", {"topic": topic}) == 0
        for outcome in ("applied", "skipped", "dead_letter"):
            assert REGISTRY.get_sample_value("streamfs_messages_total",
                                             {"topic": topic, "outcome": outcome}) == 0
    for name, labels in [("streamfs_results_total", {"final": "true"}),
                         ("streamfs_results_total", {"final": "false"}),
                         ("streamfs_items_total", {"kind": "instances"}),
                         ("streamfs_restored_records_total", {"source": "changelog"}),
                         ("streamfs_batch_phase_seconds_total", {"phase": "local_copy"})]:
        assert REGISTRY.get_sample_value(name, labels) is not None, (name, labels)
