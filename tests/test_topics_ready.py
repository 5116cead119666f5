"""A topic created by the project is served by its partitions' leaders before anyone publishes
to it (real broker)."""

import uuid

import pytest

from streamfs.producers import StreamPublisher
from streamfs.topics import TopicSpec, create_topics, unserved_partitions

pytestmark = pytest.mark.kafka


def test_created_topics_are_served_before_create_topics_returns(kafka_config):
    from confluent_kafka.admin import AdminClient

    specs = {f"t{i}": TopicSpec(f"t{i}", f"ready-{uuid.uuid4().hex[:8]}", 8, 1) for i in range(3)}
    assert set(create_topics(kafka_config, specs).values()) == {"created"}
    # every partition's leader answers: nothing published now can meet a leader that does not
    # host its partition yet (a leader that does not answers at once with an error; the
    # request's 10 s only cover a machine busy with other work, where 2 s once ran out)
    admin = AdminClient(kafka_config)
    assert unserved_partitions(admin, {s.name: s.partitions for s in specs.values()},
                               timeout=10) == []


def test_unserved_partitions_names_partitions_no_leader_serves(kafka_config):
    from confluent_kafka.admin import AdminClient

    name = f"ready-{uuid.uuid4().hex[:8]}"
    create_topics(kafka_config, {"t": TopicSpec("t", name, 2, 1)})
    admin = AdminClient(kafka_config)
    # partitions 2 and 3 do not exist: nobody serves them
    assert unserved_partitions(admin, {name: 4}, timeout=2) == [f"{name}:2", f"{name}:3"]


def test_publisher_connect_waits_for_served_partitions(kafka_config):
    name = f"ready-{uuid.uuid4().hex[:8]}"
    create_topics(kafka_config, {"t": TopicSpec("t", name, 4, 1)})
    with StreamPublisher({**kafka_config, "statistics.interval.ms": 100,
                          "stats_cb": lambda s: None}, name) as pub:
        pub.connect()
        pub.send({"stream": "s", "kind": "open", "seq": 0})


def test_wait_until_served_keeps_its_deadline_when_the_broker_does_not_answer():
    import time

    from confluent_kafka.admin import AdminClient

    from streamfs.topics import wait_until_served
    from streamfs.worker.process import free_port

    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{free_port()}"})
    started = time.monotonic()
    with pytest.raises(TimeoutError, match="t:0, t:1"):
        wait_until_served(admin, {"t": 2}, timeout=2)
    # each ListOffsets request is bounded by what is left of the 2 s (one request used to
    # wait its own 10 s); the margin is for a loaded machine, not a speed target
    assert time.monotonic() - started < 6


def test_an_existing_topic_with_other_partitions_is_refused(kafka_config):
    from streamfs.topics import TopicMismatch

    name = f"ready-{uuid.uuid4().hex[:8]}"
    create_topics(kafka_config, {"t": TopicSpec("t", name, 1, 1)})
    with pytest.raises(TopicMismatch, match=rf"'{name}' has 1 partition\(s\), the catalogue asks for 8"):
        create_topics(kafka_config, {"t": TopicSpec("t", name, 8, 1)})
    assert create_topics(kafka_config, {"t": TopicSpec("t", name, 1, 1)}) == {name: "exists"}
