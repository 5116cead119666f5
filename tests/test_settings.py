"""Settings from the environment (no broker)."""

from __future__ import annotations

import os
import ssl

import pytest

from streamfs.settings import Settings


def _refusal(monkeypatch, **env: str) -> str:
    """The message of the ValueError that ``Settings.from_env()`` raises with ``env`` set."""
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ValueError) as refused:
        Settings.from_env()
    return str(refused.value)


def test_the_app_id_follows_the_topic_prefix_unless_set(monkeypatch):
    """Two deployments on one cluster (two prefixes) get their own consumer group and
    changelogs by default; the default prefix keeps the app id 'streamfs'."""
    monkeypatch.delenv("STREAMFS_APP_ID", raising=False)
    monkeypatch.delenv("STREAMFS_TOPIC_PREFIX", raising=False)
    assert Settings.from_env().app_id == "streamfs"
    assert Settings.from_env(topic_prefix="staging.").app_id == "staging"
    monkeypatch.setenv("STREAMFS_TOPIC_PREFIX", "prod-")
    assert Settings.from_env().app_id == "prod"
    monkeypatch.setenv("STREAMFS_APP_ID", "mine")
    assert Settings.from_env().app_id == "mine"


@pytest.mark.parametrize("name,value,needle", [
    ("STREAMFS_BATCH_MS", "0", "STREAMFS_BATCH_MS must be a number of milliseconds more than "
                               "0, at most 10000"),
    ("STREAMFS_BATCH_MS", "inf", "STREAMFS_BATCH_MS must be a number of milliseconds"),
    ("STREAMFS_BATCH_MESSAGES", "0", "STREAMFS_BATCH_MESSAGES must be a whole number from 1 to "
                                     "1000000"),
    ("STREAMFS_MAX_MESSAGE_BYTES", "0", "STREAMFS_MAX_MESSAGE_BYTES must be a whole number from 1"),
    ("STREAMFS_MAX_BUFFER_BYTES", "0", "STREAMFS_MAX_BUFFER_BYTES must be a whole number more "
                                       "than 0"),
    ("STREAMFS_SESSION_TIMEOUT", "0.5", "STREAMFS_SESSION_TIMEOUT must be a number of seconds "
                                        "from 6 to 1800"),
    ("STREAMFS_TRANSACTION_TIMEOUT", "1000", "STREAMFS_TRANSACTION_TIMEOUT must be a number of "
                                             "seconds from 1 to 900"),
    ("STREAMFS_BATCH_BYTES", "1.5", "STREAMFS_BATCH_BYTES must be a whole number"),
])
def test_settings_a_worker_cannot_run_with_are_refused_by_name(monkeypatch, name, value, needle):
    monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match=needle):
        Settings.from_env()


@pytest.mark.parametrize("name,values,words", [
    ("STREAMFS_MAX_MESSAGE_BYTES", ["-1", "0", "abc", "1000000000"],
     "a whole number from 1 to 999934464"),
    ("STREAMFS_BATCH_BYTES", ["-5", "0", "1.5"], "a whole number more than 0"),
    ("STREAMFS_BATCH_MESSAGES", ["0", "1.5", "1000001"], "a whole number from 1 to 1000000"),
    # 3e9 made the consumer's wait return at once (a busy loop), 400000 stalled liveness
    ("STREAMFS_BATCH_MS", ["-1", "0", "inf", "nan", "abc", "10000.5", "3e9"],
     "a number of milliseconds more than 0, at most 10000"),
    ("STREAMFS_REPLICATION_FACTOR", ["-1", "x", "10001"], "a whole number from 0 to 10000"),
    ("STREAMFS_WEB_PORT", ["-1", "65536"], "a whole number from 0 to 65535"),
    ("STREAMFS_SESSION_TIMEOUT", ["abc", "-1", "5"], "a number of seconds from 6 to 1800"),
])
def test_a_setting_s_message_states_its_true_range_whatever_the_mistake(monkeypatch, name,
                                                                       values, words):
    """A value that does not parse and one out of range get the same message: it gave
    "0 or more" for -1 and then refused 0, and "more than 0" for inf."""
    for value in values:
        assert _refusal(monkeypatch, **{name: value}).startswith(f"{name} must be {words}"), value


def test_the_range_bounds_are_accepted_and_every_numeric_setting_has_one(monkeypatch):
    from dataclasses import fields

    from streamfs.settings import _RANGES, MAX_MESSAGE_BYTES_LIMIT

    numeric = {f.name for f in fields(Settings) if f.type in ("int", "float")}
    assert set(_RANGES) == numeric
    monkeypatch.setenv("STREAMFS_MAX_MESSAGE_BYTES", str(MAX_MESSAGE_BYTES_LIMIT))
    monkeypatch.setenv("STREAMFS_REPLICATION_FACTOR", "0")
    monkeypatch.setenv("STREAMFS_SESSION_TIMEOUT", "1800")
    monkeypatch.setenv("STREAMFS_BATCH_MS", "0.5")
    settings = Settings.from_env()
    assert (settings.max_message_bytes, settings.session_timeout) == (999934464, 1800.0)


def test_the_batch_message_bound_is_the_most_one_fetch_takes():
    """A worker with more (2,000,000) started, then stopped with a traceback, exit 70, at the
    first input it fetched, after every restart: confluent-kafka's consume() refuses it."""
    from confluent_kafka import Consumer

    from streamfs.settings import MAX_BATCH_MESSAGES

    consumer = Consumer({"bootstrap.servers": "127.0.0.1:1", "group.id": "g"})
    try:
        assert consumer.consume(num_messages=MAX_BATCH_MESSAGES, timeout=0) == []
        with pytest.raises(ValueError):
            consumer.consume(num_messages=MAX_BATCH_MESSAGES + 1, timeout=0)
    finally:
        consumer.close()
    with pytest.raises(ValueError, match="STREAMFS_BATCH_MESSAGES must be a whole number "
                                         "from 1 to 1000000"):
        Settings(batch_messages=MAX_BATCH_MESSAGES + 1).check()
    Settings(batch_messages=MAX_BATCH_MESSAGES).check()


def test_the_replication_factor_bound_is_the_most_the_admin_client_sends():
    """Above it (40000), `topics create` printed a traceback and the worker exited 70 with
    one: the admin client raises ValueError before it asks the broker."""
    from confluent_kafka.admin import AdminClient, NewTopic

    from streamfs.settings import MAX_REPLICATION_FACTOR

    admin = AdminClient({"bootstrap.servers": "127.0.0.1:1"})
    admin.create_topics([NewTopic("t", 1, MAX_REPLICATION_FACTOR)], request_timeout=0.1)
    with pytest.raises(ValueError):
        admin.create_topics([NewTopic("t", 1, MAX_REPLICATION_FACTOR + 1)], request_timeout=0.1)
    with pytest.raises(ValueError, match="STREAMFS_REPLICATION_FACTOR must be a whole number "
                                         "from 0 to 10000"):
        Settings(replication_factor=MAX_REPLICATION_FACTOR + 1).check()
    Settings(replication_factor=MAX_REPLICATION_FACTOR).check()


@pytest.mark.parametrize("env,needle", [
    ({"STREAMFS_SECURITY_PROTOCOL": "bogus"}, "STREAMFS_SECURITY_PROTOCOL must be one of "
     "PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL, got 'bogus'"),
    ({"STREAMFS_SECURITY_PROTOCOL": "SASL_PLAINTEXT", "STREAMFS_SASL_MECHANISM": "FOO"},
     "STREAMFS_SASL_MECHANISM must be one of GSSAPI, PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, "
     "OAUTHBEARER, got 'FOO'"),
    # librdkafka takes the mechanism only as it documents it
    ({"STREAMFS_SECURITY_PROTOCOL": "SASL_SSL", "STREAMFS_SASL_MECHANISM": "scram-sha-256"},
     "STREAMFS_SASL_MECHANISM must be one of"),
    ({"STREAMFS_SECURITY_PROTOCOL": "SSL", "STREAMFS_SSL_CA_LOCATION": "/nonexistent"},
     "STREAMFS_SSL_CA_LOCATION must name a file or directory of CA certificates (or be "
     "'probe'), but '/nonexistent' does not exist"),
    ({"STREAMFS_SECURITY_PROTOCOL": "SSL", "STREAMFS_SSL_CERTIFICATE_LOCATION": "/nonexistent"},
     "STREAMFS_SSL_CERTIFICATE_LOCATION must name a file, but '/nonexistent' does not exist"),
    ({"STREAMFS_SECURITY_PROTOCOL": "SSL", "STREAMFS_SSL_KEY_LOCATION": "{dir}"},
     "STREAMFS_SSL_KEY_LOCATION must name a file, but '{dir}' is a directory"),
])
def test_security_settings_librdkafka_would_refuse_are_refused_by_name(monkeypatch, tmp_path,
                                                                       env, needle):
    """A client made with them raised KafkaException (_INVALID_ARG) with a traceback."""
    refusal = _refusal(monkeypatch, **{name: value.format(dir=tmp_path)
                                       for name, value in env.items()})
    assert needle.format(dir=tmp_path) in refusal


def test_security_settings_librdkafka_takes_are_taken_and_make_clients(monkeypatch, tmp_path):
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient

    key = tmp_path / "client.key"
    key.write_text("not checked before the client reads it")
    monkeypatch.setenv("STREAMFS_BOOTSTRAP_SERVERS", "127.0.0.1:1")
    monkeypatch.setenv("STREAMFS_SECURITY_PROTOCOL", "sasl_ssl")  # any case
    monkeypatch.setenv("STREAMFS_SASL_MECHANISM", "SCRAM-SHA-512")
    monkeypatch.setenv("STREAMFS_SASL_USERNAME", "u")
    monkeypatch.setenv("STREAMFS_SASL_PASSWORD", "p")
    monkeypatch.setenv("STREAMFS_SSL_CA_LOCATION", "probe")
    config = Settings.from_env().kafka_config()
    assert config["security.protocol"] == "sasl_ssl"
    for make in (AdminClient, Producer, lambda c: Consumer({**c, "group.id": "g"})):
        make(config)  # librdkafka takes them too
    monkeypatch.setenv("STREAMFS_SSL_CA_LOCATION", str(tmp_path))  # a directory of CAs
    monkeypatch.setenv("STREAMFS_SSL_KEY_LOCATION", str(key))
    monkeypatch.setenv("STREAMFS_SSL_CERTIFICATE_LOCATION", str(key))
    assert Settings.from_env().security["ssl.key.location"] == str(key)


@pytest.mark.parametrize("pem, encrypted", [
    ("-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIF\n-----END ENCRYPTED PRIVATE KEY-----\n",
     True),  # PKCS#8
    ("-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-256-CBC,00\n\n"
     "MIIE\n-----END RSA PRIVATE KEY-----\n", True),  # OpenSSL's traditional format
    ("-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n", False),
])
def test_client_certificate_settings_librdkafka_would_fail_on_are_refused(monkeypatch, tmp_path,
                                                                          pem, encrypted):
    """Each half of a client certificate alone, and an encrypted key without its password:
    librdkafka sent no certificate (the broker then refused the handshake), refused the
    client with "no certificate assigned", or with "PEM lib"."""
    cert, key = tmp_path / "client.pem", tmp_path / "client.key"
    cert.write_text("a certificate")
    key.write_text(pem)
    monkeypatch.setenv("STREAMFS_SECURITY_PROTOCOL", "SSL")
    assert _refusal(monkeypatch, STREAMFS_SSL_CERTIFICATE_LOCATION=str(cert)) == (
        "STREAMFS_SSL_CERTIFICATE_LOCATION is set without STREAMFS_SSL_KEY_LOCATION: the Kafka "
        "client sends its certificate only with the private key's file")
    monkeypatch.delenv("STREAMFS_SSL_CERTIFICATE_LOCATION")
    assert _refusal(monkeypatch, STREAMFS_SSL_KEY_LOCATION=str(key)).startswith(
        "STREAMFS_SSL_KEY_LOCATION is set without STREAMFS_SSL_CERTIFICATE_LOCATION")
    monkeypatch.setenv("STREAMFS_SSL_CERTIFICATE_LOCATION", str(cert))
    if encrypted:
        assert _refusal(monkeypatch) == (
            f"STREAMFS_SSL_KEY_LOCATION names an encrypted private key ({str(key)!r}): set its "
            "password in STREAMFS_SSL_KEY_PASSWORD")
        monkeypatch.setenv("STREAMFS_SSL_KEY_PASSWORD", "pw")
    assert Settings.from_env().kafka_config()["ssl.key.location"] == str(key)


@pytest.mark.parametrize("value", ["", " ", "a b", "w0\n", "w/0", "wörker", "w:0", ".", "..",
                                   "x" * 250])
def test_an_instance_id_kafka_would_not_take_is_refused_by_name(monkeypatch, value):
    """Kafka's rule for a group.instance.id (its Java client's; librdkafka sends anything):
    an empty or blank value, a space, a control character, a slash, a colon, a letter beyond
    ASCII, '.', '..' or more than 249 characters."""
    assert _refusal(monkeypatch, STREAMFS_INSTANCE_ID=value) == (
        "STREAMFS_INSTANCE_ID must be 1 to 249 characters, each an ASCII letter or digit, '.', "
        f"'_' or '-', and not '.' or '..' (Kafka's rule for a group.instance.id), got {value!r}")


def test_the_instance_id_is_unset_by_default_and_taken_as_kafka_takes_it(monkeypatch):
    monkeypatch.delenv("STREAMFS_INSTANCE_ID", raising=False)
    assert Settings.from_env().instance_id is None  # dynamic membership
    for value in ["worker-0", "streamfs.host_1", "A", "..a", "x" * 249]:
        monkeypatch.setenv("STREAMFS_INSTANCE_ID", value)
        assert Settings.from_env().instance_id == value
    with pytest.raises(ValueError, match="STREAMFS_INSTANCE_ID must be"):
        Settings(instance_id="a b").check()  # as given in Python, too


@pytest.mark.parametrize("value", ["a b.", "streamfs/", "wörk.", "x" * 233])
def test_a_topic_prefix_kafka_would_not_take_is_refused_by_name(monkeypatch, value):
    """A topic name of other characters, or longer than 249 with 'selected-features': the
    broker refused it, and `watch` said to create the topics, which failed the same way."""
    assert _refusal(monkeypatch, STREAMFS_TOPIC_PREFIX=value) == (
        "STREAMFS_TOPIC_PREFIX must be at most 232 characters, each an ASCII letter or digit, "
        f"'.', '_' or '-' (Kafka's rule for topic names), got {value!r}")
    for ok in ("", "staging.", "team_a-1.", "x" * 232):
        assert Settings(topic_prefix=ok).topic_prefix == ok
        Settings(topic_prefix=ok).check()


@pytest.mark.parametrize("value", ["", "a b", "w/0", "wörker", "x" * 222])
def test_an_app_id_the_worker_cannot_use_is_named_as_such(value):
    """Empty, librdkafka aborted the worker (an assertion on the empty group.id, exit 134);
    with other characters or too long, the broker refused the changelog's name (exit 1,
    naming a topic, not the setting)."""
    from streamfs.settings import app_id_problem

    assert app_id_problem(value) == (
        "must be 1 to 221 characters, each an ASCII letter or digit, '.', '_' or '-' (it begins "
        f"the changelog topics' names: Kafka's rule for topic names), got {value!r}")
    for ok in ("streamfs", ".", "team_a-1.x", "x" * 221):
        assert app_id_problem(ok) is None
    # the longest one still names changelogs Kafka takes
    assert len(f"{'x' * 221}-instances-streams-changelog") == 249


def test_a_mistyped_streamfs_variable_is_named_with_the_setting_it_resembles():
    env = {"STREAMFS_BOOTSTRAP_SERVER": "k:9092", "STREAMFS_KERNEL_THREAD": "1",
           "STREAMFS_TOPIC_PREFIX": "x.", "STREAMFS_MY_OWN": "1", "PATH": "/bin"}
    assert Settings.mistyped(env) == [
        "STREAMFS_BOOTSTRAP_SERVER is not a streamfs setting, and is ignored: did you mean "
        "STREAMFS_BOOTSTRAP_SERVERS?",
        "STREAMFS_KERNEL_THREAD is not a streamfs setting, and is ignored: did you mean "
        "STREAMFS_KERNEL_THREADS?"]
    assert Settings.mistyped({name: "1" for name in Settings.variables()}) == []
    # a word left out of the name (STREAMFS_BOOTSTRAP was ignored without a word, and the
    # worker went to 127.0.0.1:9092); a word two settings end with (ID) names neither
    assert [line.split(" is ")[0] + line.split("did you mean")[1] for line in Settings.mistyped(
        {"STREAMFS_BOOTSTRAP": "k:9092", "STREAMFS_PREFIX": "x.", "STREAMFS_ID": "a"})] == [
        "STREAMFS_BOOTSTRAP STREAMFS_BOOTSTRAP_SERVERS?", "STREAMFS_PREFIX STREAMFS_TOPIC_PREFIX?"]


def test_every_streamfs_variable_the_project_names_is_known():
    # OTHER_VARIABLES is kept by hand: a variable added elsewhere and not there would be
    # reported as a typo when it resembles another
    import os
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    named = set()
    for top, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".") or d == ".ci"]  # .venv, .git, ...
        dirs[:] = [d for d in dirs if d not in ("__pycache__", "node_modules")]
        for name in files:
            try:
                text = (Path(top) / name).read_text("utf-8")
            except (UnicodeDecodeError, OSError):
                continue  # not text
            named |= set(re.findall(r"STREAMFS_[A-Z0-9_]*[A-Z0-9]", text))
    named -= {"STREAMFS_BOOTSTRAP_SERVER", "STREAMFS_KERNEL_THREAD", "STREAMFS_MY_OWN",
              "STREAMFS_BOOTSTRAP", "STREAMFS_PREFIX", "STREAMFS_ID",  # typos, above
              "STREAMFS_SSL_CERT_LOCATION", "STREAMFS_PORT", "STREAMFS_SERVICE_HOST",
              "STREAMFS_PORT_6066_TCP_ADDR"}  # a typo and Kubernetes' service links, below
    assert named, "no file read"
    assert sorted(named - Settings.variables()) == []


def test_the_cli_warns_of_a_mistyped_variable_before_it_fails():
    import os
    import subprocess
    import sys

    env = {**os.environ, "STREAMFS_BOOTSTRAP_SERVER": "127.0.0.1:1",
           "STREAMFS_KERNEL_THREADS": "abc"}  # refused after the settings: no broker reached
    env.pop("STREAMFS_BOOTSTRAP_SERVERS", None)
    out = subprocess.run([sys.executable, "-m", "streamfs.cli", "watch", "--once"], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2, out.stderr
    assert out.stderr.startswith(
        "WARNING streamfs: STREAMFS_BOOTSTRAP_SERVER is not a streamfs setting, and is ignored: "
        "did you mean STREAMFS_BOOTSTRAP_SERVERS?\n"), out.stderr


OAUTH = {"STREAMFS_SECURITY_PROTOCOL": "SASL_SSL", "STREAMFS_SASL_MECHANISM": "OAUTHBEARER",
         "STREAMFS_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL": "https://idp.example/oauth2/token",
         "STREAMFS_SASL_OAUTHBEARER_CLIENT_ID": "app",
         "STREAMFS_SASL_OAUTHBEARER_CLIENT_SECRET": "s"}


@pytest.mark.parametrize("drop, more, says", [
    # librdkafka waited for a token nobody would give: "cannot reach Kafka"
    (["STREAMFS_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL", "STREAMFS_SASL_OAUTHBEARER_CLIENT_SECRET"],
     {}, "STREAMFS_SASL_MECHANISM=OAUTHBEARER takes its token from an OAuth token endpoint "
         "(client credentials): set STREAMFS_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL, "
         "STREAMFS_SASL_OAUTHBEARER_CLIENT_SECRET"),
    ([], {"STREAMFS_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL": "idp.example/token"},
     "STREAMFS_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL must be the http:// or https:// URL of a "
     "token endpoint, got 'idp.example/token'"),
    # a Secret's trailing newline, a space: taken, then "could not get a token" (exit 77)
    ([], {"STREAMFS_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL": "https://idp.example/token\n"},
     "must be the http:// or https:// URL of a token endpoint, got "
     "'https://idp.example/token\\n'"),
    (["STREAMFS_SASL_MECHANISM"], {},
     "STREAMFS_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL, STREAMFS_SASL_OAUTHBEARER_CLIENT_ID, "
     "STREAMFS_SASL_OAUTHBEARER_CLIENT_SECRET are for STREAMFS_SASL_MECHANISM=OAUTHBEARER, "
     "but the mechanism is not set"),
    ([], {"STREAMFS_SASL_MECHANISM": "PLAIN"}, "but the mechanism is PLAIN"),
])
def test_oauthbearer_settings_that_cannot_get_a_token_are_refused(monkeypatch, drop, more, says):
    env = {k: v for k, v in OAUTH.items() if k not in drop}
    assert says in _refusal(monkeypatch, **{**env, **more})


def test_oauthbearer_asks_its_token_endpoint(monkeypatch):
    """librdkafka's OIDC client (client credentials) takes the settings: the only source of a
    token a client configured by settings alone has."""
    from confluent_kafka import Producer

    for name, value in {**OAUTH, "STREAMFS_SASL_OAUTHBEARER_SCOPE": "kafka",
                        "STREAMFS_SASL_OAUTHBEARER_EXTENSIONS": "logicalCluster=lkc-1"}.items():
        monkeypatch.setenv(name, value)
    config = Settings.from_env().kafka_config()
    assert config["sasl.oauthbearer.method"] == "oidc"
    assert config["sasl.oauthbearer.client.id"] == "app"
    assert config["sasl.oauthbearer.extensions"] == "logicalCluster=lkc-1"
    # the token endpoint's certificate is checked against the system's CAs unless told
    assert config["https.ca.location"] == ssl.get_default_verify_paths().cafile
    assert os.path.isfile(config["https.ca.location"])
    Producer({**config, "bootstrap.servers": "127.0.0.1:1"})  # librdkafka takes them
    monkeypatch.setenv("STREAMFS_HTTPS_CA_LOCATION", __file__)
    assert Settings.from_env().kafka_config()["https.ca.location"] == __file__
    monkeypatch.setenv("STREAMFS_SASL_MECHANISM", "PLAIN")
    for name in ("STREAMFS_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL",
                 "STREAMFS_SASL_OAUTHBEARER_CLIENT_ID", "STREAMFS_SASL_OAUTHBEARER_CLIENT_SECRET",
                 "STREAMFS_SASL_OAUTHBEARER_SCOPE", "STREAMFS_SASL_OAUTHBEARER_EXTENSIONS"):
        monkeypatch.delenv(name)
    assert _refusal(monkeypatch) == ("STREAMFS_HTTPS_CA_LOCATION is for "
                                     "STREAMFS_SASL_MECHANISM=OAUTHBEARER, but the mechanism "
                                     "is PLAIN")


def test_a_settings_repr_masks_the_secrets():
    """It showed the SASL password (and would have the key's password and the OAuth client's
    secret) to whoever logged or printed the settings."""
    settings = Settings(security={"sasl.username": "app", "sasl.password": "hunter2",
                                  "ssl.key.password": "k3y",
                                  "sasl.oauthbearer.client.secret": "s3"})
    shown = repr(settings)
    assert "hunter2" not in shown and "k3y" not in shown and "'s3'" not in shown
    assert "'sasl.password': '***'" in shown and "'sasl.username': 'app'" in shown
    assert shown.startswith("Settings(bootstrap_servers='127.0.0.1:9092', app_id='streamfs'")
    assert settings.security["sasl.password"] == "hunter2"  # the clients still get it


@pytest.mark.parametrize("env, says", [
    # credentials without the protocol: a PLAINTEXT broker took the connection, unauthenticated
    ({"STREAMFS_SASL_USERNAME": "app", "STREAMFS_SASL_PASSWORD": "pw"},
     "STREAMFS_SASL_USERNAME, STREAMFS_SASL_PASSWORD are set, but STREAMFS_SECURITY_PROTOCOL "
     "(PLAINTEXT, the default) does not use SASL: set it to SASL_SSL (or SASL_PLAINTEXT), or "
     "unset them"),
    ({"STREAMFS_SECURITY_PROTOCOL": "ssl", "STREAMFS_SASL_MECHANISM": "PLAIN"},
     "STREAMFS_SASL_MECHANISM is set, but STREAMFS_SECURITY_PROTOCOL (SSL) does not use SASL"),
    ({"STREAMFS_SECURITY_PROTOCOL": "SASL_PLAINTEXT", "STREAMFS_SASL_MECHANISM": "PLAIN",
      "STREAMFS_SSL_CA_LOCATION": "probe"},
     "STREAMFS_SSL_CA_LOCATION is set, but STREAMFS_SECURITY_PROTOCOL (SASL_PLAINTEXT) does not "
     "use TLS: set it to SSL or SASL_SSL, or unset it"),
])
def test_security_settings_the_protocol_does_not_use_are_refused(monkeypatch, env, says):
    """librdkafka ignores them: SASL credentials without a SASL protocol, TLS settings
    without TLS."""
    assert _refusal(monkeypatch, **env).startswith(says)
    monkeypatch.setenv("STREAMFS_SECURITY_PROTOCOL", "SASL_SSL")  # one that uses them all
    monkeypatch.setenv("STREAMFS_SASL_USERNAME", "app")  # and what PLAIN logs in with
    monkeypatch.setenv("STREAMFS_SASL_PASSWORD", "pw")
    Settings.from_env()


@pytest.mark.parametrize("env, says", [
    ({"STREAMFS_SASL_USERNAME": "app"}, "STREAMFS_SASL_MECHANISM=SCRAM-SHA-512 logs in with a "
                                        "user name and a password: set STREAMFS_SASL_PASSWORD"),
    ({"STREAMFS_SASL_PASSWORD": "pw"}, "set STREAMFS_SASL_USERNAME"),
    ({"STREAMFS_SASL_USERNAME": "app", "STREAMFS_SASL_PASSWORD": "secret\n"},
     "STREAMFS_SASL_PASSWORD holds a line break (a Secret's or a file's trailing newline?)"),
])
def test_credentials_half_given_or_with_a_newline_name_the_variable(monkeypatch, env, says):
    """librdkafka said "sasl.username and sasl.password must be set" (not which), and a
    password read with its newline was only "Invalid username or password"."""
    refused = _refusal(monkeypatch, STREAMFS_SECURITY_PROTOCOL="SASL_SSL",
                       STREAMFS_SASL_MECHANISM="SCRAM-SHA-512", **env)
    assert says in refused
    assert "secret" not in refused  # a password is never shown


def test_a_certificate_file_this_user_cannot_read_says_so(monkeypatch, tmp_path):
    """librdkafka said only "ssl.ca.location failed: ... x509 certificate routines::BIO lib"."""
    import os

    ca = tmp_path / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    # a file of mode 0 is read by root all the same (the tests may run as root): the
    # answer of a user who may not read it
    access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode, **kw: (
        str(path) != str(ca) and access(path, mode, **kw)))
    assert _refusal(monkeypatch, STREAMFS_SECURITY_PROTOCOL="SSL",
                    STREAMFS_SSL_CA_LOCATION=str(ca)) == (
        f"STREAMFS_SSL_CA_LOCATION names {str(ca)!r}, which this user may not read "
        "(permission denied)")


@pytest.mark.parametrize("value", ["host:abc", "127.0.0.1:99999", "127.0.0.1:1;127.0.0.1:2",
                                   "h:9092,", "h:0"])
def test_a_bootstrap_list_librdkafka_would_misread_is_a_setting_mistake(value):
    """A port over 65535 connected to it modulo 65536 (99999: 34463), a bad one or ';' was
    taken as a host name: exit 69, "is the broker running?", restarted by a supervisor."""
    from click.testing import CliRunner

    from streamfs.cli import main

    out = CliRunner().invoke(main, ["watch", "--once"],
                             env={"STREAMFS_BOOTSTRAP_SERVERS": value})
    assert out.exit_code == 2 and "STREAMFS_BOOTSTRAP_SERVERS (--bootstrap-servers) must list " \
        "brokers as host:port (port 1 to 65535), separated by ','" in out.output, out.output
    for fine in ("localhost", "h1:9092,h2:9093", "SSL://h:9093", "[::1]:9092"):
        assert Settings(bootstrap_servers=fine).bootstrap_problem() is None, fine


@pytest.mark.parametrize("value", ["", " ", ",", " , "])
def test_no_bootstrap_server_is_a_setting_mistake(monkeypatch, value):
    # an empty variable (a template left unfilled) tried to connect to nothing for 14 s and
    # exited 69, "cannot reach Kafka at  (…)": a supervisor restarted it in a loop
    from click.testing import CliRunner

    from streamfs.cli import main

    env = {"STREAMFS_BOOTSTRAP_SERVERS": value}
    out = CliRunner().invoke(main, ["worker"], env=env)
    assert out.exit_code == 2 and out.output.endswith(
        f"STREAMFS_BOOTSTRAP_SERVERS (--bootstrap-servers) must name at least one broker as "
        f"host:port, got {value!r}\n"), out.output
    assert CliRunner().invoke(main, ["topics", "describe"], env=env).exit_code == 2
    assert CliRunner().invoke(main, ["algorithms"], env=env).exit_code == 0  # offline


def test_a_flag_wins_over_a_variable_that_would_not_parse_and_help_needs_none():
    """A Kubernetes service named streamfs-web puts STREAMFS_WEB_PORT=tcp://10.96.0.12:6066
    in every pod: the worker was refused even with --web-port, and so was every command's
    --help, and `select` (offline), which uses no such setting."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "STREAMFS_WEB_PORT": "tcp://10.96.0.12:6066",
           "STREAMFS_BOOTSTRAP_SERVERS": "127.0.0.1:1"}

    def streamfs(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "streamfs.cli", *args], env=env,
                              capture_output=True, text=True, timeout=120)

    for args in (("worker", "--help"), ("select", "--help"), ("algorithms",)):
        out = streamfs(*args)
        assert out.returncode == 0, (args, out.stderr)
    out = streamfs("worker", "--web-port", "0")  # on to the broker: unreachable, 69
    assert out.returncode == 69 and "cannot reach Kafka at 127.0.0.1:1" in out.stderr, \
        out.stderr
    out = streamfs("worker")  # without the flag the variable is the setting: refused
    assert out.returncode == 2 and "STREAMFS_WEB_PORT" in out.stderr, out.stderr


def test_a_blank_data_dir_is_refused_not_made(tmp_path, monkeypatch):
    """STREAMFS_DATA_DIR=" " made a directory named " " where the worker ran."""
    from click.testing import CliRunner

    from streamfs.cli import main

    monkeypatch.chdir(tmp_path)
    out = CliRunner().invoke(main, ["worker"], env={"STREAMFS_DATA_DIR": " ",
                                                    "STREAMFS_BOOTSTRAP_SERVERS": "127.0.0.1:1"})
    assert out.exit_code == 2 and "STREAMFS_DATA_DIR is blank (' ')" in out.output, out.output
    assert not (tmp_path / " ").exists()


def test_a_transaction_timeout_past_the_loop_s_poll_interval_is_refused(monkeypatch):
    """A hung producer is replaced once its transaction timed out: with 900 s the loop waited
    past its 300 s poll interval (the consumer left its group, /live said it stalled)."""
    assert _refusal(monkeypatch, STREAMFS_TRANSACTION_TIMEOUT="900").startswith(
        "STREAMFS_TRANSACTION_TIMEOUT must be under 295 seconds")
    monkeypatch.setenv("STREAMFS_SESSION_TIMEOUT", "1800")  # a longer interval: it fits
    assert Settings.from_env().transaction_timeout == 900


def test_mistyped_names_get_the_setting_meant_and_service_links_none():
    """SSL_CERT_LOCATION was taken for SSL_CA_LOCATION, a name in lower case went unnoticed,
    and the STREAMFS_PORT=tcp://... that Kubernetes gives every pod for a service named
    streamfs was "did you mean STREAMFS_WEB_PORT?" on every command."""
    said = Settings.mistyped({"STREAMFS_SSL_CERT_LOCATION": "c.pem",
                              "streamfs_bootstrap_servers": "k:9092",
                              "STREAMFS_PORT": "tcp://10.96.0.12:6066",
                              "STREAMFS_SERVICE_HOST": "10.96.0.12",
                              "STREAMFS_PORT_6066_TCP_ADDR": "10.96.0.12"})
    assert [line.rsplit(" ", 1)[1] for line in said] == [
        "STREAMFS_SSL_CERTIFICATE_LOCATION?", "STREAMFS_BOOTSTRAP_SERVERS?"], said


def test_the_state_dir_is_a_real_path():
    """The worker's first log line said "state in <tmp>/streamfs-state", not where it was."""
    import tempfile

    assert Settings().state_dir() == f"{tempfile.gettempdir()}/streamfs-state"
    assert Settings(data_dir="/srv/state").state_dir() == "/srv/state"


def test_the_result_format_is_taken_in_any_case_as_the_log_level_is():
    from click.testing import CliRunner

    from streamfs.cli import main

    out = CliRunner().invoke(main, ["-b", "127.0.0.1:1", "worker"],
                             env={"STREAMFS_RESULT_FORMAT": "JSON", "STREAMFS_WEB_PORT": "0"})
    # past the settings (it was exit 2, "must be one of msgpack, json"), on to the broker
    assert out.exit_code == 69 and "cannot reach Kafka" in out.output, out.output
