"""Fixtures of the command-line tests."""

from __future__ import annotations

import os
import uuid

import pytest


@pytest.fixture
def names() -> tuple[str, str]:
    """A fresh topic prefix and app id (the secured brokers' tests: no topic_prefix fixture,
    which is the session broker's)."""
    tag = uuid.uuid4().hex[:8]
    return f"s{tag}.", f"app{tag}"


@pytest.fixture
def cli_env(kafka_bootstrap, topic_prefix) -> dict:
    """The environment of a `streamfs` subprocess on this test's broker and topics."""
    return {**os.environ, "STREAMFS_BOOTSTRAP_SERVERS": kafka_bootstrap,
            "STREAMFS_TOPIC_PREFIX": topic_prefix}


@pytest.fixture
def wdbc_csv(tmp_path):
    """A CSV with a header: the same 569 x 30 data as lofs_wdbc, bundled with scikit-learn
    (never skipped), labels as text."""
    import csv

    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    path = tmp_path / "wdbc.csv"
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow([f"f{j}" for j in range(X.shape[1])] + ["diagnosis"])
        for row, label in zip(X, y):
            w.writerow([repr(float(v)) for v in row] + ["malignant" if label == 0 else "benign"])
    return path
