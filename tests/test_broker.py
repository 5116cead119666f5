"""The client-side helpers of streamfs.broker (no broker)."""

from __future__ import annotations

import logging

from streamfs.broker import KAFKA_LOGGER, RepeatFilter


def test_repeated_client_lines_are_shown_once_a_window_with_a_count():
    now = [0.0]
    logger = logging.getLogger("test.repeat")
    logger.propagate = False
    seen: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: seen.append(record.getMessage())
    logger.addHandler(handler)
    logger.addFilter(RepeatFilter(window=60, clock=lambda: now[0]))
    for i in range(5):  # a broker down: the same failure from clients 1..5, ms apart
        logger.error("FAIL [rdkafka#consumer-%d] Connect to 127.0.0.1:9092 failed (after %dms)",
                     i, i)
        now[0] += 1
    logger.error("another kind of line")
    now[0] = 61.0
    logger.error("FAIL [rdkafka#consumer-9] Connect to 127.0.0.1:9092 failed (after 3ms)")
    assert seen == [
        "FAIL [rdkafka#consumer-0] Connect to 127.0.0.1:9092 failed (after 0ms)",
        "another kind of line",
        "FAIL [rdkafka#consumer-9] Connect to 127.0.0.1:9092 failed (after 3ms) "
        "(4 more like it in the last 60 s not shown)",
    ]
    assert any(isinstance(f, RepeatFilter) for f in KAFKA_LOGGER.filters)
