"""The `streamfs` command line as a user runs it: subprocesses against a real broker."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys

import numpy as np
import pytest


pytestmark = pytest.mark.kafka


def streamfs(*args: str, env: dict, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "streamfs.cli", *args], env=env, text=True,
                          capture_output=True, timeout=timeout)


def test_topics_create_is_idempotent(cli_env):
    first = streamfs("topics", "create", env=cli_env)
    second = streamfs("topics", "create", env=cli_env)
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    assert second.stdout.count(": exists") == 4


def test_topics_create_makes_the_changelogs_of_the_app_id_in_the_environment(cli_env):
    """`--app-id` read STREAMFS_APP_ID for `topics describe` and the worker, not for `topics
    create`: an administrator with the worker's environment made no changelogs."""
    import uuid

    app = f"app-{uuid.uuid4().hex[:8]}"
    out = streamfs("topics", "create", env={**cli_env, "STREAMFS_APP_ID": app})
    assert out.returncode == 0, out.stderr
    made = [line for line in out.stdout.splitlines() if line.startswith(f"{app}-")]
    assert len(made) == 2 and all(line.endswith(": created") for line in made), out.stdout
    described = streamfs("topics", "describe", env={**cli_env, "STREAMFS_APP_ID": app})
    assert described.returncode == 0 and "would be created" not in described.stdout, \
        described.stdout + described.stderr


@pytest.mark.parametrize("command", [("topics", "create"), ("worker",)])
def test_a_topic_with_other_partitions_is_refused_in_one_line(kafka_bootstrap, tmp_path, command):
    """What a broker's auto-creation leaves behind (one partition where the catalogue asks for
    eight): `topics create` and the worker say so and exit 1 at once, instead of the worker
    waiting a minute for the count to change and dying with a traceback."""
    import uuid

    from streamfs.topics import TopicSpec, create_topics

    prefix = f"t{uuid.uuid4().hex[:10]}."
    create_topics({"bootstrap.servers": kafka_bootstrap},
                  {"f": TopicSpec("f", f"{prefix}features", 1, 1)})
    env = {**os.environ, "STREAMFS_BOOTSTRAP_SERVERS": kafka_bootstrap,
           "STREAMFS_TOPIC_PREFIX": prefix, "STREAMFS_DATA_DIR": str(tmp_path),
           "STREAMFS_APP_ID": prefix.rstrip(".")}  # `topics create` makes its changelogs too
    out = streamfs(*command, env=env, timeout=120)
    assert out.returncode == 1, out.stdout + out.stderr
    assert f"'{prefix}features' has 1 partition(s), the catalogue asks for 8" in out.stderr
    assert "Traceback" not in out.stderr
    # and nothing was made for partitions the input does not have: the worker made its
    # changelogs with 8 before it refused
    from confluent_kafka.admin import AdminClient

    listed = AdminClient({"bootstrap.servers": kafka_bootstrap}).list_topics(timeout=30).topics
    assert not [name for name in listed if name.startswith(prefix.rstrip("."))
                and name.endswith("-changelog")], sorted(listed)


def test_a_partition_count_and_a_setting_refused_are_said_in_one_run(kafka_bootstrap):
    """`topics create` said the partition count alone; the setting came at the next run."""
    import uuid

    from streamfs.topics import TopicSpec, create_topics

    prefix = f"t{uuid.uuid4().hex[:10]}."
    create_topics({"bootstrap.servers": kafka_bootstrap}, {
        "f": TopicSpec("f", f"{prefix}features", 1, 1),
        "s": TopicSpec("s", f"{prefix}selected-features", 8, 1, {"cleanup.policy": "delete"})})
    env = {**os.environ, "STREAMFS_BOOTSTRAP_SERVERS": kafka_bootstrap,
           "STREAMFS_TOPIC_PREFIX": prefix}
    out = streamfs("topics", "create", env=env, timeout=120)
    assert out.returncode == 1, out.stdout + out.stderr
    assert f"'{prefix}features' has 1 partition(s), the catalogue asks for 8" in out.stderr
    assert (f"existing topic '{prefix}selected-features' has cleanup.policy=delete, streamfs "
            "needs compact ") in out.stderr


def test_a_catalogue_raised_to_more_partitions_is_told_what_works(kafka_bootstrap, tmp_path):
    """An operator raising `partitions` in the catalogue was told that "something else made"
    the topics streamfs had made, and to delete them."""
    import uuid
    from pathlib import Path

    prefix = f"t{uuid.uuid4().hex[:10]}."
    shipped = (Path(__file__).resolve().parents[2] / "topics" / "catalogue.toml").read_text()
    env = {**os.environ, "STREAMFS_BOOTSTRAP_SERVERS": kafka_bootstrap,
           "STREAMFS_TOPIC_PREFIX": prefix}
    catalogues = {}
    for count in (1, 2):
        catalogues[count] = tmp_path / f"catalogue-{count}.toml"
        catalogues[count].write_text(shipped.replace("partitions = 8", f"partitions = {count}"))
    made = streamfs("topics", "create", env={**env, "STREAMFS_TOPICS": str(catalogues[1])})
    assert made.returncode == 0, made.stderr
    out = streamfs("topics", "create", env={**env, "STREAMFS_TOPICS": str(catalogues[2])},
                   timeout=120)
    assert out.returncode == 1, out.stdout + out.stderr
    assert f"'{prefix}features' has 1 partition(s), the catalogue asks for 2" in out.stderr
    assert ("If the catalogue's partitions were raised (STREAMFS_TOPICS): a deployment's "
            "partition counts are fixed") in out.stderr
    assert "start another deployment with its own --topic-prefix and STREAMFS_APP_ID" \
        in out.stderr


def test_partitions_added_to_a_topic_in_use_get_advice_that_works(kafka_bootstrap, tmp_path):
    """Partitions added to the features topic (an operator scaling out): `topics create` said
    "Something else made it ...: delete it if it holds nothing you need", of a topic streamfs
    made and that held live streams."""
    import uuid

    from confluent_kafka.admin import AdminClient, NewPartitions

    prefix = f"t{uuid.uuid4().hex[:10]}."
    env = {**os.environ, "STREAMFS_BOOTSTRAP_SERVERS": kafka_bootstrap,
           "STREAMFS_TOPIC_PREFIX": prefix}
    assert streamfs("topics", "create", env=env).returncode == 0
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    admin.create_partitions([NewPartitions(f"{prefix}features", 12)])[f"{prefix}features"] \
        .result(30)
    out = streamfs("topics", "create", env=env, timeout=120)
    assert out.returncode == 1, out.stdout + out.stderr
    # the same words for a topic made with more partitions than the catalogue's: nothing
    # tells the two apart, so neither is said to have happened
    assert (f"'{prefix}features' has 12 partition(s), the catalogue asks for 8. Kafka cannot "
            "take partitions away, whether added (kafka-topics.sh --alter) or made so by "
            "another tool: ") in out.stderr
    assert "Something else" not in out.stderr
    assert "stop the workers that use the topic, delete it" in out.stderr
    # describe, the read-only check, flags every setting the worker refuses, and exits 1
    # (it flagged the partitions only, and exited 0)
    from confluent_kafka.admin import (AlterConfigOpType, ConfigEntry, ConfigResource,
                                       ResourceType)

    from streamfs.topics import load_catalogue

    selected = load_catalogue(prefix)["selected"].name
    policy = ConfigResource(ResourceType.TOPIC, selected, incremental_configs=[ConfigEntry(
        "cleanup.policy", "delete", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([policy])[policy].result(30)
    described = streamfs("topics", "describe", env=env, timeout=120)
    assert described.returncode == 1, described.stderr
    assert ("(REFUSED by the worker and `topics create`: 12 partitions (the catalogue asks "
            "for 8))" in described.stdout.split(f"{prefix}features ", 1)[1].split("\n")[1])
    assert ("(REFUSED by the worker and `topics create`: cleanup.policy=delete (streamfs needs "
            "compact))" in described.stdout.split(f"{selected} ", 1)[1].split("\n")[1])
    assert described.stdout.count("REFUSED") == 2, described.stdout
    assert described.stderr.startswith("Error: 2 topic(s) have settings the worker refuses")


def test_partitions_added_under_a_running_worker_stop_it_in_one_line(kafka_config,
                                                                    topic_prefix, start_worker):
    """The group's rebalance handed the new partition to the worker before its topic check saw
    it: the worker died restoring a changelog partition that does not exist (exit 70, a
    traceback). Whichever sees the new partitions first, the rebalance or the topic check
    (every 10 s), stops the worker in one line naming the topic and what to do (the
    rebalance's own refusal: tests/worker/test_app.py)."""
    from confluent_kafka.admin import AdminClient, NewPartitions

    worker = start_worker()
    worker.wait_ready()
    features = f"{topic_prefix}features"
    admin = AdminClient(kafka_config)  # held: its futures fail once it is destroyed
    admin.create_partitions([NewPartitions(features, 10)])[features].result(30)
    assert worker.proc.wait(120) == 1, worker.log_tail()
    log = worker.log_path.read_text()
    errors = [line for line in log.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1, log
    assert errors[0].startswith(f"Error: a topic of this worker changed while it ran: "
                                f"'{features}' has "), log
    # the rebalance's words, or the topic check's
    assert (f"'{features}' has more than the catalogue's 8 partitions now." in errors[0]
            or f"'{features}' has 10 partition(s), the catalogue asks for 8." in errors[0]), log
    assert f"Partitions were added to '{features}' (kafka-topics.sh --alter" in errors[0], log
    assert "Traceback" not in log


@pytest.mark.parametrize("command", [("topics", "create"), ("worker",)])
def test_existing_topics_with_settings_streamfs_relies_on_changed_are_refused(
        kafka_bootstrap, tmp_path, command):
    """The operator's walkthrough: a results topic that deletes after 60 s instead of
    compacting, and an input topic that takes 100 kB records, were accepted silently."""
    import uuid

    from streamfs.topics import TopicSpec, create_topics

    prefix = f"t{uuid.uuid4().hex[:10]}."
    create_topics({"bootstrap.servers": kafka_bootstrap}, {
        "s": TopicSpec("s", f"{prefix}selected-features", 8, 1,
                       {"cleanup.policy": "delete", "retention.ms": "60000"}),
        "f": TopicSpec("f", f"{prefix}features", 8, 1, {"max.message.bytes": "100000"})})
    env = {**os.environ, "STREAMFS_BOOTSTRAP_SERVERS": kafka_bootstrap,
           "STREAMFS_TOPIC_PREFIX": prefix, "STREAMFS_DATA_DIR": str(tmp_path),
           "STREAMFS_WEB_PORT": "0"}
    out = streamfs(*command, env=env, timeout=120)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "Traceback" not in out.stderr
    refused = [line for line in out.stderr.splitlines() if "streamfs needs" in line]
    assert len(refused) == 2, out.stderr
    assert (f"existing topic '{prefix}features' has max.message.bytes=100000, streamfs needs "
            "at least 8388608 ") in refused[0]
    assert (f"existing topic '{prefix}selected-features' has cleanup.policy=delete, streamfs "
            "needs compact ") in refused[1]
    assert all("kafka-configs.sh --bootstrap-server " in line for line in refused)


def test_topics_create_warns_about_an_input_retention_that_differs(kafka_bootstrap):
    import uuid

    from streamfs.topics import TopicSpec, create_topics, load_catalogue

    prefix = f"t{uuid.uuid4().hex[:10]}."
    spec = load_catalogue(prefix)["features"]
    create_topics({"bootstrap.servers": kafka_bootstrap},
                  {"f": TopicSpec(spec.role, spec.name, spec.partitions, 1,
                                  {**spec.config, "retention.ms": "60000"})})
    env = {**os.environ, "STREAMFS_BOOTSTRAP_SERVERS": kafka_bootstrap,
           "STREAMFS_TOPIC_PREFIX": prefix}
    out = streamfs("topics", "create", env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert f"{spec.name}: exists" in out.stdout.splitlines()
    assert (f"WARNING streamfs.topics: existing topic '{spec.name}' has retention.ms=60000, "
            "streamfs creates it with 604800000; kept") in out.stderr


def test_topics_describe_shows_replication_and_min_insync_replicas(cli_env):
    """Of the catalogue's topics as the broker has them, and of the worker's changelogs as
    they would be created (no worker has run)."""
    assert streamfs("topics", "create", env=cli_env).returncode == 0
    out = streamfs("topics", "describe", "--app-id", "described", env=cli_env)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    prefix = cli_env["STREAMFS_TOPIC_PREFIX"]
    settings = {line.split()[1]: line.split()[2:] for line in lines[0::2]}
    assert sorted(settings) == sorted([f"{prefix}{suffix}" for suffix in (
        "features", "instances", "selected-features", "dead-letter")] + [
        f"described-{role}-streams-changelog" for role in ("features", "instances")])
    assert all(values[1:3] == ["replication=1", "min.insync.replicas=1"]
               for values in settings.values()), out.stdout
    assert "cleanup.policy=compact" in settings[f"{prefix}selected-features"]
    created = [line.endswith("(not created yet: as it would be created)") for line in lines[1::2]]
    assert created == [False] * 4 + [True] * 2, out.stdout
    # describing creates nothing, even on a broker with auto.create.topics.enable (the local one)
    again = streamfs("topics", "describe", "--app-id", "described", env=cli_env)
    assert again.stdout == out.stdout, again.stdout


def test_produce_worker_watch_and_offline_select_agree(cli_env, wdbc_csv, start_worker):
    start_worker()
    produced = streamfs("produce", "features", str(wdbc_csv), "--label", "diagnosis",
                        "--stream", "cli-wdbc", "--algorithm", "saola", "--param", "alpha=0.01",
                        "--block-bytes", "20000", env=cli_env)
    assert produced.returncode == 0, produced.stderr
    waited = streamfs("watch", "cli-wdbc", "--until-final", "--timeout", "240", "--json",
                      env=cli_env)
    assert waited.returncode == 0, waited.stderr
    once = streamfs("watch", "cli-wdbc", "--once", "--json", env=cli_env)
    assert once.returncode == 0, once.stderr
    (final,) = [json.loads(line) for line in once.stdout.splitlines()]
    assert final["final"] and final["stream"] == "cli-wdbc"

    offline = streamfs("select", str(wdbc_csv), "--label", "diagnosis", "--algorithm", "saola",
                       "--param", "alpha=0.01", "--json", env=cli_env)
    assert offline.returncode == 0, offline.stderr
    (result,) = [json.loads(line) for line in offline.stdout.splitlines()]
    assert [s["feature"] for s in result["selection"]] == [s["feature"] for s in final["selection"]]
    assert len(final["selection"]) >= 1


def test_watch_once_without_results_fails_clearly(cli_env):
    out = streamfs("watch", "nobody", "--once", env=cli_env)
    assert out.returncode == 1 and "no selection yet" in out.stderr


def test_select_reports_bad_parameters_without_traceback(tmp_path):
    path = tmp_path / "d.npz"
    rng = np.random.default_rng(0)
    np.savez(path, X=rng.normal(size=(30, 4)), y=np.arange(30) % 2)
    out = streamfs("select", str(path), "--algorithm", "saola", "--param", "bogus=1", env=dict(os.environ))
    assert out.returncode != 0 and "bogus" in out.stderr and "Traceback" not in out.stderr


@pytest.mark.parametrize("algorithm, change, needle", [
    ("saola", lambda X: X.__setitem__((3, 2), np.nan), "NaN or infinite values in columns [2]"),
    ("kofsd", lambda X: X.__setitem__((slice(None), 1), 1e300), "too large for K-OFSD"),
    ("ofs", lambda X: X.__setitem__((5, 0), np.inf), "infinite values in data rows [5]"),
])
def test_select_refuses_values_the_worker_would_refuse_in_one_line(tmp_path, algorithm, change,
                                                                 needle):
    path = tmp_path / "d.npz"
    X = np.random.default_rng(0).normal(size=(30, 4))
    change(X)
    np.savez(path, X=X, y=np.arange(30) % 2)
    out = streamfs("select", str(path), "-a", algorithm, env=dict(os.environ))
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert out.stderr.startswith(f"Error: {path}: ") and needle in out.stderr  # whose data


def test_select_on_a_missing_file_is_a_clean_error(tmp_path):
    out = streamfs("select", str(tmp_path / "missing.csv"), "--algorithm", "saola",
                   env=dict(os.environ))
    assert out.returncode == 2 and "no such file" in out.stderr and "Traceback" not in out.stderr


@pytest.mark.parametrize("command", [["worker"], ["select", "{data}", "-a", "kofsd"]])
def test_a_bad_kernel_thread_count_is_refused_before_anything_runs(tmp_path, command):
    data = tmp_path / "d.npz"
    rng = np.random.default_rng(0)
    np.savez(data, X=rng.normal(size=(40, 100)), y=np.arange(40) % 2)
    # checked before the broker is even tried: the address below is never reached
    env = {**os.environ, "STREAMFS_KERNEL_THREADS": "zero",
           "STREAMFS_BOOTSTRAP_SERVERS": "127.0.0.1:1"}
    out = streamfs(*(a.format(data=data) for a in command), env=env, timeout=60)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    # one line naming the setting, not a rejected stream
    assert out.stderr.strip() == (
        "Error: STREAMFS_KERNEL_THREADS must be a whole number from 1 to 1024, got 'zero'")


@pytest.mark.parametrize("command", [["worker"], ["topics", "create"], ["watch", "--once"]])
@pytest.mark.parametrize("env,needle", [
    ({"STREAMFS_SECURITY_PROTOCOL": "bogus"}, "Error: STREAMFS_SECURITY_PROTOCOL must be one of "),
    ({"STREAMFS_SECURITY_PROTOCOL": "SASL_PLAINTEXT", "STREAMFS_SASL_MECHANISM": "FOO"},
     "Error: STREAMFS_SASL_MECHANISM must be one of "),
    ({"STREAMFS_SECURITY_PROTOCOL": "SSL", "STREAMFS_SSL_CA_LOCATION": "/nonexistent"},
     "Error: STREAMFS_SSL_CA_LOCATION must name a file or directory"),
])
def test_a_bad_security_setting_is_refused_by_name_before_anything_runs(command, env, needle):
    """It was a 40-line traceback of librdkafka's KafkaException (_INVALID_ARG), exit 1."""
    # checked before the broker is even tried: the address below is never reached
    env = {**os.environ, "STREAMFS_BOOTSTRAP_SERVERS": "127.0.0.1:1", **env}
    out = streamfs(*command, env=env, timeout=60)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert out.stderr.count("\n") == 1 and out.stderr.startswith(needle), out.stderr


@pytest.mark.parametrize("env,args,line", [
    ({"STREAMFS_APP_ID": ""}, [], "Error: STREAMFS_APP_ID: must be 1 to 221 characters"),
    ({"STREAMFS_APP_ID": "bad id"}, [], "Error: STREAMFS_APP_ID: must be 1 to 221 characters"),
    ({"STREAMFS_TOPIC_PREFIX": "x" * 230}, [],
     "Error: STREAMFS_APP_ID is not set, and the app id taken from the topic prefix must be"),
    ({}, ["--app-id", "a/b"], "Error: Invalid value for '--app-id': must be 1 to 221"),
])
def test_an_app_id_the_worker_cannot_use_is_refused_before_anything_runs(env, args, line):
    """An empty STREAMFS_APP_ID aborted the process inside librdkafka (exit 134, a core dump
    where they are kept); one the broker would not take in a changelog's name stopped the
    worker with exit 1 and a line naming the topic, not the setting."""
    env = {**os.environ, "STREAMFS_BOOTSTRAP_SERVERS": "127.0.0.1:1", **env}
    out = streamfs("worker", *args, env=env, timeout=60)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert out.stderr.strip().splitlines()[-1].startswith(line), out.stderr
    if not args:
        assert out.stderr.count("\n") == 1, out.stderr


@pytest.mark.parametrize("command", [["worker"], ["topics", "create"]])
@pytest.mark.parametrize("catalogue,reason", [
    (None, "the topic catalogue cannot be read: No such file or directory"),
    ("x = [\n", "the topic catalogue is not TOML: "),
    ("mixed", "the features and instances topics of the topic catalogue must have the same "
              "partition count, not 4 and 8"),
])
def test_a_catalogue_that_cannot_be_used_is_refused_before_anything_runs(tmp_path, command,
                                                                        catalogue, reason):
    """STREAMFS_TOPICS naming a missing or broken file, or one whose input topics differ in
    partitions: a traceback, from the worker after its warm-up with exit 70 (a supervisor's
    restart loop); `topics create` made the topics of the last one."""
    from streamfs.topics import CATALOGUE

    path = tmp_path / "catalogue.toml"
    if catalogue == "mixed":
        path.write_text(CATALOGUE.read_text().replace("partitions = 8", "partitions = 4", 1))
    elif catalogue is not None:
        path.write_text(catalogue)
    # checked before the broker is even tried: the address below is never reached
    env = {**os.environ, "STREAMFS_BOOTSTRAP_SERVERS": "127.0.0.1:1",
           "STREAMFS_TOPICS": str(path)}
    out = streamfs(*command, env=env, timeout=60)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert out.stderr.count("\n") == 1, out.stderr
    assert out.stderr.startswith(f"Error: STREAMFS_TOPICS {str(path)!r}: {reason}"), out.stderr


@pytest.mark.parametrize("value", ["warn", "LOUD"])
def test_a_bad_log_level_from_the_environment_is_refused_by_its_variable(value):
    """It said "Invalid value for '--log-level'" after a usage line, naming a flag the
    operator never gave."""
    env = {**os.environ, "STREAMFS_BOOTSTRAP_SERVERS": "127.0.0.1:1", "STREAMFS_LOG_LEVEL": value}
    out = streamfs("worker", env=env, timeout=60)
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert out.stderr.startswith(f"Error: STREAMFS_LOG_LEVEL: {value!r} is not one of "), \
        out.stderr
    assert all(f"'{level}'" in out.stderr for level in
               ("debug", "info", "warning", "error", "critical")), out.stderr
    flag = streamfs("worker", "--log-level", value, env=env, timeout=60)  # the flag's own
    assert flag.returncode == 2 and "Invalid value for '--log-level'" in flag.stderr
    assert "STREAMFS_LOG_LEVEL" not in flag.stderr


@pytest.mark.parametrize("command", [
    ["worker"], ["topics", "create"], ["watch", "--once"], ["dead-letters"],
    ["produce", "features", "{data}", "--stream", "s", "-a", "saola", "--no-progress"]])
@pytest.mark.parametrize("env,line", [
    ({"STREAMFS_SECURITY_PROTOCOL": "SSL", "STREAMFS_SSL_CA_LOCATION": "{junk}"},
     "Error: STREAMFS_SSL_CA_LOCATION: the Kafka client refused it: ssl.ca.location failed: "),
    # (the settings' own check now, naming what is missing: librdkafka said "sasl.username
    # and sasl.password must be set")
    ({"STREAMFS_SECURITY_PROTOCOL": "SASL_PLAINTEXT", "STREAMFS_SASL_MECHANISM": "PLAIN"},
     "Error: STREAMFS_SASL_MECHANISM=PLAIN logs in with a user name and a password: set "
     "STREAMFS_SASL_USERNAME and STREAMFS_SASL_PASSWORD\n"),
])
def test_a_client_configuration_librdkafka_refuses_is_one_line_naming_the_setting(
        tmp_path, command, env, line):
    """What the settings' own checks cannot tell (a CA file that holds no certificate)
    librdkafka tells when a client is made: it was a traceback of
    KafkaException (_INVALID_ARG), exit 1 ("Kafka client error: ..." from produce)."""
    files = {"data": tmp_path / "d.csv", "junk": tmp_path / "ca.pem"}
    files["data"].write_text("a,b,y\n" + "".join(f"{i},{i % 3},{i % 2}\n" for i in range(20)))
    files["junk"].write_text("not a certificate\n")
    env = {**os.environ, "STREAMFS_BOOTSTRAP_SERVERS": "127.0.0.1:1",
           **{k: v.format(**files) for k, v in env.items()}}
    out = streamfs(*(a.format(**files) for a in command), env=env, timeout=60)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert out.stderr.count("\n") == 1 and out.stderr.startswith(line), out.stderr


def test_the_worker_s_own_clients_refused_by_librdkafka_are_one_line_not_a_crash(tmp_path):
    """The worker's clients add their own keys to the settings': one librdkafka refuses stops
    the worker with the line above (exit 2), not "worker failed" and a traceback (exit 70,
    restarted by a supervisor in a loop). Run past the command's own broker check."""
    junk = tmp_path / "ca.pem"
    junk.write_text("not a certificate\n")
    script = ("import streamfs.cli as cli, streamfs.cli.worker as cmd, streamfs.worker.startup as startup\n"
              "cmd._reachable = lambda settings: None\n"  # straight to the worker's clients
              "startup.warm_up = lambda progress: None\n"
              "cli.main(['worker', '--web-port', '0'])\n")
    env = {**os.environ, "STREAMFS_BOOTSTRAP_SERVERS": "127.0.0.1:1",
           "STREAMFS_SECURITY_PROTOCOL": "SSL", "STREAMFS_SSL_CA_LOCATION": str(junk)}
    out = subprocess.run([sys.executable, "-c", script], env=env, text=True,
                         capture_output=True, timeout=120)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert out.stderr.strip().splitlines()[-1].startswith(
        "Error: STREAMFS_SSL_CA_LOCATION: the Kafka client refused it: "), out.stderr


@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM", "SIGHUP"])
def test_a_start_up_signal_whose_exception_python_ignores_still_stops_the_worker(signame):
    """The signal came while the collector ran a weakref callback (seen: `kill` during the
    warm-up), where Python prints an exception and drops it: the worker logged that it
    stopped, then started, with SIGINT and SIGTERM ignored. Here the signal comes inside a
    ``__del__``, where its exception is dropped in the same way. Python's "Exception ignored
    in ..." and its traceback, printed beside the stop's log line, are not said either: the
    stop is no fault."""
    script = ("import os, signal\n"
              "import streamfs.cli as cli, streamfs.cli.worker as cmd, streamfs.worker.startup as startup\n"
              "class Collected:\n"
              "    def __del__(self):\n"
              f"        os.kill(os.getpid(), signal.{signame})\n"
              "        sum(range(1000))  # the handler runs here\n"
              "cmd._reachable = lambda settings: None\n"
              "startup.warm_up = lambda progress: Collected()\n"
              "cli.main(['worker', '--web-port', '0'])\n")
    env = {**os.environ, "STREAMFS_BOOTSTRAP_SERVERS": "127.0.0.1:1"}
    out = subprocess.run([sys.executable, "-c", script], env=env, text=True,
                         capture_output=True, timeout=120)
    assert out.returncode == 0, out.stderr  # was 70: it went on, to a broker it cannot reach
    assert f"INFO streamfs.worker: {signame}: stopped during start-up" in out.stderr
    assert "Exception ignored in" not in out.stderr and "Traceback" not in out.stderr, \
        out.stderr
    assert "worker failed" not in out.stderr and "started" not in out.stderr, out.stderr


@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM", "SIGHUP"])
@pytest.mark.parametrize("during", ["_reachable", "warm_up"])
def test_a_worker_stopped_during_start_up_says_so_and_exits_as_once_started(signame, during):
    """Once started, SIGINT and SIGTERM log a line and exit 0 after the batch in progress;
    before, SIGINT was click's "Aborted!" (exit 1) and SIGTERM a silent death (143). The
    signal is sent from the step named `during` (the command's broker check, the warm-up), so
    it arrives there and nowhere else."""
    send = f"lambda *_: os.kill(os.getpid(), signal.{signame})"
    script = ("import os, signal\n"
              "import streamfs.cli as cli, streamfs.cli.worker as cmd, streamfs.worker.startup as startup\n"
              f"cmd._reachable = {send if during == '_reachable' else 'lambda settings: None'}\n"
              f"startup.warm_up = {send if during == 'warm_up' else 'None'}\n"
              "cli.main(['worker', '--web-port', '0'])\n")
    assert_stopped_at_once(script, signame)


def test_a_start_up_stop_a_library_raised_as_its_own_error_still_stops_the_worker():
    """SIGTERM 35 s into a first start's compile: numba took the stop's exception and raised
    "RuntimeError: no compiled object yet for <Library '_nb_saola_fisher'>": "worker failed",
    a traceback and exit 70, where a stop exits 0."""
    script = ("import os, signal\n"
              "import streamfs.cli as cli, streamfs.cli.worker as cmd, streamfs.worker.startup as startup\n"
              "def compiling(progress):\n"
              "    try:\n"
              "        os.kill(os.getpid(), signal.SIGTERM)\n"
              "        sum(range(1000))  # the handler runs here\n"
              "    except BaseException:\n"
              "        raise RuntimeError('no compiled object yet')  # as numba does\n"
              "cmd._reachable = lambda settings: None\n"
              "startup.warm_up = compiling\n"
              "cli.main(['worker', '--web-port', '0'])\n")
    assert_stopped_at_once(script, "SIGTERM")


@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM", "SIGHUP"])
def test_a_signal_while_the_worker_modules_load_stops_it_as_one_during_start_up(signame):
    """Loading the worker's modules takes about two seconds, before its own handlers exist: a
    SIGTERM then ended it with exit 143 and no line, a SIGINT with click's "Aborted!" and
    exit 1. The signal is sent as Python begins to import the worker's main module."""
    script = ("import importlib.abc, os, signal, sys\n"
              "class SignalOnImport(importlib.abc.MetaPathFinder):\n"
              "    def find_spec(self, name, path, target=None):\n"
              "        if name == 'streamfs.worker.app':\n"
              f"            os.kill(os.getpid(), signal.{signame})\n"
              "        return None\n"
              "sys.meta_path.insert(0, SignalOnImport())\n"
              "import streamfs.cli as cli\n"
              "assert 'streamfs.worker.app' not in sys.modules\n"
              "cli.main(['worker', '--web-port', '0'])\n")
    assert_stopped_at_once(script, signame)  # nothing begun: no broker check, no warm-up


def test_a_setting_mistake_is_said_before_the_worker_modules_load():
    """They take seconds to load (numba, the algorithms): the worker said a mistake in its
    settings 4 s after the start, the other commands in under one."""
    script = ("import sys\n"
              "import streamfs.cli as cli\n"
              "try:\n"
              "    cli.main(['worker', '--web-port', '0'])\n"
              "finally:\n"
              "    print(sorted(m for m in sys.modules if m.startswith('streamfs.worker')))\n")
    out = subprocess.run([sys.executable, "-c", script], text=True, capture_output=True,
                         env={**os.environ, "STREAMFS_BATCH_MS": "abc"}, timeout=120)
    assert out.returncode == 2 and out.stderr.startswith("Error: STREAMFS_BATCH_MS must be"), \
        out.stderr
    assert "streamfs.worker.app" not in out.stdout and "streamfs.worker.startup" not in \
        out.stdout, out.stdout


def assert_stopped_at_once(script: str, signame: str) -> None:
    """Python ``script`` (a worker that gets ``signame`` during its start-up, its broker
    address dead) exits 0 with the one line that says so, and nothing else."""
    env = {**os.environ, "STREAMFS_BOOTSTRAP_SERVERS": "127.0.0.1:1"}
    out = subprocess.run([sys.executable, "-c", script], env=env, text=True,
                         capture_output=True, timeout=120)
    assert out.returncode == 0, out.stderr
    # (from its web server on, the worker's first line says what it runs with)
    lines = [line for line in out.stderr.strip().splitlines()
             if "INFO streamfs.worker: streamfs " not in line or " worker " not in line]
    assert len(lines) == 1, out.stderr
    assert lines[0].endswith(f"INFO streamfs.worker: {signame}: stopped during start-up")


@pytest.fixture
def grouped_csv(tmp_path):
    """8 columns in 3 groups, two of them relevant (columns 1 and 5)."""
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 80)
    X = rng.normal(size=(80, 8))
    X[:, 1] += 2 * y
    X[:, 5] += 1.5 * y
    path = tmp_path / "g.csv"
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow([f"f{j}" for j in range(8)] + ["class"])
        for row, label in zip(X, y):
            w.writerow([repr(float(v)) for v in row] + [int(label)])
    groups = [[0, 1, 2], [3, 4], [5, 6, 7]]
    (tmp_path / "groups.json").write_text(json.dumps(groups))
    return path, X, y, groups


def test_select_runs_group_saola_with_groups_as_produce_and_the_worker_do(
        cli_env, grouped_csv, start_worker):
    from streamfs.algorithms.group_saola import GroupSAOLA

    path, X, y, groups = grouped_csv
    groups_file = str(path.parent / "groups.json")
    offline = streamfs("select", str(path), "--label", "class", "-a", "group-saola",
                       "--groups", groups_file, "--json", env=cli_env)
    assert offline.returncode == 0, offline.stderr
    (result,) = [json.loads(line) for line in offline.stdout.splitlines()]
    picked = [(s["feature"], s["group"]) for s in result["selection"]]
    fitted = GroupSAOLA().fit(X, y, groups=groups)
    assert picked == [(f, fitted.group_of_[f]) for f in fitted.selected_]
    assert picked  # the relevant columns are found

    start_worker()
    produced = streamfs("produce", "features", str(path), "--label", "class", "--stream",
                        "cli-groups", "-a", "group-saola", "--groups", groups_file, env=cli_env)
    assert produced.returncode == 0, produced.stderr
    waited = streamfs("watch", "cli-groups", "--until-final", "--timeout", "240", "--json",
                      env=cli_env)
    assert waited.returncode == 0, waited.stderr
    final = json.loads(waited.stdout.splitlines()[-1])
    assert final["final"] and [(s["feature"], s["group"]) for s in final["selection"]] == picked


def test_select_asks_group_saola_for_the_groups_by_its_own_option(grouped_csv):
    path, *_ = grouped_csv
    out = streamfs("select", str(path), "--label", "class", "-a", "group-saola",
                   env=dict(os.environ))
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert "group-saola needs the groups of the columns (--groups FILE: " in out.stderr
    assert "groups=" not in out.stderr  # the Python API's argument: no option of the command
    bad = path.parent / "bad.json"
    bad.write_text("[[0, 1], [1, 2]]")
    out = streamfs("select", str(path), "--label", "class", "-a", "group-saola", "--groups",
                   str(bad), env=dict(os.environ))
    assert out.returncode == 2 and f"{bad}: column 1 is in groups 0 and 1" in out.stderr


def test_select_table_shows_the_group_of_each_feature_as_json_does(grouped_csv):
    path, X, y, groups = grouped_csv
    args = ("select", str(path), "--label", "class")
    table = streamfs(*args, "-a", "group-saola", "--groups", str(path.parent / "groups.json"),
                     env={**os.environ, "COLUMNS": "200"})
    assert table.returncode == 0, table.stderr
    header = next(line for line in table.stdout.splitlines() if line.startswith("┃"))
    assert [c.strip() for c in header.strip("┃│ ").split("┃")] == [
        "#", "feature", "name", "group", "score", "affiliated"]
    as_json = json.loads(streamfs(*args, "-a", "group-saola", "--groups",
                                  str(path.parent / "groups.json"), "--json",
                                  env=dict(os.environ)).stdout)
    rows = [[c.strip() for c in line.strip("│ ").split("│")]
            for line in table.stdout.splitlines() if line.startswith("│")]
    assert [(int(r[1]), r[2], int(r[3])) for r in rows] == [
        (s["feature"], s["name"], s["group"]) for s in as_json["selection"]]
    plain = streamfs(*args, "-a", "saola", env={**os.environ, "COLUMNS": "200"})
    assert "group" not in next(line for line in plain.stdout.splitlines()
                               if line.startswith("┃"))  # no column for other algorithms


@pytest.mark.parametrize("env,line", [
    ({"STREAMFS_WEB_HOST": ""}, "Error: STREAMFS_WEB_HOST is empty (a template left unfilled?)"),
    ({"STREAMFS_TOPICS": ""}, "Error: STREAMFS_TOPICS is empty (a template left unfilled?)"),
])
def test_an_empty_web_host_or_catalogue_is_refused_before_anything_runs(env, line):
    """An empty STREAMFS_WEB_HOST served /health and /metrics on every interface; an empty
    STREAMFS_TOPICS said "STREAMFS_TOPICS '.': ... Is a directory"."""
    env = {**os.environ, "STREAMFS_BOOTSTRAP_SERVERS": "127.0.0.1:1", **env}
    out = streamfs("worker", env=env, timeout=60)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert out.stderr.count("\n") == 1 and out.stderr.startswith(line), out.stderr
