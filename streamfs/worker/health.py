"""What the worker tells its supervisor: ``/health`` (readiness), ``/live`` (liveness) and
``/metrics``, served on the web port from a thread of their own."""

from __future__ import annotations

import errno
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from streamfs.settings import Settings


#: input waiting and nothing processed for this long: /health says "lagging-idle"
LAGGING_IDLE_SECONDS = 60


def held_reason(records: int) -> str:
    """Why a worker lags idle, when input is held back behind a producer's open transaction.

    >>> held_reason(4)[:62]
    '4 input records wait behind a producer transaction that is ope'
    """
    return (f"{records} input records wait behind a producer transaction that is open on the "
            "input topics (their last stable offset): the worker reads them once it commits "
            "or aborts, at the latest when the broker aborts it after the producer's "
            "transaction.timeout.ms")


class CannotServe(Exception):
    """The web address (``/health``, ``/metrics``) cannot be bound: port in use, host not
    found or not this machine's."""


def loop_stall_seconds(session_timeout: float) -> float:
    """How long the loop may go without polling: the consumer's ``max.poll.interval.ms``
    (librdkafka's default, 300 s, or the session timeout if longer, as librdkafka requires).
    Past it the consumer leaves the group, and ``/live`` says the loop is stalled."""
    return max(300.0, session_timeout)


def rejoin_seconds(session_timeout: float) -> float:
    """How long a worker whose broker answers may go without an assignment (since it
    subscribed, or since its partitions were revoked) before it joins its group again with a
    new consumer. A rebalance takes at most the group's rebalance timeout (the members'
    ``max.poll.interval.ms``: the coordinator waits that long for every member to rejoin),
    then a session timeout for a member that left without a word; 30 s more for the
    requests around them."""
    return loop_stall_seconds(session_timeout) + session_timeout + 30.0


class Health:
    """What ``/health`` (readiness) and ``/live`` (liveness) report; written by the worker
    loop, read by the web thread."""

    def __init__(self, stall_seconds: float = loop_stall_seconds(0.0)) -> None:
        self.lock = threading.Lock()
        self.stall_seconds = stall_seconds
        self.assigned: list[str] = []
        self.ready = False
        self.ready_at: float | None = None  # wall clock of the last completed assignment
        # time.monotonic() since when the consumer has had no assignment (it subscribed, or
        # its partitions were revoked); None while it has one (Worker._rejoin_if_left_out)
        self.unassigned_since: float | None = None
        self.last_batch = time.monotonic()
        self.loop_at = time.monotonic()  # the loop's last turn (a float store: no lock)
        # time.monotonic() when the message being stepped began; None between steps (a
        # store: no lock). A step of minutes is work, not idling: /live watches for a hang
        self.stepping_since: float | None = None
        self.lag = 0
        # time.monotonic() when the consumer lost every broker connection; None once a broker
        # answered again (BrokerContact.client_error, BrokerContact.answered)
        self.unreachable_since: float | None = None
        # why, where the clients know better than "every broker down": no OAUTHBEARER token
        self.unreachable_reason: str | None = None
        # input records the worker cannot read yet, held back behind a producer's open
        # transaction (the partitions' last stable offset): why it lags, idle
        self.held_records = 0

    def snapshot(self) -> tuple[int, dict]:
        with self.lock:
            now = time.monotonic()
            idle = now - self.last_batch
            if self.ready:
                status = "ok"
            else:  # a worker that was ready and lost its partitions is in a rebalance
                status = "starting" if self.ready_at is None else "rebalancing"
            body = {"status": status, "assigned": list(self.assigned),
                    "lag": self.lag, "idle_seconds": round(idle, 1), "ready_at": self.ready_at}
            if self.unassigned_since is not None:
                body["unassigned_seconds"] = round(now - self.unassigned_since, 1)
            elif self.ready and not self.assigned:  # assigned nothing: more workers than work
                body["standby"] = True
            stepping = self.stepping_since
            if stepping is not None and now - stepping > LAGGING_IDLE_SECONDS:
                body["stepping_seconds"] = round(now - stepping, 1)
            elif self.ready and self.lag > 0 and idle > LAGGING_IDLE_SECONDS:
                body["status"] = "lagging-idle"  # input waiting, nothing processed for a minute
                if self.held_records:
                    body["reason"] = held_reason(self.held_records)
            if self.unreachable_since is not None:
                # whatever else: it said "ok" (and its stale lag) until the session timed
                # out, then "rebalancing", with the broker down all along
                body["status"] = "broker-unreachable"
                body["unreachable_seconds"] = round(now - self.unreachable_since, 1)
                if self.unreachable_reason:
                    body["reason"] = self.unreachable_reason
            return (200 if body["status"] == "ok" else 503), body

    def beat(self) -> None:
        """Progress outside the loop's turns (an algorithm's kernels loaded or compiled, the
        topics checked, a coordinator asked again): counted as a turn of the loop."""
        self.loop_at = time.monotonic()

    def liveness(self) -> tuple[int, dict]:
        """200 while the loop turns (also during a rebalance, when ``/health`` says 503) and
        while start-up makes progress (:meth:`beat`); 503 once neither happened for
        ``stall_seconds``."""
        since = time.monotonic() - self.loop_at
        alive = since < self.stall_seconds
        return (200 if alive else 503), {"status": "alive" if alive else "stalled",
                                         "loop_seconds": round(since, 1)}


def serve_http(settings: Settings, health: Health) -> ThreadingHTTPServer:
    """``/health`` and ``/metrics`` on ``settings.web_host:web_port`` in a daemon thread."""
    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> bytes:
            path = self.path.split("?", 1)[0]  # a query string is ignored, not another path
            if path == "/metrics":
                code, body, ctype = 200, generate_latest(), CONTENT_TYPE_LATEST
            elif path in ("/health", "/live"):
                code, payload = health.snapshot() if path == "/health" else health.liveness()
                body, ctype = json.dumps(payload).encode(), "application/json"
            else:
                code, body, ctype = (404, b"not found: /health, /live and /metrics only\n",
                                     "text/plain")
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            return body

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            self.wfile.write(self._answer())

        def do_HEAD(self) -> None:  # noqa: N802 - probes that ask for the status line only
            self._answer()

        def log_message(self, *args: Any) -> None:  # quiet: health probes every few seconds
            pass

    server = _bound(settings, Handler)
    threading.Thread(target=server.serve_forever, name="streamfs-web", daemon=True).start()
    return server


def check_web_address(settings: Settings) -> None:
    """Raise :class:`CannotServe` now if the web address cannot be bound (a port in use, a
    host not of this machine): checked before the broker is asked, so a worker given both a
    wrong web address and an unreachable broker says the first (exit 2), not only the second
    (exit 69) and this one after the broker is fixed."""
    _bound(settings, BaseHTTPRequestHandler).server_close()


def _bound(settings: Settings, handler: type[BaseHTTPRequestHandler]) -> ThreadingHTTPServer:
    class Server(ThreadingHTTPServer):
        # an IPv6 address ('::1', '::' for every interface) needs its own family: it was
        # refused as "Address family for hostname not supported"; names stay IPv4, as before
        address_family = socket.AF_INET6 if ":" in settings.web_host else socket.AF_INET

    try:
        return Server((settings.web_host, settings.web_port), handler)
    except OSError as exc:
        raise CannotServe(f"cannot serve /health and /metrics on {settings.web_host}:"
                          f"{settings.web_port}: {exc.strerror}{_web_hint(exc)}") from None


def _web_hint(exc: OSError) -> str:
    """What to change when the web address cannot be bound: the port when it is in use, the
    host when no address of this machine has that name."""
    if exc.errno == errno.EADDRINUSE:
        return (". Another worker on this host? Give each its own --web-port "
                "(STREAMFS_WEB_PORT), or 0 for any free port")
    if isinstance(exc, socket.gaierror) or exc.errno == errno.EADDRNOTAVAIL:
        return (". Set --web-host (STREAMFS_WEB_HOST) to a name or address of this host "
                "(127.0.0.1, or 0.0.0.0 for every interface)")
    return ""
