"""msgpack encoding with numpy and scipy.sparse ext types (see package docstring)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import msgpack
import numpy as np
import scipy.sparse as sp

from streamfs.codec.spans import bin_span, container_header, ext_span

WIRE_VERSION = 1
#: message kinds the envelope accepts
KINDS = frozenset({"open", "features", "instances", "close", "result", "dead_letter"})
#: the longest ``run`` token: the worker keeps a stream's tokens in its state (three of 3 MB
#: each made a state record over the changelog's limit, and every partition stalled)
RUN_TOKEN_CHARS = 128


def run_token_problem(run: object) -> str | None:
    """What is wrong with a message's ``run`` token (``None``: no token, or a good one).

    >>> run_token_problem("3f2a9c")
    >>> run_token_problem("")
    "'run' must be a non-empty string of at most 128 characters (a token the producer draws for each run, e.g. a UUID), got ''"
    """
    if run is None or (isinstance(run, str) and 0 < len(run) <= RUN_TOKEN_CHARS):
        return None
    shown = (f"a string of {len(run)} characters" if isinstance(run, str) and run
             else repr(run) if isinstance(run, str)
             else f"{type(run).__name__} {repr(run)[:80]}")
    return (f"'run' must be a non-empty string of at most {RUN_TOKEN_CHARS} characters (a token "
            f"the producer draws for each run, e.g. a UUID), got {shown}")


def bin_keys_problem(message: dict) -> str | None:
    """What a map says of keys that are not msgpack strings, or None: keys written as bin
    (another language's msgpack, or bytes keys), whose fields are missing to a reader, and
    keys of other types (a number: a field under it was ignored without a word).

    >>> bin_keys_problem({"v": 1, b"seq": 3})
    "map keys must be msgpack strings (str), not bin: 'seq' came as bytes (encode text keys as str, e.g. use_bin_type=True with str keys in Python)"
    >>> bin_keys_problem({"v": 1, 0: "x"})
    'map keys must be msgpack strings (str), the field names: 0 (int) is not'
    """
    binary = [key for key in message if isinstance(key, bytes)]
    if binary:
        named = ", ".join(repr(key.decode("utf-8", "replace")[:40]) for key in binary[:5])
        return (f"map keys must be msgpack strings (str), not bin: {named} came as bytes "
                f"(encode text keys as str, e.g. use_bin_type=True with str keys in Python)")
    other = [key for key in message if not isinstance(key, str)]
    if other:
        named = ", ".join(f"{str(key)[:40]} ({type(key).__name__})" for key in other[:5])
        return (f"map keys must be msgpack strings (str), the field names: {named} "
                f"{'is' if len(other) == 1 else 'are'} not")
    return None


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
# single-byte types have no byte order ("|"), but producers that write "<" + kind + size
# mean the same type: accepted on input, never written
_DTYPES.update({"<" + key[1:]: _DTYPES[key] for key in ("|b1", "|i1", "|u1")})


class CodecError(ValueError):
    """Raised for anything that cannot be encoded or decoded; the message says why."""


class EnvelopeError(CodecError):
    """A map that is no envelope this reader takes (no or another wire version, unknown
    kind); ``message`` is the map, whose other fields (``stream``, ``run``) may still say whose
    it is."""

    def __init__(self, reason: str, message: dict) -> None:
        super().__init__(reason)
        self.message = message


class Undecodable:
    """In place of an ext value that could not be decoded (``reason`` says why), so that the
    rest of its message is still read: see :func:`decode`."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def __repr__(self) -> str:
        return f"<undecodable: {self.reason}>"


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
        # a matrix may hold spare room past its last entry (indptr[-1]): not sent, since a
        # decoder refuses entries that no column's slice holds
        end = int(obj.indptr[-1]) if len(obj.indptr) else 0
        payload = [
            fmt,
            list(obj.shape),
            _pack_ndarray(np.asarray(obj.indptr)),
            _pack_ndarray(np.asarray(obj.indices[:end])),
            _pack_ndarray(np.asarray(obj.data[:end])),
        ]
        return msgpack.ExtType(_EXT_SPARSE, msgpack.packb(payload, use_bin_type=True))
    if isinstance(obj, np.generic):
        return obj.item()
    raise CodecError(f"cannot encode object of type {type(obj).__name__}")


#: an array payload's bytes before its raw values: the dtype, the shape (at most 32
#: dimensions of 9 bytes) and the raw values' bin header
_ARRAY_HEAD = 512
#: the envelope's padding field, which puts a large array's values on an aligned offset
_PAD_KEY = "_pad"
_PAD_HEAD = msgpack.packb(_PAD_KEY)
_ALIGNMENT = 64
#: dense arrays of at least this many bytes are aligned by :func:`encode`
_ALIGNED_AT_LEAST = 1 << 16


def _array_head(data: bytes) -> tuple[int, Any, Any, int, int]:
    """``(items, dtype key, shape, start, end)`` of an array payload whose third item is its
    raw values, ``data[start:end]``; only the header is unpacked. Raises where the payload
    does not begin that way."""
    head = msgpack.Unpacker(raw=False)
    head.feed(data[:_ARRAY_HEAD])
    n = head.read_array_header()
    key, shape = head.unpack(), head.unpack()
    start, end = bin_span(data, head.tell())
    return n, key, shape, start, end


def _array_fields(data: bytes) -> tuple[Any, Any, Any, list]:
    """``(dtype key, shape, raw values, order)`` of an array payload ``[key, shape, raw]`` or
    ``[key, shape, raw, order]``. The raw values come as a view of ``data``: unpacking
    them would copy them once more (11 ms of the dense bench stream's 320 MB). Only the
    header is unpacked here; anything else than that layout is unpacked whole, which also
    says what is wrong with it."""
    try:
        n, key, shape, start, end = _array_head(data)
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
        raise CodecError(f"malformed array payload: {_unpack_problem(exc)}") from None
    return key, shape, raw, order


def _unpack_ndarray(data: bytes, writeable: bool = True) -> np.ndarray:
    key, shape, raw, order = _array_fields(data)
    if order not in ([], ["F"]):  # absent: row-major
        raise CodecError(f"malformed array payload: expected [dtype, shape, bytes] or "
                         f"[dtype, shape, bytes, 'F'], got {len(order)} more item(s) "
                         f"{', '.join(map(repr, order))}")
    if not isinstance(key, str) or key not in _DTYPES:
        raise CodecError(f"unsupported array dtype {key!r}: one of {', '.join(_DTYPES)} "
                         f"(numpy's little-endian type strings)")
    if (
        not isinstance(shape, list)
        or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in shape)
        or not isinstance(raw, (bytes, memoryview))
    ):
        raise CodecError(f"malformed array header: shape={shape!r}")
    dtype = _DTYPES[key]
    count = math.prod(shape)  # Python integers: numpy's int64 product wrapped around to 0
    if count * dtype.itemsize != len(raw):
        raise CodecError(
            f"array of shape {tuple(shape)} and dtype {key} needs {count * dtype.itemsize} "
            f"bytes, got {len(raw)}"
        )
    if dtype.kind == "b" and count and np.frombuffer(raw, dtype=np.uint8).max() > 1:
        # numpy reads any non-zero byte as True: a producer's 2 is a bug, not a truth value
        raise CodecError(f"bool array of dtype {key} holds bytes other than 0 and 1")
    if order == ["F"]:
        arr = np.frombuffer(raw, dtype=dtype).reshape(shape[::-1]).T
    else:
        arr = np.frombuffer(raw, dtype=dtype).reshape(shape)
    if not writeable and arr.flags.aligned and arr.dtype.isnative:
        return arr  # read-only, in the message's own bytes: no copy at all
    # Native byte order, aligned and writeable, so callers can use the array like any other.
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
                start, at = bin_span(data, at)
                fields.append(view[start:at])
            if at == len(data):
                return fields
    except Exception:  # noqa: BLE001 - not the plain layout: the whole unpack below decides
        pass
    try:
        return msgpack.unpackb(data, raw=False)
    except Exception as exc:  # noqa: BLE001 - any malformed payload is the same error
        raise CodecError(f"malformed sparse payload: {_unpack_problem(exc)}") from None


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
    if not all(isinstance(n, int) and not isinstance(n, bool) and 0 <= n < 2**63
               for n in shape):  # what scipy's int64 index arrays can hold
        raise CodecError(f"malformed sparse header: shape {shape!r} must be two integers from "
                         f"0 to 2^63 - 1")
    indptr, indices, values = (_unpack_ndarray(b) for b in (indptr, indices, values))
    for name, arr in (("indptr", indptr), ("indices", indices)):
        # scipy would cast a float or bool array to integers: an index of 0.5 became 0
        if arr.dtype.kind not in "iu":
            raise CodecError(f"malformed sparse payload: {name} must be an integer array, got "
                             f"dtype {arr.dtype.newbyteorder('<').str}")
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
    if not int(indptr[-1]) == indices.size == values.size:
        # scipy takes entries past indptr[-1] as spare room: a third party's would be lost
        raise CodecError(f"inconsistent sparse matrix: indptr ends at {int(indptr[-1])}, but "
                         f"indices has {indices.size} entries and values {values.size}: the "
                         f"last indptr must equal both")
    # known now: scipy need not scan the indices again when a consumer asks
    mat.has_canonical_format = verdict == CANONICAL
    return mat


def _ext_hook(code: int, data: bytes) -> Any:
    if code == _EXT_NDARRAY:
        return _unpack_ndarray(data)
    if code == _EXT_SPARSE:
        return _unpack_sparse(data)
    raise CodecError(f"unknown msgpack ext type {code}")


def _lenient_ext_hook(code: int, data: bytes) -> Any:
    try:
        return _ext_hook(code, data)
    except Exception as exc:  # noqa: BLE001 - any bad payload is the same: not decodable
        return Undecodable(str(exc) if isinstance(exc, CodecError)
                           else f"malformed ext type {code} payload: {type(exc).__name__}: {exc}")


def packb(obj: Any) -> bytes:
    """Encode plain data with numpy / scipy.sparse arrays to bytes."""
    try:
        return msgpack.packb(obj, default=_default, use_bin_type=True, strict_types=False)
    except CodecError:
        raise
    except Exception as exc:  # noqa: BLE001 - e.g. integers beyond 64 bits
        raise CodecError(f"cannot encode: {exc}") from None


def unpackb(data: bytes, *, writeable: bool = True, lenient: bool = False) -> Any:
    """Decode bytes produced by :func:`packb`; raises :class:`CodecError` on bad input.

    With ``writeable=False`` a dense array in a top-level map value whose values lie aligned
    in ``data`` (as :func:`encode` lays out large ones) is returned as a read-only view of
    ``data``, not copied. With ``lenient=True`` an ext value that cannot be decoded (an
    unknown type, a bad array) becomes an :class:`Undecodable` instead of raising.
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise CodecError(f"expected bytes, got {type(data).__name__}")
    in_place = _unpack_map_in_place(data, writeable, lenient)
    if in_place is not None:
        return in_place
    try:
        return msgpack.unpackb(data, raw=False, strict_map_key=False, use_list=True,
                               ext_hook=_lenient_ext_hook if lenient else _ext_hook)
    except CodecError:
        raise
    except Exception as exc:  # noqa: BLE001 - msgpack raises many types for garbage
        raise CodecError(f"undecodable message: {_unpack_problem(exc)}") from None


def _unpack_problem(exc: Exception) -> str:
    """What msgpack's ``exc`` means to a producer's author (its own text is terse, or empty)."""
    if isinstance(exc, msgpack.ExtraData):
        return (f"not one msgpack value: {len(exc.extra)} more bytes follow a complete value "
                f"(another encoding, such as JSON or text, or several values in one record?)")
    if isinstance(exc, msgpack.StackError):
        return "values nested too deeply (over msgpack's limit of nested arrays and maps)"
    if isinstance(exc, msgpack.FormatError):
        return "not msgpack: a byte that msgpack never uses where a value should start"
    if "incomplete input" in str(exc) or "exceeds max_" in str(exc):
        # (msgpack refuses a length past the payload's end before it runs out of bytes)
        return "truncated: the bytes end inside a msgpack value"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _unpack_map_in_place(data: bytes, writeable: bool, lenient: bool) -> dict | None:
    """A large top-level map whose array values are read through views of ``data``: msgpack
    would copy each ext payload into a ``bytes`` object first (33 ms of the dense bench
    stream's 320 MB). The other keys and values are unpacked by msgpack, a chunk of ``data``
    at a time. ``None`` for anything else, or where anything is wrong: the whole unpack then
    decides, and says what."""
    if len(data) < _ALIGNED_AT_LEAST:  # too small to hold an array encode() aligned
        return None
    view = memoryview(data)
    out = {}
    try:
        count, per, at = container_header(data, 0)
        if per != 2:
            return None
        reader = None
        for _ in range(count):
            if reader is None:
                reader = _ItemReader(view, at, _lenient_ext_hook if lenient else _ext_hook)
            key, at = reader.read()
            span = ext_span(data, at)
            if span is not None and span[0] in (_EXT_NDARRAY, _EXT_SPARSE):
                payload = view[span[1]:span[2]]
                try:
                    out[key] = (_unpack_ndarray(payload, writeable) if span[0] == _EXT_NDARRAY
                                else _unpack_sparse(payload))
                except CodecError as exc:
                    if not lenient:
                        raise
                    out[key] = Undecodable(str(exc))  # the other fields still in place
                at, reader = span[2], None  # the reader may hold the ext's first bytes
            else:
                out[key], at = reader.read()
    except Exception:  # noqa: BLE001 - see the docstring
        return None
    return out if at == len(data) else None


class _ItemReader:
    """msgpack items read one after the other from ``view[at:]`` by msgpack's own unpacker,
    fed a chunk at a time: it copies what it is fed, not the rest of the buffer."""

    def __init__(self, view: memoryview, at: int, ext_hook: Any) -> None:
        self.view, self.start, self.fed = view, at, at
        self.unpacker = msgpack.Unpacker(raw=False, ext_hook=ext_hook, strict_map_key=False,
                                         use_list=True, max_buffer_size=len(view))

    def read(self) -> tuple[Any, int]:
        """The next item and the offset just past it."""
        chunk = 4096
        while True:
            try:
                item = self.unpacker.unpack()
                return item, self.start + self.unpacker.tell()
            except msgpack.OutOfData:
                if self.fed >= len(self.view):
                    raise
                self.unpacker.feed(self.view[self.fed:self.fed + chunk])
                self.fed += chunk
                chunk *= 2  # a long list of names is fed in O(log n) chunks


def _values_start(packed_value: bytes) -> int | None:
    """Where the values of a large dense array start in its :func:`packb` bytes (``None``
    for anything else)."""
    span = ext_span(packed_value, 0)
    if span is None or span[0] != _EXT_NDARRAY or span[2] - span[1] < _ALIGNED_AT_LEAST:
        return None
    return span[1] + _array_head(memoryview(packed_value)[span[1]:span[2]])[3]


def encode(message: dict, packed: Mapping[str, bytes] | None = None) -> bytes:
    """Wrap ``message`` (which must have a known ``kind``) in the versioned envelope.

    ``packed`` maps fields of ``message`` to their :func:`packb` bytes, already made by the
    caller (the worker packs a selection once, for its digest and for the result); they are
    spliced in as they are, and the output is byte for byte that of packing the whole message.

    The values of a dense array of 64 KiB or more start 64-byte aligned in the output: a
    ``"_pad"`` entry (zero bytes, which :func:`decode` drops) goes before its field, so that a
    reader can use them where they lie.

    >>> msg = {"kind": "result", "selection": [1, 2]}
    >>> encode(msg, packed={"selection": packb([1, 2])}) == encode(msg)
    True
    """
    kind = message.get("kind")
    if kind not in KINDS:
        raise CodecError(f"unknown message kind {kind!r}; expected one of {sorted(KINDS)}")
    if _PAD_KEY in message:
        raise CodecError(f"{_PAD_KEY!r} is the envelope's own field; a message cannot have it")
    body = {"v": WIRE_VERSION, **message}
    packed = packed or {}
    # a msgpack map is its header followed by its keys and values, each packed on its own
    fields = [(packb(key), packed[key] if key in packed else packb(value))
              for key, value in body.items()]
    starts = [_values_start(value) for _, value in fields]
    head = msgpack.Packer().pack_map_header(len(fields) + sum(s is not None for s in starts))
    parts, at = [head], len(head)
    for (key, value), start in zip(fields, starts):
        if start is not None:
            gap = -(at + len(_PAD_HEAD) + 2 + len(key) + start) % _ALIGNMENT
            pad = _PAD_HEAD + bytes((0xC4, gap)) + bytes(gap)  # bin 8: marker, length, zeros
            parts.append(pad)
            at += len(pad)
        parts += (key, value)
        at += len(key) + len(value)
    return b"".join(parts)


def decode(data: bytes, *, writeable: bool = True, lenient: bool = False) -> dict:
    """Decode one envelope; checks the version and the kind (:class:`EnvelopeError`).
    ``writeable`` and ``lenient``: see :func:`unpackb`; with ``lenient=True`` a field that
    could not be decoded holds an :class:`Undecodable`, for the reader to ignore where it
    does not know the field."""
    message = unpackb(data, writeable=writeable, lenient=lenient)
    if not isinstance(message, dict):
        raise CodecError(f"message is a {type(message).__name__}, expected a map")
    if ("v" not in message and b"v" in message) or ("kind" not in message
                                                    and b"kind" in message):
        raise EnvelopeError(bin_keys_problem(message), message)
    if "v" not in message:
        raise EnvelopeError(f"missing wire version 'v' (this worker reads {WIRE_VERSION}): not "
                            f"a streamfs message?", message)
    version = message["v"]
    if version != WIRE_VERSION or type(version) is not int:  # true and 1.0 equal 1 in Python
        raise EnvelopeError(f"unsupported wire version {version!r} (this worker reads "
                            f"{WIRE_VERSION})", message)
    if message.get("kind") not in KINDS:
        raise EnvelopeError(f"unknown message kind {message.get('kind')!r}", message)
    message.pop(_PAD_KEY, None)
    return message
