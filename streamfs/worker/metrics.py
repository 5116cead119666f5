"""Prometheus metrics of the worker (served on the web port, at /metrics)."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Callable

from prometheus_client import Counter, Gauge, Histogram

from streamfs.worker.state_records import header_stream

if TYPE_CHECKING:
    from streamfs.worker.processor import Plan

log = logging.getLogger("streamfs.worker")

MESSAGES = Counter("streamfs_messages_total", "Input messages handled",
                   ["topic", "outcome"])  # outcome: applied | skipped | dead_letter
ITEMS = Counter("streamfs_items_total", "Features or instances applied", ["kind"])
STEP_SECONDS = Histogram("streamfs_step_seconds", "Algorithm step latency per message",
                         ["algorithm"],
                         buckets=(0.001, 0.005, 0.02, 0.1, 0.5, 2, 10, 60))
SELECTION_SIZE = Gauge("streamfs_selection_size", "Size of the current selection", ["stream"])
RESULTS = Counter("streamfs_results_total", "Result versions published", ["final"])
DEAD_LETTERS = Counter("streamfs_dead_letters_total", "Messages sent to the dead-letter topic",
                       ["topic"])
REBUILD_SECONDS = Histogram("streamfs_state_rebuild_seconds",
                            "Time to rebuild a stream's algorithm from its table records",
                            buckets=(0.001, 0.01, 0.1, 0.5, 2, 10))
RESTORED_RECORDS = Counter("streamfs_restored_records_total",
                           "Records restored into partition state",
                           ["source"])  # local (the local copy) | changelog (its tail)
BATCH_SECONDS = Histogram("streamfs_batch_seconds", "Time of one batch (one transaction)",
                          buckets=(0.005, 0.02, 0.1, 0.5, 2, 10, 60))
BATCH_MESSAGES = Histogram("streamfs_batch_messages", "Input messages per batch",
                           buckets=(1, 2, 5, 10, 50, 200, 1000, 10000))
BATCH_PHASE_SECONDS = Counter(
    "streamfs_batch_phase_seconds", "Time the worker loop spent in each phase of the batches",
    ["phase"])  # steps | checkpoint | commit_wait | produce | local_copy
COMMIT_SECONDS = Counter(
    "streamfs_commit_seconds",
    "Time the helper thread spent completing transactions (state records acknowledged, "
    "offsets sent, commit) while the loop stepped the next batch")
FETCH_SECONDS = Counter(
    "streamfs_fetch_seconds",
    "Time in fetch calls that returned input: waiting for it, and taking it into Python "
    "(confluent-kafka copies each payload into a bytes object); idle waits are not counted")
TRANSACTIONS = Counter("streamfs_transactions_total",
                       "Transactions begun: one a batch, and one a sweep of closed streams past "
                       "their retention (the aborted ones are counted again in "
                       "streamfs_transaction_aborts_total)")
IDLE_DROPPED = Counter("streamfs_idle_streams_dropped_total",
                       "Open streams dropped for STREAMFS_OPEN_IDLE_TIMEOUT (each has a dead "
                       "letter)")
ABORTS = Counter("streamfs_transaction_aborts_total", "Transactions aborted (then rewound)")
REJOINS = Counter("streamfs_rejoins_total",
                  "Times the worker joined its group again with a new consumer after going "
                  "without an assignment for longer than a rebalance takes")
REWINDS = Counter("streamfs_rewinds_total",
                  "Rewinds to the committed offsets and state: after an aborted transaction, or "
                  "a batch given up before its transaction began")


def drop_stream(stream: str) -> None:
    """Forget ``stream``'s series (closed, or its partition moved to another worker)."""
    try:
        SELECTION_SIZE.remove(stream)
    except KeyError:
        pass

READY = Gauge("streamfs_ready", "1 while /health answers 200 (status ok: partitions and "
              "their state, no input waiting idle, a broker answering), else 0")
ASSIGNED_PARTITIONS = Gauge("streamfs_assigned_partitions", "Input partitions this worker owns")
INPUT_LAG = Gauge("streamfs_input_lag_records",
                  "Input records past the committed offsets of this worker's partitions "
                  "(updated every 2 s)")


def report_health(health) -> None:
    """Read ``health`` (the worker's :class:`~streamfs.worker.health.Health`) at every scrape,
    so that /metrics says what /health says, for alerting on lag or readiness."""

    def reading(get):
        def read() -> float:
            with health.lock:
                return float(get())
        return read

    # what /health answers, not the assignment alone: it said 1 while /health said
    # broker-unreachable or lagging-idle, and no alert could fire on those
    READY.set_function(lambda: float(health.snapshot()[0] == 200))
    ASSIGNED_PARTITIONS.set_function(reading(lambda: len(health.assigned)))
    INPUT_LAG.set_function(reading(lambda: health.lag))


def observe_step(plan: Plan, handled: float) -> None:
    """The time one message's step took (spent, whether its batch commits or not)."""
    if plan.algorithm and not plan.skipped and not plan.dead_letter:
        STEP_SECONDS.labels(algorithm=plan.algorithm).observe(plan.step_seconds)
    if plan.rebuild_seconds is not None:
        REBUILD_SECONDS.observe(plan.rebuild_seconds)
    log.debug("stream=%s handle=%.4f", plan.stream, handled)


def count_committed(plan: Plan, topic: str, role: str) -> None:
    """What one message of a committed batch did: the counters, the selection's size, and its
    dead letter's log line (a batch aborted and replayed counted and said them twice)."""
    outcome = "dead_letter" if plan.dead_letter else "skipped" if plan.skipped else "applied"
    MESSAGES.labels(topic=topic, outcome=outcome).inc()
    if plan.result is not None:
        RESULTS.labels(final=str(plan.final).lower()).inc()
    if plan.dead_letter is not None:
        DEAD_LETTERS.labels(topic=topic).inc()
        DEAD_LETTER_LOG.say(plan.stream, plan.reason)
    if plan.n_items:
        ITEMS.labels(kind=role).inc(plan.n_items)
    if plan.selection_size is not None and plan.stream:
        if plan.final:  # bounded series: a closed stream's gauge goes away
            drop_stream(plan.stream)
        else:
            SELECTION_SIZE.labels(stream=plan.stream).set(plan.selection_size)


def start_series(inputs: dict[str, str]) -> None:
    """Make the labelled counters' series of this worker (``inputs``: its input topics and
    their roles) at 0 when it starts: a series that first appears at 1 is no increase to
    Prometheus, so ``increase(streamfs_dead_letters_total[5m]) > 0`` missed the first dead
    letter after every start."""
    for topic, role in inputs.items():
        for outcome in ("applied", "skipped", "dead_letter"):
            MESSAGES.labels(topic=topic, outcome=outcome)
        DEAD_LETTERS.labels(topic=topic)
        ITEMS.labels(kind=role)
    for final in ("true", "false"):
        RESULTS.labels(final=final)
    for source in ("local", "changelog"):
        RESTORED_RECORDS.labels(source=source)
    for phase in ("steps", "checkpoint", "commit_wait", "produce", "local_copy"):
        BATCH_PHASE_SECONDS.labels(phase=phase)


class DeadLetterLog:
    """The log's WARNING lines for dead letters: at most ``per_minute`` a minute, each reason
    cut at ``chars`` characters (1,000 junk records made 1,000 lines, 242 KB; the dead-letter
    topic keeps every one whole, ``streamfs dead-letters`` shows them, and /metrics counts
    them); the number left out is said once the minute is over (:meth:`flush`)."""

    def __init__(self, per_minute: int = 10, chars: int = 300,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.per_minute, self.chars, self.clock = per_minute, chars, clock
        self.window = -float("inf")  # when the minute of the lines said began
        self.said = self.left_out = 0

    def flush(self) -> None:
        """End a minute that is over, saying how many dead letters it left out: called with
        each letter and by the worker's loop every few seconds (it was said only with the
        next letter, an hour later or never)."""
        if self.clock() - self.window < 60.0:
            return
        if self.left_out:
            log.warning("%d more dead letters in the minute of the %d above, not logged one by "
                        "one (streamfs dead-letters lists them)", self.left_out, self.said)
        self.window, self.said, self.left_out = -float("inf"), 0, 0

    def say(self, stream: str | None, reason: str | None) -> None:
        self.flush()
        if self.window == -float("inf"):
            self.window = self.clock()
        if self.said >= self.per_minute:
            self.left_out += 1
            return
        self.said += 1
        reason = str(reason)
        if len(reason) > self.chars:
            reason = reason[:self.chars] + f"... ({len(reason)} characters)"
        log.warning("dead letter for stream %r: %s", stream, reason)


DEAD_LETTER_LOG = DeadLetterLog()


def restore_stream_series(store: dict[str, bytes]) -> None:
    """Set the selection-size series of the open streams in a partition's restored ``store``
    (their series were dropped with the partition at a revoke or a restart, and came back
    only with a stream's next result: an abandoned stream's never)."""
    from streamfs.codec import unpackb

    for key, value in store.items():
        stream = header_stream(key)
        if stream is None:
            continue
        header = unpackb(value)
        size = header.get("selection_size")  # (headers written before it have none)
        if header.get("status") == "open" and size is not None:
            SELECTION_SIZE.labels(stream=stream).set(size)


def drop_stream_series(store: dict[str, bytes]) -> None:
    """Remove the per-stream metric series of every stream in a partition's ``store``."""
    for key in store:
        stream = header_stream(key)
        if stream is not None:
            drop_stream(stream)
