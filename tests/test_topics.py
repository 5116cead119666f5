"""Existing topics are checked against the catalogue's settings (real broker)."""

from __future__ import annotations

import logging
import uuid

import pytest

from streamfs.topics import (CHANGELOG_DELETE_RETENTION_MS, TopicMismatch, TopicSpec,
                             changelog_specs, config_problems, create_topics, load_catalogue)

pytestmark = pytest.mark.kafka


def _name() -> str:
    return f"cfg-{uuid.uuid4().hex[:8]}"


def test_an_existing_results_topic_that_deletes_is_refused(kafka_config):
    """The operator's case: a selected-features topic that deletes after 60 s instead of
    compacting would lose the latest result of every stream."""
    spec = load_catalogue(f"{_name()}.")["selected"]
    create_topics(kafka_config, {"s": TopicSpec("s", spec.name, spec.partitions, 1,
                                                {"cleanup.policy": "delete",
                                                 "retention.ms": "60000"})})
    with pytest.raises(TopicMismatch) as refused:
        create_topics(kafka_config, {"selected": spec})
    assert str(refused.value) == (
        f"existing topic '{spec.name}' has cleanup.policy=delete, streamfs needs compact "
        "(results and changelogs keep each key's latest record, the other topics every "
        f"record): set it with kafka-configs.sh --bootstrap-server "
        f"{kafka_config['bootstrap.servers']} --alter --entity-type topics --entity-name "
        f"{spec.name} --add-config cleanup.policy=compact, or delete the topic if it holds "
        "nothing you need")


def test_a_compacted_input_topic_is_refused(kafka_config):
    """Compaction would keep only each stream's latest input message."""
    spec = load_catalogue(f"{_name()}.")["features"]
    create_topics(kafka_config, {"f": TopicSpec("f", spec.name, spec.partitions, 1,
                                                {"cleanup.policy": "compact,delete"})})
    with pytest.raises(TopicMismatch, match=r"has cleanup.policy=compact,delete, streamfs "
                                            r"needs delete "):
        create_topics(kafka_config, {"features": spec})


def test_a_smaller_max_message_bytes_is_refused_a_larger_one_accepted(kafka_config):
    small, large = _name(), _name()
    create_topics(kafka_config, {"a": TopicSpec("a", small, 1, 1, {"max.message.bytes": "100000"}),
                                 "b": TopicSpec("b", large, 1, 1, {"max.message.bytes": "9000000"})})
    want = {"max.message.bytes": "8388608"}
    with pytest.raises(TopicMismatch, match=rf"'{small}' has max.message.bytes=100000, streamfs "
                                            r"needs at least 8388608 .*--add-config "
                                            r"max.message.bytes=8388608"):
        create_topics(kafka_config, {"a": TopicSpec("a", small, 1, 1, want)})
    assert create_topics(kafka_config, {"b": TopicSpec("b", large, 1, 1, want)}) == {large: "exists"}


def test_a_changelog_that_keeps_deletions_too_briefly_is_refused(kafka_config):
    """A local copy up to a day old is trusted: the changelog's tombstones must last that long."""
    app = _name()
    specs = changelog_specs(app, 2, 1, 1 << 20)
    short = {role: TopicSpec(s.role, s.name, s.partitions, 1,
                             {**s.config, "delete.retention.ms": "3600000"})
             for role, s in specs.items()}
    create_topics(kafka_config, short)
    with pytest.raises(TopicMismatch) as refused:
        create_topics(kafka_config, specs)
    lines = str(refused.value).splitlines()
    assert len(lines) == 2 and all(
        f"has delete.retention.ms=3600000, streamfs needs at least "
        f"{CHANGELOG_DELETE_RETENTION_MS} " in line for line in lines)


def test_settings_that_are_only_defaults_are_warned_about(kafka_config, caplog):
    spec = load_catalogue(f"{_name()}.")["instances"]
    create_topics(kafka_config, {"i": TopicSpec("i", spec.name, spec.partitions, 1,
                                                {**spec.config, "retention.ms": "60000"})})
    with caplog.at_level(logging.WARNING, logger="streamfs.topics"):
        assert create_topics(kafka_config, {"instances": spec}) == {spec.name: "exists"}
    assert [r.getMessage() for r in caplog.records if r.name == "streamfs.topics"] == [
        f"existing topic '{spec.name}' has retention.ms=60000, streamfs creates it with "
        f"604800000; kept (to change it: kafka-configs.sh --bootstrap-server "
        f"{kafka_config['bootstrap.servers']} --alter --entity-type topics --entity-name "
        f"{spec.name} --add-config retention.ms=604800000)"]


def test_config_problems_asks_the_broker_once_for_all_topics(kafka_config):
    from confluent_kafka.admin import AdminClient

    class Counting:
        def __init__(self, admin: AdminClient) -> None:
            self.admin, self.calls = admin, 0

        def describe_configs(self, *args, **kwargs):
            self.calls += 1
            return self.admin.describe_configs(*args, **kwargs)

    names = [_name() for _ in range(3)]
    create_topics(kafka_config, {n: TopicSpec(n, n, 1, 1, {"cleanup.policy": "delete"})
                                 for n in names})
    admin = Counting(AdminClient(kafka_config))
    refusals, warnings = config_problems(
        admin, [TopicSpec(n, n, 1, 1, {"cleanup.policy": "compact"}) for n in names], "B")
    assert admin.calls == 1 and warnings == []
    assert [line.split(" has ")[0] for line in refusals] == [f"existing topic {n!r}" for n in names]


def _topic_setting(kafka_config, names, key):
    """``{topic: (its value of key, set on the topic itself)}``."""
    from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, ResourceType

    admin = AdminClient(kafka_config)  # kept until the answers are in
    futures = admin.describe_configs([ConfigResource(ResourceType.TOPIC, n) for n in names])
    return {r.name: (e.value, e.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
            for r, f in futures.items() for e in [f.result()[key]]}


def test_catalogue_topics_and_changelogs_are_created_with_min_insync_replicas(kafka_config):
    """Not the broker's default: min(2, replication factor) on the topic itself (one broker
    here, so 1; creation_config's test covers 2)."""
    specs = {**load_catalogue(f"{_name()}."), **changelog_specs(_name(), 2, 0, 1 << 20)}
    create_topics(kafka_config, specs)
    names = [s.name for s in specs.values()]
    assert _topic_setting(kafka_config, names, "min.insync.replicas") == {
        name: ("1", True) for name in names}


def test_changelogs_roll_their_segments_hourly_so_compaction_reaches_them(kafka_config):
    """The log cleaner skips a partition's active segment, which with the broker's default
    (7 days or 1 GB) held every state version and closed stream's columns for a week."""
    specs = changelog_specs(_name(), 2, 0, 1 << 20)
    create_topics(kafka_config, specs)
    assert _topic_setting(kafka_config, [s.name for s in specs.values()], "segment.ms") == {
        s.name: ("3600000", True) for s in specs.values()}


@pytest.mark.parametrize("replication, expected", [(1, "1"), (2, "2"), (3, "2"), (5, "2")])
def test_min_insync_replicas_is_two_where_there_are_two_copies(replication, expected):
    from streamfs.topics import creation_config

    spec = load_catalogue("p.")["selected"]
    assert creation_config(spec, replication) == {"min.insync.replicas": expected, **spec.config}
    # a topic's config in the catalogue says otherwise
    own = TopicSpec("s", "s", 1, 0, {"min.insync.replicas": "3"})
    assert creation_config(own, replication) == {"min.insync.replicas": "3"}


def test_the_catalogue_sets_no_replication_factor(tmp_path, caplog, monkeypatch):
    """The setting (STREAMFS_REPLICATION_FACTOR) is the only one: the catalogue's
    replication_factor = 1 was overridden by the worker and `topics create` every time."""
    monkeypatch.delenv("STREAMFS_TOPICS", raising=False)
    assert {s.replication_factor for s in load_catalogue("p.").values()} == {0}
    assert {s.replication_factor for s in load_catalogue("p.", replication_factor=3).values()} == {3}
    old = tmp_path / "old.toml"
    old.write_text('[defaults]\nreplication_factor = 1\n\n[topics.features]\nsuffix = "f"\n'
                   'partitions = 2\n')
    with caplog.at_level(logging.WARNING, logger="streamfs.topics"):
        assert load_catalogue("p.", path=old)["features"].replication_factor == 0
        load_catalogue("p.", path=old)
    assert [r.getMessage() for r in caplog.records] == [
        f"{old}: replication_factor is not read from the catalogue; STREAMFS_REPLICATION_FACTOR "
        "sets every topic's (default: min(3, brokers))"]


def test_a_topic_created_with_the_automatic_replication_factor_has_the_brokers(kafka_config):
    from confluent_kafka.admin import AdminClient

    from streamfs.topics import replicas

    name = _name()
    create_topics(kafka_config, {"t": TopicSpec("t", name, 2, 0)})
    meta = AdminClient(kafka_config).list_topics(timeout=10)
    assert replicas(meta.topics[name]) == min(3, len(meta.brokers))


def test_an_existing_topic_with_fewer_replicas_is_warned_about(kafka_config, caplog):
    name = _name()
    create_topics(kafka_config, {"t": TopicSpec("t", name, 1, 1)})
    with caplog.at_level(logging.WARNING, logger="streamfs.topics"):
        # three asked for: the broker is not asked to create it, it exists
        assert create_topics(kafka_config, {"t": TopicSpec("t", name, 1, 3)}) == {name: "exists"}
    from confluent_kafka.admin import AdminClient

    brokers = len(AdminClient(kafka_config).list_topics(timeout=10).brokers)
    # where the cluster cannot hold 3 copies, adding replicas is no advice
    assert [r.getMessage() for r in caplog.records] == [
        f"existing topic '{name}' has replication factor 1, streamfs creates it with 3; kept "
        + ("(kafka-reassign-partitions.sh adds replicas)" if brokers >= 3 else
           f"(the cluster has {brokers} broker(s), fewer than STREAMFS_REPLICATION_FACTOR=3)")]


@pytest.mark.parametrize("text,needle", [
    (None, "the topic catalogue cannot be read: No such file or directory"),
    ("x = [\n", "the topic catalogue is not TOML: "),
    ('[topics.features]\nsuffix = "f"\n', "each [topics.ROLE] of the topic catalogue needs a "
                                          "suffix (text) and partitions (a whole number from 1)"),
    ('[topics.features]\nsuffix = "f"\npartitions = 0\n', "needs a suffix (text) and partitions"),
])
def test_a_catalogue_that_cannot_be_used_is_named_by_its_setting(tmp_path, monkeypatch, text,
                                                                 needle):
    """STREAMFS_TOPICS naming a missing or broken file was a traceback (FileNotFoundError,
    TOMLDecodeError, KeyError) from every command, and the worker's after its warm-up, exit 70
    and again after every restart."""
    from streamfs.topics import CatalogueError

    path = tmp_path / "catalogue.toml"
    if text is not None:
        path.write_text(text)
    monkeypatch.setenv("STREAMFS_TOPICS", str(path))
    with pytest.raises(CatalogueError) as refused:
        load_catalogue("p.")
    assert str(refused.value).startswith(f"STREAMFS_TOPICS {str(path)!r}: ")
    assert needle in str(refused.value)


def test_a_catalogue_the_worker_cannot_use_is_refused_with_its_reason(tmp_path, monkeypatch):
    from streamfs.topics import CATALOGUE, CatalogueError, check_catalogue

    monkeypatch.delenv("STREAMFS_TOPICS", raising=False)
    assert set(check_catalogue("p.")) == {"features", "instances", "selected", "dead_letter"}
    path = tmp_path / "catalogue.toml"
    monkeypatch.setenv("STREAMFS_TOPICS", str(path))
    path.write_text(CATALOGUE.read_text().replace("[topics.dead_letter]", "[topics.other]"))
    with pytest.raises(CatalogueError, match=r"the topic catalogue has no \[topics.dead_letter\]"):
        check_catalogue("p.")
    path.write_text(CATALOGUE.read_text().replace("partitions = 8", "partitions = 4", 1))
    with pytest.raises(CatalogueError, match="the features and instances topics of the topic "
                                             "catalogue must have the same partition count, "
                                             "not 4 and 8"):
        check_catalogue("p.")


def test_a_wheel_carries_the_catalogue(tmp_path):
    """The package links to topics/catalogue.toml, and a wheel holds a copy: installed from a
    wheel (not editable), every Kafka command had failed, the catalogue missing."""
    import subprocess
    import sys
    import zipfile
    from pathlib import Path

    from streamfs.topics import CATALOGUE

    repo = Path(__file__).resolve().parent.parent
    assert CATALOGUE == repo / "topics" / "catalogue.toml"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                    str(repo), "-w", str(tmp_path)], check=True, cwd=tmp_path)
    [wheel] = tmp_path.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        assert archive.read("streamfs/catalogue.toml") == CATALOGUE.read_bytes()


def _catalogue_file(tmp_path, monkeypatch, old: str, new: str):
    """STREAMFS_TOPICS set to the project's catalogue with ``old`` replaced by ``new``."""
    from streamfs.topics import CATALOGUE

    path = tmp_path / "catalogue.toml"
    text = CATALOGUE.read_text()
    assert old in text
    path.write_text(text.replace(old, new))
    monkeypatch.setenv("STREAMFS_TOPICS", str(path))
    return path


def test_a_catalogue_naming_a_topic_twice_is_refused(tmp_path, monkeypatch):
    """Two roles on one topic: the Kafka client crashed (a segfault, exit 139) on a create
    request naming it twice, `topics create` and the worker alike, some topics made."""
    from streamfs.topics import CatalogueError

    path = _catalogue_file(tmp_path, monkeypatch, 'suffix = "instances"', 'suffix = "features"')
    with pytest.raises(CatalogueError) as refused:
        load_catalogue("p.")
    assert str(refused.value) == (
        f"STREAMFS_TOPICS {str(path)!r}: [topics.features] and [topics.instances] both name "
        "'p.features' in the topic catalogue: give each topic a suffix of its own")


def test_catalogue_settings_are_given_to_kafka_as_kafka_reads_them(tmp_path, monkeypatch):
    """A TOML list went to the broker as Python's text ("['compact', 'delete']"), refused."""
    from streamfs.topics import CatalogueError

    _catalogue_file(tmp_path, monkeypatch, '"cleanup.policy" = "compact"',
                    '"cleanup.policy" = ["compact", "delete"], "preallocate" = true, '
                    '"retention.ms" = 60000')
    assert load_catalogue("p.")["selected"].config == {
        "cleanup.policy": "compact,delete", "preallocate": "true", "retention.ms": "60000",
        "min.cleanable.dirty.ratio": "0.1", "segment.ms": "600000",
        "max.message.bytes": "8388608"}
    _catalogue_file(tmp_path, monkeypatch, '"cleanup.policy" = "compact"',
                    '"cleanup.policy" = { a = 1 }')
    with pytest.raises(CatalogueError, match=r"\[topics.selected\] config 'cleanup.policy' of "
                                             r"the topic catalogue is \{'a': 1\}: a Kafka topic "
                                             r"setting takes text, a number"):
        load_catalogue("p.")


@pytest.mark.parametrize("old,new,needle", [
    ('"cleanup.policy" = "compact", ', "",
     "[topics.selected] of the topic catalogue has no cleanup.policy (the broker's default: "
     "delete); streamfs needs compact: a late subscriber reads each stream's latest selection"),
    ('"cleanup.policy" = "compact"', '"cleanup.policy" = "delete"',
     "[topics.selected] of the topic catalogue has cleanup.policy='delete'; streamfs needs "
     "compact"),
    ('"cleanup.policy" = "delete", "retention.ms" = "604800000"',
     '"cleanup.policy" = "compact,delete", "retention.ms" = "604800000"',
     "[topics.features] of the topic catalogue has cleanup.policy='compact,delete'; streamfs "
     "needs delete, not compact: compaction would keep only each key's latest record"),
])
def test_a_catalogue_whose_cleanup_policies_lose_data_is_refused(tmp_path, monkeypatch, old,
                                                                 new, needle):
    """A custom catalogue could make the results topic delete (late subscribers found no
    selection) or an input topic compact: the worker measured topics against the catalogue,
    so it accepted both."""
    from streamfs.topics import CatalogueError, check_catalogue

    _catalogue_file(tmp_path, monkeypatch, old, new)
    with pytest.raises(CatalogueError) as refused:
        check_catalogue("p.")
    assert needle in str(refused.value)


def _exists(kafka_config, *names: str) -> list[str]:
    from confluent_kafka.admin import AdminClient

    listed = AdminClient(kafka_config).list_topics(timeout=10).topics
    return [name for name in names if name in listed]


def test_a_topic_the_broker_refuses_leaves_none_made(kafka_config):
    """The broker refused one topic's setting: the others of the request were made all the
    same, and the error named only the one."""
    from streamfs.topics import TopicsNotCreated

    good, bad, worse = _name(), _name(), _name()
    with pytest.raises(TopicsNotCreated) as refused:
        create_topics(kafka_config, {"g": TopicSpec("g", good, 1, 1),
                                     "b": TopicSpec("b", bad, 1, 1, {"retention.msx": "1"}),
                                     "w": TopicSpec("w", worse, 1, 1, {"cleanup.policy": "x"})})
    lines = str(refused.value).splitlines()
    assert [line.split(":")[0] for line in lines] == [f"topic {bad!r} not created",
                                                      f"topic {worse!r} not created"]
    assert "retention.msx" in lines[0]
    assert _exists(kafka_config, good, bad, worse) == []


def test_a_replication_factor_above_the_brokers_is_said_once_naming_the_setting(kafka_config):
    from confluent_kafka.admin import AdminClient

    from streamfs.topics import TopicsNotCreated

    brokers = len(AdminClient(kafka_config).list_topics(timeout=10).brokers)
    names = [_name(), _name()]
    with pytest.raises(TopicsNotCreated) as refused:
        create_topics(kafka_config, {n: TopicSpec(n, n, 1, brokers + 1) for n in names})
    assert str(refused.value) == (
        f"STREAMFS_REPLICATION_FACTOR is {brokers + 1}, and the cluster has {brokers} "
        f"broker(s): {names[0]!r}, {names[1]!r} cannot be created with {brokers + 1} replicas "
        "(0: min(3, brokers))")
    assert _exists(kafka_config, *names) == []


def test_an_existing_topic_refused_leaves_the_missing_ones_unmade(kafka_config):
    """`topics create` with one topic of another partition count made the other topics and
    said nothing of them."""
    old, new = _name(), _name()
    create_topics(kafka_config, {"o": TopicSpec("o", old, 2, 1)})
    with pytest.raises(TopicMismatch, match=rf"'{old}' has 2 partition\(s\), the catalogue "
                                            r"asks for 4"):
        create_topics(kafka_config, {"o": TopicSpec("o", old, 4, 1),
                                     "n": TopicSpec("n", new, 4, 1)})
    assert _exists(kafka_config, old, new) == [old]


def test_a_changelog_below_a_raised_record_limit_names_the_setting(kafka_config):
    """STREAMFS_MAX_MESSAGE_BYTES raised past the changelogs' limit: the refusal named neither
    the setting nor its other fix, and advised deleting a topic that holds every stream's
    state."""
    app = _name()
    create_topics(kafka_config, changelog_specs(app, 1, 1, 1 << 20))
    with pytest.raises(TopicMismatch) as refused:
        create_topics(kafka_config, changelog_specs(app, 1, 1, 2 << 20))
    lines = str(refused.value).splitlines()
    assert len(lines) == 2 and all(
        f"has max.message.bytes={(1 << 20) + 65536}, and STREAMFS_MAX_MESSAGE_BYTES={2 << 20} "
        f"needs at least {(2 << 20) + 65536} " in line
        and f"or set STREAMFS_MAX_MESSAGE_BYTES back to at most {1 << 20} (a changelog holds "
        "its streams' state: do not delete it)" in line for line in lines)
