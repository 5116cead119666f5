"""Tables (Markdown, rich), JSON lines and PNG plots of :func:`evaluate_dataset` results.

JSON output is NDJSON: one line per algorithm, each a complete result object whose
``"algorithms"`` holds that algorithm only (:func:`json_line`), so every line can be read on
its own (:func:`rows`, :func:`describe` work on it) and lines can be written as soon as an
algorithm is done; :func:`read_results` merges the lines of a file back into one result.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

__all__ = ["COLUMNS", "rows", "markdown_table", "rich_table", "print_rich", "selected_lines",
           "to_json", "json_line", "read_results", "load_results", "plot"]

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
    cut = p.get("n_folds_used")
    proto = {"holdout": f"1 split, test {p['test_size']}",
             "repeated": f"{p['n_repeats']} random split{'s' * (p['n_repeats'] != 1)}, "
                         f"test {p['test_size']}",
             "kfold": f"stratified {p['n_folds']}-fold" + (
                 f" ({' or '.join(map(str, cut))} folds where the smallest class has fewer "
                 "instances: every fold sees every class)" if cut else "")}[p["name"]]
    note = f"; {result['note']}" if result.get("note") else ""
    return (f"{result['data']}: {result['n_instances']}x{result['n_features']}"
            f"{' discrete' if result['discrete'] else ''}, classes {classes}; {proto}, "
            f"seed {p['seed']}{note}")


def rich_table(result: dict) -> Any:
    """The :func:`rows` as a ``rich.table.Table``."""
    from rich.table import Table

    table = Table(title=describe(result))
    for c in COLUMNS:  # "fold": a narrow terminal breaks long cells, never cuts them
        table.add_column(c, justify="left" if c in ("algorithm", "task") else "right",
                         overflow="fold")
    for r in rows(result):
        table.add_row(*r)
    return table


def print_rich(renderable: Any, file: Any = None) -> None:
    """Print with rich, never cutting anything: on a terminal at its width (the table's
    cells fold), elsewhere (a pipe, a file) on a console as wide as the renderable needs."""
    from rich.console import Console

    from streamfs.cli.stdout import stdout_console  # a closed pipe: exit 141, not rich's 1

    console = stdout_console(file=file)
    if not console.is_terminal:
        probe = Console(file=file, width=100_000)
        width = probe.measure(renderable).maximum
        console = stdout_console(file=file, width=max(80, width))
    console.print(renderable)


def _label(entry: dict) -> str:
    return entry["algorithm"] + (" " + _params(entry["params"]) if entry.get("params") else "")


def selected_lines(result: dict, limit: int = 20) -> list[str]:
    """One line per algorithm: its features by how often they were selected over the
    splits, by name where the data has names, else by column index.

    >>> r = {"algorithms": [{"algorithm": "saola", "params": {}, "task": "all classes",
    ...     "n_splits": 2, "feature_frequency": [{"feature": 4, "count": 2, "name": "area"},
    ...                                          {"feature": 0, "count": 1}]}]}
    >>> selected_lines(r)
    ['saola (all classes), selected over 2 splits: area 2/2, 0 1/2']
    >>> selected_lines(r, limit=1)[0].endswith("area 2/2 (+1 more)")
    True
    """
    out = []
    for a in result["algorithms"]:
        freq = a.get("feature_frequency") or []
        n = a.get("n_splits", 0)
        items = [f"{f.get('name', f['feature'])} {f['count']}/{n}" for f in freq[:limit]]
        more = f" (+{len(freq) - limit} more)" if len(freq) > limit else ""
        out.append(f"{_label(a)} ({a['task']}), selected over {n} splits: "
                   f"{', '.join(items) or 'nothing'}{more}")
    return out


def _clean(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {str(k): _clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_clean(x) for x in v]
    if hasattr(v, "item"):
        return _clean(v.item())
    return v


def to_json(result: Any) -> str:
    """Indented JSON text of a whole result (NaN written as null)."""
    return json.dumps(_clean(result), indent=1)


def json_line(result: dict, entry: dict) -> str:
    """One NDJSON line (no newline inside): ``result``'s header with ``"algorithms"``
    holding ``entry`` only (NaN written as null).

    >>> json_line({"data": "d", "algorithms": [1, 2]}, {"algorithm": "ofs", "x": float("nan")})
    '{"data": "d", "algorithms": [{"algorithm": "ofs", "x": null}]}'
    """
    return json.dumps(_clean({**result, "algorithms": [entry]}))


def read_results(text: str) -> dict:
    """One result from NDJSON text (:func:`json_line`): the header of the first line, the
    algorithms of all lines in order. A single indented JSON document (the format before
    NDJSON) is read too.

    >>> text = json_line({"data": "d"}, {"algorithm": "a"}) + "\\n" + json_line(
    ...     {"data": "d"}, {"algorithm": "b"})
    >>> [a["algorithm"] for a in read_results(text)["algorithms"]]
    ['a', 'b']
    """
    try:
        return json.loads(text)  # one document (a single line, or the older indented form)
    except json.JSONDecodeError:
        pass
    merged: dict | None = None
    for line in text.splitlines():
        if not line.strip():
            continue
        obj = json.loads(line)
        if merged is None:
            merged = obj
        else:
            merged["algorithms"].extend(obj["algorithms"])
    if merged is None:
        raise ValueError("no JSON results")
    return merged


def load_results(path: str | Path) -> dict:
    """:func:`read_results` of a file."""
    return read_results(Path(path).read_text())


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
