"""A group's committed input offset made to claim more of the changelog than a reader sees:
a changelog record held in an open transaction (how a new owner meets a transaction whose
commit markers have not reached every partition yet, or come too late), or records that are
not there at all (a changelog topic made again)."""

from __future__ import annotations

import uuid
from typing import Any, Callable

import numpy as np

from confluent_kafka import Consumer, Producer, TopicPartition

from streamfs.settings import Settings
from streamfs.topics import changelog_specs
from streamfs.worker.commit_metadata import offset_metadata


def committed_input(kafka_config: dict, app_id: str, features: Any
                    ) -> tuple[TopicPartition, str]:
    """The one partition of ``features`` for which group ``app_id`` (its worker stopped) has
    committed input, with that offset; and its changelog topic's name."""
    group = Consumer({**kafka_config, "group.id": app_id})
    try:
        committed = group.committed([TopicPartition(features.name, p)
                                     for p in range(features.partitions)], timeout=30)
    finally:
        group.close()
    (tp,) = [c for c in committed if c.offset > 0]
    changelog = changelog_specs(app_id, features.partitions, 1, Settings.from_env()
                                .max_message_bytes)["features-changelog"].name
    return tp, changelog


def claim_changelog_end(kafka_config: dict, app_id: str, tp: TopicPartition, end: int) -> None:
    """Commit ``tp``'s offset again for group ``app_id``, its metadata saying the changelog
    reaches offset ``end``."""
    group = Consumer({**kafka_config, "group.id": app_id})
    try:
        offsets = Producer({**kafka_config, "transactional.id": f"offsets-{uuid.uuid4().hex}"})
        offsets.init_transactions(30)
        offsets.begin_transaction()
        offsets.send_offsets_to_transaction(
            [TopicPartition(tp.topic, tp.partition, tp.offset, metadata=offset_metadata(end))],
            group.consumer_group_metadata(), 30)
        offsets.commit_transaction(30)
    finally:
        group.close()


def hold_changelog_record(kafka_config: dict, app_id: str, features: Any, key: str,
                          value: bytes | None, **producer: Any
                          ) -> tuple[Producer, TopicPartition, str, int]:
    """In group ``app_id``, whose worker committed input of one partition of ``features`` and
    stopped: produce ``key``/``value`` to that partition's changelog in a transaction left
    open (``producer``: more settings of its producer), then commit the same input offset
    again with metadata saying the changelog reaches past that record. Returns the producer
    holding the transaction, the input partition with its committed offset, the changelog's
    name and the offset the record ends at."""
    tp, changelog = committed_input(kafka_config, app_id, features)
    ends: list[int] = []
    held = Producer({**kafka_config, "transactional.id": f"held-{uuid.uuid4().hex}",
                     **producer})
    held.init_transactions(30)
    held.begin_transaction()
    held.produce(changelog, key=key.encode(), value=value, partition=tp.partition,
                 on_delivery=lambda err, msg: ends.append(msg.offset() + 1))
    assert held.flush(30) == 0 and ends
    claim_changelog_end(kafka_config, app_id, tp, ends[0])
    return held, tp, changelog, ends[0]


def half_published(kafka_config: dict, topic_prefix: str, make_worker: Callable[..., Any],
                   stream: str, seed: int) -> tuple[str, Any, Callable[[], None]]:
    """A new group whose worker committed the first three messages of a SAOLA stream of 60
    instances and 40 features (open and two blocks: version 1) and stopped. Returns the app
    id, the features topic and a sender of the other three (two blocks and close)."""
    from streamfs.client import SelectionReader
    from streamfs.producers import StreamPublisher, feature_stream_messages
    from streamfs.topics import load_catalogue

    app_id = f"app-{uuid.uuid4().hex[:8]}"
    catalogue = load_catalogue(topic_prefix)
    features = catalogue["features"]
    rng = np.random.default_rng(seed)
    X, y = rng.normal(size=(60, 40)), np.arange(60) % 2
    msgs = list(feature_stream_messages(stream, X, y, "saola", block_bytes=60 * 8 * 10))
    assert len(msgs) == 6  # open, four blocks, close

    def send(batch: list[dict]) -> None:
        with StreamPublisher(kafka_config, features.name) as pub:
            pub.send_all(batch)

    first = make_worker(topic_prefix, app_id)
    send(msgs[:3])
    with SelectionReader(kafka_config, catalogue["selected"].name) as reader:
        next(reader.updates(stream, timeout=120))  # committed, with its state and offsets
    first.stop()
    return app_id, features, lambda: send(msgs[3:])


def first_dead_letter(kafka_config: dict, topic_prefix: str, stream: str) -> dict:
    """The first dead letter of ``stream`` (waiting up to two minutes for it)."""
    from streamfs.client import OutputReader
    from streamfs.topics import load_catalogue

    with OutputReader(kafka_config, load_catalogue(topic_prefix)["dead_letter"].name) as reader:
        for item in reader.messages(timeout=120):
            if item is not None and item[1].get("stream") == stream:
                return item[1]
    raise AssertionError(f"no dead letter of stream {stream!r}")  # messages() timed out first
