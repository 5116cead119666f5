"""The faust glue that needs no broker: the acknowledgement guard."""

from __future__ import annotations

from faust.types.tuples import ConsumerMessage

from streamfs.worker.app import AckGuard


class RecordingConsumer:
    """The two members of a faust consumer that acknowledgement touches."""

    def __init__(self) -> None:
        self.committable: list[tuple[str, int]] = []
        self._unacked_messages: set = set()

    def ack(self, message) -> bool:
        message.acked = True
        self._unacked_messages.discard(message)
        self.committable.append((message.topic, message.offset))
        return True


def _message(topic: str, offset: int) -> ConsumerMessage:
    return ConsumerMessage(topic, 0, offset, 0.0, 0, None, b"k", b"v", None)


def test_only_processed_input_events_reach_the_commit_list():
    consumer = RecordingConsumer()
    guard = AckGuard(["in.features"])
    guard.install(consumer)
    guard.install(consumer)  # idempotent: a second agent installs the same guard
    dropped, processed, other = _message("in.features", 5), _message("in.features", 6), \
        _message("changelog", 1)
    consumer._unacked_messages |= {dropped, processed, other}

    # faust's stream iterator acknowledges an event it drops during a rebalance
    assert dropped.ack(consumer) is False
    assert dropped.acked and dropped not in consumer._unacked_messages
    assert consumer.committable == [] and guard.dropped == 1

    guard.processed.add(processed)
    assert processed.ack(consumer) is True
    assert other.ack(consumer) is True  # not an input topic: untouched
    assert consumer.committable == [("in.features", 6), ("changelog", 1)]
    assert not consumer._unacked_messages
