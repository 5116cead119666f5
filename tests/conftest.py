"""Shared fixtures. The Kafka broker comes, in this order, from STREAMFS_BOOTSTRAP_SERVERS,
testcontainers (if a Docker engine answers), or the project's local JVM broker (ops/kafka).
Without a broker the Kafka tests are skipped when run by hand and fail when CI=true."""

from __future__ import annotations

import contextlib
import os
import subprocess
import uuid
from pathlib import Path
from typing import Any, Callable

import pytest

from streamfs.worker.process import WorkerProcess
from tests.external import unavailable

REPO = Path(__file__).resolve().parent.parent
#: the data directory of the broker this session started with ops/kafka/broker.sh, if it did
_BROKER_RUN: list[Path] = []


def _no_broker(reason: str):
    unavailable(f"no Kafka broker: {reason}")


def _docker_engine_answers() -> bool:
    try:
        import docker

        docker.from_env(timeout=3).ping()
        return True
    except Exception:  # noqa: BLE001 - any failure means "no engine"
        return False


@pytest.fixture(scope="session")
def kafka_bootstrap(tmp_path_factory):
    env = os.environ.get("STREAMFS_BOOTSTRAP_SERVERS")
    if env:
        yield env
        return
    if _docker_engine_answers():
        from testcontainers.kafka import KafkaContainer

        with KafkaContainer() as kafka:
            yield kafka.get_bootstrap_server()
        return
    run_dir = tmp_path_factory.mktemp("kafka")
    env_vars = {**os.environ, "STREAMFS_RUN": str(run_dir)}
    script = REPO / "ops" / "kafka" / "broker.sh"
    proc = subprocess.run(["bash", str(script), "start"], env=env_vars, capture_output=True, text=True)
    if proc.returncode != 0:
        _no_broker(f"ops/kafka/broker.sh start failed:\n{proc.stderr[-3000:]}")
    _BROKER_RUN.append(run_dir)
    try:
        yield proc.stdout.strip().splitlines()[-1]
    finally:
        subprocess.run(["bash", str(script), "stop"], env=env_vars, capture_output=True)


class SecuredKafka:
    """A broker secured as production clusters are: TLS, SASL credentials (SASL_SSL; PLAIN,
    SCRAM-SHA-512, or OAUTHBEARER with unsigned tokens: tests/token_endpoint.py) and ACLs
    enforced. :data:`ADMIN` is a super user; every other user of :data:`USERS` may do
    only what :meth:`grant` allows. ``ca`` is the certificate of the CA that signed the
    broker's."""

    ADMIN = "admin"
    USERS = {ADMIN: "admin-secret", "app": "app-secret"}

    def __init__(self, bootstrap: str, ca: Path) -> None:
        self.bootstrap, self.ca = bootstrap, ca

    def config(self, user: str) -> dict:
        """confluent-kafka settings of a client logged in as ``user``."""
        return {"bootstrap.servers": self.bootstrap, "security.protocol": "SASL_SSL",
                "ssl.ca.location": str(self.ca), "sasl.mechanism": "PLAIN",
                "sasl.username": user, "sasl.password": self.USERS[user]}

    def env(self, user: str, prefix: str, password: str | None = None, **more: str) -> dict:
        """The environment of a `streamfs` subprocess logged in as ``user`` on ``prefix``
        (``more``: other variables, or ones to replace)."""
        return {**os.environ, "STREAMFS_BOOTSTRAP_SERVERS": self.bootstrap,
                "STREAMFS_TOPIC_PREFIX": prefix, "STREAMFS_SECURITY_PROTOCOL": "SASL_SSL",
                "STREAMFS_SSL_CA_LOCATION": str(self.ca),
                "STREAMFS_SASL_MECHANISM": "PLAIN", "STREAMFS_SASL_USERNAME": user,
                "STREAMFS_SASL_PASSWORD": self.USERS[user] if password is None else password,
                **more}

    def grant(self, user: str, *acls: tuple[str, str, str]) -> None:
        """Allow ``user`` each ``(resource type, name, operation)`` (confluent-kafka's
        ``ResourceType`` and ``AclOperation`` names, e.g. ``("TOPIC", "t1.*", "READ")``; a
        name that ends in ``*`` is a prefix, any other one literal), and return once the
        broker's authorizer lists them all."""
        from confluent_kafka.admin import AdminClient

        admin = AdminClient(self.config(self.ADMIN))
        bindings = self._bindings(user, acls)
        for future in admin.create_acls(bindings, request_timeout=30).values():
            future.result(30)
        self._wait(admin, user, lambda listed: set(bindings) <= listed, acls)

    def revoke(self, user: str, *acls: tuple[str, str, str]) -> None:
        """Take back ACLs that :meth:`grant` gave, and return once the authorizer no longer
        lists them."""
        from confluent_kafka.admin import AclBindingFilter, AdminClient

        admin = AdminClient(self.config(self.ADMIN))
        bindings = self._bindings(user, acls)
        filters = [AclBindingFilter(b.restype, b.name, b.resource_pattern_type, b.principal,
                                    b.host, b.operation, b.permission_type) for b in bindings]
        for future in admin.delete_acls(filters, request_timeout=30).values():
            future.result(30)
        self._wait(admin, user, lambda listed: not set(bindings) & listed, acls)

    @staticmethod
    def _bindings(user: str, acls: tuple[tuple[str, str, str], ...]) -> list:
        from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType,
                                           ResourcePatternType, ResourceType)

        return [AclBinding(ResourceType[kind], name.removesuffix("*"),
                           ResourcePatternType.PREFIXED if name.endswith("*") else
                           ResourcePatternType.LITERAL, f"User:{user}", "*",
                           AclOperation[op], AclPermissionType.ALLOW) for kind, name, op in acls]

    @staticmethod
    def _wait(admin: Any, user: str, done: Callable[[set], bool], acls: Any) -> None:
        """Poll the authorizer (it answers with the ACLs it enforces) until ``done`` holds
        for the set of ``user``'s ACLs it lists."""
        import time

        from confluent_kafka.admin import (AclBindingFilter, AclOperation, AclPermissionType,
                                           ResourcePatternType, ResourceType)

        query = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, f"User:{user}",
                                 None, AclOperation.ANY, AclPermissionType.ANY)
        deadline = time.monotonic() + 30
        while not done(set(admin.describe_acls(query, request_timeout=30).result())):
            assert time.monotonic() < deadline, f"ACLs not in force after 30 s: {acls}"
            time.sleep(0.1)  # polling the broker's answer, not waiting for our own work


@contextlib.contextmanager
def _own_broker(tmp_path_factory, name: str, what: str, **settings: str):
    """A local broker of its own (ops/kafka/broker.sh with ``settings``), in a run directory
    named ``name``: gives its run directory and address, and stops it on leaving."""
    run_dir = tmp_path_factory.mktemp(name)
    env_vars = {**os.environ, "STREAMFS_RUN": str(run_dir), **settings}
    script = REPO / "ops" / "kafka" / "broker.sh"
    proc = subprocess.run(["bash", str(script), "start"], env=env_vars, capture_output=True,
                          text=True)
    if proc.returncode != 0:
        _no_broker(f"ops/kafka/broker.sh start ({what}) failed:\n{proc.stderr[-3000:]}")
    try:
        yield run_dir, proc.stdout.strip().splitlines()[-1]
    finally:
        subprocess.run(["bash", str(script), "stop"], env=env_vars, capture_output=True)


@pytest.fixture(scope="session")
def secured_kafka(tmp_path_factory):
    """A second local broker (ops/kafka/broker.sh with KAFKA_SASL_USERS, KAFKA_TLS and
    KAFKA_OAUTHBEARER), started for the tests that use it and stopped after the session."""
    users = " ".join(f"{u}:{p}" for u, p in SecuredKafka.USERS.items())
    with _own_broker(tmp_path_factory, "kafka-sasl", "secured", KAFKA_SASL_USERS=users,
                     KAFKA_TLS="1", KAFKA_OAUTHBEARER="1") as (run_dir, address):
        yield SecuredKafka(address, run_dir / "tls" / "ca.pem")


class MutualTlsKafka(SecuredKafka):
    """A broker whose listener requires client certificates (mutual TLS, protocol SSL, no
    SASL) with ACLs enforced: a client is the user its certificate's CN names. :data:`ADMIN`
    is a super user; ``tls`` holds the CA's certificate and each user's ``<user>.pem`` and
    ``<user>.key``."""

    USERS = {SecuredKafka.ADMIN: "", "app": ""}  # no passwords: a certificate each

    def __init__(self, bootstrap: str, tls: Path) -> None:
        super().__init__(bootstrap, tls / "ca.pem")
        self.tls = tls

    def config(self, user: str) -> dict:
        return {"bootstrap.servers": self.bootstrap, "security.protocol": "SSL",
                "ssl.ca.location": str(self.ca),
                "ssl.certificate.location": str(self.tls / f"{user}.pem"),
                "ssl.key.location": str(self.tls / f"{user}.key")}

    def env(self, user: str | None, prefix: str, **more: str) -> dict:
        """The environment of a `streamfs` subprocess with ``user``'s certificate (None:
        none) on ``prefix``."""
        certificate = {} if user is None else {
            "STREAMFS_SSL_CERTIFICATE_LOCATION": str(self.tls / f"{user}.pem"),
            "STREAMFS_SSL_KEY_LOCATION": str(self.tls / f"{user}.key")}
        return {**os.environ, "STREAMFS_BOOTSTRAP_SERVERS": self.bootstrap,
                "STREAMFS_TOPIC_PREFIX": prefix, "STREAMFS_SECURITY_PROTOCOL": "SSL",
                "STREAMFS_SSL_CA_LOCATION": str(self.ca), **certificate, **more}


@pytest.fixture(scope="session")
def mutual_tls_kafka(tmp_path_factory):
    """A third local broker (ops/kafka/broker.sh with KAFKA_TLS=mutual and KAFKA_TLS_USERS),
    started for the tests that use it and stopped after the session."""
    with _own_broker(tmp_path_factory, "kafka-mtls", "mutual TLS", KAFKA_TLS="mutual",
                     KAFKA_TLS_USERS=" ".join(MutualTlsKafka.USERS)) as (run_dir, address):
        yield MutualTlsKafka(address, run_dir / "tls")


@pytest.fixture
def broker_run_dir(kafka_bootstrap) -> Path | None:
    """The run directory (pid, bootstrap) of the broker this session started with
    ops/kafka/broker.sh; None for a broker given by address or a container."""
    return _BROKER_RUN[0] if _BROKER_RUN else None


@pytest.fixture
def restart_broker(kafka_bootstrap):
    """``restart_broker()`` stops the session's broker and starts it again on the same data and
    port. Only for a broker this session started (not one given by address or a container)."""
    if not _BROKER_RUN:
        pytest.skip("the broker was not started by this test session; cannot restart it")
    script = REPO / "ops" / "kafka" / "broker.sh"

    def restart() -> None:
        env_vars = {**os.environ, "STREAMFS_RUN": str(_BROKER_RUN[0])}
        proc = subprocess.run(["bash", str(script), "restart"], env=env_vars,
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert proc.stdout.strip().splitlines()[-1] == kafka_bootstrap

    return restart


@pytest.fixture
def broker_outage(kafka_bootstrap):
    """``with broker_outage():`` stops the session's broker for the block, then starts it again
    on the same data and port. Only for a broker this session started."""
    if not _BROKER_RUN:
        pytest.skip("the broker was not started by this test session; cannot stop it")
    script = REPO / "ops" / "kafka" / "broker.sh"
    env_vars = {**os.environ, "STREAMFS_RUN": str(_BROKER_RUN[0])}

    @contextlib.contextmanager
    def outage():
        proc = subprocess.run(["bash", str(script), "stop"], env=env_vars, capture_output=True,
                              text=True)
        assert proc.returncode == 0, proc.stderr[-3000:]
        try:
            yield
        finally:
            proc = subprocess.run(["bash", str(script), "restart"], env=env_vars,
                                  capture_output=True, text=True)
            assert proc.returncode == 0, proc.stderr[-3000:]
            assert proc.stdout.strip().splitlines()[-1] == kafka_bootstrap

    return outage


@pytest.fixture
def kafka_config(kafka_bootstrap) -> dict:
    return {"bootstrap.servers": kafka_bootstrap}


@pytest.fixture
def topic_prefix(kafka_config) -> str:
    """A fresh topic namespace per test, with the catalogue's topics created."""
    from streamfs.topics import create_topics, load_catalogue

    prefix = f"t{uuid.uuid4().hex[:10]}."
    create_topics(kafka_config, load_catalogue(prefix))
    return prefix


@pytest.fixture
def make_worker(kafka_bootstrap, tmp_path):
    """Factory: ``make_worker(prefix, app_id, **env)`` starts a worker (a 10 s session timeout
    unless ``env`` says otherwise); all are stopped after."""
    workers: list[WorkerProcess] = []

    def make(prefix: str, app_id: str, **env: str) -> WorkerProcess:
        w = WorkerProcess(kafka_bootstrap, prefix, app_id, tmp_path / f"worker{len(workers)}.log",
                          tmp_path / "data", **{"STREAMFS_SESSION_TIMEOUT": "10", **env})
        workers.append(w.start())
        return w

    yield make
    for w in workers:
        w.stop()


@pytest.fixture
def start_worker(make_worker, topic_prefix):
    """Factory: ``start_worker(**env)`` runs a worker (same app id for every call in one test)."""
    app_id = f"app-{uuid.uuid4().hex[:8]}"
    return lambda **env: make_worker(topic_prefix, app_id, **env)
