"""Where msgpack containers, bins and ext payloads start and end in a buffer, unpacked or not.

The decoder reads a message's top-level map and an array payload's values with these, so
that an array's values can be read through a view of the message instead of the copies
msgpack makes of every ext payload and bin.
Anything else than what they expect raises ``KeyError``, ``IndexError`` or ``struct.error``;
the caller then unpacks the message whole, which says what is wrong with it.

>>> import msgpack
>>> data = msgpack.packb({"b": msgpack.ExtType(5, b"raw")})
>>> container_header(data, 0)  # one entry of two items (a map), the first at offset 1
(1, 2, 1)
>>> code, start, end = ext_span(data, 3)  # after the map header and the key "b"
>>> code, data[start:end]
(5, b'raw')
"""

from __future__ import annotations

import struct

# bin 8/16/32 and ext 8/16/32 marker byte -> struct format of the payload length, its width
_BIN = {0xC4: (">B", 1), 0xC5: (">H", 2), 0xC6: (">I", 4)}
_EXT = {0xC7: (">B", 1), 0xC8: (">H", 2), 0xC9: (">I", 4)}
# array 16/32, map 16/32 marker byte -> struct format of the count, its width, items per entry
_COUNTED = {0xDC: (">H", 2, 1), 0xDD: (">I", 4, 1), 0xDE: (">H", 2, 2), 0xDF: (">I", 4, 2)}


def container_header(data: bytes, at: int) -> tuple[int, int, int]:
    """``(entries, items per entry, first item's offset)`` of the array or map at ``at``."""
    b = data[at]
    if 0x80 <= b <= 0x8F:
        return b & 0x0F, 2, at + 1
    if 0x90 <= b <= 0x9F:
        return b & 0x0F, 1, at + 1
    fmt, width, per = _COUNTED[b]
    return struct.unpack_from(fmt, data, at + 1)[0], per, at + 1 + width


def bin_span(data: bytes, at: int) -> tuple[int, int]:
    """``(start, end)`` of the bytes of the bin item at ``at`` (``KeyError`` where none is)."""
    fmt, width = _BIN[data[at]]
    start = at + 1 + width
    return start, start + struct.unpack_from(fmt, data, at + 1)[0]


def ext_span(data: bytes, at: int) -> tuple[int, int, int] | None:
    """``(type code, start, end)`` of the payload of the ext item at ``at``, or ``None``
    where the item there is no ext 8/16/32 (a fixext holds at most 16 bytes)."""
    b = data[at]
    if b not in _EXT:
        return None
    fmt, width = _EXT[b]
    size = struct.unpack_from(fmt, data, at + 1)[0]
    start = at + 2 + width
    if start + size > len(data):
        raise IndexError("msgpack ext runs past the end of the buffer")
    return struct.unpack_from(">b", data, at + 1 + width)[0], start, start + size
