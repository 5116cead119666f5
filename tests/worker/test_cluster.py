"""A cluster of three brokers (ops/kafka/broker.sh with KAFKA_NODES=3): what the README says
replication gives. streamfs creates its topics with three replicas, two of them in sync for a
write to count; a worker goes on through the crash of any one broker and through a rolling
restart of them all, waits out the crash of two (no write can count then), and a
read_committed reader still sees every version of every stream once, in order, equal to an
uninterrupted run."""

from __future__ import annotations

import os
import subprocess
import threading
import time
import uuid
from concurrent.futures import Future
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource

from streamfs.client import SelectionReader
from streamfs.topics import changelog_specs, create_topics, load_catalogue
from streamfs.worker.process import WorkerProcess
from tests.external import unavailable

from .test_worker_acceptance import _strip, publish, reference_versions, wait_finals
from .workload import interleave, mixed_workload

pytestmark = pytest.mark.kafka

SCRIPT = Path(__file__).resolve().parents[2] / "ops" / "kafka" / "broker.sh"


class Cluster:
    """Three local nodes, each a broker and a KRaft controller; :meth:`kill` crashes one."""

    def __init__(self, run_dir: Path, bootstrap: str) -> None:
        self.run_dir, self.bootstrap = run_dir, bootstrap
        self.config = {"bootstrap.servers": bootstrap}

    def _script(self, *args: str) -> subprocess.CompletedProcess:
        env = {**os.environ, "STREAMFS_RUN": str(self.run_dir)}
        return subprocess.run(["bash", str(SCRIPT), *args], env=env, capture_output=True,
                              text=True, timeout=300)

    def kill(self, node: int) -> None:
        proc = self._script("kill-node", str(node))
        assert proc.returncode == 0, proc.stderr[-3000:]

    def stop_node(self, node: int) -> None:
        """A controlled shutdown (SIGTERM): the node hands its leaderships over first."""
        proc = self._script("stop-node", str(node))
        assert proc.returncode == 0, proc.stderr[-3000:]

    def start(self, node: int) -> None:
        proc = self._script("start-node", str(node))
        assert proc.returncode == 0, proc.stderr[-3000:]

    def stop(self) -> None:
        self._script("stop")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("kafka-cluster")
    env = {**os.environ, "STREAMFS_RUN": str(run_dir), "KAFKA_NODES": "3", "KAFKA_HEAP": "512m"}
    proc = subprocess.run(["bash", str(SCRIPT), "start"], env=env, capture_output=True,
                          text=True, timeout=300)
    if proc.returncode != 0:
        unavailable("no Kafka cluster: ops/kafka/broker.sh start (KAFKA_NODES=3) failed:\n"
                    + proc.stderr[-3000:])
    cluster = Cluster(run_dir, proc.stdout.strip().splitlines()[-1])
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def cluster_prefix(cluster) -> str:
    prefix = f"c{uuid.uuid4().hex[:10]}."
    create_topics(cluster.config, load_catalogue(prefix))
    return prefix


@pytest.fixture
def cluster_worker(cluster, cluster_prefix, tmp_path):
    """``cluster_worker()`` starts a worker on the cluster (one app id per test)."""
    app_id = f"app-{uuid.uuid4().hex[:8]}"
    workers: list[WorkerProcess] = []

    def make(**env: str) -> WorkerProcess:
        w = WorkerProcess(cluster.bootstrap, cluster_prefix, app_id,
                          tmp_path / f"worker{len(workers)}.log", tmp_path / "data",
                          STREAMFS_SESSION_TIMEOUT="10", **env)
        workers.append(w.start())
        return w

    yield make
    for w in workers:
        w.stop()


def _replication(admin: AdminClient, topics: list[str]) -> dict[str, tuple[set, str]]:
    """Each topic's replica counts over its partitions and its min.insync.replicas."""
    meta = admin.list_topics(timeout=30).topics
    configs = admin.describe_configs([ConfigResource("topic", t) for t in topics])
    out = {}
    for resource, future in configs.items():
        t = resource.name
        out[t] = ({len(p.replicas) for p in meta[t].partitions.values()},
                  future.result(30)["min.insync.replicas"].value)
    return out


def test_topics_and_changelogs_get_three_replicas_two_in_sync(cluster, cluster_prefix,
                                                               cluster_worker):
    worker = cluster_worker()
    worker.wait_ready()
    app_id = worker.env["STREAMFS_APP_ID"]
    topics = [s.name for s in load_catalogue(cluster_prefix).values()]
    topics += [s.name for s in changelog_specs(app_id, 1, 0, 0).values()]
    got = _replication(AdminClient(cluster.config), topics)
    assert got == {t: ({3}, "2") for t in topics}, got


def _group_coordinator(config: dict, group: str) -> int:
    admin = AdminClient(config)
    description = admin.describe_consumer_groups([group])[group].result(30)
    return description.coordinator.id


def _workload(prefix: str) -> tuple[list, dict, list]:
    """Ten streams of every algorithm: the cases, each stream's versions in an uninterrupted
    run, and their messages interleaved."""
    cases = mixed_workload(10, prefix=prefix)
    return cases, {c.stream: reference_versions(c) for c in cases}, interleave(cases)


def _at_work(cluster: Cluster, prefix: str, cluster_worker, cases: list,
             first: list) -> WorkerProcess:
    """A worker started, the ``first`` messages published, and five results read."""
    worker = cluster_worker()
    publish(cluster.config, prefix, cases, first)
    selected = load_catalogue(prefix)["selected"].name
    with SelectionReader(cluster.config, selected) as reader:
        for n, _ in enumerate(reader.updates(timeout=180), 1):
            if n >= 5:
                break
    return worker


def test_a_broker_crash_mid_stream_loses_and_repeats_nothing(cluster, cluster_prefix,
                                                             cluster_worker):
    """The node that coordinates the worker's group (and leads some of its partitions) is
    SIGKILLed with results committed and input still to come; the rest of the input is
    published to the two nodes left."""
    cases, refs, messages = _workload("k")
    half = len(messages) // 2
    worker = _at_work(cluster, cluster_prefix, cluster_worker, cases, messages[:half])
    crashed = _group_coordinator(cluster.config, worker.env["STREAMFS_APP_ID"])
    cluster.kill(crashed)
    try:
        publish(cluster.config, cluster_prefix, cases, messages[half:])
        got = wait_finals(cluster.config, cluster_prefix, list(refs), timeout=400)
    finally:
        cluster.start(crashed)
    for stream, ref in refs.items():
        assert [_strip(r) for r in got[stream]] == ref, (stream, worker.log_tail(30))
    assert worker.health() is not None, worker.log_tail(30)  # still serving


def test_a_rolling_restart_of_every_node_loses_and_repeats_nothing(cluster, cluster_prefix,
                                                                   cluster_worker):
    """Each node stopped and started again in turn, as an upgrade of the cluster does, with
    input published while each one is down."""
    cases, refs, messages = _workload("u")
    quarter = len(messages) // 4
    worker = _at_work(cluster, cluster_prefix, cluster_worker, cases, messages[:quarter])
    for node in (1, 2, 3):
        cluster.stop_node(node)
        try:
            chunk = messages[node * quarter:None if node == 3 else (node + 1) * quarter]
            publish(cluster.config, cluster_prefix, cases, chunk)
        finally:
            cluster.start(node)
    got = wait_finals(cluster.config, cluster_prefix, list(refs), timeout=400)
    for stream, ref in refs.items():
        assert [_strip(r) for r in got[stream]] == ref, (stream, worker.log_tail(30))


def _ends(config: dict, topics: list[str]) -> dict[tuple[str, int], tuple[int, int]]:
    """Each partition of ``topics``: its leader's node id and its end offset."""
    meta = AdminClient(config).list_topics(timeout=30).topics
    reader = Consumer({**config, "group.id": f"ends-{uuid.uuid4().hex[:8]}"})
    try:
        return {(t, p): (meta[t].partitions[p].leader,
                         reader.get_watermark_offsets(TopicPartition(t, p), timeout=30)[1])
                for t in topics for p in meta[t].partitions}
    finally:
        reader.close()


def test_two_brokers_down_halt_the_worker_until_they_return(cluster, cluster_prefix,
                                                           cluster_worker):
    """Two of the three nodes SIGKILLed while the worker has input to process: no controller
    quorum, and no write can have its two in-sync replicas, so nothing can be committed. The
    worker, which can still fetch from the node left, fails its transaction, waits for the
    broker (``/health``: ``broker-unreachable``) instead of exiting, and once the two are back
    finishes every stream. A reader that reads through the outage sees every version once,
    exact."""
    cases, refs, messages = _workload("m")
    half = len(messages) // 2
    worker = _at_work(cluster, cluster_prefix, cluster_worker, cases, messages[:half])
    finals: Future = Future()

    def read() -> None:
        try:
            finals.set_result(wait_finals(cluster.config, cluster_prefix, list(refs), 600))
        except BaseException as exc:  # noqa: BLE001 - handed to the test's thread
            finals.set_exception(exc)

    # a daemon: a test that fails before the finals does not wait for the reader's timeout
    threading.Thread(target=read, daemon=True).start()
    catalogue = load_catalogue(cluster_prefix)
    inputs = [catalogue["features"].name, catalogue["instances"].name]
    before = _ends(cluster.config, inputs)
    crashed: list[int] = []
    worker.pause()  # the rest of the input stays unprocessed until two nodes are down
    try:
        publish(cluster.config, cluster_prefix, cases, messages[half:])
        after = _ends(cluster.config, inputs)
        # the node left leads a partition with input waiting: the worker fetches from it
        survivor = next(leader for tp, (leader, end) in after.items() if end > before[tp][1])
        for node in (1, 2, 3):
            if node != survivor:
                cluster.kill(node)
                crashed.append(node)
        worker.resume()
        deadline = time.monotonic() + 180
        while (worker.health() or {}).get("status") != "broker-unreachable":
            assert worker.proc.poll() is None, worker.log_tail(30)
            assert time.monotonic() < deadline, worker.log_tail(30)
            time.sleep(0.5)  # polling another process's /health
    finally:
        worker.resume()
        for node in crashed:
            cluster.start(node)
    got = finals.result()
    for stream, ref in refs.items():
        assert [_strip(r) for r in got[stream]] == ref, (stream, worker.log_tail(30))
    assert worker.health() is not None, worker.log_tail(30)  # still serving
