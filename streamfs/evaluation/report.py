"""Tables (Markdown, rich), JSON and PNG plots of :func:`evaluate_dataset` results."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

__all__ = ["COLUMNS", "rows", "markdown_table", "rich_table", "to_json", "plot"]

CLFS = ("1nn", "svm", "tree")
COLUMNS = [
    "algorithm", "task", "splits", "#sel", "time s", "RED", "stability",
    "acc 1NN/SVM/DT", "AUC 1NN/SVM/DT", "G-mean 1NN/SVM/DT",
    "F@k acc", "MI@k acc", "mistake rate",
]


def _num(v: Any, digits: int = 3) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    return f"{v:.{digits}f}"


def _mean(d: dict | None, key: str | None = None) -> float | None:
    if not d:
        return None
    d = d.get(key, {}) if key else d
    return d.get("mean")


def _triple(clfs: dict, metric: str) -> str:
    if not clfs:
        return "–"
    return "/".join(_num(_mean(clfs.get(c, {}), metric), 2) for c in CLFS)


def rows(result: dict) -> list[list[str]]:
    """One row of :data:`COLUMNS` per algorithm of ``result``.

    >>> r = {"algorithms": [{"algorithm": "ofs", "task": "all classes", "n_splits": 2,
    ...     "n_selected": {"mean": 3.0}, "selection_time": {"mean": 0.01},
    ...     "redundancy": {"mean": 0.25}, "classifiers": {},
    ...     "online": {"mistake_rate": {"mean": 0.125}}}]}
    >>> rows(r)[0][:7] + rows(r)[0][-1:]
    ['ofs', 'all classes', '2', '3.0', '0.010', '0.250', '–', '0.125']
    """
    out = []
    for a in result["algorithms"]:
        base = a.get("baselines") or {}
        out.append([
            a["algorithm"] + (" " + _params(a["params"]) if a.get("params") else ""),
            a["task"],
            str(a["n_splits"]),
            _num(_mean(a["n_selected"]), 1),
            _num(_mean(a["selection_time"])),
            _num(_mean(a["redundancy"])),
            _num((a.get("stability") or {}).get("stability")),
            _triple(a["classifiers"], "accuracy"),
            _triple(a["classifiers"], "auc"),
            _triple(a["classifiers"], "g_mean"),
            _triple(base.get("kbest_f", {}), "accuracy"),
            _triple(base.get("kbest_mi", {}), "accuracy"),
            _num(_mean((a.get("online") or {}).get("mistake_rate"))),
        ])
    return out


def _params(params: dict) -> str:
    return "(" + ", ".join(f"{k}={v}" for k, v in params.items()) + ")"


def markdown_table(header: list[str], body: list[list[str]]) -> str:
    """A GitHub Markdown table.

    >>> print(markdown_table(["a", "b"], [["1", "x|y"]]))
    | a | b |
    |---|---|
    | 1 | x\\|y |
    """
    esc = [[c.replace("|", "\\|") for c in r] for r in body]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in esc]
    return "\n".join(lines)


def describe(result: dict) -> str:
    """One line: data, shape, classes, protocol."""
    p = result["protocol"]
    classes = ", ".join(f"{k}:{v}" for k, v in result["classes"].items())
    proto = {"holdout": f"1 split, test {p['test_size']}",
             "repeated": f"{p['n_repeats']} random splits, test {p['test_size']}",
             "kfold": f"stratified {p['n_folds']}-fold"}[p["name"]]
    note = f"; {result['note']}" if result.get("note") else ""
    return (f"{result['data']}: {result['n_instances']}x{result['n_features']}"
            f"{' discrete' if result['discrete'] else ''}, classes {classes}; {proto}, "
            f"seed {p['seed']}{note}")


def rich_table(result: dict) -> Any:
    """The :func:`rows` as a ``rich.table.Table``."""
    from rich.table import Table

    table = Table(title=describe(result))
    for c in COLUMNS:
        table.add_column(c, justify="left" if c in ("algorithm", "task") else "right")
    for r in rows(result):
        table.add_row(*r)
    return table


def to_json(result: Any) -> str:
    """JSON text (NaN written as null)."""
    def clean(v: Any) -> Any:
        if isinstance(v, float) and not math.isfinite(v):
            return None
        if isinstance(v, dict):
            return {str(k): clean(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [clean(x) for x in v]
        if hasattr(v, "item"):
            return clean(v.item())
        return v

    return json.dumps(clean(result), indent=1)


def plot(result: dict, directory: str | Path) -> list[Path]:
    """Write ``accuracy_vs_features.png``, ``mistake_rate.png`` (instance-stream learners)
    and ``selection_size.png`` into ``directory``; return the paths written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    algos = result["algorithms"]
    written = []

    fig, axes = plt.subplots(1, 3, figsize=(13, 4), sharey=True)
    for ax, clf in zip(axes, CLFS):
        tasks = set()  # one SelectKBest curve per label task
        for i, a in enumerate(algos):
            colour = f"C{i}"  # an algorithm and its baselines share a colour
            curve = (a.get("accuracy_curve") or {}).get(clf)
            if curve and a["task"] not in tasks:
                tasks.add(a["task"])
                k, acc = zip(*curve)
                ax.plot(k, acc, "-", color="grey", alpha=0.7,
                        label=f"SelectKBest f_classif ({a['task']})")
            m = _mean(a["classifiers"].get(clf), "accuracy")
            if m is not None:
                ax.plot(_mean(a["n_selected"]), m, "o", ms=8, color=colour, label=a["algorithm"])
            for key, mark in (("kbest_f", "x"), ("kbest_mi", "+")):
                b = _mean((a.get("baselines") or {}).get(key, {}).get(clf), "accuracy")
                if b is not None:
                    ax.plot(_mean(a["n_selected"]), b, mark, ms=9, color=colour,
                            label=f"{key} @ k of {a['algorithm']}")
        ax.set_xscale("symlog")
        ax.set_xlabel("number of selected features")
        ax.set_title(clf)
    axes[0].set_ylabel("test accuracy")
    axes[-1].legend(fontsize=7)
    fig.suptitle(describe(result), fontsize=8)
    fig.tight_layout()
    written.append(directory / "accuracy_vs_features.png")
    fig.savefig(written[-1], dpi=110)
    plt.close(fig)

    online = [a for a in algos if a.get("online")]
    if online:
        fig, ax = plt.subplots(figsize=(6, 4))
        for a in online:
            t, r = zip(*a["online"]["curve"])
            ax.plot(t, r, label=f"{a['algorithm']} ({a['task']})")
        ax.set_xlabel("instances seen")
        ax.set_ylabel("cumulative mistake rate")
        ax.set_title(f"{result['data']}: mean of {online[0]['online']['n_permutations']} orders",
                     fontsize=9)
        ax.legend(fontsize=8)
        fig.tight_layout()
        written.append(directory / "mistake_rate.png")
        fig.savefig(written[-1], dpi=110)
        plt.close(fig)

    traces = [(a, a["selection_trace"], "features seen") for a in algos
              if a.get("selection_trace")]
    traces += [(a, a["online"]["size_curve"], "instances seen") for a in online]
    if traces:
        fig, axes = plt.subplots(1, len({t[2] for t in traces}), figsize=(11, 4), squeeze=False)
        panes = {x: ax for x, ax in zip(dict.fromkeys(t[2] for t in traces), axes[0])}
        for a, curve, xlabel in traces:
            x, s = zip(*curve)
            panes[xlabel].plot(x, s, label=a["algorithm"])
            panes[xlabel].set_xlabel(xlabel)
            panes[xlabel].set_ylabel("selected features")
            panes[xlabel].legend(fontsize=8)
        fig.suptitle(f"{result['data']}: selection size over the stream", fontsize=9)
        fig.tight_layout()
        written.append(directory / "selection_size.png")
        fig.savefig(written[-1], dpi=110)
        plt.close(fig)
    return written
