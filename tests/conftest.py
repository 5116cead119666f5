"""Shared fixtures. The Kafka broker comes, in this order, from STREAMFS_BOOTSTRAP_SERVERS,
testcontainers (if a Docker engine answers), or the project's local JVM broker (ops/kafka).
Without a broker the Kafka tests are skipped when run by hand and fail when CI=true."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _no_broker(reason: str):
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"no Kafka broker in CI: {reason}", pytrace=False)
    pytest.skip(f"no Kafka broker: {reason}")


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
    try:
        yield proc.stdout.strip().splitlines()[-1]
    finally:
        subprocess.run(["bash", str(script), "stop"], env=env_vars, capture_output=True)


@pytest.fixture
def kafka_config(kafka_bootstrap) -> dict:
    return {"bootstrap.servers": kafka_bootstrap}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def topic_prefix(kafka_config) -> str:
    """A fresh topic namespace per test, with the catalogue's topics created."""
    from streamfs.topics import create_topics, load_catalogue

    prefix = f"t{uuid.uuid4().hex[:10]}."
    create_topics(kafka_config, load_catalogue(prefix))
    return prefix


class WorkerProcess:
    """``streamfs worker`` as a subprocess with its own app id (consumer group)."""

    def __init__(self, bootstrap: str, prefix: str, app_id: str, log_path: Path, data_dir: Path):
        self.env = {
            **os.environ,
            "STREAMFS_BOOTSTRAP_SERVERS": bootstrap,
            "STREAMFS_TOPIC_PREFIX": prefix,
            "STREAMFS_APP_ID": app_id,
            "STREAMFS_WEB_PORT": str(free_port()),
            "STREAMFS_DATA_DIR": str(data_dir),
            "PYTHONUNBUFFERED": "1",
            "STREAMFS_SESSION_TIMEOUT": "10",
        }
        self.log_path = log_path
        self.proc: subprocess.Popen | None = None

    def start(self) -> "WorkerProcess":
        self.env["STREAMFS_WEB_PORT"] = str(free_port())
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen([sys.executable, "-m", "streamfs.cli", "worker"],
                                     env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                     cwd=REPO)
        return self

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(30)

    def log_tail(self, n: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except FileNotFoundError:
            return ""


@pytest.fixture
def start_worker(kafka_bootstrap, topic_prefix, tmp_path):
    """Factory: ``start_worker()`` runs a worker (same app id for every call in one test)."""
    app_id = f"app-{uuid.uuid4().hex[:8]}"
    workers: list[WorkerProcess] = []

    def start() -> WorkerProcess:
        w = WorkerProcess(kafka_bootstrap, topic_prefix, app_id,
                          tmp_path / f"worker{len(workers)}.log", tmp_path / "faust")
        workers.append(w.start())
        return w

    yield start
    for w in workers:
        w.stop()
