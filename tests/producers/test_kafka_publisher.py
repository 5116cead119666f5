"""StreamPublisher without a broker: failures are clear errors."""

from __future__ import annotations

import pytest

from streamfs.broker import BrokerUnreachable
from streamfs.producers.kafka import StreamPublisher
from streamfs.worker.process import free_port

#: a local port nobody listens on
ADDRESS = f"127.0.0.1:{free_port()}"
DEAD_BROKER = {"bootstrap.servers": ADDRESS}


def test_connect_to_unreachable_broker_names_the_address():
    pub = StreamPublisher(DEAD_BROKER, "streamfs.features")
    with pytest.raises(BrokerUnreachable, match=f"cannot reach Kafka at {ADDRESS}"):
        pub.connect(timeout=1.0)


def test_send_to_unreachable_broker_fails_before_taking_a_message():
    from streamfs.producers.publish import send_messages

    sent = []
    messages = iter([{"stream": "s", "kind": "open", "seq": 0}])
    # it connects first (as produce_features, produce_instances and `streamfs produce` do
    # through it): a clear error within the connect timeout rather than "undelivered" after
    # the flush's two minutes, and no message taken from the source
    with pytest.raises(BrokerUnreachable, match=f"cannot reach Kafka at {ADDRESS}"):
        send_messages(messages, DEAD_BROKER, "streamfs.f",
                      on_message=sent.append)
    assert sent == [] and next(messages)["kind"] == "open"
