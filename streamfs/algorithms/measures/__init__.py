"""Dependence measures shared by the feature-stream selectors.

Two families:

* **Information theory on discrete data** (``test="mi"``): every value is binned with
  ``floor()`` (or, optionally, by equal-width bins per column) and states are numbered by rank;
  probabilities are plug-in frequencies and entropies are in bits. Symmetrical uncertainty is
  ``SU(X, Y) = 2 I(X; Y) / (H(X) + H(Y))``.
* **Fisher's z on continuous data** (``test="fisher_z"``): Pearson's ``r`` and
  ``W = sqrt(N - 3) * atanh(r)``, compared with the two-sided normal critical value.

Every quantity is computed so that it depends only on the *values* of a column, never on how it
is stored or batched: dense and sparse (CSC) columns and any split of a stream into blocks give
bit-identical numbers. That is what makes the sequential SAOLA decisions reproducible when they
are replayed block-wise. Concretely:

* sums run sequentially in row order over the non-zero entries (a dense column contributes its
  zeros as exact ``0.0`` terms, which change nothing);
* Pearson's cross-product is centred as ``sum_{x_i != 0} (x_i - m_x) c_i - m_x (sum_i c_i -
  sum_{x_i != 0} c_i)`` where ``c`` is the (stored, dense) centred partner column, so a dense
  column without zeros is an ordinary two-pass centred dot product and a sparse column costs
  O(nnz);
* joint histograms are integer count tables (exact); each mutual-information term is
  ``c log2(c N / (c_x c_y))``, so an exactly independent pair gives exactly 0, and the terms
  (of an entropy too) are summed in increasing order, not in the order of the states: a
  feature whose states are renumbered (a relabelled copy) has the same SU to the last bit, and
  ``SU(X, Y)`` is ``SU(Y, X)``.

Block kernels take a column block as ``(indptr, indices, data, dense)``: CSC arrays with sorted
row indices, or, when ``dense`` is true, a Fortran-ordered matrix flattened column by column
(``indices`` unused). Use :func:`~streamfs.algorithms.measures.columns.as_column_block` to build
one.

One module per job:

* :mod:`~streamfs.algorithms.measures.columns` -- column blocks (``ColumnBlock``,
  ``as_column_block``) and the checks of their values;
* :mod:`~streamfs.algorithms.measures.pearson` -- Pearson's r and Fisher's z, and their kernels;
* :mod:`~streamfs.algorithms.measures.exact` -- |r| from exact integer sums, so that exact ties
  stay ties;
* :mod:`~streamfs.algorithms.measures.lofs` -- Fisher's z in the authors' arithmetic
  (SAOLA's ``compat="lofs"``);
* :mod:`~streamfs.algorithms.measures.information` -- discretisation, entropy, mutual
  information and symmetrical uncertainty.

This package imports none of them: each module is imported where it is used.
"""
