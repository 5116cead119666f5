"""The start-up's look at the worker's group, where the broker answers what no running broker
can be made to (no broker: the consumer's answers are given; the answers a broker gives are
tested in test_group_owner.py)."""

import logging
from types import SimpleNamespace

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from streamfs.broker import AccessDenied
from streamfs.settings import Settings
from streamfs.topics import CatalogueError
from streamfs.worker.broker_contact import BrokerContact
from streamfs.worker.group_checks import check_group_is_ours, warn_if_another_group_processed
from streamfs.worker.health import Health

INPUTS = ["p.features", "p.instances"]


class Consumer:
    """The cluster holds this deployment's input topics and ``others``; ``committed`` answers
    ``offsets`` (by topic; -1001: none) or raises ``error``."""

    def __init__(self, others=(), offsets=None, error=None, ends=None):
        self.topics = {name: SimpleNamespace(error=None, partitions={0: None})
                       for name in [*INPUTS, *others]}
        self.offsets, self.error, self.ends = offsets or {}, error, ends or {}
        self.asked: list = []

    def list_topics(self, timeout):
        return SimpleNamespace(topics=self.topics)

    def committed(self, partitions, timeout):
        self.asked.append(sorted(tp.topic for tp in partitions))
        if self.error is not None:
            raise KafkaException(KafkaError(self.error, "no answer"))
        return [TopicPartition(tp.topic, tp.partition, self.offsets.get(tp.topic, -1001))
                for tp in partitions]

    def get_watermark_offsets(self, tp, timeout):
        return 0, self.ends.get(tp.topic, 0)


def _settings() -> Settings:
    settings = Settings(topic_prefix="p.")
    settings.app_id = "app"
    return settings


def _check(consumer) -> bool:
    settings = _settings()
    return check_group_is_ours(consumer, settings, INPUTS,
                               BrokerContact(settings, Health(), INPUTS, {}, lambda: True))


def test_only_other_deployments_input_topics_are_asked_about():
    consumer = Consumer(others=["q.features", "q.other"])
    assert _check(consumer) and consumer.asked == [["q.features"]]
    assert _check(Consumer()) is True  # no other deployment: nothing asked


def test_offsets_committed_in_another_deployments_topic_stop_the_worker():
    with pytest.raises(CatalogueError, match="group 'app' .* has read 'q.features', not this "
                                             "deployment's topics"):
        _check(Consumer(others=["q.features"], offsets={"q.features": 5}))


def test_no_answer_is_a_warning_and_a_denial_stops_the_worker(caplog):
    with caplog.at_level(logging.WARNING, logger="streamfs.worker"):
        assert _check(Consumer(others=["q.features"], error=KafkaError._TIMED_OUT)) is False
    assert "could not check that group 'app'" in caplog.text
    # what such a timeout most often is: no READ on the group (the broker says nothing more)
    assert "so it goes when this client may not READ the group" in caplog.text
    with pytest.raises(AccessDenied, match="reading its group's committed offsets"):
        _check(Consumer(others=["q.features"], error=KafkaError.GROUP_AUTHORIZATION_FAILED))


@pytest.mark.parametrize("offsets, ends, warned", [
    ({}, {"p.selected": 3, "p.features": 9}, True),  # new group, results there: warned
    ({"p.features": 4}, {"p.selected": 3, "p.features": 9}, False),  # the group's own
    ({}, {"p.features": 9}, False),  # nothing published yet
    ({}, {"p.selected": 3, "p.features": 9, "app-features-changelog": 2}, False),  # expired
    ({}, {"p.selected": 3}, False),  # input deleted by retention: nothing to read again
])
def test_a_new_group_on_processed_input_is_warned_of(caplog, offsets, ends, warned):
    topics = [*INPUTS, "p.selected", "app-features-changelog"]
    with caplog.at_level(logging.WARNING, logger="streamfs.worker"):
        warn_if_another_group_processed(Consumer(offsets=offsets, ends=ends), _settings(),
                                        {name: 1 for name in topics}, INPUTS, "p.selected",
                                        ["app-features-changelog"])
    assert ("is new to this prefix's input" in caplog.text) == warned


def test_a_broker_error_skips_the_warning(caplog):
    with caplog.at_level(logging.WARNING, logger="streamfs.worker"):
        warn_if_another_group_processed(Consumer(error=KafkaError._TIMED_OUT), _settings(),
                                        {name: 1 for name in INPUTS}, INPUTS, "p.selected", [])
    assert caplog.text == ""
