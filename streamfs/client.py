"""Read selections from the selected-features topic (for downstream models and tests).

The topic is compacted and keyed by stream id, so reading it from the beginning gives every
stream's latest selection even to a subscriber that starts late.
"""

from __future__ import annotations

import time
import uuid
from typing import Any, Iterator

from streamfs.codec import CodecError, decode


class SelectionReader:
    """Reads result messages (decoded dicts) of the selected-features topic."""

    def __init__(self, kafka_config: dict[str, Any], topic: str) -> None:
        from confluent_kafka import Consumer

        self.topic = topic
        self._consumer = Consumer({
            "group.id": f"streamfs-reader-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "enable.partition.eof": True,
            **kafka_config,
        })

    def _assign_all(self) -> int:
        from confluent_kafka import OFFSET_BEGINNING, TopicPartition

        meta = self._consumer.list_topics(self.topic, timeout=30)
        parts = meta.topics[self.topic].partitions
        if not parts:
            raise RuntimeError(f"topic {self.topic!r} does not exist")
        self._consumer.assign([TopicPartition(self.topic, p, OFFSET_BEGINNING) for p in parts])
        return len(parts)

    def updates(self, stream: str | None = None, *, until_final: bool = False,
                timeout: float | None = None, to_end: bool = False) -> Iterator[dict]:
        """Yield results in arrival order (per partition), from the beginning of the topic.

        ``to_end``: stop at the end of the topic as it is now. ``until_final``: stop once the
        final result of ``stream`` (or of every stream seen, if ``stream`` is None) has arrived.
        ``timeout``: raise ``TimeoutError`` if that takes longer than this many seconds.
        """
        from confluent_kafka import KafkaError

        n_parts = self._assign_all()
        at_end: set[int] = set()
        open_streams: set[str] = set()
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"no final result for {stream or 'all streams'} on {self.topic} "
                                   f"after {timeout} s")
            msg = self._consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    at_end.add(msg.partition())
                    if to_end and len(at_end) == n_parts:
                        return
                    continue
                raise RuntimeError(f"consumer error on {self.topic}: {msg.error()}")
            at_end.discard(msg.partition())
            if msg.value() is None:
                continue
            try:
                result = decode(msg.value())
            except CodecError:
                continue  # not ours; the topic is meant for results only
            if stream is not None and result.get("stream") != stream:
                continue
            yield result
            if until_final:
                sid = result["stream"]
                if result.get("final"):
                    open_streams.discard(sid)
                    if stream is not None or not open_streams:
                        return
                else:
                    open_streams.add(sid)

    def current_selections(self) -> dict[str, dict]:
        """The latest result of every stream on the topic now."""
        latest: dict[str, dict] = {}
        for result in self.updates(to_end=True):
            prev = latest.get(result["stream"])
            if prev is None or result["version"] >= prev["version"]:
                latest[result["stream"]] = result
        return latest

    def close(self) -> None:
        self._consumer.close()

    def __enter__(self) -> "SelectionReader":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def current_selection(stream: str, kafka_config: dict[str, Any], topic: str) -> dict | None:
    """The latest result of ``stream`` (or ``None`` if it has none yet)."""
    with SelectionReader(kafka_config, topic) as reader:
        return reader.current_selections().get(stream)
