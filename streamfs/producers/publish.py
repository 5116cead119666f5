"""Publish streams from Python objects or files: the library side of ``streamfs produce``."""

from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence

from streamfs.producers.blocks import (block_budget, feature_stream_messages,
                                       instance_messages_from_chunks)
from streamfs.producers.kafka import StreamPublisher, topic_message_limit
from streamfs.producers.objects import from_objects
from streamfs.producers.rate import TokenBucket, throttle
from streamfs.producers.sources import InstanceSource

#: cap on librdkafka's local queue so a fast reader cannot buffer a whole file in memory
PRODUCER_QUEUE_KBYTES = 32 * 1024


def send_messages(messages: Iterable[dict], kafka_config: dict[str, Any], topic: str, *,
                  rate: float | None = None,
                  on_message: Callable[[dict], None] | None = None) -> int:
    """Send ``messages`` in order, optionally paced at ``rate`` items/s; returns the count.

    Raises :class:`~streamfs.broker.BrokerUnreachable` if no broker answers, ``DeliveryError``
    if the topic is not available or the broker did not acknowledge every message. Nothing is sent before every partition of
    ``topic`` is served (see :meth:`StreamPublisher.connect`): a topic created moments ago by
    any tool would otherwise lose its first records.
    """
    if rate is not None:
        messages = throttle(messages, TokenBucket(rate))
    conf = {"queue.buffering.max.kbytes": PRODUCER_QUEUE_KBYTES, **kafka_config}
    count = 0
    with StreamPublisher(conf, topic) as pub:
        pub.connect()
        for message in messages:
            pub.send(message)
            count += 1
            if on_message is not None:
                on_message(message)
    return count


def topic_block_budget(kafka_config: dict[str, Any], topic: str,
                       worker_limit: int | None = None) -> int:
    """:func:`~streamfs.producers.blocks.block_budget` of what ``topic`` accepts (its
    ``max.message.bytes``), capped at ``worker_limit`` (the worker's record limit) when given."""
    from streamfs.broker import check_reachable, with_kafka_logger

    kafka_config = with_kafka_logger(kafka_config)
    check_reachable(kafka_config)  # else the limit's query waits 10 s for no broker
    limit = topic_message_limit(kafka_config, topic)
    if limit is not None and worker_limit is not None:
        limit = min(limit, worker_limit)
    return block_budget(limit)


def produce_features(kafka_config: dict[str, Any], topic: str, stream: str, X: Any, y: Any = None,
                     algorithm: str = "saola", params: dict | None = None, *,
                     label: str | int | None = None,
                     groups: Sequence[Sequence[int]] | None = None,
                     shuffle_seed: int | None = None, block_bytes: int | None = None,
                     rate: float | None = None, replace: bool = False) -> int:
    """Publish ``X`` (ndarray, scipy.sparse or DataFrame) column-wise as a feature stream;
    a DataFrame's column names name the features in the results. ``block_bytes``: payload
    budget per message (default: :func:`~streamfs.producers.blocks.block_budget` of the
    topic's ``max.message.bytes``)."""
    X, y, names = from_objects(X, y, label=label)
    block_bytes = block_bytes or topic_block_budget(kafka_config, topic)
    messages = feature_stream_messages(stream, X, y, algorithm, params, groups=groups,
                                       block_bytes=block_bytes, shuffle_seed=shuffle_seed,
                                       feature_names=names, replace=replace)
    return send_messages(messages, kafka_config, topic, rate=rate)


def produce_instances(kafka_config: dict[str, Any], topic: str, stream: str, X: Any,
                      y: Any = None, algorithm: str = "ofs", params: dict | None = None, *,
                      label: str | int | None = None, block_bytes: int | None = None,
                      rate: float | None = None, replace: bool = False) -> int:
    """Publish ``X`` (arrays, DataFrame, or an :class:`InstanceSource`) row-wise;
    ``block_bytes`` as for :func:`produce_features`."""
    source = X if isinstance(X, InstanceSource) else InstanceSource.from_arrays(
        *from_objects(X, y, label=label))
    block_bytes = block_bytes or topic_block_budget(kafka_config, topic)
    messages = instance_messages_from_chunks(
        stream, source.chunks(), source.n_features, algorithm, params,
        feature_names=source.feature_names, block_bytes=block_bytes,
        max_rows=rows_per_message(rate), replace=replace)
    return send_messages(messages, kafka_config, topic, rate=rate)


def rows_per_message(rate: float | None) -> int | None:
    """With a rate, a message carries at most one second's worth, so replay looks smooth.

    >>> rows_per_message(None), rows_per_message(0.2), rows_per_message(500)
    (None, 1, 500)
    """
    return None if rate is None else max(1, int(rate))
