"""streamfs with SASL/OAUTHBEARER: its clients get their tokens from an OAuth token endpoint
(client credentials) and log in with them at the secured test broker, whose ACLs name the
token's subject. Before the token endpoint's settings, OAUTHBEARER was taken as a
mechanism but no client could get a token: every command said the broker was unreachable."""

from __future__ import annotations

import json
import os
import ssl
import threading
import time
from unittest import mock

import pytest

from tests.cli.test_cli_kafka import streamfs
from tests.cli.test_kafka_security import (USER, assert_final_is_offline, created_by_admin,
                                           least_privilege, one_line_denial, pipeline_runs)
from tests.token_endpoint import TokenEndpoint

pytestmark = pytest.mark.kafka

SECRET = "client-secret"


@pytest.fixture(scope="module")
def token_endpoint():
    with TokenEndpoint({USER: SECRET}) as endpoint:
        yield endpoint


def oauth_env(secured_kafka, token_endpoint, prefix: str, **more: str) -> dict:
    """A `streamfs` subprocess's environment as OAuth client USER (``more``: replacements)."""
    env = {k: v for k, v in secured_kafka.env(USER, prefix).items()
           if k not in ("STREAMFS_SASL_USERNAME", "STREAMFS_SASL_PASSWORD")}
    return {**env, "STREAMFS_SASL_MECHANISM": "OAUTHBEARER",
            "STREAMFS_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL": token_endpoint.url,
            "STREAMFS_SASL_OAUTHBEARER_CLIENT_ID": USER,
            "STREAMFS_SASL_OAUTHBEARER_CLIENT_SECRET": SECRET,
            "STREAMFS_SASL_OAUTHBEARER_SCOPE": "kafka", **more}


def test_an_oauth_client_runs_worker_produce_and_watch(secured_kafka, token_endpoint, names,
                                                       wdbc_csv, tmp_path):
    """The least-privilege ACLs of README, Kafka security, granted to the token's subject,
    are enough for the worker, `produce` and `watch`; the selection equals the offline one."""
    prefix, app = names
    created_by_admin(secured_kafka, prefix, app)
    secured_kafka.grant(USER, *least_privilege(prefix, app))
    env = {**oauth_env(secured_kafka, token_endpoint, prefix), "STREAMFS_APP_ID": app}
    asked = token_endpoint.requests
    pipeline_runs(env, {"STREAMFS_DATA_DIR": str(tmp_path / "data")}, wdbc_csv, "tokens")
    assert token_endpoint.requests > asked  # the tokens came from the endpoint


@pytest.mark.parametrize("command", [("watch", "x", "--once"), ("worker",)])
def test_a_token_refused_by_the_endpoint_is_one_line(secured_kafka, token_endpoint, names,
                                                     tmp_path, command):
    prefix, _ = names
    env = oauth_env(secured_kafka, token_endpoint, prefix,
                    STREAMFS_SASL_OAUTHBEARER_CLIENT_SECRET="wrong", STREAMFS_WEB_PORT="0",
                    STREAMFS_DATA_DIR=str(tmp_path / "data"))
    one_line_denial(streamfs(*command, env=env, timeout=60),
                    f"could not get a token for OAuth client '{USER}' from {token_endpoint.url}",
                    "invalid_client", "check STREAMFS_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL")


def test_an_endpoint_that_does_not_answer_is_one_line(secured_kafka, token_endpoint, names):
    prefix, _ = names
    env = oauth_env(secured_kafka, token_endpoint, prefix,
                    STREAMFS_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL="http://127.0.0.1:1/token")
    one_line_denial(streamfs("watch", "x", "--once", env=env, timeout=60),
                    "could not get a token for OAuth client", "from http://127.0.0.1:1/token")


def test_an_acl_denial_names_the_oauth_client(secured_kafka, token_endpoint, names):
    prefix, app = names
    created_by_admin(secured_kafka, prefix, app)
    out = streamfs("watch", "x", "--once", env=oauth_env(secured_kafka, token_endpoint, prefix))
    one_line_denial(out, f"Kafka denied OAuth client '{USER}' reading topic "
                         f"'{prefix}selected-features'", "READ and DESCRIBE")


def test_an_https_endpoint_is_verified_against_the_given_or_the_system_cas(secured_kafka, names):
    """Without STREAMFS_HTTPS_CA_LOCATION the clients read the system's CA file (the wheel's
    librdkafka looked for a Red Hat path, which Debian does not have, whatever endpoint);
    an endpoint whose CA that file lacks is one line naming the setting; with its CA the
    token comes."""
    prefix, _ = names
    tls = secured_kafka.ca.parent  # the broker's certificate, for 127.0.0.1, and its CA
    with TokenEndpoint({USER: SECRET}, tls=(str(tls / "broker.pem"),
                                            str(tls / "broker.key"))) as endpoint:
        assert endpoint.url.startswith("https://")
        env = oauth_env(secured_kafka, endpoint, prefix)
        untrusted = streamfs("watch", "x", "--once", env=env, timeout=60)
        one_line_denial(untrusted, f"could not get a token for OAuth client '{USER}'",
                        "unable to get local issuer certificate",
                        "check STREAMFS_HTTPS_CA_LOCATION",
                        f"this client read {ssl.get_default_verify_paths().cafile}")
        assert endpoint.requests == 0  # refused in the handshake
        trusted = streamfs("watch", "x", "--once", env={
            **env, "STREAMFS_HTTPS_CA_LOCATION": str(secured_kafka.ca)}, timeout=60)
        assert endpoint.requests >= 1
        # logged in: the broker answered, and its ACLs deny what no grant allowed
        one_line_denial(trusted, f"Kafka denied OAuth client '{USER}' reading topic")


def test_the_worker_waits_out_a_token_endpoint_outage(secured_kafka, names, wdbc_csv,
                                                      tmp_path):
    """Tokens of 6 s, and the endpoint away until they expired: the worker says that it gets
    no token, waits (neither exit 77 nor a crash), and serves a stream published once the
    endpoint is back, with the selection `streamfs select` makes. A reader that logged in
    before the outage reads on after it. Both had exited 77 in some outages, taking the
    broker's refusal of a re-authentication with the expired token for a refused token."""
    from streamfs.client import SelectionReader
    from streamfs.settings import KAFKA_SETTINGS, Settings
    from streamfs.topics import load_catalogue
    from streamfs.worker.process import WorkerProcess, free_port

    prefix, app = names
    created_by_admin(secured_kafka, prefix, app)
    secured_kafka.grant(USER, *least_privilege(prefix, app))
    port = free_port()
    endpoint = TokenEndpoint({USER: SECRET}, lifetime=6, port=port)
    env = oauth_env(secured_kafka, endpoint, prefix)
    security = {k: v for k, v in env.items() if k in KAFKA_SETTINGS.values()}
    worker = WorkerProcess(secured_kafka.bootstrap, prefix, app, tmp_path / "worker.log",
                           tmp_path / "data", **security)
    with mock.patch.dict(os.environ, env):
        client_config = Settings.from_env().kafka_config()
    followed: list = []  # the reader's results, or what it raised

    def follow(reader: SelectionReader) -> None:
        try:
            followed.extend(reader.updates("after-outage", until_final=True, timeout=400))
        except BaseException as exc:  # noqa: BLE001 - asserted on the test's thread
            followed.append(exc)

    try:
        with endpoint:
            worker.start().wait_ready()
            reader = SelectionReader(client_config, load_catalogue(prefix)["selected"].name)
            reader.assign()  # logged in, with a token that expires during the outage
        follower = threading.Thread(target=follow, args=(reader,), daemon=True)
        follower.start()
        deadline = time.monotonic() + 120  # the tokens expire; the next logins fail
        while "no OAUTHBEARER token from the token endpoint" not in worker.log_tail(400):
            assert time.monotonic() < deadline and worker.proc.poll() is None, worker.log_tail()
            time.sleep(0.2)  # polling the worker's log, not waiting for our own work
        while (health := worker.health() or {}).get("status") != "broker-unreachable":
            assert time.monotonic() < deadline and worker.proc.poll() is None, worker.log_tail()
            time.sleep(0.2)  # polling the worker's /health
        # the token endpoint's silence, or the broker's refusal of the expired token after it
        assert health["reason"].startswith((
            "no OAUTHBEARER token from the token endpoint",
            "the broker refused this client's OAUTHBEARER login after it had logged in"))
        with TokenEndpoint({USER: SECRET}, lifetime=6, port=port):
            produced = streamfs("produce", "features", str(wdbc_csv), "--label", "diagnosis",
                                "--stream", "after-outage", "-a", "saola", env={
                                    **env, "STREAMFS_APP_ID": app})
            assert produced.returncode == 0, produced.stderr
            waited = streamfs("watch", "after-outage", "--until-final", "--timeout", "240",
                              "--json", env=env)
            assert waited.returncode == 0, waited.stderr + worker.log_tail()
            follower.join(120)
        reader.close()
    finally:
        worker.stop()
    assert worker.proc.returncode == 0, worker.log_tail()
    assert "Traceback" not in worker.log_tail(2000)
    assert_final_is_offline(waited.stdout, wdbc_csv, env)
    assert not follower.is_alive()
    assert followed and isinstance(followed[-1], dict), followed[-1:]
    assert followed[-1]["final"]
    assert followed[-1]["selection"] == json.loads(waited.stdout.splitlines()[-1])["selection"]


def test_a_python_config_written_by_hand_gets_its_token(secured_kafka, token_endpoint, names):
    """librdkafka asks a token endpoint only with sasl.oauthbearer.method=oidc, which the
    commands set: a Python user's configuration without it (as the README's keys list it) was
    said to be an unreachable broker ("is the broker running?")."""
    from streamfs.broker import AccessDenied
    from streamfs.client import current_selection

    prefix, _ = names
    config = {"bootstrap.servers": secured_kafka.bootstrap, "security.protocol": "SASL_SSL",
              "ssl.ca.location": str(secured_kafka.ca), "sasl.mechanism": "OAUTHBEARER",
              "sasl.oauthbearer.token.endpoint.url": token_endpoint.url,
              "sasl.oauthbearer.client.id": USER,
              "sasl.oauthbearer.client.secret": SECRET, "sasl.oauthbearer.scope": "kafka"}
    asked = token_endpoint.requests
    # logged in: the broker's ACLs, which grant this client nothing, answer
    with pytest.raises(AccessDenied, match=f"Kafka denied OAuth client '{USER}' reading topic"):
        current_selection("x", config, f"{prefix}selected-features")
    assert token_endpoint.requests > asked
