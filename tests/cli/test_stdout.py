"""A command whose output cannot be written (a full disk) ends with one line and exit 1."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

FULL_DISK = "Error: cannot write the output: [Errno 28] No space left on device"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
@pytest.mark.parametrize("args", [["algorithms"], ["algorithms", "saola"], ["version"]])
def test_listings_to_a_full_disk_are_one_line(args):
    """`streamfs algorithms > /dev/full` (and `version`) printed a traceback ending in ENOSPC,
    where `select` said it in one line."""
    with open("/dev/full", "w") as full:
        out = subprocess.run([sys.executable, "-m", "streamfs.cli", *args], stdout=full,
                             stderr=subprocess.PIPE, text=True, timeout=120)
    assert out.returncode == 1, out.stderr
    assert out.stderr.splitlines() == [FULL_DISK], out.stderr
