"""The topic check's reading of the broker's answers and its verdicts (no broker)."""

from concurrent.futures import Future
from types import SimpleNamespace

import pytest
from confluent_kafka import KafkaError, KafkaException

from streamfs.worker.topic_checks import changed_while_running, described_topics, topic_changes


def test_topic_changes_names_deleted_resized_and_recreated_topics():
    partitions = {"in": 8, "other-in": 8, "out": 8, "gone": 1, "unanswered": 8}
    ids = {"in": "A", "other-in": "B"}
    found = {"in": (8, "A2"), "other-in": (8, "B"), "out": (4, "C"), "gone": None}
    assert topic_changes(partitions, ids, found) == [
        "'in' was deleted and re-created (topic id A when its partitions were assigned, "
        "A2 now)",
        "'out' has 4 partition(s), the catalogue asks for 8",
        "'gone' does not exist"]
    # no ids known yet (no assignment): partition counts and existence only
    assert topic_changes({"in": 8}, {}, {"in": (8, "A2")}) == []


def test_described_topics_keeps_answers_and_missing_topics_and_leaves_out_the_rest():
    answered, missing, failed, pending = Future(), Future(), Future(), Future()
    answered.set_result(SimpleNamespace(partitions=[None] * 3, topic_id="X"))
    missing.set_exception(KafkaException(KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART)))
    failed.set_exception(KafkaException(KafkaError(KafkaError.REQUEST_TIMED_OUT)))
    found = described_topics({"a": answered, "b": missing, "c": failed, "d": pending})
    assert found == {"a": (3, "X"), "b": None}  # no answer, or another error: nothing known


@pytest.mark.parametrize("found, says, not_says", [
    # an input topic made again: read from its beginning, the state kept
    ({"in": (8, "A2"), "in-changelog": (8, "C")}, "with the streams' state kept",
     "made again is gone"),
    # a changelog made again: its streams' state is gone
    ({"in": (8, "A"), "in-changelog": (8, "C2")}, "on a changelog made again is gone",
     "state kept"),
    # partitions added: the catalogue's advice
    ({"in": (12, "A"), "in-changelog": (8, "C")}, "partitions", "made again is gone"),
    # deleted: make it again, nothing needing it was committed
    ({"in": None, "in-changelog": (8, "C")}, "Run `streamfs topics create`", "state kept"),
    # a resized changelog is no changelog made again
    ({"in": (8, "A2"), "in-changelog": (4, "C")}, "Run `streamfs topics create`",
     "made again is gone"),
])
def test_each_change_is_said_with_what_it_means_for_the_streams(found, says, not_says):
    partitions = {"in": 8, "in-changelog": 8}
    ids = {"in": "A"}
    changelog_ids = {"in-changelog": "C"}
    problems = topic_changes(partitions, {**ids, **changelog_ids}, found)
    message = str(changed_while_running(problems, found, partitions, changelog_ids))
    assert message.startswith("a topic of this worker changed while it ran: " +
                              "; ".join(problems))
    assert says in message and not_says not in message
