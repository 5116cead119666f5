"""LIBSVM index base: 0-based files (scikit-learn's dump_svmlight_file), 1-based, "auto"."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from streamfs.producers.errors import InputFileError
from streamfs.producers.files import load_file, read_libsvm
from streamfs.producers.libsvm import (
    LibsvmReader,
    _parse_fast,
    _parse_slow,
    detect_index_base,
    scan_indices,
)
from streamfs.producers.sources import open_instances

from .data import sparse_dataset, write_libsvm


def _dump(path, X, y, zero_based: bool) -> None:
    from sklearn.datasets import dump_svmlight_file

    dump_svmlight_file(X, y, str(path), zero_based=zero_based)


def _with_column_zero(seed: int = 0, n: int = 300, d: int = 50):
    """Sparse data with a column 0; values of at most 16 significant digits, which
    ``dump_svmlight_file`` (``%.16g``) writes exactly."""
    X, y = sparse_dataset(seed=seed, n=n, d=d)
    X.data = np.array([float(f"{v:.12g}") for v in X.data])
    X = X.tolil()
    X[n // 2, 0] = 1.5  # an index 0 in the middle of the file: "auto" must still see it
    X[n - 1, d - 1] = -2.0  # d is known from the data
    X = X.tocsr()
    X.sort_indices()
    return X, y


def _equal(A, B) -> bool:
    return A.shape == B.shape and (sp.csr_matrix(A) != sp.csr_matrix(B)).nnz == 0


def _stack(chunks):
    Xs, ys = zip(*chunks)
    return sp.vstack(Xs, format="csr"), np.concatenate(ys)


def test_sklearn_zero_based_file_round_trips_through_load_file(tmp_path):
    X, y = _with_column_zero()
    path = tmp_path / "d.svmlight"
    _dump(path, X, y, zero_based=True)
    Xr, yr = load_file(str(path))
    assert _equal(Xr, X) and np.array_equal(Xr.toarray(), X.toarray())
    assert yr.tolist() == y.tolist()
    Xe, _ = load_file(str(path), zero_based=True)
    assert _equal(Xe, X)


def test_sklearn_zero_based_file_round_trips_through_instance_chunks(tmp_path):
    X, y = _with_column_zero(seed=2)
    path = tmp_path / "d.svm"
    _dump(path, X, y, zero_based=True)
    for n_features in (None, X.shape[1]):  # a first pass, or only the scan for an index 0
        src = open_instances(str(path), n_features=n_features, chunk_bytes=2000)
        assert src.index_base == 0 and src.n_features == X.shape[1]
        assert src.feature_names is None
        chunks = list(src.chunks())
        assert len(chunks) > 3
        Xr, yr = _stack(chunks)
        assert _equal(Xr, X) and yr.tolist() == y.tolist()


def test_one_based_files_still_read_and_report_base_one(tmp_path):
    X, y = _with_column_zero(seed=4)
    sk = tmp_path / "sk1.svm"
    _dump(sk, X, y, zero_based=False)
    ours = tmp_path / "ours.svm"
    write_libsvm(ours, X, y)
    for path in (sk, ours):
        reader = LibsvmReader(path, chunk_bytes=3000)
        assert reader.index_base == 1 and reader.n_features == X.shape[1]
        Xr, yr = _stack(list(reader.chunks()))
        assert _equal(Xr, X) and yr.tolist() == y.tolist()
        assert _equal(load_file(str(path))[0], X)
        assert _equal(load_file(str(path), zero_based=False)[0], X)
        src = open_instances(str(path), n_features=X.shape[1])
        assert src.index_base == 1 and _equal(_stack(list(src.chunks()))[0], X)


def test_forced_one_based_on_a_zero_based_file_names_file_and_line(tmp_path):
    path = tmp_path / "z.svm"
    path.write_text("1 1:1 2:2\n-1 3:0.5\n# a comment\n1 2:1 0:4\n1 1:1\n")
    for n_features in (None, 10):
        with pytest.raises(InputFileError) as info:
            list(LibsvmReader(path, n_features, zero_based=False).chunks())
        text = str(info.value)
        assert text.startswith(f"{path}, line 4: feature index 0 < 1 in '0:4'")
        assert "zero_based=True" in text
    with pytest.raises(InputFileError, match=r"z\.svm, line 4: feature index 0 < 1"):
        load_file(str(path), zero_based=False)
    with pytest.raises(InputFileError, match=r"line 4: feature index 0 < 1"):
        list(open_instances(str(path), zero_based=False).chunks())


def test_auto_ignores_zero_in_comments_and_forced_zero_based_shifts(tmp_path):
    path = tmp_path / "c.svm"
    path.write_text("# made at 10:0:00\n1 1:1 3:2  # 0:7\n-1 2:1\n")
    reader = LibsvmReader(path)
    assert reader.index_base == 1 and reader.n_features == 3
    X, _ = read_libsvm(path, zero_based=True)  # the same file read as 0-based: one more column
    assert X.shape == (2, 4) and X.toarray().tolist() == [[0, 1, 0, 2], [0, 0, 1, 0]]
    assert detect_index_base(path) == 1 and detect_index_base(path, True) == 0
    with pytest.raises(ValueError, match="zero_based"):
        LibsvmReader(path, zero_based="yes")


def test_zero_based_index_beyond_n_features_is_named(tmp_path):
    path = tmp_path / "d.svm"
    path.write_text("1 0:1\n1 9:1\n-1 10:1\n")
    with pytest.raises(InputFileError,
                       match=r"line 3: feature index 10 >= n_features = 10 \(0-based\)"):
        list(LibsvmReader(path, n_features=10).chunks())


def test_fast_and_slow_parsers_agree_on_zero_based_blocks(tmp_path):
    X, y = _with_column_zero(seed=5)
    path = tmp_path / "d.svm"
    _dump(path, X, y, zero_based=True)
    block = path.read_bytes() + b"\n1\n"
    fast = _parse_fast(block, 0)
    assert fast is not None  # index 0 no longer sends zero-based blocks to the slow path
    for a, b in zip(fast, _parse_slow(path, block, 1, 0)):
        assert np.array_equal(a, b)
    assert _parse_fast(block, 1) is None  # 1-based: the slow path names the line


def test_scan_indices_stops_at_the_first_zero(tmp_path):
    path = tmp_path / "d.svm"
    path.write_text("1 5:1\n1 0:1\n" + "1 77:1\n" * 2000)
    assert scan_indices(path) == (77, True)
    top, zero = scan_indices(path, chunk_bytes=12, stop_at_zero=True)  # first block: 2 lines
    assert (top, zero) == (5, True)
    path.write_text("1 qid:3 5:1\n")  # a token without digits is not an index 0
    assert scan_indices(path) == (5, False)


@pytest.mark.parametrize("text, says", [("", "empty file"), ("\n# c\n", "empty file"),
                                        ("\n# c\n1\n-1\n", "no feature")])
def test_a_file_without_features_is_refused_naming_the_file(tmp_path, text, says):
    path = tmp_path / "d.svm"
    path.write_text(text)
    for read in (lambda: load_file(str(path)), lambda: open_instances(str(path))):
        with pytest.raises(InputFileError, match=f"d.svm: {says}"):
            read()


def test_qid_after_the_label_is_skipped_as_scikit_learn_skips_it(tmp_path):
    """SVMlight's ``qid:N`` (learning-to-rank files) was refused as "feature index in 'qid:3'
    is not an integer", and with --n-features a traceback (ValueError: invalid literal for
    int() with base 10: b'qid') where an index went beyond it."""
    from sklearn.datasets import load_svmlight_file

    path = tmp_path / "rank.svm"
    path.write_text("1 qid:3 1:0.5 3:2\n-1 qid:3 2:1\n2 qid:4 1:1 # a comment\n")
    X_ref, y_ref = load_svmlight_file(str(path))
    X, y = read_libsvm(path)
    assert np.array_equal(X.toarray(), X_ref.toarray()) and y.tolist() == y_ref.tolist()
    chunks = list(open_instances(str(path), chunk_bytes=16).chunks())
    assert np.array_equal(sp.vstack([c[0] for c in chunks]).toarray(), X_ref.toarray())
    with pytest.raises(InputFileError, match=r"rank.svm, line 1: feature index 3 > "
                                             r"n_features = 2"):
        read_libsvm(path, n_features=2)
    path.write_text("1 1:1 qid:3\n")  # not where SVMlight puts it: not a feature either
    with pytest.raises(InputFileError, match=r"line 1: feature index in 'qid:3' is not an "
                                             r"integer"):
        read_libsvm(path)


@pytest.mark.parametrize("index", ["99999999999999999999", "9223372036854775808",
                                   "1000000000000000000"])
def test_an_index_too_large_is_named_not_a_traceback(tmp_path, index):
    """Past int64 it was OverflowError (exit 1); 19 digits within int64 said "feature index
    ... > n_features = <its last 18 digits>" (the scan reads 18 digits)."""
    path = tmp_path / "d.svm"
    path.write_text(f"1 2:1\n-1 {index}:1\n")
    for read in (read_libsvm, lambda p: list(open_instances(str(p)).chunks())):
        with pytest.raises(InputFileError) as info:
            read(path)
        assert str(info.value) == (f"{path}, line 2: feature index in '{index}:1' is too "
                                   "large (at most 999999999999999999)")


def test_a_byte_order_mark_is_dropped_as_in_csv_files(tmp_path):
    """A file saved as "UTF-8" by Notepad starts with a BOM: its first label was "'\\ufeff1'
    is not a number"; CSV files drop it, and so do LIBSVM files now."""
    path = tmp_path / "d.svm"
    path.write_bytes(b"\xef\xbb\xbf1 1:0.5 3:2\n-1 2:1\n")
    X, y = read_libsvm(path)
    assert X.toarray().tolist() == [[0.5, 0.0, 2.0], [0.0, 1.0, 0.0]] and y.tolist() == [1, -1]
    reader = LibsvmReader(path, chunk_bytes=8)
    chunks = list(reader.chunks())
    assert sp.vstack([c[0] for c in chunks]).toarray().tolist() == X.toarray().tolist()
    assert reader.bytes_read == reader.size
