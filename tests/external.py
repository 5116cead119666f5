"""What tests need from outside the repository: a missing part skips a test run by hand and
fails it when CI=true, where the shared datasets and a broker are always there."""

from __future__ import annotations

import os
from typing import NoReturn

import numpy as np
import pytest

from streamfs.datasets import available, datasets_dir, load


def unavailable(what: str) -> NoReturn:
    """Skip the test for the missing ``what``; fail it in CI."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"missing in CI: {what}", pytrace=False)
    pytest.skip(what)


def require_dataset(name: str) -> None:
    """:func:`unavailable` unless the benchmark dataset ``name`` is in ``$STREAMFS_DATASETS``
    (by default ``../shared/datasets``)."""
    if name not in available():
        unavailable(f"dataset {name!r} not in {datasets_dir()}")


def load_or_skip(name: str) -> tuple[np.ndarray, np.ndarray]:
    """``(X, y)`` of the benchmark dataset ``name``, or :func:`unavailable`."""
    require_dataset(name)
    return load(name)
