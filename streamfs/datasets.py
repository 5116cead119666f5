"""Load the benchmark datasets of the papers from ``$STREAMFS_DATASETS``.

The data is never copied into this repository: it is read by path, by default from
``../shared/datasets`` next to the checkout.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

_REPO_ROOT = Path(__file__).resolve().parent.parent


def datasets_dir() -> Path:
    """The directory holding ``<name>/<name>.npz`` files."""
    default = _REPO_ROOT.parent / "shared" / "datasets"
    return Path(os.environ.get("STREAMFS_DATASETS", default))


def available() -> list[str]:
    """Names of the datasets present on this machine (empty if the directory is missing)."""
    root = datasets_dir()
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / f"{p.name}.npz").is_file())


def load(name: str) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(X, y)`` of dataset ``name`` exactly as stored (labels may be strings)."""
    path = datasets_dir() / name / f"{name}.npz"
    if not path.is_file():
        raise FileNotFoundError(
            f"dataset {name!r} not found at {path}; set STREAMFS_DATASETS to the directory "
            f"that holds <name>/<name>.npz (available: {', '.join(available()) or 'none'})"
        )
    with np.load(path, allow_pickle=False) as data:
        return data["X"], data["y"]
