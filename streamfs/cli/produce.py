"""``streamfs produce``: a file published as a feature or instance stream."""

from __future__ import annotations

import math
import shlex
import signal
import sys
import warnings
from typing import Any

import click

from streamfs.broker import (AccessDenied, ClientConfigRefused, interrupting_signal,
                             remember_interrupts)
from streamfs.cli.advice import _hold_advice, _release_advice
from streamfs.cli.broker_checks import _reachable, _warn_without_worker
from streamfs.cli.data import _check_open, _groups, _labels_refused, _load_data, _said
from streamfs.cli.errors import UsageProblem
from streamfs.cli.group import _settings, main
from streamfs.cli.options import (ALGORITHMS_HELP, DROP_OPTION, GROUPS_OPTION, HEADER_OPTION,
                                  LABEL_OPTION, N_FEATURES_OPTION, SHUFFLE_SEED_OPTION,
                                  ZERO_BASED_OPTION, EnvOption)
from streamfs.cli.params import PARAM_HELP, _parse_params
from streamfs.cli.progress import _progress_bar
from streamfs.cli.settings_help import CLIENT_READS, SettingsCommand
from streamfs.settings import Settings


def _instance_params(src: Any, source: str, algorithm: str, params: dict,
                     record_limit: int, block_bytes: int | None, label: str | None,
                     header: bool | None, buffer_cap: int | None = None
                     ) -> tuple[dict, Any]:
    """The parameters of an instance stream and the chunks to publish, its source's values and
    labels (and rows, against the ``--block-bytes`` given) checked as the worker checks them,
    in a pass over the file ahead of publishing (exit 2 naming the rows, features or labels;
    see :func:`~streamfs.producers.checks.check_instance_source`)."""
    from streamfs.algorithms.registry import LabelError
    from streamfs.producers.checks import check_instance_source
    from streamfs.producers.errors import BlockBytesTooSmall, InputDataError, InputFileError

    try:
        return check_instance_source(src, algorithm, params, record_limit, block_bytes,
                                     buffer_cap)
    except BlockBytesTooSmall as exc:
        raise UsageProblem(_said(exc)) from None
    except InputFileError:
        raise  # it names the file and the line already
    except LabelError as exc:  # of a chunk, or of the whole file
        raise _labels_refused(exc, source, label, header) from None
    except InputDataError as exc:  # the data's fault: say whose
        raise UsageProblem(f"{source}: {exc}") from None
    except ValueError as exc:
        raise UsageProblem(str(exc)) from None


def _warn_row_ids(source: str, src: Any) -> None:
    """Warn of feature columns of an instance stream's ``src`` that look like row ids (see
    :func:`~streamfs.producers.files.row_id_warnings`), judged on its first chunk of rows."""
    from streamfs.producers.files import row_id_warnings

    if src.feature_names:
        X, _ = next(iter(src.chunks()))
        for said in row_id_warnings(source, X, src.feature_names):
            warnings.warn(said, UserWarning, stacklevel=2)


def _existing_stream(settings: Settings, stream_id: str) -> dict | None:
    """The latest result of ``stream_id`` on the selected-features topic, if it has one."""
    from streamfs.producers.checks import existing_stream
    from streamfs.topics import load_catalogue

    topic = load_catalogue(settings.topic_prefix)["selected"].name
    return existing_stream(settings.kafka_config(), topic, stream_id)


def _finite_rate(ctx: click.Context, param: click.Parameter, value: float | None
                 ) -> float | None:
    """--rate: FloatRange lets inf and nan through (an OverflowError traceback, or a bare
    "cannot convert float NaN to integer", once the file was read)."""
    if value is not None and not math.isfinite(value):
        raise click.BadParameter(f"{value} is not a finite number of items per second", ctx,
                                 param)
    return value


#: what to do with a stream whose publish stopped part way
_LEFT_OPEN = "{}publish it again with --replace, or under another --stream"


@main.command(cls=SettingsCommand, reads=CLIENT_READS | {
    "app_id", "max_message_bytes", "STREAMFS_DATASETS"})
@click.argument("kind", type=click.Choice(["features", "instances"]))
@click.argument("source")
@click.option("--stream", "stream_id", required=True, help="Stream id (the record key).")
@click.option("--algorithm", "-a", required=True, help=ALGORITHMS_HELP)
@click.option("--param", "-p", multiple=True, metavar="KEY=VALUE", help=PARAM_HELP)
@LABEL_OPTION
@DROP_OPTION
@HEADER_OPTION
@click.option("--block-bytes", type=click.IntRange(min=1), default=None,
              help="Payload budget per message, at least one column (feature streams) or "
              "instance (instance streams) of the data (default: 7/8 of what the topic and "
              "the worker accept, at most 4 MiB; 900 KiB when the topic's limit cannot be "
              "read).")
@SHUFFLE_SEED_OPTION
@GROUPS_OPTION
@click.option("--rate", type=click.FloatRange(min=0, min_open=True), default=None,
              callback=_finite_rate,
              help="Replay speed: instances/s (instance streams) or features/s (feature streams).")
@N_FEATURES_OPTION
@ZERO_BASED_OPTION
@click.option("--replace", is_flag=True,
              help="Start a new run of an existing stream id (results continue with the next "
              "version and carry the run number). Without it, an existing id is refused.")
@click.option("--progress/--no-progress", default=None,
              help="Progress bar on stderr (default: when stderr is a terminal).")
@click.option("--app-id", cls=EnvOption, envvar="STREAMFS_APP_ID", default=None,
              help="The workers' consumer group, to warn when none is running.")
@click.pass_context
def produce(ctx: click.Context, kind: str, source: str, stream_id: str, algorithm: str,
            param: tuple[str, ...], label: str | None, drop: tuple[str, ...],
            header: bool | None, block_bytes: int | None, shuffle_seed: int | None,
            groups_file: str | None, rate: float | None, n_features: int | None,
            zero_based: bool | None, replace: bool, progress: bool | None,
            app_id: str | None) -> None:
    """Publish SOURCE as a feature or instance stream.

    SOURCE is a file (.npz, .npy, .csv/.tsv, LIBSVM .svm/.libsvm/.svmlight/.txt, .mat v5 or
    v7.3, .parquet), a dataset name from $STREAMFS_DATASETS, or `sklearn:breast_cancer`.
    Instance streams read CSV/TSV, LIBSVM, .npy and Parquet files incrementally (bounded
    memory); feature streams load the file whole.

    Before publishing anything it checks what the worker would refuse: the algorithm and the
    kind of stream it consumes, its parameters (names, types, ranges), the labels (two classes
    at least; exactly two for the OFS family; instance files are read once more for this),
    and whether the stream id exists already (see --replace). Exit codes: see `streamfs -h`;
    0 means published: `streamfs watch ID --until-final` says whether the worker accepted it.
    """
    from confluent_kafka import KafkaException

    from streamfs.algorithms import registry
    from streamfs.algorithms.registry import LabelError
    from streamfs.producers import DeliveryError
    from streamfs.producers.blocks import (block_budget, feature_stream_messages,
                                           instance_messages_from_chunks, largest_column_bytes)
    from streamfs.producers.checks import (check_block_bytes, check_budget, check_groups_apply,
                                           check_input_topic, continuing, exists_problem)
    from streamfs.producers.errors import (BlockBytesTooSmall, PublishInterrupted,
                                           StreamLeftOpen, left_open_message)
    from streamfs.producers.names import naming_rule
    from streamfs.producers.publish import items_per_message, send_messages, topic_record_limit
    from streamfs.producers.sources import open_instances
    from streamfs.topics import load_catalogue

    from streamfs.algorithms.opening import check_buffer_cap, check_stream_id

    # `timeout`, a CI's cancel and systemd send SIGTERM: say what was published, as for Ctrl-C
    remember_interrupts(signal.SIGTERM)
    s = _settings(ctx)
    try:
        check_stream_id(stream_id)
    except ValueError as exc:
        raise UsageProblem(f"--stream: {exc}") from None
    params = _parse_params(param)
    topic = load_catalogue(s.topic_prefix)[kind].name
    record_limit = s.max_message_bytes  # the worker's; the topic's is asked once data is read

    def budget() -> int:
        """--block-bytes, else what the topic and the worker accept (asked once the data
        passed its checks: a broken file is reported before an unreachable broker); the
        record limit becomes the lower of the topic's and the worker's."""
        nonlocal record_limit
        _reachable(s)
        limit = topic_record_limit(s.kafka_config(), topic, s.max_message_bytes)
        check_input_topic(s.kafka_config(), topic)  # TopicMismatch: exit 1 (_Main)
        record_limit = limit or record_limit
        check_block_bytes(block_bytes, record_limit)  # --block-bytes over the topic's limit
        return block_bytes or block_budget(limit)

    zb: bool | str = "auto" if zero_based is None else zero_based
    if kind == "instances" and (shuffle_seed is not None or groups_file):
        raise click.UsageError("--shuffle-seed and --groups apply to feature streams only")
    try:
        registry.get(algorithm)  # an unknown name is refused before the file is read
        check_buffer_cap(params, s.max_buffer_bytes)  # the worker's cap on the 'open'
        check_groups_apply(algorithm, groups_file, "--groups FILE")
        check_block_bytes(block_bytes, record_limit)
    except ValueError as exc:
        raise UsageProblem(_said(exc)) from None
    show = sys.stderr.isatty() if progress is None else progress
    counts = {"items": 0, "messages": 0}
    _hold_advice()  # shown once every check has passed (the stream id's is the last)
    # the worker's cap: a lower one than the algorithms' default bounds streams that set none
    open_kw = {"replace": replace, "buffer_cap": s.max_buffer_bytes}
    try:
        if kind == "features":
            X, y, names, naming = _load_data(source, label, header, n_features, zb, drop)
            params = _check_open(kind, algorithm, params, y=y, X=X, names=names, source=source,
                                 label=label, header=header, advise=True,
                                 buffer_cap=s.max_buffer_bytes, naming=naming)
            groups = _groups(groups_file, X.shape[1])
            try:  # a column alone over it would go in a message of its own, over the budget
                check_budget(block_bytes, largest_column_bytes(
                    X, feature_names=names, groups=groups, shuffle_seed=shuffle_seed), "column")
            except BlockBytesTooSmall as exc:
                raise UsageProblem(_said(exc)) from None
            budget_bytes = budget()  # before record_limit is read below
            messages = feature_stream_messages(stream_id, X, y, algorithm, params, groups=groups,
                                               block_bytes=budget_bytes, shuffle_seed=shuffle_seed,
                                               feature_names=names, naming=naming,
                                               record_limit=record_limit,
                                               max_columns=items_per_message(rate), **open_kw)
            total, unit = X.shape[1], "columns"
            shape = f"{X.shape[0]}x{X.shape[1]}"
            position = None
        else:
            src = open_instances(source, label=label, header=header, n_features=n_features,
                                 zero_based=zb, drop=drop)
            params, chunks = _instance_params(src, source, algorithm, params, record_limit,
                                              block_bytes, label, header, s.max_buffer_bytes)
            _warn_row_ids(source, src)
            budget_bytes = budget()  # before record_limit is read below
            messages = instance_messages_from_chunks(
                stream_id, chunks, src.n_features, algorithm, params,
                feature_names=src.feature_names, block_bytes=budget_bytes,
                max_rows=items_per_message(rate), record_limit=record_limit,
                naming=naming_rule(source, getattr(src, "index_base", None)), **open_kw)
            total, unit = src.progress()[1], src.unit
            shape = f"d={src.n_features}"
            position = src.progress
        existing = _existing_stream(s, stream_id)
        problem = exists_problem(stream_id, existing, kind, "another --stream", "--replace",
                                 replace)
        if problem is not None:
            raise UsageProblem(problem)
        _release_advice()

        def count(message: dict) -> None:
            counts["messages"] += 1
            if message["kind"] in ("features", "instances"):
                counts["items"] += message["X"].shape[1 if kind == "features" else 0]

        what = "columns" if kind == "features" else "instances"
        with _progress_bar(show, f"{stream_id} → {topic}", total, unit, what) as advance:
            def on_message(message: dict) -> None:
                count(message)
                advance(position()[0] if position else counts["items"], counts["items"])

            n = send_messages(continuing(messages, existing), s.kafka_config(), topic,
                              rate=rate, on_message=on_message, record_limit=record_limit)
    except StreamLeftOpen as exc:
        cause = exc.__cause__
        data_fault = isinstance(cause, ValueError)  # else Kafka's: exit 1
        if isinstance(cause, LabelError):  # a later chunk's: say whose, and which column
            cause = _labels_refused(cause, source, label, header).message
        elif isinstance(cause, ValueError):
            cause = _said(cause)
        note = left_open_message(cause, stream_id, exc.messages_sent, _LEFT_OPEN.format(
            "once the file is fixed, " if data_fault else ""), exc.delivered_after)
        if data_fault:
            raise UsageProblem(note) from None
        if isinstance(cause, AccessDenied):  # an ACL revoked part way: exit 77 (_Main)
            raise AccessDenied(note) from None
        raise click.ClickException(f"Kafka did not take the stream {stream_id!r}: {note}") \
            from None
    except LabelError as exc:  # the first chunk's, with -p classes (no pass over the file)
        raise _labels_refused(exc, source, label, header) from None
    except ValueError as exc:  # data, labels or limits the worker would refuse: nothing sent
        raise UsageProblem(_said(exc)) from None
    except (FileNotFoundError, IsADirectoryError, PermissionError) as exc:
        raise UsageProblem(f"{exc.filename}: {exc.strerror}") from None
    except KeyboardInterrupt as exc:
        # what the broker acknowledged once the publish settled; the count of messages
        # handed over if the signal came before or during that
        sent = exc.messages_sent if isinstance(exc, PublishInterrupted) else counts["messages"]
        unsettled = exc.unsettled if isinstance(exc, PublishInterrupted) else 0
        click.echo(f"interrupted: {sent} message(s) of stream {stream_id!r} were published"
                   + (f" (acknowledged by the broker); {unsettled} more were sent but not "
                      "acknowledged (the broker did not answer in time; it may hold some of "
                      "them)" if unsettled else "")
                   + (f"; it stays open without 'close': {_LEFT_OPEN.format('')}"
                      if sent or unsettled else ""), err=True)
        sys.exit(128 + interrupting_signal())
    except DeliveryError as exc:
        raise click.ClickException(f"Kafka did not take the stream {stream_id!r}: {exc}") from None
    except ClientConfigRefused:
        raise  # one line naming the setting, exit 2 (_Main)
    except KafkaException as exc:
        raise click.ClickException(f"Kafka client error: {exc}") from None
    run = "" if existing is None else f", run {existing.get('run', 1) + 1} replacing run " \
        f"{existing.get('run', 1)}"
    click.echo(f"published {n} messages ({counts['items']} {what}, {shape}) of stream "
               f"{stream_id!r}{run} to {topic}")
    if existing is not None:
        # a watch started before the new run's first result would take the old run's final
        click.echo(f"its final selection: streamfs watch {shlex.quote(stream_id)} --run "
                   f"{existing.get('run', 1) + 1} --until-final (the run is the worker's to "
                   f"number: one more for each other replace of {stream_id!r} it reads first)",
                   err=True)
    elif replace:
        # no result yet: an earlier run the worker has not read yet would be replaced too,
        # and a watch now would take its final
        click.echo(f"no result of {stream_id!r} yet: if a run of it is still to be processed, "
                   f"this one replaces it; each version's run shows in streamfs watch "
                   f"{shlex.quote(stream_id)} --json", err=True)
    _warn_without_worker(s, app_id or s.app_id)  # published: no result comes without one
