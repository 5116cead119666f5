"""A worker run in the test's own process (so its code can be patched) on a features topic that
holds a whole stream before it starts, and the results a processor checkpointing after every
message gives for that stream."""

from __future__ import annotations

import threading
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from streamfs.codec import decode, encode
from streamfs.producers import StreamPublisher, feature_stream_messages
from streamfs.settings import Settings
from streamfs.topics import load_catalogue
from streamfs.worker.processor import StreamProcessor


def saola_stream(stream: str, seed: int, p: int) -> list[dict]:
    """A SAOLA stream of 200 instances and ``p`` features in blocks of five columns."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, 200)
    X = rng.normal(size=(200, p)) + 0.8 * y[:, None] * (np.arange(p) % 3 == 0)
    return list(feature_stream_messages(stream, X, y, "saola", {}, block_bytes=200 * 8 * 5))


def one_at_a_time(messages: list[dict]) -> tuple[list[dict], list[dict]]:
    """Results and dead letters of the processor checkpointing after every message."""
    proc = StreamProcessor("features", {})
    results, dead = [], []
    for m in messages:
        plan = proc.handle(m["stream"], encode(m))
        for k, v in plan.writes:
            if v is None:
                proc.store.pop(k, None)
            else:
                proc.store[k] = v
        results += [decode(plan.result)] if plan.result else []
        dead += [decode(plan.dead_letter)] if plan.dead_letter else []
    return results, dead


def without_timestamp(results: list[dict]) -> list[dict]:
    """Results as compared across runs: the input's timestamp and the position of the run's
    ``open`` are the broker's (a processor driven without a broker has neither)."""
    return [{k: v for k, v in r.items() if k not in ("input_timestamp", "open_input")}
            for r in results]


@contextmanager
def worker_thread(kafka_config: dict, topic_prefix: str, data_dir: Path, messages: list[dict],
                  **settings: Any) -> Iterator[dict]:
    """Publish ``messages`` to the features topic, then run a worker (``settings`` on top of
    a 10 s session timeout) on a thread of this process until the block ends; yields the
    topic catalogue."""
    from streamfs.worker import app, startup

    conf = Settings(bootstrap_servers=kafka_config["bootstrap.servers"],
                    topic_prefix=topic_prefix, app_id=f"app-{uuid.uuid4().hex[:8]}",
                    data_dir=str(data_dir), session_timeout=10.0, **settings)
    startup.warm_up()  # compiled kernels: no step is slow enough to cut a batch
    startup.prepare_topics(conf)
    topics = load_catalogue(topic_prefix)
    with StreamPublisher(kafka_config, topics["features"].name) as pub:
        pub.send_all(messages)  # all on the topic before the worker starts
    worker = app.Worker(conf)
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    try:
        yield topics
    finally:
        worker.running = False
        thread.join(60)
    assert not thread.is_alive(), "the worker did not stop within 60 s"


def take_instance_id(kafka_config: dict, worker: Any) -> Any:
    """A consumer that joins ``worker``'s group under its ``group.instance.id``, fencing it,
    and returns once it holds the worker's partitions (the caller closes it)."""
    from confluent_kafka import Consumer

    rival = Consumer({**kafka_config, "group.id": worker.settings.app_id,
                      "group.instance.id": worker.settings.instance_id,
                      "session.timeout.ms": 10000})
    rival.subscribe(list(worker.roles))
    deadline = time.monotonic() + 60
    while not rival.assignment():  # it has taken the worker's place and partitions
        rival.poll(0.1)
        assert time.monotonic() < deadline, "the rival got no partitions"
    return rival
