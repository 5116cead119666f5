"""/health, /live and /metrics: the web server and the limits it reports against."""

import json

import pytest


def test_web_server_answers_its_two_paths_exactly_and_head_probes():
    import time
    import urllib.error
    import urllib.request

    from streamfs.settings import Settings
    from streamfs.worker.health import Health, serve_http

    from streamfs.worker import metrics

    health = Health()
    metrics.report_health(health)
    server = serve_http(Settings(web_port=0), health)
    base = f"http://127.0.0.1:{server.server_address[1]}"

    def status(path: str, method: str = "GET") -> tuple[int, bytes]:
        try:
            with urllib.request.urlopen(urllib.request.Request(base + path, method=method),
                                        timeout=10) as resp:
                return resp.status, resp.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()

    try:
        code, body = status("/health")
        assert code == 503 and b'"status": "starting"' in body  # not assigned yet
        assert status("/health", "HEAD") == (503, b"")
        assert status("/health?verbose=1")[0] == 503
        assert status("/metrics")[0] == 200 and b"streamfs_messages_total" in status("/metrics")[1]
        assert status("/healthz")[0] == status("/metricsfoo")[0] == 404
        # /metrics says what /health says, read at each scrape
        assert b"streamfs_ready 0.0" in status("/metrics")[1]
        with health.lock:
            health.ready, health.assigned, health.lag = True, ["in:0", "in:1"], 7
        text = status("/metrics")[1]
        assert b"streamfs_ready 1.0" in text and b"streamfs_assigned_partitions 2.0" in text
        assert b"streamfs_input_lag_records 7.0" in text and status("/health")[0] == 200
        with health.lock:  # /health 503: so is the gauge (it said 1, from the assignment)
            health.unreachable_since = time.monotonic()
        assert status("/health")[0] == 503 and b"streamfs_ready 0.0" in status("/metrics")[1]
        with health.lock:
            health.unreachable_since = None
        # liveness: the loop turning, whatever the assignment
        code, body = status("/live")
        assert code == 200 and json.loads(body)["status"] == "alive"
        with health.lock:  # a rebalance took the partitions of a worker that was ready
            health.ready_at, health.ready, health.assigned = 1.0, False, []
        code, body = status("/health")
        assert code == 503 and json.loads(body)["status"] == "rebalancing"
        assert status("/live")[0] == 200  # a probe must not restart a worker in a rebalance
        health.loop_at -= health.stall_seconds + 1  # the loop has not turned for too long
        code, body = status("/live")
        assert code == 503 and json.loads(body)["status"] == "stalled"
    finally:
        server.shutdown()
        server.server_close()


def test_loop_stall_limit_is_the_consumers_max_poll_interval():
    """librdkafka refuses max.poll.interval.ms below session.timeout.ms: a long session
    timeout lifts both."""
    from streamfs.worker.health import loop_stall_seconds

    assert loop_stall_seconds(30.0) == 300.0
    assert loop_stall_seconds(600.0) == 600.0


def test_rejoin_bound_outlasts_any_rebalance():
    """The coordinator waits up to the rebalance timeout (the members' max.poll.interval.ms)
    for every member to rejoin, then a session timeout for one that left without a word."""
    from streamfs.worker.health import rejoin_seconds

    assert rejoin_seconds(30.0) == 300.0 + 30.0 + 30.0
    assert rejoin_seconds(600.0) == 600.0 + 600.0 + 30.0


@pytest.mark.parametrize("host,reason", [
    ("999.1.1.1", None),  # no such address: looked up as a name (the resolver's words vary)
    ("192.0.2.1", "Cannot assign requested address"),  # TEST-NET-1: no interface has it
])
def test_a_web_host_that_cannot_be_bound_names_the_host_setting(host, reason):
    """It said "Another worker on this host? Give each its own --web-port", the port's hint,
    whatever the reason."""
    from streamfs.settings import Settings
    from streamfs.worker.health import CannotServe, Health, serve_http

    with pytest.raises(CannotServe) as refused:
        serve_http(Settings(web_host=host, web_port=0), Health())
    message = str(refused.value)
    assert message.startswith(f"cannot serve /health and /metrics on {host}:0: ")
    assert "Set --web-host (STREAMFS_WEB_HOST) to a name or address of this host" in message
    assert "--web-port" not in message and "Another worker" not in message
    assert reason is None or reason in message


def test_a_web_port_in_use_gives_the_port_hint_only():
    import socket

    from streamfs.settings import Settings
    from streamfs.worker.health import CannotServe, Health, serve_http

    with socket.socket() as busy:  # a second worker's port
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(CannotServe) as refused:
            serve_http(Settings(web_port=port), Health())
    message = str(refused.value)
    assert "Another worker on this host? Give each its own --web-port" in message
    assert "STREAMFS_WEB_HOST" not in message


@pytest.mark.parametrize("host", ["::1", "::"])
def test_the_web_server_takes_an_ipv6_address(host):
    # refused with "Address family for hostname not supported" (exit 2)
    import urllib.request

    import socket

    from streamfs.settings import Settings
    from streamfs.worker.health import Health, serve_http

    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        pytest.skip("no IPv6 loopback on this machine")
    server = serve_http(Settings(web_host=host, web_port=0), Health())
    try:
        port = server.server_address[1]
        with urllib.request.urlopen(f"http://[::1]:{port}/live", timeout=10) as resp:
            assert resp.status == 200 and json.load(resp)["status"] == "alive"
    finally:
        server.shutdown()
        server.server_close()


def test_a_step_of_minutes_is_work_not_lagging_idle():
    """Idle was counted from the last commit alone: one step over a minute with input
    waiting made /health 503 "lagging-idle" (and streamfs_ready 0) while the worker worked.
    A step that hangs is /live's to catch."""
    import time

    from streamfs.worker.health import Health

    health = Health()
    health.ready, health.lag = True, 5
    health.last_batch = time.monotonic() - 120
    assert health.snapshot()[1]["status"] == "lagging-idle"  # nothing stepped, nothing done
    health.stepping_since = time.monotonic() - 90
    code, body = health.snapshot()
    assert code == 200 and body["status"] == "ok" and body["stepping_seconds"] >= 90, body
    health.stepping_since = time.monotonic() - 1  # short steps of a worker that never commits
    assert health.snapshot()[1]["status"] == "lagging-idle"


def test_a_worker_assigned_nothing_says_it_is_a_standby():
    """More workers than partitions: the spare one answered `ok` with `assigned: []`, and
    nothing said why it had nothing to do."""
    from streamfs.worker.health import Health

    health = Health()
    assert "standby" not in health.snapshot()[1]  # starting: nothing assigned yet
    health.ready = True
    code, body = health.snapshot()
    assert code == 200 and body["status"] == "ok" and body["standby"] is True, body
    health.assigned = ["f:0"]
    assert "standby" not in health.snapshot()[1]
