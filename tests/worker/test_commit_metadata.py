"""The offset metadata the worker commits: the changelog end and the input topic's id."""

import json

import pytest

from streamfs.worker.commit_metadata import changelog_target, committed_topic_id, offset_metadata


@pytest.mark.parametrize("end", [0, 1, 2**40])
def test_offset_metadata_round_trips_the_changelog_end(end):
    assert changelog_target(offset_metadata(end)) == end


@pytest.mark.parametrize("metadata", [None, "", "not json", "[1]", '{"changelog_end": -1}',
                                      '{"changelog_end": "5"}', '{"changelog_end": true}',
                                      '{"other": 5}'])
def test_offsets_committed_by_something_else_carry_no_target(metadata):
    # offsets committed by another tool or an older worker: restore to the stable end only
    assert changelog_target(metadata) is None


def test_offset_metadata_carries_the_input_topic_id_beside_the_changelog_end():
    metadata = offset_metadata(17, "JZ/vDgZ5TMGfOlli/ACDhw")
    assert json.loads(metadata) == {"changelog_end": 17, "topic_id": "JZ/vDgZ5TMGfOlli/ACDhw"}
    assert changelog_target(metadata) == 17
    assert committed_topic_id(metadata) == "JZ/vDgZ5TMGfOlli/ACDhw"
    # without an id (not known): the metadata of workers from before topic ids
    assert offset_metadata(17) == '{"changelog_end": 17}'


@pytest.mark.parametrize("metadata", [None, "", "not json", "[1]", '{"changelog_end": 5}',
                                      '{"topic_id": 5}', '{"topic_id": ""}',
                                      '{"topic_id": null}'])
def test_metadata_without_a_topic_id_names_none(metadata):
    # an older worker's metadata, or another tool's: no check of the topic, offsets kept
    assert committed_topic_id(metadata) is None
