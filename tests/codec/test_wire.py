import msgpack
import numpy as np

import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from streamfs.codec import CodecError, decode, encode, packb, unpackb

DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
          np.uint64, np.float32, np.float64]


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("dtype", DTYPES)
@given(data=st.data())
@settings(max_examples=25, deadline=None)
def test_dense_round_trip_is_bit_exact(dtype, data):
    arr = data.draw(hnp.arrays(dtype, hnp.array_shapes(min_dims=0, max_dims=3, max_side=6)))
    out = unpackb(packb({"a": arr}))["a"]
    assert _same_bits(arr, out)  # NaN payloads and -0.0 included


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.bool_, np.uint8])
@pytest.mark.parametrize("fmt", ["csc", "csr"])
@given(data=st.data())
@settings(max_examples=15, deadline=None)
def test_sparse_round_trip_is_bit_exact(dtype, fmt, data):
    dense = data.draw(hnp.arrays(dtype, hnp.array_shapes(min_dims=2, max_dims=2, max_side=7)))
    mat = sp.csc_matrix(dense) if fmt == "csc" else sp.csr_matrix(dense)
    out = unpackb(packb(mat))
    assert out.format == fmt and out.shape == mat.shape
    for name in ("indptr", "indices", "data"):
        assert _same_bits(np.asarray(getattr(mat, name)), np.asarray(getattr(out, name)))


def _sparse_payload(fmt, shape, indptr, indices, values, *more):
    from streamfs.codec.wire import _pack_ndarray

    items = [fmt, shape] + [_pack_ndarray(np.asarray(a)) for a in (indptr, indices, values)]
    return msgpack.packb(msgpack.ExtType(2, msgpack.packb(items + list(more))))


@given(st.integers(1, 6), st.integers(1, 6), st.integers(0, 2**32 - 1),
       st.sampled_from(["csc", "csr"]))
@settings(max_examples=100, deadline=None)
def test_sparse_canonical_flag_is_scipys(n_major, n_minor, seed, fmt):
    """Unsorted and repeated indices included: the decoder's flag (from its own pass) is the
    one scipy computes, and the matrix is the one sent."""
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, n_minor + 2, n_major)
    indptr = np.concatenate([[0], np.cumsum(counts)])
    indices = rng.integers(0, n_minor, indptr[-1])
    if rng.random() < 0.5:  # sorted and distinct within each slice
        indices = np.concatenate([np.sort(rng.choice(n_minor, min(c, n_minor), replace=False))
                                  for c in counts] or [np.zeros(0, int)])
        indptr = np.concatenate([[0], np.cumsum(np.minimum(counts, n_minor))])
    values = rng.normal(size=indices.size)
    shape = [n_minor, n_major] if fmt == "csc" else [n_major, n_minor]
    out = unpackb(_sparse_payload(fmt, shape, indptr, indices, values))
    cls = sp.csc_matrix if fmt == "csc" else sp.csr_matrix
    sent = cls((values, indices, indptr), shape=tuple(shape))
    assert out.has_canonical_format == sent.has_canonical_format
    assert np.array_equal(out.toarray(), sent.toarray())


@pytest.mark.parametrize("indptr, indices, message", [
    ([0, 1, 2], [0, 5], "indices must be < 3"),
    ([0, 1, 2], [0, -1], "indices must be >= 0"),
    ([0, 2, 1], [0, 1], "indptr must be a non-decreasing sequence"),
])
def test_sparse_payload_with_indices_out_of_range_is_rejected(indptr, indices, message):
    bad = _sparse_payload("csc", [3, 2], indptr, indices, np.ones(len(indices)))
    with pytest.raises(CodecError, match=f"inconsistent sparse matrix: {message}"):
        unpackb(bad)


@pytest.mark.parametrize("which", ["indptr", "indices"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.bool_])
def test_sparse_index_arrays_of_another_dtype_than_integers_are_rejected(which, dtype):
    # scipy casts them: the float indices 0.5 and 1.5 were taken as rows 0 and 1
    arrays = {"indptr": [0, 1, 1], "indices": [0]}
    arrays[which] = np.asarray(arrays[which], dtype=dtype)
    if dtype != np.bool_:
        arrays[which] += 0.5
    bad = _sparse_payload("csc", [3, 2], arrays["indptr"], arrays["indices"], np.ones(1))
    with pytest.raises(CodecError, match=f"{which} must be an integer array"):
        unpackb(bad)


@pytest.mark.parametrize("items, found", [
    (["csc", [2, 2], b"", b""], "list of 4 items"),
    (5, "int"),
])
def test_sparse_payloads_of_another_layout_are_rejected(items, found):
    bad = msgpack.packb(msgpack.ExtType(2, msgpack.packb(items)))
    with pytest.raises(CodecError, match=f"malformed sparse payload: .* got {found}"):
        unpackb(bad)


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.bool_])
@given(data=st.data())
@settings(max_examples=20, deadline=None)
def test_column_major_round_trip_keeps_values_and_layout(dtype, data):
    arr = np.asfortranarray(data.draw(hnp.arrays(
        dtype, hnp.array_shapes(min_dims=2, max_dims=3, min_side=2, max_side=6))))
    out = unpackb(packb(arr))
    assert np.array_equal(out, arr, equal_nan=dtype == np.float64) and out.shape == arr.shape
    assert out.flags.f_contiguous and out.flags.writeable


def test_column_major_travels_without_a_transpose():
    arr = np.asfortranarray(np.arange(12.0).reshape(3, 4))
    key, shape, payload, order = msgpack.unpackb(
        packb(arr), ext_hook=lambda code, data: msgpack.unpackb(data, raw=False), raw=False)
    assert (key, shape, order) == ("<f8", [3, 4], "F")
    assert np.frombuffer(payload).tolist() == arr.ravel(order="F").tolist()  # column by column


def test_array_payload_with_an_unknown_order_is_rejected():
    bad = msgpack.packb(msgpack.ExtType(1, msgpack.packb(
        ["<f8", [2, 2], np.zeros(4).tobytes(), "X"], use_bin_type=True)), use_bin_type=True)
    with pytest.raises(CodecError, match="'F'"):
        unpackb(bad)


@pytest.mark.parametrize("items", [
    ["<f8", [2, 2], np.zeros(4).tobytes(), "F", "F"],  # one item too many
    ["<f8", [2, 2]],  # no values
    ["<f8", [2, 2], "not bytes"],
])
def test_array_payloads_of_another_layout_are_rejected(items):
    bad = msgpack.packb(msgpack.ExtType(1, msgpack.packb(items, use_bin_type=True)),
                        use_bin_type=True)
    with pytest.raises(CodecError, match="malformed array"):
        unpackb(bad)


@pytest.mark.parametrize("tail", [b"\xc0", b"\xa1F\xc0"])
def test_array_payload_with_bytes_after_it_is_rejected(tail):
    # the values are read as a view of the payload: what follows them must still be checked
    for arr in (np.arange(6.0), np.asfortranarray(np.arange(6.0).reshape(2, 3))):
        payload = msgpack.unpackb(packb(arr), raw=False).data + tail
        with pytest.raises(CodecError, match="malformed array payload"):
            unpackb(msgpack.packb(msgpack.ExtType(1, payload), use_bin_type=True))


@given(st.sampled_from([np.arange(6.0), np.arange(300.0).reshape(20, 15).T,
                        np.arange(40000, dtype=np.int32)]),
       st.integers(0, 2**32 - 1), st.integers(1, 4))
@settings(max_examples=300, deadline=None)
def test_damaged_array_payloads_decode_or_raise_codec_error(arr, seed, flips):
    # the header is read by hand up to the values: a flipped or cut byte anywhere is either
    # still a valid array (a changed value) or a CodecError, never another exception
    rng = np.random.default_rng(seed)
    payload = bytearray(msgpack.unpackb(packb(arr), raw=False).data)
    for _ in range(flips):
        at = int(rng.integers(0, min(len(payload), 64)))  # the header and the first values
        payload[at] = int(rng.integers(0, 256))
    if rng.random() < 0.3:
        del payload[int(rng.integers(1, len(payload))):]
    try:
        out = unpackb(msgpack.packb(msgpack.ExtType(1, bytes(payload)), use_bin_type=True))
    except CodecError:
        return
    assert isinstance(out, np.ndarray) and out.flags.writeable


def test_decoded_arrays_are_writeable_copies_of_large_payloads():
    # more than 64 KiB of values (a bin32 header), read through a view of the payload: the
    # array must own its memory, not keep the message's bytes alive or read-only
    arr = np.random.default_rng(0).standard_normal((300, 40))
    out = unpackb(packb(arr))
    assert np.array_equal(out, arr) and out.flags.writeable and out.flags.owndata


def test_big_endian_input_decodes_to_same_values():
    arr = np.arange(5, dtype=">f8")
    out = unpackb(packb(arr))
    assert out.dtype == np.float64 and np.array_equal(out, arr)


@given(st.binary(max_size=200))
@settings(max_examples=300)
def test_random_bytes_raise_codec_error_or_decode(data):
    # Random bytes are either valid msgpack of plain data, or a CodecError; never anything else.
    try:
        decode(data)
    except CodecError:
        pass
    else:  # a random valid envelope is astronomically unlikely
        raise AssertionError("random bytes decoded as a valid envelope")


@pytest.mark.parametrize(
    "payload, reason",
    [
        (b"\xc1", "undecodable"),
        (packb([1, 2]), "expected a map"),
        (packb({"v": 99, "kind": "open"}), "wire version"),
        (packb({"v": 1, "kind": "nope"}), "unknown message kind"),
        (packb({"v": True, "kind": "open"}), "unsupported wire version True"),
        (packb({"v": 1.0, "kind": "open"}), "unsupported wire version 1.0"),
    ],
)
def test_malformed_envelopes_say_what_is_wrong(payload, reason):
    with pytest.raises(CodecError, match=reason):
        decode(payload)


@pytest.mark.parametrize("payload, reason", [
    (b"\x00garbage", "not one msgpack value: 7 more bytes follow a complete value"),
    (b'{"kind": "open"}', "another encoding, such as JSON"),
    (b"\x91" * 5000, "values nested too deeply"),
    (b"\xc1", "not msgpack: a byte that msgpack never uses"),
    (b"\x92\x01", "truncated: the bytes end inside a msgpack value"),
])
def test_undecodable_bytes_are_explained_in_words(payload, reason):
    with pytest.raises(CodecError) as info:
        unpackb(payload)
    assert str(info.value).startswith("undecodable message: ") and reason in str(info.value)


def test_truncated_array_payload_is_rejected():
    good = packb(np.arange(10, dtype=np.float64))
    with pytest.raises(CodecError):
        unpackb(good[:-8])


def test_unsupported_dtype_is_rejected_on_encode():
    with pytest.raises(CodecError, match="dtype"):
        packb(np.array(["a", "b"]))
    with pytest.raises(CodecError, match="dtype"):
        packb(np.array([1 + 2j]))


def test_envelope_round_trip_and_numpy_scalars():
    msg = {"kind": "features", "stream": "s", "seq": np.int64(3), "X": np.eye(2, dtype=np.float32)}
    out = decode(encode(msg))
    assert out["v"] == 1 and out["seq"] == 3 and type(out["seq"]) is int
    assert _same_bits(out["X"], msg["X"])
    with pytest.raises(CodecError, match="kind"):
        encode({"kind": "bogus"})


_plain = st.recursive(
    st.none() | st.booleans() | st.integers(-2**63, 2**64 - 1) | st.floats() | st.text(max_size=8)
    | st.binary(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner,
                                                                max_size=4),
    max_leaves=12)


@given(fields=st.dictionaries(st.text(max_size=6).filter(lambda k: k not in ("kind", "v", "_pad")),
                              _plain, max_size=20),
       data=st.data())
@settings(max_examples=60, deadline=None)
def test_prepacked_fields_give_the_same_bytes(fields, data):
    # the worker packs a selection once for its digest and splices it into the result;
    # up to 20 fields: both msgpack map header sizes (fixmap, map16)
    message = {"kind": "result", **fields}
    chosen = data.draw(st.sets(st.sampled_from(sorted(message))))
    packed = {k: packb(message[k]) for k in chosen}
    assert encode(message, packed=packed) == encode(message)
    # no large array, no padding: the bytes of packing the whole envelope, as always
    assert encode(message) == packb({"v": 1, **message})


def _features(X) -> dict:
    return {"kind": "features", "stream": "s", "seq": 1, "start": 0, "X": X, "run": "r"}


@pytest.mark.parametrize("shape", [(300, 40), (2000, 9), (9, 2000)])
@pytest.mark.parametrize("stream", ["s", "a stream id 21 chars"])
def test_large_arrays_decode_in_place_from_aligned_values(shape, stream):
    # the worker's read: no copy of a block's values, which encode laid out 64-byte aligned
    X = np.asfortranarray(np.random.default_rng(1).standard_normal(shape))
    data = encode({**_features(X), "stream": stream, "y": np.arange(10_000.0)})
    out = decode(data, writeable=False)
    assert "_pad" not in out and out["stream"] == stream
    base = np.frombuffer(data, np.uint8).ctypes.data
    for got, sent in ((out["X"], X), (out["y"], np.arange(10_000.0))):
        assert _same_bits(got, sent) and not got.flags.writeable and got.flags.aligned
        assert np.shares_memory(got, np.frombuffer(data, np.uint8))
        assert (got.ctypes.data - base) % 64 == 0
    # the default stays a writeable array of its own
    own = decode(data)["X"]
    assert own.flags.writeable and own.flags.owndata and _same_bits(own, X)


def test_messages_without_padding_decode_to_aligned_arrays():
    # a message as earlier producers packed it (no padding): its values lie where they fall,
    # and are copied where they do not suit
    X = np.random.default_rng(2).standard_normal((300, 40))
    body = {"v": 1, **_features(X)}
    for shift in range(8):
        body["stream"] = "s" * (1 + shift)
        data = packb(body)
        out = decode(data, writeable=False)
        assert _same_bits(out["X"], X) and out["X"].flags.aligned


def test_a_message_cannot_carry_the_padding_field():
    with pytest.raises(CodecError, match="_pad"):
        encode({"kind": "result", "_pad": b""})


@given(fields=st.dictionaries(st.text(max_size=6).filter(lambda k: k not in ("kind", "v", "_pad")),
                              _plain, max_size=6),
       rows=st.integers(0, 3000), names=st.integers(0, 30_000))
@settings(max_examples=60, deadline=None)
def test_decoding_in_place_gives_what_msgpack_gives(fields, rows, names):
    # from 64 KiB on, maps are read in place; long lists of names take several chunks
    X = np.arange(rows * 30, dtype=np.float64).reshape(rows, 30)
    message = {**fields, "kind": "features", "X": X, "S": sp.random(rows, 5, 0.3, format="csr"),
               "names": [f"feature {i}" for i in range(names)]}
    data = encode(message)
    whole = msgpack.unpackb(data, raw=False, strict_map_key=False,
                            ext_hook=lambda code, b: unpackb(msgpack.packb(msgpack.ExtType(code, b))))
    for writeable in (True, False):
        out = decode(data, writeable=writeable)
        assert out.keys() == {k for k in whole if k != "_pad"}
        for k, v in out.items():
            if isinstance(v, np.ndarray):
                assert _same_bits(v, whole[k])
            elif sp.issparse(v):
                assert (v != whole[k]).nnz == 0 and v.format == whole[k].format
            else:
                assert packb(v) == packb(whole[k])  # (NaN too)


def test_a_producer_written_from_the_topics_readme_is_understood():
    """topics/README.md's sketch of the wire format, for producers in other code: dense and
    sparse arrays, and the accepted dtype strings named when one is not."""

    def ext1(a):
        a = np.ascontiguousarray(a)
        return msgpack.packb([a.dtype.newbyteorder("<").str, list(a.shape),
                              a.astype(a.dtype.newbyteorder("<")).tobytes()])

    X = np.arange(6.0).reshape(2, 3)
    M = sp.random(5, 4, density=0.5, format="csc", random_state=0)
    value = msgpack.packb({"v": 1, "kind": "features", "stream": "s1", "seq": 1, "run": "t",
                           "X": msgpack.ExtType(1, ext1(X)),
                           "M": msgpack.ExtType(2, msgpack.packb(
                               ["csc", list(M.shape), ext1(M.indptr), ext1(M.indices),
                                ext1(M.data)]))})
    got = decode(value)
    assert np.array_equal(got["X"], X) and (got["M"] != M).nnz == 0
    named = msgpack.packb({"v": 1, "kind": "features",
                           "X": msgpack.ExtType(1, msgpack.packb(["float64", [1], bytes(8)]))})
    with pytest.raises(CodecError, match=r"'float64': one of \|b1, .*<f8"):
        decode(named)


def test_a_map_without_wire_version_names_the_missing_key():
    with pytest.raises(CodecError, match="missing wire version 'v'"):
        decode(packb({"kind": "open", "stream": "s"}))
    with pytest.raises(CodecError, match="unsupported wire version 99"):
        decode(packb({"v": 99, "kind": "open"}))
    # keys written as bin (another language's msgpack, or bytes keys): said so, not 'missing'
    with pytest.raises(CodecError, match="map keys must be msgpack strings"):
        decode(packb({b"v": 1, b"kind": "open", b"stream": "s", b"seq": 0}))
    # only some of them: named, not "unknown message kind None"
    with pytest.raises(CodecError, match="not bin: 'kind', 'seq' came as bytes"):
        decode(packb({"v": 1, b"kind": "open", "stream": "s", b"seq": 0}))


def test_a_lenient_decode_keeps_undecodable_ext_values_in_their_fields():
    # one field's unknown ext type or bad array made the whole message undecodable; the
    # worker now reads the rest (and large arrays still in place) and judges the field
    from streamfs.codec import Undecodable

    X = np.asfortranarray(np.random.default_rng(1).standard_normal((300, 40)))
    bad = msgpack.ExtType(1, msgpack.packb([">f8", [2], bytes(16)], use_bin_type=True))
    data = encode({**_features(X), "extra": msgpack.ExtType(7, b"xyz"), "y": bad})
    with pytest.raises(CodecError, match="unknown msgpack ext type 7"):
        decode(data)
    out = decode(data, writeable=False, lenient=True)
    assert isinstance(out["extra"], Undecodable) and isinstance(out["y"], Undecodable)
    assert out["extra"].reason == "unknown msgpack ext type 7"
    assert out["y"].reason.startswith("unsupported array dtype '>f8': one of |b1, |i1,")
    assert np.shares_memory(out["X"], np.frombuffer(data, np.uint8)) and _same_bits(out["X"], X)


def test_sparse_entries_past_the_last_indptr_are_refused_not_dropped():
    """A third party's sparse block whose indptr ends before its indices and values was
    decoded with those entries silently lost (scipy takes them as spare room); refused. A
    scipy matrix with spare room is sent without it."""
    import msgpack
    import scipy.sparse as sp

    from streamfs.codec import CodecError, packb, unpackb
    from streamfs.codec.wire import _EXT_SPARSE, _pack_ndarray

    def sparse(indptr, indices, values):
        return msgpack.ExtType(_EXT_SPARSE, msgpack.packb(
            ["csc", [20, 2], *(_pack_ndarray(np.array(a)) for a in (indptr, indices, values))],
            use_bin_type=True))

    short = msgpack.packb({"X": sparse([0, 1, 2], [2, 4, 5], [1.0, 2.0, 3.0])},
                          use_bin_type=True)
    with pytest.raises(CodecError, match=r"indptr ends at 2, but indices has 3 entries and "
                                         r"values 3: the last indptr must equal both"):
        unpackb(short)
    exact = unpackb(msgpack.packb({"X": sparse([0, 1, 3], [2, 4, 5], [1.0, 2.0, 3.0])},
                                  use_bin_type=True))["X"]
    assert exact.toarray()[[2, 4, 5], [0, 1, 1]].tolist() == [1.0, 2.0, 3.0]
    roomy = sp.csc_matrix((np.array([1.0, 2.0, 3.0, 9.0]), np.array([2, 4, 5, 0]),
                           np.array([0, 1, 3])), shape=(20, 2))
    back = unpackb(packb(roomy))
    assert (back != roomy).nnz == 0 and back.data.tolist() == [1.0, 2.0, 3.0]


@pytest.mark.parametrize("ext, said", [
    # a payload cut short: msgpack said "3 exceeds max_array_len(2)"
    (msgpack.ExtType(2, b"\x93\x01"),
     "malformed sparse payload: truncated: the bytes end inside a msgpack value"),
    # numpy's int64 product of the shape wrapped around: "needs 0 bytes"
    (msgpack.ExtType(1, msgpack.packb(["<f8", [2**62, 4], b"\0" * 16], use_bin_type=True)),
     "array of shape (4611686018427387904, 4) and dtype <f8 needs 147573952589676412928 "
     "bytes, got 16"),
    # scipy said "Python int too large to convert to C long"
    (msgpack.ExtType(2, msgpack.packb(["csr", [10, 2**63], b"", b"", b""], use_bin_type=True)),
     "malformed sparse header: shape [10, 9223372036854775808] must be two integers from 0 "
     "to 2^63 - 1"),
])
def test_bad_array_payloads_are_said_in_a_producers_words(ext, said):
    with pytest.raises(CodecError) as exc:
        unpackb(msgpack.packb({"X": ext}, use_bin_type=True))
    assert str(exc.value) == said


def test_a_bool_array_of_bytes_other_than_0_and_1_is_refused():
    """numpy took the byte 2 of a third party's `|b1` array as True; the contract says one
    byte, 0 or 1."""
    def ext(raw: bytes):
        return msgpack.ExtType(1, msgpack.packb(["|b1", [len(raw)], raw], use_bin_type=True))

    with pytest.raises(CodecError, match=r"^bool array of dtype \|b1 holds bytes other than 0 "
                                         r"and 1$"):
        unpackb(msgpack.packb({"X": ext(b"\x00\x02\x01")}, use_bin_type=True))
    ok = unpackb(msgpack.packb({"X": ext(b"\x00\x01\x01")}, use_bin_type=True))["X"]
    assert ok.tolist() == [False, True, True]
    assert unpackb(packb(np.array([True, False]))).tolist() == [True, False]


def test_a_json_output_record_needs_the_envelope_s_version_not_true():
    """{"v": true} passed the JSON envelope check (True == 1), which msgpack's refuses."""
    import json

    from streamfs.codec import CodecError
    from streamfs.codec.text import decode_any

    assert decode_any(json.dumps({"v": 1, "kind": "result"}).encode())["kind"] == "result"
    for bad in ({"v": True, "kind": "result"}, {"kind": "result"}, {"v": 1.5}):
        with pytest.raises(CodecError, match="without the streamfs envelope"):
            decode_any(json.dumps(bad).encode())
