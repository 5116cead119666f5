"""The ``streamfs`` command line."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import click

from streamfs import __version__
from streamfs.settings import Settings


def _parse_params(pairs: tuple[str, ...]) -> dict[str, Any]:
    """``k=v`` pairs; values are parsed as JSON when they can be (numbers, null, true...)."""
    params: dict[str, Any] = {}
    for pair in pairs:
        if "=" not in pair:
            raise click.BadParameter(f"expected key=value, got {pair!r}", param_hint="--param")
        key, value = pair.split("=", 1)
        try:
            params[key] = json.loads(value)
        except json.JSONDecodeError:
            params[key] = value
    return params


def _settings(ctx: click.Context) -> Settings:
    return ctx.obj["settings"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--bootstrap-servers", "-b", envvar="STREAMFS_BOOTSTRAP_SERVERS",
              help="Kafka bootstrap servers (env STREAMFS_BOOTSTRAP_SERVERS).")
@click.option("--topic-prefix", envvar="STREAMFS_TOPIC_PREFIX",
              help="Prefix of every topic name (default 'streamfs.').")
@click.pass_context
def main(ctx: click.Context, bootstrap_servers: str | None, topic_prefix: str | None) -> None:
    """streamfs: online feature selection on Kafka streams."""
    ctx.obj = {"settings": Settings.from_env(bootstrap_servers=bootstrap_servers,
                                             topic_prefix=topic_prefix)}


@main.command()
def version() -> None:
    """Print the version."""
    click.echo(__version__)


@main.command()
@click.option("--app-id", envvar="STREAMFS_APP_ID", help="Consumer group / app id.")
@click.option("--web-port", type=int, envvar="STREAMFS_WEB_PORT",
              help="Port of /health and /metrics (default 6066).")
@click.option("--log-level", default="info", show_default=True, envvar="STREAMFS_LOG_LEVEL")
@click.pass_context
def worker(ctx: click.Context, app_id: str | None, web_port: int | None, log_level: str) -> None:
    """Run the stream-processing worker until interrupted."""
    from streamfs.worker.app import run_worker

    settings = _settings(ctx)
    if app_id:
        settings.app_id = app_id
    if web_port:
        settings.web_port = web_port
    settings.log_level = log_level
    # The effective settings go to the environment: a worker that restarts itself after a stall
    # (os.execv) must come back with the same configuration.
    os.environ.update({"STREAMFS_BOOTSTRAP_SERVERS": settings.bootstrap_servers,
                       "STREAMFS_TOPIC_PREFIX": settings.topic_prefix,
                       "STREAMFS_APP_ID": settings.app_id,
                       "STREAMFS_WEB_PORT": str(settings.web_port),
                       "STREAMFS_LOG_LEVEL": settings.log_level})
    sys.argv = [sys.argv[0]]  # faust's Worker reads argv; keep our flags away from it
    run_worker(settings)


@main.group()
def topics() -> None:
    """Manage the topics of the catalogue (topics/catalogue.toml)."""


@topics.command("create")
@click.pass_context
def topics_create(ctx: click.Context) -> None:
    """Create the catalogue's topics that do not exist yet (idempotent)."""
    from streamfs.topics import create_topics, load_catalogue

    s = _settings(ctx)
    for name, outcome in sorted(create_topics(s.kafka_config(), load_catalogue(s.topic_prefix)).items()):
        click.echo(f"{name}: {outcome}")


@topics.command("describe")
@click.pass_context
def topics_describe(ctx: click.Context) -> None:
    """Print the catalogue with the resolved topic names."""
    from streamfs.topics import load_catalogue

    for role, spec in load_catalogue(_settings(ctx).topic_prefix).items():
        click.echo(f"{role:12} {spec.name:32} partitions={spec.partitions} "
                   f"{' '.join(f'{k}={v}' for k, v in spec.config.items())}")
        click.echo(f"{'':12} {spec.description}")


def _load_data(source: str, label: str | None) -> tuple[Any, Any]:
    from streamfs.producers.errors import InputFileError
    from streamfs.producers.files import load_file

    try:
        return load_file(source, label=label)
    except InputFileError as exc:
        raise InputFileProblem(str(exc)) from None


class InputFileProblem(click.ClickException):
    """A bad input file: exit code 2 (1 is left for Kafka failures)."""

    exit_code = 2


@main.command()
@click.argument("kind", type=click.Choice(["features", "instances"]))
@click.argument("source")
@click.option("--stream", "stream_id", required=True, help="Stream id (the record key).")
@click.option("--algorithm", "-a", required=True, help="Algorithm name (see `streamfs select --help`).")
@click.option("--param", "-p", multiple=True, help="Algorithm parameter key=value (repeatable).")
@click.option("--label", help="Label column (name or index) for CSV/TSV/Parquet/.npy files "
              "(default the last), or a .npy file of labels.")
@click.option("--header/--no-header", default=None,
              help="Whether a CSV/TSV file has a header row (default: detect).")
@click.option("--block-bytes", type=click.IntRange(min=1), default=None,
              help="Payload budget per message (default 900 KiB).")
@click.option("--shuffle-seed", type=int, default=None,
              help="Features: send the columns in a seeded random order (blocks carry `columns`).")
@click.option("--groups", "groups_file", type=click.Path(dir_okay=False),
              help="Features: JSON list of lists of column indices (group-saola groups).")
@click.option("--rate", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Replay speed: instances/s (instance streams) or features/s (feature streams).")
@click.option("--n-features", type=click.IntRange(min=1), default=None,
              help="LIBSVM: d; without it a first pass over the file finds the largest index.")
@click.option("--progress/--no-progress", default=None,
              help="Progress bar on stderr (default: when stderr is a terminal).")
@click.pass_context
def produce(ctx: click.Context, kind: str, source: str, stream_id: str, algorithm: str,
            param: tuple[str, ...], label: str | None, header: bool | None,
            block_bytes: int | None, shuffle_seed: int | None, groups_file: str | None,
            rate: float | None, n_features: int | None, progress: bool | None) -> None:
    """Publish SOURCE as a feature or instance stream.

    SOURCE is a file (.npz, .npy, .csv/.tsv, LIBSVM .svm/.libsvm/.svmlight/.txt, .mat v5 or
    v7.3, .parquet), a dataset name from $STREAMFS_DATASETS, or `sklearn:breast_cancer`.
    Instance streams read CSV/TSV, LIBSVM, .npy and Parquet files incrementally (bounded
    memory); feature streams load the file whole. Exit code 2 for a bad input file, 1 if
    Kafka did not take every message.
    """
    from confluent_kafka import KafkaException

    from streamfs.producers import DEFAULT_BLOCK_BYTES, DeliveryError
    from streamfs.producers.blocks import feature_stream_messages, instance_messages_from_chunks
    from streamfs.producers.errors import InputFileError
    from streamfs.producers.files import check_groups, load_file, read_groups
    from streamfs.producers.publish import rows_per_message, send_messages
    from streamfs.producers.sources import open_instances
    from streamfs.topics import load_catalogue

    s = _settings(ctx)
    params = _parse_params(param)
    budget = block_bytes or DEFAULT_BLOCK_BYTES
    if kind == "instances" and (shuffle_seed is not None or groups_file):
        raise click.UsageError("--shuffle-seed and --groups apply to feature streams only")
    show = sys.stderr.isatty() if progress is None else progress
    counts = {"items": 0, "messages": 0}
    try:
        if kind == "features":
            X, y = load_file(source, label=label, header=header, n_features=n_features)
            groups = read_groups(groups_file) if groups_file else None
            if groups is not None:
                check_groups(groups, X.shape[1], groups_file)
            messages = feature_stream_messages(stream_id, X, y, algorithm, params, groups=groups,
                                               block_bytes=budget, shuffle_seed=shuffle_seed)
            total, unit = X.shape[1], "columns"
            shape = f"{X.shape[0]}x{X.shape[1]}"
            position = None
        else:
            src = open_instances(source, label=label, header=header, n_features=n_features)
            messages = instance_messages_from_chunks(
                stream_id, src.chunks(), src.n_features, algorithm, params,
                feature_names=src.feature_names, block_bytes=budget,
                max_rows=rows_per_message(rate))
            total, unit = src.progress()[1], src.unit
            shape = f"d={src.n_features}"
            position = src.progress
        topic = load_catalogue(s.topic_prefix)[kind].name

        def count(message: dict) -> None:
            counts["messages"] += 1
            if message["kind"] in ("features", "instances"):
                counts["items"] += message["X"].shape[1 if kind == "features" else 0]

        what = "columns" if kind == "features" else "instances"
        with _progress_bar(show, f"{stream_id} → {topic}", total, unit, what) as advance:
            def on_message(message: dict) -> None:
                count(message)
                advance(position()[0] if position else counts["items"], counts["items"])

            n = send_messages(messages, s.kafka_config(), topic, rate=rate, on_message=on_message)
    except InputFileError as exc:
        sent = counts["messages"]
        note = (f" ({sent} message(s) of stream {stream_id!r} were already published; it stays "
                f"open without 'close')") if sent else ""
        raise InputFileProblem(f"{exc}{note}") from None
    except (FileNotFoundError, IsADirectoryError, PermissionError) as exc:
        raise InputFileProblem(f"{exc.filename}: {exc.strerror}") from None
    except DeliveryError as exc:
        raise click.ClickException(f"Kafka did not take the stream {stream_id!r}: {exc}") from None
    except KafkaException as exc:
        raise click.ClickException(f"Kafka client error: {exc}") from None
    click.echo(f"published {n} messages ({counts['items']} {what}, {shape}) of stream "
               f"{stream_id!r} to {topic}")


def _progress_bar(show: bool, description: str, total: int | None, unit: str, items: str):
    """A context manager yielding ``advance(completed, items_sent)``; a no-op when hidden.

    Files advance by bytes read (the reader runs at most one chunk ahead of sending), in-memory
    data by rows or columns sent.
    """
    from contextlib import contextmanager

    @contextmanager
    def bar():
        if not show:
            yield lambda completed, sent: None
            return
        from rich.console import Console
        from rich.progress import (BarColumn, DownloadColumn, MofNCompleteColumn, Progress,
                                   TextColumn, TimeElapsedColumn, TimeRemainingColumn,
                                   TransferSpeedColumn)

        amount = ([DownloadColumn(), TransferSpeedColumn()] if unit == "bytes"
                  else [MofNCompleteColumn()])
        with Progress(TextColumn("{task.description}"), BarColumn(), *amount,
                      TextColumn("{task.fields[sent]:,} " + items), TimeElapsedColumn(),
                      TimeRemainingColumn(), console=Console(stderr=True)) as prog:
            task = prog.add_task(description, total=total, sent=0)
            yield lambda completed, sent: prog.update(task, completed=completed, sent=sent)

    return bar()


def _print_results(results: list[dict], as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(results, default=str, indent=1))
        return
    from rich.console import Console
    from rich.table import Table

    console = Console()
    for r in results:
        title = (f"{r['stream']} · {r['algorithm']} · v{r['version']}"
                 f"{' · final' if r.get('final') else ''} · {r.get('counters', {})}")
        table = Table(title=title)
        for col in ("#", "feature", "score", "affiliated"):
            table.add_column(col)
        for i, item in enumerate(r["selection"]):
            aff = ", ".join(str(a[0]) for a in item.get("affiliated", [])[:8])
            more = len(item.get("affiliated", [])) - 8
            table.add_row(str(i), str(item["feature"]), f"{item['score']:.4g}",
                          aff + (f" (+{more})" if more > 0 else ""))
        console.print(table)


@main.command()
@click.argument("stream", required=False)
@click.option("--once", is_flag=True, help="Print the current selections and exit.")
@click.option("--json", "as_json", is_flag=True, help="JSON output.")
@click.option("--until-final", is_flag=True, help="Exit after the final result of STREAM.")
@click.option("--timeout", type=float, default=None, help="Give up after this many seconds.")
@click.pass_context
def watch(ctx: click.Context, stream: str | None, once: bool, as_json: bool,
          until_final: bool, timeout: float | None) -> None:
    """Show selections from the selected-features topic (all streams, or STREAM)."""
    from streamfs.client import SelectionReader
    from streamfs.topics import load_catalogue

    s = _settings(ctx)
    topic = load_catalogue(s.topic_prefix)["selected"].name
    with SelectionReader(s.kafka_config(), topic) as reader:
        if once:
            latest = reader.current_selections()
            results = [latest[k] for k in sorted(latest) if stream is None or k == stream]
            if not results:
                click.echo(f"no selection yet for {stream or 'any stream'}", err=True)
                sys.exit(1)
            _print_results(results, as_json)
            return
        try:
            last = None
            for result in reader.updates(stream, until_final=until_final, timeout=timeout):
                last = result
                _print_results([result], as_json)
        except TimeoutError as exc:
            click.echo(str(exc), err=True)
            sys.exit(3)
        if until_final and last is None:
            sys.exit(1)


@main.command()
@click.argument("source")
@click.option("--algorithm", "-a", required=True)
@click.option("--param", "-p", multiple=True, help="Algorithm parameter key=value (repeatable).")
@click.option("--label", help="Label column (name or index) for CSV/Parquet files.")
@click.option("--json", "as_json", is_flag=True)
def select(source: str, algorithm: str, param: tuple[str, ...], label: str | None,
           as_json: bool) -> None:
    """Run an algorithm offline on SOURCE (no Kafka) and print the selection."""
    from streamfs.offline import run_offline

    X, y = _load_data(source, label)
    try:
        result = run_offline(algorithm, X, y, _parse_params(param))
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    _print_results([result], as_json)


def _attach_commands() -> None:
    from streamfs.bench.command import bench
    from streamfs.evaluation.command import evaluate

    main.add_command(bench)
    main.add_command(evaluate)


_attach_commands()

if __name__ == "__main__":
    main()
