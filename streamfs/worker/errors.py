"""How the worker's loop fails and stops (its exceptions), and how it reads librdkafka's
errors: a broker that does not answer, a cluster that moves, an instance fenced."""

from __future__ import annotations

from typing import Any

from streamfs.settings import Settings


class Hung(Exception):
    """A transactional call did not return within its deadline."""


class Rewind(Exception):
    """The current transaction was aborted: restore state and re-read from committed offsets."""


class RestoreHeld(Exception):
    """A changelog partition holds the records its committed offsets claim, but a transaction
    still open keeps them from ``read_committed`` readers past the restore's deadline (a stale
    producer's transaction lasts up to its own ``transaction.timeout.ms``). Running on the part
    read would be wrong state; the worker exits (70) and its supervisor's restart reads again."""


class StoppedWhileUnreachable(Exception):
    """A stop was asked while the worker waited for an unreachable broker to set up a new
    producer: the batch in progress cannot commit, and its input is read again by the
    partition's next owner (nothing of it is visible: its transaction never committed)."""


class StoppedWhileRestoring(StoppedWhileUnreachable):
    """A stop was asked while the worker restored its state (reading a long changelog, or
    waiting for records an open transaction hides): nothing was processed since the
    assignment, and the partitions' next owner restores them."""


class InstanceFenced(Exception):
    """Another worker joined the group with this worker's ``STREAMFS_INSTANCE_ID``, and the
    broker fenced this one: it can commit nothing more (its transaction in progress is
    aborted) and stops."""

    def __init__(self, settings: Settings) -> None:
        super().__init__(
            f"another worker uses the same STREAMFS_INSTANCE_ID {settings.instance_id!r} in "
            f"group {settings.app_id!r}: the broker fenced this one, which stops without "
            "committing more. Give each worker its own STREAMFS_INSTANCE_ID")


def fenced(err: Any) -> bool:
    """Whether librdkafka's ``err`` says another member took this one's ``group.instance.id``:
    the transaction's offsets refused with FENCED_INSTANCE_ID, or the consumer's fatal error,
    whose code is _FATAL with librdkafka's description of FENCED_INSTANCE_ID in its text (the
    Python client has no call for the underlying code)."""
    from confluent_kafka import KafkaError

    if err.code() == KafkaError.FENCED_INSTANCE_ID:
        return True
    return (err.code() == KafkaError._FATAL
            and KafkaError(KafkaError.FENCED_INSTANCE_ID).str() in err.str())


def unreachable_codes() -> frozenset[int]:
    """librdkafka's errors that say no broker answers the question at all (down, or without
    the quorum or the replicas to answer it). ``_DESTROY_BROKER`` ("Broker handle destroyed
    without termination") fails a request in flight when librdkafka drops its handle of a
    broker that the cluster's metadata no longer lists: on a 3-node cluster, a watermark query
    just after two crashed nodes came back, and the worker had exited 70. Past its deadline
    :meth:`~streamfs.worker.broker_contact.BrokerContact.ask` waits for the broker on these
    instead of giving up."""
    from confluent_kafka import KafkaError

    return frozenset({
        KafkaError._TIMED_OUT, KafkaError.REQUEST_TIMED_OUT, KafkaError._TRANSPORT,
        KafkaError._ALL_BROKERS_DOWN, KafkaError.COORDINATOR_NOT_AVAILABLE,
        KafkaError._DESTROY_BROKER})


def moving_codes() -> frozenset[int]:
    """librdkafka's errors that say the cluster is moving, not that anything is wrong: a
    broker restarted or crashed (:func:`unreachable_codes`), a partition's leader or a group's
    coordinator being elected or loading.
    :meth:`~streamfs.worker.broker_contact.BrokerContact.ask` asks again on these."""
    from confluent_kafka import KafkaError

    return unreachable_codes() | {
        KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.LEADER_NOT_AVAILABLE, KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError._UNKNOWN_PARTITION,
        # a leader just elected whose high watermark has not caught up (the offsets of a
        # rewind, as two crashed nodes of three came back: the worker had exited 70), and a
        # leader epoch that moved on under the request
        KafkaError.OFFSET_NOT_AVAILABLE, KafkaError.FENCED_LEADER_EPOCH,
        KafkaError.UNKNOWN_LEADER_EPOCH}
