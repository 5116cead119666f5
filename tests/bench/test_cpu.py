"""CPU seconds of the bench's processes, read from /proc (no broker)."""

from __future__ import annotations

import os
import subprocess
import sys

from streamfs.bench.cpu import CpuMeter, cpu_seconds, local_broker_pid


def test_cpu_seconds_counts_a_busy_child_and_not_a_gone_one():
    child = subprocess.Popen([sys.executable, "-c",
                              "import sys\nx = 0\nfor i in range(3 * 10**7): x += i\n"
                              "print('done', flush=True)\nsys.stdin.read()"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "done"
        # a 30-million-step Python loop takes far more than one clock tick of CPU
        assert cpu_seconds(child.pid) > 0.1
        meter = CpuMeter({"child": child.pid, "gone": None}).start()
        used = meter.stop()
        # waiting on stdin: no CPU (tick accounting may charge one 10 ms tick)
        assert set(used) == {"child"} and 0 <= used["child"] <= 0.02
    finally:
        child.communicate("")
    assert cpu_seconds(child.pid) is None


def test_local_broker_pid_only_for_the_broker_at_that_address(tmp_path, monkeypatch):
    monkeypatch.setenv("STREAMFS_RUN", str(tmp_path))
    (tmp_path / "bootstrap").write_text("127.0.0.1:9092\n")
    (tmp_path / "pid").write_text(f"{os.getpid()}\n")
    assert local_broker_pid("127.0.0.1:9092") == os.getpid()
    assert local_broker_pid("kafka.example:9092") is None  # another broker: its CPU is not ours
    (tmp_path / "pid").write_text("not a pid\n")
    assert local_broker_pid("127.0.0.1:9092") is None
    monkeypatch.setenv("STREAMFS_RUN", str(tmp_path / "missing"))
    assert local_broker_pid("127.0.0.1:9092") is None
