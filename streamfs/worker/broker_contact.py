"""How the worker meets a broker that does not answer, or refuses it.

A broker restarting, a cluster electing leaders or a coordinator loading is waited out:
``/health`` says ``broker-unreachable`` (with the reason where the clients know it), the log
says so once, a stop asked meanwhile ends the wait, and the first answer after it says the
broker is back. An ACL's denial or a login refused stops the worker for good (exit 77), as
every retry would be refused the same; an OAUTHBEARER login that lapsed after the worker had
logged in (its token expired while the token endpoint is away) is waited out like an outage.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Callable, Iterable

from streamfs.broker import (AUTHENTICATION_ERRORS, AccessDenied, denied, is_denied,
                             lapsed_login, no_token)
from streamfs.settings import Settings
from streamfs.worker.errors import StoppedWhileUnreachable, moving_codes, unreachable_codes
from streamfs.worker.health import Health

log = logging.getLogger("streamfs.worker")

# one call's wait for a broker that does not answer (init_transactions, and BrokerContact.ask
# past its deadline); a broker down for longer is waited for call after call (librdkafka: a
# retriable _TIMED_OUT, "retry call to resume"), a stop asked between them ends it
INIT_TRANSACTIONS_SECONDS = 10.0
#: a read of the committed offsets unanswered this long is said (see BrokerContact.committed)
COMMITTED_SAID_SECONDS = 5.0


class BrokerContact:
    """The worker's dealings with a broker that may be away or refuse it: ``health`` is the
    worker's ``/health`` state, ``roles`` its input topics, ``out`` its output topics (by
    role), ``running()`` False once a stop was asked."""

    def __init__(self, settings: Settings, health: Health, roles: Iterable[str],
                 out: dict[str, str], running: Callable[[], bool]) -> None:
        self.settings, self.health, self.running = settings, health, running
        self.roles, self.out = list(roles), out
        self.kafka_config = settings.kafka_config()  # as the clients have it
        self.lapse_said = False  # the consumer's lapsed login said (see refused)

    def client_error(self, err: Any) -> None:
        """The consumer's global errors: every broker connection down is said by /health, and
        why where that is known (no OAUTHBEARER token from the token endpoint: the broker
        takes no login once the token has expired). The producer's error callback says both
        in the log (:func:`~streamfs.broker.say_unreachable`)."""
        from confluent_kafka import KafkaError

        if err.code() == KafkaError._ALL_BROKERS_DOWN:
            with self.health.lock:
                if self.health.unreachable_since is None:
                    self.health.unreachable_since = time.monotonic()
        elif said := no_token(err):
            with self.health.lock:
                self.health.unreachable_reason = said

    def answered(self) -> None:
        """A broker answered (an assignment, a commit, a topic check): reachable again, said
        in the log after a time without (the outage's lines were the last word on it)."""
        self.lapse_said = False
        with self.health.lock:
            since = self.health.unreachable_since
        if since is not None:  # said before /health says so
            log.info("the broker answers again (%.0f s after every connection was lost)",
                     time.monotonic() - since)
        with self.health.lock:
            self.health.unreachable_since = None
            self.health.unreachable_reason = None

    def wait_for_broker(self, said: bool, who: str, err: Any) -> bool:
        """One turn of waiting for a broker that does not answer: a WARNING line the first
        time (``said`` False) naming ``who`` and ``err``; ``/health`` says
        ``broker-unreachable``; :class:`StoppedWhileUnreachable` if a stop was asked meanwhile.
        Returns True (said)."""
        if not said:
            log.warning("%s does not answer (%s): waiting for the broker", who, err.str())
        with self.health.lock:
            if self.health.unreachable_since is None:
                self.health.unreachable_since = time.monotonic()
        # alive, and waiting on purpose: /live must not have a supervisor restart a worker
        # that a restart cannot help while the broker is away
        self.health.beat()
        if not self.running():
            raise StoppedWhileUnreachable(
                "stopped while the broker was unreachable: the batch in progress was not "
                "committed, and its input is read again by its partition's next owner") from None
        return True

    def refused(self, err: Any) -> bool:
        """Whether ``err`` refuses this worker for good (:func:`~streamfs.broker.is_denied`),
        so that it stops (exit 77). Not an OAUTHBEARER login refused after the worker had
        logged in (it has had an assignment): its token expired and no new one came, the token
        endpoint away (librdkafka re-authenticating a connection then failed with "Request
        not valid in current SASL state", and the worker had exited 77 during an outage the
        consumer rides out). That ends when the endpoint is back: it is waited out as an
        unreachable broker is (:meth:`wait_for_login`)."""
        return is_denied(err) and not self.lapsed(err)

    def lapsed(self, err: Any) -> bool:
        """Whether ``err`` is an OAUTHBEARER login that lapsed (see :meth:`refused`)."""
        return (err.code() in AUTHENTICATION_ERRORS and self.health.ready_at is not None
                and lapsed_login(self.kafka_config, err) is not None)

    def wait_for_login(self, said: bool, who: str, err: Any) -> bool:
        """:meth:`wait_for_broker` for a lapsed OAUTHBEARER login (see :meth:`refused`):
        ``/health`` says ``broker-unreachable``, with the reason where the token endpoint did
        not say one; one WARNING line, the first time (``said`` False)."""
        lapsed = lapsed_login(self.kafka_config, err)
        if not said:
            log.warning("%s: %s; waiting for a new token", who, lapsed)
        with self.health.lock:
            if self.health.unreachable_reason is None:
                self.health.unreachable_reason = lapsed
        return self.wait_for_broker(True, who, err)

    def denied(self, err: Any, doing: str) -> AccessDenied:
        """:class:`AccessDenied` for ``err``, saying which of the worker's ACLs (README, Kafka
        security) the kind of resource denied asks for."""
        from confluent_kafka import KafkaError

        app = self.settings.app_id
        if err.code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
            grant = f"WRITE on the transactional ids with the prefix '{app}-'"
        elif err.code() == KafkaError.GROUP_AUTHORIZATION_FAILED:
            grant = f"READ on the consumer group '{app}'"
        else:
            grant = (f"READ on the input topics ({', '.join(sorted(self.roles))}), WRITE on "
                     f"the output topics ({', '.join(sorted(self.out.values()))}), READ and "
                     f"WRITE on the changelogs ('{app}-...-changelog'), DESCRIBE on all of them")
        return denied(self.kafka_config, err, doing, grant)

    def ask(self, what: str, call: Callable[[float], Any], timeout: float) -> Any:
        """``call(seconds left)``, asked again while the broker's answer says the cluster is
        moving (:func:`moving_codes`: a broker restarted or crashed, a leader or coordinator being
        elected or loading), within ``timeout`` seconds; any other error is raised, and so is
        a moving code still there at the deadline, unless it says that no broker answers
        (:func:`unreachable_codes`): then the worker waits for the broker as its new producers
        do (:meth:`wait_for_broker`), one call of ``INIT_TRANSACTIONS_SECONDS`` at a time.
        A rewind asked for its committed offsets while two of a cluster's three nodes were
        down: every call timed out, and at the deadline the worker had exited 70. One INFO line
        says the first moving answer."""
        from confluent_kafka import KafkaException

        deadline = time.monotonic() + timeout
        pause = 0.05
        said = waited = outage = False  # outage: waiting past the deadline
        while True:
            try:
                answer = call(INIT_TRANSACTIONS_SECONDS if outage
                              else max(1.0, deadline - time.monotonic()))
                if waited:
                    log.info("the broker answered (%s): going on", what)
                    self.answered()
                return answer
            except KafkaException as exc:
                err = exc.args[0]
                lapsed = self.lapsed(err)  # see _refused
                if err.code() not in moving_codes() and not lapsed:
                    raise
                now = time.monotonic()
                if lapsed:
                    waited = outage = self.wait_for_login(waited, f"{what}: the broker", err)
                elif err.code() in unreachable_codes() and (outage or now + pause >= deadline):
                    waited = outage = self.wait_for_broker(waited, f"{what}: the broker", err)
                else:
                    if outage:  # a broker answers, the cluster still moving: a new deadline
                        outage, deadline, pause = False, now + timeout, 0.05
                        self.answered()
                    if now + pause >= deadline:
                        raise
                    if not said:
                        log.info("%s: %s; asking again for up to %.0f s", what, err.str(),
                                 deadline - now)
                        said = True
            self.health.beat()  # waiting on the broker is no stall of the loop
            time.sleep(pause)  # a back-off between requests, not a wait for an event
            pause = min(2 * pause, 1.0)

    def committed(self, consumer: Any, partitions: list, timeout: float) -> list:
        """``consumer.committed(partitions)``, asked again while the cluster is moving
        (:meth:`ask`; librdkafka returns NOT_COORDINATOR and the like from ``committed``
        rather than retry them, and the worker had exited 70 on one in a rewind). An answer
        that takes :data:`COMMITTED_SAID_SECONDS` is said: the broker holds the offsets back
        while a dead owner's transaction that sent them is open, up to its transaction
        timeout, and a restart waited that long in silence."""
        from confluent_kafka import KafkaError, KafkaException

        asked = False

        def call(seconds: float) -> list:
            nonlocal asked
            if asked or seconds <= COMMITTED_SAID_SECONDS:
                return consumer.committed(partitions, timeout=seconds)
            asked = True
            try:
                return consumer.committed(partitions, timeout=COMMITTED_SAID_SECONDS)
            except KafkaException as exc:
                if exc.args[0].code() != KafkaError._TIMED_OUT:
                    raise  # judged by ask()
            log.info("the committed offsets are not answered after %.0f s: the broker holds "
                     "them back while a previous owner's transaction is open (it aborts one "
                     "STREAMFS_TRANSACTION_TIMEOUT after it began: %g s by this worker's "
                     "setting), or it is slow; still asking", COMMITTED_SAID_SECONDS,
                     self.settings.transaction_timeout)
            return consumer.committed(partitions, timeout=seconds - COMMITTED_SAID_SECONDS)

        return self.ask("committed offsets", call, timeout)

    def watermarks(self, client: Any, tp: Any, timeout: float = 30.0) -> tuple[int, int]:
        """``client.get_watermark_offsets(tp)``, asked again while the cluster is moving (a
        partition's leader crashed: on a 3-node cluster librdkafka answered "Unknown
        partition" or timed out until its metadata named the new leader)."""
        return self.ask(f"offsets of {tp.topic}:{tp.partition}",
                        lambda t: client.get_watermark_offsets(tp, timeout=t), timeout)
