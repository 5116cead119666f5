"""The ``streamfs`` command itself: its own options, and every command's errors as one line
and an exit code; its commands are registered on it by the other modules of the package."""

from __future__ import annotations

import logging
import os
import warnings
from typing import Any

import click

from streamfs.broker import (EXIT_DENIED, EXIT_UNREACHABLE, AccessDenied, BrokerUnreachable,
                             ClientConfigRefused, interrupting_signal, lost_interrupt,
                             remember_interrupts)
from streamfs.cli.advice import _log_warning, _warned
from streamfs.cli.errors import (EXIT_BROKEN_PIPE, EXIT_KAFKA, EXIT_NO_MEMORY, EXIT_USAGE,
                                 UsageProblem)
from streamfs.cli.options import EnvOption
from streamfs.cli.stdout import stdout_to_devnull
from streamfs.settings import Settings


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
    line and exit code 2, running out of memory into one line and exit code 71, Ctrl-C into
    exit code 130 and a closed output pipe into 141, in
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
        from streamfs.topics import CatalogueError, TopicMismatch

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
        except (TopicMissing, TopicMismatch) as exc:
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
        except MemoryError as exc:
            # numpy says what it could not allocate; a traceback adds nothing but noise (a
            # LIBSVM index of 10**11 among small ones makes that many features)
            why = ("a scenario grown by --scale is larger than this machine's memory"
                   if ctx.invoked_subcommand == "bench" else
                   "the data as read, or what the algorithm keeps of it, is larger than this "
                   "machine's memory: its shape, or a LIBSVM index far beyond the others?")
            click.echo(f"Error: out of memory: {exc or 'an allocation failed'} ({why})",
                       err=True)
            ctx.exit(EXIT_NO_MEMORY)
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
    protocol, or Kafka's ACLs deny what the command needs, 71 out of memory (the data as read,
    or a bench scenario's --scale, is beyond this machine), 130 interrupted (Ctrl-C), 141 the
    output's reader went away (a pipe into `head`), 143 stopped by SIGTERM (as by Ctrl-C).
    """
    logging.basicConfig(level=logging.DEBUG if verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    warnings.showwarning = _log_warning
    _warned.clear()  # (a process may run several commands: tests, CliRunner)
    # librdkafka logs every failed connection attempt: shown with --verbose only
    logging.getLogger("streamfs.kafka").setLevel(logging.DEBUG if verbose else logging.CRITICAL)
    # the settings are read when a command asks for them (:func:`_settings`), with its own
    # flags: `--help` and the offline commands do not depend on a worker's variables
    ctx.obj = {"overrides": {"bootstrap_servers": bootstrap_servers,
                             "topic_prefix": topic_prefix}, "verbose": verbose}
    for problem in Settings.mistyped(dict(os.environ)):  # every command, first (once: _warned)
        warnings.warn(problem, UserWarning, stacklevel=1)
    from streamfs.algorithms.parallel import kernel_threads

    try:  # the algorithms read it at every step: a bad value is a setup mistake, said once
        kernel_threads()
    except ValueError as exc:
        raise UsageProblem(str(exc)) from None


def _settings(ctx: click.Context, **flags: Any) -> Settings:
    """The settings from the environment, the group's flags and the command's ``flags`` (a
    flag given wins over its variable); read once, :class:`UsageProblem` (exit 2) naming a
    variable that cannot be used."""
    if "settings" not in ctx.obj:
        try:
            ctx.obj["settings"] = Settings.from_env(**ctx.obj["overrides"], **flags)
        except ValueError as exc:  # a STREAMFS_* variable that is not a number
            raise UsageProblem(str(exc)) from None
    return ctx.obj["settings"]
