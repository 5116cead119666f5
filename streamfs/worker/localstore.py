"""A partition's state mirrored on local disk, so that a restart reads the changelog's tail only.

The changelog topic stays the source of truth. After each committed transaction the worker
writes the records it committed for a partition, and the changelog offset they end at, into
one SQLite file per changelog partition (one SQLite transaction: the file is always the
changelog's state up to its recorded offset). On assignment the worker loads the file and reads
the changelog from that offset on: records other owners committed meanwhile, or the last
batch if the worker died between the Kafka commit and the local write.

A file is used only while it can be trusted:

* an exclusive ``flock`` while the partition is owned: a paused worker that still holds the
  file (a zombie) cannot interleave its writes with the new owner's, which then restores from
  the changelog alone;
* it must have been saved from the changelog topic of the same id: another cluster's topic of
  the same name (a data directory shared between a development broker and a staging
  cluster), or the topic deleted and re-created, holds other records at the same offsets;
* its offset must lie within the changelog partition's current offsets (a recreated topic
  starts again at 0);
* it must be younger than the changelog's ``delete.retention.ms``: older, the tombstones it
  relies on may have been compacted away, and keys deleted since would come back.

Anything else: the file is emptied and the state restored from the whole changelog.

Saves run on one background thread (:class:`SaveQueue`), in order, so the next batch does not
wait for the disk; the worker waits for them before it reads, resets or closes a file.
"""

from __future__ import annotations

import fcntl
import logging
import os
import queue
import re
import sqlite3
import threading
import time
from pathlib import Path
from typing import Hashable

log = logging.getLogger("streamfs.worker")

#: SQLite's words for a file that is not a sound database (not one for a file it may not open)
DAMAGED = re.compile(r"not a database|malformed")

#: the size above which a save empties the write-ahead log. SQLite reuses its WAL file without
#: shrinking it, so one large save (a restore writes the partition's whole state at once) left
#: a WAL of the state's size beside the file for the whole assignment: twice the disk.
WAL_LIMIT = 4 << 20


class LocalStore:
    """One changelog partition's records and the offset up to which they hold."""

    def __init__(self, path: Path, lock_fd: int) -> None:
        self.path = path
        self._lock_fd = lock_fd
        #: the id of the changelog topic the records come from, written with every save
        self.topic_id: str | None = None
        # explicit BEGIN/COMMIT; saved from the SaveQueue's thread, never two threads at once
        self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        # WAL: a crash keeps the last committed SQLite transaction; synchronous=NORMAL may lose
        # the latest ones on power loss, which only means a longer changelog tail.
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute("CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY, value BLOB NOT NULL)")
        self.db.execute("CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value)")

    @classmethod
    def open(cls, directory: str | Path, topic: str, partition: int) -> "LocalStore | None":
        """The file of ``topic``/``partition`` under ``directory``, locked for this process;
        None if another process holds it."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"{topic}-{partition}.sqlite"
        fd = os.open(f"{path}.lock", os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        try:
            try:
                return cls(path, fd)
            except sqlite3.DatabaseError as exc:
                if not DAMAGED.search(str(exc)):
                    raise
                # a copy of the changelog, so made anew: kept, it was never used again
                for damaged in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
                    damaged.unlink(missing_ok=True)
                log.warning("local state file %s was damaged (%s): replaced by a new one, "
                            "filled from the changelog", path, exc)
                return cls(path, fd)
        except BaseException:
            os.close(fd)
            raise

    def load(self) -> tuple[dict[str, bytes], int | None, float | None, str | None]:
        """The records, the changelog offset to read on from (None: nothing saved), the
        wall-clock time of the last save and the id of the changelog topic saved from (None
        in files of workers before session 49)."""
        meta = dict(self.db.execute("SELECT name, value FROM meta"))
        if "next_offset" not in meta:
            return {}, None, None, None
        records = dict(self.db.execute("SELECT key, value FROM kv"))
        return records, int(meta["next_offset"]), float(meta["saved_at"]), meta.get("topic_id")

    def save(self, writes: dict[str, bytes | None], next_offset: int) -> None:
        """Apply ``writes`` (None deletes) and record that the file now holds the changelog up
        to ``next_offset`` (exclusive), atomically."""
        db = self.db
        db.execute("BEGIN")
        try:
            db.executemany("DELETE FROM kv WHERE key = ?",
                           [(k,) for k, v in writes.items() if v is None])
            db.executemany("INSERT OR REPLACE INTO kv (key, value) VALUES (?, ?)",
                           [(k, v) for k, v in writes.items() if v is not None])
            db.executemany("INSERT OR REPLACE INTO meta (name, value) VALUES (?, ?)",
                           [("next_offset", next_offset), ("saved_at", time.time()),
                            ("topic_id", self.topic_id)])
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        self._bound_wal()

    def _bound_wal(self) -> None:
        try:
            size = os.path.getsize(f"{self.path}-wal")
        except FileNotFoundError:
            return
        if size > WAL_LIMIT:
            # copies the WAL into the file and truncates it; the saved state is unchanged
            self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def reset(self) -> None:
        """Forget everything (the file cannot be trusted)."""
        self.db.execute("BEGIN")
        self.db.execute("DELETE FROM kv")
        self.db.execute("DELETE FROM meta")
        self.db.execute("COMMIT")

    def close(self) -> None:
        self.db.close()
        fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
        os.close(self._lock_fd)


class SaveQueue:
    """Runs :meth:`LocalStore.save` calls on one background thread, in submission order.

    Once a save of a key has failed, later saves of that key are skipped: a save on top of a
    failed one would claim a later offset while missing records. :meth:`wait` returns the
    failures; until then nobody else may touch the stores that have saves pending.
    """

    def __init__(self, max_pending: int = 8) -> None:
        self._queue: queue.Queue = queue.Queue(max_pending)  # full: the worker waits (disk-bound)
        self._lock = threading.Lock()
        self._failures: dict[Hashable, BaseException] = {}
        threading.Thread(target=self._run, name="streamfs-local-save", daemon=True).start()

    def submit(self, key: Hashable, store: LocalStore, writes: dict[str, bytes | None],
               next_offset: int) -> None:
        self._queue.put((key, store, writes, next_offset))

    @property
    def failed(self) -> bool:
        with self._lock:
            return bool(self._failures)

    def wait(self) -> dict[Hashable, BaseException]:
        """Block until every submitted save has run; return (and forget) the failed keys."""
        self._queue.join()
        with self._lock:
            failures, self._failures = self._failures, {}
        return failures

    def _run(self) -> None:
        while True:
            key, store, writes, next_offset = self._queue.get()
            try:
                with self._lock:
                    skip = key in self._failures
                if not skip:
                    store.save(writes, next_offset)
            except Exception as exc:  # noqa: BLE001 - any failure drops the copy; the thread lives on
                with self._lock:
                    self._failures[key] = exc
            finally:
                self._queue.task_done()
