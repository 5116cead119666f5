"""Names under which the worker, the CLI and ``open`` messages refer to the algorithms.

Each entry says which kind of stream the algorithm consumes, whether it is a binary-only
learner, how to build it from the parameters of an ``open`` message (unknown names or
parameters, and values out of range, raise ``ValueError`` naming them) and whether given labels
can work for it (:meth:`AlgorithmSpec.check_labels`).

``ALGORITHMS`` (and :func:`get`) hold the algorithms the worker runs. ``gdm`` is GDM on an
instance stream (:class:`~streamfs.algorithms.gdm_stream.GDMStream`: a sliding window of
instances, refitted every ``refit_every``); the batch estimator is
:class:`~streamfs.algorithms.gdm.GDM`.

>>> get("ofs").binary_only, get("saola").binary_only
(True, False)
>>> get("ofs").check_labels([0, 1, 2])
Traceback (most recent call last):
...
streamfs.algorithms.registry.LabelError: ofs is a binary classifier: the labels have 3 classes (0, 1, 2); map them to two classes first
"""

from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass, field
from typing import Any, Literal

from ._suggest import did_you_mean
from ._validation import label_problem

StreamKind = Literal["features", "instances", "batch"]


class LabelError(ValueError):
    """Labels an algorithm cannot use (:meth:`AlgorithmSpec.check_labels`): apart from the
    other refusals so that a caller can say where the labels came from (the column taken as
    the label)."""


@dataclass(frozen=True)
class AlgorithmSpec:
    name: str
    kind: StreamKind
    target: str  # "module:Class"
    fixed: dict[str, Any] = field(default_factory=dict)  # parameters the name implies
    summary: str = ""
    binary_only: bool = False  # learns exactly two classes (the OFS family, GDM)
    #: takes real-valued targets (SAOLA's tests); the others refuse them as scikit-learn does
    continuous_labels: bool = False

    def load(self) -> type:
        module, cls = self.target.split(":")
        return getattr(importlib.import_module(module), cls)

    def allowed_params(self) -> list[str]:
        sig = inspect.signature(self.load().__init__)
        return [p for p in sig.parameters if p != "self" and p not in self.fixed]

    def parameters(self) -> list[tuple[str, Any, str]]:
        """``(name, default, meaning)`` of each parameter an ``open`` may give: the default
        from the estimator's signature (``inspect.Parameter.empty``: none), the meaning from
        its docstring (:func:`~streamfs.algorithms.paramdoc.parameter_meanings`; "" if none
        describes it)."""
        from .paramdoc import parameter_meanings

        cls = self.load()
        sig = inspect.signature(cls.__init__).parameters
        meanings = parameter_meanings(cls)
        return [(name, sig[name].default, meanings.get(name, ""))
                for name in self.allowed_params()]

    def build(self, params: dict[str, Any] | None = None) -> Any:
        params = dict(params or {})
        allowed = self.allowed_params()
        unknown = sorted(set(params) - set(allowed))
        if unknown:
            named = ", ".join(f"{u}{did_you_mean(u, allowed)}" for u in unknown)
            raise ValueError(
                f"unknown parameter(s) {named} for algorithm {self.name!r}; "
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

    def check_labels(self, y: Any) -> None:
        """``ValueError`` with one clear line when the labels ``y`` cannot work for this
        algorithm: NaN labels, fewer than two classes, or more than two for a binary-only
        learner. Meant for a whole label vector (a feature stream's ``y``, or the labels of a
        data set about to be streamed): one block of an instance stream may hold a single
        class."""
        problem = label_problem(y, self.name, self.binary_only,
                                continuous=self.continuous_labels)
        if problem is not None:
            raise LabelError(problem)


_SPECS = [
    AlgorithmSpec("saola", "features", "streamfs.algorithms.saola:SAOLA",
                  summary="SAOLA (Yu et al. 2016): pairwise redundancy, min bound",
                  continuous_labels=True),
    AlgorithmSpec("saola-max", "features", "streamfs.algorithms.saola:SAOLA", {"bound": "max"},
                  summary="SAOLA with max(dep(Fi), dep(Y)) bounds",
                  continuous_labels=True),
    AlgorithmSpec("group-saola", "features", "streamfs.algorithms.group_saola:GroupSAOLA",
                  summary="group-SAOLA: features arrive in groups (--groups FILE)",
                  continuous_labels=True),
    AlgorithmSpec("kofsd", "features", "streamfs.algorithms.kofsd:KOFSD",
                  summary="K-OFSD (Zhou et al. 2017): k-NN rough-set dependency, imbalanced"),
    AlgorithmSpec("ofs", "instances", "streamfs.algorithms.ofs:OFS",
                  summary="OFS (Wang et al. 2014): sparse projection, full input",
                  binary_only=True),
    AlgorithmSpec("ofs-partial", "instances", "streamfs.algorithms.ofs:OFSPartial",
                  summary="OFS_P: partial input, observes B attributes", binary_only=True),
    AlgorithmSpec("pe-trun", "instances", "streamfs.algorithms.ofs:PerceptronTruncation",
                  summary="baseline PE_trun: perceptron truncated to B weights",
                  binary_only=True),
    AlgorithmSpec("rand", "instances", "streamfs.algorithms.ofs:RandomSelection",
                  summary="baseline RAND: perceptron on a fixed random set of B features",
                  binary_only=True),
    AlgorithmSpec("ofs-rand", "instances", "streamfs.algorithms.ofs:OFSRandomPartial",
                  summary="baseline OFS_rand: OFS_P update on B random attributes",
                  binary_only=True),
    AlgorithmSpec("pe-rand", "instances", "streamfs.algorithms.ofs:PerceptronRandomPartial",
                  summary="baseline PE_rand: perceptron on B random attributes per instance",
                  binary_only=True),
    AlgorithmSpec("gdm", "instances", "streamfs.algorithms.gdm_stream:GDMStream",
                  summary="GDM (Zhai et al. 2012): support + affiliated features, refitted on "
                          "a sliding window of instances", binary_only=True),
]
ALGORITHMS: dict[str, AlgorithmSpec] = {s.name: s for s in _SPECS}

def get(name: str) -> AlgorithmSpec:
    """The spec of algorithm ``name``; ``ValueError`` naming the known ones otherwise."""
    try:
        return ALGORITHMS[name]
    except KeyError:
        raise ValueError(
            f"unknown algorithm {name!r}{did_you_mean(name, sorted(ALGORITHMS))}; "
            f"known: {', '.join(sorted(ALGORITHMS))}"
        ) from None
