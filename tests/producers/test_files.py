"""File readers without Kafka: LIBSVM, CSV/TSV, .npy/.npz, .mat, Parquet, groups."""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from streamfs.producers.delimited import DelimitedReader
from streamfs.producers.errors import InputFileError
from streamfs.producers.files import check_groups, load_file, read_groups
from streamfs.producers.libsvm import LibsvmReader, _parse_fast, _parse_slow, scan_max_index
from streamfs.producers.sources import open_instances

from .data import sparse_dataset, write_libsvm


def _same_sparse(A, B) -> bool:
    return A.shape == B.shape and (sp.csr_matrix(A) != sp.csr_matrix(B)).nnz == 0


def _stack(chunks):
    Xs, ys = zip(*chunks)
    X = sp.vstack(Xs, format="csr") if sp.issparse(Xs[0]) else np.concatenate(Xs)
    return X, np.concatenate(ys)


# --- LIBSVM ----------------------------------------------------------------------------------

@pytest.mark.parametrize("trailing_space,comments", [(False, False), (True, False), (False, True)])
def test_libsvm_chunks_equal_source_with_absent_features(tmp_path, trailing_space, comments):
    X, y = sparse_dataset()
    path = tmp_path / "d.svm"
    write_libsvm(path, X, y, trailing_space=trailing_space, comments=comments)
    reader = LibsvmReader(path, n_features=X.shape[1], chunk_bytes=4096)  # many small blocks
    chunks = list(reader.chunks())
    assert len(chunks) > 5
    Xr, yr = _stack(chunks)
    assert _same_sparse(Xr, X)
    assert np.array_equal(Xr.data, X.data)  # bit-exact values, same order
    assert yr.tolist() == y.tolist() and yr.dtype == np.int64
    assert reader.bytes_read == path.stat().st_size


def test_libsvm_fast_and_slow_parsers_agree(tmp_path):
    X, y = sparse_dataset(seed=3)
    path = tmp_path / "d.svm"
    write_libsvm(path, X, y)
    block = path.read_bytes() + b"\n1\n"  # a blank line and a row without features
    fast = _parse_fast(block)
    assert fast is not None
    slow = _parse_slow(path, block, 1)
    for a, b in zip(fast, slow):
        assert np.array_equal(a, b)


def test_libsvm_scan_finds_d_and_ignores_comments(tmp_path):
    path = tmp_path / "d.svm"
    path.write_text("# written at 99999:00\n1 3:1 1234567:2.5\n-1 17:1  # 88888888:1\n")
    assert scan_max_index(path) == 1234567
    X, y = next(LibsvmReader(path).chunks())
    assert X.shape == (2, 1234567) and X[0, 1234566] == 2.5 and y.tolist() == [1, -1]


def test_libsvm_scan_handles_a_huge_block_boundary(tmp_path):
    X, y = sparse_dataset(seed=1, n=500, d=40)
    path = tmp_path / "d.svm"
    write_libsvm(path, X, y)
    true_d = int(X.indices.max()) + 1
    assert scan_max_index(path, chunk_bytes=100) == true_d  # blocks shorter than a line


@pytest.mark.parametrize("line,needle", [
    ("1 3:x", "value in '3:x' is not a number"),
    ("1 0:2", "feature index 0 < 1"),
    ("1 -4:2", "feature index -4 < 1"),
    ("1 3", "expected idx:value, got '3'"),
    ("a 3:1", "label 'a' is not a number"),
    ("1 3:1:2", "is not a number"),
    ("1 2.5:1", "not an integer"),
    ("1 3:", "value in '3:' is not a number"),
])
def test_libsvm_malformed_line_is_named(tmp_path, line, needle):
    path = tmp_path / "bad.svm"
    path.write_text("1 1:1 2:2\n-1 3:0.5\n\n" + line + "\n1 1:1\n")
    with pytest.raises(InputFileError) as info:  # 1-based: "auto" would take "0:2" as 0-based
        list(LibsvmReader(path, n_features=10, zero_based=False).chunks())
    assert f"{path}, line 4: " in str(info.value) and needle in str(info.value)


def test_libsvm_index_beyond_n_features_is_named(tmp_path):
    path = tmp_path / "d.svm"
    path.write_text("1 1:1\n1 2:1\n-1 11:1\n")
    with pytest.raises(InputFileError, match=r"line 3: feature index 11 > n_features = 10"):
        list(LibsvmReader(path, n_features=10).chunks())


def test_libsvm_unsorted_indices_are_read_and_a_duplicate_is_refused(tmp_path):
    path = tmp_path / "d.svm"
    path.write_text("1 3:1 1:2 2:0.5\n-1 3:1\n1\n-1 3:2\n")  # 3 ends and starts rows
    X, _ = load_file(str(path))
    assert X.toarray().tolist() == [[2.0, 0.5, 1.0], [0, 0, 1.0], [0, 0, 0], [0, 0, 2.0]]
    # scipy added the two values up without a word
    path.write_text("1 3:1 1:2\n# a comment line\n-1 2:1 3:0.5 2:0.25\n")
    with pytest.raises(InputFileError, match=r"d.svm, line 3: feature index 2 appears twice"):
        load_file(str(path))
    with pytest.raises(InputFileError, match=r"line 3: feature index 2 appears twice"):
        list(LibsvmReader(path, n_features=3).chunks())


# --- CSV / TSV --------------------------------------------------------------------------------

def _write_csv(path, X, y, header, sep=","):
    with open(path, "w") as fh:
        if header:
            fh.write(sep.join(header) + "\n")
        for row, label in zip(X, y):
            fh.write(sep.join([repr(float(v)) for v in row[:2]] + [str(label)]
                              + [repr(float(v)) for v in row[2:]]) + "\n")


def test_csv_with_header_and_string_label_in_the_middle(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 5))
    y = np.array(["benign", "malignant"])[rng.integers(0, 2, 200)]
    path = tmp_path / "d.csv"
    _write_csv(path, X, y, ["f0", "f1", "diagnosis", "f2", "f3", "f4"])
    reader = DelimitedReader(path, label="diagnosis", chunk_bytes=1000)
    assert reader.header and reader.feature_names == ["f0", "f1", "f2", "f3", "f4"]
    chunks = list(reader.chunks())
    assert len(chunks) > 3
    Xr, yr = _stack(chunks)
    assert np.array_equal(Xr, X) and yr.tolist() == y.tolist()
    Xw, yw = load_file(str(path), label="diagnosis")
    assert np.array_equal(Xw, X) and yw.tolist() == y.tolist()


def test_tsv_without_header_label_by_index(tmp_path):
    X = np.arange(12, dtype=float).reshape(4, 3) / 7
    y = np.array([1, 2, 1, 2])
    path = tmp_path / "d.tsv"
    _write_csv(path, X, y, None, sep="\t")
    src = open_instances(str(path), label="2")
    Xr, yr = _stack(src.chunks())
    assert np.array_equal(Xr, X) and yr.tolist() == [1, 2, 1, 2] and yr.dtype == np.int64
    assert src.feature_names is None and src.n_features == 3


def test_csv_header_flags(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("1,2,0\n3,4,1\n")
    assert not DelimitedReader(path).header
    X, _ = load_file(str(path), header=True)  # first row taken as names
    assert X.tolist() == [[3.0, 4.0]]
    with pytest.raises(InputFileError, match="no label column named 'cls'"):
        DelimitedReader(path, label="cls", header=False)
    named = tmp_path / "named.csv"
    named.write_text("a,b,class\n1,2,0\n3,4,1\n")
    with pytest.raises(InputFileError, match=r"named 'klass' in the header \(did you mean "
                                             r"'class'\?\)$"):
        DelimitedReader(named, label="klass")
    with pytest.raises(InputFileError, match=r"named 'zzz' in the header$"):  # nothing close
        DelimitedReader(named, label="zzz")
    # a label named in a file without a header: its first row was "the header", which the
    # message named as if the file had one
    with pytest.raises(InputFileError) as info:
        DelimitedReader(path, label="cls")
    assert str(info.value) == (
        f"{path}: no label column named 'cls': the first row (1, 2, 0), read as the header "
        "because --label names a column, holds only numbers, so the file seems to have no "
        "header: give the label column's index instead (e.g. --label 2, or -1 for the last "
        "column)")
    with pytest.raises(InputFileError, match="no label column named 'cls' in the header$"):
        DelimitedReader(path, label="cls", header=True)  # the user's word: not second-guessed


def test_parquet_label_not_among_its_columns_is_said_so(tmp_path):
    """A Parquet file has columns, not a header line."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from streamfs.producers.names import source_feature_names

    path = tmp_path / "d.parquet"
    pq.write_table(pa.table({"a": [1.0, 2.0], "class": [0, 1]}), path)
    for read in (load_file, open_instances, source_feature_names):
        with pytest.raises(InputFileError) as info:
            read(str(path), label="klass")
        assert str(info.value) == (f"{path}: no label column named 'klass' among the columns "
                                   "(did you mean 'class'?)"), read


def test_csv_header_of_column_numbers_is_a_header(tmp_path, caplog):
    """pandas writes the columns of a frame made from an array as 0, 1, 2, …: a header, not an
    instance (a label column included; also 1, 2, 3, …); other numeric first rows are data."""
    import pandas as pd

    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(6, 3)))
    frame[3] = [0, 1] * 3
    path = tmp_path / "numbered.csv"
    frame.to_csv(path, index=False)
    assert path.read_text().splitlines()[0] == "0,1,2,3"
    reader = DelimitedReader(path)
    assert reader.header and reader.feature_names == ["0", "1", "2"]
    assert "first row 0,1,2,… read as a header of column numbers" in caplog.text  # a guess
    X, y = load_file(str(path))
    assert X.shape == (6, 3) and y.tolist() == [0, 1] * 3
    path.write_text("1,2,3\n5,6,1\n")
    assert DelimitedReader(path).header
    path.write_text("1,2,1\n5,6,0\n")  # repeats: data
    assert not DelimitedReader(path).header


def test_a_label_given_as_a_number_is_a_header_s_name_first(tmp_path, caplog):
    """With a header 1, 2, 3, --label 3 (the last column's name, past the last index) was
    refused as out of range, and --label 2 took the column named 2 without a word."""
    path = tmp_path / "numbered.csv"
    path.write_text("1,2,3\n0.5,0.25,a\n1.5,2.5,b\n")
    reader = DelimitedReader(path, label="3")
    assert reader.label_col == 2 and reader.feature_names == ["1", "2"]
    assert "--label 3" not in caplog.text  # no column 3: nothing to mix up
    reader = DelimitedReader(path, label="2")
    assert reader.label_col == 1
    assert ("--label 2 is the column named '2' (column 1), not column 2: a header's names "
            "come before indices") in caplog.text


def test_a_doubtful_header_guess_is_noted_and_the_rule_unchanged(tmp_path, caplog):
    """A header of numeric names (years) is read as data, as the rule says, but its label
    occurs in no other row: said on stderr; the reverse for a mostly numeric first row read
    as a header whose label is one of the labels (a data row with a missing value)."""
    rng = np.random.default_rng(0)
    body = "".join(f"{a:.3f},{b:.3f},{c:.3f},{int(a > 0)}\n"
                   for a, b, c in rng.normal(size=(20, 3)))
    path = tmp_path / "years.csv"
    path.write_text("2019,2020,2021,2022\n" + body)
    X, y = load_file(str(path))
    assert X.shape == (21, 3) and sorted(set(y.tolist())) == [0, 1, 2022]  # the rule stands
    assert ("years.csv: first row 2019,2020,2021,2022 read as data (its features are numbers), "
            "but its label '2022' occurs in no other row: pass --header if it is a header"
            in caplog.text)
    caplog.clear()
    assert load_file(str(path), header=False)[0].shape == (21, 3)
    assert "read as data" not in caplog.text  # said only for a guess
    path = tmp_path / "plain.csv"  # a first row of data with a class seen again: no note
    path.write_text(body)
    load_file(str(path))
    path = tmp_path / "hole.csv"
    path.write_text("1,,5,0\n" + body)
    assert load_file(str(path))[0].shape == (20, 3)
    assert ("hole.csv: first row 1,,5,0 read as a header (not every feature is a number), but "
            "its label '0' is one of the labels: pass --no-header if it is data" in caplog.text)
    assert "plain.csv" not in caplog.text
    path = tmp_path / "named.csv"  # an ordinary header: no note
    path.write_text("a,b,c,y\n" + body)
    load_file(str(path))
    assert "named.csv" not in caplog.text


def test_sources_that_are_not_data_files_are_named(tmp_path):
    with pytest.raises(InputFileError, match="is a directory, not a data file"):
        load_file(str(tmp_path))
    (tmp_path / "d.xyz").write_text("1,2\n")
    with pytest.raises(InputFileError, match=r"unknown format '.xyz' \(known: .csv, "):
        load_file(str(tmp_path / "d.xyz"))
    np.savez(tmp_path / "d.npz", X=np.ones((4, 2)), y=np.arange(4) % 2)
    for read in (load_file, open_instances):
        with pytest.raises(InputFileError, match="a label column applies to CSV/TSV, Parquet "
                                                 "and .npy files; .npz files carry their labels"):
            read(str(tmp_path / "d.npz"), label="y")
    (tmp_path / "d.txt").write_text("a,b,y\n1,2,0\n")  # a CSV under a LIBSVM suffix
    with pytest.raises(InputFileError, match="read as LIBSVM, by its .txt suffix"):
        load_file(str(tmp_path / "d.txt"))


def test_csv_header_with_a_duplicate_name_is_refused(tmp_path):
    """Two columns of one name would give results two features of that name (the Python
    API refuses such DataFrame columns); unnamed columns are left to the naming rule."""
    path = tmp_path / "dup.csv"
    path.write_text("a,b,a,class\n1,2,3,x\n4,5,6,y\n")
    for read in (load_file, open_instances):
        with pytest.raises(InputFileError, match=r"dup.csv, line 1: duplicate column name 'a' "
                                                 r"\(columns 0 and 2\)"):
            read(str(path))
    path.write_text("a,b,a,b,class\n1,2,3,4,x\n")  # every duplicated name is named
    with pytest.raises(InputFileError, match=r"dup.csv, line 1: duplicate column names 'a' "
                                             r"\(columns 0 and 2\), 'b' \(columns 1 and 3\): "):
        load_file(str(path))
    path.write_text(",b,,class\n1,2,3,x\n4,5,6,y\n")
    assert DelimitedReader(path).feature_names == ["x0", "b", "x2"]


def test_csv_column_named_as_the_rule_names_an_unnamed_one_is_refused(tmp_path):
    """An unnamed column is named x<feature index>: a column already named so gave results
    two features of that name. Refused as a duplicate name is."""
    path = tmp_path / "clash.csv"
    path.write_text("x1,,class\n1,2,a\n3,4,b\n")
    for read in (load_file, open_instances):
        with pytest.raises(InputFileError) as info:
            read(str(path))
        assert str(info.value) == (f"{path}, line 1: column 1 has no name and would be named "
                                   "'x1' (unnamed columns are named x<feature index>), the name "
                                   "of column 0: name every column")
    path.write_text("class,,x0,,x3,x2\n" + "a,1,2,3,4,5\n")  # feature index, not column
    with pytest.raises(InputFileError) as info:
        DelimitedReader(path, label="class")
    assert str(info.value).endswith(": column 1 has no name and would be named 'x0' (unnamed "
                                    "columns are named x<feature index>), the name of column 2; "
                                    "column 3 has no name and would be named 'x2', the name of "
                                    "column 5: name every column")
    path.write_text("class,,x1,x2\na,1,2,3\n")  # no clash: the unnamed column is x0
    assert DelimitedReader(path, label="class").feature_names == ["x0", "x1", "x2"]


def test_csv_columns_without_names_get_the_rule_s_names(tmp_path, caplog):
    """``DataFrame.to_csv()`` writes its index as a first column without a name."""
    import pandas as pd

    frame = pd.DataFrame({"a": [0.5, 1.5, 2.5, 3.5], "": [1.0, 2.0, 3.0, 4.0], "y": [0, 1, 0, 1]})
    path = tmp_path / "indexed.csv"
    frame.to_csv(path)
    assert path.read_text().splitlines()[0] == ",a,,y"
    assert DelimitedReader(path).feature_names == ["x0", "a", "x2"]
    assert "column 0 has no name, named x0 (the index pandas writes" in caplog.text


@pytest.mark.parametrize("body,needle", [
    ("a,b,c\n1,2,x\n3,,y\n", "line 3, column 1 ('b'): an empty cell (a missing value): fill "
                             "or drop it"),
    ("a,b,c\n1,2,x\n3,4\n", "line 3: 2 fields, expected 3"),
    ("a,b,c\n1,2,x\n  \n3,4,y\n", "line 3: a line of spaces only (delete it)"),
    ("a,b,c\n1,2,x\n\n3,oops,y\n", "line 4, column 1 ('b'): not a number: 'oops'"),
    # numbers to numpy, refused later without their line (found by the first-hour audit)
    ("a,b,c\n1,2,x\n3, NaN ,y\n", "line 3, column 1 ('b'): 'NaN' is NaN (a missing value): "
                                 "fill or drop it"),
    ("a,b,c\n1,2,x\n3,4,y\n-inf,5,x\n", "line 4, column 0 ('a'): '-inf' is infinite or "
                                        "beyond the largest float (1.8e308)"),
    ("a,b,c\n1,2,x\n3,1e400,y\n", "line 3, column 1 ('b'): '1e400' is infinite or beyond the "
                                 "largest float (1.8e308)"),
])
def test_csv_malformed_line_is_named(tmp_path, body, needle):
    path = tmp_path / "bad.csv"
    path.write_text(body)
    for read in (lambda: list(DelimitedReader(path).chunks()), lambda: load_file(str(path))):
        with pytest.raises(InputFileError) as info:
            read()
        assert str(info.value) == f"{path}, {needle}"


def test_csv_missing_label_is_named_not_read_as_a_class(tmp_path):
    """An empty label field (how pandas writes NaN) is refused with its line, for files read
    whole and incrementally; it had become a class '' of its own."""
    path = tmp_path / "d.csv"
    path.write_text("a,b,class\n1,2,0\n3,4,1\n5,6,\n7,8,1\n")
    needle = f"{path}, line 4, column 2 ('class'): the label is missing; every instance needs a class"
    for read in (lambda: load_file(str(path), label="class"),
                 lambda: list(open_instances(str(path), label="class").chunks())):
        with pytest.raises(InputFileError) as info:
            read()
        assert str(info.value) == needle


def test_files_without_data_rows_say_so(tmp_path):
    import pandas as pd

    (tmp_path / "h.csv").write_text("a,b,class\n\n")
    pd.DataFrame({"a": [1.0], "class": [0]}).head(0).to_parquet(tmp_path / "h.parquet")
    for name, needle in (("h.csv", "no data rows, only a header"), ("h.parquet", "no data rows")):
        path = str(tmp_path / name)
        for read in (lambda: load_file(path), lambda: list(open_instances(path).chunks())):
            with pytest.raises(InputFileError) as info:
                read()
            assert str(info.value) == f"{path}: {needle}"


def test_csv_streaming_refuses_a_late_text_label(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("".join(f"{i},{i % 2}\n" for i in range(50)) + "7,maybe\n")
    with pytest.raises(InputFileError, match=r"line 51: label 'maybe' is not a number"):
        list(DelimitedReader(path, chunk_bytes=64).chunks())


# --- NumPy, MATLAB, Parquet -------------------------------------------------------------------

def test_npy_label_column_and_labels_file(tmp_path):
    A = np.arange(30, dtype=np.float32).reshape(10, 3)
    np.save(tmp_path / "a.npy", A)
    src = open_instances(str(tmp_path / "a.npy"), label="0", chunk_bytes=16)
    Xr, yr = _stack(src.chunks())
    assert np.array_equal(Xr, A[:, 1:]) and np.array_equal(yr, A[:, 0]) and Xr.dtype == np.float32
    np.save(tmp_path / "y.npy", np.arange(10))
    X, y = load_file(str(tmp_path / "a.npy"), label=str(tmp_path / "y.npy"))
    assert np.array_equal(X, A) and y.tolist() == list(range(10))


def test_npz_needs_x_and_y(tmp_path):
    np.savez(tmp_path / "d.npz", X=np.ones((2, 2)))
    with pytest.raises(InputFileError, match="needs arrays 'X' and 'y'"):
        load_file(str(tmp_path / "d.npz"))
    (tmp_path / "e.npz").write_bytes(b"PK\x03\x04 truncated")
    with pytest.raises(InputFileError, match="e.npz: not a readable .npz archive"):
        load_file(str(tmp_path / "e.npz"))


def test_npz_and_mat_labels_must_be_one_per_row(tmp_path):
    """X and y stored apart must agree: a feature stream of 569 rows with 566 labels went
    out, and the worker dead-lettered its every block."""
    X = np.ones((6, 2))
    np.savez(tmp_path / "d.npz", X=X, y=np.arange(4) % 2)
    scipy.io.savemat(tmp_path / "d.mat", {"X": X, "y": (np.arange(4) % 2).reshape(-1, 1)})
    for name in ("d.npz", "d.mat"):
        with pytest.raises(InputFileError) as info:
            load_file(str(tmp_path / name))
        assert str(info.value) == (f"{tmp_path / name}: X has 6 rows (instances) but y has "
                                   "shape (4,): one label per row")


def test_mat_v5_and_v73_dense_and_sparse(tmp_path):
    X, y = sparse_dataset(seed=2, n=40, d=12)
    dense = X.toarray()
    scipy.io.savemat(tmp_path / "v5.mat", {"X": dense, "Y": y.reshape(-1, 1)})
    scipy.io.savemat(tmp_path / "v5s.mat", {"X": X.tocsc(), "y": y.reshape(-1, 1)})
    with h5py.File(tmp_path / "v73.mat", "w", userblock_size=512) as fh:
        fh["X"] = dense.T  # MATLAB writes column-major: HDF5 sees the transpose
        fh["Y"] = y.reshape(1, -1).astype(float)
    with open(tmp_path / "v73.mat", "r+b") as fh:  # the header MATLAB puts in the user block
        fh.write(b"MATLAB 7.3 MAT-file, Platform: GLNXA64, Created on: Sat Nov 21 2026 HDF5 schema 1.00 .")
    with h5py.File(tmp_path / "v73s.mat", "w", userblock_size=512) as fh:
        C = X.tocsc()
        g = fh.create_group("X")
        g.attrs["MATLAB_sparse"] = X.shape[0]
        g["jc"], g["ir"], g["data"] = C.indptr, C.indices, C.data
        fh["y"] = y.reshape(1, -1).astype(float)
    for name in ("v5.mat", "v5s.mat", "v73.mat", "v73s.mat"):
        Xr, yr = load_file(str(tmp_path / name))
        assert _same_sparse(sp.csr_matrix(Xr), X), name
        assert yr.tolist() == y.tolist(), name


def test_not_a_mat_file(tmp_path):
    (tmp_path / "x.mat").write_bytes(b"hello, not matlab" * 20)
    with pytest.raises(InputFileError, match="not a MATLAB file"):
        load_file(str(tmp_path / "x.mat"))


def test_parquet_whole_and_streamed(tmp_path):
    import pandas as pd

    rng = np.random.default_rng(5)
    frame = pd.DataFrame(rng.standard_normal((100, 4)), columns=list("abcd"))
    frame.insert(1, "cls", np.array(["x", "y"])[rng.integers(0, 2, 100)])
    frame.to_parquet(tmp_path / "d.parquet", row_group_size=16)
    X, y = load_file(str(tmp_path / "d.parquet"), label="cls")
    assert np.array_equal(X, frame.drop(columns="cls").to_numpy())
    src = open_instances(str(tmp_path / "d.parquet"), label="cls", chunk_bytes=400)
    chunks = list(src.chunks())
    assert len(chunks) > 3 and src.feature_names == list("abcd")
    Xr, yr = _stack(chunks)
    assert np.array_equal(Xr, X) and yr.tolist() == frame["cls"].tolist()
    frame["e"] = "text"
    frame.to_parquet(tmp_path / "bad.parquet")
    with pytest.raises(InputFileError, match=r"column 5 \('e'\): not numeric"):
        load_file(str(tmp_path / "bad.parquet"), label="cls")
    with pytest.raises(InputFileError, match=r"column 5 \('e'\): not numeric"):
        open_instances(str(tmp_path / "bad.parquet"), label="cls")


def test_parquet_missing_text_label_is_named_not_read_as_a_class(tmp_path):
    import pandas as pd

    # streamed in batches of 2 rows: the row is counted over the whole file
    frame = pd.DataFrame({"a": np.arange(5.0), "cls": ["x", "y", "x", None, "y"]})
    frame.to_parquet(tmp_path / "d.parquet")
    src = open_instances(str(tmp_path / "d.parquet"), label="cls", chunk_bytes=32)
    with pytest.raises(InputFileError) as info:
        list(src.chunks())
    assert str(info.value) == (f"{tmp_path / 'd.parquet'}, data row 3 (counted from 0): the "
                               "label is missing; every instance needs a class")


def test_parquet_with_a_duplicate_name_is_refused(tmp_path):
    """pyarrow writes such a file (pandas does not); reading it said "not a readable Parquet
    file (Multiple matches for FieldRef...)" whole, and a KeyError when streamed. Refused as a
    CSV header is, every duplicated name named."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from streamfs.producers.names import source_feature_names

    path = tmp_path / "dup.parquet"
    columns = [pa.array(np.arange(4.0) + k) for k in range(5)]
    for names, error in ((["a", "b", "a", "c", "cls"], "duplicate column name 'a' (columns 0 "
                                                         "and 2)"),
                         (["a", "cls", "b", "b", "cls"], "duplicate column names 'cls' (columns "
                                                         "1 and 4), 'b' (columns 2 and 3)")):
        pq.write_table(pa.table(columns, names=names), path)
        for read in (load_file, open_instances, source_feature_names):
            with pytest.raises(InputFileError) as info:
                read(str(path), label="cls")
            assert str(info.value) == f"{path}: {error}: name each column once", read


def test_npz_feature_names_with_a_duplicate_are_refused(tmp_path):
    from streamfs.producers.names import load_named

    path = tmp_path / "d.npz"
    np.savez(path, X=np.ones((4, 3)), y=np.arange(4) % 2, feature_names=np.array(["a", "b", "a"]))
    for read in (load_named, open_instances):
        with pytest.raises(InputFileError) as info:
            read(str(path))
        assert str(info.value) == (f"{path}, feature names: duplicate feature name 'a' "
                                   "(features 0 and 2): name each feature once")


@pytest.mark.parametrize("member", ["feature_names", "y", "X"])
def test_npz_arrays_of_python_objects_are_named_with_the_fix(tmp_path, member):
    """What numpy saves of a pandas Index or column of text: an object array, which loading
    without unpickling refuses. ``select`` crashed with a traceback on object feature names,
    ``produce`` said only numpy's "Object arrays cannot be loaded when allow_pickle=False"."""
    from streamfs.producers.names import load_named, source_feature_names

    arrays = {"X": np.ones((4, 3)), "y": np.arange(4) % 2,
              "feature_names": np.array(["a", "b", "c"])}
    arrays[member] = arrays[member].astype(object)
    path = tmp_path / "o.npz"
    np.savez(path, **arrays)
    expected = (f"{path}: {member!r} is an array of Python objects (as numpy saves a pandas "
                "column or Index of text), which streamfs does not unpickle: save it with a "
                "fixed type, e.g. np.asarray(..., dtype=str) for text")
    readers = [load_named, open_instances] + ([source_feature_names]
                                              if member == "feature_names" else [])
    for read in readers:
        with pytest.raises(InputFileError) as info:
            read(str(path))
        assert str(info.value) == expected, read


def test_unknown_suffix_and_missing_file(tmp_path):
    (tmp_path / "d.xyz").write_text("1")
    with pytest.raises(InputFileError, match="unknown format '.xyz'"):
        load_file(str(tmp_path / "d.xyz"))
    with pytest.raises(InputFileError, match="no such file or dataset$"):
        load_file(str(tmp_path / "missing.csv"))


def test_a_mistyped_dataset_name_gets_a_suggestion(tmp_path, monkeypatch):
    (tmp_path / "colon").mkdir()
    np.savez(tmp_path / "colon" / "colon.npz", X=np.eye(3), y=np.arange(3) % 2)
    monkeypatch.setenv("STREAMFS_DATASETS", str(tmp_path))
    with pytest.raises(InputFileError) as info:
        load_file("colonn")
    assert str(info.value) == "colonn: no such file or dataset (did you mean 'colon'?)"


# --- groups -----------------------------------------------------------------------------------

def test_groups_file_is_checked(tmp_path):
    path = tmp_path / "g.json"
    path.write_text(json.dumps([[0, 2], [1]]))
    groups = read_groups(path)
    check_groups(groups, 3, "g.json")
    with pytest.raises(InputFileError, match="column 2 is in no group"):
        check_groups([[0], [1]], 3, "g.json")
    with pytest.raises(InputFileError, match="column 1 is in groups 0 and 1"):
        check_groups([[0, 1], [1, 2]], 3, "g.json")
    with pytest.raises(InputFileError, match="group 1 has column 5"):
        check_groups([[0, 1], [5]], 3, "g.json")
    path.write_text('{"a": 1}')
    with pytest.raises(InputFileError, match="list of lists"):
        read_groups(path)
    path.write_text("not json")
    with pytest.raises(InputFileError, match="g.json: not a JSON file of groups"):
        read_groups(path)
    with pytest.raises(InputFileError) as info:
        read_groups(tmp_path / "missing.json")
    assert str(info.value) == f"{tmp_path / 'missing.json'}: No such file or directory"


def test_line_blocks_are_bounded_and_whole(tmp_path):
    from streamfs.producers.libsvm import iter_line_blocks

    X, y = sparse_dataset(seed=6, n=400, d=30)
    path = tmp_path / "d.svm"
    write_libsvm(path, X, y)
    longest = max(len(line) for line in path.read_bytes().split(b"\n"))
    blocks = list(iter_line_blocks(path, 1000))
    assert b"".join(b for _, b in blocks) == path.read_bytes()
    assert all(b.endswith(b"\n") and len(b) <= 1000 + longest for _, b in blocks)
    assert [first for first, _ in blocks] == [1] + [
        1 + sum(b.count(b"\n") for _, b in blocks[:k]) for k in range(1, len(blocks))]


def test_instances_of_a_bundled_dataset_carry_its_feature_names():
    """An instance stream names its features as a feature stream of the same source does
    (found by the compose smoke test: OFS results named `x3` where `select` said `mean area`)."""
    src = open_instances("sklearn:breast_cancer")
    assert src.n_features == 30 and src.feature_names[3] == "mean area"


def test_a_utf8_bom_is_no_part_of_the_first_name(tmp_path):
    # Excel's "CSV UTF-8" starts with a BOM: read as text it made the first column
    # '\ufefff1', so `--label f1` found no such column
    path = tmp_path / "bom.csv"
    path.write_bytes("f1,é,class\n1,2,0\n2,3,1\n".encode("utf-8-sig"))
    reader = DelimitedReader(path, label="f1")
    X, labels, _ = next(reader.text_chunks())
    assert labels == ["1", "2"] and X.tolist() == [[2.0, 0.0], [3.0, 1.0]]
    assert reader.feature_names == ["é", "class"]
    groups = tmp_path / "groups.json"
    groups.write_bytes("[[0, 1], [2]]".encode("utf-8-sig"))
    assert read_groups(groups) == [[0, 1], [2]]


@pytest.mark.parametrize("index", ["filtered", "named"])
def test_parquet_pandas_index_is_no_column(tmp_path, index):
    """pandas stores an index other than 0, 1, 2, … (a filtered frame's, a named one) as a
    column (``__index_level_0__``, or its name), last: streamed, it was taken as the label
    (the label column a feature), and with --label as a feature; read whole, pandas made it
    the index and the names were one too many ("4 feature names for 3 columns")."""
    import pandas as pd

    from streamfs.producers.names import load_named

    rng = np.random.default_rng(3)
    frame = pd.DataFrame(rng.standard_normal((40, 3)), columns=list("abc"))
    frame["cls"] = (frame["a"] > 0).astype(int)
    frame = (frame[frame["b"] > -0.5] if index == "filtered"
             else frame.set_index(pd.Index(rng.permutation(40), name="id")))
    path = tmp_path / "d.parquet"
    frame.to_parquet(path)
    for label in (None, "cls"):
        X, y, names, _ = load_named(str(path), label=label)
        assert names == list("abc") and np.array_equal(X, frame[list("abc")].to_numpy())
        assert y.tolist() == frame["cls"].tolist()
        src = open_instances(str(path), label=label, chunk_bytes=200)
        Xs, ys = _stack(list(src.chunks()))
        assert src.feature_names == list("abc") and np.array_equal(Xs, X)
        assert ys.tolist() == y.tolist()


def test_csv_unclosed_quote_is_named_at_the_line_it_opens(tmp_path):
    """A quote never closed makes the rest of the file one field: past the csv module's
    field limit (128 KiB) that was a traceback (_csv.Error, exit 1), below it an error that
    named the file's last line; both now name the line where the record starts."""
    rows = "".join(f"{i},{i + 1},{i % 2}\n" for i in range(20000))
    big, small = tmp_path / "big.csv", tmp_path / "small.csv"
    big.write_text('a,b,class\n1,"2,0\n' + rows)
    small.write_text('a,b,class\n1,"2,0\n' + "".join(rows.splitlines(True)[:6]))
    for path, error, last in ((big, "field larger than field limit (131072)", 10951),
                              (small, "2 fields, expected 3", 8)):
        for read in (load_file, open_instances):
            with pytest.raises(InputFileError) as info:
                src = read(str(path))
                list(src.chunks())
            assert str(info.value) == (
                f"{path}, line 2: {error} (the record runs from line 2 to line {last}: a "
                "quoted field holds line breaks; a quote (\") that is never closed?)")
    header = tmp_path / "header.csv"  # in the header itself
    header.write_text('a,"b,class\n' + rows)
    with pytest.raises(InputFileError, match=r"header.csv, line 1: field larger than"):
        load_file(str(header))


def test_csv_quoted_line_breaks_name_the_record_s_first_line(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text('a,b,class\n1,2,0\n3,"4\n5",1\n')
    with pytest.raises(InputFileError, match=r"d.csv, line 3, column 1 \('b'\): not a number"):
        load_file(str(path))


@pytest.mark.parametrize("shape", [(6,), (6, 1, 2), ()])
def test_npz_x_that_is_not_2d_is_named(tmp_path, shape):
    """A 1-D X passed the one-label-per-row check and failed on X.shape[1] (IndexError,
    a traceback and exit 1); a 0-d one was "not a readable .npz archive (tuple index out of
    range)"."""
    from streamfs.producers.names import load_named

    path = tmp_path / "d.npz"
    np.savez(path, X=np.ones(shape), y=np.arange(6) % 2)
    hint = " (one feature: save X.reshape(-1, 1))" if len(shape) == 1 else ""
    for read in (load_named, open_instances):
        with pytest.raises(InputFileError) as info:
            read(str(path))
        assert str(info.value) == (f"{path}: X has shape {shape}; it needs 2 dimensions, "
                                   f"instances x features{hint}")


def test_csv_integer_labels_are_read_exactly(tmp_path):
    """Labels went through float: 9007199254740993 and 9007199254740992 (ids used as
    classes) became one class, and 99999999999999999999 became -9223372036854775808 (numpy's
    invalid cast, a RuntimeWarning) instead of being refused as the Python API refuses it."""
    path = tmp_path / "d.csv"
    path.write_text("a,class\n1,9007199254740993\n2,9007199254740992\n3,9007199254740993\n")
    _, y = load_file(str(path))
    src = open_instances(str(path), chunk_bytes=16)
    ys = np.concatenate([c[1] for c in src.chunks()])
    for labels in (y, ys):
        assert labels.dtype == np.int64
        assert labels.tolist() == [9007199254740993, 9007199254740992, 9007199254740993]
    path.write_text("a,class\n1,99999999999999999999\n2,1\n")
    with pytest.raises(InputFileError, match=r"d.csv: integer labels from 1 to "
                                             r"99999999999999999999, which no 64-bit"):
        load_file(str(path))
    path.write_text("a,class\n1,1e20\n2,1\n")  # integral floats past int64 stay floats
    assert load_file(str(path))[1].tolist() == [1e20, 1.0]


def test_a_decimal_comma_is_said_not_a_comma_separated_file(tmp_path):
    """A TSV with decimal commas (a European spreadsheet's export) was told "it holds ',':
    name a comma-separated file .csv", which would split its numbers in two."""
    path = tmp_path / "d.tsv"
    path.write_text("a\tb\tclass\n1,5\t2\t0\n3\t4,25\t1\n")
    with pytest.raises(InputFileError) as info:
        load_file(str(path))
    assert str(info.value) == (f"{path}, line 2, column 0 ('a'): not a number: '1,5'; a "
                               "decimal comma? Numbers are read with a decimal point ('1.5', "
                               "not '1,5'): convert the file")


def test_dropped_columns_are_neither_features_nor_labels_in_every_format(tmp_path):
    """--drop leaves out a column that is not a measurement (a row id, a text note): read
    whole and streamed, from CSV, TSV, Parquet and .npy, by name or index; the features are
    numbered without it and keep their names."""
    import pandas as pd

    rng = np.random.default_rng(7)
    X = rng.standard_normal((60, 3))
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    frame.insert(0, "id", np.arange(100, 160))
    frame.insert(2, "note", "seen")  # text: would be refused as a feature
    frame["class"] = np.array(["no", "yes"])[rng.integers(0, 2, 60)]
    frame.to_csv(tmp_path / "d.csv", index=False)
    frame.to_csv(tmp_path / "d.tsv", index=False, sep="\t")
    frame.to_parquet(tmp_path / "d.parquet", row_group_size=16)
    for name in ("d.csv", "d.tsv", "d.parquet"):
        source = str(tmp_path / name)
        for drop in (["id", "note"], ["0", "2"], ["note", "-6"]):
            Xw, yw = load_file(source, label="class", drop=drop)
            assert np.array_equal(Xw, X) and yw.tolist() == frame["class"].tolist(), name
            src = open_instances(source, label="class", drop=drop, chunk_bytes=300)
            chunks = list(src.chunks())
            assert len(chunks) > 2 and src.n_features == 3, name
            assert src.feature_names == ["a", "b", "c"], name
            Xr, yr = _stack(chunks)
            assert np.array_equal(Xr, X) and yr.tolist() == frame["class"].tolist(), name
        with pytest.raises(InputFileError, match=r"column 2 \('note'\)"):
            load_file(source, label="class", drop=["id"])  # the text column alone is refused
    A = np.column_stack([np.arange(60), X, rng.integers(0, 2, 60)])
    np.save(tmp_path / "d.npy", A)
    for read in (lambda **kw: load_file(str(tmp_path / "d.npy"), **kw),
                 lambda **kw: _stack(open_instances(str(tmp_path / "d.npy"), **kw).chunks())):
        Xn, yn = read(drop=["0"])
        assert np.array_equal(Xn, X) and np.array_equal(yn, A[:, -1])
    np.save(tmp_path / "y.npy", A[:, -1])
    Xl, _ = load_file(str(tmp_path / "d.npy"), label=str(tmp_path / "y.npy"), drop=["0", "4"])
    assert np.array_equal(Xl, X)


@pytest.mark.parametrize("drop, needle", [
    (["idd"], r"no column to drop named 'idd' in the header \(did you mean 'id'\?\)"),
    (["7"], r"column to drop index 7 outside 0\.\.3"),
    (["class"], r"--drop class: that column is the label"),
    (["id", "a", "b"], r"--drop leaves no feature column"),
])
def test_a_wrong_drop_is_named(tmp_path, drop, needle):
    path = tmp_path / "d.csv"
    path.write_text("id,a,b,class\n1,0.5,2,x\n2,1.5,3,y\n")
    with pytest.raises(InputFileError, match=needle):
        load_file(str(path), drop=drop)
    with pytest.raises(InputFileError, match=needle):
        open_instances(str(path), drop=drop)


def test_drop_is_refused_for_formats_that_keep_labels_apart(tmp_path):
    np.savez(tmp_path / "d.npz", X=np.eye(3), y=np.arange(3))
    for reader in (load_file, open_instances):
        with pytest.raises(InputFileError, match=r"--drop applies to CSV/TSV, Parquet and "
                                                 r"\.npy files.*not to \.npz files"):
            reader(str(tmp_path / "d.npz"), drop=["0"])


def test_the_header_guess_ignores_a_column_dropped_by_index(tmp_path):
    """A text id in the first row of a file without a header made that row a header (the
    guess looks for text among the features); dropped by index, it is not looked at."""
    path = tmp_path / "d.csv"
    path.write_text("P1,0.5,2,0\nP2,1.5,3,1\nP3,2.5,1,0\n")
    assert DelimitedReader(path).header is True
    reader = DelimitedReader(path, drop=["0"])
    assert reader.header is False and reader.n_features == 2
    X, y = load_file(str(path), drop=["0"])
    assert X.tolist() == [[0.5, 2], [1.5, 3], [2.5, 1]] and y.tolist() == [0, 1, 0]


def test_labels_that_are_numbers_but_for_a_stray_cell_are_noted(tmp_path, caplog):
    """A 0/1 label column with one 'malignant' cell was read as three text classes without a
    word for the feature-stream selectors (SAOLA, K-OFSD)."""
    path = tmp_path / "stray.csv"
    rows = ["a,class"] + [f"{i * 0.5},{i % 2}" for i in range(9)] + ["4.5,malignant"]
    path.write_text("\n".join(rows) + "\n")
    X, y = load_file(path, label="class")
    assert sorted(set(y.tolist())) == ["0", "1", "malignant"]  # read as before
    assert (f"{path}: 1 of 10 labels is not a number ('malignant') where the others are: all "
            "are read as text, each distinct text a class (3 classes); correct or drop those "
            "rows if they are mistakes") in caplog.text
    caplog.clear()
    path.write_text("a,class\n" + "".join(f"{i},x{i % 2}\n" for i in range(8)) + "8,7\n9,7\n")
    load_file(path, label="class")
    assert "2 of 10 labels are numbers ('7') where the others are not" in caplog.text
    caplog.clear()
    path.write_text("a,class\n1,yes\n2,no\n")
    load_file(path, label="class")
    assert "labels" not in caplog.text  # text labels alone: nothing to say
