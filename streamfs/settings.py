"""Configuration from ``STREAMFS_*`` environment variables (CLI flags override them)."""

from __future__ import annotations

import math
import os
import re
import warnings
from dataclasses import dataclass, field, fields

from streamfs.algorithms._suggest import closest

# Kafka security settings passed to every client (confluent-kafka names).
_SECURITY_ENV = {
    "STREAMFS_SECURITY_PROTOCOL": "security.protocol",
    "STREAMFS_SASL_MECHANISM": "sasl.mechanism",
    "STREAMFS_SASL_USERNAME": "sasl.username",
    "STREAMFS_SASL_PASSWORD": "sasl.password",
    "STREAMFS_SSL_CA_LOCATION": "ssl.ca.location",
    "STREAMFS_SSL_CERTIFICATE_LOCATION": "ssl.certificate.location",
    "STREAMFS_SSL_KEY_LOCATION": "ssl.key.location",
    "STREAMFS_SSL_KEY_PASSWORD": "ssl.key.password",
    # OAUTHBEARER: a token from an OAuth 2.0 / OIDC token endpoint (client credentials)
    "STREAMFS_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL": "sasl.oauthbearer.token.endpoint.url",
    "STREAMFS_SASL_OAUTHBEARER_CLIENT_ID": "sasl.oauthbearer.client.id",
    "STREAMFS_SASL_OAUTHBEARER_CLIENT_SECRET": "sasl.oauthbearer.client.secret",
    "STREAMFS_SASL_OAUTHBEARER_SCOPE": "sasl.oauthbearer.scope",
    "STREAMFS_SASL_OAUTHBEARER_EXTENSIONS": "sasl.oauthbearer.extensions",
    # the CAs of the token endpoint's HTTPS certificate (default: the system's bundle)
    "STREAMFS_HTTPS_CA_LOCATION": "https.ca.location",
}
#: the client configuration keys whose values are secrets (masked in a Settings' repr)
SECRET_KEYS = frozenset({"sasl.password", "ssl.key.password", "sasl.oauthbearer.client.secret"})
#: the OAUTHBEARER settings a client needs to ask for a token (client credentials)
_OAUTHBEARER_NEEDS = ("STREAMFS_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL",
                      "STREAMFS_SASL_OAUTHBEARER_CLIENT_ID",
                      "STREAMFS_SASL_OAUTHBEARER_CLIENT_SECRET")
#: the client configuration keys the settings give, and their variables
KAFKA_SETTINGS = {key: env for env, key in _SECURITY_ENV.items()}
#: the project's other ``STREAMFS_*`` variables (not settings of :class:`Settings`): the
#: kernels, the topic catalogue, the datasets, and those of ops/, the tests and compose
OTHER_VARIABLES = frozenset({
    "STREAMFS_KERNEL_THREADS", "STREAMFS_TOPICS", "STREAMFS_DATASETS", "STREAMFS_RUN",
    "STREAMFS_CACHE", "STREAMFS_SLOW_TESTS", "STREAMFS_COMPOSE", "STREAMFS_COMPOSE_PROJECT",
    "STREAMFS_BUILD_CA_BUNDLE", "STREAMFS_RAWREADER_CONFIG",
})

#: the values librdkafka documents for its enumerated security settings (CONFIGURATION.md);
#: it takes security.protocol in any case, sasl.mechanism only as written here
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("GSSAPI", "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")


def _security_problem(env: str, key: str, value: str) -> str | None:
    """What is wrong with security setting ``env`` (client configuration ``key``), if
    something is that can be told before a client is made: a value librdkafka does not know,
    a file that is not there. librdkafka would refuse the client with a traceback."""
    if key == "security.protocol" and value.upper() not in SECURITY_PROTOCOLS:
        return f"{env} must be one of {', '.join(SECURITY_PROTOCOLS)}, got {value!r}"
    if key == "sasl.mechanism" and value not in SASL_MECHANISMS:
        return f"{env} must be one of {', '.join(SASL_MECHANISMS)}, got {value!r}"
    if key == "ssl.ca.location" and value != "probe" and not os.path.exists(value):
        # a file or a directory of CA certificates; 'probe': the system's usual places
        return f"{env} must name a file or directory of CA certificates (or be 'probe'), " \
               f"but {value!r} does not exist"
    if key.endswith(".location") and key != "ssl.ca.location" and not os.path.isfile(value):
        return f"{env} must name a file, but {value!r} " + (
            "is a directory" if os.path.isdir(value) else "does not exist")
    if key.endswith(".location") and value != "probe" and not os.access(value, os.R_OK):
        # librdkafka says only "x509 certificate routines::BIO lib"
        return f"{env} names {value!r}, which this user may not read (permission denied)"
    if key in _SECRETS and ("\n" in value or "\r" in value):
        # a Kubernetes Secret or a file read whole keeps its newline: Kafka compared it as
        # it was ("Invalid username or password"); the value itself is not shown
        return f"{env} holds a line break (a Secret's or a file's trailing newline?): remove it"
    url = r"https?://[^/\s]+(/\S*)?"  # whole: a Secret's trailing newline, a space
    if key == "sasl.oauthbearer.token.endpoint.url" and not re.fullmatch(url, value):
        return f"{env} must be the http:// or https:// URL of a token endpoint, got {value!r}"
    return None


#: the security settings that are secrets or names a Kafka compares as given
_SECRETS = frozenset({"sasl.username", "sasl.password", "ssl.key.password",
                      "sasl.oauthbearer.client.id", "sasl.oauthbearer.client.secret"})


def _credentials_problem(security: dict[str, str]) -> str | None:
    """A user name or password missing for a mechanism that logs in with both (PLAIN, SCRAM):
    librdkafka said "sasl.username and sasl.password must be set", not which.

    >>> _credentials_problem({"sasl.mechanism": "PLAIN", "sasl.username": "app"})
    'STREAMFS_SASL_MECHANISM=PLAIN logs in with a user name and a password: set STREAMFS_SASL_PASSWORD'
    """
    if security.get("sasl.mechanism") not in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
        return None
    missing = [env for env in ("STREAMFS_SASL_USERNAME", "STREAMFS_SASL_PASSWORD")
               if _SECURITY_ENV[env] not in security]
    if missing:
        return (f"STREAMFS_SASL_MECHANISM={security['sasl.mechanism']} logs in with a user "
                f"name and a password: set {' and '.join(missing)}")
    return None


def _protocol_problem(security: dict[str, str]) -> str | None:
    """SASL or TLS settings that the security protocol does not use: librdkafka ignores them,
    so credentials set without ``STREAMFS_SECURITY_PROTOCOL`` connected without them (to a
    broker that took that, silently unauthenticated)."""
    protocol = security.get("security.protocol", "").upper()
    words = protocol or "PLAINTEXT, the default"
    for kind, uses, needs in (
            ("sasl.", protocol.startswith("SASL_"), "SASL_SSL (or SASL_PLAINTEXT)"),
            ("ssl.", protocol in ("SSL", "SASL_SSL"), "SSL or SASL_SSL")):
        unused = [env for env, key in _SECURITY_ENV.items()
                  if key in security and key.startswith(kind)]
        if unused and not uses:
            return (f"{', '.join(unused)} {'is' if len(unused) == 1 else 'are'} set, but "
                    f"STREAMFS_SECURITY_PROTOCOL ({words}) does not use "
                    f"{'SASL' if kind == 'sasl.' else 'TLS'}: set it to {needs}, or unset "
                    f"{'it' if len(unused) == 1 else 'them'}")
    return None


def _oauthbearer_problem(security: dict[str, str]) -> str | None:
    """What is wrong with the OAUTHBEARER settings together: the mechanism takes its token
    from a token endpoint (librdkafka's ``sasl.oauthbearer.method=oidc``, the only way a
    client configured by settings alone can get one: without it librdkafka waits for a token
    that never comes, and the broker seemed unreachable); the endpoint's settings mean
    nothing with another mechanism."""
    given = [env for env, key in _SECURITY_ENV.items() if key in security and (
        key.startswith("sasl.oauthbearer.") or key == "https.ca.location")]
    mechanism = security.get("sasl.mechanism")
    if mechanism == "OAUTHBEARER":
        missing = [env for env in _OAUTHBEARER_NEEDS if _SECURITY_ENV[env] not in security]
        if missing:
            return (f"STREAMFS_SASL_MECHANISM=OAUTHBEARER takes its token from an OAuth "
                    f"token endpoint (client credentials): set {', '.join(missing)}")
    elif given:
        return (f"{', '.join(given)} {'is' if len(given) == 1 else 'are'} for "
                f"STREAMFS_SASL_MECHANISM=OAUTHBEARER, but the mechanism is "
                f"{mechanism or 'not set'}")
    return None


def _client_certificate_problem(security: dict[str, str]) -> str | None:
    """What is wrong with the client certificate settings together (mutual TLS): librdkafka
    sends a certificate only with its key (it does not read a key from the certificate's
    file), refuses a key without a certificate, and reads an encrypted key only with its
    password, which it would report as "PEM lib"."""
    cert, key = security.get("ssl.certificate.location"), security.get("ssl.key.location")
    if cert and not key:
        return ("STREAMFS_SSL_CERTIFICATE_LOCATION is set without STREAMFS_SSL_KEY_LOCATION: "
                "the Kafka client sends its certificate only with the private key's file")
    if key and not cert:
        return ("STREAMFS_SSL_KEY_LOCATION is set without STREAMFS_SSL_CERTIFICATE_LOCATION: "
                "a private key is of use only with its client certificate")
    if key and "ssl.key.password" not in security and is_encrypted_key(key):
        return (f"STREAMFS_SSL_KEY_LOCATION names an encrypted private key ({key!r}): set its "
                "password in STREAMFS_SSL_KEY_PASSWORD")
    return None


def system_ca_file() -> str | None:
    """The system's file of trusted CA certificates, as Python's OpenSSL finds it (also
    ``SSL_CERT_FILE``), if there is one. The token client of the librdkafka that the
    confluent-kafka wheels carry looks for a Red Hat path (/etc/pki/tls/certs/ca-bundle.crt)
    unless told, and with ``https.ca.location`` a directory or ``probe`` still does: on Debian
    or Ubuntu no HTTPS token endpoint could be verified ("error adding trust anchors from
    file")."""
    import ssl

    return ssl.get_default_verify_paths().cafile


def is_encrypted_key(path: str) -> bool:
    """Whether the PEM file at ``path`` holds an encrypted private key (PKCS#8's ``ENCRYPTED
    PRIVATE KEY``, or OpenSSL's traditional ``Proc-Type: 4,ENCRYPTED`` header); False for
    anything it cannot read, which librdkafka then names."""
    try:
        with open(path, "rb") as f:
            text = f.read(1 << 20)
    except OSError:
        return False
    return b"-----BEGIN ENCRYPTED PRIVATE KEY-----" in text or b"Proc-Type: 4,ENCRYPTED" in text


@dataclass(frozen=True)
class _Range:
    """The values a numeric setting may take, and how its error message states them."""

    words: str
    low: float
    high: float = math.inf
    low_open: bool = False  # the lowest value itself is refused

    def holds(self, value: float) -> bool:
        above = value > self.low if self.low_open else value >= self.low
        return above and value <= self.high  # NaN: False


#: the largest STREAMFS_MAX_MESSAGE_BYTES: the worker's clients take 64 KiB more than it, and
#: librdkafka takes at most 1,000,000,000 bytes (message.max.bytes, max.partition.fetch.bytes)
MAX_MESSAGE_BYTES_LIMIT = 1_000_000_000 - 65536

#: the longest a batch gathers input (STREAMFS_BATCH_MS)
MAX_BATCH_MS = 10_000

#: the most messages one fetch may ask for: confluent-kafka's Consumer.consume() raises
#: ValueError above it, which stopped the worker (exit 70) at its first input
MAX_BATCH_MESSAGES = 1_000_000

#: the largest replication factor librdkafka sends (its limit on brokers): the admin client
#: raised ValueError above it, a traceback from `topics create` and the worker (exit 70)
MAX_REPLICATION_FACTOR = 10_000

#: the range of every numeric setting; the timeouts' bounds are Kafka's default broker limits
_RANGES = {
    "web_port": _Range("a whole number from 0 to 65535", 0, 65535),
    "max_message_bytes": _Range(f"a whole number from 1 to {MAX_MESSAGE_BYTES_LIMIT} "
                                "(librdkafka's limit less 64 KiB)", 1, MAX_MESSAGE_BYTES_LIMIT),
    "session_timeout": _Range("a number of seconds from 6 to 1800 (the broker's "
                              "group.min/max.session.timeout.ms defaults)", 6, 1800),
    # longer batches are no use, and a worker waiting minutes for a first message stalls its
    # liveness and its stop (from 2**31 ms on the consumer's wait returns at once: a busy loop)
    "batch_ms": _Range(f"a number of milliseconds more than 0, at most {MAX_BATCH_MS}", 0,
                       MAX_BATCH_MS, low_open=True),
    "batch_bytes": _Range("a whole number more than 0", 1),
    "batch_messages": _Range(f"a whole number from 1 to {MAX_BATCH_MESSAGES} (the most "
                             "confluent-kafka fetches in one call)", 1, MAX_BATCH_MESSAGES),
    "transaction_timeout": _Range("a number of seconds from 1 to 900 (at most the broker's "
                                  "transaction.max.timeout.ms default)", 1, 900),
    "max_buffer_bytes": _Range("a whole number more than 0", 1),
    "closed_retention": _Range("a number of seconds, 0 or more", 0),
    "open_idle_timeout": _Range("a number of seconds, 0 (never) or more", 0),
    "replication_factor": _Range(f"a whole number from 0 to {MAX_REPLICATION_FACTOR}", 0,
                                 MAX_REPLICATION_FACTOR),
}


#: what a STREAMFS_INSTANCE_ID may be: Kafka's rule for a group.instance.id, which its Java
#: client enforces (JoinGroupRequest.validateGroupInstanceId) and librdkafka does not check
INSTANCE_ID_WORDS = ("1 to 249 characters, each an ASCII letter or digit, '.', '_' or '-', and "
                     "not '.' or '..' (Kafka's rule for a group.instance.id)")


def instance_id_problem(value: str) -> str | None:
    """What is wrong with ``value`` as a static member's ``group.instance.id``
    (:data:`INSTANCE_ID_WORDS`), if anything: ``"must be ..., got ..."``."""
    if re.fullmatch(r"[A-Za-z0-9._-]{1,249}", value) and value not in (".", ".."):
        return None
    return f"must be {INSTANCE_ID_WORDS}, got {value!r}"


#: the longest topic name streamfs makes is ``<prefix>selected-features``; Kafka takes 249
TOPIC_PREFIX_WORDS = ("at most 232 characters, each an ASCII letter or digit, '.', '_' or '-' "
                      "(Kafka's rule for topic names)")


def topic_prefix_problem(value: str) -> str | None:
    """What is wrong with ``value`` as the prefix of every topic name
    (:data:`TOPIC_PREFIX_WORDS`), if anything: ``"must be ..., got ..."``. Found here, it is
    a setting's mistake (exit 2); found by the broker, it was a Kafka error or a topic that
    does not exist, to create with a command that fails the same way."""
    if re.fullmatch(r"[A-Za-z0-9._-]{0,232}", value):
        return None
    return f"must be {TOPIC_PREFIX_WORDS}, got {value!r}"


#: the worker's changelogs are ``<app id>-instances-streams-changelog``; Kafka takes 249
APP_ID_WORDS = ("1 to 221 characters, each an ASCII letter or digit, '.', '_' or '-' (it "
                "begins the changelog topics' names: Kafka's rule for topic names)")


def app_id_problem(value: str) -> str | None:
    """What is wrong with ``value`` as the worker's app id (:data:`APP_ID_WORDS`), if
    anything: ``"must be ..., got ..."``. An empty one aborted the process in librdkafka
    (an empty group.id); another the broker refused as a changelog's name, exit 1."""
    if re.fullmatch(r"[A-Za-z0-9._-]{1,221}", value):
        return None
    return f"must be {APP_ID_WORDS}, got {value!r}"


def _parse(name: str, kind: str, value: str) -> int | float | str:
    """The value of setting ``name``'s environment variable as the setting's type (its range
    is checked by :meth:`Settings.check`)."""
    if kind not in ("int", "float"):
        return value
    try:
        return int(value) if kind == "int" else float(value)
    except ValueError:
        raise ValueError(f"STREAMFS_{name.upper()} must be {_RANGES[name].words}, got "
                         f"{value!r}") from None


#: what each setting is, for `streamfs worker --help` (which adds each one's variable and
#: default from :class:`Settings`; a test checks that every field has words here), and the
#: words for a default that its value alone does not say
DESCRIPTIONS = {
    "bootstrap_servers": "Kafka bootstrap servers (host:port, comma-separated).",
    "app_id": "Consumer group, and the prefix of the worker's changelog topics.",
    "topic_prefix": "Prefix of every topic name.",
    "web_port": "Port of /health and /metrics; 0: any free port (logged).",
    "web_host": "Address of /health and /metrics; 0.0.0.0: every interface.",
    "max_message_bytes": "Largest message the worker reads or writes.",
    "log_level": "debug, info, warning, error or critical.",
    "session_timeout": "Seconds before a silent worker's partitions move to another.",
    "instance_id": "Static group membership: this worker's own id in its group, kept across "
                   "restarts, so that a restarted worker gets its partitions back at once.",
    "batch_ms": "Most time a batch (one transaction) gathers input.",
    "batch_bytes": "Most input bytes in a batch.",
    "batch_messages": "Most input messages in a batch.",
    "transaction_timeout": "Seconds before the open transaction of a silent worker is aborted.",
    "max_buffer_bytes": "The most an open may set max_buffer_bytes to.",
    "closed_retention": "How long a closed stream's header is kept, to refuse late input.",
    "open_idle_timeout": "Drop an open stream without input this long (a dead letter says "
                         "so); 0: never.",
    "data_dir": "Local copies of the partitions' state (restarts read less).",
    "replication_factor": "Replication factor of every topic created; 0: min(3, brokers).",
    "result_format": "Output messages: msgpack or json.",
    "security": "Kafka security of every client (librdkafka's {key}).",
}
DEFAULT_WORDS = {
    "app_id": "the topic prefix without the '.', '-' and '_' at its ends",
    "data_dir": "<temporary directory>/streamfs-state",
    "instance_id": "none (dynamic membership)",
    "open_idle_timeout": "0 (never)",
    "security": "not set",
    # the security settings whose default is not "not set"
    "STREAMFS_HTTPS_CA_LOCATION": "with OAUTHBEARER, the system's CA file",
}


def _service_link(name: str, value: str) -> bool:
    """Whether ``name`` is one of the variables Kubernetes gives every pod for a service (a
    service named ``streamfs`` makes ``STREAMFS_PORT=tcp://…``, ``STREAMFS_SERVICE_HOST``):
    not a setting mistyped.

    >>> _service_link("STREAMFS_PORT", "tcp://10.96.0.12:6066")
    True
    >>> _service_link("STREAMFS_PORT", "1")
    False
    """
    return bool(re.fullmatch(r"(?:TCP|UDP|SCTP)://.*", value.strip(), re.IGNORECASE)
                or re.search(r"_SERVICE_(?:HOST|PORT)|_PORT_\d+_(?:TCP|UDP|SCTP)", name))


@dataclass
class Settings:
    bootstrap_servers: str = "127.0.0.1:9092"
    app_id: str = "streamfs"
    topic_prefix: str = "streamfs."
    web_port: int = 6066
    web_host: str = "127.0.0.1"
    max_message_bytes: int = 8 * 1024 * 1024
    log_level: str = "info"
    # How long the group waits for a silent (killed) worker before moving its partitions.
    session_timeout: float = 30.0
    # The worker's group.instance.id (static membership, KIP-345); None: a dynamic member.
    # A worker restarted with its id gets its partitions back at once, without the group
    # waiting for its dead former self's session timeout first.
    instance_id: str | None = None
    # A batch (one transaction) takes what is already fetched, up to these bounds. The time
    # bound is the one that limits latency; each transaction costs three broker round trips,
    # so the byte bound is set where they stop mattering (bench backlog, 320 MB of dense
    # SAOLA input on 2 cores: 0.80-0.91 s with 8 MiB, 0.74-0.84 s with 16, 0.57-0.62 s with
    # 32; worker RSS the same)
    batch_ms: float = 100.0
    batch_bytes: int = 32 * 1024 * 1024
    batch_messages: int = 10000
    # An open transaction of a worker that stopped answering is aborted after this long; a new
    # owner of its partitions waits for that before restoring their state.
    transaction_timeout: float = 20.0
    # The most an open may ask for in 'max_buffer_bytes' (the memory guard of K-OFSD, GDM and
    # the OFS family, whose own default is 1 GiB): producers cannot lift it on a shared worker.
    max_buffer_bytes: int = 1 << 30
    # A closed stream keeps a small header (to refuse late or re-used messages) this long.
    closed_retention: float = 7 * 24 * 3600.0
    # An open stream without input this long (its producer gone) is dropped, its state deleted
    # and a dead letter written; 0, the default: never, as a slow producer's stream must not
    # lose its state unasked. Opt in where producers may die mid-stream.
    open_idle_timeout: float = 0.0
    # Local copies of the partitions' state (restarts then read only the changelog's tail);
    # "": <temporary directory>/streamfs-state, as Kafka Streams' state.dir.
    data_dir: str = ""
    # Replication factor of every topic; 0: min(3, number of brokers).
    replication_factor: int = 0
    security: dict[str, str] = field(default_factory=dict)

    def __repr__(self) -> str:
        """The dataclass's, with the secrets of ``security`` masked: a settings object logged
        or printed while debugging must not show a password."""
        shown = {key: "***" if key in SECRET_KEYS else value
                 for key, value in self.security.items()}
        parts = [f"{f.name}={(shown if f.name == 'security' else getattr(self, f.name))!r}"
                 for f in fields(self)]
        return f"{type(self).__name__}({', '.join(parts)})"

    @classmethod
    def variables(cls) -> frozenset[str]:
        """Every ``STREAMFS_*`` variable the project reads."""
        return frozenset({f"STREAMFS_{f.name.upper()}" for f in fields(cls)
                          if f.name != "security"} | set(_SECURITY_ENV) | OTHER_VARIABLES)

    @classmethod
    def mistyped(cls, env: dict[str, str]) -> list[str]:
        """One line for each ``STREAMFS_*`` variable of ``env`` the project does not read but
        whose name is close to one it does (a typo leaves the setting at its default, and the
        mistake shows only later, as an unreachable broker or a wrong topic); other unknown
        names are left alone (a deployment may use the prefix for its own).

        >>> Settings.mistyped({"STREAMFS_BOOTSTRAP_SERVER": "k:9092", "STREAMFS_MY_OWN": "1",
        ...                    "STREAMFS_APP_ID": "a"})
        ['STREAMFS_BOOTSTRAP_SERVER is not a streamfs setting, and is ignored: did you mean STREAMFS_BOOTSTRAP_SERVERS?']
        """
        known = cls.variables()
        suffixes = {name[len("STREAMFS_"):]: name for name in known}
        found = []
        for name in sorted(env):
            if not name.upper().startswith("STREAMFS_") or name in known \
                    or _service_link(name, env[name]):
                continue
            # the suffixes alone: the shared prefix would make every pair look alike
            suffix = name[len("STREAMFS_"):].upper()
            # a word shortened (SSL_CERT_LOCATION), or the name in lower case, before a
            # likeness of letters that took CERT for CA
            short = [s for s in suffixes if len(s.split("_")) == len(suffix.split("_"))
                     and all(k.startswith(w) for w, k in zip(suffix.split("_"), s.split("_")))]
            close = short[0] if len(short) == 1 else closest(suffix, list(suffixes), cutoff=0.8)
            if close is None:  # a word left out: STREAMFS_BOOTSTRAP, STREAMFS_PREFIX
                words = [s for s in suffixes
                         if s.startswith(suffix + "_") or s.endswith("_" + suffix)]
                close = words[0] if len(words) == 1 else None
            if close is not None:
                found.append(f"{name} is not a streamfs setting, and is ignored: did you mean "
                             f"{suffixes[close]}?")
        return found

    @classmethod
    def from_env(cls, **overrides) -> "Settings":
        env = os.environ
        for problem in cls.mistyped(dict(env)):
            warnings.warn(problem, UserWarning, stacklevel=2)
        kwargs: dict = {}
        for f in fields(cls):
            if f.name == "security":
                continue
            value = env.get(f"STREAMFS_{f.name.upper()}")
            # a flag given wins over its variable, even one that would not parse (a
            # Kubernetes service link's STREAMFS_WEB_PORT=tcp://...: --web-port did not help)
            if value is not None and overrides.get(f.name) is None:
                kwargs[f.name] = _parse(f.name, f.type, value)
        kwargs["security"] = {k: env[e] for e, k in _SECURITY_ENV.items() if env.get(e)}
        kwargs.update({k: v for k, v in overrides.items() if v is not None})
        if "app_id" not in kwargs:
            # one deployment per topic prefix: its own consumer group and changelogs unless
            # told otherwise ("streamfs" for the default prefix "streamfs.")
            prefix = kwargs.get("topic_prefix", cls.topic_prefix).strip(".-_")
            kwargs["app_id"] = prefix or cls.app_id
        settings = cls(**kwargs)
        settings.check()
        return settings

    def state_dir(self) -> str:
        """Where the worker keeps its local copies: ``data_dir``, or the temporary
        directory's ``streamfs-state``."""
        import tempfile

        return self.data_dir or os.path.join(tempfile.gettempdir(), "streamfs-state")

    def bootstrap_problem(self) -> str | None:
        """What is wrong with ``bootstrap_servers`` before any connection (None: nothing
        known). An empty variable (a template left unfilled) said "cannot reach Kafka at
        (…)", exit 69 after the connection timeout: a supervisor restarted it in a loop.
        Checked by the commands that use Kafka, not by offline ones."""
        if not self.bootstrap_servers.replace(",", " ").strip():
            return (f"STREAMFS_BOOTSTRAP_SERVERS (--bootstrap-servers) must name at least one "
                    f"broker as host:port, got {self.bootstrap_servers!r}")
        for entry in self.bootstrap_servers.split(","):
            # librdkafka takes a port out of range modulo 65536 (99999: port 34463), and a
            # bad one as a host name: exit 69 "is the broker running?", restarted forever
            address = re.sub(r"^[A-Za-z_]+://", "", entry.strip())
            port = address.rsplit(":", 1)[1] if ":" in address else "9092"
            if (not (port.isdigit() and 1 <= int(port) <= 65535) or not address.strip(":")
                    or ";" in entry):
                sep = " (brokers are separated by ',', not ';')" if ";" in entry else ""
                return (f"STREAMFS_BOOTSTRAP_SERVERS (--bootstrap-servers) must list brokers as "
                        f"host:port (port 1 to 65535), separated by ',': {entry.strip()!r} is "
                        f"not one{sep}")
        return None

    def check(self) -> None:
        """``ValueError`` naming a setting the worker could not run with (before it starts:
        a supervisor would otherwise restart it in a loop)."""
        for name, allowed in _RANGES.items():
            if not allowed.holds(getattr(self, name)):
                raise ValueError(f"STREAMFS_{name.upper()} must be {allowed.words}, got "
                                 f"{getattr(self, name)!r}")
        # a producer whose call hung is replaced once its transaction timed out (+ 5 s), a
        # wait on the loop: past the loop's poll interval the consumer leaves its group and
        # /live says the loop stalled (as health.loop_stall_seconds)
        stall = max(300.0, self.session_timeout)
        if self.transaction_timeout + 5 >= stall:
            raise ValueError(f"STREAMFS_TRANSACTION_TIMEOUT must be under {stall - 5:g} seconds "
                             f"(the worker's poll interval, max(300, STREAMFS_SESSION_TIMEOUT), "
                             f"less 5), got {self.transaction_timeout:g}")
        if self.instance_id is not None and (problem := instance_id_problem(self.instance_id)):
            raise ValueError(f"STREAMFS_INSTANCE_ID {problem}")
        if problem := topic_prefix_problem(self.topic_prefix):
            raise ValueError(f"STREAMFS_TOPIC_PREFIX {problem}")
        for env, key in _SECURITY_ENV.items():
            if key in self.security and (problem := _security_problem(env, key,
                                                                     self.security[key])):
                raise ValueError(problem)
        for problem in (_protocol_problem(self.security),
                        _client_certificate_problem(self.security),
                        _oauthbearer_problem(self.security),
                        _credentials_problem(self.security)):
            if problem:
                raise ValueError(problem)

    # Output messages (results, dead letters): "msgpack" (compact, bit-exact arrays) or "json"
    # (readable by any Kafka consumer).
    result_format: str = "msgpack"

    def kafka_config(self) -> dict:
        """confluent-kafka client configuration (bootstrap plus security). librdkafka's log
        lines go to the ``streamfs.kafka`` logger, not straight to stderr."""
        from streamfs.broker import with_kafka_logger

        oidc: dict[str, str] = {}
        if self.security.get("sasl.mechanism") == "OAUTHBEARER":
            oidc["sasl.oauthbearer.method"] = "oidc"
            if bundle := system_ca_file():
                oidc["https.ca.location"] = bundle
        return with_kafka_logger({"bootstrap.servers": self.bootstrap_servers, **oidc,
                                  **self.security})
