"""The local copy of a partition's state, without a broker."""

import sqlite3

from streamfs.worker.localstore import LocalStore


def test_saved_records_and_offset_load_back(tmp_path):
    store = LocalStore.open(tmp_path, "app-features-streams-changelog", 3)
    assert store.load() == ({}, None, None)  # nothing saved yet
    store.save({"a": b"1", "b": b"2"}, 10)
    store.save({"a": None, "c": b"3"}, 14)  # None deletes
    store.close()
    again = LocalStore.open(tmp_path, "app-features-streams-changelog", 3)
    records, offset, saved_at = again.load()
    assert records == {"b": b"2", "c": b"3"} and offset == 14 and saved_at > 0
    again.reset()
    assert again.load() == ({}, None, None)
    again.close()


def test_one_owner_at_a_time(tmp_path):
    first = LocalStore.open(tmp_path, "t", 0)
    assert first is not None
    assert LocalStore.open(tmp_path, "t", 0) is None  # held (a paused owner keeps it)
    assert LocalStore.open(tmp_path, "t", 1) is not None  # other partitions are free
    first.close()
    assert LocalStore.open(tmp_path, "t", 0) is not None  # released on close


def test_a_failed_save_leaves_the_previous_state(tmp_path):
    store = LocalStore.open(tmp_path, "t", 0)
    store.save({"a": b"1"}, 5)
    try:
        store.save({"b": b"2", "c": object()}, 9)  # not bytes: SQLite refuses mid-way
    except (sqlite3.Error, TypeError, ValueError):
        pass
    else:
        raise AssertionError("the bad value was accepted")
    assert store.load()[:2] == ({"a": b"1"}, 5)
    store.close()
