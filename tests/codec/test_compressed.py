import numpy as np
import pytest
import scipy.sparse as sp

from streamfs.codec.compressed import CANONICAL, INVALID, VALID, scan_compressed


def _scan(indptr, indices, n_minor):
    return scan_compressed(np.asarray(indptr, np.int32), np.asarray(indices, np.int32), n_minor)


@pytest.mark.parametrize("indptr, indices, n_minor, verdict", [
    ([0], [], 3, CANONICAL),  # no slices
    ([0, 0, 0], [], 3, CANONICAL),  # empty slices
    ([0, 2, 3], [0, 2, 1], 3, CANONICAL),  # a slice may start below the last one's end
    ([0, 2, 3], [2, 0, 1], 3, VALID),  # unsorted within a slice
    ([0, 2, 3], [1, 1, 1], 3, VALID),  # a repeated index
    ([0, 2, 3], [0, 3, 1], 3, INVALID),  # index == n_minor
    ([0, 2, 3], [0, -1, 1], 3, INVALID),
    ([0, 3, 2], [0, 1, 2], 3, INVALID),  # indptr decreasing
    ([0, 2, 4], [0, 1, 2], 3, INVALID),  # indptr beyond the indices
    ([-1, 2, 3], [0, 1, 2], 3, INVALID),
])
def test_verdicts(indptr, indices, n_minor, verdict):
    assert _scan(indptr, indices, n_minor) == verdict


def test_canonical_verdict_is_scipys_on_random_matrices():
    rng = np.random.default_rng(0)
    for _ in range(200):
        n, m = rng.integers(1, 8, 2)
        M = sp.random(n, m, density=0.5, format="coo", random_state=rng)
        M = sp.coo_matrix((np.r_[M.data, M.data[:2]], (np.r_[M.row, M.row[:2]],
                                                       np.r_[M.col, M.col[:2]])), shape=M.shape)
        C = sp.csc_matrix((M.data, (M.row, M.col)), shape=M.shape)  # sums: canonical
        for mat in (C, sp.csc_matrix((C.data[::-1], C.indices[::-1], C.indptr), shape=C.shape)):
            got = scan_compressed(mat.indptr, mat.indices, mat.shape[0])
            assert got == (CANONICAL if mat.has_canonical_format else VALID)
