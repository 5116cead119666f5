"""A worker killed at each precise point of its commit path (``os._exit`` where the point is,
not a SIGKILL at a random moment): after the records are produced but before the offsets are
sent, after the offsets but before the commit, after the commit but before the local copy is
saved, in the middle of that save (rows written, SQLite's COMMIT not), and in the middle of the
restore's own save of the changelog's tail. Restarted, it publishes every version once, in
order, equal to an uninterrupted run, dead-letters nothing, logs no warning, and restores from
the local copies exactly what they hold and from the changelog exactly the committed records
after them. Real broker; the killed worker is a subprocess running ``streamfs worker`` with one
method of the worker's own classes wrapped."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
import urllib.request
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition

from streamfs.client import SelectionReader
from streamfs.codec import decode
from streamfs.settings import Settings
from streamfs.topics import changelog_specs, load_catalogue
from streamfs.worker.process import WorkerProcess, free_port

from .test_worker_acceptance import _strip, features_of, publish, reference_versions, wait_finals
from .workload import interleave, mixed_workload

pytestmark = pytest.mark.kafka

#: runs `streamfs worker` with os._exit(9) at POINT, on its NTH occurrence, after writing MARK
LAUNCHER = r'''
import json, os, sys, threading
from streamfs.worker import app, local_copies, localstore

POINT, NTH, MARK = sys.argv[1], int(sys.argv[2]), sys.argv[3]
seen, lock = [0], threading.Lock()

def hit():
    with lock:
        seen[0] += 1
        return seen[0] == NTH

def die(**info):
    with open(MARK, "w") as f:
        json.dump(info, f)
    os._exit(9)

if POINT in ("before_offsets", "before_commit"):
    txn, want = app.Worker._txn, {"before_offsets": "send_offsets_to_transaction",
                                  "before_commit": "commit_transaction"}[POINT]
    def _txn(self, call, *args):
        if getattr(call, "__name__", "") == want and hit():
            die()
        return txn(self, call, *args)
    app.Worker._txn = _txn
elif POINT == "after_commit":
    save_committed = local_copies.LocalCopies.save_committed
    def saving(self, writes, changelog_end):
        if any(writes.values()) and hit():
            die()
        return save_committed(self, writes, changelog_end)
    local_copies.LocalCopies.save_committed = saving
else:  # mid_save (the save thread's, after a commit) or restore_save (the restore's)
    save = localstore.LocalStore.save
    class Db:  # the store's connection, dying at COMMIT
        def __init__(self, db, path, offset):
            self.db, self.path, self.offset = db, path, offset
        def executemany(self, *args):
            return self.db.executemany(*args)
        def execute(self, sql, *args):
            if sql == "COMMIT":
                die(path=self.path, offset=self.offset)
            return self.db.execute(sql, *args)
    def saving(self, writes, next_offset):
        on_save_thread = threading.current_thread().name == "streamfs-local-save"
        if on_save_thread == (POINT == "mid_save") and writes and hit():
            offset = dict(self.db.execute("SELECT name, value FROM meta")).get("next_offset")
            self.db.execute("PRAGMA cache_size=1")  # dirty pages spill into the WAL uncommitted
            self.db = Db(self.db, str(self.path), offset)
        return save(self, writes, next_offset)
    localstore.LocalStore.save = saving

from streamfs.cli import main
sys.argv = ["streamfs", "worker"]
main()
'''


def _kill_at(bootstrap: str, prefix: str, app_id: str, tmp_path: Path, point: str, nth: int,
             env: dict) -> dict:
    """Run the launcher until it dies at ``point``; what it noted there."""
    launcher, mark = tmp_path / "kill_at.py", tmp_path / f"{point}.json"
    launcher.write_text(LAUNCHER)
    killed = WorkerProcess(bootstrap, prefix, app_id, tmp_path / f"{point}.log",
                           tmp_path / "data", **env)
    killed.env["STREAMFS_WEB_PORT"] = str(free_port())
    with open(killed.log_path, "ab") as log:
        killed.proc = subprocess.Popen([sys.executable, str(launcher), point, str(nth),
                                        str(mark)], env=killed.env, stdout=log,
                                       stderr=subprocess.STDOUT, cwd=Path(__file__).parents[2])
    try:
        code = killed.proc.wait(240)
    finally:
        killed.kill()
    assert code == 9 and mark.exists(), (point, code, killed.log_tail(30))
    return json.loads(mark.read_text())


def _copies(data: Path) -> dict[str, tuple[int | None, int]]:
    """Each local copy's file name: the changelog offset it holds up to, and its records."""
    found = {}
    for path in data.rglob("*.sqlite"):
        with sqlite3.connect(path) as db:
            offset = dict(db.execute("SELECT name, value FROM meta")).get("next_offset")
            found[path.name] = (offset, db.execute("SELECT count(*) FROM kv").fetchone()[0])
    return found


def _log_ends(kafka_config: dict, changelogs: list, partitions: int,
              isolation: str = "read_uncommitted") -> dict[tuple[str, int], int]:
    """Where each changelog partition's log ends: records of open transactions included, or
    (``read_committed``) the stable end, before the first record of an open transaction."""
    probe = Consumer({**kafka_config, "group.id": "kill-probe", "isolation.level": isolation})
    try:
        return {(name, p): probe.get_watermark_offsets(TopicPartition(name, p), 10, False)[1]
                for name in changelogs for p in range(partitions)}
    finally:
        probe.close()


def _committed_records(kafka_config: dict, name: str, p: int, start: int, end: int) -> int:
    """The committed records of changelog partition ``name``/``p`` in ``[start, end)``."""
    if start >= end:
        return 0
    reader = Consumer({**kafka_config, "group.id": "kill-count", "enable.partition.eof": True,
                       "isolation.level": "read_committed"})
    reader.assign([TopicPartition(name, p, start)])
    count = 0
    try:
        while True:
            msg = reader.poll(30)
            assert msg is not None, (name, p, start, end)
            if msg.offset() >= end:  # a record past it, or the partition's end
                return count
            if msg.error() is None:
                count += 1
    finally:
        reader.close()


def _dead_letters(kafka_config: dict, topic) -> list[dict]:
    reader = Consumer({**kafka_config, "group.id": "kill-dlq", "enable.partition.eof": True,
                       "isolation.level": "read_committed"})
    reader.assign([TopicPartition(topic.name, p, 0) for p in range(topic.partitions)])
    letters, ended = [], set()
    try:
        while len(ended) < topic.partitions:
            msg = reader.poll(30)
            assert msg is not None
            if msg.error() is not None:
                ended.add(msg.partition())
            else:
                letters.append(decode(msg.value()))
    finally:
        reader.close()
    return letters


@pytest.mark.parametrize("kills", [
    [("before_offsets", 6)],  # results and state records produced, offsets not sent
    [("before_commit", 6)],  # offsets sent: the restart waits for the transaction's abort
    [("after_commit", 6)],  # committed, the local copies not saved
    [("mid_save", 6)],  # a local copy's save half-written
    [("after_commit", 6), ("restore_save", 1)],  # then killed saving the restored tail
], ids=lambda kills: "-then-".join(point for point, _ in kills))
def test_a_kill_at_each_point_of_the_commit_path(kafka_config, topic_prefix, make_worker,
                                                 tmp_path, kills):
    cases = mixed_workload(7, prefix="k")
    refs = {c.stream: reference_versions(c) for c in cases}
    publish(kafka_config, topic_prefix, cases, interleave(cases))
    topics = load_catalogue(topic_prefix)
    app_id = f"app-{uuid.uuid4().hex[:8]}"
    changelogs = [spec.name for spec in changelog_specs(
        app_id, topics["features"].partitions, 1, Settings().max_message_bytes).values()]
    # static membership: the restart takes the dead worker's place at once, while its open
    # transaction still holds back the changelog (or, with its offsets sent, the offsets)
    env = {"STREAMFS_INSTANCE_ID": "w0", "STREAMFS_TRANSACTION_TIMEOUT": "5",
           "STREAMFS_BATCH_MESSAGES": "4"}
    for point, nth in kills:
        # killed with a transaction open, it leaves it open for longer than the restart takes
        noted = _kill_at(kafka_config["bootstrap.servers"], topic_prefix, app_id, tmp_path,
                         point, nth, {**env, "STREAMFS_TRANSACTION_TIMEOUT": "30"}
                         if point.startswith("before") else env)
    copies = _copies(tmp_path / "data")
    ends = _log_ends(kafka_config, changelogs, topics["features"].partitions)
    if point.startswith("before"):  # its state records wait in that transaction
        stable = _log_ends(kafka_config, changelogs, topics["features"].partitions,
                           "read_committed")
        assert any(stable[key] < end for key, end in ends.items()), (stable, ends)
    if point in ("mid_save", "restore_save"):
        # the save had written its rows (SQLite's transaction open) when it died: none counts
        name = Path(noted["path"]).name
        assert copies[name][0] == noted["offset"], (noted, copies[name])
    if point == "after_commit":  # the last batch is only in the changelog
        assert any(offset is not None and offset < ends[(name, p)]
                   for name, p in ends
                   for offset, _ in [copies.get(f"{name}-{p}.sqlite", (None, 0))]), copies

    worker = make_worker(topic_prefix, app_id, **env)
    worker.wait_ready(120)
    metrics = urllib.request.urlopen(f"http://127.0.0.1:{worker.env['STREAMFS_WEB_PORT']}"
                                     "/metrics", timeout=10).read().decode()
    restored = {source: float(n) for source, n in re.findall(
        r'streamfs_restored_records_total\{source="(\w+)"\} ([0-9.e+]+)', metrics)}
    finals = wait_finals(kafka_config, topic_prefix, list(refs), timeout=300)
    with SelectionReader(kafka_config, topics["selected"].name) as reader:
        everything = list(reader.updates(to_end=True))
    for case in cases:
        results = [r for r in everything if r["stream"] == case.stream]
        assert [r["version"] for r in results] == list(range(1, len(refs[case.stream]) + 1)), (
            case.stream, worker.log_tail(30))
        assert [_strip(r) for r in results] == refs[case.stream], case.stream
        assert features_of(finals[case.stream][-1]) == case.expected_features(), case.stream
    assert _dead_letters(kafka_config, topics["dead_letter"]) == []
    # the copies were trusted for what they held, and the changelog read for the committed
    # records after them (the dead transaction's, aborted, not among them)
    local = sum(rows for offset, rows in copies.values() if offset is not None)
    tail = sum(_committed_records(kafka_config, name, p, (copies.get(f"{name}-{p}.sqlite")
                                                          or (0,))[0] or 0, end)
               for (name, p), end in ends.items())
    assert (restored.get("local"), restored.get("changelog")) == (local, tail), (
        restored, local, tail, copies)
    log = worker.log_path.read_text()
    assert not re.search(r"WARNING|ERROR|Traceback", log), log
    assert f"restored {local} records from local copies and {tail} from the changelog" in log
