"""Talking to the broker: fail fast with one clear line (the CLI, the producers, the readers).

librdkafka retries an unreachable broker for minutes and logs every attempt; the CLI instead
asks for the cluster's metadata with a deadline and reports the address it could not reach.
Its log lines go to the ``streamfs.kafka`` logger (see ``Settings.kafka_config``), shown
with ``streamfs --verbose``.
"""

from __future__ import annotations

import logging
import math
import re
import signal
import threading
import time
from typing import Any, Callable, Iterable, TypeVar

from confluent_kafka import KafkaError, KafkaException

from streamfs.settings import Settings, is_encrypted_key

Client = TypeVar("Client")


class RepeatFilter(logging.Filter):
    """Lets each kind of line through once per ``window`` seconds, then says how many like it
    it held back. librdkafka logs every failed connection attempt of every client, tens a
    second while a broker is down; lines of one kind differ only in numbers (ports, client
    ids, milliseconds)."""

    def __init__(self, window: float = 60.0, clock: Any = None) -> None:
        super().__init__()
        self.window, self.clock = window, clock or time.monotonic
        self._lock = threading.Lock()
        self._seen: dict[str, tuple[float, int]] = {}  # kind -> (last shown, held back since)

    def filter(self, record: logging.LogRecord) -> bool:
        import re

        text = record.getMessage()
        kind = re.sub(r"\d+", "#", text)
        now = self.clock()
        with self._lock:
            shown, held = self._seen.get(kind, (float("-inf"), 0))
            if now - shown < self.window:
                self._seen[kind] = (shown, held + 1)
                return False
            if len(self._seen) > 1000:  # bounded, whatever the client logs
                self._seen.clear()
            self._seen[kind] = (now, 0)
        if held:
            record.msg, record.args = (f"{text} ({held} more like it in the last "
                                       f"{self.window:g} s not shown)"), ()
        return True


class RetriedByItself(logging.Filter):
    """librdkafka's WARNING lines for a coordinator that the broker is still electing or
    loading, which librdkafka retries by itself, pass as INFO: every worker's first start on a
    fresh broker logged "Failed to acquire transactional PID from broker TxnCoordinator/1:
    Broker: Not coordinator: retrying", which users read as a fault. A coordinator that never
    answers is said by the worker itself ("the transaction coordinator does not answer").
    Relabelled, it is held back where its logger shows no INFO (the logger's level let it
    through as a WARNING: `make demo`'s worker at --log-level warning logged it)."""

    CAUSES = ("Not coordinator", "Coordinator load in progress", "Coordinator not available")

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno == logging.WARNING:
            text = record.getMessage()
            if text.rstrip().endswith("retrying") and any(c in text for c in self.CAUSES):
                record.levelno, record.levelname = logging.INFO, "INFO"
                return logging.getLogger(record.name).isEnabledFor(logging.INFO)
        return True


#: where a client goes without STREAMFS_BOOTSTRAP_SERVERS
DEFAULT_BOOTSTRAP = Settings.bootstrap_servers

#: librdkafka's log lines go here instead of stderr, each kind at most once a minute
KAFKA_LOGGER = logging.getLogger("streamfs.kafka")
KAFKA_LOGGER.addFilter(RetriedByItself())
KAFKA_LOGGER.addFilter(RepeatFilter())
# shown where the application configures logging (the worker, `--verbose`), not by Python's
# last-resort handler: a Python API call against a broker that is down printed librdkafka's
# "FAIL [rdkafka#producer-1] ... Connection refused" lines on stderr before it raised
KAFKA_LOGGER.addHandler(logging.NullHandler())

#: the signals that interrupted this process (:func:`remember_interrupts`), in order
_INTERRUPTS: list[int] = []


def remember_interrupts(*signals: int) -> None:
    """From now on (main thread only) SIGINT, and the other ``signals`` given (SIGTERM, for a
    command that says what it did before it stops, as for Ctrl-C), raise
    ``KeyboardInterrupt`` as Python's own handler does for SIGINT, and are remembered for
    :func:`lost_interrupt` and :func:`interrupting_signal`."""
    def on_interrupt(signum: int, frame: Any) -> None:
        _INTERRUPTS.append(signum)
        raise KeyboardInterrupt

    if threading.current_thread() is threading.main_thread():  # signal.signal's rule
        for sig in (signal.SIGINT, *signals):
            signal.signal(sig, on_interrupt)


def interrupting_signal() -> int:
    """The signal that interrupted last (SIGINT if none was remembered): its exit code is
    128 + its number, as the shell reports a command it stopped."""
    return _INTERRUPTS[-1] if _INTERRUPTS else signal.SIGINT


def lost_interrupt(exc: BaseException) -> bool:
    """Whether ``exc`` is a Ctrl-C (or another remembered interrupt) that confluent-kafka
    lost: raised inside one of librdkafka's callbacks (its log lines, which ``poll`` and
    ``flush`` serve, come often while a broker is down), the ``KeyboardInterrupt`` vanishes
    and the call fails with ``SystemError: ... returned NULL without setting an exception``
    instead."""
    return isinstance(exc, SystemError) and bool(_INTERRUPTS)


#: what :func:`say_still_trying` adds on how to stop: a command's user presses Ctrl-C; the
#: worker, a service stopped by its supervisor, sets it empty
STOP_HINT = ": Ctrl-C stops"
#: how often :func:`say_unreachable` repeats itself while the broker stays away
UNREACHABLE_NOTICE_SECONDS = 60.0
#: when :func:`say_unreachable` last said each kind of trouble
_unreachable_said_at: dict[str, float] = {}
#: librdkafka's error when its OIDC client got no token from the token endpoint (OAUTHBEARER)
NO_TOKEN = "Failed to acquire SASL OAUTHBEARER token"


def say_unreachable(err: KafkaError) -> None:
    """A client's ``error_cb``: every broker connection down, and a token endpoint that gives
    no token (OAUTHBEARER: the client cannot log in once its token expires), are said on the
    ``streamfs`` logger (each once a minute at most), so that a ``produce``, ``watch`` or
    worker whose broker or token endpoint went away mid-run does not sit silent; librdkafka's
    own log lines, shown with ``--verbose`` only, were all it said. The client keeps trying
    (and the caller's Ctrl-C stops it)."""
    if err.code() == KafkaError._ALL_BROKERS_DOWN:
        # librdkafka's count can lag behind ("0/2 brokers are down"): said without it then
        detail = "" if re.search(r"\b0/\d+ brokers", err.str()) else f" ({err.str()})"
        say_still_trying("broker", f"the broker does not answer{detail}")
    elif said := no_token(err):
        say_still_trying("token", said)


def say_still_trying(kind: str, what: str) -> None:
    """``what`` went wrong and the client keeps trying: one WARNING line on the ``streamfs``
    logger, once a minute at most for each ``kind`` of trouble."""
    now = time.monotonic()
    if now - _unreachable_said_at.get(kind, -math.inf) < UNREACHABLE_NOTICE_SECONDS:
        return
    _unreachable_said_at[kind] = now
    logging.getLogger("streamfs").warning("%s; still trying%s", what, STOP_HINT)


def say_answers_again() -> None:
    """The broker answered a client: if :func:`say_unreachable` had said that it does not, one
    WARNING line that it does again (a ``watch`` that said "still trying" said nothing more,
    although it went on reading)."""
    if _unreachable_said_at.pop("broker", None) is not None:
        logging.getLogger("streamfs").warning("the broker answers again")


def lapsed_login(kafka_config: dict[str, Any], err: KafkaError) -> str | None:
    """What ``err`` says when it refuses the OAUTHBEARER login of a client that had logged in
    (the caller knows that it had): its token expired and no new one came, the token endpoint
    away (librdkafka re-authenticating a connection then fails, "Local: Authentication
    failure"). That ends when the endpoint answers again, unlike a refused first login or
    refused credentials that do not renew (SASL/PLAIN, SCRAM, certificates). None for any
    other error.

    >>> err = KafkaError(KafkaError._AUTHENTICATION, "Local: Authentication failure")
    >>> lapsed_login({"sasl.mechanism": "OAUTHBEARER"}, err)
    "the broker refused this client's OAUTHBEARER login after it had logged in (Local: Authentication failure): its token expired and no new one came"
    >>> lapsed_login({"sasl.mechanism": "SCRAM-SHA-512"}, err) is None
    True
    """
    if (kafka_config.get("sasl.mechanism") == "OAUTHBEARER"
            and err.code() in AUTHENTICATION_ERRORS):
        return (f"the broker refused this client's OAUTHBEARER login after it had logged in "
                f"({err.str()}): its token expired and no new one came")
    return None


def no_token(err: KafkaError) -> str | None:
    """What ``err`` says when it is librdkafka's OIDC client getting no token from the token
    endpoint (OAUTHBEARER), said as the worker and the commands say it; None for any other.

    >>> no_token(KafkaError(KafkaError._AUTHENTICATION, NO_TOKEN + ": 401"))
    'no OAUTHBEARER token from the token endpoint (Failed to acquire SASL OAUTHBEARER token: 401)'
    >>> no_token(KafkaError(KafkaError._ALL_BROKERS_DOWN)) is None
    True
    """
    if err.code() == KafkaError._AUTHENTICATION and NO_TOKEN in err.str():
        return f"no OAUTHBEARER token from the token endpoint ({err.str()})"
    return None


def with_kafka_logger(kafka_config: dict[str, Any]) -> dict[str, Any]:
    """``kafka_config`` with librdkafka's log lines sent to :data:`KAFKA_LOGGER` (each kind
    at most once a minute) instead of straight to stderr, unless it names a ``logger``, and a
    lost broker said by :func:`say_unreachable`, unless it names an ``error_cb``.

    >>> conf = with_kafka_logger({"bootstrap.servers": "b:9092"})
    >>> conf["logger"] is KAFKA_LOGGER, conf["error_cb"] is say_unreachable
    (True, True)
    """
    return {"logger": KAFKA_LOGGER, "error_cb": say_unreachable, **kafka_config}


class ClientConfigRefused(KafkaException):
    """librdkafka refused a client's configuration when the client was made
    (``_INVALID_ARG``). Still a ``KafkaException`` whose ``args[0]`` is librdkafka's error;
    ``keys`` are the configuration keys its message names, ``detail`` the message without
    the kind of client."""

    def __init__(self, error: KafkaError, keys: list[str], detail: str) -> None:
        super().__init__(error)
        self.keys, self.detail = keys, detail


#: How often every client asks for the metadata of the cluster and of the topics it knows,
#: in ms, unless its configuration says otherwise (librdkafka's default: 5 minutes). A client
#: learns that a crashed broker's partitions have new leaders from a request that fails
#: against the old one, but not for the questions it asks only now and then: measured on a
#: 3-node cluster with one node SIGKILLed, a long-lived consumer's get_watermark_offsets
#: for a partition the node had led timed out for 280 s (the test's end) and a long-lived
#: admin client's describe_topics for 30 s ("Timed out waiting for controller": it is sent
#: to the broker the metadata names as controller), while new clients were answered at
#: once. With this refresh the same questions are answered again within 5 s of the cluster
#: electing new leaders (9 s after the crash with Kafka's defaults).
METADATA_REFRESH_MS = 5000


def make_client(factory: Callable[[dict[str, Any]], Client], config: dict[str, Any]) -> Client:
    """``factory(config)``: a confluent-kafka ``Producer``, ``Consumer`` or ``AdminClient``
    (that refreshes its metadata every :data:`METADATA_REFRESH_MS` unless ``config`` sets
    ``topic.metadata.refresh.interval.ms``); :class:`ClientConfigRefused` if librdkafka
    refuses ``config``. librdkafka's log lines go to :data:`KAFKA_LOGGER` unless ``config``
    names a ``logger``: a client made from a user's plain configuration printed them straight
    to stderr."""
    config = {"logger": KAFKA_LOGGER, **config}
    if (config.get("sasl.mechanism") == "OAUTHBEARER" and "sasl.oauthbearer.method" not in config
            and config.get("sasl.oauthbearer.token.endpoint.url")):
        # a token endpoint is only asked with the OIDC method (librdkafka's default is
        # unsecured test tokens): a configuration written by hand without it was said to be
        # an unreachable broker
        config = {**config, "sasl.oauthbearer.method": "oidc"}
    try:
        return factory({"topic.metadata.refresh.interval.ms": METADATA_REFRESH_MS, **config})
    except KafkaException as exc:
        error = exc.args[0] if exc.args else None
        if not isinstance(error, KafkaError) or error.code() != KafkaError._INVALID_ARG:
            raise
        detail = re.sub(r"^Failed to create [a-z ]+: ", "", error.str().strip())
        if "GSSAPI" in detail and not config.get("sasl.mechanism"):
            # the mechanism nobody set: say so, not only that Kerberos is missing
            detail = (f"sasl.mechanism is not set, so librdkafka takes its default, GSSAPI "
                      f"(Kerberos): {detail}; set it to the cluster's (PLAIN, SCRAM-SHA-256, "
                      f"SCRAM-SHA-512 or OAUTHBEARER)")
        elif ("ssl.key.location failed" in detail and config.get("ssl.key.password")
              and is_encrypted_key(config.get("ssl.key.location", ""))):
            # librdkafka says "PEM lib" and logs "bad decrypt ... maybe wrong password"
            detail += " (the key is encrypted: is ssl.key.password its password?)"
        raise ClientConfigRefused(error, named_keys(detail, config), detail) from None


def named_keys(message: str, config: dict[str, Any]) -> list[str]:
    """The keys of ``config`` that librdkafka's ``message`` names, in its order (a key may be
    written with spaces for dots); else a property it quotes (an alias of a key given).

    >>> named_keys("Unsupported SASL mechanism: FOO", {"sasl.mechanism": "FOO"})
    ['sasl.mechanism']
    >>> named_keys("sasl.username and sasl.password must be set",
    ...            {"sasl.password": "", "sasl.mechanism": "PLAIN", "sasl.username": ""})
    ['sasl.username', 'sasl.password']
    >>> named_keys('Configuration property "fetch.message.max.bytes" value 0 is outside '
    ...            'allowed range 1..1000000000', {"max.partition.fetch.bytes": 0})
    ['fetch.message.max.bytes']
    """
    found: dict[str, int] = {}
    for key in config:
        pattern = re.escape(key).replace(r"\.", "[. ]")
        if where := re.search(rf"(?<![\w.-]){pattern}(?![\w.-])", message, re.IGNORECASE):
            found[key] = where.start()
    return sorted(found, key=found.get) or re.findall(r'property:? "([\w.-]+)"', message)


#: exit code of a CLI command that could not reach the broker (sysexits' EX_UNAVAILABLE)
EXIT_UNREACHABLE = 69


class BrokerUnreachable(RuntimeError):
    """No broker answered at the configured address within the deadline."""


#: exit code when Kafka refused the client's credentials or TLS handshake, or its ACLs deny
#: an operation (sysexits' EX_NOPERM): the operator's to fix, which a restart alone is not
EXIT_DENIED = 77

#: the errors by which a broker refuses the credentials (librdkafka's own code for a failed
#: SASL or TLS handshake, and the broker's)
AUTHENTICATION_ERRORS = frozenset({KafkaError._AUTHENTICATION,
                                   KafkaError.SASL_AUTHENTICATION_FAILED})
#: the errors by which a broker's ACLs deny an operation
AUTHORIZATION_ERRORS = frozenset({KafkaError.TOPIC_AUTHORIZATION_FAILED,
                                  KafkaError.GROUP_AUTHORIZATION_FAILED,
                                  KafkaError.CLUSTER_AUTHORIZATION_FAILED,
                                  KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED})


class AccessDenied(RuntimeError):
    """Kafka refused the client's credentials or its TLS handshake, its listener speaks another
    security protocol, or its ACLs deny an operation the client needs: the message names what
    to fix (for an ACL: the user, what was denied and what to grant; README, Kafka security)."""


def is_denied(err: KafkaError | None) -> bool:
    """Whether ``err`` says that the credentials were refused or an ACL denied the call."""
    return err is not None and (err.code() in AUTHENTICATION_ERRORS
                                or err.code() in AUTHORIZATION_ERRORS)


def kafka_error(exc: BaseException | None) -> Any:
    """The ``KafkaError`` of ``exc``: a ``KafkaException``, or the ``SystemError`` ("...
    returned a result with an exception set") that confluent-kafka raises instead when the
    error comes while it serves a delivery callback, with the ``KafkaException`` as its
    cause. None for anything else.

    >>> from confluent_kafka import KafkaError, KafkaException
    >>> err = KafkaError(KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    >>> wrapped = SystemError("<function _delivered> returned a result with an exception set")
    >>> wrapped.__cause__ = KafkaException(err)
    >>> kafka_error(wrapped).code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    True
    >>> kafka_error(SystemError("something else")) is None
    True
    """
    while exc is not None:
        if isinstance(exc, KafkaException):
            return exc.args[0] if exc.args else None
        if not isinstance(exc, SystemError):
            return None
        exc = exc.__cause__ or exc.__context__
    return None


def principal(kafka_config: dict[str, Any]) -> str:
    """Who the broker takes a client of ``kafka_config`` for, as far as the client knows: its
    SASL user, or its OAuth client (OAUTHBEARER: the broker's principal is its token's
    subject), else the subject of its client certificate (mutual TLS), which the broker's
    ``ssl.principal.mapping.rules`` make a principal (``User:CN=...`` by default).

    >>> principal({"sasl.username": "alice"})
    "user 'alice'"
    >>> principal({"sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.client.id": "app"})
    "OAuth client 'app'"
    >>> principal({"bootstrap.servers": "b:9092"})
    'this client'
    """
    if kafka_config.get("sasl.mechanism") == "OAUTHBEARER":
        return f"OAuth client {kafka_config.get('sasl.oauthbearer.client.id')!r}"
    if user := kafka_config.get("sasl.username"):
        return f"user {user!r}"
    if path := kafka_config.get("ssl.certificate.location"):
        return f"the user of certificate {certificate_subject(path)!r}"
    return "this client"


def certificate_subject(path: str) -> str:
    """The subject of the first certificate in the PEM file at ``path`` (RFC 4514, as Kafka
    writes a principal: ``CN=app,O=example``), or ``path`` itself if it holds none that can
    be read (librdkafka reports that file on its own)."""
    from cryptography import x509

    try:
        with open(path, "rb") as f:
            return x509.load_pem_x509_certificate(f.read()).subject.rfc4514_string()
    except (OSError, ValueError):
        return path


def denied(kafka_config: dict[str, Any], err: KafkaError, doing: str, grant: str) -> AccessDenied:
    """:class:`AccessDenied` for ``err`` (see :func:`is_denied`): what ``principal`` was
    ``doing`` and, for an ACL, what to ``grant``; for credentials, which settings to check.

    >>> from confluent_kafka import KafkaError
    >>> err = KafkaError(KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "denied")
    >>> print(denied({"sasl.username": "alice"}, err, "starting a transaction",
    ...              "WRITE on transactional ids with the prefix 'app-'"))
    Kafka denied user 'alice' starting a transaction (denied): its ACLs must allow WRITE on transactional ids with the prefix 'app-' (README, Kafka security)
    """
    detail = _short(err.str())
    oauth = kafka_config.get("sasl.mechanism") == "OAUTHBEARER"
    if err.code() in AUTHENTICATION_ERRORS and oauth:
        # librdkafka's "Failed to acquire SASL OAUTHBEARER token: ..." is the token endpoint's
        # answer (or its silence); anything else, the broker's
        source = (f"could not get a token for {principal(kafka_config)} from "
                  f"{kafka_config.get('sasl.oauthbearer.token.endpoint.url')}"
                  if NO_TOKEN in detail else
                  f"Kafka at {kafka_config.get('bootstrap.servers', '?')} refused the token of "
                  f"{principal(kafka_config)}")
        if NO_TOKEN in detail and re.search(r"certificate|trust anchors|SSL", detail):
            # the endpoint's HTTPS certificate, not the client's credentials
            return AccessDenied(
                f"{source} ({detail}): check STREAMFS_HTTPS_CA_LOCATION, a file of the CA "
                "certificates that signed the token endpoint's (this client read "
                f"{kafka_config.get('https.ca.location', 'none')}; unset, the system's)")
        return AccessDenied(
            f"{source} ({detail}): check STREAMFS_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL, "
            "STREAMFS_SASL_OAUTHBEARER_CLIENT_ID and STREAMFS_SASL_OAUTHBEARER_CLIENT_SECRET "
            "(and STREAMFS_SECURITY_PROTOCOL, STREAMFS_SASL_MECHANISM for the broker's listener)")
    if err.code() in AUTHENTICATION_ERRORS and (said := sasl_mismatch(kafka_config, detail)):
        return AccessDenied(f"Kafka at {kafka_config.get('bootstrap.servers', '?')} {said}")
    if err.code() in AUTHENTICATION_ERRORS:
        return AccessDenied(
            f"Kafka at {kafka_config.get('bootstrap.servers', '?')} refused the credentials of "
            f"{principal(kafka_config)} ({detail}): check STREAMFS_SECURITY_PROTOCOL, "
            "STREAMFS_SASL_MECHANISM, STREAMFS_SASL_USERNAME and STREAMFS_SASL_PASSWORD")
    return AccessDenied(f"Kafka denied {principal(kafka_config)} {doing} ({detail}): its ACLs "
                        f"must allow {grant} (README, Kafka security)")


def sasl_mismatch(kafka_config: dict[str, Any], detail: str) -> str | None:
    """What a failed SASL handshake (librdkafka's ``detail``) says when the listener takes no
    SASL at all, or not this mechanism: the credentials were never looked at, so "refused
    the credentials" sent the user to a password that was right. None otherwise.

    >>> sasl_mismatch({"sasl.mechanism": "PLAIN"}, "SASL PLAIN mechanism handshake failed: "
    ...               "Broker: Request not valid in current SASL state: broker's supported "
    ...               "mechanisms: ")[:60]
    'answers, but its listener there does not use SASL (SASL PLAI'
    >>> sasl_mismatch({"sasl.mechanism": "SCRAM-SHA-256"}, "SASL SCRAM-SHA-256 mechanism "
    ...               "handshake failed: Broker: Unsupported SASL mechanism: broker's "
    ...               "supported mechanisms: PLAIN,SCRAM-SHA-512")
    'offers PLAIN, SCRAM-SHA-512, not SCRAM-SHA-256: set STREAMFS_SASL_MECHANISM to one of them'
    """
    found = re.search(r"broker's supported mechanisms: ([\w,-]*)", detail)
    if found is None:
        return None
    offered = [m for m in found.group(1).split(",") if m]
    if not offered:
        return (f"answers, but its listener there does not use SASL ({detail}): set "
                "STREAMFS_SECURITY_PROTOCOL to PLAINTEXT or SSL (as the listener speaks), or "
                "connect to the cluster's SASL listener")
    mechanism = kafka_config.get("sasl.mechanism", "GSSAPI")
    if mechanism in offered:
        return None
    return (f"offers {', '.join(offered)}, not {mechanism}: set STREAMFS_SASL_MECHANISM to "
            "one of them")


def check_reachable(kafka_config: dict[str, Any], timeout: float = 10.0) -> None:
    """Raise :class:`BrokerUnreachable` unless a broker answers within ``timeout`` seconds;
    as soon as every bootstrap broker has refused the connection, without waiting that long.
    A broker that answers, but not to these security settings (credentials, TLS, protocol),
    raises :class:`AccessDenied` at once."""
    from confluent_kafka.admin import AdminClient

    address = kafka_config.get("bootstrap.servers", "?")
    errors: list[KafkaError] = []
    lines = LogLines(kafka_config.get("logger", KAFKA_LOGGER))
    admin = make_client(AdminClient, {**kafka_config, "error_cb": errors.append,
                                      "logger": lines.logger,
                                      "socket.connection.setup.timeout.ms": int(timeout * 1000)})
    deadline = time.monotonic() + timeout
    while True:
        try:
            meta = admin.list_topics(timeout=max(0.1, min(1.0, deadline - time.monotonic())))
        except KafkaException as exc:
            admin.poll(0)  # serves error_cb and the log lines
            refused = [e for e in errors if e.code() in AUTHENTICATION_ERRORS]
            if refused:  # it answered, but not to these credentials: no use waiting
                raise denied(kafka_config, refused[-1], "", "") from None
            if alert := [e for e in errors if CERTIFICATE_REFUSED.search(e.str())]:
                raise client_certificate_refused(kafka_config, alert[-1]) from None
            # a certificate not trusted, or a TLS client at a listener without TLS
            if tls := [e for e in errors if e.code() == KafkaError._SSL
                       or "SSL handshake failed" in e.str()]:
                servers = [s.strip() for s in address.split(",")]
                failed = failing_broker(tls[-1].str()) or servers[0]
                # a broker the cluster advertises, reached after the bootstrap: named
                at = address if failed in servers else f"{failed} (advertised by {address})"
                if ("certificate verify failed" in tls[-1].str()
                        and (why := broker_certificate_problem(kafka_config, failed))):
                    raise AccessDenied(f"the TLS handshake with Kafka at {at} failed: "
                                       f"{why}") from None
                if "PLAINTEXT broker listener" in tls[-1].str():  # librdkafka's own guess
                    raise AccessDenied(
                        f"the TLS handshake with Kafka at {at} failed "
                        f"({_short(tls[-1].str())}): its listener there does not speak TLS: "
                        "set STREAMFS_SECURITY_PROTOCOL to PLAINTEXT (SASL_PLAINTEXT with "
                        "SASL), or connect to the cluster's TLS listener") from None
                raise AccessDenied(
                    f"the TLS handshake with Kafka at {address} failed "
                    f"({_short(tls[-1].str())}): check STREAMFS_SSL_CA_LOCATION (the "
                    "certificate of the CA that signed the broker's) and "
                    "STREAMFS_SECURITY_PROTOCOL (SSL or SASL_SSL only where the listener "
                    "speaks TLS)") from None
            down = any(e.code() == KafkaError._ALL_BROKERS_DOWN for e in errors)
            protocol = kafka_config.get("security.protocol", "PLAINTEXT (the default)")
            if down and any(FIRST_REQUEST_DROPPED.search(line) for line in lines.seen):
                raise AccessDenied(
                    f"Kafka at {address} answers but closed every connection at its first "
                    f"request: its listener there expects another security protocol than "
                    f"{protocol}, most likely TLS (SSL, or SASL_SSL with SASL): check "
                    "STREAMFS_SECURITY_PROTOCOL") from None
            if (down and "SASL" not in protocol.upper()
                    and any(DROPPED_AFTER_HANDSHAKE.search(line) for line in lines.seen)):
                raise AccessDenied(
                    f"Kafka at {address} answers but closed every connection at its first "
                    f"request past the handshake: its listener there expects SASL, which "
                    f"{protocol} does not use: set STREAMFS_SECURITY_PROTOCOL to SASL_SSL (or "
                    "SASL_PLAINTEXT) and STREAMFS_SASL_MECHANISM, STREAMFS_SASL_USERNAME and "
                    "STREAMFS_SASL_PASSWORD") from None
            if down or time.monotonic() >= deadline:
                transport = [e.str() for e in errors if e.code() != KafkaError._ALL_BROKERS_DOWN]
                detail = transport[-1] if transport else exc.args[0].str()
                # the default address, in a shell without the variable: a terminal opened for
                # the worker, where the project's broker (on a free port) is running
                local = ("; the project's local broker listens on a port of its own: `bash "
                         "ops/kafka/broker.sh status` prints its address"
                         if address == DEFAULT_BOOTSTRAP else "")
                raise BrokerUnreachable(
                    f"cannot reach Kafka at {address} ({_short(detail)}); is the broker "
                    f"running? (set --bootstrap-servers or STREAMFS_BOOTSTRAP_SERVERS{local})"
                ) from None
        else:
            check_advertised_certificates(kafka_config, meta.brokers.values())
            return


def _server(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def check_advertised_certificates(kafka_config: dict[str, Any], brokers: Iterable[Any]) -> None:
    """:class:`AccessDenied` if the certificate of a broker the cluster advertises
    (``BrokerMetadata``), other than the bootstrap servers, fails where theirs did not (other
    host names, out of its dates: :func:`broker_certificate_problem`). Clients connect to the
    advertised brokers once the bootstrap answered: a certificate for the bootstrap name only
    left a reader saying "the broker does not answer; still trying" for ever, and the other
    commands blaming a CA that was right. TLS clients that verify host names only."""
    protocol = str(kafka_config.get("security.protocol", "")).upper()
    if (not protocol.endswith("SSL")
            or kafka_config.get("ssl.endpoint.identification.algorithm") == "none"):
        return
    bootstrap = {s.strip() for s in str(kafka_config.get("bootstrap.servers", "")).split(",")}
    for broker in brokers:
        server = _server(broker.host, broker.port)
        if server not in bootstrap and (why := broker_certificate_problem(kafka_config, server)):
            raise AccessDenied(f"the TLS handshake with Kafka's broker {server}, which the "
                               f"cluster at {kafka_config.get('bootstrap.servers')} advertises "
                               f"and clients connect to next, fails: {why}")


def failing_broker(error: str) -> str | None:
    """The ``host:port`` of the broker a librdkafka error names, if it names one.

    >>> failing_broker("ssl://127.0.0.1:59375/1: SSL handshake failed: certificate verify failed")
    '127.0.0.1:59375'
    >>> failing_broker("kafka-0:9093/bootstrap: SSL handshake failed"), failing_broker("x")
    ('kafka-0:9093', None)
    """
    found = re.search(r"(?:^|[\s/])((?:\[[0-9a-fA-F:.]+\]|[\w.-]+):\d+)/(?:\d+|bootstrap)\b",
                      error)
    return found.group(1) if found else None


def broker_certificate_problem(kafka_config: dict[str, Any],
                               server: str | None = None) -> str | None:
    """Why the certificate of the broker at ``server`` (default: the first bootstrap
    broker) fails verification, where librdkafka
    says only "certificate verify failed ... verify that ssl.ca.location is correctly
    configured": a certificate made for other host names, or one out of its validity dates,
    whose CA is right. Python's ``ssl`` checks it again with the same CAs (``ssl.ca.location``,
    else the system's); None where it finds nothing more to say (a CA it lacks is what the
    caller says already) or cannot connect."""
    import datetime
    import os
    import socket
    import ssl

    from cryptography import x509

    server = server or kafka_config.get("bootstrap.servers", "").split(",")[0].strip()
    host, _, port = server.rpartition(":")
    host = host.strip("[]")
    ca = kafka_config.get("ssl.ca.location")
    ca = None if ca == "probe" else ca
    try:
        context = ssl.create_default_context(
            cafile=ca if ca and os.path.isfile(ca) else None,
            capath=ca if ca and os.path.isdir(ca) else None)
        with socket.create_connection((host, int(port)), timeout=5) as sock:
            with context.wrap_socket(sock, server_hostname=host):
                return None
    except ssl.SSLCertVerificationError as exc:
        said = exc.verify_message.rstrip(".")
    except (OSError, ValueError):
        return None
    unverified = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    unverified.check_hostname, unverified.verify_mode = False, ssl.CERT_NONE
    try:
        with socket.create_connection((host, int(port)), timeout=5) as sock:
            with unverified.wrap_socket(sock, server_hostname=host) as tls:
                cert = x509.load_der_x509_certificate(tls.getpeercert(binary_form=True))
    except (OSError, ValueError):
        return None
    if "mismatch" in said:  # "Hostname mismatch" or "IP address mismatch"
        try:
            alt = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
            names = [str(n) for n in alt.get_values_for_type(x509.DNSName)] + [
                str(n) for n in alt.get_values_for_type(x509.IPAddress)]
        except x509.ExtensionNotFound:
            names = []
        held = ", ".join(names) or f"no alternative name (subject {cert.subject.rfc4514_string()})"
        return (f"the broker's certificate is not for {host!r} ({said}): it names {held}; "
                "connect by a name it holds (STREAMFS_BOOTSTRAP_SERVERS, and the broker's "
                "advertised listeners, which clients connect to next), or give the broker a "
                f"certificate that names {host!r}")
    now = datetime.datetime.now(datetime.timezone.utc)
    if cert.not_valid_after_utc < now or cert.not_valid_before_utc > now:
        when = "%Y-%m-%d %H:%M"
        return (f"the broker's certificate is valid from "
                f"{cert.not_valid_before_utc.strftime(when)} to "
                f"{cert.not_valid_after_utc.strftime(when)} UTC, not now ({said}): the broker "
                "needs a new one (or this machine's clock is wrong)")
    return None


#: the TLS alerts by which a broker refuses a client's certificate, or its having none where
#: its listener requires one (``ssl.client.auth=required``): Kafka sends "bad certificate"
#: (42) for both; librdkafka 2.16 reports it as a transport error ("Receive failed:
#: error:0A000412:SSL routines::ssl/tls alert bad certificate: SSL alert number 42")
CERTIFICATE_REFUSED = re.compile(r"alert (bad certificate|unknown ca|certificate required|"
                                 r"certificate unknown|certificate expired|certificate revoked|"
                                 r"unsupported certificate)")


def client_certificate_refused(kafka_config: dict[str, Any], err: KafkaError) -> AccessDenied:
    """:class:`AccessDenied` for a broker's TLS alert that refused the client's certificate
    (:data:`CERTIFICATE_REFUSED`): set one where there is none, else which to check.

    >>> from confluent_kafka import KafkaError
    >>> err = KafkaError(KafkaError._TRANSPORT, "b:9093/bootstrap: Receive failed: "
    ...                  "ssl/tls alert bad certificate: SSL alert number 42")
    >>> print(client_certificate_refused({"bootstrap.servers": "b:9093"}, err))
    Kafka at b:9093 requires a client certificate (mutual TLS), and this client has none (Receive failed: ssl/tls alert bad certificate: SSL alert number 42): set STREAMFS_SSL_CERTIFICATE_LOCATION and STREAMFS_SSL_KEY_LOCATION to a certificate signed by a CA the broker trusts and its private key
    """
    address = kafka_config.get("bootstrap.servers", "?")
    detail = _short(err.str())
    path = kafka_config.get("ssl.certificate.location")
    if not path:
        return AccessDenied(
            f"Kafka at {address} requires a client certificate (mutual TLS), and this client "
            f"has none ({detail}): set STREAMFS_SSL_CERTIFICATE_LOCATION and "
            "STREAMFS_SSL_KEY_LOCATION to a certificate signed by a CA the broker trusts and "
            "its private key")
    return AccessDenied(
        f"Kafka at {address} refused the client certificate {certificate_subject(path)!r} "
        f"({detail}): it must be signed by a CA that the broker's listener trusts (its "
        "ssl.truststore) and be within its validity dates: check "
        "STREAMFS_SSL_CERTIFICATE_LOCATION")


#: what librdkafka logs when a listener hangs up on a client's first request, as one that
#: expects TLS does on a client that does not speak it (librdkafka 2.16: "Disconnected:
#: connection closed by peer: receive 0 after POLLIN (after 1ms in state APIVERSION_QUERY)")
FIRST_REQUEST_DROPPED = re.compile(r"Disconnected.*in state APIVERSION_QUERY")
#: what it logs when a listener answers the handshake (ApiVersions, which a SASL listener
#: serves before authentication) and hangs up on the next request, as one that expects SASL
#: does on a client that does not log in ("Disconnected: SSL connection closed by peer
#: (after 6ms in state UP)")
DROPPED_AFTER_HANDSHAKE = re.compile(r"Disconnected: .*closed by peer.*in state UP\)")


class LogLines(logging.Handler):
    """Keeps the text of the log lines of one client (:attr:`logger`, given as its
    ``logger``), whatever their level, the last ``keep`` of them (None: all);
    ``parent`` handles those its level lets through."""

    def __init__(self, parent: logging.Logger, keep: int | None = None) -> None:
        from collections import deque

        super().__init__()
        self.seen: deque[str] = deque(maxlen=keep)
        self.parent = parent
        # not registered with logging (one per client, dropped with it); its records read as
        # the parent's own
        self.logger = logging.Logger(parent.name, logging.DEBUG)
        self.logger.propagate = False
        self.logger.addHandler(self)

    def emit(self, record: logging.LogRecord) -> None:
        self.seen.append(record.getMessage())
        if self.parent.isEnabledFor(record.levelno):
            self.parent.handle(record)


#: how librdkafka names the partition whose transaction its ACLs refused ('ADDPARTS ...:
#: Failed to add partition "t.selected-features" [1] to transaction: Broker: Topic
#: authorization failed')
REFUSED_PARTITION = re.compile(r'Failed to add partition "([^"]+)" \[\d+\] to transaction: '
                               r'Broker: Topic authorization failed')


def refused_topic(lines: Iterable[str]) -> str | None:
    """The topic that the last of ``lines`` (a transactional producer's log lines) naming one
    says the broker's ACLs refused, if any.

    >>> refused_topic(['ADDPARTS [rdkafka#producer-5] [thrd:main]: TxnCoordinator/1: Failed '
    ...                'to add partition "b.selected-features" [5] to transaction: Broker: '
    ...                'Topic authorization failed'])
    'b.selected-features'
    """
    for line in reversed(list(lines)):
        if found := REFUSED_PARTITION.search(line):
            return found.group(1)
    return None


def _short(detail: str) -> str:
    """librdkafka's message without its ``host:port/bootstrap: `` prefix and trailing counts.

    >>> _short("127.0.0.1:1/bootstrap: Connect to ipv4#127.0.0.1:1 failed: Connection refused "
    ...        "(after 0ms in state CONNECT)")
    'Connect to ipv4#127.0.0.1:1 failed: Connection refused'
    """
    head, sep, rest = detail.partition(": ")
    text = rest if sep and "/" in head else detail
    return text.split(" (after ")[0]


def group_members(kafka_config: dict[str, Any], group: str, timeout: float = 10.0) -> int | None:
    """How many consumers the group has now (``None`` if the broker would not say)."""
    from confluent_kafka.admin import AdminClient

    # the client must outlive its future: one dropped at once never completes it (the call
    # then waited its whole timeout and answered None)
    admin = make_client(AdminClient, kafka_config)
    try:
        futures = admin.describe_consumer_groups([group], request_timeout=timeout)
        return len(futures[group].result(timeout).members)
    except (KafkaException, Exception):  # noqa: BLE001 - older brokers, ACLs: just unknown
        return None
