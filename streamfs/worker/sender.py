"""Awaitable, ordered Kafka writes for the worker (confluent-kafka underneath).

The worker publishes results, dead letters and its table changelog records through this sender
rather than through faust's producer: faust buffers table writes and its flush-before-commit
gives up after 0.1 s, and in our crash tests its buffer sometimes stopped draining, which either
committed offsets ahead of the state or hung the agent. Here every write returns an asyncio
future resolved by the broker's acknowledgement; the idempotent producer keeps writes to one
partition in order.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any


class DeliveryFailed(RuntimeError):
    """The broker did not accept a write."""


class AsyncSender:
    def __init__(self, kafka_config: dict[str, Any], max_message_bytes: int) -> None:
        from confluent_kafka import Producer

        self._producer = Producer({
            **kafka_config,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 0,
            # the Java client's partitioner, as faust/aiokafka use for keyed records
            "partitioner": "murmur2_random",
            "message.max.bytes": max_message_bytes + 65536,
        })
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, name="streamfs-sender", daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        while not self._stop.is_set():
            self._producer.poll(0.05)

    def send(self, topic: str, key: bytes | None, value: bytes | None,
             partition: int | None = None) -> asyncio.Future:
        """Queue one record; the future resolves when the broker has it (or fails)."""
        loop = asyncio.get_running_loop()
        fut = loop.create_future()

        def done(err, msg) -> None:
            if err is not None:
                loop.call_soon_threadsafe(_fail, fut, DeliveryFailed(f"{topic}: {err}"))
            else:
                loop.call_soon_threadsafe(_succeed, fut, msg.offset())

        kwargs = {"partition": partition} if partition is not None else {}
        while True:
            try:
                self._producer.produce(topic, key=key, value=value, on_delivery=done, **kwargs)
                return fut
            except BufferError:  # local queue full; the poll thread is draining it
                self._producer.flush(0.1)

    def close(self, timeout: float = 30.0) -> None:
        self._producer.flush(timeout)
        self._stop.set()
        self._thread.join(timeout)


def _succeed(fut: asyncio.Future, offset: int) -> None:
    if not fut.done():
        fut.set_result(offset)


def _fail(fut: asyncio.Future, exc: BaseException) -> None:
    if not fut.done():
        fut.set_exception(exc)
