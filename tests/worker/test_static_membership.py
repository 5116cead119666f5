"""Static group membership (``STREAMFS_INSTANCE_ID``, KIP-345) against a real broker.

A worker SIGKILLed and restarted under its instance id takes its former self's place at once:
ready long before the dead member's session timeout, with the same partitions, and its peer is
left alone (no rebalance). A second live worker under the same id fences the first, which
aborts its transaction and stops with one line naming the setting. Every version of every
stream reaches a ``read_committed`` reader once, equal to an uninterrupted run."""

from __future__ import annotations

import threading
import time
import uuid

import pytest
from prometheus_client import REGISTRY

from streamfs.client import SelectionReader
from streamfs.topics import load_catalogue

from .inprocess import one_at_a_time, saola_stream, take_instance_id, without_timestamp
from .test_worker_acceptance import _strip, publish, reference_versions, wait_finals
from .workload import interleave, mixed_workload

pytestmark = pytest.mark.kafka

#: far beyond anything these tests wait for: a test that waited for a session to time out
#: would fail its deadlines
SESSION_TIMEOUT = 120.0


def _fenced_line(instance_id: str, app_id: str) -> str:
    return (f"Error: another worker uses the same STREAMFS_INSTANCE_ID {instance_id!r} in group "
            f"{app_id!r}: the broker fenced this one, which stops without committing more. "
            "Give each worker its own STREAMFS_INSTANCE_ID")


def _results_after_some(kafka_config, prefix, n: int) -> None:
    """Block until the worker has published ``n`` results (it owns its partitions and is at
    work)."""
    with SelectionReader(kafka_config, load_catalogue(prefix)["selected"].name) as reader:
        for count, _ in enumerate(reader.updates(timeout=180), 1):
            if count >= n:
                return


def _exactly_once(kafka_config, prefix, refs: dict[str, list[dict]], log_of) -> None:
    """Every stream's versions, read to the end of the results topic by a read_committed
    reader, are those of an uninterrupted run: each once, in order, equal."""
    got = wait_finals(kafka_config, prefix, list(refs), timeout=300)
    with SelectionReader(kafka_config, load_catalogue(prefix)["selected"].name) as reader:
        everything = list(reader.updates(to_end=True))
    for stream, ref in refs.items():
        assert [_strip(r) for r in got[stream]] == ref, (stream, log_of())
        versions = [r["version"] for r in everything if r["stream"] == stream]
        assert versions == list(range(1, len(ref) + 1)), (stream, versions, log_of())


def test_a_worker_restarted_under_its_instance_id_is_ready_at_once_and_its_peer_left_alone(
        kafka_config, topic_prefix, start_worker):
    cases = mixed_workload(16, prefix="st")
    refs = {c.stream: reference_versions(c) for c in cases}
    messages = interleave(cases)
    half = len(messages) // 2
    # a dead transaction's offsets hold the restart's read of the committed offsets until the
    # broker aborts it: this timeout plus up to 10 s (its abort check's interval)
    env = {"STREAMFS_SESSION_TIMEOUT": str(SESSION_TIMEOUT), "STREAMFS_TRANSACTION_TIMEOUT": "5"}
    first = start_worker(STREAMFS_INSTANCE_ID="w0", **env)
    first.wait_ready()
    peer = start_worker(STREAMFS_INSTANCE_ID="w1", **env)
    every = {f"{load_catalogue(topic_prefix)[kind].name}:{p}"
             for kind in ("features", "instances")
             for p in range(load_catalogue(topic_prefix)[kind].partitions)}
    deadline = time.monotonic() + 120
    while True:  # the group has settled once the two share every input partition
        mine, theirs = first.health(), peer.health()
        if (mine and theirs and mine["status"] == theirs["status"] == "ok"
                and mine["assigned"] and theirs["assigned"]
                and set(mine["assigned"]) | set(theirs["assigned"]) == every
                and not set(mine["assigned"]) & set(theirs["assigned"])):
            break
        assert time.monotonic() < deadline, (first.log_tail(20), peer.log_tail(20))
        time.sleep(0.1)  # polling the workers' health endpoints
    publish(kafka_config, topic_prefix, cases, messages[:half])
    _results_after_some(kafka_config, topic_prefix, 10)
    first.kill()  # mid-stream: its partitions keep their input waiting
    publish(kafka_config, topic_prefix, cases, messages[half:])

    restarted_at = time.time()
    second = start_worker(STREAMFS_INSTANCE_ID="w0", **env)
    ready = second.wait_ready(timeout=SESSION_TIMEOUT / 2)
    took = ready["ready_at"] - restarted_at
    # without an instance id the group would first wait out the dead member's session
    # (README: ready 27-28 s after a restart with the default 30 s); measured here: 3 s
    assert took < SESSION_TIMEOUT / 4, (took, second.log_tail(20))
    assert sorted(ready["assigned"]) == sorted(mine["assigned"])  # its partitions, back
    _exactly_once(kafka_config, topic_prefix, refs, lambda: second.log_tail(30))
    # the peer kept its partitions throughout: no assignment since the group settled
    now = peer.health()
    assert (now["status"], now["ready_at"], now["assigned"]) == (
        "ok", theirs["ready_at"], theirs["assigned"]), peer.log_tail(20)
    # a static member's stop says its partitions wait for it: it looked like a handover
    import signal

    peer.proc.send_signal(signal.SIGTERM)
    assert peer.proc.wait(60) == 0, peer.log_tail(20)
    assert (f"worker stopped; as a static member (instance w1) it keeps its partitions until "
            f"it comes back or the session timeout ({SESSION_TIMEOUT:g} s) ends"
            in peer.log_path.read_text()), peer.log_tail(20)


def test_a_second_worker_under_the_same_instance_id_fences_the_first(kafka_config, topic_prefix,
                                                                      start_worker):
    cases = mixed_workload(16, prefix="fe")
    refs = {c.stream: reference_versions(c) for c in cases}
    messages = interleave(cases)
    half = len(messages) // 2
    first = start_worker(STREAMFS_INSTANCE_ID="w0")
    publish(kafka_config, topic_prefix, cases, messages[:half])
    _results_after_some(kafka_config, topic_prefix, 10)
    publish(kafka_config, topic_prefix, cases, messages[half:])  # work while it is fenced
    second = start_worker(STREAMFS_INSTANCE_ID="w0")
    try:
        code = first.proc.wait(60)
    except Exception:  # noqa: BLE001 - TimeoutExpired: say where it hangs
        pytest.fail(f"the fenced worker did not stop:\n{first.log_tail(30)}")
    log = first.log_path.read_text()
    assert code == 1 and "Traceback" not in log, log
    assert log.strip().splitlines()[-1] == _fenced_line("w0", first.env["STREAMFS_APP_ID"]), log
    _exactly_once(kafka_config, topic_prefix, refs, lambda: second.log_tail(30))
    assert second.proc.poll() is None, second.log_tail(30)  # the second carries on


def test_a_worker_fenced_before_its_offsets_are_sent_aborts_that_transaction_and_stops(
        kafka_config, topic_prefix, tmp_path, monkeypatch):
    """Deterministically on the producer's side: another member takes the worker's instance id
    between a batch's results and its offsets. The broker refuses the offsets
    (FENCED_INSTANCE_ID); the worker aborts the transaction and stops, without rewinding and
    trying again. Run in this process to choose that moment."""
    from streamfs.producers import StreamPublisher
    from streamfs.settings import Settings
    from streamfs.worker import app, startup

    msgs = saola_stream("fenced", seed=5, p=40)
    batches: list[int] = []  # the messages of each batch whose transaction was completed
    rivals: list = []
    real_complete = app.Worker._complete

    def complete(self, batch):
        batches.append(batch.messages)
        if len(batches) == 2:  # the second batch: its results are produced, not its offsets
            rivals.append(take_instance_id(kafka_config, self))
        return real_complete(self, batch)

    monkeypatch.setattr(app.Worker, "_complete", complete)
    settings = Settings(bootstrap_servers=kafka_config["bootstrap.servers"],
                        topic_prefix=topic_prefix, app_id=f"app-{uuid.uuid4().hex[:8]}",
                        data_dir=str(tmp_path / "data"), session_timeout=10.0,
                        instance_id="w0", batch_ms=5_000.0, batch_messages=2)
    startup.warm_up()  # compiled kernels: no step is slow enough to cut a batch
    startup.prepare_topics(settings)
    topics = load_catalogue(topic_prefix)
    with StreamPublisher(kafka_config, topics["features"].name) as pub:
        pub.send_all(msgs)  # all on the topic before the worker starts
    rewinds = REGISTRY.get_sample_value("streamfs_rewinds_total") or 0.0
    outcome: list[BaseException] = []
    worker = app.Worker(settings)

    def run() -> None:
        try:
            worker.run()
        except BaseException as exc:  # noqa: BLE001 - checked below
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        thread.join(120)
        assert not thread.is_alive(), "the fenced worker did not stop within 120 s"
    finally:
        worker.running = False
        for rival in rivals:
            rival.close()
    assert len(batches) == 2 and len(rivals) == 1 and len(outcome) == 1, (batches, outcome)
    assert isinstance(outcome[0], app.InstanceFenced), outcome
    assert _fenced_line("w0", settings.app_id) == f"Error: {outcome[0]}"
    assert (REGISTRY.get_sample_value("streamfs_rewinds_total") or 0.0) == rewinds
    with SelectionReader(kafka_config, topics["selected"].name) as reader:
        visible = list(reader.updates(to_end=True))
    # the first batch's results, and nothing of the fenced one
    committed, _ = one_at_a_time(msgs[:batches[0]])
    assert batches[0] < len(msgs) and visible
    assert without_timestamp(visible) == without_timestamp(committed)
