"""The worker's input lag, and input a producer's open transaction holds back, for ``/health``
and ``/metrics``."""

from __future__ import annotations

import logging
import time
from typing import Any

from streamfs.worker.health import LAGGING_IDLE_SECONDS, Health, held_reason

log = logging.getLogger("streamfs.worker")

#: how often a worker lagging idle looks for input held back by an open transaction
HELD_CHECK_SECONDS = 10


class InputLag:
    """Writes the lag of a worker's input partitions into its ``health`` (the loop calls
    :meth:`update` every few seconds)."""

    def __init__(self, health: Health) -> None:
        self.health = health
        self.held_checked_at = 0.0  # time.monotonic() of the last look for held input
        self.held_said = False  # its warning logged, until nothing is held
        #: (topic, partition) of the input partitions known, at the last update, to have no
        #: input waiting: only there may the idle-stream sweep take a stream's silence for
        #: its producer's (elsewhere its input may wait unread); emptied at every rebalance
        self.caught_up: set[tuple[str, int]] = set()

    def update(self, consumer: Any, resume_at: dict[tuple[str, int], int],
               fetched_end: dict[tuple[str, int], int], fetched: bool) -> None:
        """The input records of ``consumer``'s assignment not committed yet. Where input was
        fetched past the committed offset (``resume_at``; ``fetched_end``: one past the last
        input fetched), they count from that offset: the consumer's position is past what it
        fetched, committed or not, so a worker whose transactions kept failing, re-fetching
        its input after every rewind, had no lag by it, and /health said "ok" while nothing
        was committed for minutes. Elsewhere, from the position: a transactional producer's
        commit marker ends its input, and the position (not the committed offset, one past
        the last message) passes it, so an idle worker on such input has no lag. ``fetched``:
        input is fetched and not processed yet (then none is held back)."""
        from confluent_kafka import TopicPartition

        lag = 0
        assigned = consumer.assignment()
        positions = consumer.position([TopicPartition(tp.topic, tp.partition)
                                       for tp in assigned])
        waiting = []  # (partition, where its lag counts from, its end) of those that lag
        caught_up = set()
        for tp, at in zip(assigned, positions):
            low, high = consumer.get_watermark_offsets(tp, cached=True)
            key = (tp.topic, tp.partition)
            committed = resume_at.get(key)
            start = at.offset
            if committed is not None and (start < 0 or fetched_end.get(key, 0) > committed):
                start = committed
            if high >= 0 and start >= 0 and high > start:
                lag += high - start
                waiting.append((tp, start, high))
            elif high >= 0 and start >= 0:  # (-1: not known yet, not taken as caught up)
                caught_up.add(key)
        self.caught_up = caught_up
        held = self._held(consumer, waiting, fetched)
        with self.health.lock:
            self.health.lag = lag
            self.health.held_records = held
        if held and not self.held_said:
            log.warning("%s", held_reason(held))
        self.held_said = bool(held)

    def _held(self, consumer: Any, waiting: list[tuple[Any, int, int]], fetched: bool) -> int:
        """The input records held back behind a producer's open transaction in the partitions
        ``waiting`` (with where their lag counts from and the log's end), looked for (a query
        each) at most every :data:`HELD_CHECK_SECONDS` once the worker has lagged idle: a
        ``read_committed`` consumer reads up to the partition's last stable offset, which a
        transaction never committed nor aborted keeps where it began, so the worker waited,
        ``/health`` said "lagging-idle" with no reason and the log nothing, until the broker
        aborted it (``transaction.timeout.ms``). The cached high watermark is the log's end; a
        query answers the last stable offset."""
        from confluent_kafka import KafkaException

        now = time.monotonic()
        with self.health.lock:
            idle = now - self.health.last_batch
            held = self.health.held_records
        if not waiting or fetched or idle <= LAGGING_IDLE_SECONDS:
            self.held_checked_at = 0.0
            return 0
        if now - self.held_checked_at < HELD_CHECK_SECONDS:
            return held
        self.held_checked_at = now
        held = 0
        for tp, start, high in waiting:
            try:
                stable = consumer.get_watermark_offsets(tp, timeout=2.0)[1]
            except KafkaException:
                continue  # the broker's trouble is said elsewhere
            if 0 <= stable <= start:
                held += high - stable
        return held
