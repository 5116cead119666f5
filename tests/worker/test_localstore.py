"""The local copy of a partition's state, without a broker."""

import sqlite3

from streamfs.worker.localstore import WAL_LIMIT, LocalStore, SaveQueue


def test_saved_records_and_offset_load_back(tmp_path):
    store = LocalStore.open(tmp_path, "app-features-streams-changelog", 3)
    assert store.load() == ({}, None, None, None)  # nothing saved yet
    store.topic_id = "Zx9AbCdEfGhIjKlMnOpQrS"
    store.save({"a": b"1", "b": b"2"}, 10)
    store.save({"a": None, "c": b"3"}, 14)  # None deletes
    store.close()
    again = LocalStore.open(tmp_path, "app-features-streams-changelog", 3)
    records, offset, saved_at, topic_id = again.load()
    assert records == {"b": b"2", "c": b"3"} and offset == 14 and saved_at > 0
    assert topic_id == "Zx9AbCdEfGhIjKlMnOpQrS"
    again.reset()
    assert again.load() == ({}, None, None, None)
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


def test_save_queue_keeps_order_and_skips_saves_after_a_failure(tmp_path):
    class DiskFullOnce:
        calls: list[int] = []

        def save(self, writes, next_offset):
            self.calls.append(next_offset)
            if len(self.calls) == 1:
                raise sqlite3.OperationalError("database or disk is full")

    good, bad = LocalStore.open(tmp_path, "t", 0), DiskFullOnce()
    saves = SaveQueue(max_pending=2)  # fewer slots than saves: submit waits, nothing is lost
    saves.submit("bad", bad, {"k": b"1"}, 1)
    for offset in range(1, 6):
        saves.submit("good", good, {"k": str(offset).encode()}, offset)
    saves.submit("bad", bad, {"k": b"2"}, 2)  # would be written past the failed save
    failures = saves.wait()
    assert list(failures) == ["bad"] and isinstance(failures["bad"], sqlite3.Error)
    assert bad.calls == [1]
    assert saves.wait() == {}  # reported once
    records, offset, _, _ = good.load()
    assert records == {"k": b"5"} and offset == 5  # the last of the saves, in order
    good.close()


def test_a_damaged_file_is_replaced_by_a_new_one(tmp_path, caplog):
    """A file that is not a database was warned about at every start ("restoring it from
    the changelog alone") and kept: that partition never had a local copy again."""
    import logging

    (tmp_path / "t-0.sqlite").write_text("not a database, some text\n" * 100)
    with caplog.at_level(logging.WARNING, logger="streamfs.worker"):
        store = LocalStore.open(tmp_path, "t", 0)
    assert store is not None and store.load() == ({}, None, None, None)
    assert "was damaged (file is not a database): replaced by a new one" in caplog.text
    store.save({"a": b"1"}, 5)
    store.close()
    again = LocalStore.open(tmp_path, "t", 0)
    assert again.load()[:2] == ({"a": b"1"}, 5)
    again.close()


def test_a_large_save_leaves_no_large_write_ahead_log(tmp_path):
    store = LocalStore.open(tmp_path, "t", 0)
    state = {f"k{i}": bytes([i % 256]) * 100_000 for i in range(3 * WAL_LIMIT // 100_000)}
    store.save(state, 7)  # as a restore saves a partition's whole state
    wal = tmp_path / "t-0.sqlite-wal"
    assert not wal.exists() or wal.stat().st_size <= WAL_LIMIT
    assert (tmp_path / "t-0.sqlite").stat().st_size >= len(state) * 100_000  # the records are in
    for i in range(60):  # and so do many small ones
        store.save({f"k{i}": b"x" * 100_000}, 8 + i)
        assert not wal.exists() or wal.stat().st_size <= WAL_LIMIT + 200_000
    store.close()
    records, offset, _, _ = LocalStore.open(tmp_path, "t", 0).load()
    assert offset == 67 and len(records) == len(state) and records["k0"] == b"x" * 100_000
    assert records["k99"] == state["k99"]
