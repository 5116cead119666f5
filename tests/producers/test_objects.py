"""from_objects (and so run_offline, produce_features, produce_instances) on polars and pyarrow
data: the same values, labels and names as the same data in pandas, or one InputDataError; and
labels as the producers send them."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from streamfs.offline import run_offline
from streamfs.producers.blocks import feature_stream_messages
from streamfs.producers.errors import InputDataError, InputLabelError
from streamfs.producers.objects import from_objects

pa = pytest.importorskip("pyarrow")

FRAME = {"a": [1.5, 2.0, 3.0, 4.0, 0.5, 1.0], "b": [True, False, True, True, False, False],
         "c": [3, 1, 3, 2, 2, 1]}
LABELS = ["u", "v", "u", "v", "v", "u"]


def _same_as_pandas(X, y, **kw):
    got = from_objects(X, y, **kw)
    want = from_objects(pd.DataFrame(FRAME), pd.Series(LABELS))
    assert got[0].dtype == want[0].dtype and np.array_equal(got[0], want[0])
    assert got[1].tolist() == want[1].tolist() and got[2] == want[2] == ["a", "b", "c"]


def test_polars_frames_and_series_are_read_as_pandas_ones():
    pl = pytest.importorskip("polars")
    frame = pl.DataFrame(FRAME)
    _same_as_pandas(frame, pl.Series("y", LABELS))  # was: AttributeError 'Float64' ... 'kind'
    _same_as_pandas(frame, pl.Series("y", LABELS, dtype=pl.Categorical))
    _same_as_pandas(frame, pl.DataFrame({"y": LABELS}))  # a one-column label frame
    _same_as_pandas(frame.with_columns(pl.Series("cls", LABELS)), None, label="cls")
    _same_as_pandas(frame.with_columns(pl.Series("cls", LABELS)), None, label=-1)
    big = pl.concat([frame] * 20)
    labels = LABELS * 20
    names = [s["name"] for s in run_offline("kofsd", big, pl.Series(labels))["selection"]]
    assert names and names == [s["name"] for s in run_offline(
        "kofsd", big.to_pandas(), labels)["selection"]]


def test_pyarrow_tables_and_arrays_are_read_as_pandas_ones():
    _same_as_pandas(pa.table(FRAME), pa.array(LABELS))  # was: no attribute 'dtype'
    _same_as_pandas(pa.table(FRAME), pa.chunked_array([LABELS]))
    _same_as_pandas(pa.table({**FRAME, "cls": LABELS}), None, label="cls")  # names kept
    with pytest.raises(InputDataError, match="duplicate column names: a"):
        from_objects(pa.table([pa.array([1.0, 2.0])] * 2, names=["a", "a"]), [0, 1])


def test_polars_nulls_dates_and_lazy_frames_are_refused_naming_them():
    pl = pytest.importorskip("polars")
    frame = pl.DataFrame(FRAME)
    # a null is missing, not NaN (ints) or an object (booleans)
    for column in ("a", "b", "c"):
        gappy = frame.with_columns(pl.when(pl.int_range(pl.len()) == 2).then(None)
                                   .otherwise(pl.col(column)).alias(column))
        with pytest.raises(InputDataError, match=f"column '{column}': 1 missing value"):
            from_objects(gappy, LABELS)
    for labels in ([0, 1, None, 1, 0, 1], ["u", "v", None, "u", "v", "u"]):
        with pytest.raises(InputDataError, match="the labels: 1 missing value"):
            from_objects(frame, pl.Series(labels))
    # as one array polars makes dates numbers; text is not one
    dated = frame.with_columns(pl.Series("d", np.arange(6).astype("datetime64[D]")),
                               pl.lit("x").alias("s"))
    with pytest.raises(InputDataError, match="non-numeric feature column.s.: d, s"):
        from_objects(dated, LABELS)
    with pytest.raises(InputDataError, match=r"X is a LazyFrame.*X\.collect\(\)"):
        run_offline("saola", frame.lazy(), LABELS)


def test_a_mistyped_label_name_gets_the_close_column_suggested():
    frame = pd.DataFrame({**FRAME, "class": LABELS})
    with pytest.raises(InputDataError, match=r"^label column 'clas' is not in the frame "
                                             r"\(did you mean 'class'\?\) \(columns: a, b"):
        from_objects(frame, None, label="clas")
    with pytest.raises(InputDataError, match=r"^label column 'zzz' is not in the frame \(columns"):
        from_objects(frame, None, label="zzz")


@pytest.mark.parametrize("held", ["list", "series", "category", "label column"])
def test_labels_mixing_strings_and_numbers_are_not_merged_as_text(held):
    # were ['1' '1' '0' '0']: two classes written two ways each, accepted as one each
    X, mixed = np.arange(12.0).reshape(4, 3), [1, "1", 0, "0"]
    if held == "label column":
        _, y, _ = from_objects(pd.DataFrame({"a": X[:, 0], "cls": mixed}), label="cls")
    else:
        _, y, _ = from_objects(X, {"list": mixed, "series": pd.Series(mixed),
                                   "category": pd.Series(mixed, dtype="category")}[held])
    assert y.tolist() == mixed
    with pytest.raises(InputLabelError, match="the labels mix strings and numbers"):
        next(feature_stream_messages("s", X, y, "saola"))


def test_text_labels_stay_text():
    X = np.arange(12.0).reshape(4, 3)
    for labels in (["a", "b", "a", "b"], [["a"], ["b"], ["a"], ["b"]], pd.Series(list("abab")),
                   pd.Series(list("abab"), dtype="string")):
        _, y, _ = from_objects(X, labels)
        assert y.dtype.kind == "U" and y.tolist() == list("abab")
    _, y, _ = from_objects(X, pd.cut(np.arange(4.0), 2))  # categories that are not text
    assert y.tolist() == ["(-0.003, 1.5]"] * 2 + ["(1.5, 3.0]"] * 2


def test_labels_of_two_columns_are_refused_naming_their_shape():
    # was AttributeError: 'DataFrame' object has no attribute 'dtype'
    frame = pd.DataFrame({"u": [0, 1, 0, 1], "v": [1, 0, 1, 0]})
    needle = "y must be one label column (1-D), got a frame of shape (4, 2)"
    with pytest.raises(InputLabelError, match=re.escape(needle)):
        from_objects(np.ones((4, 3)), frame)
    with pytest.raises(InputLabelError, match=re.escape(needle)):
        from_objects(np.ones((4, 3)), pa.table(frame))
