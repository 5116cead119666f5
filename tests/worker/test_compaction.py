"""The changelogs as the broker's log cleaner leaves them: closed streams keep no columns or
state there, and a worker without a local copy restores the same state from what is left."""

from __future__ import annotations

import shutil
import time

import pytest
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                   ResourceType)

from streamfs.algorithms.opening import STATE_KEY_SEP
from streamfs.client import SelectionReader
from streamfs.topics import load_catalogue
from streamfs.worker.state_records import header_key

from .test_local_state import _applied_up_to, _ready_metrics
from .test_sweep import _changelog_records
from .test_worker_acceptance import _strip, publish, reference_versions, wait_finals
from .workload import mixed_workload

pytestmark = pytest.mark.kafka


def _compact_now(kafka_config, topics: list[str]) -> None:
    """What the worker's changelog settings make of a busy changelog every hour, now: any
    dirty share is worth a cleaning, and a segment rolls on the next append after 1 ms (the
    cleaner never touches the active segment). The append is a tombstone of a key no stream
    has, which a restore passes over."""
    from confluent_kafka import Producer

    admin = AdminClient(kafka_config)
    resources = [ConfigResource(ResourceType.TOPIC, t, incremental_configs=[
        ConfigEntry("segment.ms", "1", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("min.cleanable.dirty.ratio", "0.001",
                    incremental_operation=AlterConfigOpType.SET)]) for t in topics]
    for future in admin.incremental_alter_configs(resources).values():
        future.result(30)
    producer = Producer(kafka_config)
    for topic in topics:
        for p in admin.list_topics(topic, timeout=30).topics[topic].partitions:
            producer.produce(topic, key=b"roll", value=None, partition=p)
    assert producer.flush(30) == 0


def _replay(records) -> dict[tuple[int, str], bytes]:
    """The state a restore builds from ``records`` (partition, offset, key, value)."""
    state: dict[tuple[int, str], bytes] = {}
    for p, _, key, value in records:
        if value is None:
            state.pop((p, key), None)
        else:
            state[(p, key)] = value
    return state


def _closed_leftovers(records, closed: list[str]) -> list[str]:
    """Keys of closed streams with more than a tombstone in ``records``, besides the header's
    latest value: what compaction has not yet removed."""
    by_key: dict[str, list[bytes | None]] = {}
    for _, _, key, value in records:
        by_key.setdefault(key, []).append(value)
    left = []
    for stream in closed:
        for key, values in by_key.items():
            if not key.startswith(f"{stream}{STATE_KEY_SEP}"):
                continue
            if key == header_key(stream):
                if len(values) > 1:
                    left.append(key)
            elif values != [None]:
                left.append(key)
    return left


def test_a_compacted_changelog_holds_no_closed_columns_and_restores_the_same(
        kafka_config, topic_prefix, start_worker, tmp_path):
    closed_cases = mixed_workload(6, prefix="cmpc")
    open_cases = mixed_workload(4, prefix="cmpo")
    refs = {c.stream: reference_versions(c) for c in closed_cases + open_cases}
    head = {c.stream: c.messages[:-2] for c in closed_cases + open_cases}
    first = start_worker()
    # the closed streams in two parts, so that their columns and state reach the changelog
    # before their close deletes them
    publish(kafka_config, topic_prefix, closed_cases + open_cases,
            [m for c in closed_cases + open_cases for m in head[c.stream]])
    _applied_up_to(kafka_config, topic_prefix, {
        s: max(r["seq"] for r in refs[s] if r["seq"] <= head[s][-1]["seq"]) for s in head})
    publish(kafka_config, topic_prefix, closed_cases,
            [m for c in closed_cases for m in c.messages[-2:]])
    wait_finals(kafka_config, topic_prefix, [c.stream for c in closed_cases])
    first.stop()
    app_id = first.env["STREAMFS_APP_ID"]
    changelogs = [f"{app_id}-{role}-streams-changelog" for role in ("features", "instances")]

    before = {t: _changelog_records(kafka_config, t, committed=True) for t in changelogs}
    closed = [c.stream for c in closed_cases]
    assert all(_closed_leftovers(r, closed) for r in before.values())  # columns were written
    _compact_now(kafka_config, changelogs)
    deadline = time.monotonic() + 180  # the cleaner looks every 15 s (log.cleaner.backoff.ms)
    while True:
        after = {t: _changelog_records(kafka_config, t, committed=True) for t in changelogs}
        left = {t: _closed_leftovers(r, closed) for t, r in after.items()}
        if not any(left.values()):
            break
        assert time.monotonic() < deadline, f"not compacted within 180 s: {left}"
        time.sleep(2)  # polling the broker's log cleaner
    for t in changelogs:
        assert _replay(after[t]) == _replay(before[t]), t  # compaction kept every latest value
    n_before = sum(map(len, before.values()))
    n_after = sum(map(len, after.values()))
    assert n_after < n_before

    # a worker with no local copy restores the open streams from the compacted changelogs and
    # finishes them as an uninterrupted run does, every version once
    shutil.rmtree(tmp_path / "data")
    second = start_worker()
    restored = _ready_metrics(second)
    assert restored["local"] == 0 and 0 < restored["changelog"] <= n_after, (restored, n_after)
    publish(kafka_config, topic_prefix, open_cases,
            [m for c in open_cases for m in c.messages[-2:]])
    finals = wait_finals(kafka_config, topic_prefix, [c.stream for c in open_cases])
    with SelectionReader(kafka_config, load_catalogue(topic_prefix)["selected"].name) as reader:
        everything = list(reader.updates(to_end=True))
    for stream, ref in refs.items():
        assert [_strip(r) for r in everything if r["stream"] == stream] == ref, stream
    assert all(finals[c.stream][-1]["final"] for c in open_cases)
