"""The worker's pure helpers (no broker)."""

import pytest

from streamfs.worker.app import Batch, changelog_target, offset_metadata
from streamfs.worker.processor import Plan


@pytest.mark.parametrize("end", [0, 1, 2**40])
def test_offset_metadata_round_trips_the_changelog_end(end):
    assert changelog_target(offset_metadata(end)) == end


@pytest.mark.parametrize("metadata", [None, "", "not json", "[1]", '{"changelog_end": -1}',
                                      '{"changelog_end": "5"}', '{"changelog_end": true}',
                                      '{"other": 5}'])
def test_offsets_committed_by_something_else_carry_no_target(metadata):
    # offsets committed by another tool or an older worker: restore to the stable end only
    assert changelog_target(metadata) is None


def test_a_revocation_drops_the_stepped_output_of_the_partitions_it_takes():
    roles = {"in.features": "features", "in.instances": "instances"}
    batch = Batch()
    kept, dropped = Plan(stream="a"), Plan(stream="b")
    batch.outputs = [(("in.features", 0), kept, b"a"), (("in.features", 1), dropped, b"b"),
                     (("in.instances", 1), dropped, b"c")]
    batch.next_offsets = {("in.features", 0): 5, ("in.features", 1): 9, ("in.instances", 1): 2}
    batch.writes = {("features", 0): {"a|h": b"1"}, ("features", 1): {"b|h": b"2"},
                    ("instances", 1): {"c|h": None}}
    batch.forget({("in.features", 1), ("in.instances", 1)}, roles)
    # partition 0 still commits its output, state records and offset; partition 1's are read
    # again by its next owner
    assert batch.outputs == [(("in.features", 0), kept, b"a")]
    assert batch.next_offsets == {("in.features", 0): 5}
    assert batch.writes == {("features", 0): {"a|h": b"1"}}
