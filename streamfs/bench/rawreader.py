"""A plain confluent-kafka consumer in its own process, for the bench's live baseline: it reads
a topic while the bench publishes to it, as the worker does in the streaming run, so that
``pipeline / raw pipeline`` compares like with like (both wait for the same producer).

Run as ``python -m streamfs.bench.rawreader TOPIC N`` with the client settings as JSON in
``STREAMFS_RAWREADER_CONFIG`` (not on the command line: they may hold credentials): prints
``ready`` once its partitions are assigned, then the wall-clock time (``time.time()``) at
which it held all ``N`` messages. :func:`assigned_consumer` and :func:`consume_all` are also
the bench's raw consume of a stored topic.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from typing import Any


def assigned_consumer(kafka_config: dict, topic: str) -> Any:
    """A plain consumer (no group join, the worker's fetch settings) assigned to every
    partition of ``topic`` from its first offset."""
    from confluent_kafka import Consumer, TopicPartition

    from streamfs.client import first_offset
    from streamfs.settings import Settings
    from streamfs.worker.kafka_clients import fetch_config

    consumer = Consumer({**kafka_config, "group.id": f"bench-raw-{uuid.uuid4().hex}",
                         "enable.auto.commit": False,
                         **fetch_config(Settings().max_message_bytes)})  # as the worker
    parts = consumer.list_topics(topic, timeout=10).topics[topic].partitions
    consumer.assign([TopicPartition(topic, p, first_offset(consumer, topic, p)) for p in parts])
    return consumer


def consume_all(consumer: Any, n_messages: int) -> None:
    """Fetch until ``n_messages`` have arrived."""
    got = 0
    while got < n_messages:
        got += sum(1 for m in consumer.consume(100000, timeout=0.05) if not m.error())


def read(kafka_config: dict, topic: str, n_messages: int) -> float:
    """Wall-clock time at which an :func:`assigned_consumer` of ``topic`` has fetched
    ``n_messages``; prints ``ready`` once assigned."""
    consumer = assigned_consumer(kafka_config, topic)
    try:
        print("ready", flush=True)
        consume_all(consumer, n_messages)
        return time.time()
    finally:
        consumer.close()


class LiveReader:
    """The reader as a child process: start it, publish, then :meth:`finished_at`."""

    def __init__(self, kafka_config: dict, topic: str, n_messages: int) -> None:
        # the child's own client settings: everything but Python objects (the ``logger``)
        settings = {k: v for k, v in kafka_config.items() if isinstance(v, (str, int, float))}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", __name__, topic, str(n_messages)],
            env={**os.environ, "STREAMFS_RAWREADER_CONFIG": json.dumps(settings)},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().strip()
        if line != "ready":
            self.proc.kill()
            raise RuntimeError(f"raw reader did not start: {line} {self.proc.stderr.read()}")

    def finished_at(self, timeout: float = 600.0) -> float:
        try:
            out, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise
        if self.proc.returncode != 0:
            raise RuntimeError(f"raw reader failed: {err[-2000:]}")
        return float(out.strip())


if __name__ == "__main__":
    print(read(json.loads(os.environ["STREAMFS_RAWREADER_CONFIG"]), sys.argv[1], int(sys.argv[2])),
          flush=True)
