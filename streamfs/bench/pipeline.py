"""End-to-end throughput: producer -> broker -> worker -> selected-features, against the
in-process algorithm and a plain confluent-kafka consumer reading the same messages.

Each scenario generates seeded synthetic data, cuts it into the messages a producer sends, and
measures, on one broker:

* ``in_process``: the worker's own code path (``StreamProcessor`` over an in-memory store) on the
  encoded messages, and the bare algorithm (``partial_fit`` per block);
* ``raw_consume``: a plain confluent-kafka consumer reading the scenario's messages from the
  input topic (the ceiling for any consumer of those bytes);
* ``pipeline``: time from the first produced message until a ``read_committed`` subscriber,
  assigned before, holds the final result, with a worker already running and assigned;
  ``publish`` is the part until the producer has every message acknowledged;
* ``raw_pipeline``: the same publish, to a fresh topic, with a plain consumer (in its own
  process, as the worker) in the worker's place: time until it holds every message. It waits for
  the same producer, so ``pipeline / raw pipeline`` is the streaming run's like-for-like ratio;
* ``backlog``: every message already on (fresh) topics, a worker started cold (new group, empty
  changelog): time from its assignment (``ready_at`` of its ``/health``) until a
  ``read_committed`` reader, subscribed before, sees the final result.

The ratios pipeline/raw_consume, backlog/raw_consume and pipeline/in_process are the numbers to
push up. A streaming pipeline cannot beat its producer: the publish time bounds it (and the raw
pipeline shows by how much); and where the
steps themselves take longer than reading the bytes (K-OFSD, OFS over 1,000 kept features), the
in-process time bounds everything, which ``backlog / max(raw consume, in-process)`` shows.
"""

from __future__ import annotations

import os
import resource
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import scipy.sparse as sp

from streamfs.algorithms import registry
from streamfs.bench.cpu import CpuMeter, local_broker_pid
from streamfs.codec import decode, encode
from streamfs.producers import feature_stream_messages, instance_stream_messages
from streamfs.producers.blocks import block_budget


@dataclass
class Scenario:
    name: str
    algorithm: str
    params: dict
    make: Callable[[int], tuple[Any, Any]]
    unit: str  # "features" or "instances"


def dense_features(seed: int, n: int = 2000, p: int = 20000, informative: int = 40):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    X = rng.normal(size=(n, p)).astype(np.float64)
    cols = rng.choice(p, informative, replace=False)
    X[:, cols] += 0.8 * y[:, None]
    red = rng.choice(p, informative, replace=False)
    X[:, red] = X[:, cols] + 0.2 * rng.normal(size=(n, informative))
    return X, y


def sparse_text_features(seed: int, n: int = 10000, p: int = 1_360_000, nnz: int = 4_500_000):
    """Binary bag-of-words-like columns with Zipf-ish document frequencies (news20-shaped)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    weights = 1.0 / np.arange(1, p + 1) ** 0.9
    per_col = rng.multinomial(nnz, weights / weights.sum())
    per_col = np.minimum(per_col, n)
    rng.shuffle(per_col)
    indptr = np.concatenate([[0], np.cumsum(per_col)])
    rows = np.empty(indptr[-1], dtype=np.int32)
    pos_rows, neg_rows = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    informative = set(rng.choice(p, 200, replace=False).tolist())
    for j in range(p):
        k = per_col[j]
        if k == 0:
            continue
        if j in informative:  # words that prefer one class
            pool = pos_rows if j % 2 else neg_rows
            chosen = rng.choice(pool, min(k, len(pool)), replace=False)
        else:
            chosen = rng.choice(n, k, replace=False)
        rows[indptr[j]:indptr[j] + len(chosen)] = np.sort(chosen)
    X = sp.csc_matrix((np.ones(len(rows), dtype=np.float64), rows, indptr), shape=(n, p))
    return X, y


def imbalanced_microarray(seed: int, n: int = 180, p: int = 12500):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.17).astype(np.int64)
    X = rng.normal(size=(n, p))
    X[:, :20] += 2.0 * y[:, None]
    return X, y


def dense_instances(seed: int, n: int = 100000, d: int = 123):
    rng = np.random.default_rng(seed)
    X = (rng.random((n, d)) < 0.11).astype(np.float64)
    w = rng.normal(size=d) * (rng.random(d) < 0.2)
    y = np.where(X @ w + 0.1 * rng.normal(size=n) > np.median(X @ w), 1, -1)
    return X, y


def sparse_instances(seed: int, n: int = 50000, d: int = 1_000_000, nnz: int = 100):
    rng = np.random.default_rng(seed)
    cols = rng.integers(0, d, size=(n, nnz))
    cols.sort(axis=1)
    data = rng.random((n, nnz))
    X = sp.csr_matrix((data.ravel(), cols.ravel(), np.arange(0, n * nnz + 1, nnz)), shape=(n, d))
    X.sum_duplicates()
    w = np.zeros(d)
    w[:1000] = rng.normal(size=1000)
    y = np.where(X @ w > 0, 1, -1)
    return X, y


SCENARIOS = {
    "dense-features": Scenario("dense-features", "saola", {}, dense_features, "features"),
    "sparse-features": Scenario("sparse-features", "saola", {"test": "fisher_z"}, sparse_text_features,
                                "features"),
    "imbalanced-features": Scenario("imbalanced-features", "kofsd", {}, imbalanced_microarray,
                                    "features"),
    "dense-instances": Scenario("dense-instances", "ofs", {"n_features_to_select": 12},
                                dense_instances, "instances"),
    "sparse-instances": Scenario("sparse-instances", "ofs", {"n_features_to_select": 1000},
                                 sparse_instances, "instances"),
}


def _messages(sc: Scenario, X, y, stream: str) -> list[dict]:
    """The scenario's messages, cut as `streamfs produce` cuts them for the catalogue's topics."""
    from streamfs.topics import load_catalogue

    budget = block_budget(int(load_catalogue("")[sc.unit].config["max.message.bytes"]))
    if sc.unit == "features":
        return list(feature_stream_messages(stream, X, y, sc.algorithm, sc.params,
                                            block_bytes=budget))
    return list(instance_stream_messages(stream, X, y, sc.algorithm, sc.params,
                                         block_bytes=budget))


def _in_process(sc: Scenario, X, y, encoded: list[bytes], stream: str) -> dict:
    from streamfs.worker.startup import freeze_startup_objects, warm_up
    from streamfs.worker.processor import StreamProcessor

    warm_up()  # as the worker before it takes partitions: imports and numba kernels loaded
    freeze_startup_objects()
    proc = StreamProcessor(sc.unit, {})
    final = None
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    for i, raw in enumerate(encoded):
        # as the worker: state checkpointed once per batch (here every 8 messages)
        plan = proc.handle(stream, raw, defer=True)
        if plan.dead_letter:
            raise RuntimeError(f"scenario {sc.name}: message rejected")
        if plan.final:
            final = plan.result
        for k, v in plan.writes + (proc.flush() if i % 8 == 7 else []):
            if v is None:
                proc.store.pop(k, None)
            else:
                proc.store[k] = v
    worker_path = time.perf_counter() - t0
    worker_path_cpu = time.process_time() - cpu0
    def bare_run(X, y) -> float:
        algo = registry.get(sc.algorithm).build(
            {**sc.params, **({"n_features": X.shape[1]} if sc.unit == "instances" else {})})
        t0 = time.perf_counter()
        if sc.unit == "features":
            algo.fit(X, y)
        else:
            algo.partial_fit(X, y)
        return time.perf_counter() - t0

    bare_run(*((X[:, :50], y) if sc.unit == "features" else (X[:50], y[:50])))  # its kernels
    bare = bare_run(X, y)
    return {"processor_seconds": worker_path, "processor_cpu_seconds": round(worker_path_cpu, 3),
            "algorithm_seconds": bare,
            "in_process_selection": decode(final)["selection"]}


def _raw_consume(kafka_config: dict, topic: str, n_messages: int) -> tuple[float, dict]:
    """Seconds for a plain consumer (assigned, no group join, the worker's fetch settings) to
    fetch every message, and the CPU seconds meanwhile of this process (the consumer; nothing
    else runs in it then) and of the local broker (where the bench can see it)."""
    from streamfs.bench.rawreader import assigned_consumer, consume_all

    consumer = assigned_consumer(kafka_config, topic)
    try:
        meter = CpuMeter({"consumer": os.getpid(),
                          "broker": local_broker_pid(kafka_config["bootstrap.servers"])}).start()
        t0 = time.perf_counter()
        consume_all(consumer, n_messages)
        return time.perf_counter() - t0, meter.stop()
    finally:
        consumer.close()


class Scratch:
    """Unique names for a bench run's topics and worker groups; at exit, every topic and
    consumer group under those names is deleted, and the workers' local state directories,
    so that a run leaves nothing (gigabytes of input, changelogs, local copies) behind. The
    workers' logs stay."""

    def __init__(self, kafka_config: dict) -> None:
        self.kafka_config = kafka_config
        self.names: list[str] = []
        self.dirs: list[Path] = []

    def data_dir(self, path: Path) -> Path:
        """``path``, a workers' ``STREAMFS_DATA_DIR``, removed at exit."""
        self.dirs.append(path)
        return path

    def name(self, kind: str) -> str:
        """A new name: ``<name>.`` prefixes topics, ``<name>`` is a worker's app id (its
        changelogs are ``<name>-...``)."""
        name = f"{kind}-{uuid.uuid4().hex[:6]}"
        self.names.append(name)
        return name

    def __enter__(self) -> "Scratch":
        return self

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        import shutil

        for path in self.dirs:
            shutil.rmtree(path, ignore_errors=True)
        try:
            self._delete()
        except Exception:  # noqa: BLE001 - never hide the error that ended the run
            if exc_type is None:
                raise

    def _delete(self) -> None:
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient

        admin = AdminClient(self.kafka_config)
        ours = tuple(f"{n}{sep}" for n in self.names for sep in ".-")
        topics = [t for t in admin.list_topics(timeout=30).topics
                  if t in self.names or t.startswith(ours)]
        groups = [g for n in self.names for g in (n, f"{n}-restore")]
        for future in [*(admin.delete_topics(topics).values() if topics else []),
                       *admin.delete_consumer_groups(groups).values()]:
            try:
                future.result(timeout=30)
            except KafkaException:
                pass  # e.g. a group that never existed (a worker that was not started)


class FinalWatcher:
    """A ``read_committed`` subscriber of the selected-features topic, assigned before the timed
    part starts (as a downstream model would be), that notes the wall-clock time at which the
    final result of ``stream`` arrives. Reads in a thread; :meth:`result` joins it."""

    def __init__(self, kafka_config: dict, topic: str, stream: str, *,
                 reader: Any = None) -> None:
        import threading

        from streamfs.client import SelectionReader

        self._reader = reader or SelectionReader(kafka_config, topic)
        self._reader.assign()
        self._stream = stream
        self._seen: dict[str, Any] = {}
        self._thread = threading.Thread(target=self._read, name="bench-final-watcher",
                                        daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            for r in self._reader.updates(self._stream, until_final=True, timeout=3600):
                self._seen["final"] = r
                if r.get("final"):
                    # the subscriber holds the final result now; `until_final` then reads
                    # every partition to its end (no newer run), which costs the broker's
                    # fetch wait (500 ms) and is not part of the pipeline
                    self._seen["at"] = time.time()
        except BaseException as exc:  # noqa: BLE001 - re-raised by result()
            self._seen["error"] = exc
        finally:
            self._reader.close()

    def result(self, timeout: float = 3600) -> tuple[dict, float]:
        """The final result and the wall-clock time it arrived."""
        self._thread.join(timeout)
        if "error" in self._seen:
            raise self._seen["error"]
        if "at" not in self._seen:
            raise TimeoutError(f"no final result of {self._stream} within {timeout} s")
        return self._seen["final"], self._seen["at"]


def warm_up_broker(kafka_config: dict, megabytes: int = 100, seed: int = 0) -> dict:
    """Push ``megabytes`` of ~1 MB messages through a scratch topic and read them back, so that
    the broker's produce and fetch paths are JIT-compiled before anything is timed (a fresh
    JVM otherwise makes whichever scenario runs first look slow). The topic is deleted after."""
    from streamfs.producers import StreamPublisher
    from streamfs.topics import TopicSpec, create_topics

    with Scratch(kafka_config) as scratch:
        topic = scratch.name("streamfs-bench-warm-up")
        create_topics(kafka_config, {"warm-up": TopicSpec("warm-up", topic, 1, 1)})
        payload = np.random.default_rng(seed).bytes(900_000)  # under the 1 MB default limit
        t0 = time.perf_counter()
        with StreamPublisher(kafka_config, topic) as pub:
            for _ in range(megabytes):
                pub.send_raw(None, payload)
        consume, _ = _raw_consume(kafka_config, topic, megabytes)
    return {"warm_up_megabytes": megabytes, "warm_up_seconds": round(time.perf_counter() - t0, 2),
            "warm_up_consume_seconds": round(consume, 3)}


def run_scenario(name: str, kafka_config: dict, *, seed: int = 0, scale: float = 1.0,
                 workdir: Path | None = None) -> dict:
    """Measure one scenario on the broker of ``kafka_config``; returns a dict of figures."""
    from streamfs.topics import create_topics, load_catalogue
    from streamfs.worker.process import WorkerProcess

    sc = SCENARIOS[name]
    X, y = sc.make(seed) if scale == 1.0 else _scaled(sc, seed, scale)
    units = X.shape[1] if sc.unit == "features" else X.shape[0]
    stream = f"bench-{name}"
    messages = _messages(sc, X, y, stream)
    encoded = [encode(m) for m in messages]
    total_bytes = sum(map(len, encoded))
    out: dict[str, Any] = {"scenario": name, "algorithm": sc.algorithm, "params": sc.params,
                           "shape": list(X.shape), "messages": len(encoded),
                           "megabytes": round(total_bytes / 1e6, 2), "unit": sc.unit}
    out.update(_in_process(sc, X, y, encoded, stream))

    with Scratch(kafka_config) as scratch:
        prefix = f"{scratch.name('bench')}."
        topics = load_catalogue(prefix)
        create_topics(kafka_config, topics)
        workdir = Path(workdir or tempfile.mkdtemp(prefix="streamfs-bench-"))
        worker = WorkerProcess(kafka_config["bootstrap.servers"], prefix, scratch.name("bench"),
                               workdir / f"{name}-worker.log",
                               scratch.data_dir(workdir / "data")).start()
        try:
            _wait_ready(worker)
            watcher = FinalWatcher(kafka_config, topics["selected"].name, stream)
            t0, publish = _publish(kafka_config, topics[sc.unit].name, stream, encoded)
            r, at = watcher.result()
            pipeline = at - t0
            out["worker_peak_rss_mb"] = round((worker.peak_rss_bytes() or 0) / 2**20, 1)
            phases, commits, transactions = _phase_seconds(worker)
            out["streaming_phase_seconds"] = {k: round(v, 4) for k, v in phases.items()}
            out["streaming_commit_seconds"] = round(commits, 4)
            out["streaming_transactions"] = transactions
        finally:
            worker.stop()
        out["raw_consume_seconds"], out["raw_consume_cpu_seconds"] = _raw_consume(
            kafka_config, topics[sc.unit].name, len(encoded))
        out["pipeline_seconds"] = pipeline
        out["publish_seconds"] = publish
        out.update(_raw_pipeline(sc, kafka_config, stream, encoded, scratch))
        out.update(_backlog(sc, kafka_config, stream, encoded, workdir, scratch))
    for key in ("pipeline", "raw_pipeline", "backlog", "raw_consume", "processor", "algorithm"):
        out[f"{key}_{sc.unit}_per_s"] = round(units / out[f"{key}_seconds"], 1)
    out["ratio_pipeline_to_raw"] = round(out["raw_consume_seconds"] / pipeline, 4)
    out["ratio_pipeline_to_raw_pipeline"] = round(out["raw_pipeline_seconds"] / pipeline, 4)
    out["ratio_backlog_to_raw"] = round(out["backlog_raw_consume_seconds"]
                                        / out["backlog_seconds"], 4)
    # no worker can beat reading the bytes nor running the steps: 1.0 means no other overhead
    out["ratio_backlog_to_bound"] = round(max(out["backlog_raw_consume_seconds"],
                                              out["processor_seconds"]) / out["backlog_seconds"], 4)
    out["ratio_pipeline_to_in_process"] = round(out["processor_seconds"] / pipeline, 4)
    out["bench_peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    out["final_selection_size"] = len(r["selection"])
    # the worker runs the same code path: its final selection must be the in-process one
    expected = out.pop("in_process_selection")
    out["selection_matches_in_process"] = (r["selection"] == expected
                                           and out.pop("backlog_selection") == expected)
    return out


def _publish(kafka_config: dict, topic: str, stream: str, encoded: list[bytes]
             ) -> tuple[float, float]:
    """Publish ``encoded`` as the producer CLI does; returns the wall-clock start and the
    seconds until the broker acknowledged every message (connection, metadata and producer id
    off the clock, as the raw consumer's set-up is)."""
    import json

    from streamfs.producers import StreamPublisher

    producer_id: list[int] = []
    # librdkafka gets the idempotent producer's id asynchronously; when no broker connection
    # is up at its first try, it retries 500 ms later (seen in its debug log), which delayed
    # the first message of some runs by half a second. Its statistics report the id.
    conf = {**kafka_config, "statistics.interval.ms": 100,
            "stats_cb": lambda stats: producer_id.append(json.loads(stats)["eos"]["producer_id"])}
    with StreamPublisher(conf, topic) as pub:
        pub.connect()
        deadline = time.monotonic() + 30
        while not (producer_id and producer_id[-1] >= 0):
            if time.monotonic() > deadline:
                raise TimeoutError(f"the producer for {topic} got no producer id in 30 s")
            pub.poll(0.05)
        t0 = time.time()
        for raw in encoded:
            pub.send_raw(stream.encode(), raw)
    return t0, time.time() - t0  # the publisher flushes on exit


def _raw_pipeline(sc: Scenario, kafka_config: dict, stream: str, encoded: list[bytes],
                  scratch: Scratch) -> dict:
    """The streaming run with a plain consumer (own process) in the worker's place: the same
    publish to a fresh topic, timed until that consumer holds every message."""
    from streamfs.bench.rawreader import LiveReader
    from streamfs.topics import create_topics, load_catalogue

    topics = load_catalogue(f"{scratch.name('rawlive')}.")
    create_topics(kafka_config, {sc.unit: topics[sc.unit]})
    reader = LiveReader(kafka_config, topics[sc.unit].name, len(encoded))
    t0, publish = _publish(kafka_config, topics[sc.unit].name, stream, encoded)
    return {"raw_pipeline_seconds": reader.finished_at() - t0,
            "raw_pipeline_publish_seconds": publish}


def _backlog(sc: Scenario, kafka_config: dict, stream: str, encoded: list[bytes],
             workdir: Path, scratch: Scratch) -> dict:
    """The scenario's messages already on fresh topics; a worker started cold on them."""
    from streamfs.topics import create_topics, load_catalogue
    from streamfs.worker.process import WorkerProcess

    prefix = f"{scratch.name('backlog')}."
    topics = load_catalogue(prefix)
    create_topics(kafka_config, topics)
    _publish(kafka_config, topics[sc.unit].name, stream, encoded)
    watcher = FinalWatcher(kafka_config, topics["selected"].name, stream)
    worker = WorkerProcess(kafka_config["bootstrap.servers"], prefix,
                           scratch.name("backlog"),
                           workdir / f"{sc.name}-backlog-worker.log",
                           scratch.data_dir(workdir / "data")).start()
    try:
        # polled often: the worker starts on the backlog the moment it is ready, and its CPU
        # seconds are counted from the first poll that sees it ready
        ready_at = _wait_ready(worker, poll=0.01)["ready_at"]
        meter = CpuMeter({"worker": worker.pid,
                          "broker": local_broker_pid(kafka_config["bootstrap.servers"])}).start()
        final, at = watcher.result()
        cpu = meter.stop()
        rss = worker.peak_rss_bytes()
        phases, commits, transactions = _phase_seconds(worker)
    finally:
        worker.stop()
    raw, raw_cpu = _raw_consume(kafka_config, topics[sc.unit].name, len(encoded))
    # where the backlog time went, from the worker's own counters; "other" is the rest
    # (the loop between calls, the first fetch's start, the subscriber's read of the result)
    phases["other"] = at - ready_at - sum(phases.values())
    return {"backlog_seconds": at - ready_at, "backlog_raw_consume_seconds": raw,
            "backlog_cpu_seconds": cpu, "backlog_raw_consume_cpu_seconds": raw_cpu,
            "backlog_worker_peak_rss_mb": round((rss or 0) / 2**20, 1),
            "backlog_phase_seconds": {k: round(v, 4) for k, v in phases.items()},
            "backlog_commit_seconds": round(commits, 4), "backlog_transactions": transactions,
            "backlog_selection": final["selection"]}


#: the worker loop's phases (its /metrics); transactions complete on a helper thread meanwhile
PHASES = ("fetch", "steps", "checkpoint", "commit_wait", "produce", "local_copy")


def _phase_seconds(worker) -> tuple[dict[str, float], float, int]:
    """The worker loop's time in fetch calls that returned input and in each batch phase so
    far, its helper thread's time completing transactions, and the transactions it began
    (one a batch), from its /metrics."""
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families

    url = f"http://127.0.0.1:{worker.env['STREAMFS_WEB_PORT']}/metrics"
    with urllib.request.urlopen(url, timeout=10) as resp:
        text = resp.read().decode()
    out = dict.fromkeys(PHASES, 0.0)
    commits = 0.0
    transactions = 0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "streamfs_fetch_seconds_total":
                out["fetch"] = sample.value
            elif sample.name == "streamfs_batch_phase_seconds_total":
                out[sample.labels["phase"]] = sample.value
            elif sample.name == "streamfs_commit_seconds_total":
                commits = sample.value
            elif sample.name == "streamfs_transactions_total":
                transactions = int(sample.value)
    return out, commits, transactions


def _scaled(sc: Scenario, seed: int, scale: float):
    import inspect

    defaults = {k: v.default for k, v in inspect.signature(sc.make).parameters.items()
                if v.default is not inspect.Parameter.empty}
    key = "p" if sc.unit == "features" else "n"
    kwargs = {key: max(10, int(defaults[key] * scale))}
    if "nnz" in defaults and sc.unit == "features":
        kwargs["nnz"] = max(100, int(defaults["nnz"] * scale))
    return sc.make(seed, **kwargs)


def _wait_ready(worker, timeout: float = 120.0, poll: float = 0.3) -> dict:
    """Poll the worker's /health (every ``poll`` seconds) until it has its partitions
    assigned; returns the health."""
    import json
    import urllib.request

    deadline = time.monotonic() + timeout
    url = f"http://127.0.0.1:{worker.env['STREAMFS_WEB_PORT']}/health"
    while time.monotonic() < deadline:
        if worker.proc.poll() is not None:
            raise RuntimeError(f"worker exited:\n{worker.log_tail()}")
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                health = json.load(resp)
                if any(".features:" in t for t in health["assigned"]):
                    return health
        except OSError:
            pass
        time.sleep(poll)  # polling an external process's health endpoint
    raise TimeoutError(f"worker not ready after {timeout} s:\n{worker.log_tail()}")


def _wait_committed(kafka_config: dict, group: str, topic: str, timeout: float = 120.0) -> None:
    from confluent_kafka import Consumer, TopicPartition

    probe = Consumer({**kafka_config, "group.id": group, "enable.auto.commit": False})
    try:
        parts = probe.list_topics(topic, timeout=10).topics[topic].partitions
        tps = [TopicPartition(topic, p) for p in parts]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            committed = {tp.partition: tp.offset for tp in probe.committed(tps, timeout=10)}
            ends = {tp.partition: probe.get_watermark_offsets(tp, timeout=10)[1] for tp in tps}
            if all(ends[p] == 0 or committed[p] >= ends[p] for p in ends):
                return
            time.sleep(0.2)  # polling the broker for the worker's commit
        raise TimeoutError(f"group {group} did not commit {topic} within {timeout} s")
    finally:
        probe.close()


def recovery(kafka_config: dict, **kwargs: Any) -> dict:
    """:func:`_recovery` on scratch topics, deleted after."""
    with Scratch(kafka_config) as scratch:
        return _recovery(kafka_config, scratch, **kwargs)


def _recovery(kafka_config: dict, scratch: Scratch, *, n: int = 10000, selected: int = 500,
              open_streams: int = 10, closed_streams: int = 1000, seed: int = 0,
              workdir: Path | None = None) -> dict:
    """Kill a worker holding ``open_streams`` streams with ``selected`` kept columns of length
    ``n`` each, after ``closed_streams`` small streams were closed, and time how long the
    restarted worker takes to be ready and to apply the next message of those streams. Reports
    the changelog (the store a restart restores) in records and bytes: closed streams must cost
    a header each, no kept columns."""
    from streamfs.client import SelectionReader
    from streamfs.producers import StreamPublisher
    from streamfs.topics import create_topics, load_catalogue
    from streamfs.worker.process import WorkerProcess

    rng = np.random.default_rng(seed)
    # independent informative columns: SAOLA keeps every one of them
    y = rng.integers(0, 2, n)
    X = rng.normal(size=(n, selected)) + 0.25 * y[:, None]
    streams = [f"bench-recovery-{i}" for i in range(open_streams)]
    msgs = {s: list(feature_stream_messages(s, X, y, "saola", {})) for s in streams}
    yc = rng.integers(0, 2, 50)
    Xc = rng.normal(size=(50, 20)) + yc[:, None]
    closed = [m for i in range(closed_streams)
              for m in feature_stream_messages(f"closed-{i}", Xc, yc, "saola", {})]
    prefix = f"{scratch.name('rec')}."
    topics = load_catalogue(prefix)
    create_topics(kafka_config, topics)
    workdir = Path(workdir or tempfile.mkdtemp(prefix="streamfs-bench-"))
    app = scratch.name("rec")
    env = {"STREAMFS_SESSION_TIMEOUT": "10"}
    w = WorkerProcess(kafka_config["bootstrap.servers"], prefix, app, workdir / "rec-a.log",
                      scratch.data_dir(workdir / "data"), **env).start()
    _wait_ready(w)
    with StreamPublisher(kafka_config, topics["features"].name) as pub:
        pub.send_all(closed)
        for s in streams:
            pub.send_all(msgs[s][:-1])  # everything but close
    last_seq = {s: msgs[s][-2]["seq"] for s in streams}
    kept = {}
    with SelectionReader(kafka_config, topics["selected"].name) as reader:
        for r in reader.updates(timeout=1200):
            if r["stream"] in last_seq and r["seq"] == last_seq[r["stream"]]:
                kept[r["stream"]] = len(r["selection"])
                if len(kept) == len(streams):
                    break
    # Kill only once the worker has committed its input offsets: the restart then recovers the
    # state from the changelog instead of replaying the input.
    _wait_committed(kafka_config, app, topics["features"].name)
    w.kill()
    records, size = _topic_bytes(kafka_config, f"{app}-features-streams-changelog")
    t_kill = time.perf_counter()
    w2 = WorkerProcess(kafka_config["bootstrap.servers"], prefix, app, workdir / "rec-b.log",
                       workdir / "data", **env).start()
    t_start = time.perf_counter()
    try:
        _wait_ready(w2)
        t_ready = time.perf_counter()
        with StreamPublisher(kafka_config, topics["features"].name) as pub:
            for s in streams:
                pub.send(msgs[s][-1])
            t_sent = time.perf_counter()
        with SelectionReader(kafka_config, topics["selected"].name) as reader:
            for r in reader.updates(until_final=True, timeout=600):
                pass
        t_final = time.perf_counter()
    finally:
        w2.stop()
    # the same restore without a local copy (a new machine): the whole changelog
    w3 = WorkerProcess(kafka_config["bootstrap.servers"], prefix, app, workdir / "rec-c.log",
                       scratch.data_dir(workdir / "data-empty"), **env).start()
    try:
        _wait_ready(w3)
    finally:
        w3.stop()
    return {"n": n, "open_streams": open_streams, "closed_streams": closed_streams,
            "kept_columns": sum(kept.values()), "changelog_records": records,
            "changelog_mb": round(size / 2**20, 1),
            "local_store_mb": round(_dir_bytes(workdir / "data") / 2**20, 1),
            "restart_to_ready_s": round(t_ready - t_start, 2),
            "restore_from_local_copy_s": _restore_seconds(workdir / "rec-b.log"),
            "restore_from_changelog_s": _restore_seconds(workdir / "rec-c.log"),
            "close_to_final_after_restart_s": round(t_final - t_sent, 2),
            "kill_to_final_s": round(t_final - t_kill, 2),
            "note": "restart_to_ready includes process start, group join (the dead member's "
                    "session timeout of 10 s) and the restore; restore_from_changelog is the "
                    "same restore by a worker without the local copy"}


def _restore_seconds(log_path: Path) -> float:
    """The last 'state restored in X s' of a worker log."""
    import re

    found = re.findall(r"state restored in ([0-9.]+) s", log_path.read_text())
    return float(found[-1])


def _dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _topic_bytes(kafka_config: dict, topic: str) -> tuple[int, int]:
    """Records and value bytes of ``topic`` as a ``read_committed`` reader sees it now (the
    latest value per key: what a restore keeps)."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    c = Consumer({**kafka_config, "group.id": f"bench-size-{uuid.uuid4().hex}",
                  "isolation.level": "read_committed", "enable.partition.eof": True})
    latest: dict[tuple[int, bytes], int] = {}
    try:
        parts = c.list_topics(topic, timeout=10).topics[topic].partitions
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in parts])
        pending = set(parts)
        while pending:
            for m in c.consume(10000, timeout=0.2):
                if m.error():
                    if m.error().code() == KafkaError._PARTITION_EOF:
                        pending.discard(m.partition())
                    continue
                if m.value() is None:
                    latest.pop((m.partition(), m.key()), None)
                else:
                    latest[(m.partition(), m.key())] = len(m.value())
    finally:
        c.close()
    return len(latest), sum(latest.values())
