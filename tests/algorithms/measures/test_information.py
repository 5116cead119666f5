"""Discrete measures (streamfs.algorithms.measures.information): hand-computed values and
renumbered states."""

from __future__ import annotations

import math

import numpy as np
import pytest

from streamfs.algorithms.measures.columns import as_column_block
from streamfs.algorithms.measures.information import (
    block_su_with_target,
    discretize,
    entropy,
    entropy_from_counts,
    joint_entropy,
    mutual_information,
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


def test_block_su_matches_scalar():
    rng = np.random.default_rng(2)
    X = rng.integers(-2, 3, size=(40, 5)).astype(float)
    t = rng.integers(0, 3, 40)
    su, k = block_su_with_target(as_column_block(X), t)
    for j in range(5):
        assert su[j] == symmetrical_uncertainty(X[:, j], t)
        assert k[j] == len(np.unique(X[:, j]))
