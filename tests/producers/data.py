"""Test data shared by the producer tests: sparse matrices and the files they come from."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import scipy.sparse as sp


def sparse_dataset(seed: int = 0, n: int = 300, d: int = 50, density: float = 0.1
                   ) -> tuple[sp.csr_matrix, np.ndarray]:
    """Sparse ``X`` with some all-zero rows and columns and full-precision values, labels ±1."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=density, format="csr", random_state=rng,
                  data_rvs=lambda k: rng.standard_normal(k) * 10.0 ** rng.integers(-5, 5, k))
    X = X.multiply((rng.random((n, 1)) > 0.1)).tocsr()  # ~10% empty rows
    X.eliminate_zeros()
    X.sort_indices()
    y = np.where(rng.random(n) < 0.5, -1, 1)
    return X, y


def write_libsvm(path: Path, X: sp.csr_matrix, y: np.ndarray, *, trailing_space: bool = False,
                 comments: bool = False) -> None:
    """Write with ``repr`` floats (exact round trip), 1-based indices."""
    eol = " \n" if trailing_space else "\n"
    with open(path, "w") as fh:
        if comments:
            fh.write("# generated 12:30 for the tests\n")
        for i in range(X.shape[0]):
            lo, hi = X.indptr[i], X.indptr[i + 1]
            items = " ".join(f"{j + 1}:{float(v)!r}" for j, v in zip(X.indices[lo:hi], X.data[lo:hi]))
            fh.write(f"{y[i]} {items}".rstrip() + (" # row" if comments and i % 7 == 0 else "") + eol)
