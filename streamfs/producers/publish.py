"""Publish streams from Python objects or files: the library side of ``streamfs produce``."""

from __future__ import annotations

import itertools
import math
import warnings
from numbers import Real
from typing import Any, Callable, Iterable, Iterator, Sequence

from streamfs.algorithms import registry
from streamfs.algorithms.opening import check_open, check_stream_id, open_advice
from streamfs.broker import AccessDenied, lost_interrupt
from streamfs.producers.blocks import (block_budget, check_shuffle_seed,
                                       feature_stream_messages, instance_messages_from_chunks,
                                       largest_column_bytes)
from streamfs.codec import encode
from streamfs.producers.checks import (check_block_bytes, check_budget, check_groups_apply,
                                       check_input_topic, check_instance_source, continuing,
                                       exists_problem, existing_stream, results_topic,
                                       wire_params)
from streamfs.producers.errors import InputDataError, PublishInterrupted, StreamLeftOpen
from streamfs.producers.kafka import (PUBLISHER_MESSAGE_BYTES, DeliveryError, DeliveryTimeout,
                                      StreamPublisher, topic_message_limit)
from streamfs.producers.objects import from_objects
from streamfs.producers.rate import TokenBucket, throttle
from streamfs.producers.sources import InstanceSource

#: how long Ctrl-C waits for the acknowledgements of the messages in flight
SETTLE_ON_INTERRUPT_SECONDS = 10.0
#: cap on librdkafka's local queue so a fast reader cannot buffer a whole file in memory
PRODUCER_QUEUE_KBYTES = 32 * 1024
#: librdkafka's default batch.size
LIBRDKAFKA_BATCH_BYTES = 1_000_000
#: librdkafka's largest message.max.bytes
LIBRDKAFKA_MESSAGE_LIMIT = 1_000_000_000


def send_messages(messages: Iterable[dict], kafka_config: dict[str, Any], topic: str, *,
                  rate: float | None = None,
                  on_message: Callable[[dict], None] | None = None,
                  record_limit: int | None = None) -> int:
    """Send ``messages`` in order, optionally paced at ``rate`` items/s; returns the count.

    Raises :class:`~streamfs.broker.BrokerUnreachable` if no broker answers, ``DeliveryError``
    if the topic is not available or the broker did not acknowledge every message. Nothing is
    sent before every partition of ``topic`` is served (see :meth:`StreamPublisher.connect`): a
    topic created moments ago by any tool would otherwise lose its first records.

    The publish stops at the first message that fails: bad data raised by ``messages``, a
    record over ``record_limit`` bytes, or a delivery the broker refused (a stream's ``close``
    is sent only once every message before it is acknowledged, so a stream with a gap is never
    closed). If messages were delivered by then, :class:`StreamLeftOpen` says how many and how
    to recover, chained to the cause; else the cause itself is raised. Ctrl-C raises
    :class:`~streamfs.producers.errors.PublishInterrupted` (a ``KeyboardInterrupt``) with the
    number of messages delivered.
    """
    if rate is not None:
        messages = throttle(messages, TokenBucket(rate))
    conf: dict[str, Any] = {"queue.buffering.max.kbytes": PRODUCER_QUEUE_KBYTES}
    if record_limit is not None:
        # the broker holds a batch of records to the topic's limit, not each record:
        # librdkafka's batches (batch.size, 1 MB) of small-topic blocks were refused whole
        conf["batch.size"] = min(LIBRDKAFKA_BATCH_BYTES, record_limit)
        # the client's own cap (16 MiB by default) must not refuse what the topic and the
        # worker take (STREAMFS_MAX_MESSAGE_BYTES goes to ~1 GB)
        conf["message.max.bytes"] = min(LIBRDKAFKA_MESSAGE_LIMIT,
                                        max(PUBLISHER_MESSAGE_BYTES, record_limit + 65536))
    conf.update(kafka_config)
    pub = StreamPublisher(conf, topic)
    pub.connect()
    count, stream = 0, ""
    try:
        for message in messages:
            stream = message["stream"]
            value = encode(message)
            check_record_size(message, len(value), record_limit)
            if message["kind"] == "close":
                pub.flush()  # every message before it acknowledged
            pub.send_raw(stream.encode(), value)
            pub.raise_failures()
            count += 1
            if on_message is not None:
                on_message(message)
        pub.flush()
    except BaseException as exc:
        if lost_interrupt(exc):
            exc = KeyboardInterrupt()
        if isinstance(exc, KeyboardInterrupt):
            # a user who pressed Ctrl-C waits a few seconds for the messages in flight, not
            # the two minutes a broker that does not answer would take; a second Ctrl-C
            # stops the wait. The caller's own count would include messages never acknowledged
            try:
                delivered, _ = _settle(pub, SETTLE_ON_INTERRUPT_SECONDS)
            except KeyboardInterrupt:
                delivered = (pub.delivered if pub.delivered_before_failure is None
                             else pub.delivered_before_failure)
            raise PublishInterrupted(stream, delivered, pub.unsettled()) from exc
        # after a wait that timed out, what is still in flight is not waited for again (a
        # broker gone for good kept the caller waiting twice as long as the error said)
        delivered, after = _settle(pub, 0.0 if isinstance(exc, DeliveryTimeout) else None)
        if not delivered or not isinstance(exc, Exception):  # e.g. SystemExit
            raise
        raise StreamLeftOpen(stream, delivered, exc, after=after) from exc
    return count


def _settle(pub: StreamPublisher, timeout: float | None = None) -> tuple[int, int]:
    """Wait (up to ``timeout`` seconds, default the publish's acknowledgement timeout) for
    what is in flight after a failure; how many messages were delivered before the first
    refused one, and how many after it (queued behind it, they went out all the same: the
    worker refuses them as a sequence gap)."""
    try:
        pub.flush(timeout)
    except (DeliveryError, AccessDenied):
        pass  # the failure being reported already, or one after it: the count says what got in
    before = pub.delivered_before_failure
    return (pub.delivered, 0) if before is None else (before, pub.delivered - before)


#: what a record batch of one record adds to its key and value, at most: the batch header
#: (61 bytes) and the record's attributes, deltas and varint lengths (19). The broker holds
#: the whole batch to the topic's max.message.bytes
RECORD_FRAMING_BYTES = 80


def check_record_size(message: dict, size: int, record_limit: int | None) -> None:
    """:class:`InputDataError` for a message the broker or the worker would refuse by size."""
    if record_limit is None:
        return
    framed = size + len(message["stream"].encode()) + RECORD_FRAMING_BYTES
    if framed > record_limit:
        raise InputDataError(
            f"the {message['kind']!r} message (seq {message['seq']}) of stream "
            f"{message['stream']!r} is {size} bytes ({framed} with its key and Kafka's record "
            f"framing), over the record limit of {record_limit} bytes (the topic's "
            f"max.message.bytes, or the worker's STREAMFS_MAX_MESSAGE_BYTES)")


def worker_record_limit() -> int:
    """The worker's record limit as this environment sets it (STREAMFS_MAX_MESSAGE_BYTES)."""
    from streamfs.settings import Settings

    return Settings.from_env().max_message_bytes


def worker_buffer_cap() -> int:
    """The most an ``open`` may ask for in ``max_buffer_bytes`` as this environment sets it
    (STREAMFS_MAX_BUFFER_BYTES)."""
    from streamfs.settings import Settings

    return Settings.from_env().max_buffer_bytes


def topic_record_limit(kafka_config: dict[str, Any], topic: str,
                       worker_limit: int | None = None) -> int | None:
    """The largest record ``topic`` accepts (its ``max.message.bytes``), capped at
    ``worker_limit`` (the worker's record limit) when given; None when the topic's limit
    cannot be read."""
    from streamfs.broker import check_reachable, with_kafka_logger

    kafka_config = with_kafka_logger(kafka_config)
    check_reachable(kafka_config)  # else the limit's query waits 10 s for no broker
    limit = topic_message_limit(kafka_config, topic)
    if limit is not None and worker_limit is not None:
        limit = min(limit, worker_limit)
    return limit


def _limits(kafka_config: dict[str, Any], topic: str,
            block_bytes: int | None) -> tuple[int, int]:
    """``(block budget, record limit)`` of a publish to ``topic``."""
    worker = worker_record_limit()
    limit = topic_record_limit(kafka_config, topic, worker)
    check_input_topic(kafka_config, topic)
    check_block_bytes(block_bytes, limit or worker)
    return block_bytes or block_budget(limit), limit or worker


def _check_arguments(kind: str, stream: str, algorithm: str, params: dict | None, *,
                     n_features: int | None = None, groups: Any = None,
                     shuffle_seed: Any = None, rate: Any = None, block_bytes: Any = None) -> None:
    """The checks of a publish's arguments that need no broker, run before it is asked
    anything: a mistyped algorithm or parameter is said at once, not after a broker's
    timeout (and the data's checks, which need the topic's record limit, follow)."""
    check_stream_id(stream)
    if kind == "features":
        check_groups_apply(algorithm, groups)
        check_shuffle_seed(shuffle_seed)
    check_open(kind, algorithm, params, n_features=n_features, buffer_cap=worker_buffer_cap())
    wire_params(params)
    items_per_message(rate)
    check_block_bytes(block_bytes, None)


def _publish(kafka_config: dict[str, Any], topic: str, kind: str, messages: Iterator[dict],
             replace: bool, rate: float | None, record_limit: int, results: str | None) -> int:
    """Send a stream whose ``open`` passed its checks, unless its id exists already on the
    ``results`` topic (see :func:`~streamfs.producers.checks.results_topic`)."""
    head = next(messages)  # the data's checks run before the 'open' is yielded
    existing = None
    if results is not None:
        existing = existing_stream(kafka_config, results, head["stream"])
        problem = exists_problem(head["stream"], existing, kind, "another stream id",
                                 "replace=True", replace)
        if problem is not None:
            raise StreamExists(problem)
    return send_messages(continuing(itertools.chain([head], messages), existing), kafka_config,
                         topic, rate=rate, record_limit=record_limit)


class StreamExists(ValueError):
    """The stream id has results already: publish under another id, or with replace=True
    (not for an id whose results are of the other kind of stream: another id only)."""


def produce_features(kafka_config: dict[str, Any], topic: str, stream: str, X: Any, y: Any = None,
                     algorithm: str = "saola", params: dict | None = None, *,
                     label: str | int | None = None,
                     groups: Sequence[Sequence[int]] | None = None,
                     shuffle_seed: int | None = None, block_bytes: int | None = None,
                     rate: float | None = None, replace: bool = False) -> int:
    """Publish ``X`` (ndarray, scipy.sparse or DataFrame) column-wise as a feature stream;
    a DataFrame's column names name the features in the results. ``block_bytes``: payload
    budget per message (default: :func:`~streamfs.producers.blocks.block_budget` of the
    topic's ``max.message.bytes``). Returns the number of messages sent.

    Runs the checks of ``streamfs produce`` before the ``open``: the data, labels, algorithm
    and parameters as the worker checks them (``ValueError``, :class:`InputDataError` for the
    data's faults; the arguments' before the broker is asked anything), and, when ``topic``
    is a catalogue topic (``<prefix>features``), whether the stream id has results on ``<prefix>selected-features`` already
    (:class:`StreamExists`, unless ``replace``; even with it if they are an instance
    stream's). Raises :class:`StreamLeftOpen` if the
    publish stopped after some messages went out."""
    results = results_topic(topic, "features")  # the wrong topic is refused before all else
    X, y, names = from_objects(X, y, label=label)
    _check_arguments("features", stream, algorithm, params, groups=groups,
                     shuffle_seed=shuffle_seed, rate=rate, block_bytes=block_bytes)
    budget, limit = _limits(kafka_config, topic, block_bytes)
    if block_bytes is not None:  # a column alone over it would go in a message of its own
        check_budget(block_bytes, largest_column_bytes(X, feature_names=names, groups=groups,
                                                       shuffle_seed=shuffle_seed), "column")
    messages = feature_stream_messages(stream, X, y, algorithm, params, groups=groups,
                                       block_bytes=budget, shuffle_seed=shuffle_seed,
                                       feature_names=names, replace=replace, record_limit=limit,
                                       max_columns=items_per_message(rate),
                                       buffer_cap=worker_buffer_cap())
    head = next(messages)  # every check passed: what the worker will warn of is said here
    for text in open_advice(registry.get(algorithm).build(params), y):
        warnings.warn(text, UserWarning, stacklevel=2)
    return _publish(kafka_config, topic, "features", itertools.chain([head], messages), replace,
                    rate, limit, results)


def produce_instances(kafka_config: dict[str, Any], topic: str, stream: str, X: Any,
                      y: Any = None, algorithm: str = "ofs", params: dict | None = None, *,
                      label: str | int | None = None, block_bytes: int | None = None,
                      rate: float | None = None, replace: bool = False) -> int:
    """Publish ``X`` (arrays, DataFrame, or an :class:`InstanceSource`) row-wise;
    ``block_bytes`` and the checks as for :func:`produce_features`. The labels are checked
    whole before the ``open`` (an :class:`InstanceSource` is read once for this, unless
    ``params`` gives the ``classes``)."""
    results = results_topic(topic, "instances")  # before the data's checks and advice
    source = X if isinstance(X, InstanceSource) else InstanceSource.from_arrays(
        *from_objects(X, y, label=label))
    _check_arguments("instances", stream, algorithm, params, n_features=source.n_features,
                     rate=rate, block_bytes=block_bytes)
    budget, limit = _limits(kafka_config, topic, block_bytes)
    cap = worker_buffer_cap()
    # (block_bytes: the one chosen, checked against the widest row; None if not)
    params, chunks = check_instance_source(source, algorithm, params, limit, block_bytes, cap)
    messages = instance_messages_from_chunks(
        stream, chunks, source.n_features, algorithm, params,
        feature_names=source.feature_names, block_bytes=budget,
        max_rows=items_per_message(rate), replace=replace, record_limit=limit, buffer_cap=cap)
    return _publish(kafka_config, topic, "instances", messages, replace, rate, limit, results)


def items_per_message(rate: float | None) -> int | None:
    """With a rate, a message carries at most one second's worth of rows (instance streams) or
    columns (feature streams), so a replay is paced rather than a wait and then one block.

    >>> items_per_message(None), items_per_message(0.2), items_per_message(500)
    (None, 1, 500)
    """
    if rate is None:
        return None
    if isinstance(rate, bool) or not isinstance(rate, Real) or not (math.isfinite(rate)
                                                                     and rate > 0):
        raise ValueError(f"rate must be a finite number of items per second, more than 0, "
                         f"got {rate!r}")
    return max(1, int(rate))
