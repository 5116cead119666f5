"""The ``streamfs`` command line."""

from __future__ import annotations

import json
import logging
import math
import os
import shlex
import signal
import sys
import warnings
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable, Iterator

import click

from streamfs import __version__
from streamfs.broker import (EXIT_DENIED, EXIT_UNREACHABLE, AccessDenied, BrokerUnreachable,
                             ClientConfigRefused, interrupting_signal, lost_interrupt,
                             remember_interrupts)
from streamfs.cli.options import (ALGORITHMS_HELP, DROP_OPTION, GROUPS_OPTION, HEADER_OPTION,
                                  LABEL_OPTION, EnvOption)
from streamfs.cli.params import param_value
from streamfs.cli.settings_help import SettingsCommand
from streamfs.cli.stdout import stdout_console, stdout_to_devnull, writing_output
from streamfs.settings import Settings
from streamfs.compile_notice import COMPILING, notice_while_compiling

if TYPE_CHECKING:
    from streamfs.client import SelectionReader

#: exit codes (README "Exit codes")
EXIT_KAFKA = 1  # Kafka did not take the stream, or a client error
EXIT_USAGE = 2  # bad input file, algorithm, parameter, labels or stream id: nothing published
EXIT_TIMEOUT = 3  # watch --timeout passed (before the final result, with --until-final)
EXIT_REJECTED = 4  # watch: the worker dead-lettered the stream's input
EXIT_RUN_REPLACED = 5  # watch --run N --until-final: run N was replaced before its final result
# interrupted: 128 + the signal (interrupting_signal), the shell's code: 130 Ctrl-C (SIGINT),
# 143 SIGTERM (produce, which says what it published first)
EXIT_BROKEN_PIPE = 141  # stdout's reader went away (`| head`): 128 + SIGPIPE, as the shell says


PARAM_HELP = ("Algorithm parameter (repeatable). VALUE is read as JSON where it parses (3, 0.5, "
              "true, null; Python's True, False, None too), [a,b] as a list, else as text. "
              "`streamfs algorithms NAME` lists NAME's parameters and defaults.")


def _parse_params(pairs: tuple[str, ...]) -> dict[str, Any]:
    """``k=v`` pairs; values as :func:`~streamfs.cli.params.param_value` reads them (JSON
    when they parse: numbers, null, true...; ``[a,b]`` as a list of texts)."""
    params: dict[str, Any] = {}
    for pair in pairs:
        if "=" not in pair:
            raise click.BadParameter(f"expected key=value, got {pair!r}", param_hint="--param")
        key, value = pair.split("=", 1)
        if key in params:  # the last one would win without a word
            raise UsageProblem(f"--param {key!r} given twice")
        params[key] = param_value(value)
    return params


def _settings(ctx: click.Context) -> Settings:
    return ctx.obj["settings"]



class UsageProblem(click.ClickException):
    """A mistake of the user's (input file, algorithm, parameters, labels, stream id): exit 2,
    one line, nothing published."""

    exit_code = EXIT_USAGE


def _refused(exc: ClientConfigRefused) -> str:
    """One line for a client configuration librdkafka refused: the ``STREAMFS_*`` settings
    its message names, set or not (the configuration keys, for those that came from
    elsewhere), and why."""
    from streamfs.broker import named_keys
    from streamfs.settings import KAFKA_SETTINGS

    keys = named_keys(exc.detail, {**dict.fromkeys(exc.keys), **KAFKA_SETTINGS})
    names = [KAFKA_SETTINGS.get(key, key) for key in keys]
    if not names:
        return f"the Kafka client refused its configuration: {exc.detail}"
    return (f"{' and '.join(names)}: the Kafka client refused "
            f"{'it' if len(names) == 1 else 'them'}: {exc.detail}")


#: commands imported only when they run (or --help lists them): their modules import
#: scikit-learn, about 1.4 s at every start of `watch` or `dead-letters`, which do not need it
_LAZY_COMMANDS = {"bench": ("streamfs.bench.command", "bench"),
                  "evaluate": ("streamfs.evaluation.command", "evaluate")}


class _Main(click.Group):
    """Turns an unreachable broker into one line and exit code 69, credentials, TLS or ACLs
    that Kafka refuses into one line and exit code 77, a topic to read that does
    not exist yet or was deleted while being read into one line and exit code 1, a client
    configuration that librdkafka refuses and a topic catalogue that cannot be used into one
    line and exit code 2, Ctrl-C into exit code 130 and a closed output pipe into 141, in
    every command; imports the commands of :data:`_LAZY_COMMANDS` when they are asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *_LAZY_COMMANDS})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in _LAZY_COMMANDS and name not in self.commands:
            import importlib

            module, attr = _LAZY_COMMANDS[name]
            self.add_command(getattr(importlib.import_module(module), attr))
        return super().get_command(ctx, name)

    def invoke(self, ctx: click.Context) -> Any:
        from streamfs.client import TopicMissing
        from streamfs.topics import CatalogueError

        remember_interrupts()
        try:
            return super().invoke(ctx)
        except click.NoSuchOption as exc:
            # `streamfs produce ... -b HOST`: the global options go before the command
            if exc.option_name in _GLOBAL_OPTIONS:
                given = exc.option_name + (" ..." if _GLOBAL_OPTIONS[exc.option_name] else "")
                exc.message = (f"{exc.message.rstrip('.')}: {exc.option_name} is an option of "
                               f"streamfs itself, given before the command: `streamfs {given} "
                               f"{ctx.invoked_subcommand or 'COMMAND'} ...`")
            raise
        except CatalogueError as exc:  # STREAMFS_TOPICS: a setup mistake, as a setting's
            click.echo(f"Error: {exc}", err=True)
            ctx.exit(EXIT_USAGE)
        except BrokerUnreachable as exc:
            click.echo(f"Error: {exc}", err=True)
            ctx.exit(EXIT_UNREACHABLE)
        except AccessDenied as exc:
            click.echo(f"Error: {exc}", err=True)
            ctx.exit(EXIT_DENIED)
        except TopicMissing as exc:
            click.echo(f"Error: {exc}", err=True)
            ctx.exit(EXIT_KAFKA)
        except ClientConfigRefused as exc:
            click.echo(f"Error: {_refused(exc)}", err=True)
            ctx.exit(EXIT_USAGE)
        except KeyboardInterrupt:
            # how `watch` and `dead-letters --follow` are stopped: click's "Aborted!" and
            # exit 1 would read as a Kafka error (README, Exit codes); SIGTERM: 143 (produce)
            ctx.exit(128 + interrupting_signal())
        except SystemError as exc:
            if not lost_interrupt(exc):
                raise
            ctx.exit(128 + interrupting_signal())  # one confluent-kafka lost in a callback
        except BrokenPipeError:
            # `streamfs watch --json | head -1`: the reader of stdout has what it wanted.
            # click would exit 1, which reads as a Kafka error or "no selection"
            stdout_to_devnull()
            ctx.exit(EXIT_BROKEN_PIPE)


#: the options of `streamfs` itself, which a command does not take after its name (True:
#: it takes a value)
_GLOBAL_OPTIONS = {"-b": True, "--bootstrap-servers": True, "--topic-prefix": True,
                   "-v": False, "--verbose": False}


def _topic_prefix(_ctx: click.Context, _param: click.Parameter, value: str | None
                  ) -> str | None:
    """``--topic-prefix`` (or its variable, named so by :class:`EnvOption`) as Kafka takes
    topic names."""
    from streamfs.settings import topic_prefix_problem

    if value is not None and (problem := topic_prefix_problem(value)):
        raise click.BadParameter(problem)
    return value


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--bootstrap-servers", "-b", cls=EnvOption, envvar="STREAMFS_BOOTSTRAP_SERVERS",
              help="Kafka bootstrap servers (env STREAMFS_BOOTSTRAP_SERVERS).")
@click.option("--topic-prefix", cls=EnvOption, envvar="STREAMFS_TOPIC_PREFIX",
              callback=_topic_prefix,
              help="Prefix of every topic name (env STREAMFS_TOPIC_PREFIX; default 'streamfs.').")
@click.option("--verbose", "-v", is_flag=True,
              help="Show details: the Kafka client's own log lines, tracebacks' causes.")
@click.pass_context
def main(ctx: click.Context, bootstrap_servers: str | None, topic_prefix: str | None,
         verbose: bool) -> None:
    """streamfs: online feature selection on Kafka streams.

    Exit codes: 0 success, 1 Kafka did not take the data, a topic is missing (or was deleted
    while being read) or has another partition count or setting streamfs relies on, another
    Kafka error, a worker fenced by another with its instance id, watch --once found no
    selection, or the output could not be written (a full disk), 2 a mistake in the command or
    its input (nothing published, unless the message says how much was), 3 watch --timeout
    passed, 4 the worker rejected the stream's input (see `streamfs dead-letters`), 5 watch
    --run N --until-final: run N was replaced before its final result, 69 the broker is
    unreachable, 70 the worker met an error it cannot recover from (a supervisor restarts it),
    77 Kafka refused the credentials or the TLS handshake, the listener speaks another security
    protocol, or Kafka's ACLs deny what the command needs, 130 interrupted (Ctrl-C), 141 the
    output's reader went away (a pipe into `head`), 143 produce stopped by SIGTERM.
    """
    logging.basicConfig(level=logging.DEBUG if verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    warnings.showwarning = _log_warning
    _warned.clear()  # (a process may run several commands: tests, CliRunner)
    # librdkafka logs every failed connection attempt: shown with --verbose only
    logging.getLogger("streamfs.kafka").setLevel(logging.DEBUG if verbose else logging.CRITICAL)
    try:
        settings = Settings.from_env(bootstrap_servers=bootstrap_servers,
                                     topic_prefix=topic_prefix)
    except ValueError as exc:  # a STREAMFS_* variable that is not a number
        raise UsageProblem(str(exc)) from None
    ctx.obj = {"settings": settings, "verbose": verbose}
    from streamfs.algorithms.parallel import kernel_threads

    try:  # the algorithms read it at every step: a bad value is a setup mistake, said once
        kernel_threads()
    except ValueError as exc:
        raise UsageProblem(str(exc)) from None


#: the warnings a command has shown
_warned: set[str] = set()


def _log_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                 file: Any = None, line: str | None = None) -> None:
    """A warning of the selectors (advice on the data or the parameters) as one log line,
    as the worker logs everything: not Python's file, line number and source line; each
    message once per command (Python's own once-per-location forgets what it showed whenever
    a library enters ``warnings.catch_warnings``, as scikit-learn does in every fit, so
    `evaluate` printed the same advice for each of its splits)."""
    text = str(message)
    if text not in _warned:
        _warned.add(text)
        if _held_advice is not None:
            _held_advice.append(text)
        else:
            logging.getLogger("streamfs").warning("%s", text)


#: warnings held back by :func:`_hold_advice` (None: shown as they come)
_held_advice: list[str] | None = None


def _hold_advice() -> None:
    """Hold the selectors' advice back until :func:`_release_advice`: a command that may
    still refuse its input (``produce``: the stream id, asked of the broker after the data's
    checks) shows the refusal alone, not after advice on data it will not publish."""
    global _held_advice
    _held_advice = []


def _release_advice() -> None:
    global _held_advice
    held, _held_advice = _held_advice or [], None
    for text in held:
        logging.getLogger("streamfs").warning("%s", text)


def _reachable(settings: Settings) -> None:
    from streamfs.broker import check_reachable

    if problem := settings.bootstrap_problem():
        raise UsageProblem(problem)
    check_reachable(settings.kafka_config())


@main.command()
def version() -> None:
    """Print the version."""
    click.echo(__version__)


def _instance_id(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    """``--instance-id`` as Kafka takes a ``group.instance.id`` (the variable's value is
    checked with the other settings, by :meth:`Settings.check`)."""
    from streamfs.settings import instance_id_problem

    if value is not None and (problem := instance_id_problem(value)):
        raise click.BadParameter(problem)
    return value


def _app_id(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    """``--app-id`` (or its variable, named so by :class:`EnvOption`) as the worker can use it:
    a consumer group and the start of its changelogs' names."""
    from streamfs.settings import app_id_problem

    if value is not None and (problem := app_id_problem(value)):
        raise click.BadParameter(problem)
    return value


@main.command(cls=SettingsCommand)
@click.option("--app-id", cls=EnvOption, envvar="STREAMFS_APP_ID", callback=_app_id,
              help="Consumer group / app id.")
@click.option("--web-port", cls=EnvOption, type=click.IntRange(0, 65535),
              envvar="STREAMFS_WEB_PORT",
              help="Port of /health and /metrics (default 6066; 0: any free port, logged).")
@click.option("--web-host", cls=EnvOption, envvar="STREAMFS_WEB_HOST",
              help="Address of /health and /metrics (default 127.0.0.1; 0.0.0.0: every "
              "interface).")
@click.option("--log-level", cls=EnvOption, default="info", show_default=True,
              envvar="STREAMFS_LOG_LEVEL",
              type=click.Choice(["debug", "info", "warning", "error", "critical"],
                                case_sensitive=False))
@click.option("--instance-id", cls=EnvOption, envvar="STREAMFS_INSTANCE_ID",
              callback=_instance_id,
              help="This worker's own id in its group, kept across restarts (e.g. the pod or "
              "host name): static membership, a restarted worker gets its partitions back at "
              "once. Default: none (dynamic).")
@click.pass_context
def worker(ctx: click.Context, app_id: str | None, web_port: int | None, web_host: str | None,
           log_level: str, instance_id: str | None) -> None:
    """Run the stream-processing worker until interrupted."""
    with _noting_stops() as stops:  # loading the worker's modules takes about two seconds
        from streamfs.worker.app import (CannotServe, InstanceFenced, StoppedDuringStartup,
                                         begin_startup, run_worker)
        from streamfs.topics import TopicMismatch, TopicsNotCreated

        settings = _worker_settings(ctx, app_id, web_port, web_host, log_level, instance_id)
    try:
        # from here SIGINT/SIGTERM stop the start-up with one log line; one noted before
        # (`stops`) stops it here
        begin_startup(settings, stops)
        _reachable(settings)
        run_worker(settings)
    except StoppedDuringStartup:
        return  # logged; exit 0, as a worker stopped after its start
    except (TopicMismatch, TopicsNotCreated, InstanceFenced) as exc:
        raise click.ClickException(str(exc)) from None
    except CannotServe as exc:
        raise UsageProblem(str(exc)) from None


def _worker_settings(ctx: click.Context, app_id: str | None, web_port: int | None,
                     web_host: str | None, log_level: str, instance_id: str | None
                     ) -> Settings:
    """The worker's settings, checked: :class:`UsageProblem` (exit 2) for the first that
    cannot work, before any start-up step."""
    from streamfs.settings import app_id_problem

    settings = _settings(ctx)
    if app_id:
        settings.app_id = app_id
    elif problem := app_id_problem(settings.app_id):
        if "STREAMFS_APP_ID" in os.environ:  # empty: click takes it for unset, Settings not
            raise UsageProblem(f"STREAMFS_APP_ID: {problem}")
        raise UsageProblem(f"STREAMFS_APP_ID is not set, and the app id taken from the topic "
                           f"prefix {problem}: set STREAMFS_APP_ID (or --app-id)")
    if web_port is not None:
        settings.web_port = web_port
    if web_host is not None:
        settings.web_host = web_host
    if instance_id is not None:
        settings.instance_id = instance_id
    settings.log_level = log_level
    from streamfs.codec import FORMATS

    if settings.result_format not in FORMATS:
        raise UsageProblem(f"STREAMFS_RESULT_FORMAT must be one of {', '.join(FORMATS)}, "
                           f"got {settings.result_format!r}")
    if settings.data_dir:  # else every partition would warn and fall back to the changelog
        import tempfile

        try:
            os.makedirs(settings.data_dir, exist_ok=True)
            with tempfile.TemporaryFile(dir=settings.data_dir):
                pass
        except OSError as exc:
            raise UsageProblem(f"STREAMFS_DATA_DIR {settings.data_dir!r} is not a writable "
                               f"directory: {exc.strerror}") from None
    from streamfs.topics import check_catalogue

    check_catalogue(settings.topic_prefix)  # now, not after the warm-up: exit 2 (_Main)
    return settings


@contextmanager
def _noting_stops() -> Iterator[list[int]]:
    """Note SIGINT and SIGTERM (their numbers, in the list yielded) until the worker's own
    handlers replace these (:func:`~streamfs.worker.app.begin_startup`, which then stops the
    start-up as for a signal that came during it); the handlers before come back if the
    block raises (a setting refused: exit 2). Without it, a signal that came while Python
    loaded the worker's modules ended the process as an unhandled signal does: exit 143 for
    SIGTERM, click's "Aborted!" and exit 1 for SIGINT, without a log line."""
    import signal

    stops: list[int] = []
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    for sig in before:
        signal.signal(sig, lambda signum, _frame: stops.append(signum))
    try:
        yield stops
    except BaseException:
        for sig, handler in before.items():
            signal.signal(sig, handler)
        raise


@main.group()
def topics() -> None:
    """Manage the topics of the catalogue (topics/catalogue.toml)."""


@topics.command("create")
@click.option("--app-id", default=None, callback=_app_id,
              help="Also create the changelogs of the worker with this app id: for a worker "
              "whose Kafka user may not create topics (README, Kafka security).")
@click.pass_context
def topics_create(ctx: click.Context, app_id: str | None) -> None:
    """Create the catalogue's topics that do not exist yet (idempotent)."""
    from confluent_kafka import KafkaException

    from streamfs.topics import (TopicMismatch, TopicsNotCreated, changelog_specs,
                                 check_catalogue, create_topics, load_catalogue)

    s = _settings(ctx)
    check_catalogue(s.topic_prefix)  # no topics the worker would refuse (exit 2: _Main)
    _reachable(s)
    specs = load_catalogue(s.topic_prefix, replication_factor=s.replication_factor)
    if app_id:
        specs.update(changelog_specs(app_id, specs["features"].partitions,
                                     s.replication_factor, s.max_message_bytes))
    try:
        outcomes = create_topics(s.kafka_config(), specs)
    except ClientConfigRefused:
        raise  # one line naming the setting, exit 2 (_Main)
    except KafkaException as exc:
        raise click.ClickException(f"topics not created: {exc.args[0].str()}") from None
    except (TopicMismatch, TopicsNotCreated) as exc:
        raise click.ClickException(str(exc)) from None
    for name, outcome in sorted(outcomes.items()):
        click.echo(f"{name}: {outcome}")


@topics.command("describe")
@click.option("--app-id", cls=EnvOption, envvar="STREAMFS_APP_ID", callback=_app_id,
              help="The worker's app id (its changelogs).")
@click.pass_context
def topics_describe(ctx: click.Context, app_id: str | None) -> None:
    """Print the catalogue's topics and the worker's changelogs: partitions, replication factor,
    min.insync.replicas and the other settings streamfs creates them with, as the broker has
    them, or as they would be created."""
    from confluent_kafka import KafkaException

    from streamfs.topics import changelog_specs, describe_topics, load_catalogue

    s = _settings(ctx)
    if app_id:
        s.app_id = app_id
    _reachable(s)
    specs = load_catalogue(s.topic_prefix, replication_factor=s.replication_factor)
    specs.update(changelog_specs(s.app_id, specs["features"].partitions, s.replication_factor,
                                 s.max_message_bytes))
    try:
        described = describe_topics(s.kafka_config(), specs)
    except KafkaException as exc:
        raise click.ClickException(f"topics not described: {exc.args[0].str()}") from None
    from streamfs.broker import principal

    hidden = (f" (hidden from {principal(s.kafka_config())} by the broker's ACLs, which allow "
              "no DESCRIBE on it: it may exist; as it would be created)")
    for role, (exists, settings) in described.items():
        click.echo(f"{role:19} {specs[role].name:40} "
                   f"{' '.join(f'{k}={v}' for k, v in settings.items())}")
        note = ("" if exists else hidden if exists is None
                else " (not created yet: as it would be created)")
        if exists and settings.get("partitions") != str(specs[role].partitions):
            note += (f" (the catalogue asks for {specs[role].partitions} partitions: the worker "
                     "and `topics create` refuse it)")
        click.echo(f"{'':19} {specs[role].description}{note}")


#: how a LIBSVM file is read, the same in `produce` and `select`
N_FEATURES_OPTION = click.option(
    "--n-features", type=click.IntRange(min=1), default=None,
    help="LIBSVM: d; without it a first pass over the file finds the largest index.")
ZERO_BASED_OPTION = click.option(
    "--zero-based/--one-based", "zero_based", default=None,
    help="LIBSVM: indices start at 0 / at 1 (default: zero-based if any index 0 appears in the "
    "file).")


def _load_data(source: str, label: str | None, header: bool | None = None,
               n_features: int | None = None, zero_based: bool | str = "auto",
               drop: tuple[str, ...] = ()) -> tuple[Any, Any, list[str] | None, dict]:
    """``(X, y, feature names or None, naming rule)`` of a whole file, or exit 2."""
    from streamfs.producers.errors import InputFileError
    from streamfs.producers.names import load_named

    try:
        return load_named(source, label=label, header=header, n_features=n_features,
                          zero_based=zero_based, drop=drop)
    except InputFileError as exc:
        raise UsageProblem(_said(exc)) from None
    except (FileNotFoundError, IsADirectoryError, PermissionError) as exc:
        raise UsageProblem(f"{exc.filename}: {exc.strerror}") from None


#: how the command line spells the parameters of the Python API that refusals name
#: (:class:`~streamfs.producers.errors.NamesParameter`)
_OPTION_SPELLINGS = {"block_bytes": "--block-bytes",
                     "zero_based": "--zero-based, or without --one-based"}


def _said(exc: BaseException) -> str:
    """``exc``'s message as the command line says it: naming its options where the Python
    API's would name a parameter (``--block-bytes``, not ``block_bytes``)."""
    from streamfs.producers.errors import NamesParameter

    if isinstance(exc, NamesParameter):
        return exc.said_as(_OPTION_SPELLINGS[exc.parameter])
    return str(exc)


def _labels_refused(exc: ValueError, source: str, label: str | None,
                    header: bool | None) -> UsageProblem:
    """A label error of ``source`` naming it and, when no ``label`` was given, the column
    taken as the label in its place: the wrong column is the likely cause."""
    from streamfs.producers.files import label_column_note

    return UsageProblem(f"{source}: {exc}{label_column_note(source, label, header)}" if source
                        else str(exc))


def _check_open(kind: str, algorithm: str, params: dict, *, n_features: int | None = None,
                y: Any = None, X: Any = None, names: Any = None, source: str = "",
                label: str | None = None, header: bool | None = None,
                advise: bool = False, buffer_cap: int | None = None) -> dict:
    """The worker's own checks of an ``open`` and, given the whole data ``X`` of ``source``
    (read with ``label`` and ``header``), of its values (columns shown with their ``names``),
    before anything is published or run (exit 2). ``advise``: warn as the algorithm will at
    the stream's start, for a caller that does not run it (``produce``; ``select`` runs it).
    ``buffer_cap``: the worker's cap on ``max_buffer_bytes`` (``produce``)."""
    from streamfs.algorithms.opening import check_open, check_open_data, check_values, open_advice
    from streamfs.algorithms.registry import LabelError
    from streamfs.producers.files import guessed_label_warning, row_id_warnings

    try:
        spec, algo, params = check_open(kind, algorithm, params, n_features=n_features,
                                        buffer_cap=buffer_cap)
    except ValueError as exc:
        raise UsageProblem(str(exc)) from None
    if y is not None:
        try:  # the labels, and what the data's size allows: the data's fault, say whose
            check_open_data(spec, algo, y, buffer_cap=buffer_cap)
        except LabelError as exc:
            raise _labels_refused(exc, source, label, header) from None
        except ValueError as exc:
            raise UsageProblem(f"{source}: {exc}" if source else str(exc)) from None
        for advice in open_advice(algo, y) if advise else []:
            warnings.warn(advice, UserWarning, stacklevel=2)  # one log line (_log_warning)
        if source and (guessed := guessed_label_warning(source, label, header, y, names)):
            warnings.warn(guessed, UserWarning, stacklevel=2)
    if X is not None:
        for said in row_id_warnings(source, X, names) if source else []:
            warnings.warn(said, UserWarning, stacklevel=2)
        try:
            check_values(kind, algo, X, names=names)
        except ValueError as exc:  # the data's fault: say whose
            raise UsageProblem(f"{source}: {exc}" if source else str(exc)) from None
    return params


def _instance_params(src: Any, source: str, algorithm: str, params: dict,
                     record_limit: int, block_bytes: int | None, label: str | None,
                     header: bool | None, buffer_cap: int | None = None) -> dict:
    """The parameters of an instance stream, its source's values and labels (and rows, against
    the ``--block-bytes`` given) checked as the worker checks them, in a pass over the file
    ahead of publishing (exit 2 naming the rows, features or labels)."""
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


def _groups(groups_file: str | None, n_columns: int) -> list[list[int]] | None:
    """The groups of ``--groups FILE``, a partition of the data's ``n_columns`` (exit 2)."""
    from streamfs.producers.files import check_groups, read_groups

    if groups_file is None:
        return None
    try:
        groups = read_groups(groups_file)
        check_groups(groups, n_columns, groups_file)
    except ValueError as exc:
        raise UsageProblem(str(exc)) from None
    return groups


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


@main.command()
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
@click.option("--shuffle-seed", type=int, default=None,
              help="Features: send the columns in a seeded random order (blocks carry `columns`).")
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
                                           continuing, exists_problem)
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
                                 buffer_cap=s.max_buffer_bytes)
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
            params = _instance_params(src, source, algorithm, params, record_limit,
                                      block_bytes, label, header, s.max_buffer_bytes)
            _warn_row_ids(source, src)
            budget_bytes = budget()  # before record_limit is read below
            messages = instance_messages_from_chunks(
                stream_id, src.chunks(), src.n_features, algorithm, params,
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
                   f"{existing.get('run', 1) + 1} --until-final", err=True)
    _warn_without_worker(s, app_id or s.app_id)  # published: no result comes without one


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


def _shown(text: Any) -> str:
    """An id (or any text from a record) for a human: as it is when every character is
    printable, else as a Python string literal, so that a control character (``\\x1f``, a
    newline, an escape sequence) shows instead of vanishing or acting on the terminal."""
    text = str(text)
    return text if text.isprintable() else repr(text)


def _json_line(message: dict) -> str:
    """One message as one line of JSON (NDJSON): the same text the worker's JSON format uses."""
    from streamfs.codec.text import _plain

    return json.dumps(_plain(message), separators=(",", ":"), ensure_ascii=False)


def _nothing_selected(result: dict) -> str | None:
    """Why a final selection is empty, when every feature failed the relevance test: an empty
    table alone does not say that the threshold, not the data, is the thing to change."""
    counters = result.get("counters", {})
    seen = counters.get("n_features_seen", 0)
    if not result.get("final") or result["selection"] or not seen:
        return None
    if counters.get("n_irrelevant") != seen:
        return None
    return (f"nothing selected: all {seen} features failed the relevance test"
            + (f"; {rule}" if (rule := _relevance_rule(result)) else ""))


def _rejected_note(result: dict) -> str | None:
    """Under a final result the worker computed without some of its run's input: a count in
    the title alone is easily missed, and the selection is not the data's."""
    n = result.get("counters", {}).get("rejected_messages", 0)
    if not result.get("final") or not n:
        return None
    return (f"the worker rejected {n} message(s) of this run, left out of this selection "
            f"(streamfs dead-letters --stream {_shown(result['stream'])})")


def _relevance_rule(result: dict) -> str | None:
    """The relevance test of ``result``'s algorithm with the values it ran with."""
    from streamfs.algorithms import registry

    try:
        spec = registry.get(result["algorithm"])
        used = spec.build(result.get("params", {})).get_params()  # defaults filled in
    except ValueError:
        return None
    if "saola" in spec.name and used.get("test") == "fisher_z":
        return (f"a feature is relevant when its Fisher z-test p-value is below alpha "
                f"({used['alpha']}); a larger alpha admits more")
    if "saola" in spec.name:
        return (f"a feature is relevant when its symmetrical uncertainty with the label exceeds "
                f"delta ({used['delta']}); a smaller delta admits more")
    if spec.name == "kofsd":
        return (f"a feature is relevant when its dependency Dep_K({{f}}) exceeds alpha "
                f"({used['alpha']}); a smaller alpha admits more")
    return None


def _print_results(results: list[dict], as_json: bool) -> None:
    with writing_output():
        _write_results(results, as_json)


def _write_results(results: list[dict], as_json: bool) -> None:
    if as_json:
        for r in results:
            click.echo(_json_line(r))
        return
    from rich.table import Table
    from rich.text import Text

    console = stdout_console()
    for r in results:
        run = f" · run {r['run']}" if r.get("run", 1) != 1 else ""
        counters = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in
                             r.get("counters", {}).items())
        title = (f"{_shown(r['stream'])} · {r['algorithm']}{run} · v{r['version']}"
                 f"{' · final' if r.get('final') else ''}")
        # heading and counters as lines of their own: as the table's title they wrapped at the
        # table's width, mid-counter ("final · rejected" / "messages 0")
        console.print(Text(title, style="bold"))  # no markup: a stream id may hold brackets
        if counters:
            console.print(Text(counters))
        table = Table()
        for col in ("#", "feature", "name", "score", "affiliated"):
            table.add_column(col, overflow="fold")
        for i, item in enumerate(r["selection"]):
            affiliated = item.get("affiliated", [])
            aff = ", ".join(str(a[2] if len(a) > 2 else a[0]) for a in affiliated[:8])
            more = len(affiliated) - 8
            score = item.get("score")
            table.add_row(str(i), str(item["feature"]), str(item.get("name", "")),
                          "" if score is None else f"{score:.4g}",
                          aff + (f" (+{more})" if more > 0 else ""))
        console.print(table)
        if (why := _nothing_selected(r)) is not None:
            console.print(why, markup=False)
        if (note := _rejected_note(r)) is not None:
            console.print(note, markup=False)


@main.command()
@click.argument("stream", required=False)
@click.option("--once", is_flag=True,
              help="Print the current selections (of STREAM, of its run --run) and exit.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line (NDJSON).")
@click.option("--until-final", is_flag=True,
              help="Read the topic to its end, then exit once the newest run of STREAM (of "
              "every stream seen, without STREAM) has its final result; exit 4 with the reason "
              "if the worker dead-letters input of that run, 5 if that run (--run N) was "
              "replaced by a newer one before its final result.")
@click.option("--run", "run", type=click.IntRange(min=1), default=None,
              help="Only results of this run of STREAM (after `produce --replace`); needs "
              "STREAM.")
@click.option("--from-now", is_flag=True,
              help="Only results published from now on (default: from the topic's start, so "
              "every stream's latest selection comes first).")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Give up after this many seconds (> 0; exit 3).")
@click.option("--app-id", cls=EnvOption, envvar="STREAMFS_APP_ID", default=None,
              help="The workers' consumer group, to warn when none is running.")
@click.pass_context
def watch(ctx: click.Context, stream: str | None, once: bool, as_json: bool,
          until_final: bool, run: int | None, from_now: bool, timeout: float | None,
          app_id: str | None) -> None:
    """Show selections from the selected-features topic (all streams, or STREAM)."""
    from streamfs.client import SelectionReader
    from streamfs.topics import load_catalogue

    if run is not None and stream is None:
        raise UsageProblem(f"--run {run} needs a STREAM: runs are numbered per stream "
                           f"(streamfs watch STREAM --run {run})")
    s = _settings(ctx)
    _reachable(s)
    catalogue = load_catalogue(s.topic_prefix)
    topic = catalogue["selected"].name
    group = app_id or s.app_id
    if once:
        if from_now:
            raise UsageProblem("--once shows the current selections: --from-now does not apply")
        sys.exit(_watch_once(s, topic, stream, run, as_json, group))
    dead = catalogue["dead_letter"].name if until_final else None
    with SelectionReader(s.kafka_config(), topic, dead_letters=dead,
                         start="end" if from_now else "beginning") as reader:
        reader.assign()  # a missing topic: one line (exit 1), before the worker warning
        _warn_without_worker(s, group)
        sys.exit(_print_updates(reader, stream, until_final, run, as_json, timeout,
                                lambda: _without_worker(s, group)))


def _watch_once(settings: Settings, topic: str, stream: str | None, run: int | None,
                as_json: bool, group: str) -> int:
    """Print the current selections (of ``stream``, of its run ``run``); 1 if there is none."""
    from streamfs.client import SelectionReader

    with SelectionReader(settings.kafka_config(), topic) as reader:
        latest = reader.current_selections(stream, run=run)
        newest = reader.current_selections(stream) if run is not None and not latest else {}
    results = [latest[k] for k in sorted(latest)]
    if not results:
        what = _shown(stream) if stream else "any stream"
        if stream not in newest:
            click.echo(f"no selection yet for {what if run is None else f'run {run} of {what}'}",
                       err=True)
        elif (newer := newest[stream].get("run", 1)) > run:  # compaction keeps the latest only
            click.echo(f"no selection of run {run} of {what} left on {topic} (its latest "
                       f"result is of run {newer}; the topic keeps each stream's latest)",
                       err=True)
        else:
            click.echo(f"no selection yet for run {run} of {what} (its latest result is of "
                       f"run {newer})", err=True)
        _warn_without_worker(settings, group)
        return 1
    _print_results(results, as_json)
    return 0


def _print_updates(reader: SelectionReader, stream: str | None, until_final: bool, run: int | None,
                   as_json: bool, timeout: float | None,
                   without_worker: Callable[[], str | None] = lambda: None) -> int:
    """Print ``reader``'s updates; the exit code: 0 (the final results, see
    :meth:`SelectionReader.updates`), 3 (time is up), 4 (input dead-lettered: seen before
    the final, or counted in a final result with ``until_final``) or 5 (``until_final`` of
    run ``run``, replaced before its final result). ``without_worker``: what to say at a
    timeout if no worker consumes (the cause, rather than a mistyped stream id)."""
    from streamfs.client import ID_HINT, RunReplaced, StreamRejected

    partial: dict[str, int] = {}  # final results computed without some input of their run
    try:
        for result in reader.updates(stream, until_final=until_final, timeout=timeout, run=run):
            _print_results([result], as_json)
            if result.get("final"):
                partial.pop(result["stream"], None)  # a newer run's final replaces it
                if n := result.get("counters", {}).get("rejected_messages", 0):
                    partial[result["stream"]] = n
    except TimeoutError as exc:
        said = str(exc)
        if cause := without_worker():
            said = f"{said.replace(ID_HINT.format(stream=stream), '')}: {cause}"
        click.echo(said, err=True)
        return EXIT_TIMEOUT
    except StreamRejected as exc:
        click.echo(f"Error: {exc}", err=True)
        return EXIT_REJECTED
    except RunReplaced as exc:
        click.echo(f"Error: {exc}", err=True)
        return EXIT_RUN_REPLACED
    finally:  # each refused run was shown once, at its first message: now how many it had
        for (sid, _), n in reader.refused.counts.items():
            click.echo(f"warning: {n} message(s) of another run of stream {sid!r} were refused "
                       f"(streamfs dead-letters --stream {_shown(sid)})", err=True)
    if until_final and partial:
        # the exit of a watch that saw the dead letter before the final: which one a script
        # gets must not depend on when the watch started
        for sid, n in partial.items():
            click.echo(f"Error: the worker rejected {n} message(s) of stream {sid!r}; its final "
                       f"result leaves them out (streamfs dead-letters --stream {_shown(sid)})",
                       err=True)
        return EXIT_REJECTED
    return 0


def _without_worker(settings: Settings, group: str) -> str | None:
    """What to say when no worker consumes (its consumer group ``group`` has no members),
    else None."""
    from streamfs.broker import group_members

    if group_members(settings.kafka_config(), group) == 0:
        return (f"no streamfs worker is consuming (consumer group {group!r} has no members): "
                f"start `streamfs worker`")
    return None


def _warn_without_worker(settings: Settings, group: str) -> None:
    if _without_worker(settings, group):
        click.echo(f"warning: no streamfs worker is consuming (consumer group {group!r} has no "
                   f"members): results arrive once `streamfs worker` runs and has joined it (a "
                   f"worker joins after loading its kernels; its first start after an install "
                   f"compiles them first, a minute or two)", err=True)


@main.command("dead-letters")
@click.option("--stream", help="Only dead letters of this stream.")
@click.option("--follow", "-f", is_flag=True, help="Keep waiting for new dead letters.")
@click.option("--json", "as_json", is_flag=True,
              help="One JSON object per line (the original bytes base64-encoded).")
@click.pass_context
def dead_letters(ctx: click.Context, stream: str | None, follow: bool, as_json: bool) -> None:
    """Show the input the worker rejected, with the reasons (the dead-letter topic)."""
    from datetime import datetime, timezone

    from streamfs.client import OutputReader, original_bytes
    from streamfs.topics import load_catalogue

    s = _settings(ctx)
    _reachable(s)
    topic = load_catalogue(s.topic_prefix)["dead_letter"].name
    count = 0
    with OutputReader(s.kafka_config(), topic) as reader, writing_output():
        for item in reader.messages(to_end=not follow):
            if item is None:
                continue
            letter = item[1]
            if stream is not None and letter.get("stream") != stream:
                continue
            count += 1
            if as_json:
                click.echo(_json_line(letter))
                continue
            original = original_bytes(letter) or b""  # JSON letters: base64 text
            where = f"{letter.get('topic')}[{letter.get('partition')}]@{letter.get('offset')}"
            sid = letter.get("stream")
            click.echo(f"{_shown(sid) if sid else '(no stream id)':16} {where}  "
                       f"{len(original)} bytes  {letter['reason']}")
    if not as_json and not follow:
        click.echo(f"{count} dead letter(s){f' of stream {stream!r}' if stream else ''} on "
                   f"{topic} ({datetime.now(timezone.utc):%Y-%m-%d %H:%M:%S} UTC)", err=True)


@main.command()
@click.argument("source")
@click.option("--algorithm", "-a", required=True, help=ALGORITHMS_HELP)
@click.option("--param", "-p", multiple=True, metavar="KEY=VALUE", help=PARAM_HELP)
@LABEL_OPTION
@DROP_OPTION
@HEADER_OPTION
@N_FEATURES_OPTION
@ZERO_BASED_OPTION
@GROUPS_OPTION
@click.option("--as-stream", "as_stream", default="offline", show_default=True, metavar="ID",
              help="Run as the worker runs stream ID: the random learners (ofs-partial, rand, "
              "ofs-rand, pe-rand) without a random_state are seeded from the stream id, so the "
              "result is the worker's final one for stream ID on the same data and parameters.")
@click.option("--json", "as_json", is_flag=True, help="The result as one line of JSON.")
def select(source: str, algorithm: str, param: tuple[str, ...], label: str | None,
           drop: tuple[str, ...], header: bool | None, n_features: int | None,
           zero_based: bool | None, groups_file: str | None, as_stream: str,
           as_json: bool) -> None:
    """Run an algorithm offline on SOURCE (no Kafka) and print the selection."""
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
    except ValueError as exc:
        raise UsageProblem(str(exc)) from None
    X, y, names, naming = _load_data(source, label, header, n_features,
                                     "auto" if zero_based is None else zero_based, drop)
    groups = _groups(groups_file, X.shape[1])
    params = _check_open(kind, algorithm, offline_params(algorithm, params, X.shape[0]),
                         n_features=X.shape[1], y=y, X=X, names=names, source=source,
                         label=label, header=header)
    params.pop("n_features", None)
    try:
        with notice_while_compiling(lambda m: click.echo(m, err=True),
                                    COMPILING.format(what="up to 20 s")):
            result = run_offline(algorithm, X, y, params, stream=as_stream, groups=groups,
                                 feature_names=names, naming=naming)
    except ValueError as exc:
        raise UsageProblem(str(exc)) from None
    _print_results([result], as_json)



@main.command("algorithms")
@click.argument("name", required=False)
def algorithms(name: str | None) -> None:
    """List the algorithms, or NAME's parameters (-p KEY=VALUE) with their defaults and what
    they mean (from the estimators' docstrings)."""
    from streamfs.algorithms import registry

    formatter = click.HelpFormatter()
    if name is None:
        formatter.write_dl([(spec.name, f"({spec.kind[:-1]} streams) {spec.summary}")
                            for spec in registry.ALGORITHMS.values()])
        click.echo(formatter.getvalue(), nl=False)
        return
    try:
        spec = registry.get(name)
    except ValueError as exc:
        raise UsageProblem(str(exc)) from None
    fixed = "".join(f"; {k}={_as_param(v)} (fixed by the name)" for k, v in spec.fixed.items())
    formatter.write_text(f"{spec.name} ({spec.kind[:-1]} streams): {spec.summary}{fixed}")
    with formatter.section("Parameters (-p KEY=VALUE; the default after =)"):
        formatter.write_dl([(f"{key}={_as_param(default)}", meaning or "(not described)")
                            for key, default, meaning in spec.parameters()])
    click.echo(formatter.getvalue(), nl=False)


def _as_param(value: Any) -> str:
    """A default as ``-p KEY=VALUE`` takes it back (:func:`param_value`)."""
    import inspect

    if value is inspect.Parameter.empty:
        return "(required)"
    if isinstance(value, str):
        return value if param_value(value) == value else json.dumps(value)
    return repr(value)

