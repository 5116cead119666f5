"""Read selections from the selected-features topic (for downstream models and tests).

The topic is compacted and keyed by stream id, so reading it from the beginning gives every
stream's latest selection even to a subscriber that starts late.
"""

from __future__ import annotations

import time
import uuid
from typing import Any, Iterator

from streamfs.codec import CodecError, decode_any


class TopicMissing(RuntimeError):
    """A topic to read does not exist on the broker (no worker has created the topics yet)."""


def first_offset(consumer: Any, topic: str, partition: int) -> int:
    """The partition's first offset, for assigning ``consumer`` there explicitly: the logical
    OFFSET_BEGINNING costs a fresh consumer a 500 ms retry of its offset query (librdkafka),
    measured 0.56 s to the first result instead of 0.04 s. Should retention remove records in
    between, auto.offset.reset=earliest applies. Where the broker cannot answer (a topic just
    created, its leader not known yet: NOT_LEADER_FOR_PARTITION), the logical offset, which
    librdkafka retries on its own; an error that lasts surfaces when consuming."""
    from confluent_kafka import OFFSET_BEGINNING, KafkaException, TopicPartition

    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=30)[0]
    except KafkaException:
        return OFFSET_BEGINNING


class OutputReader:
    """Reads decoded messages (msgpack or JSON) of output topics from their beginning.

    With several topics (say results and dead letters), messages of the topics interleave in
    arrival order.
    """

    def __init__(self, kafka_config: dict[str, Any], topic: str, *more_topics: str) -> None:
        from confluent_kafka import Consumer

        from streamfs.broker import with_kafka_logger

        kafka_config = with_kafka_logger(kafka_config)
        self._kafka_config = kafka_config
        self.topic = topic
        self.topics = (topic, *more_topics)
        self._n_partitions: int | None = None
        self._consumer = Consumer({
            "group.id": f"streamfs-reader-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "enable.partition.eof": True,
            # results are written in transactions: see each committed version exactly once
            "isolation.level": "read_committed",
            **kafka_config,
        })

    def assign(self) -> int:
        """Assign every partition of the topics from its first offset now, rather than when
        :meth:`messages` starts (which it does unless this was called before it); returns the
        number of partitions."""
        from confluent_kafka import TopicPartition

        from streamfs.broker import check_reachable

        if self._n_partitions is not None:
            return self._n_partitions
        check_reachable(self._kafka_config)  # BrokerUnreachable naming the address, at once
        assignment = []
        for topic in self.topics:
            meta = self._consumer.list_topics(topic, timeout=30).topics.get(topic)
            if meta is None or meta.error is not None or not meta.partitions:
                from streamfs.topics import missing_topic_message

                raise TopicMissing(missing_topic_message(topic))
            assignment += [TopicPartition(topic, p, first_offset(self._consumer, topic, p))
                           for p in meta.partitions]
        self._consumer.assign(assignment)
        self._n_partitions = len(assignment)
        return self._n_partitions

    def messages(self, *, to_end: bool = False, timeout: float | None = None,
                 poll: float = 0.5) -> Iterator[tuple[str, dict] | None]:
        """Yield ``(topic, decoded message)`` in arrival order (per partition); ``None`` after each
        ``poll`` seconds without one, so that callers can watch a clock or another topic.
        ``to_end``: stop at the end of the topic as it is now. ``timeout``: raise
        ``TimeoutError`` after this many seconds."""
        from confluent_kafka import KafkaError

        n_parts = self.assign()
        self._n_partitions = None  # the next call reads from the beginning again
        at_end: set[tuple[str, int]] = set()
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"nothing more on {', '.join(self.topics)} after {timeout} s")
            msg = self._consumer.poll(poll)
            if msg is None:
                yield None
                continue
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    at_end.add((msg.topic(), msg.partition()))
                    if to_end and len(at_end) == n_parts:
                        return
                    continue
                raise RuntimeError(f"consumer error on {self.topic}: {msg.error()}")
            at_end.discard((msg.topic(), msg.partition()))
            if msg.value() is None:
                continue
            try:
                message = decode_any(msg.value())
            except CodecError:
                continue  # not ours; the topic is meant for streamfs messages only
            yield msg.topic(), message

    def close(self) -> None:
        self._consumer.close()

    def __enter__(self) -> "OutputReader":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class SelectionReader(OutputReader):
    """Reads result messages (decoded dicts) of the selected-features topic."""

    def updates(self, stream: str | None = None, *, until_final: bool = False,
                timeout: float | None = None, to_end: bool = False,
                run: int | None = None) -> Iterator[dict]:
        """Yield results in arrival order (per partition), from the beginning of the topic.

        ``to_end``: stop at the end of the topic as it is now. ``until_final``: stop once the
        final result of ``stream`` (or of every stream seen, if ``stream`` is None) has arrived.
        ``timeout``: raise ``TimeoutError`` if that takes longer than this many seconds.
        ``run``: only results of that run of the stream (a replaced stream starts run 2, ...).
        """
        open_streams: set[str] = set()
        try:
            for item in self.messages(to_end=to_end, timeout=timeout):
                if item is None or item[1].get("kind") != "result":
                    continue
                result = item[1]
                if stream is not None and result.get("stream") != stream:
                    continue
                if run is not None and result.get("run", 1) != run:
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
        except TimeoutError:
            raise TimeoutError(f"no final result for {stream or 'all streams'} on {self.topic} "
                               f"after {timeout} s") from None

    def current_selections(self) -> dict[str, dict]:
        """The latest result of every stream on the topic now."""
        latest: dict[str, dict] = {}
        for result in self.updates(to_end=True):
            prev = latest.get(result["stream"])
            if prev is None or result["version"] >= prev["version"]:
                latest[result["stream"]] = result
        return latest


def current_selection(stream: str, kafka_config: dict[str, Any], topic: str) -> dict | None:
    """The latest result of ``stream`` (or ``None`` if it has none yet)."""
    with SelectionReader(kafka_config, topic) as reader:
        return reader.current_selections().get(stream)
