"""ops/kafka/broker.sh on a data directory of its own (a JVM start or two: about 20 s)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.external import unavailable

SCRIPT = Path(__file__).resolve().parents[2] / "ops" / "kafka" / "broker.sh"


def _broker(run: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True,
                          env={**os.environ, "STREAMFS_RUN": str(run)}, timeout=300)


@pytest.mark.kafka
def test_restart_after_stop_starts_the_broker_on_its_port(tmp_path):
    if shutil.which("java") is None:
        unavailable("no java to run ops/kafka/broker.sh")
    started = _broker(tmp_path, "start")
    assert started.returncode == 0, started.stderr[-3000:]
    address = started.stdout.strip().splitlines()[-1]
    try:
        assert _broker(tmp_path, "stop").returncode == 0
        restarted = _broker(tmp_path, "restart")
        assert restarted.returncode == 0, restarted.stderr[-3000:]
        assert restarted.stdout.strip().splitlines()[-1] == address
        assert "not running: starting it again" in restarted.stderr
        assert _broker(tmp_path, "status").stdout.strip() == address
    finally:
        _broker(tmp_path, "stop")


def test_a_bad_node_count_security_or_certificate_user_is_refused(tmp_path):
    """Checked before anything is fetched or started: one line naming the setting, exit 2."""
    for env, said in [({"KAFKA_NODES": "three"}, "KAFKA_NODES: 'three' is not a number"),
                      ({"KAFKA_NODES": "0"}, "KAFKA_NODES: '0' is not a number"),
                      ({"KAFKA_NODES": "3", "KAFKA_TLS": "1"}, "unset KAFKA_SASL_USERS and KAFKA_TLS"),
                      ({"KAFKA_TLS": "yes"}, "KAFKA_TLS: 'yes' is not 1 (TLS) or mutual"),
                      ({"KAFKA_TLS": "1", "KAFKA_TLS_USERS": "app"},
                       "client certificates are for KAFKA_TLS=mutual"),
                      ({"KAFKA_TLS": "mutual", "KAFKA_TLS_USERS": "app a/b"},
                       "KAFKA_TLS_USERS: 'a/b' is not a user name"),
                      ({"KAFKA_OAUTHBEARER": "1"}, "KAFKA_OAUTHBEARER: needs KAFKA_SASL_USERS")]:
        proc = subprocess.run(["bash", str(SCRIPT), "start"], capture_output=True, text=True,
                              env={**os.environ, "STREAMFS_RUN": str(tmp_path), **env},
                              timeout=60)
        assert proc.returncode == 2 and said in proc.stderr, (env, proc.stderr)
        assert not (tmp_path / "nodes").exists()  # nothing formatted


def test_kill_node_names_the_nodes_there_are(tmp_path):
    for node in ("4", "x", ""):
        proc = _broker(tmp_path, "kill-node", node)
        assert proc.returncode == 2, proc.stderr
        assert f"no node '{node}' in {tmp_path} (nodes 1 to 1)" in proc.stderr



def test_start_refuses_a_run_directory_it_did_not_make(tmp_path):
    """It wiped whatever STREAMFS_RUN named ($HOME, a shared directory) for its data."""
    (tmp_path / "important.txt").write_text("operator data")
    proc = _broker(tmp_path, "start")
    assert proc.returncode == 2, proc.stderr
    assert "not empty and not a run directory of this script" in proc.stderr
    assert (tmp_path / "important.txt").read_text() == "operator data"
