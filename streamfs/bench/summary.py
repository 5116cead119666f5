"""One scenario's figures over repeated runs of :func:`streamfs.bench.pipeline.run_scenario`.

On a small machine the broker, the bench and the worker share the cores, so a single run's
timings vary by a factor of two; the median of a few runs is the figure to compare.
"""

from __future__ import annotations

import statistics
from typing import Any


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def median_of_runs(runs: list[dict]) -> dict:
    """The median of every numeric figure of ``runs`` (the same scenario each), with the
    range of each ratio over the runs.

    A ratio is the median of the runs' own ratios: both sides of a run's ratio were measured
    in that run, whereas the median of each side could come from different runs. Per-phase
    seconds are medians per phase, so they need not add up to the median backlog.
    ``selection_matches_in_process`` holds only if it held in every run.

    >>> runs = [{"scenario": "s", "backlog_seconds": t, "ratio_backlog_to_raw": r,
    ...          "selection_matches_in_process": True}
    ...         for t, r in ((1.0, .5), (3.0, .9), (2.0, .7))]
    >>> s = median_of_runs(runs)
    >>> s["backlog_seconds"], s["ratio_backlog_to_raw"], s["ratio_ranges"], s["repeats"]
    (2.0, 0.7, {'ratio_backlog_to_raw': [0.5, 0.9]}, 3)
    """
    if not runs:
        raise ValueError("median_of_runs needs at least one run")
    names = {r.get("scenario") for r in runs}
    if len(names) != 1:
        raise ValueError(f"runs of different scenarios: {sorted(map(str, names))}")
    out: dict[str, Any] = {}
    for key, first in runs[0].items():
        values = [r.get(key) for r in runs]
        if all(_number(v) for v in values):
            out[key] = statistics.median(values)
        elif isinstance(first, dict) and all(isinstance(v, dict) for v in values):
            out[key] = {k: statistics.median(v[k] for v in values)
                        for k in first if all(_number(v.get(k)) for v in values)}
        elif key == "selection_matches_in_process":
            out[key] = all(v is True for v in values)
        else:
            out[key] = first
    out["ratio_ranges"] = {k: [min(r[k] for r in runs), max(r[k] for r in runs)]
                           for k in runs[0] if k.startswith("ratio_")}
    out["repeats"] = len(runs)
    return out
