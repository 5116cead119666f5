"""``streamfs dead-letters``: the input the worker rejected, with the reasons."""

from __future__ import annotations

import signal

import click

from streamfs.broker import remember_interrupts
from streamfs.cli.broker_checks import _reachable
from streamfs.cli.errors import UsageProblem
from streamfs.cli.group import _settings, main
from streamfs.cli.output import _json_line, _shown
from streamfs.cli.settings_help import SettingsCommand
from streamfs.cli.stdout import writing_output


@main.command("dead-letters", cls=SettingsCommand)
@click.option("--stream", help="Only dead letters of this stream.")
@click.option("--follow", "-f", is_flag=True, help="Keep waiting for new dead letters.")
@click.option("--from-now", is_flag=True,
              help="Only dead letters written from now on, with --follow (default: from the "
              "topic's start, which keeps them 30 days).")
@click.option("--json", "as_json", is_flag=True,
              help="One JSON object per line (the original bytes base64-encoded; "
              "written_at: when the worker wrote the letter, UTC).")
@click.pass_context
def dead_letters(ctx: click.Context, stream: str | None, follow: bool, from_now: bool,
                 as_json: bool) -> None:
    """Show the input the worker rejected, with the reasons (the dead-letter topic)."""
    from datetime import datetime, timezone

    from streamfs.client import OutputReader, where_read
    from streamfs.topics import load_catalogue

    if stream == "":  # `--stream "$SID"` with the variable unset: it matched nothing
        raise UsageProblem("--stream is empty: give a stream id, or leave it out for every "
                           "stream's dead letters")
    if from_now and not follow:  # it would read nothing and end
        raise UsageProblem("--from-now needs --follow: only dead letters still to come are "
                           "shown")
    remember_interrupts(signal.SIGTERM)  # as Ctrl-C: exit 143 (a --follow in a container)
    s = _settings(ctx)
    _reachable(s)
    topic = load_catalogue(s.topic_prefix)["dead_letter"].name
    count = 0
    with OutputReader(s.kafka_config(), topic, kinds=("dead_letter",),
                      start="end" if from_now else "beginning") as reader, writing_output():
        for item in reader.messages(to_end=not follow):
            if item is None:
                continue
            letter = item[1]
            if stream is not None and letter.get("stream") != stream:
                continue
            count += 1
            written = _written_at(reader.last_timestamp)
            if as_json:
                click.echo(_json_line({**letter, "written_at": written}))
                continue
            where = where_read(letter)
            sid = letter.get("stream")
            click.echo(f"{_shown(sid) if sid else '(no stream id)':16} {where}  "
                       f"{_size(letter)}  {written or 'time unknown'}  {letter['reason']}")
    if not as_json and not follow:
        skipped = reader.skipped.total
        others = f"; {skipped} record(s) that are no dead letters skipped" if skipped else ""
        click.echo(f"{count} dead letter(s){f' of stream {stream!r}' if stream else ''} on "
                   f"{topic} ({datetime.now(timezone.utc):%Y-%m-%d %H:%M:%S} UTC){others}",
                   err=True)


def _written_at(timestamp: float | None) -> str | None:
    """When the worker wrote a dead letter (its record's Kafka timestamp), as ISO 8601 UTC: which
    letters are new is what an operator asks first."""
    from datetime import datetime, timezone

    if timestamp is None:
        return None
    return datetime.fromtimestamp(timestamp, timezone.utc).isoformat(timespec="seconds")\
        .replace("+00:00", "Z")


def _size(letter: dict) -> str:
    """The size of a dead letter's input, and how much of it the letter kept."""
    from streamfs.client import original_bytes

    kept = len(original_bytes(letter) or b"")  # JSON letters: base64 text
    size = letter.get("original_size")
    if letter.get("original_truncated") is True:
        whole = f"{size} bytes" if isinstance(size, int) else "more"
        return f"{whole} (first {kept} kept)"
    return f"{kept} bytes"
