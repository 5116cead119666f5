"""The client-side helpers of streamfs.broker (no broker)."""

from __future__ import annotations

import logging

import pytest

from streamfs.broker import (KAFKA_LOGGER, ClientConfigRefused, RepeatFilter, RetriedByItself,
                             make_client)


def test_repeated_client_lines_are_shown_once_a_window_with_a_count():
    now = [0.0]
    logger = logging.getLogger("test.repeat")
    logger.propagate = False
    seen: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: seen.append(record.getMessage())
    logger.addHandler(handler)
    logger.addFilter(RepeatFilter(window=60, clock=lambda: now[0]))
    for i in range(5):  # a broker down: the same failure from clients 1..5, ms apart
        logger.error("FAIL [rdkafka#consumer-%d] Connect to 127.0.0.1:9092 failed (after %dms)",
                     i, i)
        now[0] += 1
    logger.error("another kind of line")
    now[0] = 61.0
    logger.error("FAIL [rdkafka#consumer-9] Connect to 127.0.0.1:9092 failed (after 3ms)")
    assert seen == [
        "FAIL [rdkafka#consumer-0] Connect to 127.0.0.1:9092 failed (after 0ms)",
        "another kind of line",
        "FAIL [rdkafka#consumer-9] Connect to 127.0.0.1:9092 failed (after 3ms) "
        "(4 more like it in the last 60 s not shown)",
    ]
    assert any(isinstance(f, RepeatFilter) for f in KAFKA_LOGGER.filters)


def test_coordinator_retries_librdkafka_makes_by_itself_are_info_not_warnings():
    logger = logging.getLogger("test.retried")
    logger.propagate = False
    logger.setLevel(logging.DEBUG)  # `streamfs --verbose`
    seen: list[tuple[str, str]] = []
    handler = logging.Handler()
    handler.emit = lambda record: seen.append((record.levelname, record.getMessage()))
    logger.addHandler(handler)
    logger.addFilter(RetriedByItself())
    getpid = ("GETPID [rdkafka#producer-6] [thrd:main]: Failed to acquire transactional PID "
              "from broker TxnCoordinator/1: Broker: {}: retrying")
    logger.warning(getpid.format("Not coordinator"))
    logger.warning(getpid.format("Coordinator load in progress"))
    logger.warning(getpid.format("Transactional Id authorization failed"))  # not transient
    logger.warning("FAIL [rdkafka#consumer-1] Connect to 127.0.0.1:9092 failed")
    assert [level for level, _ in seen] == ["INFO", "INFO", "WARNING", "WARNING"]
    assert any(isinstance(f, RetriedByItself) for f in KAFKA_LOGGER.filters)
    # a logger at WARNING (the worker's streamfs.kafka; --log-level warning) shows none of the
    # relabelled lines: they passed its level as WARNINGs, and were logged as INFO
    seen.clear()
    logger.setLevel(logging.WARNING)
    logger.warning(getpid.format("Not coordinator"))
    logger.warning(getpid.format("Transactional Id authorization failed"))
    assert [level for level, _ in seen] == ["WARNING"]


@pytest.mark.parametrize("client", ["admin", "producer", "consumer"])
@pytest.mark.parametrize("config,keys,detail", [
    ({"security.protocol": "bogus"}, ["security.protocol"],
     'Invalid value "bogus" for configuration property "security.protocol"'),
    ({"security.protocol": "SSL", "ssl.ca.location": "{junk}"}, ["ssl.ca.location"],
     "ssl.ca.location failed: "),
    ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"}, [],
     "sasl.username and sasl.password must be set"),
    ({"message.max.bytes": 2_000_000_000}, ["message.max.bytes"],
     'Configuration property "message.max.bytes" value 2000000000 is outside allowed range'),
])
def test_a_configuration_librdkafka_refuses_names_its_keys(tmp_path, client, config, keys,
                                                           detail):
    """Still a KafkaException with librdkafka's error (_INVALID_ARG), for callers that catch
    that; the message without the kind of client ("Failed to create consumer: ")."""
    from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
    from confluent_kafka.admin import AdminClient

    junk = tmp_path / "ca.pem"
    junk.write_text("not a certificate\n")
    factory = {"admin": AdminClient, "producer": Producer,
               "consumer": lambda c: Consumer({**c, "group.id": "g"})}[client]
    config = {"bootstrap.servers": "127.0.0.1:1",
              **{k: str(v).format(junk=junk) for k, v in config.items()}}
    with pytest.raises(ClientConfigRefused) as refused:
        make_client(factory, config)
    assert isinstance(refused.value, KafkaException)
    assert refused.value.args[0].code() == KafkaError._INVALID_ARG
    assert refused.value.keys == keys
    assert refused.value.detail.startswith(detail), refused.value.detail


def test_a_configuration_librdkafka_takes_makes_the_client():
    from confluent_kafka import Producer

    producer = make_client(Producer, {"bootstrap.servers": "127.0.0.1:1", "linger.ms": 5})
    assert isinstance(producer, Producer)


def _client_certificate(tmp_path, subject: str, password: bytes | None = None):
    """A self-signed certificate of ``subject`` and its key (encrypted with ``password``)."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject),
                      x509.NameAttribute(NameOID.ORGANIZATION_NAME, "example")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(1).not_valid_before(now)
            .not_valid_after(now + datetime.timedelta(days=1)).sign(key, hashes.SHA256()))
    cert_path, key_path = tmp_path / f"{subject}.pem", tmp_path / f"{subject}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(password) if password else
        serialization.NoEncryption()))
    return cert_path, key_path


def test_a_client_certificate_names_the_principal(tmp_path):
    """Without SASL the broker takes a client for its certificate's subject (mutual TLS);
    with SASL, for its SASL user."""
    from streamfs.broker import certificate_subject, principal

    cert, _ = _client_certificate(tmp_path, "app")
    assert certificate_subject(str(cert)) == "O=example,CN=app"  # RFC 4514: CN first
    assert principal({"ssl.certificate.location": str(cert)}) == (
        "the user of certificate 'O=example,CN=app'")
    assert principal({"ssl.certificate.location": str(cert), "sasl.username": "alice"}) == (
        "user 'alice'")
    not_one = tmp_path / "not-a-certificate.pem"
    not_one.write_text("garbage")
    assert certificate_subject(str(not_one)) == str(not_one)


def test_a_wrong_key_password_is_said_to_be_one(tmp_path):
    """librdkafka says only "ssl.key.location failed: ... PEM lib"."""
    from confluent_kafka import Producer

    cert, key = _client_certificate(tmp_path, "app", password=b"right")
    config = {"bootstrap.servers": "127.0.0.1:1", "security.protocol": "SSL",
              "ssl.certificate.location": str(cert), "ssl.key.location": str(key),
              "ssl.key.password": "wrong", "logger": logging.getLogger("test.quiet")}
    with pytest.raises(ClientConfigRefused) as refused:
        make_client(Producer, config)
    assert refused.value.detail.endswith(
        "(the key is encrypted: is ssl.key.password its password?)"), refused.value.detail
    assert refused.value.keys[:2] == ["ssl.key.location", "ssl.key.password"]
    make_client(Producer, {**config, "ssl.key.password": "right"})  # the right one


def test_an_expired_broker_certificate_is_named_as_such(tmp_path):
    """librdkafka says "certificate verify failed ... verify that ssl.ca.location is correctly
    configured" for a certificate whose CA is right and whose time is past. A TLS server of
    the test's stands in for the broker: only its handshake is at stake."""
    import datetime
    import socket
    import ssl
    import threading

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    from streamfs.broker import broker_certificate_problem

    def name(cn: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(name("ca")).issuer_name(name("ca"))
          .public_key(ca_key.public_key()).serial_number(1).not_valid_before(now)
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))
    expired = (x509.CertificateBuilder().subject_name(name("broker")).issuer_name(name("ca"))
               .public_key(key.public_key()).serial_number(2)
               .not_valid_before(now - datetime.timedelta(days=10))
               .not_valid_after(now - datetime.timedelta(days=1))
               .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]),
                              critical=False)
               .sign(ca_key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    (tmp_path / "ca.pem").write_bytes(ca.public_bytes(pem))
    (tmp_path / "broker.pem").write_bytes(expired.public_bytes(pem))
    (tmp_path / "broker.key").write_bytes(key.private_bytes(
        pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(tmp_path / "broker.pem", tmp_path / "broker.key")
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        for _ in range(2):  # the checked handshake, then the one that reads the certificate
            conn, _ = listener.accept()
            try:
                server.wrap_socket(conn, server_side=True).close()
            except (ssl.SSLError, OSError):
                conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    said = broker_certificate_problem({
        "bootstrap.servers": f"localhost:{listener.getsockname()[1]}",
        "ssl.ca.location": str(tmp_path / "ca.pem")})
    thread.join(10)
    listener.close()
    assert said is not None and said.startswith("the broker's certificate is valid from ")
    assert "UTC, not now (certificate has expired): the broker needs a new one" in said


def _failure_against_no_broker(setup: str, call: str) -> tuple[str, str]:
    """Run ``setup``, then ``call`` against a broker that is down, in a process of its own:
    (the name of the exception ``call`` raised, that process's stderr)."""
    import subprocess
    import sys

    code = f"{setup}\ntry:\n    {call}\nexcept Exception as exc:\n    print(type(exc).__name__)\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    return out.stdout.strip(), out.stderr


def test_a_python_api_call_does_not_print_librdkafkas_lines():
    """librdkafka's lines are for the worker's log and `--verbose`: a Python API call against
    a broker that is down printed "FAIL [rdkafka#producer-1] ... Connection refused" lines
    through Python's last-resort handler before it raised."""
    raised, stderr = _failure_against_no_broker(
        "from streamfs.client import current_selection",
        "current_selection('s', {'bootstrap.servers': '127.0.0.1:1'}, 'x.selected')")
    assert raised == "BrokerUnreachable", stderr
    assert "rdkafka" not in stderr, stderr


def test_every_client_the_project_makes_sends_librdkafkas_lines_to_its_logger():
    """A client made from a configuration without ``logger`` printed librdkafka's lines
    straight to stderr: ``produce_features``'s check of the input topic, under a user's plain
    ``{"bootstrap.servers": ...}``, printed "%6|...|BGQUEUE|rdkafka#producer-9| Purging 1
    unserved events from background queue" (found in a kill audit)."""
    raised, stderr = _failure_against_no_broker(
        "from confluent_kafka.admin import AdminClient\nfrom streamfs.broker import make_client\n"
        "admin = make_client(AdminClient, {'bootstrap.servers': '127.0.0.1:1'})",
        "admin.list_topics(timeout=3)")
    assert raised == "KafkaException", stderr
    assert "rdkafka" not in stderr, stderr


def test_a_lost_broker_is_said_without_a_count_that_contradicts_it(caplog, monkeypatch):
    """librdkafka's count can lag behind its event: a worker logged "the broker does not answer
    (0/2 brokers are down)". A count of none down is left out; another is kept."""
    from confluent_kafka import KafkaError

    from streamfs import broker

    monkeypatch.setattr(broker, "_unreachable_said_at", {})  # said once a minute at most
    with caplog.at_level(logging.WARNING, logger="streamfs"):
        broker.say_unreachable(KafkaError(KafkaError._ALL_BROKERS_DOWN,
                                          "0/2 brokers are down"))
        monkeypatch.setattr(broker, "_unreachable_said_at", {})
        broker.say_unreachable(KafkaError(KafkaError._ALL_BROKERS_DOWN,
                                          "2/2 brokers are down"))
    assert [r.getMessage() for r in caplog.records] == [
        "the broker does not answer; still trying: Ctrl-C stops",
        "the broker does not answer (2/2 brokers are down); still trying: Ctrl-C stops"]


def test_the_default_address_unreachable_points_to_the_local_broker_s_own():
    """A terminal opened for the worker has no STREAMFS_BOOTSTRAP_SERVERS: "is the broker
    running?" misled, as the project's broker runs on a free port of its own."""
    import socket

    from streamfs.broker import DEFAULT_BOOTSTRAP, BrokerUnreachable, check_reachable

    with socket.socket() as probe:
        if probe.connect_ex(("127.0.0.1", 9092)) == 0:
            pytest.skip("something listens on 127.0.0.1:9092 here")
    with pytest.raises(BrokerUnreachable, match=r"`bash ops/kafka/broker.sh status` prints its "
                                                 r"address\)$"):
        check_reachable({"bootstrap.servers": DEFAULT_BOOTSTRAP}, timeout=5)
    with pytest.raises(BrokerUnreachable) as other:
        check_reachable({"bootstrap.servers": "127.0.0.1:1"}, timeout=5)
    assert "broker.sh" not in str(other.value)
