"""The faust application: one agent per input topic, one table per agent, results and dead
letters to their topics. All stream logic lives in :mod:`streamfs.worker.processor`."""

from __future__ import annotations

import asyncio
import logging
import os
import ssl
import sys
import time
from collections.abc import MutableMapping
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Iterator

import faust

from streamfs.settings import Settings
from streamfs.topics import changelog_specs, create_topics, load_catalogue, wait_for_topics
from streamfs.worker import metrics
from streamfs.worker.input_guard import InputGuard
from streamfs.worker.processor import Plan, StreamProcessor
from streamfs.worker.sender import AsyncSender

log = logging.getLogger("streamfs.worker")


class TableStore(MutableMapping):
    """str-keyed, read-only view of a faust table's store (keys and values raw bytes).

    Writes go through ``_apply`` in the agent, which also writes the changelog."""

    def __init__(self, table: faust.Table) -> None:
        self.table = table

    def __getitem__(self, key: str) -> bytes:
        value = self.table.data.get(key.encode())
        if value is None:
            raise KeyError(key)
        return value

    def get(self, key: str, default=None):
        value = self.table.data.get(key.encode())
        return default if value is None else value

    def __setitem__(self, key: str, value: bytes) -> None:
        raise TypeError("the worker's agent writes the table (with its changelog)")

    def __delitem__(self, key: str) -> None:
        raise TypeError("the worker's agent writes the table (with its changelog)")

    def __iter__(self) -> Iterator[str]:
        return (k.decode() for k in self.table.data.keys())

    def __len__(self) -> int:
        return len(self.table.data)


def _credentials(security: dict[str, str]):
    protocol = security.get("security.protocol", "PLAINTEXT").upper()
    context = None
    if "SSL" in protocol:
        context = ssl.create_default_context(cafile=security.get("ssl.ca.location"))
        if security.get("ssl.certificate.location"):
            context.load_cert_chain(security["ssl.certificate.location"],
                                    security.get("ssl.key.location"))
    if protocol.startswith("SASL"):
        return faust.SASLCredentials(
            username=security.get("sasl.username"), password=security.get("sasl.password"),
            mechanism=security.get("sasl.mechanism", "PLAIN"), ssl_context=context)
    if context is not None:
        return faust.SSLCredentials(context)
    return None


def create_app(settings: Settings) -> faust.App:
    specs = load_catalogue(settings.topic_prefix)
    partitions = specs["features"].partitions
    if specs["instances"].partitions != partitions:
        raise ValueError("the features and instances topics must have the same partition count")
    app = faust.App(
        settings.app_id,
        broker=[f"kafka://{h.strip()}" for h in settings.bootstrap_servers.split(",")],
        broker_credentials=_credentials(settings.security),
        store="memory://",  # state is rebuilt from the changelog topics on start
        datadir=os.environ.get("STREAMFS_DATA_DIR", os.path.join(".run", "faust", settings.app_id)),
        topic_partitions=partitions,
        topic_replication_factor=specs["features"].replication_factor,
        key_serializer="raw",
        value_serializer="raw",
        producer_max_request_size=settings.max_message_bytes + 65536,
        consumer_max_fetch_size=settings.max_message_bytes + 65536,
        producer_acks=-1,
        broker_session_timeout=settings.session_timeout,
        table_standby_replicas=settings.standby_replicas,
        broker_heartbeat_interval=min(3.0, settings.session_timeout / 3),
        web_port=settings.web_port,
        web_bind=settings.web_host,
        web_host=settings.web_host,
        autodiscover=False,
    )
    from faust.sensors.prometheus import setup_prometheus_sensors

    setup_prometheus_sensors(app, name_prefix="streamfs_faust")

    def topic(role: str) -> faust.TopicT:
        s = specs[role]
        return app.topic(s.name, partitions=s.partitions, replicas=s.replication_factor,
                         config=s.config, key_type=bytes, value_type=bytes)

    sender = AsyncSender(settings.kafka_config(), settings.max_message_bytes)
    topic_names = {role: specs[role].name for role in ("selected", "dead_letter")}
    guard = InputGuard([specs["features"].name, specs["instances"].name])
    for role in ("features", "instances"):
        _add_agent(app, role, topic(role), sender, topic_names, settings, partitions, guard)

    _add_watchdog(app, settings, [specs["features"].name, specs["instances"].name])

    @app.page("/debug/tasks")
    async def tasks(web, request):  # noqa: ARG001 - faust's view signature
        """Stacks of every asyncio task: where a stuck worker is waiting."""
        import io

        out = io.StringIO()
        for task in asyncio.all_tasks():
            out.write(f"--- {task.get_name()}\n")
            coro = task.get_coro()
            while coro is not None:  # follow the await chain down to the innermost frame
                frame = getattr(coro, "cr_frame", None) or getattr(coro, "ag_frame", None)
                if frame is not None:
                    out.write(f"  {frame.f_code.co_filename}:{frame.f_lineno} "
                              f"{frame.f_code.co_name}\n")
                coro = getattr(coro, "cr_await", None) or getattr(coro, "ag_await", None)
                if coro is not None and not hasattr(coro, "cr_frame") and not hasattr(coro, "ag_frame"):
                    out.write(f"  awaiting {coro!r}\n")
                    break
        return web.text(out.getvalue())

    @app.page("/health")
    async def health(web, request):  # noqa: ARG001 - faust's view signature
        assigned = sorted(f"{tp.topic}:{tp.partition}" for tp in app.consumer.assignment())
        return web.json({"status": "ok", "assigned": assigned})

    return app


class Progress:
    """When the agents last finished an event, and whether one is being handled now."""

    last = time.monotonic()
    busy = 0


def _add_watchdog(app: faust.App, settings: Settings, topics: list[str]) -> None:
    """Restart the process (same pid, ``os.execv``) when it stalls.

    After restarts in our crash tests, faust sometimes stopped delivering events although
    committed offsets lagged behind the input. State and offsets live in Kafka, so re-executing
    the worker is safe: it rejoins, recovers and redelivers.
    """
    from confluent_kafka import Consumer, TopicPartition

    probe = Consumer({**settings.kafka_config(), "group.id": settings.app_id,
                      "enable.auto.commit": False})

    def lagging(assigned: list[tuple[str, int]]) -> bool:
        tps = [TopicPartition(t, p) for t, p in assigned]
        if not tps:
            return False
        for tp in probe.committed(tps, timeout=10):
            high = probe.get_watermark_offsets(tp, timeout=10)[1]
            if high > max(tp.offset, 0):
                return True
        return False

    @app.on_partitions_assigned.connect
    async def _reset(app, assigned, **kwargs):  # noqa: ARG001 - signal signature
        Progress.last = time.monotonic()

    @app.timer(interval=2.0)
    async def watchdog():
        idle = time.monotonic() - Progress.last
        if Progress.busy or idle < settings.stall_seconds or app.rebalancing:
            return
        assigned = [(tp.topic, tp.partition) for tp in app.consumer.assignment()
                    if tp.topic in topics]
        loop = asyncio.get_running_loop()
        if await loop.run_in_executor(None, lagging, assigned):
            log.critical("no progress for %.0f s while assigned input is unconsumed: "
                         "restarting the worker", idle)
            os.execv(sys.executable, [sys.executable, "-m", "streamfs.cli", "worker"])
        Progress.last = time.monotonic()  # idle and caught up: check again later


def _add_agent(app: faust.App, role: str, source: faust.TopicT, sender: AsyncSender,
               topic_names: dict[str, str], settings: Settings, partitions: int,
               guard: InputGuard) -> None:
    table = app.Table(f"{role}-streams", default=None, partitions=partitions,
                      key_type=bytes, value_type=bytes,
                      extra_topic_configs={"max.message.bytes": str(settings.max_message_bytes + 65536)})
    processor = StreamProcessor(role, TableStore(table), max_message_bytes=settings.max_message_bytes,
                                output_format=settings.result_format)
    # One thread per agent: steps run off the event loop (heartbeats keep flowing) and
    # one at a time, so a stream's algorithm object is never touched concurrently.
    executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"streamfs-{role}")
    topic_name = source.get_topic_name()

    async def agent(stream):
        loop = asyncio.get_running_loop()
        # Manual acknowledgement: faust acks an event in a ``finally`` around its ``yield``, so
        # an agent cancelled mid-step (a worker stopping during a rebalance) would have the
        # event's offset committed without its state. Here an event is acknowledged only after
        # its result and state records are on the broker.
        manual = stream.noack()
        guard.install(app.consumer, app.flow_control)  # before any event reaches the stream
        async for event in manual.events():
            Progress.busy += 1
            msg = event.message
            origin = {"topic": msg.topic, "partition": msg.partition, "offset": msg.offset}
            t0 = time.perf_counter()
            plan: Plan = await loop.run_in_executor(executor, partial(
                processor.handle, event.key, event.value, timestamp=msg.timestamp, origin=origin))
            t1 = time.perf_counter()
            try:
                await _apply(plan, event.key, sender, topic_names, table, msg.partition)
            except BaseException:  # noqa: BLE001
                # The event is not acknowledged yet: dying now means it is redelivered after the
                # restart. Letting faust restart the agent instead would skip it.
                log.critical("cannot publish or persist stream %r; exiting so that the input "
                             "is redelivered", plan.stream, exc_info=True)
                os._exit(70)
            await guard.ack(manual, event)
            Progress.busy -= 1
            Progress.last = time.monotonic()
            if plan.result is not None:
                metrics.RESULTS.labels(final=str(plan.final).lower()).inc()
            if plan.dead_letter is not None:
                metrics.DEAD_LETTERS.labels(topic=topic_name).inc()
            outcome = "dead_letter" if plan.dead_letter else "skipped" if plan.skipped else "applied"
            metrics.MESSAGES.labels(topic=topic_name, outcome=outcome).inc()
            if plan.n_items:
                metrics.ITEMS.labels(kind=role).inc(plan.n_items)
            if plan.algorithm and not plan.skipped and not plan.dead_letter:
                metrics.STEP_SECONDS.labels(algorithm=plan.algorithm).observe(plan.step_seconds)
            if plan.rebuild_seconds is not None:
                metrics.REBUILD_SECONDS.observe(plan.rebuild_seconds)
            if plan.selection_size is not None:
                metrics.SELECTION_SIZE.labels(stream=plan.stream).set(plan.selection_size)
            log.debug("stream=%s outcome=%s handle=%.4f persist=%.4f", plan.stream, outcome,
                      t1 - t0, time.perf_counter() - t1)

    app.agent(source, name=f"streamfs.{role}")(agent)


def prepare_topics(settings: Settings) -> None:
    """Create the catalogue's topics and the changelogs before faust starts, and wait until the
    broker's metadata shows them: faust checks changelog partitions on the first table write and
    crashes the agent if the metadata lags behind the topic creation."""
    specs = load_catalogue(settings.topic_prefix)
    partitions = specs["features"].partitions
    specs.update(changelog_specs(settings.app_id, partitions,
                                 specs["features"].replication_factor, settings.max_message_bytes))
    create_topics(settings.kafka_config(), specs)
    wait_for_topics(settings.kafka_config(), specs)
    commit_start_offsets(settings, [specs["features"].name, specs["instances"].name])


def commit_start_offsets(settings: Settings, topics: list[str], attempts: int = 20) -> None:
    """Give every input partition a committed offset (0) if the group has none.

    Without one, a worker that joins after another died before its first commit sometimes
    started at the end of the partition (faust seeks to "committed offsets" after its fetcher
    has started from the earliest), silently skipping input. Offset 0 below a partition's log
    start resets to the earliest offset. Kafka refuses the commit while the group has live
    members; then a running worker owns the offsets and nothing is needed.
    """
    import time

    from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

    retriable = {KafkaError.COORDINATOR_NOT_AVAILABLE, KafkaError.NOT_COORDINATOR,
                 KafkaError.COORDINATOR_LOAD_IN_PROGRESS, KafkaError._TIMED_OUT,
                 KafkaError._TRANSPORT}
    consumer = Consumer({**settings.kafka_config(), "group.id": settings.app_id,
                         "enable.auto.commit": False})
    try:
        tps = [TopicPartition(t, p) for t in topics
               for p in consumer.list_topics(t, timeout=30).topics[t].partitions]
        for attempt in range(attempts):
            try:
                missing = [TopicPartition(tp.topic, tp.partition, 0)
                           for tp in consumer.committed(tps, timeout=30) if tp.offset < 0]
                if missing:
                    consumer.commit(offsets=missing, asynchronous=False)
                log.info("start offsets committed for %d partitions", len(missing))
                return
            except KafkaException as exc:
                if exc.args[0].code() not in retriable or attempt == attempts - 1:
                    log.info("start offsets not committed (%s)", exc)
                    return
                time.sleep(0.5)  # the group coordinator is still loading
    finally:
        consumer.close()


async def _apply(plan: Plan, key: bytes | None, sender: AsyncSender, topics: dict[str, str],
                 table: faust.Table, partition: int) -> None:
    """Publish, then persist, awaiting every acknowledgement before the event is acknowledged."""
    if plan.result is not None:
        # Acknowledged before the state is written: see processor's docstring.
        await sender.send(topics["selected"], plan.stream.encode(), plan.result)
    if plan.dead_letter is not None:
        await sender.send(topics["dead_letter"], plan.stream.encode() if plan.stream else key,
                          plan.dead_letter)
    pending = []
    changelog = table.changelog_topic.get_topic_name()
    for record_key, value in plan.writes:
        k = record_key.encode()
        if value is None:
            table.data.pop(k, None)
        else:
            table.data[k] = value
        # the event's partition: the changelog is co-partitioned with the input topic
        pending.append(sender.send(changelog, k, value, partition=partition))
    for fut in pending:
        await fut


def warm_up() -> None:
    """Import every algorithm and run it once on a tiny stream, so that module imports and
    numba's compiled kernels are loaded before the worker takes partitions, not on the first
    message of a stream."""
    import numpy as np

    from streamfs.algorithms import registry

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 6))
    y = (X[:, 0] > 0).astype(np.int64)
    for spec in registry.ALGORITHMS.values():
        algo = spec.build({"n_features": 6} if spec.kind == "instances" else {})
        if spec.kind == "features":
            algo.partial_fit(X, y)
        else:
            algo.partial_fit(X, np.where(y == 1, 1, -1))
        algo.to_state()


def run_worker(settings: Settings) -> None:
    """Run the worker until interrupted (SIGINT/SIGTERM stop it cleanly)."""
    warm_up()
    prepare_topics(settings)
    app = create_app(settings)
    worker = faust.Worker(app, loglevel=settings.log_level)
    worker.execute_from_commandline()
