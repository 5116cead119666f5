"""msgpack encoding with numpy and scipy.sparse ext types (see package docstring)."""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any

import msgpack
import numpy as np
import scipy.sparse as sp

WIRE_VERSION = 1
#: message kinds the envelope accepts
KINDS = frozenset({"open", "features", "instances", "close", "result", "dead_letter"})

_EXT_NDARRAY = 1
_EXT_SPARSE = 2
# Only fixed-size numeric types travel: they are the ones with a portable byte layout.
_DTYPES = {
    np.dtype(t).newbyteorder("<").str: np.dtype(t).newbyteorder("<")
    for t in (
        np.bool_, np.int8, np.int16, np.int32, np.int64,
        np.uint8, np.uint16, np.uint32, np.uint64, np.float32, np.float64,
    )
}


class CodecError(ValueError):
    """Raised for anything that cannot be encoded or decoded; the message says why."""


def _wire_dtype(dtype: np.dtype) -> str:
    key = dtype.newbyteorder("<").str
    if key not in _DTYPES:
        raise CodecError(
            f"cannot encode arrays of dtype {dtype}: supported are bool, int8-int64, "
            f"uint8-uint64, float32, float64"
        )
    return key


def _pack_ndarray(arr: np.ndarray) -> bytes:
    key = _wire_dtype(arr.dtype)
    # column-major travels as such (a feature block's columns): no transposing copy on
    # either side
    fortran = arr.ndim > 1 and arr.flags.f_contiguous and not arr.flags.c_contiguous
    little = np.ascontiguousarray(arr.T if fortran else arr, dtype=_DTYPES[key])
    payload = [key, list(arr.shape), little.tobytes()] + (["F"] if fortran else [])
    return msgpack.packb(payload, use_bin_type=True)


def _default(obj: Any) -> Any:
    if isinstance(obj, np.ndarray):
        return msgpack.ExtType(_EXT_NDARRAY, _pack_ndarray(obj))
    if sp.issparse(obj):
        fmt = obj.format
        if fmt not in ("csc", "csr"):
            obj = obj.tocsc()
            fmt = "csc"
        payload = [
            fmt,
            list(obj.shape),
            _pack_ndarray(np.asarray(obj.indptr)),
            _pack_ndarray(np.asarray(obj.indices)),
            _pack_ndarray(np.asarray(obj.data)),
        ]
        return msgpack.ExtType(_EXT_SPARSE, msgpack.packb(payload, use_bin_type=True))
    if isinstance(obj, np.generic):
        return obj.item()
    raise CodecError(f"cannot encode object of type {type(obj).__name__}")


#: an array payload's bytes before its raw values: the dtype, the shape (at most 32
#: dimensions of 9 bytes) and the raw values' bin header
_ARRAY_HEAD = 512
#: msgpack bin headers: marker byte -> (struct format of the length, its width)
_BIN = {0xC4: (">B", 1), 0xC5: (">H", 2), 0xC6: (">I", 4)}


def _bin_span(data: bytes, at: int) -> tuple[int, int]:
    """``(start, end)`` of the bytes of the msgpack bin whose header is at ``data[at]``
    (KeyError where none is)."""
    fmt, width = _BIN[data[at]]
    start = at + 1 + width
    return start, start + struct.unpack_from(fmt, data, at + 1)[0]


def _array_fields(data: bytes) -> tuple[Any, Any, Any, list]:
    """``(dtype key, shape, raw values, order)`` of an array payload ``[key, shape, raw]`` or
    ``[key, shape, raw, order]``. The raw values come as a view of ``data``: unpacking
    them would copy them once more (11 ms of the dense bench stream's 320 MB). Only the
    header is unpacked here; anything else than that layout is unpacked whole, which also
    says what is wrong with it."""
    try:
        head = msgpack.Unpacker(raw=False)
        head.feed(data[:_ARRAY_HEAD])
        n = head.read_array_header()
        key, shape = head.unpack(), head.unpack()
        start, end = _bin_span(data, head.tell())
        if n == 3 and end == len(data):
            return key, shape, memoryview(data)[start:end], []
        if n == 4 and end < len(data):  # the packed order follows the values
            order = msgpack.unpackb(data[end:], raw=False)
            return key, shape, memoryview(data)[start:end], [order]
    except Exception:  # noqa: BLE001 - not the plain layout: the whole unpack below decides
        pass
    try:
        key, shape, raw, *order = msgpack.unpackb(data, raw=False)
    except Exception as exc:  # noqa: BLE001 - any malformed payload is the same error
        raise CodecError(f"malformed array payload: {exc}") from None
    return key, shape, raw, order


def _unpack_ndarray(data: bytes) -> np.ndarray:
    key, shape, raw, order = _array_fields(data)
    if order not in ([], ["F"]):  # absent: row-major
        raise CodecError(f"malformed array payload: expected [dtype, shape, bytes] or "
                         f"[dtype, shape, bytes, 'F'], got {len(order)} more item(s) "
                         f"{', '.join(map(repr, order))}")
    if not isinstance(key, str) or key not in _DTYPES:
        raise CodecError(f"unsupported array dtype {key!r}")
    if (
        not isinstance(shape, list)
        or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in shape)
        or not isinstance(raw, (bytes, memoryview))
    ):
        raise CodecError(f"malformed array header: shape={shape!r}")
    dtype = _DTYPES[key]
    count = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if count * dtype.itemsize != len(raw):
        raise CodecError(
            f"array of shape {tuple(shape)} and dtype {key} needs {count * dtype.itemsize} "
            f"bytes, got {len(raw)}"
        )
    if order == ["F"]:
        arr = np.frombuffer(raw, dtype=dtype).reshape(shape[::-1]).T
    else:
        arr = np.frombuffer(raw, dtype=dtype).reshape(shape)
    # Native byte order and writeable, so callers can use the array like any other.
    return arr.astype(dtype.newbyteorder("="), copy=True)


def _sparse_fields(data: bytes) -> list:
    """``[format, shape, indptr, indices, values]`` of a sparse payload, the three arrays'
    payloads as views of ``data`` (as :func:`_array_fields`: unpacking them would copy the
    bench's sparse streams once more). Anything else than that layout is unpacked whole,
    which also says what is wrong with it."""
    try:
        head = msgpack.Unpacker(raw=False)
        head.feed(data[:_ARRAY_HEAD])
        if head.read_array_header() == 5:
            fields = [head.unpack(), head.unpack()]
            at = head.tell()
            view = memoryview(data)
            for _ in range(3):
                start, at = _bin_span(data, at)
                fields.append(view[start:at])
            if at == len(data):
                return fields
    except Exception:  # noqa: BLE001 - not the plain layout: the whole unpack below decides
        pass
    try:
        return msgpack.unpackb(data, raw=False)
    except Exception as exc:  # noqa: BLE001 - any malformed payload is the same error
        raise CodecError(f"malformed sparse payload: {exc}") from None


def _unpack_sparse(data: bytes) -> sp.spmatrix:
    from streamfs.codec.compressed import CANONICAL, INVALID, scan_compressed

    fields = _sparse_fields(data)
    if not isinstance(fields, list) or len(fields) != 5:
        raise CodecError(f"malformed sparse payload: expected [format, shape, indptr, indices, "
                         f"values], got {type(fields).__name__}"
                         f"{f' of {len(fields)} items' if isinstance(fields, list) else ''}")
    fmt, shape, indptr, indices, values = fields
    if fmt not in ("csc", "csr") or not isinstance(shape, list) or len(shape) != 2:
        raise CodecError(f"malformed sparse header: format={fmt!r} shape={shape!r}")
    indptr, indices, values = (_unpack_ndarray(b) for b in (indptr, indices, values))
    cls = sp.csc_matrix if fmt == "csc" else sp.csr_matrix
    try:
        # checks the sizes, not the values; the index arrays come out int32 or int64
        mat = cls((values, indices, indptr), shape=tuple(shape))
        verdict = scan_compressed(mat.indptr, mat.indices, shape[0] if fmt == "csc" else shape[1])
        if verdict == INVALID:
            mat.check_format(full_check=True)  # scipy's message for what is wrong
            raise ValueError("indptr or indices out of range")
    except Exception as exc:  # noqa: BLE001
        raise CodecError(f"inconsistent sparse matrix: {exc}") from None
    # known now: scipy need not scan the indices again when a consumer asks
    mat.has_canonical_format = verdict == CANONICAL
    return mat


def _ext_hook(code: int, data: bytes) -> Any:
    if code == _EXT_NDARRAY:
        return _unpack_ndarray(data)
    if code == _EXT_SPARSE:
        return _unpack_sparse(data)
    raise CodecError(f"unknown msgpack ext type {code}")


def packb(obj: Any) -> bytes:
    """Encode plain data with numpy / scipy.sparse arrays to bytes."""
    try:
        return msgpack.packb(obj, default=_default, use_bin_type=True, strict_types=False)
    except CodecError:
        raise
    except Exception as exc:  # noqa: BLE001 - e.g. integers beyond 64 bits
        raise CodecError(f"cannot encode: {exc}") from None


def unpackb(data: bytes) -> Any:
    """Decode bytes produced by :func:`packb`; raises :class:`CodecError` on bad input."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise CodecError(f"expected bytes, got {type(data).__name__}")
    try:
        return msgpack.unpackb(
            data, raw=False, ext_hook=_ext_hook, strict_map_key=False, use_list=True
        )
    except CodecError:
        raise
    except Exception as exc:  # noqa: BLE001 - msgpack raises many types for garbage
        raise CodecError(f"undecodable message ({type(exc).__name__}: {exc})") from None


def encode(message: dict, packed: Mapping[str, bytes] | None = None) -> bytes:
    """Wrap ``message`` (which must have a known ``kind``) in the versioned envelope.

    ``packed`` maps fields of ``message`` to their :func:`packb` bytes, already made by the
    caller (the worker packs a selection once, for its digest and for the result); they are
    spliced in as they are, and the output is byte for byte that of packing the whole message.

    >>> msg = {"kind": "result", "selection": [1, 2]}
    >>> encode(msg, packed={"selection": packb([1, 2])}) == encode(msg)
    True
    """
    kind = message.get("kind")
    if kind not in KINDS:
        raise CodecError(f"unknown message kind {kind!r}; expected one of {sorted(KINDS)}")
    body = {"v": WIRE_VERSION, **message}
    if not packed:
        return packb(body)
    # a msgpack map is its header followed by its keys and values, each packed on its own
    parts = [msgpack.Packer().pack_map_header(len(body))]
    for key, value in body.items():
        parts.append(packb(key))
        parts.append(packed[key] if key in packed else packb(value))
    return b"".join(parts)


def decode(data: bytes) -> dict:
    """Decode one envelope; checks the version and the kind."""
    message = unpackb(data)
    if not isinstance(message, dict):
        raise CodecError(f"message is a {type(message).__name__}, expected a map")
    version = message.get("v")
    if version != WIRE_VERSION:
        raise CodecError(f"unsupported wire version {version!r} (this worker reads {WIRE_VERSION})")
    if message.get("kind") not in KINDS:
        raise CodecError(f"unknown message kind {message.get('kind')!r}")
    return message
