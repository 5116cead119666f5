"""The restore's reading of a changelog, where the broker's answers are given (no broker; the
restores of a running worker: test_exactly_once.py, test_restore_deadline.py,
test_local_state.py)."""

from types import SimpleNamespace

import pytest
from confluent_kafka import KafkaError

from streamfs.broker import AccessDenied
from streamfs.settings import Settings
from streamfs.worker import restore as restore_module
from streamfs.worker.broker_contact import BrokerContact
from streamfs.worker.health import Health
from streamfs.worker.local_copies import LocalCopies
from streamfs.worker.restore import Restore

KEY = ("features", 0)


def _restore(settings: Settings) -> Restore:
    """A restore of partition 0 of changelog ``cl`` under way: its state empty so far, no local
    copy opened."""
    changelog = {"features": "cl"}
    restore = Restore(settings, changelog, LocalCopies("unused", changelog),
                      BrokerContact(settings, Health(), ["p.features"],
                                    {"selected": "p.selected"}, lambda: True), None, {})
    restore.partitions = {KEY: SimpleNamespace(store={})}
    restore.changelog_high = {KEY: 0}
    return restore


def test_a_restore_that_keeps_reading_is_not_cut_short_by_the_marker_deadline(monkeypatch):
    """The restore's deadline is for committed records whose commit markers do not come: a
    changelog that takes longer than it to read, record after record (a large one, a slow
    network), is read to its end. The reader here takes 10 s of a simulated clock per fetch,
    five fetches to the end, against the deadline of a 20 s transaction timeout (30 s)."""

    clock = SimpleNamespace(now=0.0)
    fetches = [[(offset, f"k{offset}".encode())] for offset in range(5)] + [[(5, None)]]

    class SlowReader:
        """The restore's consumer: one record a fetch, then the partition's end."""

        def assign(self, partitions: list) -> None:
            assert [(tp.topic, tp.partition, tp.offset) for tp in partitions] == [("cl", 0, 0)]

        def consume(self, num_messages: int, timeout: float) -> list:
            clock.now += 10.0  # the fetch's time on the wire
            if not fetches:
                return []
            return [SimpleNamespace(
                topic=lambda: "cl", partition=lambda: 0, offset=lambda o=offset: o,
                error=lambda k=key: None if k is not None else KafkaError(
                    KafkaError._PARTITION_EOF),
                key=lambda k=key: k, value=lambda: b"v") for offset, key in fetches.pop(0)]

        def close(self) -> None:
            pass

    monkeypatch.setattr(restore_module, "make_client", lambda cls, conf: SlowReader())
    monkeypatch.setattr(restore_module, "time", SimpleNamespace(monotonic=lambda: clock.now))
    restore = _restore(Settings(transaction_timeout=20.0))
    assert restore.read_tails({KEY: 0}, {KEY: 5}) == 5
    assert sorted(restore.partitions[KEY].store) == [f"k{o}" for o in range(5)]
    assert restore.changelog_high[KEY] == 5


def test_the_restore_passes_over_its_unused_group_and_stops_on_a_denied_changelog(monkeypatch):
    """On a cluster with ACLs: the restore's consumer (its own group, never used: it reads from
    set offsets) got an error event for that group, without a topic, and the worker exited 70
    with a KeyError on every restart; a changelog it may not read exited 70 with a traceback."""

    def event(code, topic=None, offset=0):
        return SimpleNamespace(topic=lambda: topic, partition=lambda: 0, offset=lambda: offset,
                               error=lambda: KafkaError(code, "denied"), key=lambda: None,
                               value=lambda: None)

    record = SimpleNamespace(topic=lambda: "cl", partition=lambda: 0, offset=lambda: 0,
                             error=lambda: None, key=lambda: b"k", value=lambda: b"v")

    class Reader:
        def __init__(self, fetches):
            self.fetches = fetches

        def assign(self, partitions: list) -> None:
            pass

        def consume(self, num_messages: int, timeout: float) -> list:
            return self.fetches.pop(0) if self.fetches else []

        def close(self) -> None:
            pass

    def restore(fetches):
        monkeypatch.setattr(restore_module, "make_client", lambda cls, conf: Reader(fetches))
        settings = Settings()
        settings.app_id = "a"
        restore = _restore(settings)
        return restore, restore.read_tails({KEY: 0}, {KEY: 1})

    restored, records = restore([[event(KafkaError.GROUP_AUTHORIZATION_FAILED), record],
                               [event(KafkaError._PARTITION_EOF, "cl", 1)]])
    assert records == 1 and restored.partitions[KEY].store == {"k": b"v"}
    with pytest.raises(AccessDenied, match="restoring its state from cl .*its ACLs must allow "
                                           "READ on the input topics"):
        restore([[event(KafkaError.TOPIC_AUTHORIZATION_FAILED, "cl")]])


def test_a_restore_that_gives_up_short_of_its_target_stops_the_local_copy(monkeypatch, caplog):
    """Records claimed by the committed offsets that never come (the log ends before them for
    every reader) are restored without, once the wait is over; the partition's local copy,
    loaded from a point before them, then stops being saved: a save after the next commit
    would claim the records not read. The reader: records 0 and 1, then nothing."""
    clock = SimpleNamespace(now=0.0)
    fetches = [[0, 1]]

    class ShortReader:
        def assign(self, partitions: list) -> None:
            pass

        def consume(self, num_messages: int, timeout: float) -> list:
            clock.now += 10.0
            return [SimpleNamespace(topic=lambda: "cl", partition=lambda: 0,
                                    offset=lambda o=o: o, error=lambda: None,
                                    key=lambda o=o: f"k{o}".encode(), value=lambda: b"v")
                    for o in (fetches.pop(0) if fetches else [])]

        def close(self) -> None:
            pass

    monkeypatch.setattr(restore_module, "make_client", lambda cls, conf: ShortReader())
    monkeypatch.setattr(restore_module, "time", SimpleNamespace(monotonic=lambda: clock.now))
    restore = _restore(Settings(transaction_timeout=20.0))
    monkeypatch.setattr(restore, "held_records", lambda pending, targets: None)  # not there
    dropped = []
    monkeypatch.setattr(restore.local, "usable", lambda key: True)
    monkeypatch.setattr(restore.local, "drop", lambda key, exc: dropped.append((key, str(exc))))
    with caplog.at_level("ERROR", logger="streamfs.worker"):
        assert restore.read_tails({KEY: 0}, {KEY: 5}) == 2
    assert sorted(restore.partitions[KEY].store) == ["k0", "k1"]  # what is there
    assert dropped == [(KEY, "restore incomplete")]
    assert "changelog cl:0 ends before offset 5, where it ended when the input offsets were " \
           "committed: restored what is there" in caplog.text
