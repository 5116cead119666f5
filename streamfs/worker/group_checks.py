"""The worker's look at its consumer group before it joins it: a group that another
deployment uses stops the worker (a setup mistake, exit 2), and a group new to input that
another app id's workers processed is warned of (every stream's results would be published
again)."""

from __future__ import annotations

import logging
from typing import Any, Iterable

from streamfs.broker import principal
from streamfs.settings import Settings
from streamfs.topics import CatalogueError
from streamfs.worker.broker_contact import BrokerContact

log = logging.getLogger("streamfs.worker")

#: deadline of the start-up's look at the group's offsets of other deployments' topics
GROUP_CHECK_SECONDS = 15


def check_group_is_ours(consumer: Any, settings: Settings, inputs: Iterable[str],
                        broker: BrokerContact) -> bool:
    """:class:`CatalogueError` (a setup mistake: one line, exit 2) if the worker's group
    has committed offsets of another deployment's input topics (a topic that ends as
    one of this deployment's input topics do, under another prefix): a deployment whose
    prefix gives the same default app id (``streamfs.`` and ``streamfs``, or an empty
    prefix). The two would share the group and the changelogs: each start rebalanced the
    other, and one's streams were refused as already existing by the other's state.

    Asked with the consumer's ``committed`` before it joins: the admin client's
    ``list_consumer_group_offsets`` crashed the worker (SIGSEGV) on clusters with ACLs.
    Topics the worker may not describe are not in its metadata and not asked about; a
    partition the broker answers with an error for counts as none committed. No answer
    within :data:`GROUP_CHECK_SECONDS` is a warning only: without READ on its group the
    consumer's ``committed`` timed out rather than say so (the group's denial is said
    when the worker joins it, exit 77); a denial it does say stops the worker here.

    Returns whether the group's offsets were answered (False: the next look at them would
    wait as long)."""
    from confluent_kafka import KafkaException, TopicPartition

    inputs = list(inputs)
    metadata = broker.ask("the cluster's topics", lambda t: consumer.list_topics(timeout=t), 60)
    # the input topics' names without the prefix: another deployment's end the same way
    suffixes = tuple(name[len(settings.topic_prefix):] for name in inputs)
    others = [TopicPartition(name, p) for name, topic in sorted(metadata.topics.items())
              if name not in inputs and name.endswith(suffixes)
              and topic.error is None for p in sorted(topic.partitions)]
    if not others:
        return True
    try:
        committed = consumer.committed(others, timeout=GROUP_CHECK_SECONDS)
    except KafkaException as exc:
        if broker.refused(exc.args[0]):
            raise broker.denied(exc.args[0], "reading its group's committed offsets") from None
        # without READ on the group the broker lets the question time out: said so, since
        # the denial said on joining comes next (a group the ACLs deny, exit 77)
        log.warning("could not check that group %r has read no other deployment's input "
                    "topics (%s after %d s; so it goes when %s may not READ the group): "
                    "going on", settings.app_id, exc.args[0].str(), GROUP_CHECK_SECONDS,
                    principal(broker.kafka_config))
        return False
    foreign = sorted({tp.topic for tp in committed if tp.error is None and tp.offset >= 0})
    if foreign:
        group = settings.app_id
        raise CatalogueError(
            f"group {group!r} (the app id) has read {', '.join(map(repr, foreign[:4]))}, "
            f"not this deployment's topics (prefix {settings.topic_prefix!r}): "
            f"another deployment uses it, and the two would share its changelogs and "
            f"rebalance each other. Set STREAMFS_APP_ID (--app-id) to a group of this "
            f"deployment's own; if that other deployment is gone, delete the group's "
            f"offsets of its topics (kafka-consumer-groups.sh --delete-offsets)")
    return True


def warn_if_another_group_processed(consumer: Any, settings: Settings,
                                    partitions: dict[str, int], inputs: Iterable[str],
                                    results: str, changelogs: Iterable[str]) -> None:
    """A warning when this app id is new to input that another app id's workers have
    processed: its group has committed nothing in the ``inputs``, its ``changelogs`` are
    empty, and the ``results`` topic holds records while the input topics do (``partitions``:
    each topic's partition count). Such a worker (an app id mistyped, or changed) reads the
    input from its beginning and publishes every stream's results again, a second final of
    closed streams among them, which a reader of the results topic takes for new versions;
    nothing said so. A group whose offsets expired keeps its changelogs, whose state skips
    what was applied: no warning. Any error of the broker skips the check (the worker's own
    start says it)."""
    from confluent_kafka import KafkaException, TopicPartition

    def records(topics: Iterable[str]) -> int:
        total = 0
        for name in topics:
            for p in range(partitions[name]):
                low, high = consumer.get_watermark_offsets(TopicPartition(name, p),
                                                           timeout=GROUP_CHECK_SECONDS)
                total += max(0, high - low)
        return total

    inputs = list(inputs)
    offsets = [TopicPartition(name, p) for name in inputs for p in range(partitions[name])]
    try:
        committed = consumer.committed(offsets, timeout=GROUP_CHECK_SECONDS)
        if any(tp.error is None and tp.offset >= 0 for tp in committed):
            return
        published = records([results])
        if not published or records(changelogs) or not records(inputs):
            return
    except KafkaException as exc:
        log.debug("the check for input processed under another app id was skipped (%s)",
                  exc.args[0].str())
        return
    log.warning("group %r (the app id) is new to this prefix's input, which %r shows was "
                "processed under another app id (%d records there, results and "
                "transaction markers): this worker reads "
                "the input from its beginning and publishes every stream's results again "
                "(new versions, a second final of closed streams). If that is not meant, "
                "stop it and set STREAMFS_APP_ID (--app-id) to those workers' group",
                settings.app_id, results, published)
