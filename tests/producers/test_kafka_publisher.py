"""StreamPublisher without a broker: failures are clear errors."""

from __future__ import annotations

import socket

import pytest

from streamfs.producers.kafka import DeliveryError, StreamPublisher


def test_connect_to_unreachable_broker_names_the_topic():
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    pub = StreamPublisher({"bootstrap.servers": f"127.0.0.1:{port}"}, "streamfs.features")
    with pytest.raises(DeliveryError, match="streamfs.features"):
        pub.connect(timeout=1.0)
