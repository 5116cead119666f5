"""CPU time of the processes a bench run involves (Linux ``/proc``), to tell whether a run
waited for the machine's cores or for one busy thread.

On a small machine the broker, the worker and the bench share the cores: if the processes'
CPU seconds add up to about ``cores x wall``, the run was bound by the machine; if one
process's CPU seconds are about the wall time, it was bound by that process's busiest thread.
"""

from __future__ import annotations

import os
from pathlib import Path

from streamfs.worker.process import REPO


def cpu_seconds(pid: int) -> float | None:
    """User plus system CPU seconds of process ``pid`` so far (its threads included, its
    children not); None where ``/proc`` does not have it.

    >>> cpu_seconds(os.getpid()) >= 0
    True
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name (in parentheses) may hold spaces: count fields after its ")"
    fields = stat[stat.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def local_broker_pid(bootstrap: str) -> int | None:
    """The pid of the broker of ``ops/kafka/broker.sh`` if it is the one at ``bootstrap``
    (its run directory: ``STREAMFS_RUN``, default ``<repo>/.run/kafka``); None otherwise, e.g.
    for a remote broker, whose CPU the bench cannot see."""
    run = Path(os.environ.get("STREAMFS_RUN", REPO / ".run" / "kafka"))
    try:
        if (run / "bootstrap").read_text().strip() != bootstrap.strip():
            return None
        pid = int((run / "pid").read_text().strip())
    except (OSError, ValueError):
        return None
    return pid if cpu_seconds(pid) is not None else None


class CpuMeter:
    """CPU seconds of named processes between :meth:`start` and :meth:`stop`; a process whose
    CPU time cannot be read is left out.

    >>> meter = CpuMeter({"self": os.getpid()}).start()
    >>> sum(i * i for i in range(10**5)) > 0
    True
    >>> sorted(meter.stop())
    ['self']
    """

    def __init__(self, pids: dict[str, int | None]) -> None:
        self.pids = {name: pid for name, pid in pids.items() if pid is not None}
        self._start: dict[str, float] = {}

    def start(self) -> "CpuMeter":
        self._start = {name: t for name, pid in self.pids.items()
                       if (t := cpu_seconds(pid)) is not None}
        return self

    def stop(self) -> dict[str, float]:
        out = {}
        for name, t0 in self._start.items():
            t1 = cpu_seconds(self.pids[name])
            if t1 is not None:
                out[name] = round(t1 - t0, 3)
        return out
