"""The worker's pure helpers (no broker)."""

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
