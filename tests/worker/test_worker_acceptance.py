"""Acceptance of the worker against a real Apache Kafka broker: every algorithm, crashes,
scale-out, bad input, late subscribers."""

from __future__ import annotations

import numpy as np
import pytest

from streamfs.client import SelectionReader
from streamfs.codec import decode, encode
from streamfs.offline import run_offline
from streamfs.producers import StreamPublisher
from streamfs.topics import load_catalogue
from streamfs.worker.processor import StreamProcessor

from .workload import interleave, mixed_workload

pytestmark = pytest.mark.kafka


def publish(kafka_config, prefix, cases, messages=None):
    topics = load_catalogue(prefix)
    kind_of = {c.stream: c.kind for c in cases}
    by_kind: dict[str, list[dict]] = {"features": [], "instances": []}
    for m in messages if messages is not None else interleave(cases):
        by_kind[kind_of[m["stream"]]].append(m)
    for kind, msgs in by_kind.items():
        if msgs:
            with StreamPublisher(kafka_config, topics[kind].name) as pub:
                pub.send_all(msgs)


def wait_finals(kafka_config, prefix, streams, timeout=240.0) -> dict[str, list[dict]]:
    """All results per stream until every stream has published its final version."""
    pending = set(streams)
    seen: dict[str, list[dict]] = {s: [] for s in streams}
    with SelectionReader(kafka_config, load_catalogue(prefix)["selected"].name) as reader:
        for r in reader.updates(timeout=timeout):
            if r["stream"] in seen:
                seen[r["stream"]].append(r)
                if r["final"]:
                    pending.discard(r["stream"])
                    if not pending:
                        return seen
    raise AssertionError("unreachable")


def features_of(result: dict) -> list[int]:
    return [s["feature"] for s in result["selection"]]


def _strip(result: dict) -> dict:
    return {k: v for k, v in result.items() if k not in ("input_timestamp", "open_input")}


def reference_versions(case) -> list[dict]:
    """The result sequence of an uninterrupted run (the worker's own processor, in memory)."""
    proc = StreamProcessor(case.kind, {})
    out = []
    for m in case.messages:
        plan = proc.handle(case.stream, encode(m))
        for k, v in plan.writes:
            if v is None:
                proc.store.pop(k, None)
            else:
                proc.store[k] = v
        if plan.result:
            out.append(_strip(decode(plan.result)))
    return out


def test_every_algorithm_through_the_worker_equals_the_offline_api(kafka_config, topic_prefix,
                                                                   start_worker):
    cases = mixed_workload(7)
    start_worker()
    publish(kafka_config, topic_prefix, cases)
    finals = wait_finals(kafka_config, topic_prefix, [c.stream for c in cases])
    for case in cases:
        final = finals[case.stream][-1]
        assert final["final"]
        assert features_of(final) == case.expected_features(), case.stream
        assert final["algorithm"] == case.algorithm


def test_ten_crashes_at_random_points_change_nothing(kafka_config, make_worker):
    import uuid

    from streamfs.topics import create_topics

    rng = np.random.default_rng(2024)
    cases = mixed_workload(5, prefix="c")
    refs = {c.stream: reference_versions(c) for c in cases}
    total = sum(len(v) for v in refs.values())
    for run in range(10):
        prefix = f"crash{run}-{uuid.uuid4().hex[:6]}."
        create_topics(kafka_config, load_catalogue(prefix))
        app = f"crash-{uuid.uuid4().hex[:8]}"
        worker = make_worker(prefix, app)
        publish(kafka_config, prefix, cases)
        kill_after = int(rng.integers(1, total))
        with SelectionReader(kafka_config, load_catalogue(prefix)["selected"].name) as reader:
            for n, _ in enumerate(reader.updates(timeout=180), 1):
                if n >= kill_after:
                    break
        worker.kill()
        worker = make_worker(prefix, app)
        try:
            got = wait_finals(kafka_config, prefix, list(refs), timeout=400)
        except TimeoutError:
            pytest.fail(f"run {run}: no final results after a kill at result {kill_after}; "
                        f"worker log:\n{worker.log_tail(80)}")
        finally:
            worker.stop()
        for stream, results in got.items():
            # exactly once: read_committed sees each version once, in order, as uninterrupted
            assert [_strip(r) for r in results] == refs[stream], (run, stream)


def test_scale_out_two_workers_forty_streams(kafka_config, topic_prefix, start_worker):
    cases = mixed_workload(40, prefix="x")
    first = start_worker()
    start_worker()
    messages = interleave(cases)
    half = len(messages) // 2
    publish(kafka_config, topic_prefix, cases, messages[:half])
    with SelectionReader(kafka_config, load_catalogue(topic_prefix)["selected"].name) as reader:
        for n, _ in enumerate(reader.updates(timeout=180), 1):
            if n >= 20:
                break
    first.stop()  # one worker leaves mid-way, another joins
    start_worker()
    publish(kafka_config, topic_prefix, cases, messages[half:])
    finals = wait_finals(kafka_config, topic_prefix, [c.stream for c in cases], timeout=400)
    for case in cases:
        assert features_of(finals[case.stream][-1]) == case.expected_features(), case.stream


def test_bad_input_goes_to_dead_letter_while_valid_stream_completes(kafka_config, topic_prefix,
                                                                    start_worker):
    from confluent_kafka import Consumer, TopicPartition

    (good,) = mixed_workload(1, prefix="good")
    X, y = good.X, good.y
    # hand-written messages without a run token (as other producers may send them)
    o = {k: v for k, v in good.messages[0].items() if k != "run"}
    bad_cases = {
        "undecodable": [b"\xc1\xc1\xc1"],
        "length": [dict(o, stream="b-len"), {"kind": "features", "stream": "b-len", "seq": 1,
                                              "X": X[:-3, :2]}],
        "NaN": [dict(o, stream="b-nan", y=np.r_[np.nan, y[1:].astype(float)])],
        "single class": [dict(o, stream="b-one", y=np.ones_like(y))],
        "before 'open'": [{"kind": "features", "stream": "b-early", "seq": 1, "X": X[:, :2]}],
        "after 'close'": [dict(o, stream="b-late"), {"kind": "close", "stream": "b-late", "seq": 1},
                          {"kind": "features", "stream": "b-late", "seq": 2, "X": X[:, :2]}],
        "sequence gap": [dict(o, stream="b-gap"), {"kind": "features", "stream": "b-gap",
                                                   "seq": 5, "X": X[:, :2]}],
        "unknown algorithm": [dict(o, stream="b-algo", algorithm="lasso")],
        # over the worker's limit (set to 1 MB below) but under the topic's 8 MiB
        "exceeds the worker limit": [{"kind": "features", "stream": "b-big", "seq": 1,
                                      "X": np.zeros((1200, 200))}],
    }
    topics = load_catalogue(topic_prefix)
    start_worker(STREAMFS_MAX_MESSAGE_BYTES="1000000")
    with StreamPublisher(kafka_config, topics["features"].name) as pub:
        for msgs in bad_cases.values():
            for m in msgs:
                if isinstance(m, bytes):
                    pub.send_raw(b"b-raw", m)
                else:
                    pub.send(m)
        pub.send_all(good.messages)
    final = wait_finals(kafka_config, topic_prefix, [good.stream])[good.stream][-1]
    assert features_of(final) == good.expected_features()

    consumer = Consumer({**kafka_config, "group.id": "dlq", "enable.partition.eof": True})
    consumer.assign([TopicPartition(topics["dead_letter"].name, 0, 0)])
    reasons = []
    while len(reasons) < len(bad_cases):
        msg = consumer.poll(30)
        assert msg is not None, f"only {len(reasons)} dead letters: {reasons}"
        if msg.error():
            continue
        reasons.append(decode(msg.value())["reason"])
    consumer.close()
    for needle in bad_cases:
        assert any(needle in r for r in reasons), (needle, reasons)


def test_late_subscriber_gets_every_current_selection(kafka_config, topic_prefix, start_worker):
    cases = mixed_workload(6, prefix="late")
    start_worker()
    publish(kafka_config, topic_prefix, cases)
    wait_finals(kafka_config, topic_prefix, [c.stream for c in cases])
    from streamfs.client import current_selection

    with SelectionReader(kafka_config, load_catalogue(topic_prefix)["selected"].name) as late:
        current = late.current_selections()
    for case in cases:
        assert current[case.stream]["final"]
        assert features_of(current[case.stream]) == case.expected_features()
    one = current_selection(cases[0].stream, kafka_config, load_catalogue(topic_prefix)["selected"].name)
    assert one == current[cases[0].stream]


def test_offline_runner_matches_worker_semantics():
    # `streamfs select` uses run_offline; it must agree with the algorithm API too.
    (case,) = mixed_workload(1)
    assert [s["feature"] for s in run_offline(case.algorithm, case.X, case.y)["selection"]] == \
        case.expected_features()
