"""Run ``streamfs worker`` as a child process (tests, benchmarks, demos)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class WorkerProcess:
    """One worker subprocess with its own environment (bootstrap, topic prefix, app id)."""

    def __init__(self, bootstrap: str, prefix: str, app_id: str, log_path: Path,
                 data_dir: Path, **env: str) -> None:
        self.env = {
            **os.environ,
            "STREAMFS_BOOTSTRAP_SERVERS": bootstrap,
            "STREAMFS_TOPIC_PREFIX": prefix,
            "STREAMFS_APP_ID": app_id,
            "STREAMFS_DATA_DIR": str(data_dir),
            "PYTHONUNBUFFERED": "1",
            **env,
        }
        self.log_path = Path(log_path)
        self.proc: subprocess.Popen | None = None

    def start(self) -> "WorkerProcess":
        self.env["STREAMFS_WEB_PORT"] = str(free_port())
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen([sys.executable, "-m", "streamfs.cli", "worker"],
                                         env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                         cwd=REPO)
        return self

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def peak_rss_bytes(self) -> int | None:
        """High-water resident memory of the running worker (Linux /proc)."""
        try:
            for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
        except (FileNotFoundError, TypeError):
            return None
        return None

    def kill(self) -> None:
        """SIGKILL: the crash case."""
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)

    def pause(self) -> None:
        """SIGSTOP: a worker that stops answering (GC pause, stalled VM) without dying."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        """SIGCONT after :meth:`pause`."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        """SIGTERM and wait (a clean shutdown), SIGKILL after a minute."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)  # a paused worker cannot handle SIGTERM
            self.proc.terminate()
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(30)

    def health(self) -> dict | None:
        """The worker's ``/health`` body (whatever its status code); None while it does not
        answer (starting, or gone)."""
        url = f"http://127.0.0.1:{self.env['STREAMFS_WEB_PORT']}/health"
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                return json.load(resp)
        except urllib.error.HTTPError as exc:  # 503: starting or rebalancing
            return json.load(exc)
        except OSError:
            return None

    def wait_ready(self, timeout: float = 120.0) -> dict:
        """Poll ``/health`` until it says ``ok`` (partitions assigned, their state restored);
        returns that body. ``RuntimeError`` if the worker exits first, ``TimeoutError`` if it
        is not ready within ``timeout`` seconds, each with the log's tail."""
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the worker exited ({self.proc.returncode}):\n"
                                   f"{self.log_tail()}")
            body = self.health()
            if body is not None and body["status"] == "ok":
                return body
            if time.monotonic() > deadline:
                raise TimeoutError(f"the worker is not ready after {timeout} s:\n"
                                   f"{self.log_tail()}")
            time.sleep(0.1)  # polling another process's health endpoint

    def log_tail(self, n: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except FileNotFoundError:
            return ""
