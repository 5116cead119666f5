"""Fixtures of the producer tests: read a stream back from the broker."""

from __future__ import annotations

import time
import uuid

import numpy as np
import pytest
import scipy.sparse as sp

from streamfs.codec import decode


def consume_stream(kafka_config: dict, topic: str, stream: str, timeout: float = 60.0,
                   sizes: list[int] | None = None) -> list[dict]:
    """Every message of ``stream`` on ``topic`` from the beginning up to its ``close``;
    ``sizes`` gets each record's size in bytes."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({**kafka_config, "group.id": f"test-{uuid.uuid4().hex}",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        parts = consumer.list_topics(topic, timeout=30).topics[topic].partitions
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in parts])
        out: list[dict] = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            assert msg.error() is None, msg.error()
            if msg.key() != stream.encode():
                continue
            out.append(decode(msg.value()))
            if sizes is not None:
                sizes.append(len(msg.value()))
            if out[-1]["kind"] == "close":
                return out
        raise AssertionError(f"no 'close' of {stream!r} on {topic} within {timeout} s "
                             f"({len(out)} messages)")
    finally:
        consumer.close()


def reassemble(messages: list[dict]) -> dict:
    """Check the envelope sequence and rebuild the data in source order."""
    assert [m["seq"] for m in messages] == list(range(len(messages)))
    assert messages[0]["kind"] == "open" and messages[-1]["kind"] == "close"
    assert len({m["stream"] for m in messages}) == 1
    body = messages[1:-1]
    kinds = {m["kind"] for m in body}
    assert len(kinds) <= 1
    out = {"open": messages[0], "n_messages": len(messages)}
    if kinds == {"features"}:
        blocks = [m["X"] for m in body]
        X = sp.hstack(blocks, format="csc") if sp.issparse(blocks[0]) else np.hstack(blocks)
        order = [j for m in body for j in m.get("columns", range(m["start"], m["start"] + m["X"].shape[1]))]
        out["X"] = X[:, np.argsort(order)]
        out["order"] = order
        out["y"] = np.asarray(messages[0]["y"])
    elif kinds == {"instances"}:
        blocks = [m["X"] for m in body]
        out["X"] = sp.vstack(blocks, format="csr") if sp.issparse(blocks[0]) else np.vstack(blocks)
        out["y"] = np.concatenate([np.asarray(m["y"]) for m in body])
    return out


@pytest.fixture
def read_stream(kafka_config):
    """``read_stream(topic, stream)`` → reassembled data (see :func:`reassemble`)."""
    return lambda topic, stream: reassemble(consume_stream(kafka_config, topic, stream))
