"""The worker's pure helpers (no broker)."""

import subprocess
import sys

import pytest

from streamfs.worker.app import changelog_target, offset_metadata


@pytest.mark.parametrize("end", [0, 1, 2**40])
def test_offset_metadata_round_trips_the_changelog_end(end):
    assert changelog_target(offset_metadata(end)) == end


@pytest.mark.parametrize("metadata", [None, "", "not json", "[1]", '{"changelog_end": -1}',
                                      '{"changelog_end": "5"}', '{"changelog_end": true}',
                                      '{"other": 5}'])
def test_offsets_committed_by_something_else_carry_no_target(metadata):
    # offsets committed by another tool or an older worker: restore to the stable end only
    assert changelog_target(metadata) is None


def test_startup_objects_are_frozen_after_collecting_garbage():
    """In a process of its own (freezing the test runner's objects would outlive the test):
    the garbage cycles alive before are collected, everything else is frozen, and cycles
    made afterwards are still collected."""
    code = """
import gc, weakref
from streamfs.worker.app import freeze_startup_objects, warm_up
class Node: pass
def cycle():
    a, b = Node(), Node()
    a.other, b.other = b, a
    return weakref.ref(a)
gc.disable()  # only the collections asked for below
before = cycle()
warm_up()
freeze_startup_objects()
assert before() is None, "garbage frozen instead of collected"
assert gc.get_freeze_count() > 10_000, gc.get_freeze_count()
after = cycle()
gc.collect()
assert after() is None, "a cycle made after the freeze was not collected"
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
