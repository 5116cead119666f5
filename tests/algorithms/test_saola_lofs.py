"""SAOLA ``compat="lofs"`` with Fisher's z against the authors' toolbox (LOFS)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from streamfs.algorithms.measures.pearson import fisher_z_critical
from streamfs.algorithms.measures.lofs import _nb_lofs_dot, lofs_fisher_critical, lofs_pearson_r
from streamfs.algorithms.saola import SAOLA
from tests.external import load_or_skip

# the authors' LOFS saola_z_test on dorothea (800 x 100,000, labels +-1), alpha = 0.01
DOROTHEA_LOFS = [411, 5335, 19338, 35654, 41663, 44683, 51374, 58870, 59441, 59959, 74249,
                 83855, 84025, 84557, 84780, 86080, 86208, 90264, 91165, 92064, 93878, 94565,
                 95122, 95597, 96770, 97448, 97683, 97710, 98100, 98300, 99127]


def _dorothea():
    return load_or_skip("dorothea")


def test_dorothea_matches_the_authors_selection_exactly():
    X, y = _dorothea()
    sel = SAOLA(test="fisher_z", alpha=0.01, compat="lofs").fit(X, y)
    assert sel.selected_.tolist() == DOROTHEA_LOFS
    # the same through sparse blocks and a state round trip
    Xs = sp.csc_matrix(X)
    part = SAOLA(test="fisher_z", alpha=0.01, compat="lofs")
    for lo in range(0, X.shape[1], 30_000):
        part.partial_fit(Xs[:, lo:lo + 30_000], y)
        part = SAOLA.from_state(part.to_state())
    assert part.selected_.tolist() == DOROTHEA_LOFS
    assert part.scores_.tolist() == sel.scores_.tolist()
    assert part.affiliated_ == sel.affiliated_


def test_dorothea_tie_41663_44144_goes_to_the_earlier_feature():
    # Both columns have 9 ones, 7 of them on the positive class: their |r| with the class
    # is mathematically equal. In the authors' arithmetic (cov, then C12 / sqrt(C11 C22))
    # the earlier feature comes out at least as strong, so SAOLA's rule dep(Y) >= dep(F)
    # discards the newcomer 44144 (their pair |r| = 0.55 exceeds both).
    X, y = _dorothea()
    a, b = X[:, 41663].astype(float), X[:, 44144].astype(float)
    yf = y.astype(float)
    assert a.sum() == b.sum() == 9 and a[yf == 1].sum() == b[yf == 1].sum() == 7
    dep_a, dep_b = abs(lofs_pearson_r(a, yf)), abs(lofs_pearson_r(b, yf))
    assert dep_a >= dep_b
    assert abs(lofs_pearson_r(b, a)) > dep_a


def test_lofs_dot_block_order():
    # fused multiply-adds, sequential within the blocks [384, 208, 208] for N = 800; a
    # plain left-to-right sum of products gives another last bit on this vector
    rng = np.random.default_rng(0)
    a = rng.standard_normal(800)
    b = rng.standard_normal(800)
    got = _nb_lofs_dot(a, b)
    from fractions import Fraction

    def fma(x, y, z):
        return float(Fraction(x) * Fraction(y) + Fraction(z))

    total = 0.0
    lo = 0
    for m in (384, 208, 208):
        s = 0.0
        for k in range(lo, lo + m):
            s = fma(a[k], b[k], s)
        total += s
        lo += m
    assert got == total


def test_lofs_critical_value_and_constant_columns():
    assert lofs_fisher_critical(0.01) == pytest.approx(fisher_z_critical(0.01), abs=1e-14)
    assert np.isnan(lofs_pearson_r([1.0, 1.0, 1.0, 1.0], [0, 1, 0, 1]))
    # a constant column is skipped in compat="lofs" (NaN r), as by the authors' isnan test
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 50)
    X = np.column_stack([np.full(50, 3.0), y + 0.3 * rng.standard_normal(50)])
    sel = SAOLA(compat="lofs").fit(X, y)
    assert sel.selected_.tolist() == [1]
