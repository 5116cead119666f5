"""``streamfs select``: an algorithm run offline on a file (no Kafka)."""

from __future__ import annotations

import click

from streamfs.cli.data import _check_open, _groups, _load_data
from streamfs.cli.errors import UsageProblem
from streamfs.cli.group import main
from streamfs.cli.options import (ALGORITHMS_HELP, DROP_OPTION, GROUPS_OPTION, HEADER_OPTION,
                                  LABEL_OPTION, N_FEATURES_OPTION, SHUFFLE_SEED_OPTION,
                                  ZERO_BASED_OPTION)
from streamfs.cli.output import _print_results
from streamfs.cli.params import PARAM_HELP, _parse_params
from streamfs.cli.settings_help import OFFLINE_READS, SettingsCommand
from streamfs.compile_notice import COMPILING, notice_while_compiling


@main.command(cls=SettingsCommand, reads=OFFLINE_READS)
@click.argument("source")
@click.option("--algorithm", "-a", required=True, help=ALGORITHMS_HELP)
@click.option("--param", "-p", multiple=True, metavar="KEY=VALUE", help=PARAM_HELP)
@LABEL_OPTION
@DROP_OPTION
@HEADER_OPTION
@N_FEATURES_OPTION
@ZERO_BASED_OPTION
@GROUPS_OPTION
@SHUFFLE_SEED_OPTION
@click.option("--as-stream", "as_stream", default="offline", show_default=True, metavar="ID",
              help="Run as the worker runs stream ID: the random learners (ofs-partial, rand, "
              "ofs-rand, pe-rand) without a random_state are seeded from the stream id, so the "
              "result is the worker's final one for stream ID on the same data and parameters "
              "(and --shuffle-seed, which changes the order of the columns).")
@click.option("--json", "as_json", is_flag=True, help="The result as one line of JSON.")
def select(source: str, algorithm: str, param: tuple[str, ...], label: str | None,
           drop: tuple[str, ...], header: bool | None, n_features: int | None,
           zero_based: bool | None, groups_file: str | None, shuffle_seed: int | None,
           as_stream: str, as_json: bool) -> None:
    """Run an algorithm offline on SOURCE (no Kafka) and print the selection.

    SOURCE is a file (.npz, .npy, .csv/.tsv, LIBSVM .svm/.libsvm/.svmlight/.txt, .mat v5 or
    v7.3, .parquet), a dataset name from $STREAMFS_DATASETS, or `sklearn:breast_cancer`. The
    selection is the worker's final one for the same data, parameters and column order: it
    runs the messages `produce` would publish through the worker's own code.
    """
    from streamfs.algorithms import registry
    from streamfs.algorithms.opening import check_stream_id
    from streamfs.offline import offline_params, run_offline
    from streamfs.producers.checks import check_groups_apply

    try:
        check_stream_id(as_stream)
    except ValueError as exc:
        raise UsageProblem(f"--as-stream: {exc}") from None
    params = _parse_params(param)
    try:
        kind = registry.get(algorithm).kind
        check_groups_apply(algorithm, groups_file, "--groups FILE")
        if kind == "instances" and shuffle_seed is not None:
            raise ValueError("--shuffle-seed applies to feature streams only")
    except ValueError as exc:
        raise UsageProblem(str(exc)) from None
    X, y, names, naming = _load_data(source, label, header, n_features,
                                     "auto" if zero_based is None else zero_based, drop)
    groups = _groups(groups_file, X.shape[1])
    params = _check_open(kind, algorithm, offline_params(algorithm, params, X.shape[0]),
                         n_features=X.shape[1], y=y, X=X, names=names, source=source,
                         label=label, header=header, naming=naming)
    params.pop("n_features", None)
    from streamfs.producers.errors import InputDataError  # (the package imports scikit-learn)

    try:
        with notice_while_compiling(lambda m: click.echo(m, err=True),
                                    COMPILING.format(what="up to 20 s")):
            result = run_offline(algorithm, X, y, params, stream=as_stream, groups=groups,
                                 feature_names=names, naming=naming, shuffle_seed=shuffle_seed)
    except InputDataError as exc:  # the data's fault: say whose
        raise UsageProblem(f"{source}: {exc}") from None
    except ValueError as exc:
        raise UsageProblem(str(exc)) from None
    _print_results([result], as_json)
