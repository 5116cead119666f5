"""``streamfs topics create`` and ``streamfs topics describe``: the catalogue's topics."""

from __future__ import annotations

import click

from streamfs.broker import ClientConfigRefused
from streamfs.cli.broker_checks import _reachable
from streamfs.cli.group import _settings, main
from streamfs.cli.options import EnvOption, _app_id
from streamfs.cli.settings_help import CLIENT_READS, SettingsCommand


@main.group()
def topics() -> None:
    """Manage the topics of the catalogue (topics/catalogue.toml)."""


#: the changelogs' names and sizes, and the replication of the topics made
TOPICS_READS = CLIENT_READS | {"app_id", "max_message_bytes", "replication_factor"}


@topics.command("create", cls=SettingsCommand, reads=TOPICS_READS)
@click.option("--app-id", cls=EnvOption, envvar="STREAMFS_APP_ID", callback=_app_id,
              help="Also create the changelogs of the worker with this app id: for a worker "
              "whose Kafka user may not create topics (README, Kafka security). Default: none, "
              "or STREAMFS_APP_ID, as the worker reads it.")
@click.pass_context
def topics_create(ctx: click.Context, app_id: str | None) -> None:
    """Create the catalogue's topics that do not exist yet (idempotent)."""
    from confluent_kafka import KafkaException

    from streamfs.topics import (TopicMismatch, TopicsNotCreated, changelog_specs,
                                 check_catalogue, create_with_changelogs, load_catalogue)

    s = _settings(ctx)
    check_catalogue(s.topic_prefix)  # no topics the worker would refuse (exit 2: _Main)
    _reachable(s)
    specs = load_catalogue(s.topic_prefix, replication_factor=s.replication_factor)
    changelogs = changelog_specs(app_id, specs["features"].partitions, s.replication_factor,
                                 s.max_message_bytes) if app_id else {}
    try:
        outcomes = create_with_changelogs(s.kafka_config(), specs, changelogs)
    except ClientConfigRefused:
        raise  # one line naming the setting, exit 2 (_Main)
    except KafkaException as exc:
        raise click.ClickException(f"topics not created: {exc.args[0].str()}") from None
    except (TopicMismatch, TopicsNotCreated) as exc:
        raise click.ClickException(str(exc)) from None
    for name, outcome in sorted(outcomes.items()):
        click.echo(f"{name}: {outcome}")


@topics.command("describe", cls=SettingsCommand, reads=TOPICS_READS)
@click.option("--app-id", cls=EnvOption, envvar="STREAMFS_APP_ID", callback=_app_id,
              help="The worker's app id (its changelogs). Default: STREAMFS_APP_ID, else the "
              "worker's: the topic prefix without the '.', '-' and '_' at its ends.")
@click.pass_context
def topics_describe(ctx: click.Context, app_id: str | None) -> None:
    """Print the catalogue's topics and the worker's changelogs: partitions, replication factor,
    min.insync.replicas and the other settings streamfs creates them with, as the broker has
    them, or as they would be created."""
    from confluent_kafka import KafkaException

    from streamfs.cli.errors import EXIT_KAFKA
    from streamfs.topics import (changelog_specs, check_catalogue, describe_topics, load_catalogue,
                                 refused_settings)

    s = _settings(ctx)
    if app_id:
        s.app_id = app_id
    check_catalogue(s.topic_prefix)  # what the worker and `topics create` refuse: exit 2
    _reachable(s)
    specs = load_catalogue(s.topic_prefix, replication_factor=s.replication_factor)
    specs.update(changelog_specs(s.app_id, specs["features"].partitions, s.replication_factor,
                                 s.max_message_bytes))
    try:
        described, brokers = describe_topics(s.kafka_config(), specs)
    except KafkaException as exc:
        raise click.ClickException(f"topics not described: {exc.args[0].str()}") from None
    from streamfs.broker import principal

    hidden = (f" (hidden from {principal(s.kafka_config())} by the broker's ACLs, which allow "
              "no DESCRIBE on it: it may exist; as it would be created)")
    refused = 0
    for role, (exists, settings) in described.items():
        click.echo(f"{role:19} {specs[role].name:40} "
                   f"{' '.join(f'{k}={v}' for k, v in settings.items())}")
        note = ("" if exists else hidden if exists is None
                else " (not created yet: as it would be created)")
        read = {k: v for k, v in settings.items() if v != "?"}  # "?": not this user's to read
        if exists and len(read) < len(settings):
            note += " (settings not readable: not checked)"
        wrong = refused_settings(specs[role], read) if exists else []
        if exists and settings.get("partitions") != str(specs[role].partitions):
            wrong.insert(0, f"{settings.get('partitions')} partitions (the catalogue asks for "
                         f"{specs[role].partitions})")
        if exists is False and s.replication_factor > brokers:
            wrong.append(f"STREAMFS_REPLICATION_FACTOR={s.replication_factor} on a cluster of "
                         f"{brokers} broker(s): it cannot be created")
        if wrong:
            refused += 1
            note += f" (REFUSED by the worker and `topics create`: {'; '.join(wrong)})"
        click.echo(f"{'':19} {specs[role].description}{note}")
    if refused:  # a read-only check a script can act on (README, Exit codes: 1)
        click.echo(f"Error: {refused} topic(s) have settings the worker refuses (above); "
                   "`streamfs topics create` says how to fix each", err=True)
        ctx.exit(EXIT_KAFKA)
