"""The processes of this machine, read from /proc: a test's check that a command it stopped
left no child of its own running."""

from __future__ import annotations

import os


def children_of(pid: int) -> set[int]:
    """The processes whose parent is ``pid``."""
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    if int(stat.read().rsplit(")", 1)[1].split()[1]) == pid:
                        found.add(int(entry))
            except (OSError, IndexError, ValueError):
                continue  # gone meanwhile
    return found


def gone(pid: int) -> bool:
    """``pid`` has exited (or is a zombie its parent has not reaped yet)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            return "zombie" in status.read().lower()
    except OSError:
        return True
