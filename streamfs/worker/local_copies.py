"""The worker's local copies of its partitions' state: one :class:`LocalStore` per changelog
partition it owns, opened and judged when the partition's state is restored, saved after each
commit (off the batch loop, on the :class:`SaveQueue`'s thread), and dropped for the rest of
the assignment when one fails. :mod:`streamfs.worker.localstore` says when a copy is trusted.
"""

from __future__ import annotations

import logging
import sqlite3
import time

from streamfs.topics import CHANGELOG_DELETE_RETENTION_MS
from streamfs.worker.localstore import LocalStore, SaveQueue

log = logging.getLogger("streamfs.worker")

Key = tuple[str, int]  # (role, partition)


class LocalCopies:
    """The copies under ``directory`` of the changelog partitions named by ``changelog``
    (role -> changelog topic), keyed by (role, partition). A key maps to None while its copy
    is not used: held by another process, unwritable, or failed in this assignment."""

    def __init__(self, directory: str, changelog: dict[str, str]) -> None:
        self.directory = directory
        self.changelog = changelog
        self.stores: dict[Key, LocalStore | None] = {}
        self.saves = SaveQueue()  # the saves, off the batch loop

    def usable(self, key: Key) -> bool:
        """Whether ``key`` has a copy in use."""
        return self.stores.get(key) is not None

    def load(self, key: Key, store: dict[str, bytes], low: int, high: int,
             topic_id: str | None) -> int:
        """Fill ``store`` from the partition's copy if it can be trusted against the changelog
        as it is now (its offsets ``low``..``high``, its topic id ``topic_id``); the changelog
        offset to restore on from (0 without a usable copy: from the beginning)."""
        topic = self.changelog[key[0]]
        if key not in self.stores:
            try:
                self.stores[key] = LocalStore.open(self.directory, topic, key[1])
            except (OSError, sqlite3.Error) as exc:  # unwritable or damaged: go without
                log.warning("local state of %s:%d unavailable (%s): restoring it from the "
                            "changelog alone", topic, key[1], exc)
                self.stores[key] = None
            else:
                if self.stores[key] is None:
                    log.warning("local state of %s:%d is held by another process: restoring it "
                                "from the changelog alone", topic, key[1])
        local = self.stores[key]
        if local is None:
            return 0
        try:
            records, offset, saved_at, saved_from = local.load()
        except sqlite3.Error as exc:
            self.drop(key, exc)
            return 0
        local.topic_id = topic_id  # what its saves come from from now on
        if offset is None:
            return 0
        if saved_from is None or saved_from != local.topic_id:
            # another cluster's topic of that name, or this one deleted and made again: other
            # records at the same offsets (a copy of the first had stood for the second)
            log.info("local state of %s:%d not usable (saved from topic id %s, the topic's id "
                     "is %s): restoring from the changelog", topic, key[1], saved_from,
                     local.topic_id)
            self.reset(key)
            return 0
        max_age = CHANGELOG_DELETE_RETENTION_MS / 1000 - 3600
        if not low <= offset <= high or time.time() - saved_at > max_age:
            log.info("local state of %s:%d not usable (offset %d, changelog %d..%d, %.0f s old): "
                     "restoring from the changelog", topic, key[1], offset, low,
                     high, time.time() - saved_at)
            self.reset(key)
            return 0
        store.update(records)
        return offset

    def save_committed(self, writes: dict[Key, dict[str, bytes | None]],
                       changelog_end: dict[tuple[str, int], int]) -> None:
        """After a commit: the committed records into each partition's copy, with the
        changelog offset they end at (``changelog_end``, by changelog topic and partition, from
        the delivery reports, which arrive before the commit returns)."""
        for (role, p), records in writes.items():
            local = self.stores.get((role, p))
            if local is None or not records:
                continue
            end = changelog_end.get((self.changelog[role], p))
            if end is None:  # cannot say where the copy ends: stop trusting it
                log.warning("no changelog offset for %s:%d: dropping its local copy",
                            self.changelog[role], p)
                self.settle()
                if self.stores.get((role, p)) is not None:
                    self.reset((role, p))
                    self.drop((role, p), RuntimeError("no delivery report"))
                continue
            self.saves.submit((role, p), local, records, end)
        if self.saves.failed:
            self.settle()

    def settle(self) -> None:
        """Wait for the pending saves; drop the copies whose save failed."""
        for key, exc in self.saves.wait().items():
            self.drop(key, exc)

    def save(self, key: Key, records: dict[str, bytes | None], end: int) -> None:
        """Save now, on this thread (restores: no saves pending)."""
        try:
            self.stores[key].save(records, end)
        except (OSError, sqlite3.Error) as exc:
            self.drop(key, exc)

    def reset(self, key: Key) -> None:
        try:
            self.stores[key].reset()
        except sqlite3.Error as exc:
            self.drop(key, exc)

    def drop(self, key: Key, exc: Exception) -> None:
        """Stop using a copy that failed (disk full, damaged file). What it holds is still the
        changelog up to its offset, but a later save on top of a failed one would skip
        records: no more saves until the partition is assigned again."""
        log.warning("local state of %s:%d failed (%s): not used until the next assignment",
                    self.changelog[key[0]], key[1], exc)
        local = self.stores.get(key)
        self.stores[key] = None
        if local is not None:
            try:
                local.close()
            except sqlite3.Error:
                pass

    def release(self, key: Key) -> None:
        """Close the copy of a partition revoked (its next owner may be another worker on this
        host), its saves settled (:meth:`settle`) before."""
        local = self.stores.pop(key, None)
        if local is not None:
            local.close()

    def close(self) -> None:
        """The pending saves settled, every copy closed."""
        self.settle()
        for local in self.stores.values():
            if local is not None:
                local.close()
