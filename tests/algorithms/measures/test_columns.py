"""Column blocks and value checks (streamfs.algorithms.measures.columns): validation, dense vs
sparse bit-exactness, and values too small or too large for a measure."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from streamfs.algorithms.measures.columns import as_column_block
from streamfs.algorithms.measures.information import block_su_with_target
from streamfs.algorithms.measures.pearson import block_pearson_with_target


def test_as_column_block_validation():
    with pytest.raises(ValueError, match="NaN"):
        as_column_block(np.array([[1.0, np.nan]]))
    with pytest.raises(ValueError, match="NaN"):
        as_column_block(sp.csc_matrix(np.array([[1.0, np.inf]])))
    with pytest.raises(ValueError, match="length"):
        as_column_block(np.zeros((3, 2)), n_rows=4)


def test_sparse_block_sums_duplicates_and_sorts_rows_without_touching_x():
    # column 0 stores rows 2, 0, 0 (unsorted, row 0 twice); X itself must stay as given
    X = sp.csc_matrix((np.array([1.0, 2.0, 3.0, 4.0]), np.array([2, 0, 0, 1]),
                       np.array([0, 3, 4])), shape=(3, 2))
    data, rows = X.data.copy(), X.indices.copy()
    block = as_column_block(X)
    assert block.dense_column(0).tolist() == [5.0, 0.0, 1.0]
    assert block.dense_column(1).tolist() == [0.0, 4.0, 0.0]
    assert block.indices[block.indptr[0]:block.indptr[1]].tolist() == [0, 2]
    assert np.array_equal(X.data, data) and np.array_equal(X.indices, rows)


# ---------------------------------------------------------------- dense vs sparse, bit-exact

small_ints = arrays(
    np.float64,
    st.tuples(st.integers(5, 25), st.integers(1, 6)),
    elements=st.sampled_from([0.0, 0.0, 0.0, 1.0, -1.0, 2.0, 2.5, -3.25, 7.0]),
)


@settings(max_examples=60, deadline=None)
@given(small_ints, st.integers(0, 2**31))
def test_dense_sparse_bit_identical(X, seed):
    rng = np.random.default_rng(seed)
    n = X.shape[0]
    y = rng.integers(0, 3, n).astype(float)
    if len(np.unique(y)) < 2:
        y[0], y[1] = 0.0, 1.0
    dense = as_column_block(X)
    sparse = as_column_block(sp.csc_matrix(X))
    a = block_pearson_with_target(dense, y)
    b = block_pearson_with_target(sparse, y)
    for key in ("abs_r", "mean", "ss", "seqsum", "const"):
        np.testing.assert_array_equal(a[key], b[key])
    for n_bins in (None, 3):
        su_d, k_d = block_su_with_target(dense, y.astype(np.int64), n_bins)
        su_s, k_s = block_su_with_target(sparse, y.astype(np.int64), n_bins)
        np.testing.assert_array_equal(su_d, su_s)
        np.testing.assert_array_equal(k_d, k_s)


def test_float32_values_are_checked_without_an_overflow_warning():
    import warnings

    from streamfs.algorithms.opening import check_values
    from streamfs.algorithms.saola import SAOLA

    X = np.random.default_rng(0).normal(size=(20, 3)).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's "overflow encountered in cast" was one
        check_values("features", SAOLA(), X)
        SAOLA().fit(X, np.arange(20) % 2)


def test_column_abs_max_of_integer_and_bool_columns_in_chunks():
    from streamfs.algorithms.measures.columns import column_abs_max

    A = np.array([[-128, 5, 0], [3, 127, -1]], dtype=np.int8)
    assert column_abs_max(A).tolist() == [128.0, 127.0, 1.0]  # |-128| does not fit int8
    assert column_abs_max(np.array([[True, False]])).tolist() == [1.0, 0.0]
    wide = np.zeros((3, 1_000_000), dtype=np.uint8)  # more columns than one chunk holds
    wide[1, 999_999] = 255
    out = column_abs_max(wide)
    assert out.shape == (1_000_000,) and out[-1] == 255.0 and out[:-1].max() == 0.0


def _breast_cancer():
    from sklearn.datasets import load_breast_cancer

    return load_breast_cancer(return_X_y=True)


def _selectors():
    from streamfs.algorithms.gdm import GDM
    from streamfs.algorithms.kofsd import KOFSD
    from streamfs.algorithms.saola import SAOLA

    return {"saola": lambda: SAOLA(test="fisher_z"),
            "saola-lofs": lambda: SAOLA(test="fisher_z", compat="lofs"),
            "kofsd": KOFSD, "kofsd-zhou": lambda: KOFSD(compat="zhou"), "gdm": GDM}


@pytest.mark.parametrize("name", ["saola", "saola-lofs", "kofsd", "kofsd-zhou", "gdm"])
@pytest.mark.parametrize("sparse", [False, True])
def test_a_column_too_small_for_its_sums_of_squares_is_refused_by_name(name, sparse):
    # breast cancer scaled by 1e-200: SAOLA and K-OFSD selected nothing, without a word (the
    # columns' sums of squares underflowed); the too-large side was refused all along
    X, y = _breast_cancer()
    make = _selectors()[name]
    wrap = sp.csr_matrix if sparse else np.asarray
    tiny = X.copy()
    tiny[:, 4] *= 1e-200
    with pytest.raises(ValueError, match=r"too small for .*columns \[4\] \(\|x\| at most "
                                         r"1.63e-201; a column's largest \|x\| must reach "
                                         r"3.05e-151, or its sums of squares underflow\)"):
        make().fit(wrap(tiny), y)
    # a tiny value beside ordinary ones is a value like any other
    residue = X.copy()
    residue[5, 4] = 1e-300
    make().fit(wrap(residue), y)
    # within the bound the correlations and distances are those of the unscaled data (not
    # for GDM, whose solver's tolerances are absolute, nor for the authors' arithmetic of
    # compat="lofs", whose product of two sums of squares underflows from about 2**-256)
    if name in ("saola", "kofsd", "kofsd-zhou"):
        selected = make().fit(X, y).selected_.tolist()
        assert make().fit(wrap(X * 2.0**-400), y).selected_.tolist() == selected


def test_mi_takes_columns_too_small_for_sums_of_squares():
    # the MI test floors values into states: it computes no sum of squares
    from streamfs.algorithms.saola import SAOLA

    X, y = _breast_cancer()
    SAOLA(test="mi").fit(X * 1e-200, y)


@pytest.mark.parametrize("make", ["ofs", "ofs-raw", "ofs-standardize", "ofs-partial"])
def test_instances_too_small_for_their_squares_are_refused_by_row(make):
    from streamfs.algorithms.ofs import OFS, OFSPartial

    learners = {"ofs": lambda: OFS(5), "ofs-raw": lambda: OFS(5, normalize=False),
                "ofs-standardize": lambda: OFS(5, normalize="standardize"),
                "ofs-partial": lambda: OFSPartial(5, random_state=0)}
    X, y = _breast_cancer()
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    tiny = X.copy()
    tiny[[3, 8]] *= 1e-200
    learner = learners[make]()
    with pytest.raises(ValueError, match=r"rows \[3, 8\] of the block hold only values under "
                                         r"3.05e-151"):
        learner.fit(tiny, y)
    assert learner.n_seen_ == 0  # refused before anything was learned
    residue = X.copy()
    residue[3, 0] = 1e-300
    assert learners[make]().fit(residue, y).n_seen_ == len(y)


def test_one_instance_too_small_for_its_squares_is_refused_by_learn_one():
    from streamfs.algorithms.ofs import OFS

    learner = OFS(2, n_features=3)
    with pytest.raises(ValueError, match=r"hold only values under 3.05e-151"):
        learner.learn_one({0: 1e-200, 2: -3e-190}, 1)
    assert learner.n_seen_ == 0
    assert learner.learn_one({0: 1e-200, 2: 0.5}, 1).n_seen_ == 1
