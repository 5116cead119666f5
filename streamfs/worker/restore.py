"""A partition's state restored when it is assigned (and after a rewind): its local copy where
that can be trusted (:mod:`streamfs.worker.local_copies`), then its compacted changelog read
with ``read_committed`` from where the copy ends, to the changelog's stable end and at least to
where it ended when the partition's input offsets were committed (their metadata says; see
:mod:`streamfs.worker.commit_metadata`). A transaction's commit returns before the broker has
written its markers to every partition, so for a moment the stable end can lie before the
records of a committed transaction: the read goes on as the markers arrive, up to the
transaction timeout, and a transaction still open after that stops the worker
(:class:`~streamfs.worker.errors.RestoreHeld`) rather than run on part of the state.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from streamfs.broker import make_client
from streamfs.settings import Settings
from streamfs.worker import metrics
from streamfs.worker.broker_contact import BrokerContact
from streamfs.worker.errors import RestoreHeld, StoppedWhileRestoring
from streamfs.worker.local_copies import LocalCopies
from streamfs.worker.processor import StreamProcessor

log = logging.getLogger("streamfs.worker")


class PartitionState:
    """The state of one input partition: its processor over an in-memory store."""

    def __init__(self, role: str, settings: Settings, output_bytes: int | None = None) -> None:
        self.store: dict[str, bytes] = {}
        self.processor = StreamProcessor(role, self.store,
                                         max_message_bytes=settings.max_message_bytes,
                                         max_buffer_bytes=settings.max_buffer_bytes,
                                         output_format=settings.result_format,
                                         output_bytes=output_bytes,
                                         log_dead_letters=False)  # logged once committed


class Restore:
    """One restore of the (role, partition) keys given to :meth:`run`: fresh
    :class:`PartitionState` objects in ``partitions`` and, in ``changelog_high``, the changelog
    offset that every record restored for each key lies before. ``changelog`` maps a role to
    its changelog topic; ``local`` are the worker's local copies; ``output_bytes`` is the
    largest result a processor may write; ``fetch`` how the worker's consumers fetch (the
    changelog reader fetches as they do)."""

    def __init__(self, settings: Settings, changelog: dict[str, str], local: LocalCopies,
                 broker: BrokerContact, output_bytes: int | None, fetch: dict) -> None:
        self.settings, self.changelog, self.local = settings, changelog, local
        self.broker, self.output_bytes, self.fetch = broker, output_bytes, fetch
        self.partitions: dict[tuple[str, int], PartitionState] = {}
        self.changelog_high: dict[tuple[str, int], int] = {}

    def run(self, targets: dict[tuple[str, int], int | None], consumer: Any,
            changelog_ids: dict[str, str]) -> None:
        """Fresh state for the (role, partition) keys of ``targets``: the local copy where it
        can be trusted, then the committed changelog from where that copy ends, to its stable
        end and at least to the key's target (the end committed with its offsets, if known).
        ``consumer`` (the worker's, ``read_committed``) tells the stable ends;
        ``changelog_ids`` are the changelog topics' ids now (a local copy saved from another
        is not used)."""
        from confluent_kafka import TopicPartition

        self.local.settle()  # the files are read (and may be reset) below
        starts: dict[tuple[str, int], int] = {}
        local_records = 0
        targets = dict(targets)
        marks: dict[tuple[str, int], tuple[int, int]] = {}
        probe = None  # a read_uncommitted client: where each changelog's log ends
        try:
            for key, target in targets.items():
                topic = self.changelog[key[0]]
                # read_committed: the stable end, which may still lie before a committed target
                marks[key] = self.broker.watermarks(consumer, TopicPartition(topic, key[1]))
                if target is None or target <= marks[key][1]:
                    continue
                if probe is None:
                    probe = self.probe()
                if self.broker.watermarks(probe, TopicPartition(topic, key[1]))[1] < target:
                    # the log itself ends before it: the records are gone (the topic made
                    # again), and no wait brings them back. Waited for the transaction
                    # timeout, on every restart, and the target went on into the next commits
                    log.error("changelog %s:%d ends before offset %d, where it ended when the "
                              "input offsets were committed (deleted and made again?): "
                              "restored what is there", topic, key[1], target)
                    targets[key] = None  # a local copy is judged by the log there is
        finally:
            if probe is not None:
                probe.close()
        for key, target in targets.items():
            state = self.partitions[key] = PartitionState(key[0], self.settings,
                                                          self.output_bytes)
            topic = self.changelog[key[0]]
            low, high = marks[key]
            end = max(high, target or 0)
            if end > high:
                log.info("changelog %s:%d: stable end %d, committed with the offsets up to %d: "
                         "reading on as the commit markers arrive", topic, key[1], high, end)
            start = self.local.load(key, state.store, low, end,
                                    changelog_ids.get(topic)) or low
            local_records += len(state.store)
            self.changelog_high[key] = max(start, end)
            if start < end:
                starts[key] = start
            elif self.local.usable(key):
                self.local.save(key, {}, end)  # up to date (the end moves on with markers)
        metrics.RESTORED_RECORDS.labels(source="local").inc(local_records)
        tail_records = self.read_tails(starts, targets) if starts else 0
        if targets:
            log.info("restored %d records from local copies and %d from the changelog",
                     local_records, tail_records)

    def read_tails(self, starts: dict[tuple[str, int], int],
                   targets: dict[tuple[str, int], int | None]) -> int:
        """Apply the committed changelog from ``starts`` to each partition's stable end, and
        on to its target where that lies further (the commit markers of the last transaction
        not written yet: the stable end moves there shortly); returns the number of records
        read."""
        from confluent_kafka import Consumer, KafkaError, TopicPartition

        reader = make_client(Consumer, {
            **self.settings.kafka_config(), "group.id": f"{self.settings.app_id}-restore",
            "enable.auto.commit": False, "isolation.level": "read_committed",
            "enable.partition.eof": True, **self.fetch,
            "fetch.wait.max.ms": 10})
        by_topic = {name: role for role, name in self.changelog.items()}
        tails: dict[tuple[str, int], dict[str, bytes | None]] = {key: {} for key in starts}
        try:
            # explicit offsets: a logical one (OFFSET_BEGINNING) costs a fresh consumer 500 ms
            reader.assign([TopicPartition(self.changelog[role], p, start)
                           for (role, p), start in starts.items()])
            pending = set(starts)
            records = 0
            # a target is reached within moments of the commit; one that is not after the
            # transaction timeout never will be (say, the changelog topic was re-created).
            # Counted from the last record read: a long changelog takes as long as it takes
            wait = self.settings.transaction_timeout + 10
            deadline = time.monotonic() + wait
            lapsed = False  # said that an OAUTHBEARER login lapsed (see _refused)
            while pending:
                # the wait is on purpose (up to the transaction timeout + 10 s): /live must
                # not have a supervisor restart the worker into it again, and a stop must not
                # wait for its end (SIGTERM went unanswered for minutes)
                self.broker.health.beat()
                if not self.broker.running():
                    raise StoppedWhileRestoring(
                        "stopped while restoring state from the changelog: nothing was "
                        "processed since the assignment, and the partitions' next owner "
                        "restores them")
                if time.monotonic() > deadline:
                    self.held_records(pending, targets)  # RestoreHeld if they are there
                    for key in pending:
                        log.error("changelog %s:%d ends before offset %s, where it ended when "
                                  "the input offsets were committed: restored what is there",
                                  self.changelog[key[0]], key[1], targets.get(key))
                        # the copy still holds the changelog up to where it was loaded from,
                        # but a save after the next commit would claim the records not read
                        if self.local.usable(key):
                            self.local.drop(key, RuntimeError("restore incomplete"))
                    break
                read = records
                for msg in reader.consume(10000, timeout=0.05):
                    err = msg.error()
                    if err is not None and err.code() != KafkaError._PARTITION_EOF:
                        if err.code() == KafkaError.GROUP_AUTHORIZATION_FAILED:
                            continue  # its group is never used: it reads from set offsets
                        if self.broker.refused(err):
                            raise self.broker.denied(err, f"restoring its state from "
                                                          f"{msg.topic() or 'its changelogs'}")
                        if self.broker.lapsed(err):  # waited for, not counted
                            lapsed = self.broker.wait_for_login(lapsed, "the changelog", err)
                            deadline = time.monotonic() + wait
                            continue
                        raise RuntimeError(f"restoring {msg.topic()}: {err}")
                    key = (by_topic[msg.topic()], msg.partition())
                    if err is not None:  # a partition's end
                        if msg.offset() < (targets.get(key) or 0):
                            continue  # committed records beyond: their markers come next
                        if key in pending:
                            if self.local.usable(key):
                                self.local.save(key, tails[key], msg.offset())
                            self.changelog_high[key] = max(self.changelog_high[key],
                                                           msg.offset())
                            pending.discard(key)
                        continue
                    k, value = msg.key().decode(), msg.value()
                    if value is None:
                        self.partitions[key].store.pop(k, None)
                    else:
                        self.partitions[key].store[k] = value
                    tails[key][k] = value
                    records += 1
                if records > read:
                    deadline = time.monotonic() + wait
            metrics.RESTORED_RECORDS.labels(source="changelog").inc(records)
            return records
        finally:
            reader.close()

    def probe(self) -> Any:
        """A ``read_uncommitted`` client: where a changelog's log ends, records of open
        transactions included (the caller closes it)."""
        from confluent_kafka import Consumer

        return make_client(Consumer, {**self.settings.kafka_config(),
                                      "group.id": f"{self.settings.app_id}-restore",
                                      "isolation.level": "read_uncommitted"})

    def held_records(self, pending: set[tuple[str, int]],
                     targets: dict[tuple[str, int], int | None]) -> None:
        """:class:`RestoreHeld` when a ``pending`` changelog partition holds records up to its
        target (its end for a ``read_uncommitted`` reader): a transaction still open hides
        them, and they come once it ends. Where the log ends before the target, the records
        are gone (the changelog topic made again, say) and no wait brings them back."""
        from confluent_kafka import TopicPartition

        probe = self.probe()
        try:
            for key in sorted(pending):
                topic, target = self.changelog[key[0]], targets.get(key) or 0
                _, end = self.broker.watermarks(probe, TopicPartition(topic, key[1]))
                if end >= target:
                    raise RestoreHeld(
                        f"changelog {topic}:{key[1]} holds the records up to offset {target} "
                        f"that its committed offsets claim, but a transaction still open hides "
                        f"them after {self.settings.transaction_timeout + 10:.0f} s (a stale "
                        f"producer's transaction lasts up to its transaction.timeout.ms): "
                        f"stopping rather than running on part of the state; a restart reads "
                        f"it again")
        finally:
            probe.close()
