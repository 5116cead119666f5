"""A guard around faust's consumer so that input records are neither skipped nor committed
before the agent has processed them (see :class:`InputGuard`)."""

from __future__ import annotations

import logging
import weakref

log = logging.getLogger("streamfs.worker")


class InputGuard:
    """Keep faust from skipping or committing input records the agent never processed.

    Faust behaviours traced in our scale-out test, each of which loses input records (the
    next owner of the partition then sees a sequence gap, or the worker stalls):

    * After a rebalance, faust's recovery resumes the input partitions, seeks them to the
      committed offsets, then resumes flow control, which clears the agents' queues. Records
      fetched between the first and the last step are delivered into those queues and then
      discarded. The seek also rewinds faust's read position, so the next record looks like a
      jump over missing offsets.
    * Faust fills such jumps in as acknowledged. These "gaps" are meant for compacted or
      transactional topics, so the commit passes over the discarded records.
    * Faust's stream iterator acknowledges the events it drops around a rebalance (older
      consumer generation, or flow control paused), even in a ``noack`` stream.
    * Faust hands aiokafka its live set of active partitions for a fetch that waits up to a
      second. If the set empties meanwhile, aiokafka returns the records of every partition,
      and faust drops those of inactive partitions after the consumer position has passed
      them. More generally, faust's ``getmany`` silently drops fetched records whenever their
      partition was paused meanwhile, flow stopped or the generation changed; a later seek to
      the committed offset fetches them again only if it happens after the drop, and aiokafka
      skips that seek when the committed offset is 0.

    The guard:

    1. Once faust has paused an input partition (it pauses all of them when partitions are
       assigned), the guard resumes it only after faust has sought it to the committed offset
       *and* flow control has resumed and cleared the queues. No record is fetched into a
       queue that is about to be cleared. That seek also goes to offset 0 when 0 is the
       committed offset.
    2. It never fills gaps on the input topics. They are not compacted and their producers are
       not transactional, so a gap there means lost records, and the commit must stop before
       it.
    3. It lets an acknowledgement of an input event through only once the agent has processed
       the event. A dropped event is merely forgotten; its offset stays uncommitted and it is
       fetched again.
    4. It gives aiokafka a copy of the active partitions, so a fetch returns only the
       partitions it asked for, and after each fetch it rewinds every input partition whose
       records faust did not pass on to the first of them, so they are fetched again.
    """

    def __init__(self, topics: list[str]) -> None:
        self.topics = frozenset(topics)
        self.processed: weakref.WeakSet = weakref.WeakSet()
        # input partitions kept paused; of those, the ones faust asked to resume, and of
        # those, the ones it has sought to the committed offset since
        self.held: set = set()
        self.requested: set = set()
        self.sought: set = set()
        self.dropped = 0
        self.fetched: dict = {}  # first and last input offset of the last fetch, per partition

    WRAPPED = ("ack", "_add_gap", "perform_seek", "_getmany", "getmany", "pause_partitions",
               "resume_partitions", "_paused_partitions", "_committed_offset", "_unacked_messages")

    def install(self, consumer, flow_control) -> None:
        if getattr(consumer, "_streamfs_input_guard", None) is self:
            return
        missing = [name for name in self.WRAPPED if not hasattr(consumer, name)]
        if missing or not hasattr(flow_control, "resume"):
            raise RuntimeError(f"this faust version's consumer lacks {missing}: the input guard "
                               "was written for faust-streaming 0.15 (see pyproject.toml)")
        ack, add_gap, seek = consumer.ack, consumer._add_gap, consumer.perform_seek
        getmany, getmany_ = consumer.getmany, consumer._getmany
        pause, resume, resume_flow = (consumer.pause_partitions, consumer.resume_partitions,
                                      flow_control.resume)

        def guarded_ack(message) -> bool:
            if message.topic not in self.topics or message in self.processed:
                return ack(message)
            message.acked = True  # nothing more to wait for ...
            consumer._unacked_messages.discard(message)  # ... but no offset to commit
            self.dropped += 1
            log.info("faust dropped %s:%d offset %d before the agent saw it; it is fetched "
                     "again from the committed offset", message.topic, message.partition,
                     message.offset)
            return False

        def inputs(tps) -> set:
            return {tp for tp in tps if tp.topic in self.topics}

        def tracked_pause(tps) -> None:
            tps = set(tps)
            self.held |= inputs(tps)
            self.requested -= tps
            self.sought -= tps
            pause(tps)

        def held_resume(tps) -> None:
            tps = set(tps)
            self.requested |= tps & self.held
            resume(tps - self.held)

        async def held_seek() -> None:
            # the fetcher may run before this coroutine starts: hold what is fetching now too
            fetching = inputs(consumer.assignment()) - consumer._paused_partitions
            tracked_pause(fetching)
            self.requested |= fetching
            await seek()
            # only partitions faust asked to resume before this seek count as sought: faust
            # also seeks while a rebalance is in progress, before its recovery seeks again
            sought = self.requested & set(consumer.assignment())
            for tp in sought:
                if not consumer._committed_offset.get(tp):  # 0: aiokafka did not seek
                    await consumer.seek(tp, 0)
            self.sought |= sought

        def resume_flow_then_inputs() -> None:
            resume_flow()  # clears the queues
            ready = self.held & self.sought & set(consumer.assignment())
            self.held -= ready
            self.requested -= ready
            self.sought -= ready
            resume(ready)

        async def frozen_getmany(active_partitions, timeout):
            frozen = None if active_partitions is None else set(active_partitions)
            records = await getmany_(active_partitions=frozen, timeout=timeout)
            self.fetched = {tp: (recs[0].offset, recs[-1].offset)
                            for tp, recs in (records or {}).items()
                            if tp.topic in self.topics and recs}
            return records

        async def rewinding_getmany(timeout):
            self.fetched = {}
            passed: dict = {}
            generation = consumer.app.consumer_generation_id
            async for tp, message in getmany(timeout):
                passed[tp] = message.offset
                yield tp, message
            if not consumer.flow_active or consumer.app.consumer_generation_id != generation:
                return  # a rebalance: faust seeks to the committed offsets itself
            for tp, (first, last) in self.fetched.items():
                first = max(first, passed.get(tp, -1) + 1)  # faust passes records in order
                if first <= last and tp in consumer.assignment():
                    log.info("faust did not pass on %s:%d offsets %d..%d; fetching them again",
                             tp.topic, tp.partition, first, last)
                    await consumer.seek(tp, first)

        async def no_input_gaps(tp, offset_from: int, offset_to: int) -> None:
            if tp.topic in self.topics:
                log.warning("records %d..%d of %s:%d were skipped by the consumer; the commit "
                            "stops before them", offset_from, offset_to - 1, tp.topic,
                            tp.partition)
                return
            await add_gap(tp, offset_from, offset_to)

        consumer.ack = guarded_ack
        consumer.perform_seek = held_seek
        consumer.resume_partitions = held_resume
        consumer.pause_partitions = tracked_pause
        consumer._add_gap = no_input_gaps
        consumer._getmany = frozen_getmany
        consumer.getmany = rewinding_getmany
        flow_control.resume = resume_flow_then_inputs
        consumer._streamfs_input_guard = self

    async def ack(self, stream, event) -> None:
        """Acknowledge an event the agent has processed."""
        self.processed.add(event.message)
        await stream.ack(event)
