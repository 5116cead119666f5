"""The worker's local copies: when a copy is trusted at a restore, and what a failure stops
(no broker: the changelog's offsets and topic id are given)."""

import logging
import sqlite3

import pytest

from streamfs.worker.local_copies import LocalCopies
from streamfs.worker.localstore import LocalStore

KEY = ("features", 0)


@pytest.fixture
def copies(tmp_path):
    copies = LocalCopies(str(tmp_path), {"features": "app-features-changelog"})
    yield copies
    copies.close()


def _saved(copies, records, end, topic_id="T1"):
    """A copy saved from the changelog with id ``topic_id`` up to ``end``, then released."""
    assert copies.load(KEY, {}, 0, 0, topic_id) == 0  # opened, nothing saved yet
    copies.save(KEY, records, end)
    copies.release(KEY)


def test_a_copy_of_the_same_topic_within_its_offsets_is_loaded(copies):
    _saved(copies, {"s\x1fh": b"header"}, 12)
    store = {}
    assert copies.load(KEY, store, 3, 20, "T1") == 12  # the changelog read on from there
    assert store == {"s\x1fh": b"header"}


@pytest.mark.parametrize("low, high, topic_id, why", [
    (0, 20, "T2", "saved from topic id T1, the topic's id is T2"),  # the topic made again
    (13, 20, "T1", "offset 12, changelog 13..20"),  # compacted or deleted past it
    (0, 11, "T1", "offset 12, changelog 0..11"),  # a shorter log: another topic
])
def test_a_copy_that_cannot_be_trusted_is_emptied(copies, caplog, low, high, topic_id, why):
    _saved(copies, {"s\x1fh": b"header"}, 12)
    store = {}
    with caplog.at_level(logging.INFO, logger="streamfs.worker"):
        assert copies.load(KEY, store, low, high, topic_id) == 0  # the whole changelog
    assert store == {} and why in caplog.text
    assert copies.stores[KEY].load()[1] is None  # reset: not trusted at the next start either


def test_a_copy_held_by_another_process_is_not_used(copies, tmp_path, caplog):
    other = LocalStore.open(tmp_path, "app-features-changelog", 0)  # another worker's lock
    try:
        with caplog.at_level(logging.WARNING, logger="streamfs.worker"):
            assert copies.load(KEY, {}, 0, 5, "T1") == 0
        assert not copies.usable(KEY) and "held by another process" in caplog.text
        copies.save_committed({KEY: {"k": b"v"}}, {("app-features-changelog", 0): 5})
        copies.settle()  # nothing was handed to the saves
        assert other.load()[1] is None
    finally:
        other.close()


def test_a_commit_without_a_delivery_report_drops_the_copy(copies, caplog):
    """A copy cannot say where it ends without the changelog offset of its last record: it is
    emptied and not used until the next assignment."""
    _saved(copies, {"s\x1fh": b"header"}, 12)
    assert copies.load(KEY, {}, 0, 12, "T1") == 12
    with caplog.at_level(logging.WARNING, logger="streamfs.worker"):
        copies.save_committed({KEY: {"s\x1fc": b"columns"}}, {})
    assert not copies.usable(KEY) and "no changelog offset" in caplog.text
    again = LocalStore.open(copies.directory, "app-features-changelog", 0)
    assert again.load()[1] is None  # emptied before it was let go
    again.close()


def test_a_failed_save_stops_the_copy_until_the_next_assignment(copies, monkeypatch):
    _saved(copies, {}, 0)
    assert copies.load(KEY, {}, 0, 0, "T1") == 0
    calls = []

    def disk_full(self, writes, next_offset):
        calls.append(next_offset)
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(LocalStore, "save", disk_full)
    copies.save_committed({KEY: {"a": b"1"}}, {("app-features-changelog", 0): 3})
    copies.save_committed({KEY: {"b": b"2"}}, {("app-features-changelog", 0): 4})
    copies.settle()
    assert calls == [3]  # the save after the failed one was skipped
    assert not copies.usable(KEY)
