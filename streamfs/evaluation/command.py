"""``streamfs evaluate``: offline evaluation of one or more selectors on one dataset.

Attach to the CLI group with ``main.add_command(evaluate)``.

Output: a progress bar on stderr over the units of work (each split, stability run and
random order of every algorithm; shown when stderr is a terminal, or forced with
``--progress``); then on stdout the table (at the terminal's width with folded cells, or as
wide as it needs when stdout is not a terminal: nothing is ever cut) and, per algorithm,
its features by how often they were selected (names where the data has them: ``sklearn:``
datasets, CSV/TSV headers, Parquet columns; else column indices). ``--json`` writes NDJSON,
one line per algorithm as soon as it is done (see :mod:`streamfs.evaluation.report`).
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Any, Iterator

import click

from streamfs.cli.options import (ALGORITHMS_HELP, DROP_OPTION, GROUPS_OPTION, HEADER_OPTION,
                                  LABEL_OPTION)
from streamfs.cli.settings_help import OFFLINE_READS, SettingsCommand
from streamfs.cli.stdout import writing_output

from .report import (
    COLUMNS,
    describe,
    json_line,
    markdown_table,
    plot,
    print_rich,
    rich_table,
    rows,
    selected_lines,
)
from .runner import Progress, evaluate_dataset, parse_params

__all__ = ["evaluate"]


@click.command("evaluate", cls=SettingsCommand, reads=OFFLINE_READS)
@click.argument("data")
@click.option("-a", "--algorithm", "algorithms", multiple=True, required=True,
              help=ALGORITHMS_HELP + " Repeat for a side-by-side table.")
@click.option("-p", "--param", "params", multiple=True, metavar="[ALGO:]KEY=VALUE",
              help="Parameter for ALGO, or for every listed algorithm accepting KEY.")
@click.option("--protocol", type=click.Choice(["holdout", "repeated", "kfold"]),
              default="repeated", show_default=True,
              help="Fixed split, repeated random splits or stratified k-fold.")
@click.option("--repeats", type=click.IntRange(min=1), default=10, show_default=True,
              help="Random splits (repeated).")
@click.option("--test-size", type=click.FloatRange(0, 1, min_open=True, max_open=True),
              default=0.3, show_default=True, help="Test fraction of a split.")
@click.option("--folds", type=click.IntRange(min=2), default=10, show_default=True,
              help="Folds (kfold; at most the smallest class's size).")
@click.option("--stability-runs", type=click.IntRange(min=0), default=10, show_default=True,
              callback=lambda ctx, param, value: _stability_runs(value),
              help="Runs on random 4/5 subsamples for the stability measure (0: skip; else at "
                   "least 2).")
@click.option("--stability-weight", type=click.Choice(["su", "correlation"]), default="su",
              show_default=True, help="Edge weight of the matching: SU or |correlation|.")
@click.option("--permutations", type=click.IntRange(min=0), default=20, show_default=True,
              help="Random orders for the online mistake rate of instance-stream learners.")
@click.option("--one-vs-rest", "one_vs_rest", default=None, metavar="LABEL",
              help="Class against the rest for binary-only learners (OFS family, GDM) and "
                   "K-OFSD; default on multi-class data: the largest class (K-OFSD: the "
                   "smallest).")
@click.option("--baselines/--no-baselines", default=True, show_default=True,
              help="SelectKBest (f_classif, mutual_info_classif) at the same k.")
@click.option("--mi-bins", type=click.IntRange(min=2), default=None,
              help="Discretise continuous features into this many equal-frequency bins for "
                   "the mutual_info_classif baseline (default: its k-NN estimator; slow).")
@click.option("--time-budget", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Seconds per algorithm and loop; no new split/run starts after it.")
@click.option("--max-instances", type=click.IntRange(min=1), default=None,
              help="Evaluate on a stratified random subsample of this many instances.")
@click.option("--seed", default=0, show_default=True)
@LABEL_OPTION
@DROP_OPTION
@HEADER_OPTION
@GROUPS_OPTION
@click.option("--json", "json_out", default=None, metavar="FILE",
              help="Write the results as JSON lines (NDJSON, one line per algorithm, written "
                   "as each is done) to FILE ('-': stdout, no table).")
@click.option("--markdown", "md_out", default=None, metavar="FILE",
              help="Write the table as Markdown to FILE.")
@click.option("--plots", "plots_dir", default=None, metavar="DIR",
              help="Write accuracy_vs_features.png, mistake_rate.png, selection_size.png.")
@click.option("--progress/--no-progress", "show_progress", default=None,
              help="Progress bar on stderr  [default: when stderr is a terminal]")
def evaluate(data, algorithms, params, protocol, repeats, test_size, folds, stability_runs,
             stability_weight, permutations, one_vs_rest, baselines, mi_bins, time_budget,
             max_instances, seed, label, drop, header, groups_file, json_out, md_out, plots_dir,
             show_progress):
    """Evaluate selectors on DATA (a file, a dataset name or sklearn:NAME).

    Each algorithm selects on the training part of every split; 1-NN, a linear SVM and a
    decision tree are scored on the selected features (accuracy, AUC, G-mean), next to
    SelectKBest baselines at the same number of features. Also reported: selection time,
    redundancy rate RED, stability over 4/5 subsamples, and for OFS-like learners the online
    mistake rate over random orders.

    Defaults that depend on the data are written into each row's name: the SAOLA family runs
    with test=mi on discrete data (integers, each column spanning fewer than 10 values) and
    Fisher's z otherwise, as the paper does (select and produce take the algorithm's own
    default, fisher_z; -p test=... decides); gdm runs as batch GDM on each training split.
    """
    try:
        from .protocols import classifiers

        classifiers()
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise click.ClickException(
            f"{exc}; install the evaluation extra: pip install 'streamfs[eval]'") from None
    from streamfs.producers.names import load_named, rule_names

    if twice := sorted({a for a in algorithms if algorithms.count(a) > 1}):
        from streamfs.cli.errors import UsageProblem

        raise UsageProblem(f"--algorithm {twice[0]} given twice: its rows would be the same "
                           "run (one setting per algorithm: -p ALGORITHM:KEY=VALUE)")
    _check_writable(md_out, plots_dir)  # before the run, not after it (the output was lost)
    for line in _ignored_options(protocol, algorithms, baselines, stability_runs):
        click.echo(f"warning: {line}", err=True)
    json_fh: Any = None
    try:
        with _progress(show_progress) as progress, contextlib.ExitStack() as stack:
            progress(f"loading {data}", 0)
            X, y, names, naming = load_named(data, label=label, header=header, drop=drop)
            names = names or rule_names(naming, X.shape[1])  # as `select` and the worker name them
            per_algo = parse_params(list(algorithms), list(params))
            groups = None
            if groups_file is not None:
                from streamfs.producers.files import check_groups, read_groups

                groups = read_groups(groups_file)
                check_groups(groups, X.shape[1], groups_file)
            # a file or stdout that cannot be written (a full disk, no permission): one
            # line, not a traceback. The file is unbuffered, so that closing it after a write
            # that failed has nothing left to write and fails no second time
            if json_out and json_out != "-":
                with writing_output(json_out):
                    Path(json_out).parent.mkdir(parents=True, exist_ok=True)
                    json_fh = stack.enter_context(open(json_out, "wb", buffering=0))

            def done(partial: dict, entry: dict) -> None:
                line = json_line(partial, entry) + "\n"
                if json_out == "-":
                    with writing_output():
                        sys.stdout.write(line)
                        sys.stdout.flush()
                elif json_fh is not None:
                    rest = memoryview(line.encode())
                    with writing_output(json_out):
                        while rest:  # a raw write may take part of it
                            rest = rest[json_fh.write(rest):]

            result = evaluate_dataset(
                X, y, [(a, per_algo[a]) for a in algorithms], data_name=data,
                protocol=protocol, n_repeats=repeats, test_size=test_size, n_folds=folds,
                stability=stability_runs, stability_weight=stability_weight,
                n_permutations=permutations, one_vs_rest=one_vs_rest, baselines=baselines,
                time_budget=float("inf") if time_budget is None else time_budget,
                max_instances=max_instances, seed=seed, traces=plots_dir is not None,
                curve_ks=_ks(X.shape[1]) if plots_dir is not None else None, mi_bins=mi_bins,
                feature_names=names, groups=groups, progress=progress, on_algorithm=done,
            )
    except (ValueError, FileNotFoundError) as exc:
        from streamfs.algorithms.registry import LabelError
        from streamfs.cli.errors import UsageProblem
        from streamfs.producers.files import label_column_note

        # the column taken as the label in place of one not given is the likely cause
        note = label_column_note(data, label, header) if isinstance(exc, LabelError) else ""
        raise UsageProblem(f"{exc}{note}") from None
    if json_out != "-":
        from rich.console import Group
        from rich.text import Text

        with writing_output():  # a full disk: one line, not a traceback
            print_rich(Group(rich_table(result),
                             *(Text(line) for line in selected_lines(result))))
    if md_out:
        with writing_output(md_out):
            Path(md_out).parent.mkdir(parents=True, exist_ok=True)
            with open(md_out, "w") as fh:
                fh.write(describe(result) + "\n\n" + markdown_table(COLUMNS, rows(result))
                         + "\n")
    if plots_dir:
        with writing_output(plots_dir):
            paths = plot(result, plots_dir)
        with writing_output():
            for path in paths:
                click.echo(f"wrote {path}", err=json_out == "-")


def _ignored_options(protocol: str, algorithms: tuple[str, ...], baselines: bool,
                     stability_runs: int) -> list[str]:
    """A line for each option given on the command line that this run does not use (a
    ``--folds 5`` with the default protocol ran 10 random splits without a word)."""
    from streamfs.algorithms.registry import ALGORITHMS

    given = click.get_current_context().get_parameter_source
    # (an unknown name is refused later, with the known ones)
    instances = any(a not in ALGORITHMS or ALGORITHMS[a].kind == "instances" for a in algorithms)
    unused = {
        "repeats": (protocol != "repeated", f"--protocol {protocol}", "repeated"),
        "test_size": (protocol == "kfold", "--protocol kfold", "holdout and repeated"),
        "folds": (protocol != "kfold", f"--protocol {protocol}", "kfold"),
        "mi_bins": (not baselines, "--no-baselines", "the mutual_info_classif baseline"),
        "stability_weight": (stability_runs == 0, "--stability-runs 0", "the stability measure"),
        "permutations": (not instances,
                         "feature-stream algorithms only", "instance-stream learners"),
    }
    return [f"--{name.replace('_', '-')} is ignored with {why}: it is for {what}"
            for name, (ignored, why, what) in unused.items()
            if ignored and given(name) is click.core.ParameterSource.COMMANDLINE]


def _check_writable(md_out: str | None, plots_dir: str | None) -> None:
    """One line and exit 1 now, not after the run, for a ``--markdown`` file or ``--plots``
    directory that cannot be written (a file that did not exist is not left behind)."""
    import errno

    if md_out:
        with writing_output(md_out):
            path = Path(md_out)
            path.parent.mkdir(parents=True, exist_ok=True)
            existed = path.exists()
            open(path, "a").close()
            if not existed:
                path.unlink()
    if plots_dir:
        with writing_output(plots_dir):
            if Path(plots_dir).exists() and not Path(plots_dir).is_dir():
                raise NotADirectoryError(errno.ENOTDIR, "a file, not a directory for the plots",
                                         plots_dir)
            Path(plots_dir).mkdir(parents=True, exist_ok=True)


def _stability_runs(value: int) -> int:
    """``--stability-runs``: 0 skips the measure, which compares runs, so one run is refused
    (it was skipped without a word)."""
    if value == 1:
        raise click.BadParameter("1 run: the measure compares 2 or more (0 skips it)")
    return value


@contextlib.contextmanager
def _progress(show: bool | None) -> Iterator[Progress]:
    """A :data:`~streamfs.evaluation.runner.Progress` callback drawing a rich progress bar
    on stderr: when ``show`` is None, only if stderr is a terminal; True forces it."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress as Bar,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    console = Console(stderr=True, force_terminal=True if show else None)
    if not (console.is_terminal if show is None else show):
        yield lambda description, advance: None
        return
    bar = Bar(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
              MofNCompleteColumn(), TextColumn("units"), TimeElapsedColumn(),
              TextColumn("eta"), TimeRemainingColumn(), console=console,
              redirect_stdout=False, redirect_stderr=False)  # stdout may carry the JSON lines
    task = bar.add_task("evaluate", total=None)

    def update(description: str | None, advance: int) -> None:
        if description == "start":
            bar.update(task, total=advance)
            return
        if description is not None:
            bar.update(task, description=description)
        if advance:
            bar.advance(task, advance)

    with bar:
        yield update


def _ks(p: int) -> list[int]:
    """Feature counts for the accuracy-vs-k curve: 1, 2, 3, 5, 8, 10, 15, 20, 30, 50, ...

    >>> _ks(40)
    [1, 2, 3, 5, 8, 10, 15, 20, 30, 40]
    """
    grid = [1, 2, 3, 5, 8, 10, 15, 20, 30, 50, 75, 100, 150, 200]
    return [k for k in grid if k < p] + [min(p, 200)] if p > 0 else []


if __name__ == "__main__":  # pragma: no cover
    evaluate()
