"""The checks of a stream's open that the producers and the worker share."""

from __future__ import annotations

import numpy as np
import pytest

from streamfs.algorithms.opening import MAX_STREAM_ID_CHARS, check_stream_id
from streamfs.producers.blocks import feature_stream_messages


def test_a_stream_id_is_at_most_so_long_and_its_refusal_does_not_quote_it_whole():
    # a 3,000,000-character id went into the key and value of every message: the publish
    # failed after the 'open', and its error quoted the 3 MB id
    assert check_stream_id("s" * MAX_STREAM_ID_CHARS) == "s" * MAX_STREAM_ID_CHARS
    with pytest.raises(ValueError, match=r"^the stream id is 3000000 characters long "
                                         r"\('s{20}'\.\.\.\), over the limit of 1000") as info:
        check_stream_id("s" * 3_000_000)
    assert len(str(info.value)) < 200
    with pytest.raises(ValueError, match="over the limit of 1000"):  # before the 'open'
        next(feature_stream_messages("\ud800" * 1001, np.ones((4, 2)), [0, 1, 0, 1], "saola"))
