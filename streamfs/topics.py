"""The topic catalogue (``topics/catalogue.toml``) and its idempotent application."""

from __future__ import annotations

import functools
import logging
import os
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable

#: topics/catalogue.toml, through the package's link to it: a wheel holds a copy (an install
#: that is not editable had no catalogue, and every Kafka command failed)
CATALOGUE = (Path(__file__).parent / "catalogue.toml").resolve()

log = logging.getLogger(__name__)

#: topic settings the project's correctness depends on, and why: an existing topic whose value
#: differs from its spec's is refused. cleanup.policy must be the spec's; the others at least it.
REQUIRED = {
    "cleanup.policy": "results and changelogs keep each key's latest record, the other "
                      "topics every record",
    "max.message.bytes": "the records streamfs writes and the catalogue's producers send "
                         "must fit",
    "delete.retention.ms": "deletions must outlive the age up to which a worker uses its "
                           "local copy of a changelog",
}


@dataclass(frozen=True)
class TopicSpec:
    role: str
    name: str
    partitions: int
    #: 0: chosen from the number of brokers when the topic is created (:func:`replication_for`)
    replication_factor: int
    config: dict[str, str] = field(default_factory=dict)
    description: str = ""


#: the roles of the catalogue's topics, which every command and the worker look up
ROLES = ("features", "instances", "selected", "dead_letter")


class CatalogueError(ValueError):
    """The topic catalogue cannot be read or used (a setup mistake: one line, exit 2)."""


class Catalogue(dict):
    """Topic specs by role, as :func:`load_catalogue` read them: a role the file does not
    give is a :class:`CatalogueError` naming the file and the role (``watch`` and
    ``dead-letters`` look up the roles they read; a ``KeyError`` was a traceback)."""

    def __init__(self, specs: dict, where: str) -> None:
        super().__init__(specs)
        self.where = where

    def __missing__(self, role: str) -> "TopicSpec":
        raise CatalogueError(f"{self.where}: the topic catalogue has no [topics.{role}]")


def _catalogue_file(path: Path | None = None) -> tuple[Path, str]:
    """The catalogue's file (``STREAMFS_TOPICS``, else ``path``, else the project's) and how
    errors name it."""
    env = os.environ.get("STREAMFS_TOPICS")
    path = Path(env if env is not None else path or CATALOGUE)
    return path, f"STREAMFS_TOPICS {str(path)!r}" if env is not None else str(path)


def load_catalogue(prefix: str | None = None, path: Path | None = None,
                   replication_factor: int = 0) -> dict[str, TopicSpec]:
    """Topic specs by role (features, instances, selected, dead_letter), each with
    ``replication_factor`` (the setting STREAMFS_REPLICATION_FACTOR; 0: see
    :func:`replication_for`). The catalogue has no replication factor of its own.
    :class:`CatalogueError`, naming ``STREAMFS_TOPICS`` if it gave the file, when the file
    cannot be read, is not TOML, or a topic lacks a suffix or a partition count of 1 or
    more; looking up a role the file lacks raises it too (:class:`Catalogue`)."""
    path, where = _catalogue_file(path)
    if os.environ.get("STREAMFS_TOPICS") == "":  # Path("") is ".": "Is a directory"
        raise CatalogueError("STREAMFS_TOPICS is empty (a template left unfilled?): name the "
                             "topic catalogue's file, or unset it for the project's")
    prefix = os.environ.get("STREAMFS_TOPIC_PREFIX", "streamfs.") if prefix is None else prefix
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except OSError as exc:
        raise CatalogueError(f"{where}: the topic catalogue cannot be read: "
                             f"{exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise CatalogueError(f"{where}: the topic catalogue is not TOML: {exc}") from None
    topics = data.get("topics")
    if not isinstance(topics, dict) or not all(
            isinstance(t, dict) and isinstance(t.get("suffix"), str)
            and type(t.get("partitions")) is int and t["partitions"] >= 1
            for t in topics.values()):
        raise CatalogueError(f"{where}: each [topics.ROLE] of the topic catalogue needs a "
                             "suffix (text) and partitions (a whole number from 1)")
    if "replication_factor" in data.get("defaults", {}) or any(
            "replication_factor" in t for t in topics.values()):
        _warn_replication_key(str(path))
    specs = Catalogue({
        role: TopicSpec(role, prefix + t["suffix"], int(t["partitions"]), replication_factor,
                        _topic_config(where, role, t.get("config", {})),
                        t.get("description", ""))
        for role, t in topics.items()
    }, where)
    roles_of: dict[str, list[str]] = {}
    for role, spec in specs.items():
        roles_of.setdefault(spec.name, []).append(f"[topics.{role}]")
    if shared := {name: roles for name, roles in roles_of.items() if len(roles) > 1}:
        # one create request naming a topic twice crashed the Kafka client (a segfault)
        both = "; ".join(f"{' and '.join(roles)} both name {name!r}"
                         for name, roles in shared.items())
        raise CatalogueError(f"{where}: {both} in the topic catalogue: give each topic a "
                             "suffix of its own")
    return specs


def _topic_config(where: str, role: str, config: Any) -> dict[str, str]:
    """A catalogue topic's ``config`` as Kafka takes it: text, a number or true/false per
    setting, a list as Kafka's comma-separated one (``["compact", "delete"]``)."""
    def text(value: Any) -> str | None:
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value) if isinstance(value, (str, int, float)) else None

    if not isinstance(config, dict):
        raise CatalogueError(f"{where}: [topics.{role}] config of the topic catalogue must be a "
                             "table of Kafka topic settings")
    out = {}
    for key, value in config.items():
        items = value if isinstance(value, list) else [value]
        texts = [text(v) for v in items]
        if None in texts or not texts:
            raise CatalogueError(f"{where}: [topics.{role}] config {key!r} of the topic "
                                 f"catalogue is {value!r}: a Kafka topic setting takes text, a "
                                 "number, true/false or a list of those")
        out[key] = ",".join(texts)
    return out


def check_catalogue(prefix: str) -> dict[str, TopicSpec]:
    """:func:`load_catalogue`, and :class:`CatalogueError` unless it has every role of
    :data:`ROLES`, with as many features as instances partitions (the worker's changelogs
    are co-partitioned with both), and a compacted results topic and no other."""
    specs = load_catalogue(prefix)
    where = _catalogue_file()[1]
    if missing := [role for role in ROLES if role not in specs]:
        raise CatalogueError(f"{where}: the topic catalogue has no "
                             f"{', '.join(f'[topics.{role}]' for role in missing)}")
    if specs["features"].partitions != specs["instances"].partitions:
        raise CatalogueError(f"{where}: the features and instances topics of the topic "
                             f"catalogue must have the same partition count, not "
                             f"{specs['features'].partitions} and "
                             f"{specs['instances'].partitions}")
    for role in ROLES:  # what REQUIRED's cleanup.policy stands for, whatever the file says
        policy = specs[role].config.get("cleanup.policy", "")
        if (role == "selected") != ("compact" in {p.strip() for p in policy.split(",")}):
            need = ("compact: a late subscriber reads each stream's latest selection"
                    if role == "selected" else
                    "delete, not compact: compaction would keep only each key's latest "
                    "record")
            has = (f"cleanup.policy={policy!r}" if policy else
                   "no cleanup.policy (the broker's default: delete)")
            raise CatalogueError(f"{where}: [topics.{role}] of the topic catalogue has {has}; "
                                 f"streamfs needs {need}")
    return specs


@functools.cache
def _warn_replication_key(path: str) -> None:
    """Once per catalogue: the key older catalogues carried, which the worker and `topics
    create` always overrode, is not read."""
    log.warning("%s: replication_factor is not read from the catalogue; "
                "STREAMFS_REPLICATION_FACTOR sets every topic's (default: min(3, brokers))", path)


def replication_for(setting: int, brokers: int) -> int:
    """The replication factor to create a topic with: ``setting`` if positive, else
    min(3, ``brokers``): 3 copies survive one broker down with ``min.insync.replicas=2``
    (:func:`creation_config`); a single broker can only keep one."""
    return setting if setting > 0 else min(3, brokers)


def creation_config(spec: TopicSpec, replication_factor: int) -> dict[str, str]:
    """The settings ``spec``'s topic is created with: its ``config``, and min.insync.replicas
    = min(2, ``replication_factor``) unless the config sets it. Every streamfs producer writes
    with acks=all, so a record is acknowledged (a transaction committed) only once that many
    replicas hold it: with 3, it survives the loss of any one broker."""
    return {"min.insync.replicas": str(min(2, replication_factor)), **spec.config}


def replicas(topic: Any) -> int:
    """The replication factor of a topic in a broker's metadata (``TopicMetadata``): its
    partitions' fewest replicas; 0 when its metadata has no partitions."""
    return min((len(p.replicas) for p in topic.partitions.values()), default=0)


def missing_topic_message(topic: str) -> str:
    """What to say when ``topic`` does not exist yet: usually no worker has run."""
    return (f"topic {topic!r} does not exist on this broker: start `streamfs worker` (it creates "
            "the catalogue's topics) or run `streamfs topics create` with the same "
            "--topic-prefix")


class TopicMismatch(Exception):
    """A topic the catalogue (or the worker's changelogs) names exists with another number of
    partitions or a setting in :data:`REQUIRED` that differs, or no longer exists."""


class TopicsNotCreated(Exception):
    """The broker refused to create a topic (e.g. a replication factor above its number of
    brokers, or no permission)."""


def partition_problems(expected: dict[str, int], topics: dict[str, Any],
                       missing_too: bool = True) -> list[str]:
    """What is wrong with ``expected`` (``{topic: partitions}``) in a broker's metadata
    (``ClusterMetadata.topics``): topics with another partition count and, if
    ``missing_too``, topics that do not exist."""
    from confluent_kafka import KafkaError

    problems = []
    for name, partitions in expected.items():
        meta = topics.get(name)
        if meta is None or (meta.error is not None
                            and meta.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART):
            if missing_too:
                problems.append(f"{name!r} does not exist")
        elif meta.error is None and len(meta.partitions) != partitions:
            problems.append(f"{name!r} has {len(meta.partitions)} partition(s), the catalogue "
                            f"asks for {partitions}")
    return problems


def partitions_added_advice(grown: list[str], added: bool = True) -> str:
    """What to do about topics of a deployment with more partitions than its catalogue's
    (Kafka cannot take them away): the worker and ``streamfs topics create`` refuse such a
    topic. ``added``: partitions were seen added to it (else it may have been made so).

    >>> partitions_added_advice(["s.features"])[:54]
    "Partitions were added to 's.features' (kafka-topics.sh"
    >>> partitions_added_advice(["s.features"], added=False)[:39]
    'Kafka cannot take partitions away, whet'
    """
    what = (f"Partitions were added to {', '.join(map(repr, grown))} (kafka-topics.sh "
            "--alter or the admin API), and Kafka cannot take them away" if added else
            "Kafka cannot take partitions away, whether added (kafka-topics.sh --alter) or "
            "made so by another tool")
    return (f"{what}: a stream's messages go to "
            "the partition of its id's hash over the count, and its state to the changelog "
            "partition of that number, so the streams open on it would be split. A "
            "deployment's partition counts are fixed: stop the workers that use the topic, "
            "delete it (kafka-topics.sh --delete), run `streamfs topics create` and publish "
            "the streams that were open again (streamfs produce --replace); for more "
            "partitions, start another deployment with its own --topic-prefix and "
            "STREAMFS_APP_ID and a catalogue (STREAMFS_TOPICS) that asks for them")


def _setting_differs(key: str, have: str, wanted: str) -> bool:
    """Whether a topic's ``have`` differs from its spec's ``wanted``: cleanup.policy as a set
    of policies, the other settings of :data:`REQUIRED` when below ``wanted``, any other
    setting when not equal (as numbers where both are)."""
    if key == "cleanup.policy":
        return {p.strip() for p in have.split(",")} != {p.strip() for p in wanted.split(",")}
    try:
        if key in REQUIRED:
            return int(have) < int(wanted)
        return float(have) != float(wanted)
    except ValueError:
        return have != wanted


def refused_settings(spec: TopicSpec, have: dict[str, str]) -> list[str]:
    """The settings of :data:`REQUIRED` an existing topic of ``spec`` has (``have``, as the
    broker describes them) that the worker and ``topics create`` refuse, one phrase each.

    >>> spec = TopicSpec("selected", "s.sel", 4, 1, {"cleanup.policy": "compact"})
    >>> refused_settings(spec, {"cleanup.policy": "delete"})
    ['cleanup.policy=delete (streamfs needs compact)']
    """
    found = []
    for key, wanted in spec.config.items():
        value = have.get(key)
        if key in REQUIRED and value is not None and _setting_differs(key, value, wanted):
            found.append(f"{key}={value} (streamfs needs {_needed(key, wanted)})")
    return found


def _needed(key: str, wanted: str) -> str:
    """What streamfs needs of a setting of :data:`REQUIRED`: the policy itself, else a bound."""
    return wanted if key == "cleanup.policy" else f"at least {wanted}"


def config_problems(admin: Any, specs: Iterable[TopicSpec], bootstrap: str,
                    timeout: float = 30.0) -> tuple[list[str], list[str]]:
    """``(refusals, warnings)``, one line each, for the existing topics ``specs`` whose
    settings differ from their specs' ``config``: a setting of :data:`REQUIRED` is refused,
    any other (a retention, say) only a default, so warned about. One DescribeConfigs call for
    all topics; a topic whose configuration cannot be read (no permission) is warned about."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import ConfigResource, ResourceType

    specs = [s for s in specs if s.config]
    if not specs:
        return [], []
    futures = admin.describe_configs([ConfigResource(ResourceType.TOPIC, s.name) for s in specs],
                                     request_timeout=timeout)
    by_name = {resource.name: future for resource, future in futures.items()}
    refusals: list[str] = []
    warnings: list[str] = []
    for spec in specs:
        try:
            entries = by_name[spec.name].result()
        except KafkaException as exc:
            warnings.append(f"the settings of topic {spec.name!r} could not be read "
                            f"({exc.args[0].str()}): not checked")
            continue
        for key, wanted in spec.config.items():
            have = entries[key].value if key in entries else None
            if have is None or not _setting_differs(key, have, wanted):
                continue
            value = f"[{wanted}]" if "," in wanted else wanted
            command = (f"kafka-configs.sh --bootstrap-server {bootstrap} --alter --entity-type "
                       f"topics --entity-name {spec.name} --add-config {key}={value}")
            if key == "max.message.bytes" and spec.role.endswith("-changelog"):
                # a changelog's follows the setting: raised, it is the setting that changed,
                # and the topic holds every stream's state
                setting = int(wanted) - CHANGELOG_RECORD_MARGIN
                refusals.append(
                    f"existing topic {spec.name!r} has {key}={have}, and "
                    f"STREAMFS_MAX_MESSAGE_BYTES={setting} needs at least {wanted} (the setting "
                    f"+ 64 KiB: a state record must fit): set it with {command}, or set "
                    f"STREAMFS_MAX_MESSAGE_BYTES back to at most "
                    f"{int(have) - CHANGELOG_RECORD_MARGIN} (a changelog holds its streams' "
                    "state: do not delete it)")
            elif key in REQUIRED:
                need = _needed(key, wanted)
                refusals.append(f"existing topic {spec.name!r} has {key}={have}, streamfs needs "
                                f"{need} ({REQUIRED[key]}): set it with {command}, or delete "
                                "the topic if it holds nothing you need")
            else:
                warnings.append(f"existing topic {spec.name!r} has {key}={have}, streamfs "
                                f"creates it with {wanted}; kept (to change it: {command})")
    return refusals, warnings


def create_topics(admin_config: dict, specs: dict[str, TopicSpec], timeout: float = 30.0) -> dict[str, str]:
    """Create missing topics; existing ones are left alone. Returns ``{name: "created"|"exists"}``.

    Raises :class:`TopicMismatch` when an existing topic has another number of partitions than
    its spec (made by a broker's auto-creation or another tool): streams are keyed to
    partitions and the worker's changelogs are co-partitioned with its input, so it cannot
    work on it, and waiting for the count to change would only time out. Likewise when a
    setting the project relies on differs (:func:`config_problems`, one line each); other
    settings that differ, and a replication factor below the one it would be created with,
    are logged as warnings. Topics are created with :func:`replication_for` and
    :func:`creation_config`. Nothing is created unless every topic can be: the existing
    ones are checked first, and the broker is asked to validate the creation of the others
    before it makes any (:class:`TopicsNotCreated` naming each refusal)."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

    from streamfs.broker import make_client

    admin = make_client(AdminClient, admin_config)
    meta = admin.list_topics(timeout=timeout)
    brokers = len(meta.brokers)
    rf = {s.name: replication_for(s.replication_factor, brokers) for s in specs.values()}
    listed = [s for s in specs.values()
              if s.name in meta.topics and meta.topics[s.name].error is None]
    _check_existing(admin, admin_config, listed, rf, brokers, timeout)
    outcome = dict.fromkeys((s.name for s in listed), "exists")
    new = [NewTopic(s.name, num_partitions=s.partitions, replication_factor=rf[s.name],
                    config=creation_config(s, rf[s.name]))
           for s in specs.values() if s.name not in outcome]
    if not new:
        return outcome
    _validate_creation(admin, new, specs, brokers, timeout)
    not_allowed: dict[str, Any] = {}
    for name, fut in admin.create_topics(new, request_timeout=timeout).items():
        try:
            fut.result(timeout)
            outcome[name] = "created"
        except KafkaException as exc:
            err = exc.args[0]
            if err.code() in (KafkaError.TOPIC_AUTHORIZATION_FAILED,
                              KafkaError.CLUSTER_AUTHORIZATION_FAILED):
                not_allowed[name] = err
                continue
            if err.code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise TopicsNotCreated(f"topic {name!r} not created: {err.str()}") from None
            outcome[name] = "exists"
    outcome.update(_existing_or_denied(admin, admin_config, not_allowed, timeout))
    # made by another process since the metadata above (another worker starting), or hidden
    # from this user by the broker's ACLs: checked as the listed ones were
    _check_existing(admin, admin_config, [s for s in specs.values() if s not in listed
                                          and outcome.get(s.name) == "exists"],
                    rf, brokers, timeout)
    created = {s.name: s for s in specs.values() if outcome.get(s.name) == "created"}
    if created:
        wait_for_topics(admin_config, created, timeout=max(timeout, 60.0))
    return outcome


def _check_existing(admin: Any, admin_config: dict, existing: list[TopicSpec],
                    rf: dict[str, int], brokers: int, timeout: float) -> None:
    """:class:`TopicMismatch` naming every fix if a topic of ``existing`` has another partition
    count than its spec or a setting of :data:`REQUIRED` that differs; other differences
    (``rf``: the replication factors they would be created with) are logged as warnings."""
    if not existing:
        return
    counts = {s.name: s.partitions for s in existing}
    # a topic another process has just created is "already exists" to CreateTopics before
    # this broker's metadata lists it: seen as a KeyError below (exit 70) when some 35
    # workers started at once on a new prefix
    topics, late = _listed(admin, dict.fromkeys(counts), max(timeout, 60.0))
    if late:
        raise TopicsNotCreated(f"topics {', '.join(map(repr, late))} exist (the broker "
                               f"said so) but its metadata has not listed them after "
                               f"{max(timeout, 60.0):.0f} s")
    wrong = partition_problems(counts, topics, missing_too=False)
    grown = [name for name, count in counts.items() if len(topics[name].partitions) > count]
    refusals = []
    if grown:
        refusals.append(f"existing topic {'; '.join(wrong)}. "
                        + partitions_added_advice(grown, added=False))
    elif wrong:
        changelogs = any(s.role not in ROLES for s in existing)
        # two causes nothing tells apart: the catalogue's count raised (an operator scaling
        # out), or a topic made by something else (auto-creation makes 1 partition)
        refusals.append(
            f"existing topic {'; '.join(wrong)}. If the catalogue's partitions were raised "
            "(STREAMFS_TOPICS): a deployment's partition counts are fixed (a stream's "
            "messages and state go to the partition of its id's hash over the count): keep "
            "the count the topics have, or, for more partitions, start another deployment "
            "with its own --topic-prefix and STREAMFS_APP_ID and that catalogue. If "
            "something else made the topic (a broker with auto.create.topics.enable, or "
            "another tool): delete it if it holds nothing you need (kafka-topics.sh --delete "
            "--topic NAME), or use another --topic-prefix"
            + (" (a changelog: another STREAMFS_APP_ID)" if changelogs else ""))
    have = {name: replicas(topics[name]) for name in counts}
    warnings = [f"existing topic {name!r} has replication factor {have[name]}, streamfs "
                f"creates it with {rf[name]}; kept ("
                + ("kafka-reassign-partitions.sh adds replicas)" if rf[name] <= brokers else
                   f"the cluster has {brokers} broker(s), fewer than "
                   f"STREAMFS_REPLICATION_FACTOR={rf[name]})")
                for name in counts if 0 < have[name] < rf[name]]
    # min.insync.replicas as it would be created with the replicas the topic has; asked
    # beside a partition count refused, so that one run names every fix
    settings, more = config_problems(
        admin, [replace(s, config=creation_config(s, have[s.name] or rf[s.name]))
                for s in existing],
        admin_config.get("bootstrap.servers", "HOST:PORT"), timeout)
    refusals += settings
    for line in warnings + more:
        log.warning("%s", line)
    if refusals:
        raise TopicMismatch("\n".join(refusals))


def _validate_creation(admin: Any, new: list[Any], specs: dict[str, TopicSpec], brokers: int,
                       timeout: float) -> None:
    """Ask the broker whether it would create ``new`` (``NewTopic``s), creating nothing:
    :class:`TopicsNotCreated`, a line per topic refused, so that a refusal of one leaves no
    others made. A topic that exists by now, or that the ACLs do not let this user create,
    is left to the creation itself."""
    from confluent_kafka import KafkaError, KafkaException

    by_name = {s.name: s for s in specs.values()}
    refused, too_few = [], []
    for name, fut in admin.create_topics(new, request_timeout=timeout,
                                         validate_only=True).items():
        try:
            fut.result(timeout)
        except KafkaException as exc:
            err = exc.args[0]
            if err.code() in (KafkaError.TOPIC_ALREADY_EXISTS,
                              KafkaError.TOPIC_AUTHORIZATION_FAILED,
                              KafkaError.CLUSTER_AUTHORIZATION_FAILED):
                continue
            spec = by_name[name]
            if err.code() == KafkaError.INVALID_REPLICATION_FACTOR and spec.replication_factor:
                too_few.append(name)  # the setting's, the same for every topic: said once
                continue
            why = ""
            if (err.code() in (KafkaError.INVALID_CONFIG, KafkaError.INVALID_PARTITIONS)
                    and spec.role in ROLES):
                why = f" (the topic catalogue {_catalogue_file()[1]} sets it)"
            refused.append(f"topic {name!r} not created: {err.str()}{why}")
    if too_few:
        factor = by_name[too_few[0]].replication_factor
        refused.insert(0, f"STREAMFS_REPLICATION_FACTOR is {factor}, and the cluster has "
                       f"{brokers} broker(s): {', '.join(map(repr, too_few))} cannot be "
                       f"created with {factor} replicas (0: min(3, brokers))")
    if refused:
        raise TopicsNotCreated("\n".join(refused))


def _existing_or_denied(admin: Any, admin_config: dict, not_allowed: dict[str, Any],
                        timeout: float) -> dict[str, str]:
    """``{name: "exists"}`` for the topics of ``not_allowed`` (``{name: error}``) whose creation
    the broker's ACLs denied, if each exists: a user without CREATE, on a cluster whose
    administrator created the topics, is answered so even for a topic that exists. One that
    this user cannot see raises :class:`~streamfs.broker.AccessDenied`."""
    from streamfs.broker import denied

    if not not_allowed:
        return {}
    visible = admin.list_topics(timeout=timeout).topics  # only those the user may describe
    for name, err in not_allowed.items():
        if name not in visible:
            raise denied(admin_config, err, f"creating topic {name!r}",
                         "DESCRIBE on it if it exists, CREATE on it (or on the cluster) if not; "
                         "or an administrator creates the topics first: `streamfs topics "
                         "create`, with --app-id for a worker's changelogs")
    return dict.fromkeys(not_allowed, "exists")


def _listed(admin: Any, partitions: dict[str, int | None], timeout: float
            ) -> tuple[dict[str, Any], list[str]]:
    """Poll the broker's metadata until it lists every topic of ``partitions`` with that many
    partitions (None: any number, at least one, and no error), for up to ``timeout`` seconds;
    the metadata's topics and the names still missing then."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        topics = admin.list_topics(timeout=10).topics
        late = [name for name, count in partitions.items()
                if name not in topics or (len(topics[name].partitions) != count
                                          if count is not None else
                                          topics[name].error is not None
                                          or not topics[name].partitions)]
        if not late or time.monotonic() > deadline:
            return topics, late
        time.sleep(0.2)  # polling the broker's metadata, not waiting for our own work


def describe_topics(admin_config: dict, specs: dict[str, TopicSpec], timeout: float = 30.0
                    ) -> tuple[dict[str, tuple[bool | None, dict[str, str]]], int]:
    """``({role: (exists, settings)}, brokers)``: each topic's partitions, replication factor,
    min.insync.replicas and the settings its spec names, as the broker has them ("?" where
    this user may not read them), or, for a topic that does not exist, as
    :func:`create_topics` would create it; and the number of brokers. ``exists`` is None
    for a topic the broker's ACLs hide from this user (no DESCRIBE): it may exist. One
    metadata and one DescribeConfigs request (and one metadata request per topic not listed)."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

    from streamfs.broker import is_denied, make_client

    # a topic asked for by name must not be made by a broker with auto.create.topics.enable
    admin = make_client(AdminClient, {**admin_config, "allow.auto.create.topics": False})
    meta = admin.list_topics(timeout=timeout)
    found = [s.name for s in specs.values()
             if s.name in meta.topics and meta.topics[s.name].error is None]
    # a topic the user may not describe is left out of the list, as if it did not exist;
    # asked for by name, it comes with the authorization error
    hidden = {s.name for s in specs.values() if s.name not in found
              and (one := admin.list_topics(s.name, timeout=timeout).topics.get(s.name))
              is not None and is_denied(one.error)}
    configs: dict[str, dict[str, str]] = {}
    if found:
        futures = admin.describe_configs([ConfigResource(ResourceType.TOPIC, n) for n in found],
                                         request_timeout=timeout)
        for resource, future in futures.items():
            try:
                configs[resource.name] = {k: str(e.value) for k, e in future.result().items()}
            except KafkaException as exc:
                configs[resource.name] = {}
                log.warning("the settings of topic %r could not be read (%s)", resource.name,
                            exc.args[0].str())
    described = {}
    for role, spec in specs.items():
        if spec.name in found:
            topic = meta.topics[spec.name]
            have = configs[spec.name]
            settings = {"partitions": str(len(topic.partitions)),
                        "replication": str(replicas(topic)),
                        **{k: have.get(k, "?") for k in ["min.insync.replicas", *spec.config]}}
        else:
            rf = replication_for(spec.replication_factor, len(meta.brokers))
            settings = {"partitions": str(spec.partitions), "replication": str(rf),
                        **creation_config(spec, rf)}
        described[role] = (None if spec.name in hidden else spec.name in found, settings)
    return described, len(meta.brokers)


def unserved_partitions(admin: Any, partitions: dict[str, int], timeout: float = 10.0) -> list[str]:
    """The partitions (``{topic: count}``) whose leader does not answer a ListOffsets request
    yet. Right after a topic is created, metadata can name a partition's leader before that
    broker hosts the partition. Records produced then fail and are retried, and an idempotent
    producer has been seen to report two such records delivered while the log held neither.
    The broker had accepted the next sequence number as the producer's first. So nothing is
    published to a partition until its leader serves it."""
    from confluent_kafka import KafkaException, TopicPartition
    from confluent_kafka.admin import OffsetSpec

    query = {TopicPartition(t, p): OffsetSpec.latest()
             for t, n in partitions.items() for p in range(n)}
    missing = []
    for tp, fut in admin.list_offsets(query, request_timeout=timeout).items():
        try:
            fut.result()
        except KafkaException:
            missing.append(f"{tp.topic}:{tp.partition}")
    return missing


#: what a changelog's max.message.bytes adds to the worker's record limit (a state record's
#: key and framing)
CHANGELOG_RECORD_MARGIN = 65536

#: how long compaction keeps a changelog tombstone; a worker's local copy of a partition's state
#: older than this is not used (a deletion it missed may be gone from the changelog)
CHANGELOG_DELETE_RETENTION_MS = 24 * 3600 * 1000

#: a changelog's segment rolls after this long (Kafka's default is 7 days, or 1 GB): the log
#: cleaner never compacts the active segment, so with the default a changelog kept every state
#: version and every closed stream's columns for a week (about 55 KB a stream on the broker),
#: and a worker without its local copy read them all back on restore
CHANGELOG_SEGMENT_MS = 3600 * 1000


def changelog_specs(app_id: str, partitions: int, replication_factor: int,
                    max_message_bytes: int) -> dict[str, TopicSpec]:
    """The worker's state changelog topics (compacted, co-partitioned with the input)."""
    config = {"cleanup.policy": "compact",
              "max.message.bytes": str(max_message_bytes + CHANGELOG_RECORD_MARGIN),
              "delete.retention.ms": str(CHANGELOG_DELETE_RETENTION_MS),
              "segment.ms": str(CHANGELOG_SEGMENT_MS)}
    return {
        f"{role}-changelog": TopicSpec(f"{role}-changelog", f"{app_id}-{role}-streams-changelog",
                                       partitions, replication_factor, config,
                                       f"state of the worker's {role} streams")
        for role in ("features", "instances")
    }


def create_with_changelogs(admin_config: dict, catalogue: dict[str, TopicSpec],
                           changelogs: dict[str, TopicSpec]) -> dict[str, str]:
    """:func:`create_topics` of the catalogue's topics, then of the worker's changelogs: an
    existing input topic refused (:class:`TopicMismatch`) leaves no changelogs made with a
    partition count it does not have (a worker refused so made them all the same)."""
    outcome = create_topics(admin_config, catalogue)
    outcome.update(create_topics(admin_config, changelogs) if changelogs else {})
    return outcome


def wait_for_topics(admin_config: dict, specs: dict[str, TopicSpec], timeout: float = 60.0) -> None:
    """Block until the broker's metadata shows every topic with its partitions, and every
    partition's leader serves it (:func:`unserved_partitions`)."""
    import time

    from confluent_kafka.admin import AdminClient

    from streamfs.broker import make_client

    admin = make_client(AdminClient, admin_config)
    deadline = time.monotonic() + timeout
    partitions = {s.name: s.partitions for s in specs.values()}
    _, missing = _listed(admin, partitions, timeout)
    if missing:
        raise TimeoutError(f"topics not ready after {timeout} s: {missing}")
    wait_until_served(admin, partitions, max(0.0, deadline - time.monotonic()))


def wait_until_served(admin: Any, partitions: dict[str, int], timeout: float) -> None:
    """Block until every partition (``{topic: count}``) is served by its leader; TimeoutError
    naming those that are not after ``timeout`` seconds."""
    import time

    deadline = time.monotonic() + timeout
    # each request is bounded by what is left of the deadline (at least 1 s: a request needs
    # a round trip), so a broker that stops answering cannot stretch the wait by 10 s
    while missing := unserved_partitions(admin, partitions,
                                         max(1.0, deadline - time.monotonic())):
        if time.monotonic() > deadline:
            raise TimeoutError(f"partitions {', '.join(missing)} have no serving leader after "
                               f"{timeout:.0f} s")
        time.sleep(0.2)  # polling the broker, not waiting for our own work
