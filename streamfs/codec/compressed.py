"""One compiled pass over a compressed sparse (CSC/CSR) matrix's index arrays: whether they
are valid and whether they are canonical.

scipy checks the two in separate passes, and computes the second on first use of
``has_canonical_format`` (news20-shaped bench stream, 4.1M non-zeros in 15 blocks: 2.5 ms
for ``check_format(full_check=True)`` and 9.5 ms for the canonical flag; 3 ms here).
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: :func:`scan_compressed`'s verdicts
CANONICAL, VALID, INVALID = 0, 1, 2


@njit(cache=True, nogil=True)
def scan_compressed(indptr, indices, n_minor):
    """:data:`INVALID` if ``indptr`` decreases or leaves ``[0, len(indices)]``, or an index
    lies outside ``[0, n_minor)``; else :data:`CANONICAL` if the indices increase strictly
    within every slice (sorted, no duplicates), :data:`VALID` if not.

    Flat passes without early exits, each loop indexing from 0, which the compiler
    vectorises: a loop per slice mispredicted the end of each (a news20-shaped column holds
    a handful of values), 16 ms for the bench stream against 3 ms this way."""
    m = indptr.shape[0] - 1
    nnz = indices.shape[0]
    if m < 0:
        return INVALID
    decreasing = False
    after = indptr[1:]
    for j in range(m):
        decreasing |= indptr[j] > after[j]
    if decreasing or indptr[0] < 0 or indptr[m] > nnz:
        return INVALID
    outside = False
    for k in range(nnz):
        i = indices[k]
        outside |= (i < 0) | (i >= n_minor)
    if outside:
        return INVALID
    starts = np.zeros(nnz + 1, dtype=np.bool_)  # positions where a slice begins
    for j in range(m):
        starts[np.uint64(indptr[j])] = True  # in [0, nnz]: checked above
    unsorted = False
    later = indices[1:]
    later_starts = starts[1:]
    for k in range(nnz - 1):
        unsorted |= (later[k] <= indices[k]) & ~later_starts[k]
    return VALID if unsorted else CANONICAL
