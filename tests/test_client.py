"""The output readers against the real broker: they start at each partition's first offset,
which need not be 0 (retention and DeleteRecords move it), and keep reading what comes after."""

import threading

import pytest

from streamfs.client import OutputReader, first_offset
from streamfs.producers import StreamPublisher
from streamfs.topics import load_catalogue

pytestmark = pytest.mark.kafka


def _publish(kafka_config: dict, topic: str, *numbers: int) -> None:
    with StreamPublisher(kafka_config, topic) as pub:
        for i in numbers:
            pub.send({"kind": "dead_letter", "stream": "s", "n": i})


def test_reader_starts_at_the_log_start_and_follows_new_messages(kafka_config, topic_prefix):
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    topic = load_catalogue(topic_prefix)["dead_letter"].name  # one partition, not compacted
    _publish(kafka_config, topic, 1, 2, 3)
    # the first two records are gone: the log now starts at offset 2 (as after retention)
    admin = AdminClient(kafka_config)
    for future in admin.delete_records([TopicPartition(topic, 0, 2)]).values():
        assert future.result(timeout=30).low_watermark == 2

    with OutputReader(kafka_config, topic) as reader:
        reader.assign()
        _publish(kafka_config, topic, 4)  # after the assignment, before any read: not missed
        messages = (m for m in reader.messages(timeout=60) if m is not None)
        seen = [next(messages)[1]["n"], next(messages)[1]["n"]]
        publisher = threading.Thread(target=_publish, args=(kafka_config, topic, 5))
        publisher.start()  # while the reader waits
        seen.append(next(messages)[1]["n"])
        publisher.join()
    assert seen == [3, 4, 5]


def test_an_offset_the_broker_cannot_give_falls_back_to_the_logical_first(kafka_config,
                                                                           topic_prefix):
    """A just-created topic's leader may be unknown for a moment (NOT_LEADER_FOR_PARTITION,
    seen in CI): the reader then starts that partition at OFFSET_BEGINNING instead of failing.
    A partition that does not exist makes the broker refuse the same way."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer

    topic = load_catalogue(topic_prefix)["dead_letter"].name
    _publish(kafka_config, topic, 1)  # acknowledged: the broker leads partition 0 by now
    consumer = Consumer({**kafka_config, "group.id": "probe"})
    try:
        assert first_offset(consumer, topic, 0) == 0
        assert first_offset(consumer, topic, 99) == OFFSET_BEGINNING
    finally:
        consumer.close()


def test_a_reader_without_a_broker_names_the_address_at_once(capfd):
    from streamfs.broker import BrokerUnreachable
    from streamfs.client import current_selection
    from streamfs.worker.process import free_port

    address = f"127.0.0.1:{free_port()}"
    # librdkafka's retries go to the streamfs.kafka logger, not as hundreds of stderr lines
    # for the 30 s the topic query would wait
    with pytest.raises(BrokerUnreachable, match=f"cannot reach Kafka at {address}"):
        current_selection("s", {"bootstrap.servers": address}, "streamfs.selected-features")
    assert "Connection refused" not in capfd.readouterr().err
