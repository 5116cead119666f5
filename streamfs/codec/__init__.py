"""Wire format: msgpack with a versioned envelope and bit-exact numpy / scipy.sparse arrays.

* ``packb`` / ``unpackb`` encode plain data (dicts, lists, scalars, str, bytes) plus
  ``numpy.ndarray`` (ext type 1: dtype, shape, little-endian bytes) and scipy.sparse CSC/CSR
  matrices (ext type 2: format, shape, indptr, indices, values). numpy scalars become Python
  scalars.
* ``encode`` / ``decode`` wrap one message dict in the envelope ``{"v": WIRE_VERSION, "kind":
  ...}`` and check it on the way back. ``encode`` puts a ``"_pad"`` entry of zero bytes before
  each dense array of 64 KiB or more, so that its values start 64-byte aligned in the message;
  ``decode(data, writeable=False)`` (the worker's read) then returns such an array as a
  read-only view of ``data`` instead of a copy, and drops the padding.
* ``encode_json`` / ``decode_any``: output messages (results, dead letters) may be written as
  JSON instead (worker setting ``STREAMFS_RESULT_FORMAT=json``); readers accept both.
* Everything that cannot be decoded raises :class:`CodecError` (a ``ValueError``) whose message
  says what was wrong.

>>> import numpy as np
>>> out = unpackb(packb({"X": np.arange(3, dtype=np.int16)}))
>>> out["X"].dtype, out["X"].tolist()
(dtype('int16'), [0, 1, 2])
"""

from streamfs.codec.wire import (
    KINDS,
    RUN_TOKEN_CHARS,
    WIRE_VERSION,
    CodecError,
    EnvelopeError,
    Undecodable,
    bin_keys_problem,
    decode,
    encode,
    packb,
    run_token_problem,
    unpackb,
)

from streamfs.codec.text import FORMATS, decode_any, encode_as, encode_json

__all__ = ["FORMATS", "KINDS", "RUN_TOKEN_CHARS", "WIRE_VERSION", "CodecError", "EnvelopeError", "Undecodable",
           "bin_keys_problem", "decode", "decode_any", "encode", "encode_as", "encode_json", "packb", "run_token_problem", "unpackb"]
