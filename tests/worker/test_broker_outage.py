"""What /health says while the broker is down (a broker this test session started)."""

from __future__ import annotations

import time

import pytest

pytestmark = pytest.mark.kafka


def test_health_says_the_broker_is_unreachable_while_it_is(start_worker, broker_outage):
    """With the broker stopped, /health said "ok" (and the lag last read) until the worker's
    session timed out, then "rebalancing"; it says "broker-unreachable" from the first lost
    connection, and "ok" again once the broker is back and the partitions assigned."""
    worker = start_worker(STREAMFS_SESSION_TIMEOUT="60")  # longer than the outage below
    worker.wait_ready()

    def wait_for(status: str, timeout: float) -> dict:
        deadline = time.monotonic() + timeout
        while (body := worker.health()) is None or body["status"] != status:
            assert time.monotonic() < deadline, (body, worker.log_tail())
            time.sleep(0.1)  # polling the worker's endpoint
        return body

    with broker_outage():
        body = wait_for("broker-unreachable", 20)
        assert body["assigned"] and body["unreachable_seconds"] >= 0
    body = wait_for("ok", 120)
    assert body["assigned"] and "unreachable_seconds" not in body
