"""A broker whose TLS certificate names other hosts than the one a client connects by (the
classic TLS mistake): librdkafka says only "certificate verify failed ... verify that
ssl.ca.location is correctly configured", which sent the user to a CA that was right."""

from __future__ import annotations

import os

import pytest

from tests.cli.test_cli_kafka import streamfs
from tests.cli.test_kafka_security import one_line_denial

pytestmark = pytest.mark.kafka


def test_a_certificate_for_other_names_is_one_line_naming_them(tmp_path_factory):
    from tests.conftest import _own_broker

    with _own_broker(tmp_path_factory, "kafka-tls-names", "TLS for other names", KAFKA_TLS="1",
                     KAFKA_TLS_SAN="DNS:kafka.internal,DNS:kafka-0.kafka.internal") as (
                         run_dir, address):
        out = streamfs("watch", "x", "--once", timeout=60, env={
            **os.environ, "STREAMFS_BOOTSTRAP_SERVERS": address,
            "STREAMFS_SECURITY_PROTOCOL": "SSL",
            "STREAMFS_SSL_CA_LOCATION": str(run_dir / "tls" / "ca.pem")})
    one_line_denial(out, f"the TLS handshake with Kafka at {address} failed: the broker's "
                         "certificate is not for '127.0.0.1' (IP address mismatch",
                    "it names kafka.internal, kafka-0.kafka.internal; connect by a name it "
                    "holds (STREAMFS_BOOTSTRAP_SERVERS")
    assert "STREAMFS_SSL_CA_LOCATION" not in out.stderr  # the CA was right


def test_a_certificate_for_the_bootstrap_name_only_names_the_advertised_broker(tmp_path_factory):
    """Connected as `localhost`, the one name the certificate holds, to a broker that
    advertises 127.0.0.1: `watch --once` said "the broker does not answer; still trying" for
    ever, and the other commands sent the user to a CA that was right."""
    from tests.conftest import _own_broker

    with _own_broker(tmp_path_factory, "kafka-tls-bootstrap", "TLS for localhost only",
                     KAFKA_TLS="1", KAFKA_TLS_SAN="DNS:localhost") as (run_dir, address):
        port = address.rsplit(":", 1)[1]
        env = {**os.environ, "STREAMFS_BOOTSTRAP_SERVERS": f"localhost:{port}",
               "STREAMFS_SECURITY_PROTOCOL": "SSL",
               "STREAMFS_SSL_CA_LOCATION": str(run_dir / "tls" / "ca.pem")}
        for command in (("watch", "x", "--once"), ("topics", "describe")):
            out = streamfs(*command, timeout=60, env=env)
            one_line_denial(out, f"127.0.0.1:{port}", "the broker's certificate is not for "
                                                      "'127.0.0.1'", "it names localhost")
            assert "STREAMFS_SSL_CA_LOCATION" not in out.stderr
