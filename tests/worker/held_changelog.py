"""A changelog record held in an open transaction while the input offset claiming it is
committed: how a new owner meets a transaction whose commit markers have not reached every
partition yet (or come too late)."""

from __future__ import annotations

import uuid
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition

from streamfs.settings import Settings
from streamfs.topics import changelog_specs
from streamfs.worker.app import offset_metadata


def hold_changelog_record(kafka_config: dict, app_id: str, features: Any, key: str,
                          value: bytes | None, **producer: Any
                          ) -> tuple[Producer, TopicPartition, str, int]:
    """In group ``app_id``, whose worker committed input of one partition of ``features`` and
    stopped: produce ``key``/``value`` to that partition's changelog in a transaction left
    open (``producer``: more settings of its producer), then commit the same input offset
    again with metadata saying the changelog reaches past that record. Returns the producer
    holding the transaction, the input partition with its committed offset, the changelog's
    name and the offset the record ends at."""
    group = Consumer({**kafka_config, "group.id": app_id})
    try:
        committed = group.committed([TopicPartition(features.name, p)
                                     for p in range(features.partitions)], timeout=30)
        (tp,) = [c for c in committed if c.offset > 0]
        changelog = changelog_specs(app_id, features.partitions, 1, Settings.from_env()
                                    .max_message_bytes)["features-changelog"].name
        ends: list[int] = []
        held = Producer({**kafka_config, "transactional.id": f"held-{uuid.uuid4().hex}",
                         **producer})
        held.init_transactions(30)
        held.begin_transaction()
        held.produce(changelog, key=key.encode(), value=value, partition=tp.partition,
                     on_delivery=lambda err, msg: ends.append(msg.offset() + 1))
        assert held.flush(30) == 0 and ends
        offsets = Producer({**kafka_config, "transactional.id": f"offsets-{uuid.uuid4().hex}"})
        offsets.init_transactions(30)
        offsets.begin_transaction()  # the same offset, now claiming the changelog up to the record
        offsets.send_offsets_to_transaction(
            [TopicPartition(features.name, tp.partition, tp.offset,
                            metadata=offset_metadata(ends[0]))],
            group.consumer_group_metadata(), 30)
        offsets.commit_transaction(30)
    finally:
        group.close()
    return held, tp, changelog, ends[0]
