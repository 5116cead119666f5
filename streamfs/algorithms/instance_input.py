"""Input conversion for the instance-stream learners (:class:`InstanceInputMixin`, a base of
:class:`~streamfs.algorithms.instance_stream.InstanceStreamSelector`): one instance (a dict, a
pandas Series, a 1-D array, a sparse row) or a block (a dense 2-D array, a scipy sparse matrix)
becomes the ``(indptr, indices, data)`` rows the kernels of :mod:`streamfs.algorithms.ofs_kernels`
read; dict keys become feature indices, and a learner started on dicts keyed by name names its
features from them."""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_array

from streamfs.algorithms import ofs_kernels as _k
from streamfs.algorithms._validation import check_real
from streamfs.algorithms.measures.columns import is_float_matrix

__all__ = ["CSR", "InstanceInputMixin", "is_series", "not_one_instance"]

CSR = tuple  # (indptr int64, indices int64, data float64)
_EMPTY_INDEX = np.empty(0, dtype=np.int64)


class InstanceInputMixin:
    """The input conversion of
    :class:`~streamfs.algorithms.instance_stream.InstanceStreamSelector`: rows as ``(indptr,
    indices, data)`` with sorted indices and no zeros, whatever form they come in, and the
    features' names (``feature_names_in_``, or names taken from dict keys). It uses the
    learner's dimension and flags (``d_``, ``_partial``, ``n_seen_``) and opens the stream
    through its ``_ensure_init``."""

    def _known_names(self) -> np.ndarray | None:
        """``feature_names_in_``, or, for a learner started on dicts keyed by name with some
        features not named yet, ``_partial_names`` (``None`` where not named yet: scikit-learn
        defines ``feature_names_in_`` only when every feature has a name); ``None`` without
        names."""
        names = self.__dict__.get("feature_names_in_")
        return self.__dict__.get("_partial_names") if names is None else names

    def _feature_index(self) -> dict[str, int] | None:
        """``{name: index}`` of :meth:`_known_names` (built once), or ``None``. Slots not
        named yet (names taken from dict keys, see :meth:`_key_index`) are left out."""
        names = self._known_names()
        if names is None:
            return None
        cache = self.__dict__.get("_name_pos")
        if cache is None or cache[0] is not names:
            cache = (names, {str(n): i for i, n in enumerate(names) if n is not None})
            self._name_pos = cache
        return cache[1]

    def _key_index(self, key: Any, names: dict[str, int] | None) -> int:
        """Feature index of one dict key: an int index or a feature name; -1 for a name not
        seen yet (its weight is 0: it adds nothing to a score; learning names it, see
        :meth:`_dict_to_csr`).

        A learner that starts on dicts with names as keys (no DataFrame gave it
        ``feature_names_in_``, no instance taught it features by position) names its features
        from the keys it learns from, as River's learners take features from their input: the
        first new name is feature 0, the next 1, and so on, up to ``n_features`` names."""
        if isinstance(key, (int, np.integer)) and not isinstance(key, (bool, np.bool_)):
            return int(key)
        if not isinstance(key, str):
            raise ValueError(
                f"dict keys must be int feature indices or str feature names, got {key!r}")
        if names is not None and key in names:
            return names[key]
        if names is None and self.n_seen_ > 0:  # it learned features by position
            raise ValueError(
                f"{type(self).__name__} has no feature names, so dict keys must be int "
                f"feature indices, got {key!r}; fit or partial_fit it on a pandas "
                "DataFrame, or start it on dicts with names as keys, to use names")
        if names is not None and len(names) == self.d_:
            raise ValueError(
                f"unknown feature name {key!r}: not one of the {len(names)} names in "
                f"feature_names_in_ (the learner has {self.d_} features, all named)")
        return -1

    def _unnamed_slots(self, k: int) -> np.ndarray:
        """The first ``k`` features without a name (names from keys fill them in order);
        ``ValueError`` when fewer are left."""
        names = self._known_names()
        free = (np.arange(self.d_) if names is None
                else np.flatnonzero(np.fromiter((n is None for n in names), bool, self.d_)))
        if free.size < k:
            raise ValueError(
                f"x brings {k} new feature names but {type(self).__name__} has "
                f"{free.size} of its n_features={self.d_} features left to name: a learner "
                "started on dicts names at most n_features features")
        return free[:k]

    def _name_features(self, keys: list[str], slots: np.ndarray) -> None:
        """Name the features ``slots`` ``keys``: in ``_partial_names`` until every feature
        has a name, which then become ``feature_names_in_`` (all strings, as scikit-learn
        has them)."""
        names = self.__dict__.get("_partial_names")
        if names is None:
            names = self._partial_names = np.full(self.d_, None, dtype=object)
        index = self._feature_index()
        for key, slot in zip(keys, slots.tolist()):
            names[slot] = key  # in place: the cached index is updated alongside
            index[key] = slot
        if len(index) == self.d_:  # all named (the same array: the cached index holds)
            self.feature_names_in_ = names
            del self._partial_names

    def _dict_to_csr(self, x: dict, learn: bool = False) -> tuple[CSR, list[str], np.ndarray]:
        """The row, and the names it brings with the features they are to name. ``learn``:
        names not seen yet take the first unnamed features (see :meth:`_key_index`); the
        caller names them once the instance is learned (a refused instance names nothing).
        Otherwise they are left out."""
        self._ensure_init(None)
        n = len(x)
        new: list[str] = []
        slots = _EMPTY_INDEX
        if all(type(k) is int for k in x):
            keys = np.fromiter(x.keys(), dtype=np.int64, count=n)
        else:
            names = self._feature_index()
            keys = np.fromiter((self._key_index(k, names) for k in x), dtype=np.int64,
                               count=n)
            if (keys < 0).any():
                unseen = keys < 0
                if learn:
                    new = [k for k, u in zip(x, unseen.tolist()) if u]
                    keys[unseen] = slots = self._unnamed_slots(len(new))
                else:  # names not seen yet weigh 0: left out
                    x = {k: x[k] for k, u in zip(list(x), unseen.tolist()) if not u}
                    keys = keys[~unseen]
                    n = keys.size
            if np.unique(keys).size != n:
                raise ValueError("a feature appears twice in the dict (by index and by name)")
        try:
            vals = np.fromiter((v if type(v) is float else _number(v) for v in x.values()),
                               dtype=np.float64, count=n)
        except (TypeError, ValueError):
            bad = next(k for k, v in x.items() if not _is_float(v))
            raise ValueError(f"the value of feature {bad!r} is not a number: {x[bad]!r}") \
                from None
        if keys.size and (keys.min() < 0 or keys.max() >= self.d_):
            raise ValueError(f"feature index out of range [0, {self.d_})")
        if not self._partial and not np.isfinite(vals).all():
            raise ValueError("x contains NaN or infinite values")
        order = np.argsort(keys, kind="stable")
        keys, vals = keys[order], vals[order]
        keep = vals != 0.0
        keys, vals = keys[keep], vals[keep]
        return (np.array([0, keys.size], dtype=np.int64), keys, vals), new, slots

    def _one_to_learn(self, x: Any) -> tuple[CSR, list[str], np.ndarray]:
        """:meth:`_as_csr` of one instance to learn, with the names a dict (or Series) brings
        and the features they are to name (:meth:`_name_features`, once it is learned)."""
        if is_series(x):
            x = x.to_dict()
        if isinstance(x, dict) and not sp.issparse(x):
            return self._dict_to_csr(x, learn=True)
        return self._as_csr(x, single=True), [], _EMPTY_INDEX

    def _as_csr(self, X: Any, single: bool, method: str = "learn_one") -> CSR:
        """``(indptr, indices, data)`` with sorted indices, no duplicates and no zeros, so that
        dense, sparse and dict inputs run through identical arithmetic. A dict's names not
        seen yet are left out (they weigh 0). ``single``: one instance, for ``method``."""
        if isinstance(X, dict) and not sp.issparse(X):  # (a dok_matrix is a dict)
            return self._dict_to_csr(X)[0]
        if single and is_series(X):
            # a pandas Series (df.iloc[i], iterrows()): its labels say which feature each
            # value is, not its positions
            return self._dict_to_csr(X.to_dict())[0]
        if sp.issparse(X):
            # X itself where it is one already (the worker's decoded blocks, whose canonical
            # flag the decoder set); copied below only where it must change
            M = X if is_float_matrix(X, "csr") else sp.csr_matrix(X, dtype=np.float64)
            if single and M.shape[0] != 1:
                raise not_one_instance(method, f"a sparse matrix of {M.shape[0]} rows")
            self._ensure_init(M.shape[1])
        else:
            A = np.asarray(X)
            if A.dtype.kind not in "biufO":  # learn_one's arrays come here unchecked
                check_real(A, "x" if single else "X")
                check_array(A, dtype="numeric", ensure_2d=False, ensure_all_finite=False,
                            ensure_min_samples=0, ensure_min_features=0)  # text
            A = A.astype(np.float64, copy=False)
            if single:
                if A.ndim != 1:
                    raise not_one_instance(method, f"an array of {A.ndim} dimension(s)")
                self._ensure_init(A.shape[0])
                nz = np.flatnonzero(A)
                if not self._partial and not np.isfinite(A[nz]).all():
                    raise ValueError("x contains NaN or infinite values")
                return np.array([0, nz.size], dtype=np.int64), nz.astype(np.int64), A[nz]
            if A.ndim != 2:
                raise ValueError(f"expected a 2-D array, got {A.ndim} dimension(s)")
            self._ensure_init(A.shape[1])
            M = _k.dense_to_csr(np.ascontiguousarray(A))
            if not self._partial and not np.isfinite(M[2]).all():
                raise ValueError("X contains NaN or infinite values")
            return M
        if not (M.has_canonical_format and M.data.all()):
            M = M.copy()  # X stays as it was
            M.sum_duplicates()  # also sorts the indices
            M.eliminate_zeros()
        if not self._partial and not np.isfinite(M.data).all():
            raise ValueError("X contains NaN or infinite values")
        return (
            M.indptr.astype(np.int64, copy=False),
            M.indices.astype(np.int64, copy=False),
            M.data.astype(np.float64, copy=False),
        )

    @staticmethod
    def _rows(M: CSR, a: int, b: int) -> CSR:
        indptr, indices, data = M
        lo, hi = indptr[a], indptr[b]
        return indptr[a : b + 1] - lo, indices[lo:hi], data[lo:hi]


def not_one_instance(method: str, got: str) -> ValueError:
    return ValueError(f"{method} expects one instance (a dict, a pandas Series, a 1-D array or "
                      f"a sparse row), got {got}")


def is_series(x: Any) -> bool:
    """Whether ``x`` is a pandas Series (duck-typed: pandas is not a dependency)."""
    return getattr(x, "ndim", None) == 1 and hasattr(x, "index") and hasattr(x, "to_dict")


def _number(value: Any) -> float:
    """A dict value as a float; text is refused, as scikit-learn refuses it in arrays (float()
    would take "1.5")."""
    if isinstance(value, (str, bytes)):
        raise TypeError(f"text is not a number: {value!r}")
    return float(value)


def _is_float(value: Any) -> bool:
    try:
        _number(value)
    except (TypeError, ValueError):
        return False
    return True
