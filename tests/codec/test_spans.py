import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamfs.codec.spans import bin_span, container_header, ext_span


@given(n=st.integers(0, 70_000), as_map=st.booleans())
@settings(max_examples=60, deadline=None)
def test_container_headers_give_msgpacks_counts(n, as_map):
    # fixarray/fixmap, 16 and 32 bit counts
    data = msgpack.packb({i: None for i in range(n)} if as_map else [None] * n)
    count, per, first = container_header(data, 0)
    assert (count, per) == (n, 2 if as_map else 1)
    assert first == (1 if n < 16 else 3 if n < 65536 else 5)
    with pytest.raises(KeyError):
        container_header(msgpack.packb("not a container"), 0)


def test_ext_spans_and_their_limits():
    for size in (0, 5, 300, 70_000):  # ext 8, 16, 32; 5 bytes are not a fixext size
        data = msgpack.packb(msgpack.ExtType(7, b"x" * size))
        code, start, end = ext_span(data, 0)
        assert code == 7 and data[start:end] == b"x" * size and end == len(data)
        with pytest.raises(IndexError):
            ext_span(data[:-1], 0)
    assert ext_span(msgpack.packb(msgpack.ExtType(7, b"x" * 4)), 0) is None  # fixext
    assert ext_span(msgpack.packb([1]), 0) is None


def test_bin_spans():
    for size in (0, 255, 256, 70_000):  # bin 8, 16, 32
        data = b"head" + msgpack.packb(b"x" * size) + b"tail"
        start, end = bin_span(data, 4)
        assert data[start:end] == b"x" * size and data[end:] == b"tail"
    with pytest.raises(KeyError):
        bin_span(msgpack.packb("a str"), 0)
