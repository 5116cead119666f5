"""JSON as an alternative encoding of output messages (results, dead letters), so that any
Kafka consumer (kcat, Kafka UIs, other languages) can read them.

The envelope is the same as msgpack's. Non-finite floats become ``null`` (JSON has none),
bytes become base64 strings under the same key, numpy values become plain JSON values.

>>> raw = encode_json({"kind": "result", "stream": "s", "selection": [{"score": float("inf")}]})
>>> raw
b'{"v":1,"kind":"result","stream":"s","selection":[{"score":null}]}'
>>> decode_any(raw)["stream"]
's'
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from streamfs.codec.wire import KINDS, WIRE_VERSION, CodecError, decode

FORMATS = ("msgpack", "json")


def _plain(obj: Any) -> Any:
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _plain(obj.tolist())
    if isinstance(obj, np.generic):
        return _plain(obj.item())
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(obj)).decode("ascii")
    return obj


def encode_json(message: dict) -> bytes:
    """One compact JSON object (UTF-8) in the versioned envelope."""
    if message.get("kind") not in KINDS:
        raise CodecError(f"unknown message kind {message.get('kind')!r}")
    body = _plain({"v": WIRE_VERSION, **message})
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def encode_as(message: dict, fmt: str, packed: Mapping[str, bytes] | None = None) -> bytes:
    """Encode an output message as ``"msgpack"`` (default) or ``"json"``; ``packed``: fields
    the caller already packed with :func:`~streamfs.codec.wire.packb` (msgpack only)."""
    from streamfs.codec.wire import encode

    if fmt == "json":
        return encode_json(message)
    if fmt == "msgpack":
        return encode(message, packed)
    raise CodecError(f"unknown output format {fmt!r}; expected one of {FORMATS}")


def decode_any(data: bytes) -> dict:
    """Decode an output message written in either format (JSON objects start with ``{``)."""
    if data[:1] == b"{":
        try:
            message = json.loads(data)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise CodecError(f"undecodable JSON message ({exc})") from None
        version = message.get("v") if isinstance(message, dict) else None
        if isinstance(version, bool) or version != WIRE_VERSION:  # (true == 1 in Python)
            raise CodecError("JSON message without the streamfs envelope")
        return message
    return decode(data)
