"""``streamfs worker``: the stream-processing worker, its settings checked before it starts."""

from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Iterator

import click

from streamfs.cli.broker_checks import _reachable
from streamfs.cli.errors import UsageProblem
from streamfs.cli.group import _settings, main
from streamfs.cli.options import EnvOption, _app_id
from streamfs.cli.settings_help import SettingsCommand
from streamfs.settings import Settings


def _instance_id(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    """``--instance-id`` as Kafka takes a ``group.instance.id`` (the variable's value is
    checked with the other settings, by :meth:`Settings.check`)."""
    from streamfs.settings import instance_id_problem

    if value is not None and (problem := instance_id_problem(value)):
        raise click.BadParameter(problem)
    return value


@main.command(cls=SettingsCommand, reads=None)  # every variable
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
        # the settings first: a mistake in them is said before that load (4 s on two cores)
        settings = _worker_settings(ctx, app_id, web_port, web_host, log_level, instance_id)
        from streamfs.worker.errors import InstanceFenced
        from streamfs.worker.health import CannotServe, check_web_address
        from streamfs.worker.startup import StoppedDuringStartup, begin_startup, run_worker
        from streamfs.topics import TopicMismatch, TopicsNotCreated

    try:
        # from here SIGTERM/SIGINT/SIGHUP stop the start-up with one log line; one noted before
        # (`stops`) stops it here
        begin_startup(settings, stops)
        check_web_address(settings)  # a mistake in the command (2) before a broker away (69)
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

    settings = _settings(ctx, app_id=app_id or None, web_port=web_port, web_host=web_host,
                         instance_id=instance_id, log_level=log_level)
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
    if not settings.web_host.strip():  # the server would bind every interface
        raise UsageProblem("STREAMFS_WEB_HOST is empty (a template left unfilled?): give the "
                           "address of /health and /metrics (default 127.0.0.1; 0.0.0.0 for "
                           "every interface)")
    if instance_id is not None:
        settings.instance_id = instance_id
    settings.log_level = log_level
    from streamfs.codec import FORMATS

    settings.result_format = settings.result_format.strip().lower()  # as the log level's case
    if settings.result_format not in FORMATS:
        raise UsageProblem(f"STREAMFS_RESULT_FORMAT must be one of {', '.join(FORMATS)}, "
                           f"got {settings.result_format!r}")
    if settings.data_dir and not settings.data_dir.strip():  # it made a directory named " "
        raise UsageProblem(f"STREAMFS_DATA_DIR is blank ({settings.data_dir!r}): give a "
                           f"directory, or leave it unset for <tmp>/streamfs-state")
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
    """Note the stop signals (their numbers, in the list yielded) until the worker's own
    handlers replace these (:func:`~streamfs.worker.startup.begin_startup`, which then stops the
    start-up as for a signal that came during it); the handlers before come back if the
    block raises (a setting refused: exit 2). Without it, a signal that came while Python
    loaded the worker's modules ended the process as an unhandled signal does: exit 143 for
    SIGTERM, click's "Aborted!" and exit 1 for SIGINT, without a log line."""
    import signal

    from streamfs.worker import STOP_SIGNALS

    stops: list[int] = []
    before = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}
    for sig in before:
        signal.signal(sig, lambda signum, _frame: stops.append(signum))
    try:
        yield stops
    except BaseException:
        for sig, handler in before.items():
            signal.signal(sig, handler)
        raise
