"""``streamfs watch``: the selections on the selected-features topic, as they come."""

from __future__ import annotations

import signal
import sys
from typing import TYPE_CHECKING, Callable

import click

from streamfs.broker import remember_interrupts
from streamfs.cli.broker_checks import (_reachable, _warn_without_worker, _without_worker,
                                        _worker_warning)
from streamfs.cli.errors import EXIT_REJECTED, EXIT_RUN_REPLACED, EXIT_TIMEOUT, UsageProblem
from streamfs.cli.group import _settings, main
from streamfs.cli.options import EnvOption, Seconds
from streamfs.cli.output import _print_results, _shown
from streamfs.cli.settings_help import CLIENT_READS, SettingsCommand
from streamfs.settings import Settings

if TYPE_CHECKING:
    from streamfs.client import SelectionReader


@main.command(cls=SettingsCommand, reads=CLIENT_READS | {"app_id"})
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
              help="Only results published from now on (default: from the topic's start: "
              "every version it still holds comes first, at least each stream's latest, as "
              "the topic is compacted).")
@click.option("--timeout", type=Seconds(min=0, min_open=True), default=None,
              help="Give up after this many seconds (> 0; exit 3); with --once, if the topic "
              "is not read to its end by then.")
@click.option("--app-id", cls=EnvOption, envvar="STREAMFS_APP_ID", default=None,
              help="The workers' consumer group, to warn when none is running.")
@click.pass_context
def watch(ctx: click.Context, stream: str | None, once: bool, as_json: bool,
          until_final: bool, run: int | None, from_now: bool, timeout: float | None,
          app_id: str | None) -> None:
    """Show selections from the selected-features topic (all streams, or STREAM)."""
    from streamfs.client import SelectionReader
    from streamfs.topics import load_catalogue

    if stream == "":  # `watch "$SID"` with the variable unset: no stream has that id
        raise UsageProblem("STREAM is empty: give a stream id, or leave it out to watch every "
                           "stream")
    if run is not None and stream is None:
        raise UsageProblem(f"--run {run} needs a STREAM: runs are numbered per stream "
                           f"(streamfs watch STREAM --run {run})")
    # SIGTERM (`docker compose stop`, systemd, `timeout`) stops it as Ctrl-C does: exit 143
    remember_interrupts(signal.SIGTERM)
    s = _settings(ctx)
    _reachable(s)
    catalogue = load_catalogue(s.topic_prefix)
    topic = catalogue["selected"].name
    group = app_id or s.app_id
    if once:
        ignored = [name for name, given in (("--from-now", from_now),
                                            ("--until-final", until_final)) if given]
        if ignored:
            raise UsageProblem(f"--once shows the current selections and exits: "
                               f"{' and '.join(ignored)} do{'es' * (len(ignored) == 1)} not "
                               f"apply")
        sys.exit(_watch_once(s, topic, stream, run, as_json, group, timeout))
    dead = catalogue["dead_letter"].name if until_final else None
    with SelectionReader(s.kafka_config(), topic, dead_letters=dead,
                         start="end" if from_now else "beginning") as reader:
        reader.assign()  # a missing topic: one line (exit 1), before the worker warning
        sys.exit(_print_updates(reader, stream, until_final, run, as_json, timeout,
                                lambda: _without_worker(s, group), from_now))


def _watch_once(settings: Settings, topic: str, stream: str | None, run: int | None,
                as_json: bool, group: str, timeout: float | None = None) -> int:
    """Print the current selections (of ``stream``, of its run ``run``); 1 if there is none,
    3 if the topic was not read to its end within ``timeout`` seconds."""
    from streamfs.client import SelectionReader

    try:
        with SelectionReader(settings.kafka_config(), topic) as reader:
            latest = reader.current_selections(stream, run=run, timeout=timeout)
            newest = (reader.current_selections(stream, timeout=timeout)
                      if run is not None and not latest else {})
    except TimeoutError:
        click.echo(f"time is up: {topic} not read to its end within {timeout} s", err=True)
        return EXIT_TIMEOUT
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
                   without_worker: Callable[[], str | None] = lambda: None,
                   from_now: bool = False) -> int:
    """Print ``reader``'s updates; the exit code: 0 (the final results, see
    :meth:`SelectionReader.updates`), 3 (time is up), 4 (input dead-lettered: seen before
    the final, or counted in a final result with ``until_final``) or 5 (``until_final`` of
    run ``run``, replaced before its final result). ``without_worker``: what to say at a
    timeout if no worker consumes (the cause, rather than a mistyped stream id). A
    ``stream`` with no result on the topic once it has been read (unless ``from_now``) is
    said once, on stderr: a mistyped id sat silent until Ctrl-C."""
    from streamfs.client import ID_HINT, NEW_ONLY_HINT, RunReplaced, StreamRejected

    partial: dict[str, int] = {}  # final results computed without some input of their run
    latest: dict[str, dict] = {}  # each stream's result printed last

    def finished() -> bool:
        """--until-final has what it waits for (the reader ends now, without a worker)."""
        if stream is not None:
            r = latest.get(stream, {})
            return bool(r.get("final")) and run in (None, r.get("run", 1))
        return bool(latest) and all(r.get("final") for r in latest.values())

    def caught_up() -> None:
        # what was on the topic is shown: only now is a missing worker worth a warning (a
        # final result already there needs none), and it says why nothing comes, not the id
        if until_final and finished():
            return
        if cause := without_worker():
            click.echo(_worker_warning(cause), err=True)
            return
        if stream is not None and stream not in latest and not from_now:
            of_run = "" if run is None else f" run {run} of"
            click.echo(f"no result of{of_run} {stream!r} on {reader.topic} yet: waiting (is "
                       f"{stream!r} the stream's id? `streamfs watch --once` lists every "
                       f"stream's latest)", err=True)

    try:
        for result in reader.updates(stream, until_final=until_final, timeout=timeout, run=run,
                                     on_caught_up=caught_up):
            latest[result["stream"]] = result
            _print_results([result], as_json)
            if result.get("final"):
                partial.pop(result["stream"], None)  # a newer run's final replaces it
                if n := result.get("counters", {}).get("rejected_messages", 0):
                    partial[result["stream"]] = n
    except TimeoutError as exc:
        said = str(exc)
        if cause := without_worker():
            for hint in (ID_HINT.format(stream=stream), NEW_ONLY_HINT):
                said = said.replace(hint, "")
            said = f"{said}: {cause}: start `streamfs worker`"
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
