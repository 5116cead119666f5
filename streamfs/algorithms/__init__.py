"""Pure numpy/scipy online feature selection algorithms (no I/O, no Kafka, no asyncio).

Classes are imported on first use: the numba kernels and scipy.stats take seconds to load, and
the codec, producers and CLI should not pay for that.

>>> from streamfs.algorithms import OFS
>>> OFS.__name__
'OFS'
>>> "GroupSAOLA" in dir(__import__("streamfs.algorithms").algorithms)
True
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "FeatureStreamSelector": "base",
    "SAOLA": "saola",
    "GroupSAOLA": "group_saola",
    "KOFSD": "kofsd",
    "GDM": "gdm",
    "redundancy_rate": "gdm",
    "GDMStream": "gdm_stream",
    "InstanceStreamSelector": "instance_stream",
    "OFS": "ofs",
    "OFSPartial": "ofs",
    "PerceptronTruncation": "ofs",
    "RandomSelection": "ofs",
    "OFSRandomPartial": "ofs",
    "PerceptronRandomPartial": "ofs",
    "OneVsRest": "one_vs_rest",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'streamfs.algorithms' has no attribute {name!r}")
    return getattr(importlib.import_module(f"streamfs.algorithms.{module}"), name)


def __dir__() -> list[str]:
    # the lazy exports too, for dir() and an interpreter's completion
    return sorted({*globals(), *_EXPORTS})
