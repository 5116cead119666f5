"""How the worker's Kafka clients are configured: its consumer, its transactional producer, and
the fetch settings that the bench's raw consumer shares (so that it is a fair ceiling).

Only configuration lives here; the worker (:mod:`streamfs.worker.app`) makes the clients with
:func:`streamfs.broker.make_client` and drives them.
"""

from __future__ import annotations

import os
import socket
import uuid
from typing import Any

from streamfs.settings import Settings
from streamfs.worker.health import loop_stall_seconds

#: deadline of one transactional call (a broker that does not answer within it: rewind), and
#: of a record's delivery inside a transaction
TXN_CALL_SECONDS = 15


def fetch_config(max_message_bytes: int) -> dict:
    """How the worker's consumers fetch (the bench's raw consumer uses the same settings)."""
    return {
        "fetch.max.bytes": max(52428800, max_message_bytes + 65536),
        "max.partition.fetch.bytes": max_message_bytes + 65536,
        # a fetch for partitions with no data waits on the broker this long (default 500 ms),
        # and a partition that gets data meanwhile (just assigned, or resumed after a full
        # queue) waits for it: measured, the first message 58 ms after an assignment with 50,
        # 16 ms with 20; an idle worker then costs the broker 5.3 % of a core instead of 3.1 %
        "fetch.wait.max.ms": 20,
        # once its queue is full, librdkafka waits this long before fetching that partition
        # again (default 1 s). The worker drains a full queue in a fraction of that, then sat
        # idle: measured on a 320 MB backlog, 2.5 s with the default, 0.84 s with 20 ms
        "fetch.queue.backoff.ms": 20,
    }


def consumer_config(s: Settings, error_cb: Any) -> dict:
    """The worker's consumer: one group member reading both input topics with
    ``read_committed``, its offsets committed only inside transactions."""
    return {
        **s.kafka_config(),
        "error_cb": error_cb,  # served by consume(), on the loop's thread
        "group.id": s.app_id,
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "earliest",
        "isolation.level": "read_committed",
        "session.timeout.ms": int(s.session_timeout * 1000),
        "heartbeat.interval.ms": int(min(3.0, s.session_timeout / 3) * 1000),
        "max.poll.interval.ms": int(loop_stall_seconds(s.session_timeout) * 1000),
        # static membership (KIP-345): a restart under the same id takes the member's place
        # and its partitions at once. librdkafka sends no LeaveGroup for a static member when
        # it closes, so its partitions wait for it until its session times out.
        **({"group.instance.id": s.instance_id} if s.instance_id else {}),
        **fetch_config(s.max_message_bytes),
    }


def producer_config(s: Settings, logger: Any) -> dict:
    """The worker's transactional producer; ``logger`` keeps its last log lines (only the log
    names the topic of an ACL's refusal)."""
    return {
        **s.kafka_config(),
        "logger": logger,
        # unique per process: fencing comes from the group metadata (KIP-447), not the id
        "transactional.id": f"{s.app_id}-{socket.gethostname()}-{os.getpid()}-"
                            f"{uuid.uuid4().hex[:8]}",
        "transaction.timeout.ms": int(s.transaction_timeout * 1000),
        # a record the broker cannot take in time fails the transaction (abort, rewind)
        # instead of being retried for librdkafka's default of five minutes
        "message.timeout.ms": int(min(TXN_CALL_SECONDS, s.transaction_timeout) * 1000),
        "linger.ms": 5,
        "partitioner": "murmur2_random",  # the Java client's, for keyed results
        "message.max.bytes": s.max_message_bytes + 65536,
        # a topic deleted while the worker runs must fail its transaction, not come back made
        # by the broker with its defaults (one partition, not compacted): results to the
        # wrong place, changelogs that the broker would age out
        "allow.auto.create.topics": False,
        # The broker verifies a transaction's first record to a partition with its coordinator
        # (KIP-890) and may answer with a retriable error meanwhile; librdkafka retries after
        # retry.backoff.ms, 100 ms by default, which was 0.07-0.1 s of a cold K-OFSD backlog
        # in 2 runs of 5, and 0 of 6 with 10 ms. Later failures still back off exponentially,
        # up to retry.backoff.max.ms.
        "retry.backoff.ms": 10,
    }
