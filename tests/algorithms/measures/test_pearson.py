"""Pearson's r and Fisher's z (streamfs.algorithms.measures.pearson): hand-computed values and
the fused kernels."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from streamfs.algorithms.measures.columns import as_column_block
from streamfs.algorithms.measures.pearson import (
    block_pearson_with_target,
    fisher_z,
    fisher_z_critical,
    pearson_r,
)

# ---------------------------------------------------------------- hand-computed values

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
    from streamfs.algorithms.measures.columns import values_within
    from streamfs.algorithms.measures.pearson import (
        _nb_block_fisher,
        _nb_fisher_verdict,
        _nb_sparse_fisher_relevance,
        centred,
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
