"""Exactly-once delivery against a real broker: a stale owner (SIGSTOP past the session timeout)
cannot publish behind the new owner's back, and a read_committed reader sees every version of
every stream once, in order."""

from __future__ import annotations

import time

import pytest

from streamfs.client import SelectionReader
from streamfs.topics import load_catalogue

from .held_changelog import first_dead_letter, half_published, hold_changelog_record
from .test_worker_acceptance import _strip, publish, reference_versions, wait_finals
from .workload import interleave, mixed_workload

pytestmark = pytest.mark.kafka


def test_zombie_worker_is_fenced_and_every_version_arrives_once(kafka_config, topic_prefix,
                                                                start_worker):
    cases = mixed_workload(24, prefix="z")
    refs = {c.stream: reference_versions(c) for c in cases}
    messages = interleave(cases)
    half = len(messages) // 2
    env = {"STREAMFS_TRANSACTION_TIMEOUT": "10"}
    zombie = start_worker(**env)
    publish(kafka_config, topic_prefix, cases, messages[:half])
    with SelectionReader(kafka_config, load_catalogue(topic_prefix)["selected"].name) as reader:
        for n, _ in enumerate(reader.updates(timeout=180), 1):
            if n >= 10:  # it owns every partition and is at work
                break
    zombie.pause()  # stops answering, keeps believing it owns its partitions
    publish(kafka_config, topic_prefix, cases, messages[half:])
    successor = start_worker(**env)
    try:
        # the successor takes over once the zombie's session times out, and finishes
        wait_finals(kafka_config, topic_prefix, list(refs), timeout=400)
        assigned_before = zombie.log_path.read_text().count("assigned")
    finally:
        zombie.resume()  # it wakes up with fetched input and, maybe, an open transaction
    # synchronise on the zombie's own log: it has rejoined the group once it logs a new
    # assignment (its stale work refused or aborted before that)
    deadline = time.monotonic() + 120
    while zombie.log_path.read_text().count("assigned") == assigned_before:
        assert time.monotonic() < deadline, zombie.log_tail(40)
        time.sleep(0.2)  # polling another process's log
    with SelectionReader(kafka_config, load_catalogue(topic_prefix)["selected"].name) as reader:
        everything = list(reader.updates(to_end=True))
    for stream, ref in refs.items():
        results = [r for r in everything if r["stream"] == stream]
        versions = [r["version"] for r in results]
        assert versions == list(range(1, len(ref) + 1)), (stream, versions, successor.log_tail(40))
        assert [_strip(r) for r in results] == ref, stream


def test_two_one_three_workers_with_kills_during_rebalances(kafka_config, topic_prefix,
                                                            start_worker):
    """2 workers → one killed (1) → three more started, one of them killed while the group
    rebalances (3): every version once, in order, equal to an uninterrupted run."""
    cases = mixed_workload(24, prefix="r")
    refs = {c.stream: reference_versions(c) for c in cases}
    messages = interleave(cases)
    third = len(messages) // 3
    first, second = start_worker(), start_worker()
    publish(kafka_config, topic_prefix, cases, messages[:third])
    with SelectionReader(kafka_config, load_catalogue(topic_prefix)["selected"].name) as reader:
        for n, _ in enumerate(reader.updates(timeout=180), 1):
            if n >= 10:
                break
    first.kill()  # 2 -> 1
    publish(kafka_config, topic_prefix, cases, messages[third:2 * third])
    newcomers = [start_worker() for _ in range(3)]
    newcomers[0].kill()  # killed while the group rebalances for the newcomers
    publish(kafka_config, topic_prefix, cases, messages[2 * third:])
    got = wait_finals(kafka_config, topic_prefix, list(refs), timeout=400)
    for stream, ref in refs.items():
        assert [_strip(r) for r in got[stream]] == ref, (stream, second.log_tail(30))


def test_broker_restart_mid_stream(kafka_config, topic_prefix, start_worker, restart_broker):
    cases = mixed_workload(10, prefix="b")
    refs = {c.stream: reference_versions(c) for c in cases}
    messages = interleave(cases)
    half = len(messages) // 2
    worker = start_worker()
    publish(kafka_config, topic_prefix, cases, messages[:half])
    with SelectionReader(kafka_config, load_catalogue(topic_prefix)["selected"].name) as reader:
        for n, _ in enumerate(reader.updates(timeout=180), 1):
            if n >= 5:
                break
    restart_broker()
    publish(kafka_config, topic_prefix, cases, messages[half:])
    got = wait_finals(kafka_config, topic_prefix, list(refs), timeout=400)
    for stream, ref in refs.items():
        assert [_strip(r) for r in got[stream]] == ref, (stream, worker.log_tail(30))


def test_restore_reads_on_to_the_changelog_end_committed_with_the_offsets(
        kafka_config, topic_prefix, make_worker):
    """A transaction's commit returns before its markers are on every partition, so a worker
    taking over at that moment sees a changelog whose stable end lies before the records of a
    committed transaction (seen in CI: a scale-out restored nothing for four partitions and
    dead-lettered their streams). Here the moment is held open: a changelog record in an open
    transaction, and the input offset committed with metadata saying the changelog reaches
    past it. The new owner must wait for that record and apply it."""
    from streamfs.worker.state_records import header_key

    app_id, features, send_rest = half_published(kafka_config, topic_prefix, make_worker,
                                                 "held", seed=3)
    # the stream's header deleted, in a transaction left open
    held, _, _, end = hold_changelog_record(kafka_config, app_id, features, header_key("held"),
                                            None)

    second = make_worker(topic_prefix, app_id)
    deadline = time.monotonic() + 120
    while "reading on as the commit markers arrive" not in second.log_path.read_text():
        assert time.monotonic() < deadline, second.log_tail(40)
        time.sleep(0.2)  # polling another process's log
    held.commit_transaction(30)  # the markers arrive

    send_rest()  # the new owner restored the deletion: the stream is unknown to it now
    letter = first_dead_letter(kafka_config, topic_prefix, "held")
    assert "for unknown stream 'held'" in letter["reason"], letter
    with SelectionReader(kafka_config, load_catalogue(topic_prefix)["selected"].name) as reader:
        versions = [r["version"] for r in reader.updates("held", to_end=True)]
    assert versions == [1], second.log_tail(40)
