"""Shared surface of the feature-stream selectors (SAOLA family, K-OFSD).

A feature stream fixes the instances (and the class vector ``y``) and delivers features one
block of columns at a time. Every selector:

* stores its constructor parameters only (learned attributes end in ``_``);
* learns from one block with ``partial_fit(X_block, y)``: the first call fixes ``y``, later
  calls may pass ``y`` again (it must be equal) or ``None``; columns get global indices
  ``n_features_seen_, n_features_seen_ + 1, ...`` in arrival order;
* ends the stream with ``finish()`` (end-of-stream rules such as a fallback selection);
  ``fit(X, y)`` is ``partial_fit`` on the whole matrix followed by ``finish()``;
* round-trips exactly through ``to_state()`` / ``from_state()``. The state is plain data
  (dict keys ``str`` or ``int``; values ``None``, ``bool``, ``int`` (64-bit), ``float``, ``str``,
  ``bytes``, lists, dicts and numpy arrays), which ``streamfs.codec`` encodes bit-exactly. The
  stored columns of kept features live under the key ``"columns"`` as ``{feature_index: 1-D
  array}`` so that the worker can persist them one record per feature.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import numpy as np
import scipy.sparse as sp


class FeatureStreamSelector(ABC):
    """Base class: selection bookkeeping shared by every feature-stream algorithm."""

    #: global 0-based indices of the selected features, in the algorithm's output order
    selected_: np.ndarray
    #: number of columns received so far
    n_features_seen_: int

    @abstractmethod
    def partial_fit(self, X: Any, y: Any = None) -> "FeatureStreamSelector":
        """Consume one block of new columns (dense array or scipy.sparse)."""

    def finish(self) -> "FeatureStreamSelector":
        """Apply end-of-stream rules. The default has none."""
        return self

    def fit(self, X: Any, y: Any) -> "FeatureStreamSelector":
        """Run the whole stream ``X`` (columns in order) from a fresh state."""
        self._reset()
        self.partial_fit(X, y)
        return self.finish()

    @abstractmethod
    def _reset(self) -> None:
        """Forget everything learned (keep parameters)."""

    @abstractmethod
    def to_state(self) -> dict:
        """Plain-data snapshot of parameters and learned state."""

    @classmethod
    @abstractmethod
    def from_state(cls, state: dict) -> "FeatureStreamSelector":
        """Rebuild an instance that continues exactly where ``to_state`` was taken."""

    @abstractmethod
    def selection(self) -> list[dict]:
        """The current selection as ``[{"feature": int, "score": float,
        "affiliated": [[feature, strength], ...]}, ...]`` in output order."""

    def get_support(self, indices: bool = False) -> np.ndarray:
        """Boolean mask over the features seen so far, or the selected indices."""
        selected = np.asarray(self.selected_, dtype=np.int64)
        if indices:
            return selected
        mask = np.zeros(self.n_features_seen_, dtype=bool)
        mask[selected] = True
        return mask

    def transform(self, X: Any) -> Any:
        """Keep the selected columns of ``X`` (in output order)."""
        if X.shape[1] != self.n_features_seen_:
            raise ValueError(
                f"X has {X.shape[1]} features but the selector has seen {self.n_features_seen_}"
            )
        cols = np.asarray(self.selected_, dtype=np.int64)
        if sp.issparse(X):
            return sp.csc_matrix(X)[:, cols]
        return np.asarray(X)[:, cols]
