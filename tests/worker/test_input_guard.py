"""The guard around faust's consumer, against faust's real message and flow-control types."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest
from faust.types.tuples import TP, ConsumerMessage
from mode.utils.queues import FlowControlEvent

from streamfs.worker.input_guard import InputGuard

IN, OTHER = "in.features", "changelog"


class ConsumerStub:
    """The members of a faust consumer that the guard wraps, with faust's semantics."""

    def __init__(self, assigned: set[TP]) -> None:
        self.committable: list[tuple[str, int]] = []
        self.gaps: list[tuple[TP, int, int]] = []
        self._unacked_messages: set = set()
        self._assigned = assigned
        self._paused_partitions: set[TP] = set()
        self.seeks: list[set[TP]] = []  # the active partitions during each seek
        self.seeks_to: list[tuple[TP, int]] = []
        self._committed_offset: dict[TP, int | None] = {}
        self.fetched_with: list = []
        self.next_records: dict = {}
        self.flow_active = True
        self.app = SimpleNamespace(consumer_generation_id=1)

    def assignment(self) -> set[TP]:
        return set(self._assigned)

    def active(self) -> set[TP]:
        return self._assigned - self._paused_partitions

    def pause_partitions(self, tps) -> None:
        self._paused_partitions |= set(tps)

    def resume_partitions(self, tps) -> None:
        self._paused_partitions -= set(tps)

    async def perform_seek(self) -> None:
        self.seeks.append(self.active())

    async def seek(self, tp: TP, offset: int) -> None:
        self.seeks_to.append((tp, offset))

    async def _getmany(self, active_partitions, timeout: float) -> dict:
        self.fetched_with.append(active_partitions)
        return self.next_records

    async def getmany(self, timeout: float):
        """faust's: fetch, then pass on the records of partitions still active."""
        records = await self._getmany(active_partitions=self.active(), timeout=timeout)
        for tp, recs in records.items():
            if tp in self.active():
                for record in recs:
                    yield tp, record

    async def _add_gap(self, tp: TP, offset_from: int, offset_to: int) -> None:
        self.gaps.append((tp, offset_from, offset_to))

    def ack(self, message) -> bool:
        message.acked = True
        self._unacked_messages.discard(message)
        self.committable.append((message.topic, message.offset))
        return True


def _message(topic: str, offset: int) -> ConsumerMessage:
    return ConsumerMessage(topic, 0, offset, 0.0, 0, None, b"k", b"v", None)


def _guarded(assigned: set[TP]) -> tuple[ConsumerStub, InputGuard, FlowControlEvent]:
    consumer, flow = ConsumerStub(assigned), FlowControlEvent()  # faust's: starts suspended
    guard = InputGuard([IN])
    guard.install(consumer, flow)
    guard.install(consumer, flow)  # idempotent: both agents install the same guard
    return consumer, guard, flow


def test_only_processed_input_events_reach_the_commit_list():
    consumer, guard, _ = _guarded(set())
    dropped, processed, other = _message(IN, 5), _message(IN, 6), _message(OTHER, 1)
    consumer._unacked_messages |= {dropped, processed, other}

    # faust's stream iterator acknowledges an event it drops during a rebalance
    assert dropped.ack(consumer) is False
    assert dropped.acked and dropped not in consumer._unacked_messages
    assert consumer.committable == [] and guard.dropped == 1

    guard.processed.add(processed)
    assert processed.ack(consumer) is True
    assert other.ack(consumer) is True  # not an input topic: untouched
    assert consumer.committable == [(IN, 6), (OTHER, 1)]
    assert not consumer._unacked_messages


def test_input_partitions_resume_only_after_a_seek_and_flow_control():
    a, b, c = TP(IN, 0), TP(IN, 1), TP(OTHER, 0)
    consumer, guard, flow = _guarded({a, b, c})
    consumer._committed_offset[b] = 7  # a's committed offset is 0: aiokafka does not seek
    consumer.pause_partitions({a, b, c})  # faust, on assignment
    asyncio.run(consumer.perform_seek())  # faust's fetcher while the rebalance goes on
    flow.resume()  # recovery starts reading the changelogs
    assert consumer.active() == set()
    consumer.resume_partitions({a, b, c})  # recovery, just before seeking them
    assert consumer.active() == {c}
    asyncio.run(consumer.perform_seek())
    assert consumer.seeks == [set(), {c}] and consumer.active() == {c}
    assert consumer.seeks_to == [(a, 0)]
    consumer._assigned.discard(b)  # revoked meanwhile
    flow.resume()  # clears the queues: now the sought input partitions may fetch
    assert consumer.active() == {a, c}

    consumer.pause_partitions({a})  # next rebalance
    consumer.resume_partitions({a})
    flow.resume()
    assert consumer.active() == {c}  # not sought since the pause


def test_gaps_are_never_filled_on_input_topics():
    consumer, _, _ = _guarded(set())
    asyncio.run(consumer._add_gap(TP(IN, 0), 5, 27))
    asyncio.run(consumer._add_gap(TP(OTHER, 0), 5, 27))
    assert consumer.gaps == [(TP(OTHER, 0), 5, 27)]


def test_aiokafka_gets_a_copy_of_the_active_partitions():
    consumer, _, _ = _guarded(set())
    live = {TP(IN, 0)}
    asyncio.run(consumer._getmany(active_partitions=live, timeout=1.0))
    (given,) = consumer.fetched_with
    assert given == live and given is not live


def _drain(consumer) -> list[tuple[TP, int]]:
    async def run():
        return [(tp, m.offset) async for tp, m in consumer.getmany(timeout=1.0)]

    return asyncio.run(run())


def test_input_records_faust_did_not_pass_on_are_fetched_again():
    a, b, c = TP(IN, 0), TP(IN, 1), TP(OTHER, 0)
    consumer, _, _ = _guarded({a, b, c})
    consumer.pause_partitions({b, c})  # paused while the fetch was in flight
    rec = SimpleNamespace
    consumer.next_records = {a: [rec(offset=5), rec(offset=6)], b: [rec(offset=3)],
                             c: [rec(offset=1)]}
    assert _drain(consumer) == [(a, 5), (a, 6)]
    assert consumer.seeks_to == [(b, 3)]  # the input partition only

    consumer.flow_active = False  # a rebalance: faust seeks to the committed offsets itself
    assert _drain(consumer) == [(a, 5), (a, 6)]
    assert consumer.seeks_to == [(b, 3)]


def test_a_consumer_without_the_wrapped_internals_is_refused():
    consumer = ConsumerStub(set())
    del consumer._committed_offset
    with pytest.raises(RuntimeError, match="_committed_offset"):
        InputGuard([IN]).install(consumer, FlowControlEvent())
