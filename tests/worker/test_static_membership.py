"""Static group membership (``STREAMFS_INSTANCE_ID``, KIP-345) against a real broker.

A worker SIGKILLed and restarted under its instance id takes its former self's place at once:
ready long before the dead member's session timeout, with the same partitions, and its peer is
left alone (no rebalance). Every version of every stream reaches a ``read_committed`` reader
once, equal to an uninterrupted run."""

from __future__ import annotations

import time

import pytest

from streamfs.client import SelectionReader
from streamfs.topics import load_catalogue

from .test_worker_acceptance import _strip, publish, reference_versions, wait_finals
from .workload import interleave, mixed_workload

pytestmark = pytest.mark.kafka

#: far beyond anything these tests wait for: a test that waited for a session to time out
#: would fail its deadlines
SESSION_TIMEOUT = 120.0


def _results_after_some(kafka_config, prefix, n: int) -> None:
    """Block until the worker has published ``n`` results (it owns its partitions and is at
    work)."""
    with SelectionReader(kafka_config, load_catalogue(prefix)["selected"].name) as reader:
        for count, _ in enumerate(reader.updates(timeout=180), 1):
            if count >= n:
                return


def _exactly_once(kafka_config, prefix, refs: dict[str, list[dict]], log_of) -> None:
    """Every stream's versions, read to the end of the results topic by a read_committed
    reader, are those of an uninterrupted run: each once, in order, equal."""
    got = wait_finals(kafka_config, prefix, list(refs), timeout=300)
    with SelectionReader(kafka_config, load_catalogue(prefix)["selected"].name) as reader:
        everything = list(reader.updates(to_end=True))
    for stream, ref in refs.items():
        assert [_strip(r) for r in got[stream]] == ref, (stream, log_of())
        versions = [r["version"] for r in everything if r["stream"] == stream]
        assert versions == list(range(1, len(ref) + 1)), (stream, versions, log_of())


def test_a_worker_restarted_under_its_instance_id_is_ready_at_once_and_its_peer_left_alone(
        kafka_config, topic_prefix, start_worker):
    cases = mixed_workload(16, prefix="st")
    refs = {c.stream: reference_versions(c) for c in cases}
    messages = interleave(cases)
    half = len(messages) // 2
    # a dead transaction's offsets hold the restart's read of the committed offsets until the
    # broker aborts it: this timeout plus up to 10 s (its abort check's interval)
    env = {"STREAMFS_SESSION_TIMEOUT": str(SESSION_TIMEOUT), "STREAMFS_TRANSACTION_TIMEOUT": "5"}
    first = start_worker(STREAMFS_INSTANCE_ID="w0", **env)
    first.wait_ready()
    peer = start_worker(STREAMFS_INSTANCE_ID="w1", **env)
    every = {f"{load_catalogue(topic_prefix)[kind].name}:{p}"
             for kind in ("features", "instances")
             for p in range(load_catalogue(topic_prefix)[kind].partitions)}
    deadline = time.monotonic() + 120
    while True:  # the group has settled once the two share every input partition
        mine, theirs = first.health(), peer.health()
        if (mine and theirs and mine["status"] == theirs["status"] == "ok"
                and mine["assigned"] and theirs["assigned"]
                and set(mine["assigned"]) | set(theirs["assigned"]) == every
                and not set(mine["assigned"]) & set(theirs["assigned"])):
            break
        assert time.monotonic() < deadline, (first.log_tail(20), peer.log_tail(20))
        time.sleep(0.1)  # polling the workers' health endpoints
    publish(kafka_config, topic_prefix, cases, messages[:half])
    _results_after_some(kafka_config, topic_prefix, 10)
    first.kill()  # mid-stream: its partitions keep their input waiting
    publish(kafka_config, topic_prefix, cases, messages[half:])

    restarted_at = time.time()
    second = start_worker(STREAMFS_INSTANCE_ID="w0", **env)
    ready = second.wait_ready(timeout=SESSION_TIMEOUT / 2)
    took = ready["ready_at"] - restarted_at
    # without an instance id the group would first wait out the dead member's session
    # (README: ready 27-28 s after a restart with the default 30 s); measured here: 3 s
    assert took < SESSION_TIMEOUT / 4, (took, second.log_tail(20))
    assert sorted(ready["assigned"]) == sorted(mine["assigned"])  # its partitions, back
    _exactly_once(kafka_config, topic_prefix, refs, lambda: second.log_tail(30))
    # the peer kept its partitions throughout: no assignment since the group settled
    now = peer.health()
    assert (now["status"], now["ready_at"], now["assigned"]) == (
        "ok", theirs["ready_at"], theirs["assigned"]), peer.log_tail(20)
