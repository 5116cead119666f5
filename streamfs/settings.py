"""Configuration from ``STREAMFS_*`` environment variables (CLI flags override them)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields

# Kafka security settings passed to every client (confluent-kafka names).
_SECURITY_ENV = {
    "STREAMFS_SECURITY_PROTOCOL": "security.protocol",
    "STREAMFS_SASL_MECHANISM": "sasl.mechanism",
    "STREAMFS_SASL_USERNAME": "sasl.username",
    "STREAMFS_SASL_PASSWORD": "sasl.password",
    "STREAMFS_SSL_CA_LOCATION": "ssl.ca.location",
    "STREAMFS_SSL_CERTIFICATE_LOCATION": "ssl.certificate.location",
    "STREAMFS_SSL_KEY_LOCATION": "ssl.key.location",
}


def _parse(name: str, kind: str, value: str) -> int | float | str:
    """An environment variable's value as its setting's type; numbers must not be negative."""
    if kind not in ("int", "float"):
        return value
    try:
        number = int(value) if kind == "int" else float(value)
    except ValueError:
        number = None
    if number is None or not number >= 0:  # also NaN
        what = "a whole number" if kind == "int" else "a number"
        raise ValueError(f"{name} must be {what}, 0 or more; got {value!r}")
    return number


#: bounds of the worker's timeouts: Kafka's default broker limits
_SECONDS = {
    "session_timeout": (6, 1800, "the broker's group.min/max.session.timeout.ms defaults"),
    "transaction_timeout": (1, 900, "at most the broker's transaction.max.timeout.ms default"),
}


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
    # Local copies of the partitions' state (restarts then read only the changelog's tail);
    # "": <temporary directory>/streamfs-state, as Kafka Streams' state.dir.
    data_dir: str = ""
    # Replication factor of every topic; 0: min(3, number of brokers).
    replication_factor: int = 0
    security: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_env(cls, **overrides) -> "Settings":
        env = os.environ
        kwargs: dict = {}
        for f in fields(cls):
            if f.name == "security":
                continue
            name = f"STREAMFS_{f.name.upper()}"
            value = env.get(name)
            if value is not None:
                kwargs[f.name] = _parse(name, f.type, value)
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

    def check(self) -> None:
        """``ValueError`` naming a setting the worker could not run with (before it starts:
        a supervisor would otherwise restart it in a loop)."""
        for name in ("batch_ms", "batch_bytes", "batch_messages", "max_message_bytes",
                     "max_buffer_bytes"):
            if not 0 < getattr(self, name) < float("inf"):
                raise ValueError(f"STREAMFS_{name.upper()} must be more than 0, got "
                                 f"{getattr(self, name)!r}")
        for name, (low, high, why) in _SECONDS.items():
            if not low <= getattr(self, name) <= high:
                raise ValueError(f"STREAMFS_{name.upper()} must be {low:g} to {high:g} seconds "
                                 f"({why}), got {getattr(self, name)!r}")

    # Output messages (results, dead letters): "msgpack" (compact, bit-exact arrays) or "json"
    # (readable by any Kafka consumer).
    result_format: str = "msgpack"

    def kafka_config(self) -> dict:
        """confluent-kafka client configuration (bootstrap plus security). librdkafka's log
        lines go to the ``streamfs.kafka`` logger, not straight to stderr."""
        from streamfs.broker import with_kafka_logger

        return with_kafka_logger({"bootstrap.servers": self.bootstrap_servers, **self.security})
