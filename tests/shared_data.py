"""The papers' benchmark datasets for tests that need one (``$STREAMFS_DATASETS``, by default
``../shared/datasets``)."""

from __future__ import annotations

import os

import numpy as np
import pytest

from streamfs.datasets import load


def load_or_skip(name: str) -> tuple[np.ndarray, np.ndarray]:
    """``(X, y)`` of dataset ``name``. A missing dataset skips the test when run by hand and
    fails it when CI=true, as a missing broker does: CI always has the shared datasets."""
    try:
        return load(name)
    except FileNotFoundError as exc:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"dataset missing in CI: {exc}", pytrace=False)
        pytest.skip(str(exc))
