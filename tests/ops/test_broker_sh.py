"""ops/kafka/broker.sh on a data directory of its own (a JVM start or two: about 20 s)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.external import unavailable

SCRIPT = Path(__file__).resolve().parents[2] / "ops" / "kafka" / "broker.sh"


def _broker(command: str, run: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT), command], capture_output=True, text=True,
                          env={**os.environ, "STREAMFS_RUN": str(run)}, timeout=300)


@pytest.mark.kafka
def test_restart_after_stop_starts_the_broker_on_its_port(tmp_path):
    if shutil.which("java") is None:
        unavailable("no java to run ops/kafka/broker.sh")
    started = _broker("start", tmp_path)
    assert started.returncode == 0, started.stderr[-3000:]
    address = started.stdout.strip().splitlines()[-1]
    try:
        assert _broker("stop", tmp_path).returncode == 0
        restarted = _broker("restart", tmp_path)
        assert restarted.returncode == 0, restarted.stderr[-3000:]
        assert restarted.stdout.strip().splitlines()[-1] == address
        assert "not running: starting it again" in restarted.stderr
        assert _broker("status", tmp_path).stdout.strip() == address
    finally:
        _broker("stop", tmp_path)
