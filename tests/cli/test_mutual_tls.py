"""streamfs on a broker that requires client certificates (mutual TLS, ACLs enforced on the
certificate's user): a certificate and its key, encrypted or not, are all a user sets; a
missing or untrusted certificate, or an ACL it lacks, is one line naming what to fix (exit 77),
never "is the broker running?"; a certificate without its key, or an encrypted key without
its password, is refused before any client is made (exit 2)."""

from __future__ import annotations

import subprocess

import pytest

from tests.cli.test_cli_kafka import streamfs
from tests.cli.test_kafka_security import (USER, created_by_admin, least_privilege,
                                           one_line_denial, pipeline_runs)

pytestmark = pytest.mark.kafka

PASSWORD = "key-secret"


def encrypted_copy(key, tmp_path, password: str = PASSWORD):
    """``key`` encrypted with ``password`` (PKCS#8, AES-256), as a key kept on disk is."""
    out = tmp_path / "encrypted.key"
    subprocess.run(["openssl", "pkey", "-in", str(key), "-aes256", "-passout",
                    f"pass:{password}", "-out", str(out)], check=True, capture_output=True)
    assert "ENCRYPTED PRIVATE KEY" in out.read_text()
    return out


def test_a_certificate_user_runs_worker_produce_and_watch(mutual_tls_kafka, names, wdbc_csv,
                                                         tmp_path):
    """The least-privilege ACLs of README, Kafka security, granted to the certificate's user
    (User:app), are enough for the worker (whose key is encrypted), `produce` and `watch`, and
    the selection equals the offline one."""
    prefix, app = names
    created_by_admin(mutual_tls_kafka, prefix, app)
    mutual_tls_kafka.grant(USER, *least_privilege(prefix, app))
    env = {**mutual_tls_kafka.env(USER, prefix), "STREAMFS_APP_ID": app}
    key = encrypted_copy(mutual_tls_kafka.tls / f"{USER}.key", tmp_path)
    pipeline_runs(env, {"STREAMFS_SSL_KEY_LOCATION": str(key),
                        "STREAMFS_SSL_KEY_PASSWORD": PASSWORD,
                        "STREAMFS_DATA_DIR": str(tmp_path / "data")}, wdbc_csv, "certified")


@pytest.mark.parametrize("command", [("watch", "x", "--once"), ("worker",)])
def test_no_certificate_where_one_is_required_is_one_line(mutual_tls_kafka, names, tmp_path,
                                                          command):
    """It was "cannot reach Kafka ... is the broker running?", exit 69: the broker's TLS
    alert (bad certificate) reaches librdkafka as a transport error."""
    prefix, _ = names
    env = {**mutual_tls_kafka.env(None, prefix), "STREAMFS_WEB_PORT": "0",
           "STREAMFS_DATA_DIR": str(tmp_path / "data")}
    one_line_denial(streamfs(*command, env=env, timeout=60),
                    f"Kafka at {mutual_tls_kafka.bootstrap} requires a client certificate",
                    "set STREAMFS_SSL_CERTIFICATE_LOCATION and STREAMFS_SSL_KEY_LOCATION")


def test_a_certificate_of_another_ca_is_one_line_naming_its_subject(mutual_tls_kafka, names,
                                                                    tmp_path):
    prefix, _ = names
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=intruder", "-keyout", str(tmp_path / "intruder.key"),
                    "-out", str(tmp_path / "intruder.pem")], check=True, capture_output=True)
    env = mutual_tls_kafka.env(None, prefix, STREAMFS_SSL_CERTIFICATE_LOCATION=str(
        tmp_path / "intruder.pem"), STREAMFS_SSL_KEY_LOCATION=str(tmp_path / "intruder.key"))
    one_line_denial(streamfs("watch", "x", "--once", env=env, timeout=60),
                    "refused the client certificate 'CN=intruder'",
                    "signed by a CA that the broker's listener trusts",
                    "check STREAMFS_SSL_CERTIFICATE_LOCATION")


def test_an_acl_denial_names_the_certificate_subject(mutual_tls_kafka, names):
    """It named "this client": the ACL to grant is the certificate's user's."""
    prefix, app = names
    created_by_admin(mutual_tls_kafka, prefix, app)
    out = streamfs("watch", "x", "--once", env=mutual_tls_kafka.env(USER, prefix))
    one_line_denial(out, f"Kafka denied the user of certificate 'CN={USER}' reading topic "
                         f"'{prefix}selected-features'", "READ and DESCRIBE")


def test_key_mistakes_are_refused_before_any_client(mutual_tls_kafka, names, tmp_path):
    """A certificate without its key reached the broker without a certificate (librdkafka
    does not read the key from the certificate's file), an encrypted key without its
    password failed with "PEM lib", a wrong password too."""
    prefix, _ = names
    cert, key = mutual_tls_kafka.tls / f"{USER}.pem", mutual_tls_kafka.tls / f"{USER}.key"
    both = tmp_path / "both.pem"
    both.write_text(key.read_text() + cert.read_text())
    encrypted = encrypted_copy(key, tmp_path)
    cases = [
        ({"STREAMFS_SSL_CERTIFICATE_LOCATION": str(both)},
         "STREAMFS_SSL_CERTIFICATE_LOCATION is set without STREAMFS_SSL_KEY_LOCATION"),
        ({"STREAMFS_SSL_KEY_LOCATION": str(key)},
         "STREAMFS_SSL_KEY_LOCATION is set without STREAMFS_SSL_CERTIFICATE_LOCATION"),
        ({"STREAMFS_SSL_CERTIFICATE_LOCATION": str(cert),
          "STREAMFS_SSL_KEY_LOCATION": str(encrypted)},
         "names an encrypted private key"),
        ({"STREAMFS_SSL_CERTIFICATE_LOCATION": str(cert),
          "STREAMFS_SSL_KEY_LOCATION": str(encrypted), "STREAMFS_SSL_KEY_PASSWORD": "wrong"},
         "STREAMFS_SSL_KEY_LOCATION and STREAMFS_SSL_KEY_PASSWORD: the Kafka client refused "
         "them"),
    ]
    for more, says in cases:
        out = streamfs("watch", "x", "--once", env=mutual_tls_kafka.env(None, prefix, **more),
                       timeout=60)
        assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
        (line,) = [ln for ln in out.stderr.splitlines() if ln.startswith("Error: ")]
        assert says in line, line
