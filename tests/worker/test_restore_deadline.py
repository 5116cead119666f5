"""A restore whose changelog's stable end does not reach, within its deadline, the end
committed with the offsets. Where the records are there but a transaction still open hides
them, the worker stops (exit 70) rather than run on part of its state, and a restart after
the transaction has ended restores all of it. Where they are not there at all (the changelog
made again), it goes on with what it read, and the partition's local copy is not used (a
save after the next commit would claim the records never read). Real broker."""

from __future__ import annotations

import time
import uuid

import numpy as np
import pytest

from streamfs.client import OutputReader, SelectionReader
from streamfs.producers import StreamPublisher
from streamfs.topics import load_catalogue

from .held_changelog import claim_changelog_end, committed_input, hold_changelog_record

pytestmark = pytest.mark.kafka


@pytest.fixture
def half_stream(kafka_config, topic_prefix, make_worker):
    """A group whose worker committed the first three messages of stream 'late' (open and two
    blocks) and stopped; returns the app id, the features topic and a sender of the rest."""
    from streamfs.producers import feature_stream_messages

    app_id = f"app-{uuid.uuid4().hex[:8]}"
    catalogue = load_catalogue(topic_prefix)
    features = catalogue["features"]
    rng = np.random.default_rng(5)
    X, y = rng.normal(size=(60, 40)), np.arange(60) % 2
    msgs = list(feature_stream_messages("late", X, y, "saola", block_bytes=60 * 8 * 10))
    assert len(msgs) == 6  # open, four blocks, close

    def send(batch: list[dict]) -> None:
        with StreamPublisher(kafka_config, features.name) as pub:
            pub.send_all(batch)

    first = make_worker(topic_prefix, app_id)
    send(msgs[:3])
    with SelectionReader(kafka_config, catalogue["selected"].name) as reader:
        next(reader.updates("late", timeout=120))  # committed, and saved to the local copy
    first.stop()
    return app_id, features, lambda: send(msgs[3:])


def _wait_for_line(worker, line: str) -> None:
    deadline = time.monotonic() + 120
    while line not in worker.log_path.read_text():
        assert time.monotonic() < deadline, worker.log_tail(40)
        time.sleep(0.2)  # polling another process's log


def _final(kafka_config, topic_prefix) -> dict:
    selected = load_catalogue(topic_prefix)["selected"].name
    with SelectionReader(kafka_config, selected) as reader:
        final = list(reader.updates("late", until_final=True, timeout=120))[-1]
    assert final["final"]
    return final


def test_records_hidden_by_an_open_transaction_stop_the_worker_until_it_ends(
        kafka_config, topic_prefix, make_worker, half_stream):
    """It went on with part of its state (one ERROR line): here the stream's header, deleted
    in the held transaction, would have been missing only until the markers came."""
    from streamfs.worker.processor import header_key

    app_id, features, send_rest = half_stream
    held, _, changelog, end = hold_changelog_record(kafka_config, app_id, features,
                                                    header_key("late"), None,
                                                    **{"transaction.timeout.ms": 120_000})
    # a 2 s transaction timeout: the restore waits 12 s for the markers
    second = make_worker(topic_prefix, app_id, STREAMFS_TRANSACTION_TIMEOUT="2")
    assert second.proc.wait(120) == 70, second.log_tail(40)
    assert f"changelog {changelog}:" in second.log_tail(5)
    assert f"holds the records up to offset {end}" in second.log_tail(5)
    assert "Traceback" not in second.log_path.read_text()  # one line: a known condition
    assert "restored what is there" not in second.log_path.read_text()
    held.commit_transaction(30)  # the markers arrive: the header is deleted
    third = make_worker(topic_prefix, app_id, STREAMFS_TRANSACTION_TIMEOUT="2")
    third.wait_ready()
    send_rest()  # the stream is unknown to the restored state: its messages are refused
    dead_letters = load_catalogue(topic_prefix)["dead_letter"].name
    with OutputReader(kafka_config, dead_letters) as reader:
        for item in reader.messages(timeout=120):
            if item is not None and item[1].get("stream") == "late":
                assert "for unknown stream 'late'" in item[1]["reason"], item[1]
                break


def test_records_that_are_not_there_are_restored_without(kafka_config, topic_prefix,
                                                         make_worker, half_stream):
    app_id, features, send_rest = half_stream
    tp, changelog = committed_input(kafka_config, app_id, features)
    claim_changelog_end(kafka_config, app_id, tp, 10_000)  # far past the changelog's end
    second = make_worker(topic_prefix, app_id, STREAMFS_TRANSACTION_TIMEOUT="2")
    _wait_for_line(second, f"changelog {changelog}:{tp.partition} ends before offset 10000")
    assert f"local state of {changelog}:{tp.partition} failed (restore incomplete)" \
        in second.log_path.read_text(), second.log_tail(40)
    send_rest()  # the state read is the whole changelog: the stream goes on
    assert _final(kafka_config, topic_prefix)["version"] >= 1
    assert second.proc.poll() is None
