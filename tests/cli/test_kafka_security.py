"""streamfs on a secured cluster (TLS, SASL credentials, ACLs enforced), as a user of one runs
it: the ACLs the README lists are enough for every command, and a refused login, an untrusted
certificate, a protocol the listener does not speak or a missing ACL is one line naming what to
fix, exit 77, never a traceback, a hang, "does not exist" or "is the broker running?"."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time

import pytest

from tests.cli.test_cli_kafka import streamfs

pytestmark = pytest.mark.kafka

EXIT_DENIED = 77
USER = "app"
#: the settings of the secured broker's clients (SecuredKafka.env), all but the address
SECURITY_VARIABLES = ("STREAMFS_SECURITY_PROTOCOL", "STREAMFS_SASL_MECHANISM",
                      "STREAMFS_SASL_USERNAME", "STREAMFS_SASL_PASSWORD",
                      "STREAMFS_SSL_CA_LOCATION")


def worker(env: dict, tmp_path, timeout: float = 180) -> subprocess.CompletedProcess:
    """A worker run to its end: the denied ones end by themselves."""
    return streamfs("worker", env={**env, "STREAMFS_WEB_PORT": "0",
                                   "STREAMFS_DATA_DIR": str(tmp_path / "data")}, timeout=timeout)


def least_privilege(prefix: str, app: str) -> list[tuple[str, str, str]]:
    """The ACLs of README, Kafka security, for topics and changelogs an administrator made
    (the group's literal: no other group of a name that begins so)."""
    topics = [("TOPIC", f"{name}*", op) for name in (prefix, f"{app}-")
              for op in ("READ", "WRITE", "DESCRIBE", "DESCRIBE_CONFIGS")]
    return topics + [("GROUP", app, "READ"), ("TRANSACTIONAL_ID", f"{app}-*", "WRITE")]


def created_by_admin(secured_kafka, prefix: str, app: str) -> None:
    out = streamfs("topics", "create", "--app-id", app,
                   env=secured_kafka.env(secured_kafka.ADMIN, prefix))
    assert out.returncode == 0, out.stderr
    assert out.stdout.count(": created") == 6, out.stdout  # 4 topics and 2 changelogs


def one_line_denial(out: subprocess.CompletedProcess, *parts: str) -> None:
    assert out.returncode == EXIT_DENIED, out.stdout + out.stderr
    assert "Traceback" not in out.stderr, out.stderr
    (line,) = [ln for ln in out.stderr.splitlines() if ln.startswith("Error: ")]
    for part in parts:
        assert part in line, line


def assert_final_is_offline(watched: str, wdbc_csv, env: dict) -> None:
    """The last selection of `watch --json` output ``watched`` is final and names the features
    `streamfs select` selects offline (SAOLA on the WDBC CSV)."""
    final = [json.loads(line) for line in watched.splitlines()][-1]
    assert final["final"] and final["selection"]
    offline = streamfs("select", str(wdbc_csv), "--label", "diagnosis", "-a", "saola", "--json",
                       env=env)
    (result,) = [json.loads(line) for line in offline.stdout.splitlines()]
    assert [s["feature"] for s in final["selection"]] == [s["feature"] for s in result["selection"]]


def pipeline_runs(env: dict, worker_env: dict, wdbc_csv, stream: str) -> None:
    """A worker (``env`` with ``worker_env``) takes the WDBC CSV, published and watched with
    ``env``, to the offline selection, and stops cleanly."""
    run = subprocess.Popen([sys.executable, "-m", "streamfs.cli", "worker"],
                           env={**env, "STREAMFS_WEB_PORT": "0", **worker_env},
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        produced = streamfs("produce", "features", str(wdbc_csv), "--label", "diagnosis",
                            "--stream", stream, "-a", "saola", "--block-bytes", "20000",
                            env=env)
        assert produced.returncode == 0, produced.stderr
        waited = streamfs("watch", stream, "--until-final", "--timeout", "240", "--json",
                          env=env)
        assert waited.returncode == 0, waited.stderr
    finally:
        run.terminate()
        log, _ = run.communicate(timeout=60)
    assert run.returncode == 0 and "Traceback" not in log, log
    assert_final_is_offline(waited.stdout, wdbc_csv, env)


def test_least_privilege_user_runs_worker_produce_and_watch(secured_kafka, names, wdbc_csv,
                                                            tmp_path):
    """No CREATE, no ACL for the readers' groups nor for the restore's: the worker restores,
    steps and commits transactions, the results equal the offline selection, a restarted
    worker restores the state from the changelogs, and the downstream example reads the
    topics to their ends."""
    prefix, app = names
    created_by_admin(secured_kafka, prefix, app)
    secured_kafka.grant(USER, *least_privilege(prefix, app))
    env = {**secured_kafka.env(USER, prefix), "STREAMFS_APP_ID": app}

    def worker_run(data: str) -> subprocess.Popen:
        # the worker logs in with SCRAM, the commands with PLAIN: the broker takes both
        return subprocess.Popen([sys.executable, "-m", "streamfs.cli", "worker"],
                                env={**env, "STREAMFS_WEB_PORT": "0",
                                     "STREAMFS_SASL_MECHANISM": "SCRAM-SHA-512",
                                     "STREAMFS_DATA_DIR": str(tmp_path / data)},
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def stopped(run: subprocess.Popen) -> str:
        run.terminate()
        log, _ = run.communicate(timeout=60)
        assert run.returncode == 0 and "Traceback" not in log, log
        return log

    def final_of(stream: str) -> dict:
        waited = streamfs("watch", stream, "--until-final", "--timeout", "240", "--json",
                          env=env)
        assert waited.returncode == 0, waited.stderr
        return [json.loads(line) for line in waited.stdout.splitlines()][-1]

    run = worker_run("data")
    try:
        produced = streamfs("produce", "features", str(wdbc_csv), "--label", "diagnosis",
                            "--stream", "secured", "-a", "saola", "--block-bytes", "20000",
                            env=env)
        assert produced.returncode == 0, produced.stderr
        final = final_of("secured")
    finally:
        stopped(run)
    # a new worker (another data directory: no local copies) restores from the changelogs,
    # which takes the restore's own consumer, on a group no ACL names
    run = worker_run("data-2")
    try:
        produced = streamfs("produce", "instances", str(wdbc_csv), "--label", "diagnosis",
                            "--stream", "secured-rows", "-a", "ofs", env=env)
        assert produced.returncode == 0, produced.stderr
        assert final_of("secured-rows")["final"]
        downstream = subprocess.run(
            [sys.executable, "-m", "streamfs.examples.downstream", "--selection-stream",
             "secured", "--instance-stream", "secured-rows", "--timeout", "120"], env=env,
            text=True, capture_output=True, timeout=180)
        assert downstream.returncode == 0, downstream.stdout + downstream.stderr
        assert "closed after 569 instances" in downstream.stdout, downstream.stdout
    finally:
        log = stopped(run)
    assert re.search(r"restored \d+ records from local copies and [1-9]\d* from the changelog",
                     log), log
    assert final["final"]
    offline = streamfs("select", str(wdbc_csv), "--label", "diagnosis", "-a", "saola", "--json",
                       env=env)
    (result,) = [json.loads(line) for line in offline.stdout.splitlines()]
    assert [s["feature"] for s in final["selection"]] == [s["feature"] for s in result["selection"]]
    assert final["selection"]


@pytest.mark.parametrize("command, mechanism", [
    (("topics", "create"), "PLAIN"), (("watch", "x", "--once"), "SCRAM-SHA-512"),
    (("dead-letters",), "PLAIN"), (("worker",), "SCRAM-SHA-512")])
def test_refused_credentials_are_one_line(secured_kafka, names, tmp_path, command, mechanism):
    prefix, _ = names
    env = secured_kafka.env(USER, prefix, password="wrong", STREAMFS_SASL_MECHANISM=mechanism)
    out = worker(env, tmp_path, 60) if command == ("worker",) else streamfs(*command, env=env,
                                                                           timeout=60)
    one_line_denial(out, f"refused the credentials of user '{USER}'", "STREAMFS_SASL_PASSWORD")


def test_untrusted_certificate_and_wrong_protocol_are_one_line(secured_kafka, names, tmp_path,
                                                            kafka_bootstrap):
    prefix, _ = names
    other_ca = tmp_path / "other-ca.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=another CA", "-keyout", str(tmp_path / "other-ca.key"),
                    "-out", str(other_ca)], check=True, capture_output=True)
    untrusted = streamfs("watch", "x", "--once", env=secured_kafka.env(
        USER, prefix, STREAMFS_SSL_CA_LOCATION=str(other_ca)), timeout=60)
    one_line_denial(untrusted, "the TLS handshake with Kafka at", "certificate verify failed",
                    "check STREAMFS_SSL_CA_LOCATION")
    # no TLS at a TLS listener: librdkafka only logs that the broker hung up
    plain = {k: v for k, v in secured_kafka.env(USER, prefix).items()
             if k not in SECURITY_VARIABLES}
    one_line_denial(streamfs("watch", "x", "--once", env=plain, timeout=60),
                    "closed every connection at its first request", "PLAINTEXT (the default)",
                    "check STREAMFS_SECURITY_PROTOCOL")
    # TLS without SASL at the SASL_SSL listener: the broker answers the handshake, then hangs up
    tls_only = {**plain, "STREAMFS_SECURITY_PROTOCOL": "SSL",
                "STREAMFS_SSL_CA_LOCATION": str(secured_kafka.ca)}
    one_line_denial(streamfs("watch", "x", "--once", env=tls_only, timeout=60),
                    "past the handshake: its listener there expects SASL, which SSL does not use")
    # SASL without a mechanism: librdkafka's default, GSSAPI, which its build lacks
    no_mechanism = {k: v for k, v in secured_kafka.env(USER, prefix).items()
                    if k != "STREAMFS_SASL_MECHANISM"}
    out = streamfs("watch", "x", "--once", env=no_mechanism, timeout=60)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert "sasl.mechanism is not set, so librdkafka takes its default, GSSAPI" in out.stderr
    # TLS at a listener without it (the session's plain broker)
    tls_at_plain = {**plain, "STREAMFS_BOOTSTRAP_SERVERS": kafka_bootstrap,
                    "STREAMFS_SECURITY_PROTOCOL": "SSL",
                    "STREAMFS_SSL_CA_LOCATION": str(secured_kafka.ca)}
    one_line_denial(streamfs("watch", "x", "--once", env=tls_at_plain, timeout=60),
                    "the TLS handshake with Kafka at", "PLAINTEXT broker listener",
                    "its listener there does not speak TLS: set STREAMFS_SECURITY_PROTOCOL")
    # SASL at a listener without it, and a mechanism the listener does not offer: the
    # credentials were never looked at, yet "refused the credentials" was said of both
    sasl_at_plain = {**secured_kafka.env(USER, prefix), "STREAMFS_SECURITY_PROTOCOL":
                     "SASL_PLAINTEXT", "STREAMFS_BOOTSTRAP_SERVERS": kafka_bootstrap}
    del sasl_at_plain["STREAMFS_SSL_CA_LOCATION"]
    one_line_denial(streamfs("watch", "x", "--once", env=sasl_at_plain, timeout=60),
                    "answers, but its listener there does not use SASL",
                    "set STREAMFS_SECURITY_PROTOCOL to PLAINTEXT or SSL")
    other = secured_kafka.env(USER, prefix, STREAMFS_SASL_MECHANISM="SCRAM-SHA-256")
    out = streamfs("topics", "describe", env=other, timeout=60)
    one_line_denial(out, "offers PLAIN, SCRAM-SHA-512", "not SCRAM-SHA-256: set "
                                                        "STREAMFS_SASL_MECHANISM")
    assert "refused the credentials" not in out.stderr


@pytest.mark.parametrize("missing, says", [
    ("TRANSACTIONAL_ID", "WRITE on the transactional ids with the prefix '{app}-'"),
    ("GROUP", "READ on the consumer group '{app}'"),
    ("WRITE", "committing a transaction (writing to topic '{prefix}selected-features')"),
])
def test_worker_missing_an_acl_stops_and_names_it(secured_kafka, names, wdbc_csv, tmp_path,
                                                  missing, says):
    """Without its transactional ids it failed with a traceback (exit 70); without its group
    it waited for partitions forever; without WRITE on its outputs it would rewind forever."""
    prefix, app = names
    created_by_admin(secured_kafka, prefix, app)
    # WRITE: on the catalogue's topics only (the results), not on the changelogs
    dropped = ("TOPIC", f"{prefix}*", "WRITE") if missing == "WRITE" else None
    acls = [acl for acl in least_privilege(prefix, app) if acl != dropped and acl[0] != missing]
    secured_kafka.grant(USER, *acls)
    admin = secured_kafka.env(secured_kafka.ADMIN, prefix)
    produced = streamfs("produce", "features", str(wdbc_csv), "--label", "diagnosis",
                        "--stream", "denied", "-a", "saola", env=admin)
    assert produced.returncode == 0, produced.stderr
    out = worker({**secured_kafka.env(USER, prefix), "STREAMFS_APP_ID": app}, tmp_path)
    one_line_denial(out, f"Kafka denied user '{USER}'", says.format(app=app, prefix=prefix))
    # nothing of the denied run was committed: an allowed worker takes the stream from the start
    watch = streamfs("watch", "denied", "--once", env=admin)
    assert watch.returncode == 1 and "no selection yet" in watch.stderr


def test_worker_without_create_names_the_topic_to_make(secured_kafka, names, tmp_path):
    prefix, app = names
    streamfs("topics", "create", env=secured_kafka.env(secured_kafka.ADMIN, prefix))  # no --app-id
    secured_kafka.grant(USER, *least_privilege(prefix, app))
    out = worker({**secured_kafka.env(USER, prefix), "STREAMFS_APP_ID": app}, tmp_path)
    one_line_denial(out, f"creating topic '{app}-features-streams-changelog'",
                    "with --app-id for a worker's changelogs")


def test_reader_and_publisher_without_acls_are_denied_not_missing(secured_kafka, names,
                                                                  wdbc_csv):
    """The topics exist; the user may not see them: not "does not exist, start a worker"."""
    prefix, app = names
    created_by_admin(secured_kafka, prefix, app)
    env = secured_kafka.env(USER, prefix)
    watch = streamfs("watch", "x", "--once", env=env)
    one_line_denial(watch, f"reading topic '{prefix}selected-features'", "READ and DESCRIBE")
    downstream = subprocess.run(
        [sys.executable, "-m", "streamfs.examples.downstream", "--selection-stream", "x",
         "--instance-stream", "y", "--timeout", "60"], env=env, text=True, capture_output=True,
        timeout=120)
    one_line_denial(downstream, f"reading topic '{prefix}selected-features'")
    described = streamfs("topics", "describe", env=env)
    assert described.returncode == 0 and "not created yet" not in described.stdout
    assert described.stdout.count(f"(hidden from user '{USER}' by the broker's ACLs") == 6
    secured_kafka.grant(USER, ("TOPIC", f"{prefix}selected-features", "READ"),
                        ("TOPIC", f"{prefix}*", "DESCRIBE"))
    # DESCRIBE without DESCRIBE_CONFIGS: settings unread are not checked, not refused (every
    # topic was flagged REFUSED, exit 1, where `topics create` said "not checked", exit 0)
    described = streamfs("topics", "describe", env=env)
    assert described.returncode == 0, described.stdout + described.stderr
    assert described.stdout.count("(settings not readable: not checked)") == 4
    assert "REFUSED" not in described.stdout
    produced = streamfs("produce", "features", str(wdbc_csv), "--label", "diagnosis",
                        "--stream", "x", "-a", "saola", env=env)
    one_line_denial(produced, f"publishing to topic '{prefix}features'", "WRITE and DESCRIBE")


def test_publish_denied_part_way_says_what_went_out(secured_kafka, names, wdbc_csv):
    """WRITE revoked while `produce` paces a stream out: the denial said nothing of the
    messages already published, nor that the stream stays open (`--replace`), as an
    interrupted or failed publish does."""
    from confluent_kafka import Consumer, TopicPartition

    prefix, app = names
    created_by_admin(secured_kafka, prefix, app)
    acls = [("TOPIC", f"{prefix}*", "WRITE"), ("TOPIC", f"{prefix}*", "DESCRIBE"),
            ("TOPIC", f"{prefix}selected-features", "READ")]
    secured_kafka.grant(USER, *acls)
    run = subprocess.Popen([sys.executable, "-m", "streamfs.cli", "produce", "features",
                            str(wdbc_csv), "--label", "diagnosis", "--stream", "paced", "-a",
                            "saola", "--block-bytes", "4600", "--rate", "3"],
                           env=secured_kafka.env(USER, prefix), text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        # revoke once the broker holds the stream's first messages (the open and a column)
        probe = Consumer({**secured_kafka.config(secured_kafka.ADMIN), "group.id": "probe"})
        deadline = time.monotonic() + 60
        while sum(probe.get_watermark_offsets(TopicPartition(f"{prefix}features", p),
                                              timeout=10)[1] for p in range(8)) < 2:
            assert time.monotonic() < deadline and run.poll() is None, "nothing published"
            time.sleep(0.05)  # polling the broker, not waiting for our own work
        probe.close()
        secured_kafka.revoke(USER, acls[0])
        _, err = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            run.kill()
    out = subprocess.CompletedProcess(run.args, run.returncode, "", err)
    one_line_denial(out, f"publishing to topic '{prefix}features'",
                    "message(s) of stream 'paced' were already published",
                    "it stays open without 'close': publish it again with --replace")
