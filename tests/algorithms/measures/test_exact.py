"""|r| from exact sums (streamfs.algorithms.measures.exact): against rational arithmetic, and
exact ties."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from streamfs.algorithms.measures.columns import as_column_block
from streamfs.algorithms.measures.exact import _nb_cmp_squares, exact_abs_r, exact_target
from streamfs.algorithms.measures.pearson import block_pearson_with_target


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
