"""Restarts read the changelog's tail: the worker's local copies of partition state."""

from __future__ import annotations

import re
import sqlite3
import urllib.request

import pytest

from streamfs.client import SelectionReader
from streamfs.topics import load_catalogue

from .test_worker_acceptance import _strip, publish, reference_versions, wait_finals
from .workload import mixed_workload

pytestmark = pytest.mark.kafka


def _ready_metrics(worker, timeout: float = 120.0) -> dict[str, float]:
    """Wait for the worker's /health to say ready; then its restore counters by source."""
    worker.wait_ready(timeout)
    base = f"http://127.0.0.1:{worker.env['STREAMFS_WEB_PORT']}"
    text = urllib.request.urlopen(f"{base}/metrics", timeout=5).read().decode()
    found = re.findall(r'streamfs_restored_records_total\{source="(\w+)"\} ([0-9.e+]+)', text)
    return {source: float(v) for source, v in found}


def _applied_up_to(kafka_config, prefix, last_seq: dict[str, int]) -> None:
    """Block until every stream has a result at (or past) its given sequence number."""
    pending = dict(last_seq)
    with SelectionReader(kafka_config, load_catalogue(prefix)["selected"].name) as reader:
        for r in reader.updates(timeout=180):
            if r["stream"] in pending and r["seq"] >= pending[r["stream"]]:
                del pending[r["stream"]]
                if not pending:
                    return


def test_restart_reads_only_the_tail_and_a_bad_copy_falls_back(kafka_config, topic_prefix,
                                                                start_worker, tmp_path):
    cases = mixed_workload(6, prefix="loc")
    refs = {c.stream: reference_versions(c) for c in cases}
    # every stream but its last block and close: state of open streams to restore
    head = {c.stream: c.messages[:-2] for c in cases}
    first = start_worker()
    publish(kafka_config, topic_prefix, cases, [m for c in cases for m in head[c.stream]])
    # a result is published only when the selection changes: wait for the final results of
    # an uninterrupted run at those sequence numbers instead
    _applied_up_to(kafka_config, topic_prefix, {
        s: max(r["seq"] for r in refs[s] if r["seq"] <= head[s][-1]["seq"]) for s in refs})
    first.stop()  # a clean stop: the local copies hold every committed batch

    second = start_worker()
    restored = _ready_metrics(second)
    assert restored["local"] > 0 and restored["changelog"] == 0, restored
    second.stop()

    # a copy saved from another topic of the same name (another cluster's, with the same
    # data directory, app id and prefix; or this one deleted and made again) is not used:
    # before session 49 it was, and streams of the other cluster stood in this one's state
    copies = list((tmp_path / "data").rglob("*.sqlite"))
    for path in copies:
        with sqlite3.connect(path) as db:
            saved_from = dict(db.execute("SELECT name, value FROM meta")).get("topic_id")
            assert saved_from is not None and len(saved_from) >= 22  # a Kafka topic id
            db.execute("UPDATE meta SET value = 'AAAAAAAAAAAAAAAAAAAAAA' WHERE name = 'topic_id'")
    other = start_worker()
    restored = _ready_metrics(other)
    assert restored["local"] == 0 and restored["changelog"] > 0, restored
    other.stop()

    # a copy that claims more than the changelog holds (a recreated topic) is not used
    for path in (tmp_path / "data").rglob("*.sqlite"):
        with sqlite3.connect(path) as db:
            db.execute("UPDATE meta SET value = 1000000000 WHERE name = 'next_offset'")
    third = start_worker()
    restored = _ready_metrics(third)
    assert restored["local"] == 0 and restored["changelog"] > 0, restored
    publish(kafka_config, topic_prefix, cases, [m for c in cases for m in c.messages[-2:]])
    finals = wait_finals(kafka_config, topic_prefix, list(refs))
    with SelectionReader(kafka_config, load_catalogue(topic_prefix)["selected"].name) as reader:
        everything = list(reader.updates(to_end=True))
    for stream, ref in refs.items():
        results = [r for r in everything if r["stream"] == stream]
        assert [_strip(r) for r in results] == ref, stream  # every version once, exact
        assert finals[stream][-1]["final"]


def test_a_failing_local_copy_is_dropped_not_written_past(kafka_config, topic_prefix, tmp_path,
                                                          monkeypatch):
    """A save that fails (disk full) stops the copy's use until the next assignment: a later
    save on top of a failed one would skip records while claiming a later offset."""
    from streamfs.settings import Settings
    from streamfs.worker import app, startup
    from streamfs.worker.localstore import LocalStore

    settings = Settings(bootstrap_servers=kafka_config["bootstrap.servers"],
                        topic_prefix=topic_prefix, app_id="app-localfail",
                        data_dir=str(tmp_path / "data"))
    startup.prepare_topics(settings)
    worker = app.Worker(settings)
    key = ("features", 0)
    worker._restore({key: None})  # an empty changelog: the copy records offset 0
    assert worker.local.stores[key].load()[1] == 0

    real_save, calls = LocalStore.save, []

    def disk_full_once(self, writes, next_offset):
        calls.append(next_offset)
        if len(calls) == 1:
            raise sqlite3.OperationalError("database or disk is full")
        real_save(self, writes, next_offset)

    monkeypatch.setattr(LocalStore, "save", disk_full_once)
    worker.changelog_end[(worker.changelog["features"], 0)] = 7
    worker.local.save_committed({key: {"s\x1fh": b"header"}},
                                worker.changelog_end)  # fails (in the background)
    worker.changelog_end[(worker.changelog["features"], 0)] = 9
    worker.local.save_committed({key: {"s\x1fc": b"columns"}},
                                worker.changelog_end)  # would be written past the failure
    worker.local.settle()  # as before any read of the copies
    assert calls == [7]  # the save after the failed one was skipped
    assert worker.local.stores[key] is None  # not used any more in this assignment
    monkeypatch.undo()
    again = LocalStore.open(tmp_path / "data" / "app-localfail", worker.changelog["features"], 0)
    assert again is not None and again.load()[:2] == ({}, 0)  # still the changelog up to 0
    again.close()
    worker.consumer.close()
