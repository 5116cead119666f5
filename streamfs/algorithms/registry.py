"""Names under which the worker, the CLI and ``open`` messages refer to the algorithms.

Each entry says which kind of stream the algorithm consumes and how to build it from the
parameters of an ``open`` message. Unknown names or parameters raise ``ValueError`` naming them.
"""

from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass, field
from typing import Any, Literal

StreamKind = Literal["features", "instances"]


@dataclass(frozen=True)
class AlgorithmSpec:
    name: str
    kind: StreamKind
    target: str  # "module:Class"
    fixed: dict[str, Any] = field(default_factory=dict)  # parameters the name implies
    summary: str = ""

    def load(self) -> type:
        module, cls = self.target.split(":")
        return getattr(importlib.import_module(module), cls)

    def allowed_params(self) -> list[str]:
        sig = inspect.signature(self.load().__init__)
        return [p for p in sig.parameters if p != "self" and p not in self.fixed]

    def build(self, params: dict[str, Any] | None = None) -> Any:
        params = dict(params or {})
        allowed = self.allowed_params()
        unknown = sorted(set(params) - set(allowed))
        if unknown:
            raise ValueError(
                f"unknown parameter(s) {', '.join(unknown)} for algorithm {self.name!r}; "
                f"accepted: {', '.join(allowed) or 'none'}"
            )
        try:
            algo = self.load()(**self.fixed, **params)
        except TypeError as exc:
            raise ValueError(f"bad parameters for {self.name!r}: {exc}") from None
        check = getattr(algo, "_validate_params", None)
        if check is not None:
            check()
        return algo


_SPECS = [
    AlgorithmSpec("saola", "features", "streamfs.algorithms.saola:SAOLA",
                  summary="SAOLA (Yu et al. 2016): pairwise redundancy, min bound"),
    AlgorithmSpec("saola-max", "features", "streamfs.algorithms.saola:SAOLA", {"bound": "max"},
                  summary="SAOLA with max(dep(Fi), dep(Y)) bounds"),
    AlgorithmSpec("group-saola", "features", "streamfs.algorithms.saola:GroupSAOLA",
                  summary="group-SAOLA: features arrive in groups"),
    AlgorithmSpec("kofsd", "features", "streamfs.algorithms.kofsd:KOFSD",
                  summary="K-OFSD (Zhou et al. 2017): k-NN rough-set dependency, imbalanced"),
    AlgorithmSpec("ofs", "instances", "streamfs.algorithms.ofs:OFS",
                  summary="OFS (Wang et al. 2014): sparse projection, full input"),
    AlgorithmSpec("ofs-partial", "instances", "streamfs.algorithms.ofs:OFSPartial",
                  summary="OFS_P: partial input, observes B attributes"),
    AlgorithmSpec("pe-trun", "instances", "streamfs.algorithms.ofs:PerceptronTruncation",
                  summary="baseline PE_trun: perceptron truncated to B weights"),
    AlgorithmSpec("rand", "instances", "streamfs.algorithms.ofs:RandomSelection",
                  summary="baseline RAND: perceptron on a fixed random set of B features"),
    AlgorithmSpec("ofs-rand", "instances", "streamfs.algorithms.ofs:OFSRandomPartial",
                  summary="baseline OFS_rand: OFS_P update on B random attributes"),
    AlgorithmSpec("pe-rand", "instances", "streamfs.algorithms.ofs:PerceptronRandomPartial",
                  summary="baseline PE_rand: perceptron on B random attributes per instance"),
]
ALGORITHMS: dict[str, AlgorithmSpec] = {s.name: s for s in _SPECS}


def get(name: str) -> AlgorithmSpec:
    """The spec of algorithm ``name``; ``ValueError`` naming the known ones otherwise."""
    try:
        return ALGORITHMS[name]
    except KeyError:
        raise ValueError(
            f"unknown algorithm {name!r}; known: {', '.join(sorted(ALGORITHMS))}"
        ) from None
