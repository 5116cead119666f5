"""Publish streams to Kafka with an idempotent confluent-kafka producer."""

from __future__ import annotations

import contextlib
from typing import Any, Iterable, Iterator

from streamfs.broker import denied, is_denied, kafka_error
from streamfs.codec import encode


#: the publisher client's largest message unless its configuration says otherwise
PUBLISHER_MESSAGE_BYTES = 16 * 1024 * 1024


class DeliveryError(RuntimeError):
    """A message could not be delivered to the broker."""


#: how long a publish waits for the broker to acknowledge what it sent (its ``close`` waits for
#: every message before it) before it gives up
ACK_TIMEOUT_SECONDS = 120.0


class DeliveryTimeout(DeliveryError):
    """The broker did not acknowledge the messages in flight within the time given."""


def admin_config(kafka_config: dict[str, Any]) -> dict[str, Any]:
    """The connection settings of ``kafka_config`` for an AdminClient: without callbacks and
    statistics (they belong to the producer)."""
    return {k: v for k, v in kafka_config.items()
            if not callable(v) and k != "statistics.interval.ms"}


def topic_message_limit(kafka_config: dict[str, Any], topic: str,
                        timeout: float = 10.0) -> int | None:
    """The largest record ``topic`` accepts: its ``max.message.bytes`` (the broker's default
    where the topic sets none); None when it cannot be read (no such topic, no permission to
    describe its configuration, no broker)."""
    from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

    from streamfs.broker import make_client

    admin = make_client(AdminClient, admin_config(kafka_config))
    resource = ConfigResource(ResourceType.TOPIC, topic)
    try:
        entries = admin.describe_configs([resource], request_timeout=timeout)[resource].result(
            timeout)
        return int(entries["max.message.bytes"].value)
    except Exception:  # noqa: BLE001 - any failure means "unknown": the caller's safe default
        return None


class StreamPublisher:
    """Sends encoded messages keyed by stream id; ``flush()`` raises on any failed delivery.

    Idempotence and ``acks=all`` keep each stream's messages in order and without duplicates
    even when the client retries.
    """

    def __init__(self, kafka_config: dict[str, Any], topic: str) -> None:
        from confluent_kafka import Producer

        from streamfs.broker import make_client, with_kafka_logger

        kafka_config = with_kafka_logger(kafka_config)
        conf = {"enable.idempotence": True, "acks": "all", "linger.ms": 5,
                "message.max.bytes": PUBLISHER_MESSAGE_BYTES, "compression.type": "none",
                # Kafka's own key hash (Java, kafkajs, franz-go): a stream's messages from
                # another client land on the partition holding its state (librdkafka's default,
                # CRC-32, put a replace sent by a Java producer on another partition: a new stream)
                "partitioner": "murmur2_random",
                # never let a broker with auto.create.topics.enable (Kafka's default) create
                # a catalogue topic with its own defaults (one partition, 1 MB messages)
                # because a stream was published before any worker ran
                "allow.auto.create.topics": False,
                **kafka_config}
        self._producer = make_client(Producer, conf)
        self._config = kafka_config
        self.topic = topic
        self._errors: list[str] = []
        self._denial: Any = None  # the first delivery report that says an ACL denied it
        #: messages the broker acknowledged
        self.delivered = 0
        #: of those, how many were acknowledged before the first refused one (a stream's
        #: messages share a partition, whose reports come in order); None: none refused
        self.delivered_before_failure: int | None = None

    def connect(self, timeout: float = 10.0) -> None:
        """Connect and fetch the topic's metadata now rather than on the first send; raises
        :class:`DeliveryError` if the broker does not have the topic,
        :class:`~streamfs.broker.BrokerUnreachable` at once if no broker answers."""
        from confluent_kafka import KafkaError, KafkaException

        from streamfs.broker import check_reachable

        check_reachable(admin_config(self._config), timeout)
        try:
            meta = self._producer.list_topics(self.topic, timeout=timeout).topics.get(self.topic)
        except KafkaException as exc:
            raise DeliveryError(
                f"cannot reach the broker for topic {self.topic!r}: {exc}") from None
        if meta is None or meta.error is not None:
            if meta is None or meta.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                # the usual first-hour case: published before any worker created the topics
                from streamfs.topics import missing_topic_message

                raise DeliveryError(f"{missing_topic_message(self.topic)}, then publish again")
            if is_denied(meta.error):
                raise self._denied(meta.error)
            raise DeliveryError(f"topic {self.topic!r} is not available: {meta.error.str()}")
        self._wait_served(len(meta.partitions), timeout)

    def _wait_served(self, partitions: int, timeout: float) -> None:
        """Wait until every partition's leader serves it (a topic created moments ago): see
        :func:`streamfs.topics.unserved_partitions`."""
        from confluent_kafka.admin import AdminClient

        from streamfs.broker import make_client
        from streamfs.topics import wait_until_served

        admin = make_client(AdminClient, admin_config(self._config))
        try:
            wait_until_served(admin, {self.topic: partitions}, timeout)
        except TimeoutError as exc:
            raise DeliveryError(f"topic {self.topic!r}: {exc}") from None

    def _on_delivery(self, err, msg) -> None:
        if err is not None:
            if self._denial is None and is_denied(err):
                self._denial = err
            self._errors.append(f"{msg.topic()} key={msg.key()!r}: {err}")
            if self.delivered_before_failure is None:
                self.delivered_before_failure = self.delivered
        else:
            self.delivered += 1

    def send(self, message: dict) -> None:
        self.send_raw(message["stream"].encode(), encode(message))

    def send_raw(self, key: bytes | None, value: bytes) -> None:
        with self._denials():
            while True:
                try:
                    self._producer.produce(self.topic, key=key, value=value,
                                           on_delivery=self._on_delivery)
                    break
                except BufferError:  # local queue full: serve delivery reports, then retry
                    self._producer.poll(0.5)
            self._producer.poll(0)

    @contextlib.contextmanager
    def _denials(self) -> Iterator[None]:
        """An ACL's refusal that the client raises (a fatal one: an idempotent producer with
        WRITE on no topic gets no producer id, CLUSTER_AUTHORIZATION_FAILED), also as the
        ``SystemError`` it raises while serving a delivery callback, as
        :class:`~streamfs.broker.AccessDenied`."""
        from confluent_kafka import KafkaException

        try:
            yield
        except (KafkaException, SystemError) as exc:
            if is_denied(err := kafka_error(exc)):
                raise self._denied(err) from None
            raise

    def send_all(self, messages: Iterable[dict]) -> int:
        count = 0
        for message in messages:
            self.send(message)
            count += 1
        self.flush()
        return count

    def poll(self, timeout: float = 0.0) -> None:
        """Serve delivery reports and any other callbacks in the client settings (such as
        ``stats_cb``), waiting up to ``timeout`` seconds for one."""
        with self._denials():
            self._producer.poll(timeout)

    def unsettled(self) -> int:
        """Messages handed to the client that are neither acknowledged nor refused yet."""
        return len(self._producer)

    def flush(self, timeout: float | None = None) -> None:
        """Wait for every message sent to be acknowledged, up to ``timeout`` seconds (default
        :data:`ACK_TIMEOUT_SECONDS`): :class:`DeliveryTimeout` after it, else
        :meth:`raise_failures`."""
        timeout = ACK_TIMEOUT_SECONDS if timeout is None else timeout
        with self._denials():
            remaining = self._producer.flush(timeout)
        if remaining:
            raise DeliveryTimeout(f"{remaining} message(s) still unacknowledged after "
                                  f"{timeout:g} s: the broker does not answer")
        self.raise_failures()

    def raise_failures(self) -> None:
        """:class:`DeliveryError` if a delivery report served so far says a message failed
        (reports are served by every send, :meth:`poll` and :meth:`flush`);
        :class:`~streamfs.broker.AccessDenied` if the broker's ACLs refused one."""
        if self._errors:
            errors, self._errors = self._errors, []
            if self._denial is not None:
                raise self._denied(self._denial)
            raise DeliveryError(f"{len(errors)} delivery failure(s); first: {errors[0]}")

    def _denied(self, err: Any) -> Exception:
        return denied(self._config, err, f"publishing to topic {self.topic!r}",
                      "WRITE and DESCRIBE on it (WRITE on a topic also gets an idempotent "
                      "producer its id)")

    def __enter__(self) -> "StreamPublisher":
        return self

    def __exit__(self, *exc) -> None:
        self.flush()
