"""Evaluate several algorithms on one dataset with the same splits (side by side)."""

from __future__ import annotations

import inspect
import time
from collections import Counter
from typing import Any, Callable

import numpy as np

from streamfs.algorithms.instance_advice import naming_columns
from streamfs.algorithms.registry import LabelError
from streamfs.cli.params import param_value

from . import protocols as P

__all__ = ["parse_params", "resolve_params", "evaluate_dataset", "subsample",
           "feature_frequency", "Progress", "Done"]

#: ``progress(description, advance)``: ``description`` (or ``None``: unchanged) says what runs
#: now, ``advance`` how many units of work just finished; called once with
#: ``("start", total)`` first, ``total`` being the number of units planned
Progress = Callable[[str | None, int], None]
#: ``on_algorithm(result, entry)``: called when an algorithm is done, with the result so far
#: (its ``"algorithms"`` not yet holding ``entry``) and the algorithm's entry
Done = Callable[[dict, dict], None]

SAOLA_FAMILY = ("saola", "saola-max", "group-saola")
#: the instance-stream learners of Wang et al. (all but GDM)
OFS_FAMILY = ("ofs", "ofs-partial", "ofs-rand", "pe-trun", "pe-rand", "rand")


def _accepted(name: str) -> list[str]:
    if name == "gdm":
        from streamfs.algorithms.gdm import GDM

        return [p for p in inspect.signature(GDM.__init__).parameters if p != "self"]
    from streamfs.algorithms import registry

    return registry.get(name).allowed_params()


def _refuse_streaming_only(name: str, key: str) -> None:
    """``ValueError`` for a parameter of ``name``'s streaming learner (the registry's) that
    evaluate's own does not take (it said "no algorithm among ['gdm'] accepts parameter
    'refit_every'", which `streamfs algorithms gdm` lists)."""
    from streamfs.algorithms import registry

    if key in registry.get(name).allowed_params() and key not in _accepted(name):
        raise ValueError(f"parameter {key!r} is the streaming GDM's (select, produce): "
                         f"evaluate runs batch GDM on each training split, which takes "
                         f"{', '.join(_accepted(name))}")


def parse_params(names: list[str], items: list[str]) -> dict[str, dict[str, Any]]:
    """Per-algorithm parameters from ``ALGO:key=value`` (that algorithm) and ``key=value``
    (every listed algorithm that accepts ``key``; an error if none does). A setting that
    names its algorithm wins over a general one, in whatever order they come (the later of
    the two won).

    >>> parse_params(["saola", "kofsd"], ["saola:alpha=0.01", "alpha=0.05", "k=5"])
    {'saola': {'alpha': 0.01}, 'kofsd': {'alpha': 0.05, 'k': 5}}
    """
    out: dict[str, dict[str, Any]] = {n: {} for n in names}
    # general settings first, then the named ones over them
    items = sorted(items, key=lambda item: ":" in item.partition("=")[0])
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"parameter {item!r} is not KEY=VALUE or ALGORITHM:KEY=VALUE")
        algo, colon, key = key.rpartition(":")
        if colon:
            if algo not in out:
                raise ValueError(f"parameter {item!r} names {algo!r}, not among {names}")
            if algo == "gdm":
                _refuse_streaming_only(algo, key)
            out[algo][key] = param_value(value)
            continue
        takers = [n for n in names if key in _accepted(n)]
        if not takers and "gdm" in names:
            _refuse_streaming_only("gdm", key)
        if not takers:
            raise ValueError(f"no algorithm among {names} accepts parameter {key!r}")
        for n in takers:
            out[n][key] = param_value(value)
    return out


def resolve_params(name: str, params: dict[str, Any], discrete: bool,
                   n_features: int | None = None) -> dict[str, Any]:
    """Defaults that depend on the data, written out so that every reported number says how
    it was made: the SAOLA family uses ``test="mi"`` on discrete data
    (:func:`streamfs.evaluation.protocols.is_discrete`) and Fisher's z otherwise; the OFS
    family shows its scaling (``normalize``) and, given ``n_features``, its budget ``B``
    (``n_features_to_select``, ``round(0.1 d)`` by default). The values are the learners' own
    defaults: the results do not change.

    >>> resolve_params("ofs", {}, discrete=False, n_features=57)
    {'normalize': True, 'n_features_to_select': 6}
    """
    params = dict(params)
    if name in SAOLA_FAMILY and "test" not in params:
        params["test"] = "mi" if discrete else "fisher_z"
    if name in OFS_FAMILY:
        from streamfs.algorithms import registry
        from streamfs.algorithms.instance_stream import budget_for

        defaults = registry.get(name).load()().get_params()
        params.setdefault("normalize", defaults["normalize"])
        if n_features is not None:
            params["n_features_to_select"] = budget_for(
                params.get("n_features_to_select", defaults["n_features_to_select"]), n_features)
    return params


def subsample(y: np.ndarray, max_instances: int, seed: int = 0) -> np.ndarray:
    """Sorted indices of a stratified random subsample of ``max_instances`` rows: each
    class gets its proportional share, rounded by largest remainder, and at least one row
    (so the total may exceed ``max_instances`` by a few rows when classes are tiny).

    >>> y = np.array([0] * 90 + [1] * 9 + [2])
    >>> np.bincount(y[subsample(y, 20)]).tolist()
    [18, 2, 1]
    """
    n = len(y)
    if n <= max_instances:
        return np.arange(n)
    counts = np.bincount(y)
    share = counts * max_instances / n
    alloc = np.floor(share).astype(int)
    extra = max_instances - alloc.sum()
    alloc[np.argsort(-(share - alloc), kind="stable")[:extra]] += 1
    alloc = np.where(counts > 0, np.clip(alloc, 1, counts), 0)
    rng = np.random.default_rng(seed)
    parts = [rng.choice(np.flatnonzero(y == c), k, replace=False) for c, k in enumerate(alloc)]
    return np.sort(np.concatenate(parts))


def evaluate_dataset(
    X: Any,
    y: np.ndarray,
    algorithms: list[tuple[str, dict[str, Any]]],
    *,
    data_name: str = "",
    protocol: str = "repeated",
    n_repeats: int = 10,
    test_size: float = 0.3,
    n_folds: int = 10,
    stability: int = 10,
    stability_weight: str = "su",
    n_permutations: int = 20,
    one_vs_rest: Any = None,
    baselines: bool = True,
    time_budget: float = float("inf"),
    max_instances: int | None = None,
    seed: int = 0,
    traces: bool = False,
    curve_ks: list[int] | None = None,
    mi_bins: int | None = None,
    feature_names: list[str] | None = None,
    groups: list[list[int]] | None = None,
    progress: Progress | None = None,
    on_algorithm: Done | None = None,
) -> dict:
    """All measures for every ``(name, params)`` of ``algorithms`` on ``(X, y)``.

    ``max_instances`` subsamples the instances (stratified) for everything except the
    online mistake rate, which streams all of them. ``time_budget`` (seconds) applies to each
    algorithm and each of its loops (splits, stability runs, permutations). ``traces`` adds
    the selection-size trace of the feature-stream selectors; ``curve_ks`` the accuracy-vs-k
    curves of ``SelectKBest`` (f_classif) on the first split, for the plots. ``mi_bins``: see
    the ``SelectKBest`` mutual-information baseline in :mod:`streamfs.evaluation.protocols`.

    ``feature_names`` (one per column, if the data has them) name the features of each
    entry's ``feature_frequency`` (not stored whole: JSON lines stay small on wide data).
    ``groups`` (lists of column indices partitioning the columns) are group-saola's, which
    needs them; no other algorithm takes them.
    ``progress`` (see :data:`Progress`) is told about every unit of work: a split, a
    stability run, an order of the mistake rate, a trace or a curve, per algorithm.
    ``on_algorithm`` (see :data:`Done`) gets each algorithm's entry as soon as it is done.
    """
    if feature_names is not None and len(feature_names) != X.shape[1]:
        raise ValueError(f"{len(feature_names)} feature names for {X.shape[1]} features")
    _check_protocol(n_repeats, test_size, n_folds, stability, n_permutations, time_budget,
                    mi_bins, max_instances)
    from streamfs.producers.checks import check_groups_apply

    if groups is not None and all(name != "group-saola" for name, _ in algorithms):
        raise ValueError("groups apply to group-saola only, which is not among the algorithms")
    for name, _ in algorithms:
        if name == "group-saola":
            check_groups_apply(name, groups, "--groups FILE")
    codes, classes = P.encode_labels(np.asarray(y).ravel())
    full = (X, codes)  # the online mistake rate always streams every instance
    note = ""
    if max_instances is not None and len(codes) > max_instances:
        keep = subsample(codes, max_instances, seed)
        X, codes = X[keep], codes[keep]
        note = f"stratified subsample of {max_instances} of {len(y)} instances"
    counts = np.bincount(codes, minlength=len(classes))
    if counts.min() < 2:  # stratified splits need two of each: sklearn's words named no class
        rare = classes[int(np.argmin(counts))].item()
        raise LabelError(f"class {rare!r} has {counts.min()} instance"
                         + (f" in the subsample of max_instances={max_instances}" if note else "")
                         + ": the stratified splits need at least 2 of every class")
    if one_vs_rest is not None:  # refused even where no algorithm takes it (it did nothing)
        P.one_vs_rest(codes, classes, one_vs_rest)
    X = P.prepare_X(X)
    if not note:
        full = (X, codes)
    discrete = P.is_discrete(X)
    result: dict = {
        "data": data_name,
        "n_instances": int(X.shape[0]),
        "n_features": int(X.shape[1]),
        "classes": {str(c): int(k) for c, k in zip(classes.tolist(), counts)},
        "discrete": discrete,
        "note": note,
        "protocol": {
            "name": protocol, "n_repeats": n_repeats, "test_size": test_size,
            "n_folds": n_folds, "seed": seed, "stability_runs": stability,
            "stability_weight": stability_weight, "n_permutations": n_permutations,
            "time_budget": time_budget, "mi_bins": mi_bins,
        },
        "algorithms": [],
    }
    cache: dict = {}
    plans = []
    for name, given in algorithms:  # every parameter error before any work
        if "classes" in given and name in OFS_FAMILY:
            # the learners see the labels coded 0/1 (a class against the rest), so the data's
            # own labels given as classes would be refused as absent from y
            raise ValueError(f"{name}: evaluate sets classes itself (it codes the labels 0/1, "
                             "one class against the rest: --one-vs-rest picks it); leave out "
                             "-p classes=")
        params = resolve_params(name, given, discrete, X.shape[1])
        algo = P.Algorithm(name, params, groups if name == "group-saola" else None)
        kind = algo.kind
        algo.build()
        yk, task = codes, "all classes"
        binary_only = kind in P.BINARY_ONLY_KINDS or name in P.MINORITY_VS_REST
        if binary_only and (len(classes) > 2 or one_vs_rest is not None):
            yk, label = P.one_vs_rest(codes, classes, one_vs_rest,
                                      smallest=name in P.MINORITY_VS_REST)
            task = f"{label} vs rest"
        splits = list(P.make_splits(yk, protocol, n_repeats, test_size, n_folds, seed))
        units = {"splits": len(splits),
                 "stability runs": stability if stability >= 2 else 0,
                 "orders": n_permutations if kind == "instances" and n_permutations > 0 else 0,
                 "trace": 1 if traces and kind == "features" else 0,
                 "curve": 1 if curve_ks else 0}
        # the progress line names the parameters as given (short); the report, all of them
        label = name + (" (" + ", ".join(f"{k}={v}" for k, v in given.items()) + ")"
                        if given else "")
        plans.append((name, label, params, algo, kind, yk, task, splits, units))
    if protocol == "kfold" and (cut := sorted({len(plan[7]) for plan in plans
                                               if len(plan[7]) < n_folds})):
        # fewer folds than asked where a class has fewer instances (the report said the
        # number asked for)
        result["protocol"]["n_folds_used"] = cut
    report = progress or (lambda description, advance: None)
    report("start", sum(sum(p[-1].values()) for p in plans))

    for name, label, params, algo, kind, yk, task, splits, units in plans:
        started = time.perf_counter()

        def phase(what: str, run: Callable[[Callable[[], None]], Any]) -> Any:
            """Run one loop, ticking per unit; units skipped by the time budget are
            counted as done at its end, so the total stays right."""
            planned, done = units[what], [0]

            def tick() -> None:
                done[0] += 1
                report(None, 1)

            report(f"{label}: {what}", 0)
            with naming_columns(feature_names):  # the learners' advice names the columns
                out = run(tick)
            report(None, max(0, planned - done[0]))
            return out

        entry: dict = {"algorithm": name, "kind": kind, "params": params, "task": task}
        entry.update(phase("splits", lambda tick: P.evaluate_splits(
            algo, X, yk, splits, baselines=baselines, discrete=discrete,
            time_budget=time_budget, seed=seed, cache=cache, mi_bins=mi_bins, tick=tick)))
        entry["feature_frequency"] = feature_frequency(entry["selections"], feature_names)
        if units["stability runs"]:
            entry["stability"] = phase("stability runs", lambda tick: P.stability_runs(
                algo, X, yk, stability, weight=stability_weight, time_budget=time_budget,
                seed=seed, tick=tick))
        if units["orders"]:
            Xo, yo = (X, yk) if full[0] is X else _relabel(full, classes, task)
            entry["online"] = phase("orders", lambda tick: P.online_mistakes(
                algo, Xo, yo, n_permutations, time_budget=time_budget, seed=seed, tick=tick))
        if units["trace"]:
            entry["selection_trace"] = phase("trace", lambda tick: P.selection_trace(algo, X, yk))
        if units["curve"]:
            ks = [k for k in curve_ks if k <= X.shape[1]]
            entry["accuracy_curve"] = phase("curve", lambda tick: P.accuracy_curve(
                X, yk, splits[0], ks, "f", discrete, cache))
        entry["seconds"] = time.perf_counter() - started
        if on_algorithm is not None:
            on_algorithm(result, entry)
        result["algorithms"].append(entry)
    return result


def _check_protocol(n_repeats: int, test_size: float, n_folds: int, stability: int,
                    n_permutations: int, time_budget: float, mi_bins: int | None,
                    max_instances: int | None) -> None:
    """ValueError naming the first setting the protocol cannot run with (the CLI's options
    check the same ranges): 0 repeats failed deep inside, 1 fold ran 2 without a word.

    >>> _check_protocol(10, 0.3, 1, 10, 20, 1.0, None, None)
    Traceback (most recent call last):
    ...
    ValueError: n_folds must be at least 2, got 1
    """
    for name, value, ok, rule in (
            ("n_repeats", n_repeats, n_repeats >= 1, "at least 1"),
            ("test_size", test_size, 0 < test_size < 1, "between 0 and 1 (exclusive)"),
            ("n_folds", n_folds, n_folds >= 2, "at least 2"),
            ("stability", stability, stability == 0 or stability >= 2, "0 (skip) or at least 2"),
            ("n_permutations", n_permutations, n_permutations >= 0, "at least 0"),
            ("time_budget", time_budget, time_budget > 0, "above 0"),
            ("mi_bins", mi_bins, mi_bins is None or mi_bins >= 2, "None or at least 2"),
            ("max_instances", max_instances, max_instances is None or max_instances >= 1,
             "None or at least 1")):
        if not ok:
            raise ValueError(f"{name} must be {rule}, got {value!r}")


def feature_frequency(selections: list[list[int]],
                      feature_names: list[str] | None = None) -> list[dict]:
    """How often each feature was selected over the splits, most often first (ties: lower
    index first): ``[{"feature": j, "count": c}, ...]``, plus ``"name"`` when
    ``feature_names`` are known.

    >>> feature_frequency([[3, 1], [3]], ["a", "b", "c", "d"])
    [{'feature': 3, 'count': 2, 'name': 'd'}, {'feature': 1, 'count': 1, 'name': 'b'}]
    """
    counts = Counter(int(j) for sel in selections for j in sel)
    out = []
    for j, c in sorted(counts.items(), key=lambda jc: (-jc[1], jc[0])):
        item: dict = {"feature": j, "count": c}
        if feature_names is not None and 0 <= j < len(feature_names):
            item["name"] = str(feature_names[j])
        out.append(item)
    return out


def _relabel(full: tuple, classes: np.ndarray, task: str) -> tuple:
    """The full data with the labels of ``task`` (all classes or ``LABEL vs rest``)."""
    X, codes = full
    X = P.prepare_X(X)
    if task != "all classes":
        codes = P.one_vs_rest(codes, classes, task.removesuffix(" vs rest"))[0]
    return X, codes
