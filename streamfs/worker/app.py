"""The worker: a confluent-kafka transactional consume–transform–produce loop.

All stream logic lives in :mod:`streamfs.worker.processor`; this module moves bytes.

* One consumer in the group ``STREAMFS_APP_ID`` reads both input topics with
  ``isolation.level=read_committed``; offsets are never auto-committed.
* Messages already fetched are processed in **batches** bounded by processing time, bytes and
  count (``STREAMFS_BATCH_MS``, ``STREAMFS_BATCH_BYTES``, ``STREAMFS_BATCH_MESSAGES``); what is
  fetched beyond a batch waits in memory for the next one (never sought back and re-fetched).
  A batch's results, dead letters, state (changelog) records and input offsets are committed in
  **one Kafka transaction** (``send_offsets_to_transaction`` with the consumer's group
  metadata, KIP-447). A stream's algorithm state is serialised once per batch (the processor's
  deferred checkpoint), and each state key is written once per batch, with its last value.
* **Fencing**: the transaction carries the consumer group's generation, so a stale owner (a
  worker paused past its session timeout whose partitions moved) cannot commit: its
  transaction aborts and nothing it wrote becomes visible to ``read_committed`` readers. The
  sweep of closed (and, opted in, idle) streams (every ``SWEEP_SECONDS``) is fenced the same
  way: its transaction sends, with its tombstones and dead letters, the offsets last committed
  for the input partitions it changes (unchanged, the changelog end in their metadata moved
  past the tombstones).
* **Static membership** (``STREAMFS_INSTANCE_ID``, KIP-345): the consumer's
  ``group.instance.id``. A worker restarted under its id takes its former self's place, and
  partitions, at once; a second live worker under the same id fences the first (the broker
  refuses its offsets, librdkafka stops its consumer), which aborts its transaction and stops
  (:class:`InstanceFenced`).
* **State** per input partition is an in-memory map restored (:mod:`streamfs.worker.restore`),
  when the partition is assigned, from the co-partitioned compacted changelog topic read with
  ``read_committed`` — after the group's committed offsets are stable (a pending transaction
  of the previous owner is resolved first), so the restored state and the start offset always
  match. The committed offset of each input partition carries, in its metadata, where the
  partition's changelog ended when it was committed: the restore reads at least that far. (A
  transaction's commit returns before the broker has written its markers to every partition,
  so for a moment the changelog's stable end can lie before the records of a committed
  transaction.) A local copy of each partition's state (:mod:`streamfs.worker.local_copies`,
  under ``STREAMFS_DATA_DIR``) is updated after every commit, so a restart reads the
  changelog's tail, not its history.
* A batch's transaction is **completed on a helper thread** (the state records acknowledged,
  the offsets sent, the commit) while the loop steps the next batch's messages; that batch's
  results and records are produced only once the previous transaction has committed, in a
  transaction of their own. Rebalance callbacks, the sweep of closed streams and shutdown
  wait for the transaction in flight first.
* A failed transaction is aborted and the worker rewinds: state restored from the changelog,
  input re-read from the committed offsets. Nothing is skipped and nothing is applied twice.
* The committed offsets' metadata also names the **input topic's id**: offsets that count in a
  topic since deleted and re-created under the same name are not used (one ERROR line; the
  partition is read from its beginning, its state kept), and a worker that sees an input
  topic's id change while it runs stops (:class:`~streamfs.topics.TopicMismatch`), so that
  its restart does the same. The topic check is asked every ``TOPIC_CHECK_SECONDS``, busy or
  idle, and answered on the admin client's thread.

``/health`` (readiness: 503 until the assignment is restored, during a rebalance, while input
waits unprocessed and while no broker answers), ``/live``
(liveness: 503 once the loop has stopped turning) and ``/metrics`` are served on the web port
(:mod:`streamfs.worker.health`); :mod:`streamfs.worker.startup` starts the worker.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
import time
from collections import deque
from typing import Any, NoReturn

from streamfs.broker import (KAFKA_LOGGER, AccessDenied, LogLines, kafka_error, make_client,
                             refused_topic)
from streamfs.settings import Settings
from streamfs.topics import TopicMismatch, changelog_specs, load_catalogue, partitions_added_advice
from streamfs.worker import metrics
from streamfs.worker.broker_contact import INIT_TRANSACTIONS_SECONDS, BrokerContact
from streamfs.worker.commit_metadata import changelog_target, committed_topic_id, offset_metadata
from streamfs.worker.errors import (Hung, InstanceFenced, Rewind,
                                    StoppedWhileRestoring, StoppedWhileUnreachable, fenced)
from streamfs.worker.group_checks import check_group_is_ours, warn_if_another_group_processed
from streamfs.worker.health import Health, loop_stall_seconds, rejoin_seconds
from streamfs.worker.input_lag import InputLag
from streamfs.worker.kafka_clients import (TXN_CALL_SECONDS, consumer_config, fetch_config,
                                           producer_config)
from streamfs.worker.local_copies import LocalCopies
from streamfs.worker.processor import Plan, StateLost
from streamfs.worker.restore import PartitionState, Restore
from streamfs.worker.state_records import header_key, header_stream
from streamfs.worker.topic_checks import changed_while_running, described_topics, topic_changes

log = logging.getLogger("streamfs.worker")

#: how often the worker checks, busy or idle, that its topics still exist, with their
#: partition counts and, for the input topics, the ids they were assigned with
TOPIC_CHECK_SECONDS = 10
#: deadline of the broker's answer to that check (asked without waiting: see Worker._loop)
TOPIC_DESCRIBE_SECONDS = 10


#: a loop turn this much later than the last one (the process stood still: SIGSTOP, a stalled
#: VM, or a long step) checks the topics before it processes what it fetched
STILL_SECONDS = 2
#: how often closed streams past their retention are looked for, busy or idle
SWEEP_SECONDS = 60
#: without partitions this long (joining, or in a rebalance), the worker says what it waits for
WAIT_SAID_SECONDS = 5


class InFlight:
    """A batch whose transaction a helper thread is completing (acknowledgements, offsets,
    commit), and what the loop does once it has committed."""

    def __init__(self, writes: dict[tuple[str, int], dict[str, bytes | None]],
                 next_offsets: dict[tuple[str, int], int], group_metadata: Any,
                 messages: int, started: float,
                 outcomes: list[tuple[Plan, str, str]] | None = None) -> None:
        self.writes, self.next_offsets = writes, next_offsets
        self.group_metadata = group_metadata  # the generation the offsets are committed for
        self.messages, self.started = messages, started
        #: each message's plan, topic and role: counted (and its dead letter logged) once the
        #: batch has committed, so that a batch aborted and replayed is counted once
        self.outcomes = outcomes or []
        self.error: BaseException | None = None
        self.thread: threading.Thread | None = None

    def start(self, complete: Any) -> None:
        def target() -> None:
            try:
                complete(self)
            except BaseException as exc:  # noqa: BLE001 - raised on the loop's thread
                self.error = exc

        self.thread = threading.Thread(target=target, name="streamfs-commit", daemon=True)
        self.thread.start()


def output_limit(specs: dict) -> int | None:
    """The largest record both the results and the dead-letter topic take for sure: the
    catalogue's ``max.message.bytes`` for them (an existing topic below it is refused at
    start), None where it sets none. A ``STREAMFS_MAX_MESSAGE_BYTES`` above it had the worker
    write results the topic refused, transaction after transaction, for ever."""
    limits = [int(specs[role].config["max.message.bytes"]) for role in ("selected", "dead_letter")
              if "max.message.bytes" in specs[role].config]
    return min(limits) if limits else None


class Worker:
    """Consume both input topics, process in batches, commit each batch in one transaction."""

    def __init__(self, settings: Settings, health: Health | None = None) -> None:
        self.settings = settings
        specs = load_catalogue(settings.topic_prefix)
        self.roles = {specs["features"].name: "features", specs["instances"].name: "instances"}
        metrics.start_series(self.roles)
        self.out = {"selected": specs["selected"].name, "dead_letter": specs["dead_letter"].name}
        self.output_bytes = output_limit(specs)
        changelogs = changelog_specs(settings.app_id, specs["features"].partitions, 1,
                                     settings.max_message_bytes)
        self.changelog = {key.removesuffix("-changelog"): spec.name
                          for key, spec in changelogs.items()}
        # every topic it reads or writes, with its partition count: checked after a failed
        # transaction and when idle (_check_topics)
        self.topic_partitions = {spec.name: spec.partitions
                                 for spec in [*specs.values(), *changelogs.values()]}
        # input topic -> its id when its partitions were last assigned: committed with their
        # offsets (a restart tells a re-created topic by it) and checked while the worker runs
        self.topic_ids: dict[str, str] = {}
        self.topic_ids_at = 0.0  # time.monotonic() of that last look
        self.changelog_ids: dict[str, str] = {}  # the changelog topics' ids, at that look
        self.partitions: dict[tuple[str, int], PartitionState] = {}
        self.fetched: deque = deque()  # fetched, not yet processed (in fetch order)
        self.fetched_bytes = 0
        # (topic, partition) -> the offset after the last input message fetched: input up to
        # it and past the committed offset waits for a commit (see _update_lag)
        self.fetched_end: dict[tuple[str, int], int] = {}
        self.assigned_at = 0.0  # perf_counter at the end of the last assignment (its restore)
        # (topic, partition) -> offset: after StateLost, replay up to it checkpointing after
        # every message (see StreamProcessor.handle)
        self.eager_until: dict[tuple[str, int], int] = {}
        self.local = LocalCopies(os.path.join(settings.state_dir(), settings.app_id),
                                 self.changelog)
        self.changelog_end: dict[tuple[str, int], int] = {}  # next offset, from delivery reports
        # (role, partition) -> the changelog offset that every record written for it (restored,
        # or committed by this worker) lies before; committed with the partition's offsets
        self.changelog_high: dict[tuple[str, int], int] = {}
        # (input topic, partition) -> the offset its input resumes from: the group's committed
        # offset, kept from the assignment's read and each committed batch (see
        # _restore_committed for partitions with none); the sweep commits it again
        self.resume_at: dict[tuple[str, int], int] = {}
        self.health = health or Health(loop_stall_seconds(settings.session_timeout))
        self.lag = InputLag(self.health)
        # what the idle-stream sweep counts from for headers written before they kept the
        # time of their last input (see StreamProcessor.expire_idle)
        self.started_at = time.time()
        # without an assignment for this long, a worker whose broker answers joins its group
        # again with a new consumer (see _rejoin_if_left_out)
        self.rejoin_after = rejoin_seconds(settings.session_timeout)
        self.running = True
        self.broker = BrokerContact(settings, self.health, self.roles, self.out,
                                    lambda: self.running)
        self.in_flight: InFlight | None = None  # the last batch, its transaction completing
        self.group_answered: bool | None = None  # check_group: None until asked
        self.wait_said_for: float | None = None  # the unassigned_since a wait was logged for
        self.rewind_due = False  # a transaction failed while a rebalance callback waited on it
        self.consumer = self._consumer()
        self.producer_log = LogLines(KAFKA_LOGGER, keep=20)  # the producers' last log lines
        self.producer = self._producer()
        self.admin = self._admin()  # topic descriptions (ids): the consumer's metadata has none

    # ------------------------------------------------------------------ clients
    def _consumer(self) -> Any:
        from confluent_kafka import Consumer

        return make_client(Consumer, consumer_config(self.settings, self.broker.client_error))

    def _producer(self) -> Any:
        from confluent_kafka import Producer

        producer = make_client(Producer, producer_config(self.settings,
                                                         self.producer_log.logger))
        self._init_transactions(producer)
        return producer

    def _init_transactions(self, producer: Any) -> None:
        """``init_transactions``, waiting for a broker that does not answer. A worker replaces
        its producer when a transactional call hangs, which happens when the broker goes down
        mid-transaction: a single call gave up after 60 s (``_TIMED_OUT``) and the worker
        exited 70 during an outage it would otherwise have ridden out. Now it waits as its
        consumer does, says so in ``/health``, and stops if asked to meanwhile."""
        from confluent_kafka import KafkaException

        waited = False
        while True:
            try:
                producer.init_transactions(INIT_TRANSACTIONS_SECONDS)
                break
            except KafkaException as exc:
                err = exc.args[0]
                if self.broker.refused(err):
                    raise self.broker.denied(err, "starting its transactional producer") from None
                if self.broker.lapsed(err):
                    waited = self.broker.wait_for_login(waited, "the transaction coordinator", err)
                    continue
                if not err.retriable() or err.fatal():
                    raise
                waited = self.broker.wait_for_broker(waited, "the transaction coordinator", err)
        if waited:
            log.info("the transaction coordinator answered: going on")
            self.broker.answered()

    def _admin(self) -> Any:
        from confluent_kafka.admin import AdminClient

        return make_client(AdminClient, self.settings.kafka_config())

    def _describe(self, names: Any, timeout: float = TOPIC_DESCRIBE_SECONDS) -> dict[str, Any]:
        """Ask the broker to describe the topics ``names``: ``{name: future}``, answered on
        the admin client's own thread (this call does not wait)."""
        from confluent_kafka import TopicCollection

        self.admin.poll(0)  # serve its log lines (they wait on its queue)
        return self.admin.describe_topics(TopicCollection(list(names)), request_timeout=timeout)

    def _topic_ids(self) -> dict[str, str]:
        """The ids of the input and changelog topics as the broker has them now.
        :class:`TopicMismatch` for one that does not exist; asked again while the cluster is
        moving, and waited for while no broker answers
        (:meth:`~streamfs.worker.broker_contact.BrokerContact.ask`, as the committed
        offsets read with it are)."""
        from confluent_kafka import KafkaError, KafkaException

        def describe(seconds: float) -> dict[str, str]:
            ids = {}
            names = [*self.roles, *self.changelog.values()]
            for name, future in self._describe(names, seconds).items():
                try:
                    ids[name] = str(future.result(seconds + 5).topic_id)
                except KafkaException as exc:
                    if exc.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                        what = "input topic" if name in self.roles else "changelog topic"
                        raise TopicMismatch(f"{what} {name!r} does not exist: run "
                                            "`streamfs topics create` and start the worker "
                                            "again") from None
                    if self.broker.refused(exc.args[0]):
                        raise self.broker.denied(exc.args[0],
                                                 f"describing topic {name!r}") from None
                    raise  # a lapsed login: waited for by BrokerContact.ask
            return ids

        return self.broker.ask("the topics' ids", describe, self.settings.transaction_timeout + 60)

    # ------------------------------------------------------------------ rebalances
    def _on_assign(self, consumer: Any, partitions: list) -> None:
        """Restore each new partition's state from its changelog, then start it from its
        committed offset. The committed offsets are read first: for a ``read_committed``
        consumer the broker answers only once the previous owner's transaction is resolved,
        so the changelog read afterwards holds exactly the state those offsets belong to."""

        if consumer is not self.consumer:
            return  # a consumer replaced (_rejoin_if_left_out) being closed: not this one's
        self._refuse_added_partitions(partitions)
        t0 = time.perf_counter()
        with self.health.lock:  # how long the group took, told apart from the restore's time
            since = self.health.unassigned_since
        joining = time.monotonic() - since if since is not None else 0.0
        self._settle_in_callback()  # nothing can be in flight after a revoke; be safe
        with self.health.lock:
            self.health.ready = False
        self.lag.caught_up = set()  # known again at the next lag update
        committed = self._restore_committed(partitions)
        for tp in committed:  # their open streams' series, dropped at the revoke
            if (state := self.partitions.get((self.roles[tp.topic], tp.partition))) is not None:
                metrics.restore_stream_series(state.store)
        consumer.assign(committed)
        with self.health.lock:
            self.health.assigned = sorted(f"{tp.topic}:{tp.partition}" for tp in committed)
            self.health.unassigned_since = None
            self.health.ready = True
            self.health.ready_at = time.time()
            self.health.last_batch = time.monotonic()
        self.broker.answered()  # the group and the offsets answered
        self.assigned_at = time.perf_counter()
        log.info("assigned %d partitions, state restored in %.2f s%s", len(committed),
                 time.perf_counter() - t0, f" (assigned {joining:.1f} s after it asked to "
                 "join the group)" if joining >= 1 else "")
        if not committed:  # said: the log and /health looked like a worker with nothing to do
            log.info("a standby: group %r has more workers than the input topics' partitions "
                     "(%s) to share; this one takes some at a later rebalance (a worker "
                     "leaving)", self.settings.app_id,
                     ", ".join(f"{t} {n}" for t, n in sorted(self.topic_partitions.items())))

    def _refuse_added_partitions(self, partitions: list) -> None:
        """:class:`TopicMismatch` for an assigned partition beyond its input topic's partition
        count: partitions added under the running worker, which the group's rebalance handed
        out before the topic check saw them (the worker then died restoring a changelog
        partition that does not exist, exit 70 with a traceback)."""
        extra = sorted({tp.topic for tp in partitions
                        if tp.partition >= self.topic_partitions.get(tp.topic, tp.partition + 1)})
        if extra:
            counts = ", ".join(f"{name!r} has more than the catalogue's "
                               f"{self.topic_partitions[name]}" for name in extra)
            raise TopicMismatch(f"a topic of this worker changed while it ran: {counts} "
                                f"partitions now. {partitions_added_advice(extra)}")

    def _on_revoke(self, consumer: Any, partitions: list) -> None:
        if consumer is not self.consumer:
            return  # a consumer replaced (_rejoin_if_left_out) being closed: not this one's
        # the last batch's transaction must end while this worker still owns its partitions
        self._settle_in_callback()
        gone = {(tp.topic, tp.partition) for tp in partitions}
        self.lag.caught_up = set()
        self.local.settle()
        for topic, p in gone:
            state = self.partitions.pop((self.roles[topic], p), None)
            if state is not None:  # its streams' series now belong to their next owner
                metrics.drop_stream_series(state.store)
            self.changelog_high.pop((self.roles[topic], p), None)
            self.resume_at.pop((topic, p), None)
            self.fetched_end.pop((topic, p), None)
            self.local.release((self.roles[topic], p))
        self._drop_fetched(gone)
        with self.health.lock:
            self.health.assigned = []
            self.health.ready = False
            self.health.unassigned_since = time.monotonic()
        consumer.unassign()
        log.info("revoked %d partitions", len(gone))

    def _restore_committed(self, partitions: list) -> list:
        """The partitions' committed offsets (stable: a previous owner's transaction resolved
        first; the beginning where none, or where they count in an input topic since deleted
        and re-created), with their state restored to match; those known to have input
        waiting first, the fullest first."""
        committed = self.broker.committed(self.consumer, partitions,
                                          self.settings.transaction_timeout + 60)
        # after the offsets: a topic re-created in between is told by its new id
        ids = self._topic_ids()
        self.topic_ids = {name: ids[name] for name in self.roles}
        self.topic_ids_at = time.monotonic()
        self.changelog_ids = {name: ids[name] for name in self.changelog.values()}
        recreated = self._drop_offsets_of_recreated(committed)
        self._restore({(self.roles[tp.topic], tp.partition): changelog_target(tp.metadata)
                       for tp in committed})
        waiting = [0] * len(committed)  # messages known to wait in each partition
        for i, tp in enumerate(committed):
            if tp.offset < 0:
                if (tp.topic, tp.partition) not in recreated:
                    self._note_offsets_gone(tp)
                # the first offset itself rather than OFFSET_BEGINNING: librdkafka resolves a
                # logical offset with a query that, right after an assignment, it retries
                # only after 500 ms (measured: first message 0.5 s later)
                low, high = self.broker.watermarks(self.consumer, tp)
                tp.offset, waiting[i] = low, high - low
        # Where none is committed, the start the partition is read from stands for it: a
        # sweep commits it (see _sweep), which moves no one's reading (the next owner
        # would start from the beginning as well, and an offset the log has since deleted
        # sends it there). Skipping such a partition's sweep instead would keep its closed
        # streams' headers for good should its input never move again; asking the broker
        # (committed()) at the sweep would only tell what this worker already knows.
        self.resume_at.update({(tp.topic, tp.partition): tp.offset for tp in committed})
        # fullest first: librdkafka sends its first fetch as soon as the first assigned
        # partition reaches the broker's thread, and a fetch of empty partitions waits
        # fetch.wait.max.ms (measured: first message 8-12 ms after the assignment with the
        # full partition first, 8-34 ms in partition order)
        return [tp for _, tp in sorted(zip(waiting, committed), key=lambda wt: -wt[0])]

    def _drop_offsets_of_recreated(self, committed: list) -> set[tuple[str, int]]:
        """Set to "none" the committed offsets that count in an input topic deleted and made
        again since (their metadata names another topic id than the topic has now), with one
        ERROR line per topic; returns those partitions. Read from there, the new topic's
        first messages would be skipped without a word (its offsets start again from 0).

        The partitions' state is kept: the changelog is what was applied and published, and
        stays true. Read from its beginning, the new topic's messages already applied (by a
        worker that read it from the old offsets) are skipped as redeliveries, the streams
        closed refuse theirs as ever, and a stream still open goes on where its producer goes
        on. Resetting the state would publish versions a second time and forget open streams.
        """
        from confluent_kafka import OFFSET_INVALID

        stale: dict[str, list] = {}
        for tp in committed:
            was = committed_topic_id(tp.metadata) if tp.offset >= 0 else None
            if was is not None and was != self.topic_ids.get(tp.topic, was):
                stale.setdefault(tp.topic, []).append((tp, was))
        for topic, tps in stale.items():
            log.error(
                "input topic %r was deleted and re-created after offsets were committed in it "
                "(topic id %s then, %s now): partition(s) %s read from the new topic's "
                "beginning instead of from those offsets; the streams' state is kept "
                "(messages already applied are skipped, closed streams refuse theirs)",
                topic, ", ".join(sorted({was for _, was in tps})), self.topic_ids[topic],
                ", ".join(f"{tp.partition} (offset {tp.offset})"
                          for tp, _ in sorted(tps, key=lambda t: t[0].partition)))
            for tp, _ in tps:
                tp.offset = OFFSET_INVALID
        return {(tp.topic, tp.partition) for tps in stale.values() for tp, _ in tps}

    def _note_offsets_gone(self, tp: Any) -> None:
        """A partition without committed offsets whose state is not empty: its offsets were
        dropped (the input topic deleted and re-created while no worker ran, or the group's
        offsets expired). It is read from its beginning with its state kept, as above."""
        state = self.partitions.get((self.roles[tp.topic], tp.partition))
        streams = sum(header_stream(key) is not None for key in state.store) if state else 0
        if streams:
            log.warning("input partition %s:%d has no committed offset but its changelog holds "
                        "%d stream(s): the group's offsets were dropped (the topic deleted and "
                        "re-created while no worker ran, or offsets expired), or the catalogue "
                        "names another input topic than before (STREAMFS_TOPICS: what is left "
                        "unread on the old one is not read); reading it from its beginning, the "
                        "streams' state kept", tp.topic, tp.partition, streams)

    def _restore(self, targets: dict[tuple[str, int], int | None]) -> None:
        """Fresh state for the (role, partition) keys of ``targets`` (:class:`Restore`)."""
        restore = Restore(self.settings, self.changelog, self.local, self.broker,
                          self.output_bytes, fetch_config(self.settings.max_message_bytes))
        restore.run(targets, self.consumer, self.changelog_ids)
        for (role, p), state in restore.partitions.items():
            other = "instances" if role == "features" else "features"
            state.processor.other_kind_has = functools.partial(self._holds, other, p)
        self.partitions.update(restore.partitions)
        self.changelog_high.update(restore.changelog_high)

    def _holds(self, role: str, partition: int, stream: str) -> bool:
        """Whether this worker holds ``stream`` in its ``role`` streams' ``partition`` (a stream
        id hashes to the same partition number of both input topics)."""
        state = self.partitions.get((role, partition))
        return state is not None and header_key(stream) in state.store

    # ------------------------------------------------------------------ the loop
    def _subscribe(self) -> None:
        with self.health.lock:
            self.health.unassigned_since = time.monotonic()
        self.consumer.subscribe(list(self.roles), on_assign=self._on_assign,
                                on_revoke=self._on_revoke, on_lost=self._on_revoke)

    def _rejoin_if_left_out(self) -> None:
        """Join the group again with a new consumer if this one has had no assignment for
        longer than any rebalance takes (:func:`rejoin_seconds`) while the broker answers.
        Seen once in CI: a consumer whose session timed out during a broker restart had its
        partitions revoked and never rejoined, its loop turning and ``/health`` saying
        "rebalancing" for minutes (librdkafka has had such bugs: its issues #2944, #3396).
        Nothing is in flight without an assignment, so nothing is lost: the new member
        restores the committed state of whatever it is assigned."""
        with self.health.lock:
            since, unreachable = self.health.unassigned_since, self.health.unreachable_since
        if since is None or unreachable is not None:
            return  # assigned, or a broker down: a new consumer would not join sooner
        waited = time.monotonic() - since
        if waited >= WAIT_SAID_SECONDS and self.wait_said_for != since:
            # the usual cause of a silent wait: said once, or a restart looked hung
            self.wait_said_for = since
            log.info("waiting for the group's rebalance to assign partitions (%.0f s so far): "
                     "it waits for every member, and a member that stopped without leaving "
                     "(killed, or a static member) counts until its session timeout (%g s)",
                     waited, self.settings.session_timeout)
        if waited < self.rejoin_after:
            return
        log.warning("no partitions assigned for %.0f s although the broker answers (a "
                    "rebalance takes at most %.0f s): leaving the group and joining it again "
                    "with a new consumer", waited, self.rejoin_after)
        metrics.REJOINS.inc()
        self._settle_in_callback()  # nothing is in flight without an assignment; be safe
        self._drop_fetched()
        old, self.consumer = self.consumer, self._consumer()
        try:
            self._bounded(old.close)  # its LeaveGroup, if it is a member after all
        except Hung:
            log.warning("the old consumer did not close within %d s: left behind",
                        TXN_CALL_SECONDS + 5)
        except Exception as exc:  # noqa: BLE001 - whatever it says, it is replaced
            log.warning("the old consumer's close failed (%s)", exc)
        self._subscribe()

    def check_group(self) -> None:
        """Refuse a group that another deployment uses (:func:`check_group_is_ours`): asked
        before the catalogue's topics are made, so that a mistyped prefix leaves none behind."""
        self.group_answered = check_group_is_ours(self.consumer, self.settings, self.roles,
                                                  self.broker)

    def run(self) -> None:
        if self.group_answered is None:
            self.check_group()
        if self.group_answered:  # (unanswered: the next look would wait as long)
            warn_if_another_group_processed(self.consumer, self.settings, self.topic_partitions,
                                            self.roles, self.out["selected"],
                                            self.changelog.values())
        self._subscribe()
        try:
            self._loop()
        except StoppedWhileRestoring:
            # the broker answers: leave the group now, or the partitions wait for the session
            # timeout before their next owner restores them
            self.local.close()
            try:
                self._bounded(self.consumer.close)
            except Exception as exc:  # noqa: BLE001 - stopping either way
                log.warning("the consumer's close failed (%s)", exc)
            raise
        except StoppedWhileUnreachable:
            # nothing can be committed or handed over without the broker; the local copies
            # hold only committed state
            self.local.close()
            raise
        except (TopicMismatch, InstanceFenced, AccessDenied):
            # TopicMismatch (and AccessDenied, for an ACL): nothing can commit until an
            # operator makes the topic again (grants the ACL): leave
            # the group now (its partitions' next owner meets the same check), keep what is
            # uncommitted uncommitted. InstanceFenced: another worker has this one's place and
            # partitions; a transaction still in flight ends first (its offsets are refused
            # unless they were sent before the fencing), so that no open transaction of this
            # worker holds back the readers of its partitions until it times out.
            with self.health.lock:
                self.health.ready = False
            try:
                self._settle()
            except (Rewind, InstanceFenced, AccessDenied):
                pass  # aborted: nothing of it is visible
            self.consumer.close()
            self.local.close()
            raise
        try:
            self._settle()  # the batch in progress is committed before the worker leaves
        except Rewind:
            log.info("the last batch's transaction failed: its input is read again by the "
                     "partition's next owner")
        self.consumer.close()
        self.producer.flush(10)
        self.local.close()

    def _loop(self) -> None:
        s = self.settings
        next_sweep = time.monotonic() + SWEEP_SECONDS
        next_lag = next_topic_check = 0.0
        described: dict[str, Any] | None = None  # a topic check the broker has yet to answer
        asked_ids: dict[str, str] = {}  # the input topics' ids when it was asked
        while self.running:
            last_turn, self.health.loop_at = self.health.loop_at, time.monotonic()
            try:
                fetched = self._fetch()
                if (time.monotonic() - last_turn > STILL_SECONDS
                        and self.topic_ids_at <= last_turn):  # else just asked (assignment)
                    # an input topic made again while the process stood still is fetched from
                    # the old offsets as soon as it runs on (within a turn or two): check
                    # before any input is processed, not up to TOPIC_CHECK_SECONDS after
                    self._check_topics()
                if fetched:
                    self._process()
                else:  # idle: the last batch's bookkeeping now, not with the next batch
                    self._settle()
                # Busy or idle, every TOPIC_CHECK_SECONDS: an input topic deleted meanwhile
                # fails nothing (the consumer just stops getting its messages, without an
                # error: seen in the test), and one made again under the same name is read on
                # from the old topic's offsets, skipping its first messages without a word.
                # The broker answers on the admin client's thread: the loop only looks.
                if described is None:
                    if time.monotonic() > next_topic_check:
                        described = self._describe(self.topic_partitions)
                        asked_ids = self.topic_ids
                elif all(future.done() for future in described.values()):
                    answered, described = described, None
                    if asked_ids is self.topic_ids:  # else assigned since: ask again
                        next_topic_check = time.monotonic() + TOPIC_CHECK_SECONDS
                        self._judge_topics(answered)
                # when due, not only when idle: a worker that always has input never idles,
                # and its closed streams' headers would pile up
                if time.monotonic() > next_sweep:
                    next_sweep = time.monotonic() + SWEEP_SECONDS
                    self._settle()  # the sweep's transaction after the batch's, never beside it
                    self._sweep(s.closed_retention, s.open_idle_timeout)
            except Rewind:
                self._rewind()
            if self.rewind_due:
                self._rewind()
            if time.monotonic() > next_lag:  # /health's, and the rejoin's: not every batch
                next_lag = time.monotonic() + 2.0
                self._update_lag()
                self._rejoin_if_left_out()
                metrics.DEAD_LETTER_LOG.flush()

    def _fetch(self) -> bool:
        """Top up the fetched messages; True if there is something to process. Waits (up to
        the batch time) only when nothing is waiting: consume() with a timeout waits for the
        full count or the whole timeout, so wait for one message, then take what is there."""
        s = self.settings
        if self.fetched_bytes >= s.batch_bytes and len(self.fetched) >= 1:
            return True  # a full batch is waiting: do not pull more into memory
        msgs = []
        started = time.perf_counter()
        if not self.fetched:
            msgs = self.consumer.consume(num_messages=1, timeout=s.batch_ms / 1000)
        if msgs or self.fetched:
            msgs += self.consumer.consume(num_messages=s.batch_messages, timeout=0)
        if msgs:  # an idle wait that timed out is not fetching, nor is a restore it ran
            metrics.FETCH_SECONDS.inc(time.perf_counter() - max(started, self.assigned_at))
        for msg in msgs:
            if (err := msg.error()) is not None:
                from confluent_kafka import KafkaError, KafkaException

                if err.code() == KafkaError._FATAL:  # the consumer has stopped for good
                    if fenced(err):
                        raise InstanceFenced(s)
                    raise KafkaException(err)
                if self.broker.refused(err):  # it would wait for an assignment that never comes
                    raise self.broker.denied(err, "consuming its input")
                if self.broker.lapsed(err):
                    self.broker.lapse_said = self.broker.wait_for_login(
                        self.broker.lapse_said, "the consumer", err)
                else:
                    log.warning("consumer error: %s", err)
                continue
            self.fetched.append(msg)
            self.fetched_bytes += len(msg.value() or b"")
            key = (msg.topic(), msg.partition())
            self.fetched_end[key] = max(self.fetched_end.get(key, 0), msg.offset() + 1)
        return bool(self.fetched)

    def _drop_fetched(self, partitions: set[tuple[str, int]] | None = None) -> None:
        """Forget fetched messages of ``partitions`` (all if None): they are re-read from the
        committed offsets by whoever owns the partition next."""
        keep = deque() if partitions is None else deque(
            m for m in self.fetched if (m.topic(), m.partition()) not in partitions)
        self.fetched = keep
        self.fetched_bytes = sum(len(m.value() or b"") for m in keep)

    def _process(self) -> None:
        """Step the fetched messages, up to the batch bounds, while the previous batch's
        transaction completes; then, once it has committed, open this batch's transaction with
        every message's results, the checkpoints of the streams it stepped and each state key
        once, and hand its completion (acknowledgements, offsets, commit) to a helper thread."""
        s = self.settings
        t0 = time.perf_counter()
        writes: dict[tuple[str, int], dict[str, bytes | None]] = {}
        next_offsets: dict[tuple[str, int], int] = {}
        plans: list[tuple[Plan, bytes | None, str, str]] = []  # with its key, topic, role
        size = count = 0
        stepping = 0.0
        while self.fetched and size < s.batch_bytes and count < s.batch_messages and (
                time.perf_counter() - t0) * 1000 < s.batch_ms:
            msg = self.fetched.popleft()
            n = len(msg.value() or b"")
            self.fetched_bytes -= n
            size, count = size + n, count + 1
            role, p = self.roles[msg.topic()], msg.partition()
            state = self.partitions.get((role, p))
            if state is None:  # revoked meanwhile (cannot happen between polls; be safe)
                continue
            origin = {"topic": msg.topic(), "partition": p, "offset": msg.offset()}
            ts = msg.timestamp()[1] / 1000 if msg.timestamp()[1] > 0 else None
            defer = msg.offset() > self.eager_until.get((msg.topic(), p), -1)
            step = time.perf_counter()
            self.health.stepping_since = time.monotonic()
            try:
                plan = state.processor.handle(msg.key(), msg.value(), timestamp=ts,
                                              origin=origin, defer=defer)
            except StateLost as lost:
                log.warning("stream %r failed inside its algorithm with unflushed steps: "
                            "replaying from the last commit, one checkpoint per message",
                            lost.args[0])
                self.eager_until[(msg.topic(), p)] = msg.offset()
                self._settle()  # the previous batch commits; this one is stepped again
                raise Rewind() from None
            finally:
                self.health.stepping_since = None
            handled = time.perf_counter() - step
            stepping += handled
            self._apply(writes.setdefault((role, p), {}), state, plan.writes)
            plans.append((plan, msg.key(), msg.topic(), role))
            next_offsets[(msg.topic(), p)] = msg.offset() + 1
            metrics.observe_step(plan, handled)
        flushing = time.perf_counter()
        for (role, p), records in writes.items():
            self._apply(records, self.partitions[(role, p)],
                        self.partitions[(role, p)].processor.flush())
        flushed = time.perf_counter()
        self._settle()
        waited = time.perf_counter()
        self._begin_transaction()
        for plan, key, _, _ in plans:
            self._publish(plan, key)
        self._produce_changelog(writes)
        produced = time.perf_counter()
        self.in_flight = InFlight(writes, next_offsets, self.consumer.consumer_group_metadata(),
                                  count, t0, [(plan, topic, role) for plan, _, topic, role
                                              in plans])
        self.in_flight.start(self._complete)
        log.debug("batch: %d messages, %d bytes: %.3f s steps, %.3f s checkpoint, %.3f s waiting "
                  "for the previous commit, %.3f s producing", count, size, stepping,
                  flushed - flushing, waited - flushed, produced - waited)
        for phase, seconds in (("steps", stepping), ("checkpoint", flushed - flushing),
                               ("commit_wait", waited - flushed), ("produce", produced - waited)):
            metrics.BATCH_PHASE_SECONDS.labels(phase=phase).inc(seconds)

    def _begin_transaction(self) -> None:
        self._txn_began = time.monotonic()  # a replaced producer waits out its timeout
        self._txn(self.producer.begin_transaction)
        metrics.TRANSACTIONS.inc()

    def _complete(self, batch: InFlight) -> None:
        """On the helper thread: complete ``batch``'s transaction (:meth:`_commit`)."""
        t0 = time.perf_counter()
        self._commit(batch.writes, batch.next_offsets, batch.group_metadata)
        metrics.COMMIT_SECONDS.inc(time.perf_counter() - t0)

    def _commit(self, writes: dict[tuple[str, int], dict[str, bytes | None]],
                next_offsets: dict[tuple[str, int], int], group_metadata: Any) -> None:
        """Complete the open transaction, whose state records are ``writes``: the input
        offsets ``next_offsets`` sent for ``group_metadata``'s generation (what fences a stale
        owner), then the commit. Where each changelog now ends goes with the offsets (see the
        module docstring), so the records are acknowledged first; a failed one fails the
        commit."""
        from confluent_kafka import TopicPartition

        if writes and self._flushed(TXN_CALL_SECONDS) > 0:
            log.warning("changelog records not acknowledged within %d s: rewinding",
                        TXN_CALL_SECONDS)
            self._abort()
        self._note_changelog_ends()
        offsets = [TopicPartition(t, p, o, metadata=offset_metadata(
                       self.changelog_high.get((self.roles[t], p), 0), self.topic_ids.get(t)))
                   for (t, p), o in next_offsets.items()]
        self._txn(self.producer.send_offsets_to_transaction, offsets, group_metadata,
                  TXN_CALL_SECONDS)
        self._txn(self.producer.commit_transaction, TXN_CALL_SECONDS)

    def _settle(self) -> None:
        """Wait for the transaction in flight; :class:`Rewind` if it failed. After its commit:
        the local copies saved, the batch counted."""
        batch, self.in_flight = self.in_flight, None
        if batch is None:
            return
        batch.thread.join()
        if batch.error is not None:
            raise batch.error
        self.resume_at.update(batch.next_offsets)
        saving = time.perf_counter()
        self.local.save_committed(batch.writes, self.changelog_end)
        metrics.BATCH_PHASE_SECONDS.labels(phase="local_copy").inc(time.perf_counter() - saving)
        for tp in list(self.eager_until):
            if batch.next_offsets.get(tp, -1) > self.eager_until[tp]:
                del self.eager_until[tp]  # replayed past the failure: defer again
        for plan, topic, role in batch.outcomes:
            metrics.count_committed(plan, topic, role)
        metrics.BATCH_SECONDS.observe(time.perf_counter() - batch.started)
        metrics.BATCH_MESSAGES.observe(batch.messages)
        with self.health.lock:
            self.health.last_batch = time.monotonic()
        self.broker.answered()  # the commit was answered

    def _settle_in_callback(self) -> None:
        """:meth:`_settle` inside a rebalance callback (run by ``consume()``), where a
        :class:`Rewind` cannot be raised: the loop rewinds after the callback instead."""
        try:
            self._settle()
        except Rewind:
            self.rewind_due = True

    def _produce_changelog(self, writes: dict[tuple[str, int], dict[str, bytes | None]]
                           ) -> None:
        """Produce a transaction's state records. Only each partition's last record asks for
        a delivery report: its offset is where that changelog now ends, as one producer's
        records land in order and any that fails fails the commit. A report for every record
        cost the helper thread a GIL hand-off each (up to 5 ms) while the loop stepped the
        next batch."""
        self.changelog_end.clear()
        for (role, p), records in writes.items():
            last = len(records) - 1
            for i, (key, value) in enumerate(records.items()):
                self._produce(self.changelog[role], key.encode(), value, partition=p,
                              on_delivery=self._delivered if i == last else None)

    def _delivered(self, err: Any, msg: Any) -> None:
        if err is None:
            key = (msg.topic(), msg.partition())
            self.changelog_end[key] = max(self.changelog_end.get(key, 0), msg.offset() + 1)

    def _note_changelog_ends(self) -> None:
        """Move each owned partition's changelog high mark past this transaction's records."""
        for (role, p), high in self.changelog_high.items():
            end = self.changelog_end.get((self.changelog[role], p))
            if end is not None and end > high:
                self.changelog_high[(role, p)] = end

    @staticmethod
    def _apply(pending: dict[str, bytes | None], state: PartitionState,
               records: list[tuple[str, bytes | None]]) -> None:
        """Apply ``records`` to the partition's store; remember each key's last value for
        the changelog."""
        for key, value in records:
            if value is None:
                state.store.pop(key, None)
            else:
                state.store[key] = value
            pending[key] = value

    def _abort(self, err: Any = None) -> NoReturn:
        """Abort the open transaction and rewind. A producer that cannot abort (``err`` is
        fatal or does not ask for an abort, e.g. fenced; or the abort fails) is replaced.
        A worker whose group.instance.id another has taken (:func:`fenced`) stops instead:
        :class:`InstanceFenced` once the transaction is aborted."""
        from confluent_kafka import KafkaException

        metrics.ABORTS.inc()
        replace = err is not None and (err.fatal() or not err.txn_requires_abort())
        if not replace:
            try:
                self._bounded(self.producer.abort_transaction, TXN_CALL_SECONDS)
            except Hung:
                self._abandon_producer()
            except KafkaException as again:
                log.warning("abort failed (%s): new producer", again.args[0])
                replace = True
        if err is not None and fenced(err):
            raise InstanceFenced(self.settings)
        if replace:
            self.producer = self._producer()
        raise Rewind()

    def _abort_quietly(self) -> None:
        """Abort the open transaction if the producer can, before the worker stops: else the
        broker aborts it after the transaction timeout, and the input stays uncommitted."""
        from confluent_kafka import KafkaException

        try:
            self._bounded(self.producer.abort_transaction, TXN_CALL_SECONDS)
        except (Hung, KafkaException):
            pass

    def _abandon_producer(self) -> None:
        """Replace a producer whose call hung. Once the transaction timeout has passed since
        its transaction began, the broker has aborted that transaction and bumped its epoch,
        so nothing the old producer still sends can commit."""
        wait = self._txn_began + self.settings.transaction_timeout + 5 - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        self.producer = self._producer()

    def _publish(self, plan: Plan, key: bytes | None) -> None:
        if plan.result is not None:
            self._produce(self.out["selected"], plan.stream.encode(), plan.result)
        if plan.dead_letter is not None:
            self._produce(self.out["dead_letter"],
                          plan.stream.encode() if plan.stream else key, plan.dead_letter)

    def _produce(self, topic: str, key: bytes | None, value: bytes | None,
                 partition: int | None = None, on_delivery: Any = None) -> None:
        kwargs: dict[str, Any] = {"partition": partition} if partition is not None else {}
        if on_delivery is not None:
            kwargs["on_delivery"] = on_delivery
        from confluent_kafka import KafkaException

        while True:
            try:
                self.producer.produce(topic, key=key, value=value, **kwargs)
                return
            except BufferError:  # local queue full: let deliveries drain
                self.producer.poll(0.1)
            except (KafkaException, SystemError) as exc:
                if (err := kafka_error(exc)) is None:
                    raise
                if self.broker.refused(err):
                    self._txn_failed(err)
                # the transaction is no longer usable, e.g. a paused worker whose transaction
                # the broker aborted meanwhile ("Erroneous state"): abort, rewind
                log.warning("cannot produce in this transaction (%s): rewinding", err)
                self._abort(err)

    def _txn(self, call: Any, *args: Any) -> None:
        """Run one transactional call. Retriable failures are retried a few times; then, and
        for abortable failures, the transaction is aborted and the worker rewinds. A producer
        that cannot abort (fatal error, fenced, or a broker that does not answer) is replaced:
        its open transaction is aborted by the broker after the transaction timeout, and the
        rewind's committed-offset read waits for that."""
        from confluent_kafka import KafkaException

        for attempt in range(3):
            try:
                self._bounded(call, *args)
                return
            except Hung:
                # librdkafka sometimes blocks past its deadline (seen after a broker restart,
                # in send_offsets_to_transaction). Abandon that producer; once the transaction
                # timeout has passed since it began, the broker has aborted its transaction and
                # bumped its epoch, so nothing it still sends can commit.
                log.warning("%s did not return within %d s: replacing the producer",
                            getattr(call, "__name__", call), TXN_CALL_SECONDS)
                metrics.ABORTS.inc()
                self._abandon_producer()
                raise Rewind() from None
            except KafkaException as exc:
                err = exc.args[0]
                retry = err.retriable() and not err.txn_requires_abort() and not err.fatal()
                if retry and attempt < 2 and not self.broker.refused(err):
                    log.info("%s: %s; retrying", getattr(call, "__name__", call), err)
                    continue
                self._txn_failed(err)

    def _flushed(self, timeout: float) -> int:
        """``producer.flush(timeout)``: the records not acknowledged in time. A transaction
        that fails meanwhile (the records refused, the producer fenced or denied) is ended
        as :meth:`_txn` ends one."""
        from confluent_kafka import KafkaException

        try:
            return self.producer.flush(timeout)
        except (KafkaException, SystemError) as exc:
            if (err := kafka_error(exc)) is None:
                raise
            self._txn_failed(err)

    def _txn_failed(self, err: Any) -> NoReturn:
        """End the open transaction that ``err`` failed: abort and rewind (a new producer if
        this one cannot abort); a worker fenced by its instance id stops; one that the
        broker's ACLs deny stops with :class:`AccessDenied`, as every retry would be denied
        the same."""
        if self.broker.refused(err):
            self._abort_quietly()
            topic = refused_topic(self.producer_log.seen)
            raise self.broker.denied(err, "committing a transaction" + (
                f" (writing to topic {topic!r})" if topic else ""))
        if not fenced(err):  # no rewind then: the worker stops, and says why
            log.warning("transaction failed (%s): rewinding", err)
        self._abort(err)

    @staticmethod
    def _bounded(call: Any, *args: Any) -> None:
        """``call(*args)`` in a helper thread; :class:`Hung` if it outlives its deadline."""
        outcome: list[BaseException | None] = []

        def target() -> None:
            try:
                call(*args)
                outcome.append(None)
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                outcome.append(exc)

        thread = threading.Thread(target=target, name="streamfs-txn", daemon=True)
        thread.start()
        thread.join(TXN_CALL_SECONDS + 5)
        if not outcome:
            raise Hung()
        if outcome[0] is not None:
            raise outcome[0]

    def _update_lag(self) -> None:
        """The lag and the held input in ``/health`` (see :class:`InputLag`)."""
        self.lag.update(self.consumer, self.resume_at, self.fetched_end, bool(self.fetched))

    def _check_topics(self, wait: float = 2.0) -> None:
        """Raise :class:`TopicMismatch` if a topic this worker reads or writes was deleted (or
        made again with another partition count, or, for an input topic, made again at all)
        while it ran, waiting up to ``wait`` seconds for the broker's answer (see
        :meth:`_judge_topics`)."""
        self._judge_topics(self._describe(self.topic_partitions), wait)

    def _judge_topics(self, described: dict[str, Any], wait: float = 0.0) -> None:
        """Raise :class:`TopicMismatch` if the topic descriptions ``described`` (futures from
        :meth:`_describe`) show a topic deleted, with another partition count, or with another
        id than it had when the partitions were assigned (:mod:`streamfs.worker.topic_checks`
        says what each change means for the streams). For a deleted topic nothing can be
        committed until an operator makes it again; the aborted batch's input is still
        uncommitted. A re-created input topic must not be read from the old topic's offsets:
        the worker stops, and the next assignment reads it from its beginning. Without an
        answer within ``wait`` (a broker restarting) nothing is known to be wrong, and the loop
        goes on: the next failure or check asks again."""
        found = described_topics(described, wait)
        if found:  # a broker answered the check
            self.broker.answered()
        # the changelogs too: one made again under the worker (`streamfs topics create`, or
        # another worker's start) took the state written so far, and the worker wrote on into
        # it without a word (the audit's restart then lost streams)
        problems = topic_changes(self.topic_partitions, {**self.topic_ids, **self.changelog_ids},
                                 found)
        if not problems:
            return
        try:  # the batch in flight ends (committed or aborted) before the worker leaves
            self._settle()
        except Rewind:
            pass
        raise changed_while_running(problems, found, self.topic_partitions, self.changelog_ids)

    def _rewind(self) -> None:
        """After an abort: state from the changelog, input from the committed offsets."""
        metrics.REWINDS.inc()
        self._check_topics()
        self._settle_in_callback()  # nothing is in flight after an abort; be safe
        self.rewind_due = False  # this rewind is the one a callback asked for
        self._drop_fetched()
        assignment = self.consumer.assignment()
        if not assignment:
            return
        committed = self._restore_committed(assignment)
        for tp in committed:
            self.consumer.seek(tp)
        log.info("rewound %d partitions to their committed offsets", len(committed))

    def _sweep(self, retention: float, idle_timeout: float) -> None:
        """Delete the small records closed streams keep, ``retention`` seconds after close,
        and (``idle_timeout`` > 0) drop the open streams without input that long, in input
        partitions with no input waiting (see :meth:`StreamProcessor.expire_idle`).

        Fenced as a batch is: the transaction commits, with the consumer's group metadata, the
        offsets of the input partitions whose state it changes (their committed offsets again:
        no input skipped or replayed) and, in their metadata, the changelog ends past the
        tombstones. A stale owner (paused past its session, or its instance id taken) has the
        offsets refused, the tombstones and dead letters aborted. The stores change only once
        the commit has returned, so a failed sweep leaves them as the changelog is."""
        from streamfs.codec import unpackb

        now = time.time()
        inputs = {role: topic for topic, role in self.roles.items()}
        writes: dict[tuple[str, int], dict[str, bytes | None]] = {}
        next_offsets: dict[tuple[str, int], int] = {}
        letters: list[tuple[PartitionState, Plan]] = []  # an expired stream's, and its owner
        for (role, p), state in self.partitions.items():
            tp = (inputs[role], p)
            resume = self.resume_at.get(tp)
            if resume is None:  # set with its state; a tombstone without offsets is unfenced
                continue
            records: dict[str, bytes | None] = {}
            for key, value in state.store.items():
                if header_stream(key) is None:
                    continue
                header = unpackb(value)
                closed_at = header.get("closed_at")
                if (header.get("status") == "closed" and closed_at is not None
                        and closed_at < now - retention):
                    records[key] = None
            # a silence of the worker's own making (input waiting unread, or fetched and
            # not yet committed) is not the producer's
            if (idle_timeout > 0 and tp in self.lag.caught_up
                    and self.fetched_end.get(tp, 0) <= resume):
                expired, dead = state.processor.expire_idle(idle_timeout, now=now,
                                                            since=self.started_at)
                records.update(expired)
                letters.extend((state, plan) for plan in dead)
            if records:
                writes[(role, p)] = records
                next_offsets[tp] = resume
        if not writes:
            return
        self._begin_transaction()
        for _, plan in letters:
            self._publish(plan, None)
        self._produce_changelog(writes)
        self._commit(writes, next_offsets, self.consumer.consumer_group_metadata())
        for (role, p), records in writes.items():
            self._apply({}, self.partitions[(role, p)], list(records.items()))
        for state, plan in letters:
            state.processor.forget(plan.stream)
            metrics.drop_stream(plan.stream)
        self.local.save_committed(writes, self.changelog_end)
        dropped = sum(value is None and header_stream(key) is not None
                      for records in writes.values() for key, value in records.items())
        if dropped:
            log.info("dropped %d closed streams past the retention of %.0f s", dropped,
                     retention)
        for _, plan in letters:
            log.warning("%s", plan.reason)
        metrics.IDLE_DROPPED.inc(len(letters))
