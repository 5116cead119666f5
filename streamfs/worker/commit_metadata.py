"""The metadata the worker commits with each input partition's offset (JSON): where the
partition's changelog ended, so that a restore reads at least that far, and the id of the input
topic the offset counts in."""

from __future__ import annotations

import json
from typing import Any


def offset_metadata(changelog_end: int, topic_id: str | None = None) -> str:
    """The metadata committed with an input partition's offset: where its changelog ended and,
    when known, the id of the input topic the offset counts in (a topic deleted and made again
    under the same name has another id, and its offsets start again from 0)."""
    meta: dict[str, Any] = {"changelog_end": changelog_end}
    if topic_id is not None:
        meta["topic_id"] = topic_id
    return json.dumps(meta)


def changelog_target(metadata: str | None) -> int | None:
    """The changelog end recorded by :func:`offset_metadata`; None for other metadata (offsets
    committed by something else, or by an older worker)."""
    try:
        end = json.loads(metadata or "").get("changelog_end")
    except (ValueError, AttributeError):
        return None
    return end if isinstance(end, int) and not isinstance(end, bool) and end >= 0 else None


def committed_topic_id(metadata: str | None) -> str | None:
    """The input topic id recorded by :func:`offset_metadata`; None where there is none
    (offsets committed by something else, or by a worker from before topic ids)."""
    try:
        topic_id = json.loads(metadata or "").get("topic_id")
    except (ValueError, AttributeError):
        return None
    return topic_id if isinstance(topic_id, str) and topic_id else None
