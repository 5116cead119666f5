"""How the worker meets a broker that does not answer or refuses it (no broker: the
clients' errors are given)."""

import logging

import pytest

from streamfs.settings import Settings
from streamfs.worker.broker_contact import INIT_TRANSACTIONS_SECONDS, BrokerContact
from streamfs.worker.errors import StoppedWhileUnreachable
from streamfs.worker.health import Health


def _contact() -> BrokerContact:
    settings = Settings()
    settings.app_id = "a"
    return BrokerContact(settings, Health(), ["p.features", "p.instances"],
                         {"selected": "p.selected", "dead_letter": "p.dead-letter"},
                         lambda: True)


@pytest.mark.parametrize("code, grant", [
    ("TRANSACTIONAL_ID_AUTHORIZATION_FAILED", "WRITE on the transactional ids with the prefix "
                                              "'a-'"),
    ("GROUP_AUTHORIZATION_FAILED", "READ on the consumer group 'a'"),
    ("TOPIC_AUTHORIZATION_FAILED", "READ on the input topics (p.features, p.instances), WRITE "
                                   "on the output topics (p.dead-letter, p.selected), READ and "
                                   "WRITE on the changelogs ('a-...-changelog'), DESCRIBE on "
                                   "all of them"),
])
def test_a_denial_names_the_acl_its_kind_of_resource_asks_for(code, grant):
    from confluent_kafka import KafkaError

    contact = _contact()
    err = KafkaError(getattr(KafkaError, code), "denied")
    assert contact.refused(err)
    said = str(contact.denied(err, "consuming its input"))
    assert "consuming its input" in said and grant in said


def test_health_says_why_the_broker_is_unreachable_when_the_clients_know():
    """No OAUTHBEARER token from the token endpoint: the broker is up, and takes no login
    once the token has expired; /health said "broker-unreachable" and no more."""
    from confluent_kafka import KafkaError

    contact = _contact()
    contact.client_error(KafkaError(KafkaError._AUTHENTICATION, "Failed to acquire SASL "
                                    "OAUTHBEARER token: Failed to connect to 127.0.0.1:1"))
    assert contact.health.snapshot()[1]["status"] != "broker-unreachable"  # a token still valid
    contact.client_error(KafkaError(KafkaError._ALL_BROKERS_DOWN, "1/1 brokers are down"))
    code, body = contact.health.snapshot()
    assert code == 503 and body["status"] == "broker-unreachable"
    assert body["reason"] == ("no OAUTHBEARER token from the token endpoint (Failed to acquire "
                              "SASL OAUTHBEARER token: Failed to connect to 127.0.0.1:1)")
    contact.answered()
    assert "reason" not in contact.health.snapshot()[1]
    contact.client_error(KafkaError(KafkaError._ALL_BROKERS_DOWN, "1/1 brokers are down"))
    assert "reason" not in contact.health.snapshot()[1]  # a broker down, nothing more known


def test_an_oauthbearer_login_refused_after_the_worker_logged_in_is_waited_out(caplog):
    """Tokens expire; with the token endpoint away, librdkafka's re-authentication of a
    connection failed ("Request not valid in current SASL state") and the consumer reported
    "Local: Authentication failure": the worker took it for a refused token and exited 77 in
    1 of 3 runs of tests/cli/test_oauthbearer.py's outage test. A first login refused, an
    ACL's denial, and other mechanisms' credentials (which do not renew) still stop it."""
    import logging
    import time

    from confluent_kafka import KafkaError

    contact = _contact()
    contact.kafka_config = oauth = {"sasl.mechanism": "OAUTHBEARER"}
    lapsed = KafkaError(KafkaError._AUTHENTICATION,
                        "FindCoordinator response error: Local: Authentication failure")
    acl = KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED, "Broker: Topic authorization failed")
    assert contact.refused(lapsed)  # never logged in: the token is refused, exit 77
    contact.health.ready_at = time.time()  # it had an assignment
    assert not contact.refused(lapsed) and contact.refused(acl)
    contact.kafka_config = {"sasl.mechanism": "SCRAM-SHA-512"}
    assert contact.refused(lapsed)  # SCRAM, PLAIN, certificates: nothing renews them
    contact.kafka_config = oauth
    caplog.set_level(logging.WARNING, logger="streamfs.worker")
    assert contact.wait_for_login(False, "the consumer", lapsed)
    assert contact.wait_for_login(True, "the consumer", lapsed)  # said once
    code, body = contact.health.snapshot()
    assert code == 503 and body["status"] == "broker-unreachable"
    assert body["reason"] == ("the broker refused this client's OAUTHBEARER login after it had "
                              "logged in (FindCoordinator response error: Local: "
                              "Authentication failure): its token expired and no new one came")
    assert [r.getMessage() for r in caplog.records] == [
        f"the consumer: {body['reason']}; waiting for a new token"]
    contact.running = lambda: False  # a stop asked meanwhile
    with pytest.raises(StoppedWhileUnreachable):
        contact.wait_for_login(True, "the consumer", lapsed)


def test_the_token_endpoints_own_reason_is_kept_while_a_login_lapses():
    """The endpoint's answer says more than the broker's refusal that follows it."""
    from confluent_kafka import KafkaError

    contact = _contact()
    contact.kafka_config = {"sasl.mechanism": "OAUTHBEARER"}
    contact.health.ready_at = 1.0
    contact.client_error(KafkaError(KafkaError._AUTHENTICATION, "Failed to acquire SASL "
                                    "OAUTHBEARER token: Failed to connect to 127.0.0.1:1"))
    contact.wait_for_login(False, "the consumer",
                           KafkaError(KafkaError._AUTHENTICATION, "Authentication failure"))
    assert contact.health.snapshot()[1]["reason"].startswith(
        "no OAUTHBEARER token from the token endpoint")


def test_committed_offsets_are_asked_again_while_the_coordinator_moves():
    """After a broker restart, ``committed()`` answered NOT_COORDINATOR (librdkafka does not
    retry it there) and the worker's rewind exited 70; it asks again, and only for a moving
    or loading coordinator."""
    from confluent_kafka import KafkaError, KafkaException


    answers = [KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_LOAD_IN_PROGRESS, "offsets"]

    class Consumer:
        def committed(self, partitions, timeout):
            answer = answers.pop(0)
            if answer != "offsets":
                raise KafkaException(KafkaError(answer))
            return partitions

    contact, consumer = _contact(), Consumer()
    assert contact.committed(consumer, ["p0"], 30) == ["p0"] and not answers
    answers[:] = [KafkaError.GROUP_AUTHORIZATION_FAILED, "offsets"]
    with pytest.raises(KafkaException, match="GROUP_AUTHORIZATION_FAILED"):
        contact.committed(consumer, ["p0"], 30)  # not a coordinator moving: no second ask
    answers[:] = [KafkaError.NOT_COORDINATOR] * 100
    with pytest.raises(KafkaException, match="NOT_COORDINATOR"):
        contact.committed(consumer, ["p0"], 0.3)  # the deadline holds
    assert len(answers) > 90


def test_committed_offsets_held_back_by_an_open_transaction_are_said_while_waited_for(caplog):
    """A restart whose partitions' offsets a dead owner's open transaction holds back waited up
    to that transaction's timeout in silence: after COMMITTED_SAID_SECONDS it says why."""
    from confluent_kafka import KafkaError, KafkaException

    from streamfs.worker.broker_contact import COMMITTED_SAID_SECONDS

    asked: list = []

    class Consumer:
        def committed(self, partitions, timeout):
            asked.append(timeout)
            if len(asked) == 1:
                raise KafkaException(KafkaError(KafkaError._TIMED_OUT))
            return partitions

    with caplog.at_level(logging.INFO, logger="streamfs.worker"):
        assert _contact().committed(Consumer(), ["p0"], 80) == ["p0"]
    assert asked[0] == COMMITTED_SAID_SECONDS and 74 < asked[1] <= 80 - COMMITTED_SAID_SECONDS
    assert caplog.messages == [
        "the committed offsets are not answered after 5 s: the broker holds them back while a "
        "previous owner's transaction is open (it aborts one STREAMFS_TRANSACTION_TIMEOUT "
        "after it began: 20 s by this worker's setting), or it is slow; still asking"]


def test_watermarks_are_asked_again_while_a_crashed_leader_is_replaced():
    """On a 3-node cluster with one node SIGKILLed, the offsets of a changelog partition it
    led answered "Unknown partition" until a new leader was elected, and the worker's rewind
    exited 70 with a traceback; it asks again, within the deadline, for every code of a
    cluster on the move."""
    from confluent_kafka import KafkaError, KafkaException, TopicPartition

    from streamfs.worker.errors import moving_codes

    answers: list = []

    class Client:
        def get_watermark_offsets(self, tp, timeout):
            answer = answers.pop(0)
            if answer != "offsets":
                raise KafkaException(KafkaError(answer))
            return 3, 9

    contact = _contact()
    for code in sorted(moving_codes()):
        answers[:] = [code, code, "offsets"]
        assert contact.watermarks(Client(), TopicPartition("cl", 0)) == (3, 9), code
    # answered just after two crashed nodes of three came back: the worker had exited 70
    answers[:] = [KafkaError._DESTROY_BROKER, "offsets"]
    assert contact.watermarks(Client(), TopicPartition("cl", 0)) == (3, 9)
    # "Leader high watermark is not caught up", seen there too (CI, test_cluster)
    answers[:] = [KafkaError.OFFSET_NOT_AVAILABLE, "offsets"]
    assert contact.watermarks(Client(), TopicPartition("cl", 0)) == (3, 9)
    answers[:] = [KafkaError.TOPIC_AUTHORIZATION_FAILED, "offsets"]
    with pytest.raises(KafkaException, match="TOPIC_AUTHORIZATION_FAILED"):
        contact.watermarks(Client(), TopicPartition("cl", 0))
    answers[:] = [KafkaError._UNKNOWN_PARTITION] * 100
    with pytest.raises(KafkaException, match="Unknown partition|_UNKNOWN_PARTITION"):
        contact.watermarks(Client(), TopicPartition("cl", 0), timeout=0.3)


def test_a_broker_that_does_not_answer_is_waited_for_past_the_deadline(caplog):
    """With two of a cluster's three nodes down, a rewind's committed offsets timed out call
    after call, and at the deadline the worker exited 70. Past it, an answer that says no
    broker answers is waited for (``/health``: broker-unreachable, ``/live`` alive) until the
    broker answers or a stop is asked; a moving code that is no outage still ends there."""
    from confluent_kafka import KafkaError, KafkaException


    answers: list = []
    seen: list = []

    class Consumer:
        def committed(self, partitions, timeout):
            seen.append((timeout, contact.health.unreachable_since is not None))
            answer = answers.pop(0)
            if answer != "offsets":
                raise KafkaException(KafkaError(answer))
            return ["p0 at 7"]

    contact, consumer = _contact(), Consumer()
    answers[:] = [KafkaError._TIMED_OUT] * 6 + ["offsets"]
    with caplog.at_level(logging.INFO, logger="streamfs.worker"):
        assert contact.committed(consumer, ["p0"], 0.3) == ["p0 at 7"]
    assert answers == []
    assert seen[-1] == (INIT_TRANSACTIONS_SECONDS, True)  # waited, and /health said so
    assert contact.health.unreachable_since is None  # answered: reachable again
    assert "committed offsets: the broker does not answer" in caplog.text
    assert "the broker answered (committed offsets): going on" in caplog.text
    # back, with the group's coordinator still loading: asked again, within a new deadline
    answers[:] = [KafkaError._TIMED_OUT] * 5 + [KafkaError.COORDINATOR_LOAD_IN_PROGRESS] * 2
    answers.append("offsets")
    assert contact.committed(consumer, ["p0"], 0.3) == ["p0 at 7"]
    answers[:] = [KafkaError._TIMED_OUT] * 5 + [KafkaError.COORDINATOR_LOAD_IN_PROGRESS] * 100
    with pytest.raises(KafkaException, match="COORDINATOR_LOAD_IN_PROGRESS"):
        contact.committed(consumer, ["p0"], 0.3)
    answers[:] = [KafkaError._TRANSPORT] * 40
    contact.running = lambda: False  # SIGTERM meanwhile
    with pytest.raises(StoppedWhileUnreachable):
        contact.committed(consumer, ["p0"], 0.3)
    contact.running = lambda: True
    answers[:] = [KafkaError.NOT_COORDINATOR] * 100
    with pytest.raises(KafkaException, match="NOT_COORDINATOR"):
        contact.committed(consumer, ["p0"], 0.3)
