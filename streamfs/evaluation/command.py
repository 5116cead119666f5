"""``streamfs evaluate``: offline evaluation of one or more selectors on one dataset.

Attach to the CLI group with ``main.add_command(evaluate)``.
"""

from __future__ import annotations

from pathlib import Path

import click

from .report import COLUMNS, describe, markdown_table, plot, rich_table, rows, to_json
from .runner import evaluate_dataset, parse_params

__all__ = ["evaluate"]


@click.command("evaluate")
@click.argument("data")
@click.option("-a", "--algorithm", "algorithms", multiple=True, required=True,
              help="Registry name (saola, saola-max, group-saola, kofsd, ofs, ofs-partial) or "
                   "gdm; repeat for a side-by-side table.")
@click.option("-p", "--param", "params", multiple=True, metavar="[ALGO:]KEY=VALUE",
              help="Parameter for ALGO, or for every listed algorithm accepting KEY.")
@click.option("--protocol", type=click.Choice(["holdout", "repeated", "kfold"]),
              default="repeated", show_default=True,
              help="Fixed split, repeated random splits or stratified k-fold.")
@click.option("--repeats", default=10, show_default=True, help="Random splits (repeated).")
@click.option("--test-size", default=0.3, show_default=True, help="Test fraction of a split.")
@click.option("--folds", default=10, show_default=True, help="Folds (kfold).")
@click.option("--stability-runs", default=10, show_default=True,
              help="Runs on random 4/5 subsamples for the stability measure (0: skip).")
@click.option("--stability-weight", type=click.Choice(["su", "correlation"]), default="su",
              show_default=True, help="Edge weight of the matching: SU or |correlation|.")
@click.option("--permutations", default=20, show_default=True,
              help="Random orders for the online mistake rate of instance-stream learners.")
@click.option("--one-vs-rest", "one_vs_rest", default=None, metavar="LABEL",
              help="Class against the rest for binary-only learners (OFS family, GDM) and "
                   "K-OFSD; default on multi-class data: the largest class (K-OFSD: the "
                   "smallest).")
@click.option("--baselines/--no-baselines", default=True, show_default=True,
              help="SelectKBest (f_classif, mutual_info_classif) at the same k.")
@click.option("--mi-bins", type=int, default=None,
              help="Discretise continuous features into this many equal-frequency bins for "
                   "the mutual_info_classif baseline (default: its k-NN estimator; slow).")
@click.option("--time-budget", type=float, default=None,
              help="Seconds per algorithm and loop; no new split/run starts after it.")
@click.option("--max-instances", type=int, default=None,
              help="Evaluate on a stratified random subsample of this many instances.")
@click.option("--seed", default=0, show_default=True)
@click.option("--label", default=None, help="Label column of a CSV/Parquet input.")
@click.option("--json", "json_out", default=None, metavar="FILE",
              help="Write all results as JSON to FILE ('-': stdout, no table).")
@click.option("--markdown", "md_out", default=None, metavar="FILE",
              help="Write the table as Markdown to FILE.")
@click.option("--plots", "plots_dir", default=None, metavar="DIR",
              help="Write accuracy_vs_features.png, mistake_rate.png, selection_size.png.")
def evaluate(data, algorithms, params, protocol, repeats, test_size, folds, stability_runs,
             stability_weight, permutations, one_vs_rest, baselines, mi_bins, time_budget,
             max_instances, seed, label, json_out, md_out, plots_dir):
    """Evaluate selectors on DATA (a file, a dataset name or sklearn:NAME).

    Each algorithm selects on the training part of every split; 1-NN, a linear SVM and a
    decision tree are scored on the selected features (accuracy, AUC, G-mean), next to
    SelectKBest baselines at the same number of features. Also reported: selection time,
    redundancy rate RED, stability over 4/5 subsamples, and for OFS-like learners the online
    mistake rate over random orders.
    """
    try:
        from .protocols import classifiers

        classifiers()
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise click.ClickException(
            f"{exc}; install the evaluation extra: pip install 'streamfs[eval]'") from None
    from streamfs.producers.files import load_file

    try:
        X, y = load_file(data, label=label)
        per_algo = parse_params(list(algorithms), list(params))
        result = evaluate_dataset(
            X, y, [(a, per_algo[a]) for a in algorithms], data_name=data,
            protocol=protocol, n_repeats=repeats, test_size=test_size, n_folds=folds,
            stability=stability_runs, stability_weight=stability_weight,
            n_permutations=permutations, one_vs_rest=one_vs_rest, baselines=baselines,
            time_budget=float("inf") if time_budget is None else time_budget,
            max_instances=max_instances, seed=seed, traces=plots_dir is not None,
            curve_ks=_ks(X.shape[1]) if plots_dir is not None else None, mi_bins=mi_bins,
        )
    except (ValueError, FileNotFoundError) as exc:
        raise click.ClickException(str(exc)) from None
    if json_out == "-":
        click.echo(to_json(result))
    else:
        from rich.console import Console

        Console().print(rich_table(result))
        if json_out:
            Path(json_out).parent.mkdir(parents=True, exist_ok=True)
            with open(json_out, "w") as fh:
                fh.write(to_json(result))
    if md_out:
        Path(md_out).parent.mkdir(parents=True, exist_ok=True)
        with open(md_out, "w") as fh:
            fh.write(describe(result) + "\n\n" + markdown_table(COLUMNS, rows(result)) + "\n")
    if plots_dir:
        for path in plot(result, plots_dir):
            click.echo(f"wrote {path}", err=json_out == "-")


def _ks(p: int) -> list[int]:
    """Feature counts for the accuracy-vs-k curve: 1, 2, 3, 5, 8, 10, 15, 20, 30, 50, ...

    >>> _ks(40)
    [1, 2, 3, 5, 8, 10, 15, 20, 30, 40]
    """
    grid = [1, 2, 3, 5, 8, 10, 15, 20, 30, 50, 75, 100, 150, 200]
    return [k for k in grid if k < p] + [min(p, 200)] if p > 0 else []


if __name__ == "__main__":  # pragma: no cover
    evaluate()
