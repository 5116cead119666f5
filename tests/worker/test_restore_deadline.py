"""A restore that gives up at its deadline (the changelog's stable end never reached the end
committed with the offsets in time) goes on with what it read; the partition's local copy
must not then claim, with the next commit's save, the changelog records it never read. Real
broker; a changelog record held in an open transaction past the deadline stands for commit
markers that come late."""

from __future__ import annotations

import time
import uuid

import numpy as np
import pytest

from streamfs.client import SelectionReader
from streamfs.producers import StreamPublisher
from streamfs.topics import load_catalogue

from .held_changelog import hold_changelog_record

pytestmark = pytest.mark.kafka


def test_a_restore_past_its_deadline_leaves_no_local_copy_claiming_unread_records(
        kafka_config, topic_prefix, make_worker, tmp_path):
    from streamfs.producers import feature_stream_messages
    from streamfs.worker.localstore import LocalStore
    from streamfs.worker.processor import SEP

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

    probe = f"probe{SEP}x"  # a key no stream reads: it changes nothing but the store
    # held open well past the restore's deadline
    held, tp, changelog, end = hold_changelog_record(kafka_config, app_id, features, probe, b"1",
                                                     **{"transaction.timeout.ms": 120_000})

    # a 2 s transaction timeout: the restore gives up after 12 s
    second = make_worker(topic_prefix, app_id, STREAMFS_TRANSACTION_TIMEOUT="2")
    deadline = time.monotonic() + 120
    while f"ends before offset {end}" not in second.log_path.read_text():
        assert time.monotonic() < deadline, second.log_tail(40)
        time.sleep(0.2)  # polling another process's log
    send(msgs[3:])  # committed on top of the partial restore, and saved locally after
    with SelectionReader(kafka_config, catalogue["selected"].name) as reader:
        assert list(reader.updates("late", until_final=True, timeout=120))[-1]["final"]
    second.stop()
    held.commit_transaction(30)  # the record the restore never read is in the changelog

    local = LocalStore.open(tmp_path / "data" / app_id, changelog, tp.partition)
    assert local is not None
    try:
        records, offset, _ = local.load()
    finally:
        local.close()
    # a copy is the changelog up to its offset: one past the record must hold it
    assert offset is None or offset < end or probe in records, (offset, end)
