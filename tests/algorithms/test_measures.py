"""Measures: hand-computed values and representation independence."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from streamfs.algorithms.measures import (
    _nb_cmp_squares,
    as_column_block,
    block_pearson_with_target,
    block_su_with_target,
    discretize,
    entropy,
    exact_abs_r,
    exact_target,
    entropy_from_counts,
    fisher_z,
    fisher_z_critical,
    joint_entropy,
    mutual_information,
    pearson_r,
    symmetrical_uncertainty,
)

# ---------------------------------------------------------------- hand-computed values


def test_entropy_hand_values():
    assert entropy([0, 0, 1, 1]) == 1.0
    assert entropy([7, 7, 7]) == 0.0
    # -(3/4 log2 3/4 + 1/4 log2 1/4) = 2 - 3/4 log2 3
    assert entropy([0, 0, 0, 1]) == pytest.approx(2 - 0.75 * math.log2(3), abs=1e-15)
    # four equiprobable states: 2 bits
    assert entropy([1, 2, 3, 4]) == 2.0
    assert entropy_from_counts([1, 1, 2]) == 1.5


def test_floor_binning_numbers_states_from_minimum():
    # floor: 0.1, 0.9 -> 0; 1.2, 1.7 -> 1; -0.5 -> -1
    assert discretize([0.1, 0.9, 1.2, 1.7, -0.5]).tolist() == [1, 1, 2, 2, 0]
    assert entropy([0.1, 0.9, 1.2, 1.7]) == 1.0
    # equal-width bins over [0, 10]: width 5 -> 0, 0, 1, 1 (the maximum goes to the last bin)
    assert discretize([0.0, 4.9, 5.0, 10.0], n_bins=2).tolist() == [0, 0, 1, 1]
    assert discretize([3.0, 3.0], n_bins=4).tolist() == [0, 0]


def test_floor_binning_keeps_values_beyond_int64_apart():
    # numba's math.floor gave an int64: every |x| >= 2^63 wrapped to one state, so a perfect
    # copy of the class was found irrelevant (SAOLA test="mi" kept nothing)
    assert discretize([-1e19, 1e19, -1e19]).tolist() == [0, 1, 0]
    assert discretize([0.0, 1e20]).tolist() == [0, 1]
    assert discretize([-1.7e308, 1.7e308, 0.0]).tolist() == [0, 2, 1]
    assert mutual_information([-1e19, 1e19, -1e19, 1e19], [0, 1, 0, 1]) == 1.0
    # equal-width bins over a range wider than the largest float (hi - lo overflows)
    assert discretize([-1.7e308, 1.7e308, 0.0, 1e307], n_bins=4).tolist() == [0, 2, 1, 1]


def test_joint_entropy_mi_su_hand_values():
    x, y = [0, 0, 1, 1], [0, 1, 1, 1]
    # joint cells (0,0), (0,1), (1,1) with probabilities 1/4, 1/4, 1/2 -> 1.5 bits
    assert joint_entropy(x, y) == 1.5
    hy = 2 - 0.75 * math.log2(3)
    mi = 1 + hy - 1.5
    assert mutual_information(x, y) == pytest.approx(mi, abs=1e-15)
    assert symmetrical_uncertainty(x, y) == pytest.approx(2 * mi / (1 + hy), abs=1e-15)
    assert symmetrical_uncertainty(x, y) == pytest.approx(0.343711, abs=1e-6)


def test_su_extremes():
    assert symmetrical_uncertainty([0, 1, 2, 0, 1, 2], [5, 6, 7, 5, 6, 7]) == 1.0
    # exactly independent: every MI term is log2(1) = 0
    assert mutual_information([0, 0, 1, 1], [0, 1, 0, 1]) == 0.0
    assert symmetrical_uncertainty([0, 0, 1, 1], [0, 1, 0, 1]) == 0.0
    assert symmetrical_uncertainty([3, 3, 3], [3, 3, 3]) == 0.0  # both constant


def test_relabelled_states_and_swapped_variables_give_the_same_bits():
    rng = np.random.default_rng(3)
    for _ in range(50):
        x = rng.integers(0, 6, 300)
        y = (x + rng.integers(0, 4, 300)) % 5
        x2 = rng.permutation(6)[x]
        y2 = rng.permutation(5)[y]
        assert entropy(x2) == entropy(x)
        assert mutual_information(x2, y2) == mutual_information(x, y)
        assert symmetrical_uncertainty(y, x) == symmetrical_uncertainty(x, y)
        assert symmetrical_uncertainty(x2, y) == symmetrical_uncertainty(x, y)
        assert block_su_with_target(as_column_block(np.column_stack([x, x2])), y)[0].tolist() \
            == [symmetrical_uncertainty(x, y)] * 2


def test_fisher_z_hand_values():
    # centred: (-1.5, -0.5, 0.5, 1.5) and (-1.5, 0.5, -0.5, 1.5): cross 4, sums of squares 5
    assert pearson_r([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8, abs=1e-15)
    assert pearson_r([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0, abs=1e-15)
    assert pearson_r([1, 1, 1, 1], [1, 3, 2, 4]) == 0.0
    assert fisher_z(0.8, 4) == pytest.approx(0.5 * math.log(9), abs=1e-14)
    assert fisher_z(0.5, 103) == pytest.approx(10 * 0.5 * math.log(3), abs=1e-13)
    assert fisher_z(1.0, 10) == math.inf
    assert fisher_z_critical(0.01) == pytest.approx(2.5758293035489, abs=1e-12)
    assert fisher_z_critical(0.05) == pytest.approx(1.959963984540, abs=1e-12)
    with pytest.raises(ValueError):
        fisher_z(0.3, 3)
    with pytest.raises(ValueError):
        fisher_z_critical(1.5)


def test_block_pearson_matches_numpy():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((50, 6)) * [1, 10, 1e3, 0.1, 1, 1] + [0, 5, -1e4, 0, 3, 0]
    y = rng.standard_normal(50)
    got = block_pearson_with_target(as_column_block(X), y)["abs_r"]
    ref = np.abs([np.corrcoef(X[:, j], y)[0, 1] for j in range(6)])
    np.testing.assert_allclose(got, ref, rtol=1e-12)


@pytest.mark.parametrize("scale", [2.0**500, 2.0**-500])
def test_pearson_of_two_large_or_small_columns_is_scale_free(scale):
    # the sums of squares are finite, their product is not (or underflows to 0): r was 0
    # or NaN; scaling both by a power of 2 now leaves r bit-identical
    x, y = np.array([1.0, 2.0, 3.0, 4.0]), np.array([1.0, 3.0, 2.0, 4.0])
    assert pearson_r(x * scale, y * scale) == pearson_r(x, y)
    b = as_column_block((x * scale)[:, None])
    assert block_pearson_with_target(b, y * scale)["abs_r"][0] == pearson_r(x, y)


def _exact_abs_r_fraction(x, y) -> float:
    """|r| in exact rational arithmetic, rounded once."""
    from fractions import Fraction
    n = len(x)
    x = [Fraction(float(v)) for v in x]
    y = [Fraction(float(v)) for v in y]
    sx, sy = sum(x), sum(y)
    num = n * sum(a * b for a, b in zip(x, y)) - sx * sy
    r2 = num * num / ((n * sum(a * a for a in x) - sx * sx) * (n * sum(b * b for b in y) - sy * sy))
    return math.sqrt(float(r2))


@pytest.mark.parametrize("sparse", [False, True])
def test_exact_abs_r_is_within_ulps_of_the_exact_value_and_leaves_other_columns(sparse):
    rng = np.random.default_rng(3)
    n = 60
    y = rng.integers(-1, 3, n).astype(float)
    z = rng.integers(0, 5, n)
    X = np.column_stack([
        rng.integers(0, 2, n),  # binary
        rng.integers(-50, 50, n),  # counts of both signs
        z * 0.25,  # on a grid of a power of two
        z * 2.0**-900,  # the same grid far down
        rng.standard_normal(n),  # 53 significant bits: no exact sums
        rng.integers(0, 2, n) * 2.0**40 + rng.integers(0, 2, n),  # too many bits for n Sxx
    ]).astype(float)
    block = as_column_block(sp.csc_matrix(X) if sparse else X)
    dep = np.full(X.shape[1], -1.0)
    exact_abs_r(block, np.arange(X.shape[1]), exact_target(y), dep)
    for j in range(4):
        want = _exact_abs_r_fraction(X[:, j], y)
        assert abs(dep[j] - want) <= 4 * math.ulp(want), j
    assert dep[2] == dep[3]  # a power of two does not change a bit
    assert dep[4] == dep[5] == -1.0  # not exact: left as they were
    # a class vector off every usable grid gives no exact target
    assert exact_target(rng.standard_normal(n)) is None
    assert exact_target(np.ones(n)) is not None


def test_exact_abs_r_gives_exact_ties_the_same_bits():
    # 5 ones each, 4 of them on the positive class, in different rows; and a column's
    # complement: |r| with the class is mathematically equal, yet the centred sums of
    # block_pearson_with_target round differently in those rows
    n = 30
    y, a, b = (np.isin(np.arange(n), rows).astype(float) for rows in (
        [0, 1, 4, 8, 9, 11, 16, 17, 20, 23], [3, 8, 11, 16, 17], [8, 9, 16, 17, 18]))
    X = np.column_stack([a, b, 1.0 - a, 0.5 * b])
    centred_r = block_pearson_with_target(as_column_block(X), y)["abs_r"]
    assert len(set(centred_r[:3].tolist())) > 1  # what the tie rule used to see
    dep = centred_r.copy()
    exact_abs_r(as_column_block(X), np.arange(4), exact_target(y), dep)
    assert dep[0] == dep[1] == dep[2] == dep[3]


@settings(max_examples=300, deadline=None)
@given(st.integers(-(2**53) + 1, 2**53 - 1), st.integers(0, 2**53 - 1),
       st.integers(-(2**53) + 1, 2**53 - 1), st.integers(0, 2**53 - 1))
def test_cmp_squares_is_exact(a, b, c, d):
    # a**2 b - c**2 d reaches 2**159: float64 cannot tell such products apart
    want = (a * a * b > c * c * d) - (a * a * b < c * c * d)
    assert _nb_cmp_squares(float(a), float(b), float(c), float(d)) == want


def test_cmp_squares_sees_the_smallest_difference():
    a, b = 2**53 - 1, 2**53 - 1
    assert _nb_cmp_squares(float(a), float(b), float(a), float(b)) == 0
    # c**2 d is a**2 b - a**2 here, 2**-53 of it
    assert _nb_cmp_squares(float(a), float(b), float(a), float(b - 1)) == 1
    assert _nb_cmp_squares(float(-a), float(b - 1), float(a), float(b)) == -1


def test_block_su_matches_scalar():
    rng = np.random.default_rng(2)
    X = rng.integers(-2, 3, size=(40, 5)).astype(float)
    t = rng.integers(0, 3, 40)
    su, k = block_su_with_target(as_column_block(X), t)
    for j in range(5):
        assert su[j] == symmetrical_uncertainty(X[:, j], t)
        assert k[j] == len(np.unique(X[:, j]))


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


fused_values = arrays(
    np.float64,
    st.tuples(st.integers(4, 25), st.integers(1, 8)),
    elements=st.sampled_from([0.0, 0.0, 0.0, 1.0, -1.0, 2.5, -3.25, 1e-300, 7e15, np.nan,
                              np.inf, -np.inf]),
)


@settings(max_examples=120, deadline=None)
@given(fused_values, st.integers(0, 2**31), st.sampled_from([10.0, 1e16, np.inf]))
def test_fused_sparse_relevance_equals_the_separate_kernels(X, seed, max_abs):
    """SAOLA's sparse relevance kernel gives the bits of the statistics, verdicts and value
    check it fuses: NaN, infinite and too large values, explicit zeros, empty and constant
    columns included."""
    from streamfs.algorithms.measures import (
        _nb_block_fisher, _nb_fisher_verdict, _nb_sparse_fisher_relevance, centred,
        values_within,
    )

    rng = np.random.default_rng(seed)
    n = X.shape[0]
    y = rng.permutation(np.arange(n) % 2).astype(float)
    sparse = sp.csc_matrix(X)
    sparse.data[rng.random(sparse.nnz) < 0.2] = 0.0  # explicit zeros, which both skip
    indptr = sparse.indptr.astype(np.int64)
    tc, tsum, tss = centred(y)
    bracket = (0.3, 0.3 * (1 + 1e-9))
    seqsum, mean, ss, const, cross, amax = _nb_block_fisher(
        indptr, sparse.indices, sparse.data, n, False, tc, tsum)
    dep, code = _nb_fisher_verdict(cross, ss, const, tss, *bracket)
    f_dep, f_code, f_mean, f_ss, within = _nb_sparse_fisher_relevance(
        indptr, sparse.indices, sparse.data, n, tc, tsum, tss, *bracket, max_abs)
    assert within == values_within(seqsum, amax, max_abs)
    for want, got in ((dep, f_dep), (code, f_code), (mean, f_mean), (ss, f_ss)):
        assert want.dtype == got.dtype and want.tobytes() == got.tobytes()


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
    from streamfs.algorithms.measures import column_abs_max

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
