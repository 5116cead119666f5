"""What a new user meets: names in results, mistakes refused at the door with one line and
nothing published, re-used stream ids, an unreachable broker, dead letters, NDJSON and JSON
results. Everything against a real broker and a real worker process."""

from __future__ import annotations

import json
import re
import os
import subprocess
import sys
import time

import numpy as np
import pytest
from click.testing import CliRunner

from streamfs.cli import main
from streamfs.topics import load_catalogue

pytestmark = pytest.mark.kafka


def streamfs(*args: str, env: dict, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "streamfs.cli", *map(str, args)], env=env,
                          text=True, capture_output=True, timeout=timeout)


def _topic_size(kafka_config: dict, topic: str) -> int:
    """Records on ``topic``; retried while a just-created topic's leaders are being elected."""
    from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

    electing = {KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE,
                KafkaError.UNKNOWN_TOPIC_OR_PART}

    consumer = Consumer({**kafka_config, "group.id": "size-probe"})
    deadline = time.monotonic() + 30
    try:
        while True:
            try:
                parts = consumer.list_topics(topic, timeout=10).topics[topic].partitions
                return sum(consumer.get_watermark_offsets(TopicPartition(topic, p),
                                                          timeout=10)[1] for p in parts)
            except KafkaException as exc:
                if exc.args[0].code() not in electing or time.monotonic() > deadline:
                    raise
    finally:
        consumer.close()


@pytest.fixture
def breast_cancer():
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer(as_frame=True)
    frame = data.frame.copy()
    frame["target"] = np.where(data.target == 0, "malignant", "benign")
    return frame


def _run(kafka_config, prefix, *args):
    return CliRunner().invoke(main, ["-b", kafka_config["bootstrap.servers"], "--topic-prefix",
                                     prefix, *map(str, args)])


MISTAKES = [
    (["features", "{csv}", "-a", "saolaa"], "unknown algorithm 'saolaa' (did you mean 'saola'?)"),
    (["features", "{csv}", "-a", "saola", "-p", "alfa=0.01"],
     "unknown parameter(s) alfa (did you mean 'alpha'?) for algorithm 'saola'"),
    (["features", "{csv}", "-a", "saola", "-p", "test=fisher"],
     "test must be one of 'fisher_z', 'mi', got 'fisher' (did you mean 'fisher_z'?)"),
    (["features", "{csv}", "-a", "saola", "--label", "Target"],
     "no label column named 'Target' in the header (did you mean 'target'?)"),
    (["instances", "{csv}", "-a", "saola"], "consumes feature streams, not instance streams"),
    (["features", "{csv}", "-a", "saola", "-p", "alpha=abc"], "alpha"),
    (["features", "{csv}", "-a", "saola", "-p", "alpha=5"], "alpha"),
    (["features", "{csv}", "-a", "kofsd", "-p", "k=0"], "k "),
    (["instances", "{csv}", "-a", "ofs", "-p", "eta=-1"], "eta"),
    (["instances", "{csv}", "-a", "ofs", "-p", "n_features_to_select=-3"], "n_features_to_select"),
    (["instances", "{multi}", "-a", "ofs"], "3 classes"),
    (["features", "{single}", "-a", "saola"], "class"),
    # values the worker would refuse, named by the file's line and column
    (["features", "{nan}", "-a", "saola"],
     "line 9, column 2 ('mean perimeter'): 'nan' is NaN (a missing value)"),
    (["instances", "{nan}", "-a", "ofs"],
     "line 9, column 2 ('mean perimeter'): 'nan' is NaN (a missing value)"),
    (["features", "{huge}", "-a", "kofsd"], "too large for K-OFSD's standardised distances"),
    (["instances", "{huge}", "-a", "gdm"], "too large for GDM's standardised features in "
                                           "columns [4] ('mean smoothness')"),
    (["features", "{tiny}", "-a", "saola"], "too small for the Fisher-z test's correlations in "
                                            "columns [4] ('mean smoothness')"),
    (["instances", "{tiny_rows}", "-a", "ofs"], "data rows [3, 8] (counted from 0) hold only "
                                                "values under 3.05e-151"),
    (["features", "{csv}", "-a", "saola", "-p", "alpha=0.1", "-p", "alpha=0.2"],
     "--param 'alpha' given twice"),
    (["features", "{csv}", "-a", "saola", "--groups", "{csv}"],
     "groups apply to group-saola only, not 'saola'"),
    (["instances", "{dir}", "-a", "ofs"], "is a directory, not a data file"),
    (["instances", "{npz}", "-a", "ofs", "--label", "0"], "a label column applies to CSV/TSV"),
]


@pytest.mark.parametrize("args,needle", MISTAKES)
def test_mistakes_exit_2_with_one_line_and_publish_nothing(kafka_config, topic_prefix, tmp_path,
                                                           breast_cancer, args, needle):
    files = {"csv": tmp_path / "bc.csv", "multi": tmp_path / "multi.csv",
             "single": tmp_path / "single.csv"}
    breast_cancer.to_csv(files["csv"], index=False)
    multi = breast_cancer.copy()
    multi["target"] = np.arange(len(multi)) % 3
    multi.to_csv(files["multi"], index=False)
    single = breast_cancer.copy()
    single["target"] = "benign"
    single.to_csv(files["single"], index=False)
    files["nan"], files["huge"] = tmp_path / "nan.csv", tmp_path / "huge.csv"
    nan, huge = breast_cancer.copy(), breast_cancer.copy()
    nan.iloc[7, 2] = np.nan
    huge.iloc[:, 4] *= 1e300
    nan.to_csv(files["nan"], index=False, na_rep="nan")  # a blank is refused by the reader
    huge.to_csv(files["huge"], index=False)
    files["tiny"], files["tiny_rows"] = tmp_path / "tiny.csv", tmp_path / "tiny_rows.csv"
    tiny, tiny_rows = breast_cancer.copy(), breast_cancer.copy()
    tiny.iloc[:, 4] *= 1e-200  # underflows every sum of squares of the column
    tiny_rows.iloc[[3, 8], :-1] *= 1e-200
    tiny.to_csv(files["tiny"], index=False)
    tiny_rows.to_csv(files["tiny_rows"], index=False)
    files["dir"], files["npz"] = tmp_path, tmp_path / "bc.npz"
    np.savez(files["npz"], X=breast_cancer.iloc[:, :-1].to_numpy(),
             y=(breast_cancer["target"] == "benign").to_numpy().astype(int))
    args = [a.format(**files) for a in args]
    result = _run(kafka_config, topic_prefix, "produce", *args, "--stream", "m", "--no-progress")
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in result.output
    for kind in ("features", "instances"):
        assert _topic_size(kafka_config, load_catalogue(topic_prefix)[kind].name) == 0


def test_unreachable_broker_is_one_line_within_15_s(tmp_path):
    env = {**os.environ, "STREAMFS_BOOTSTRAP_SERVERS": "127.0.0.1:1",
           "STREAMFS_WEB_PORT": "0"}  # the worker's web port is checked first: any free one
    data = tmp_path / "d.csv"
    data.write_text("a,b,y\n" + "".join(f"{i},{i % 3},{i % 2}\n" for i in range(20)))
    for args in (["topics", "create"], ["watch", "--once"], ["dead-letters"],
                 ["produce", "features", data, "--stream", "s", "-a", "saola"], ["worker"],
                 ["bench", "imbalanced-features"]):
        t0 = time.monotonic()
        out = streamfs(*args, env=env, timeout=60)
        elapsed = time.monotonic() - t0
        assert out.returncode == 69, (args, out.stderr)
        assert elapsed < 15, (args, elapsed)
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and "cannot reach Kafka at 127.0.0.1:1" in lines[0], out.stderr
        assert out.stdout == ""


def test_a_worker_web_port_in_use_is_said_before_an_unreachable_broker():
    """It said "cannot reach Kafka" (69); once the broker was fixed, the port in use (2)."""
    import socket

    env = {**os.environ, "STREAMFS_BOOTSTRAP_SERVERS": "127.0.0.1:1"}
    with socket.socket() as busy:  # a port another process holds, e.g. a second worker's
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        out = streamfs("worker", "--web-port", str(port), env=env, timeout=60)
    assert out.returncode == 2, out.stderr
    line = out.stderr.strip().splitlines()[-1]
    assert f"cannot serve /health and /metrics on 127.0.0.1:{port}" in line, out.stderr
    assert "cannot reach Kafka" not in out.stderr and "Traceback" not in out.stderr


def test_first_hour_through_the_worker(cli_env, kafka_config, topic_prefix, tmp_path,
                                       breast_cancer, start_worker):
    """Names from CSV, Parquet, a DataFrame and sklearn; re-used ids; keyless records;
    dead letters; NDJSON."""
    from streamfs.producers import StreamPublisher, feature_stream_messages
    from streamfs.producers.objects import from_objects
    from streamfs.producers.publish import StreamExists, produce_features

    start_worker()
    csv_path, parquet_path = tmp_path / "bc.csv", tmp_path / "bc.parquet"
    breast_cancer.to_csv(csv_path, index=False)
    breast_cancer.to_parquet(parquet_path, index=False)
    names = list(breast_cancer.columns[:-1])
    for stream, source in [("csv", csv_path), ("parquet", parquet_path),
                           ("sk", "sklearn:breast_cancer")]:
        out = streamfs("produce", "features", source, "--stream", stream, "-a", "saola",
                       "--label", "target", env=cli_env)
        assert out.returncode == 0, out.stderr
    features_topic = load_catalogue(topic_prefix)["features"].name
    produce_features(kafka_config, features_topic, "frame", breast_cancer, label="target",
                     algorithm="saola")
    for stream in ("csv", "parquet", "sk", "frame"):
        out = streamfs("watch", stream, "--until-final", "--json", "--timeout", "240", env=cli_env)
        assert out.returncode == 0, out.stderr
        results = [json.loads(line) for line in out.stdout.splitlines()]  # NDJSON
        final = results[-1]
        assert final["final"] and final["selection"]
        assert [i["name"] for i in final["selection"]] == \
            [names[i["feature"]] for i in final["selection"]]
        assert all(a[2] == names[a[0]] for i in final["selection"] for a in i["affiliated"])

    # the same id again: refused by produce, and by the worker from another producer
    again = streamfs("produce", "features", csv_path, "--stream", "csv", "-a", "saola",
                     "--label", "target", env=cli_env)
    assert again.returncode == 2 and "stream 'csv' already exists (closed" in again.stderr
    with pytest.raises(StreamExists, match=r"stream 'csv' already exists \(closed, run 1"):
        produce_features(kafka_config, features_topic, "csv", breast_cancer, label="target")
    with StreamPublisher(kafka_config, features_topic) as pub:  # a producer without the check
        pub.connect()
        X, y, _ = from_objects(breast_cancer, label="target")
        pub.send_all(feature_stream_messages("csv", X, y, "saola"))
    # a keyless record
    from confluent_kafka import Producer

    from streamfs.codec import encode

    p = Producer(kafka_config)
    p.produce(features_topic, value=encode({"kind": "close", "stream": "nokey", "seq": 1}))
    assert p.flush(10) == 0
    del p
    out = streamfs("watch", "nokey", "--until-final", "--timeout", "60", env=cli_env)
    assert out.returncode == 4 and "record has no key" in out.stderr, out.stderr
    letters = streamfs("dead-letters", "--json", env=cli_env)
    assert letters.returncode == 0, letters.stderr
    reasons = [json.loads(line)["reason"] for line in letters.stdout.splitlines()]
    assert any("already exists (closed" in r for r in reasons)
    assert any("record has no key" in r for r in reasons)
    one = streamfs("dead-letters", "--stream", "nokey", env=cli_env)
    assert one.returncode == 0 and len(one.stdout.strip().splitlines()) == 1

    # --replace: a new run under the same id, watched by its run number
    replaced = streamfs("produce", "features", csv_path, "--stream", "csv", "-a", "saola",
                        "-p", "alpha=0.05", "--label", "target", "--replace", env=cli_env)
    assert replaced.returncode == 0 and "run 2 replacing run 1" in replaced.stdout
    # how to wait for the new run's final, which a plain --until-final may miss (README)
    assert "streamfs watch csv --run 2 --until-final" in replaced.stderr
    out = streamfs("watch", "csv", "--until-final", "--run", "2", "--json", "--timeout", "240",
                   env=cli_env)
    assert out.returncode == 0, out.stderr
    final = json.loads(out.stdout.splitlines()[-1])
    assert final["run"] == 2 and final["params"]["alpha"] == 0.05


def test_json_results_for_any_consumer(cli_env, kafka_config, topic_prefix, start_worker):
    from confluent_kafka import Consumer, TopicPartition

    start_worker(STREAMFS_RESULT_FORMAT="json")
    out = streamfs("produce", "features", "sklearn:breast_cancer", "--stream", "j", "-a", "saola",
                   env=cli_env)
    assert out.returncode == 0, out.stderr
    assert streamfs("watch", "j", "--until-final", "--timeout", "240",
                    env=cli_env).returncode == 0
    topic = load_catalogue(topic_prefix)["selected"].name
    consumer = Consumer({**kafka_config, "group.id": "plain-json", "auto.offset.reset": "earliest",
                         "isolation.level": "read_committed"})
    parts = consumer.list_topics(topic, timeout=10).topics[topic].partitions
    consumer.assign([TopicPartition(topic, p, 0) for p in parts])
    seen = []
    deadline = time.monotonic() + 60
    while not any(m.get("final") for m in seen) and time.monotonic() < deadline:
        msg = consumer.poll(1.0)
        if msg is not None and not msg.error():
            seen.append(json.loads(msg.value()))
    consumer.close()
    final = [m for m in seen if m.get("final")][0]
    assert final["stream"] == "j" and "worst" in " ".join(i["name"] for i in final["selection"])


def test_an_empty_stream_id_is_refused_before_anything_is_published(kafka_config, topic_prefix,
                                                                    tmp_path, breast_cancer):
    csv_path = tmp_path / "bc.csv"
    breast_cancer.to_csv(csv_path, index=False)
    for kind, algorithm in (("features", "saola"), ("instances", "ofs")):
        result = _run(kafka_config, topic_prefix, "produce", kind, csv_path, "-a", algorithm,
                      "--stream", "", "--no-progress")
        assert result.exit_code == 2 and result.output.strip() == \
            "Error: --stream: the stream id is empty", result.output
        assert _topic_size(kafka_config, load_catalogue(topic_prefix)[kind].name) == 0


def test_reading_before_the_topics_exist_is_one_line(kafka_bootstrap):
    """A fresh broker, no worker yet: the readers say what to do instead of a traceback."""
    import uuid

    env = {**os.environ, "STREAMFS_BOOTSTRAP_SERVERS": kafka_bootstrap,
           "STREAMFS_TOPIC_PREFIX": f"none{uuid.uuid4().hex[:8]}."}
    for args in (["watch", "--once"], ["watch", "s0", "--until-final", "--timeout", "5"],
                 ["watch", "--timeout", "5"], ["dead-letters"]):
        out = streamfs(*args, env=env, timeout=60)
        lines = out.stderr.strip().splitlines()
        assert out.returncode == 1 and "Traceback" not in out.stderr, (args, out.stderr)
        # the one line, in every mode: it says to start a worker already
        assert len(lines) == 1, (args, out.stderr)
        assert "does not exist on this broker: start `streamfs worker`" in lines[0], out.stderr


def test_watch_warns_when_no_worker_consumes(cli_env):
    out = streamfs("watch", "nobody", "--once", "--app-id", "no-such-group", env=cli_env)
    assert out.returncode == 1
    assert "no streamfs worker is consuming (consumer group 'no-such-group'" in out.stderr


def test_produce_warns_when_no_worker_consumes(cli_env, tmp_path, breast_cancer):
    """The README said `produce` warns as `watch` does; it published without a word."""
    csv_path = tmp_path / "bc.csv"
    breast_cancer.to_csv(csv_path, index=False)
    out = streamfs("produce", "instances", csv_path, "--stream", "lonely", "-a", "ofs",
                   env={**cli_env, "STREAMFS_APP_ID": "no-such-group"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("published "), out.stdout
    assert "no streamfs worker is consuming (consumer group 'no-such-group'" in out.stderr


@pytest.mark.parametrize("args,env,needle", [
    (["--log-level", "verbose"], {}, "Invalid value for '--log-level'"),
    ([], {"STREAMFS_SESSION_TIMEOUT": "abc"},
     "STREAMFS_SESSION_TIMEOUT must be a number of seconds from 6 to 1800"),
    ([], {"STREAMFS_BATCH_BYTES": "-5"}, "STREAMFS_BATCH_BYTES must be a whole number more than 0"),
    (["--web-port", "{busy}"], {}, "cannot serve /health and /metrics on 127.0.0.1:{busy}"),
    (["--web-host", "192.0.2.1"], {}, "cannot serve /health and /metrics on 192.0.2.1:"),
    ([], {"STREAMFS_BATCH_MESSAGES": "0"},
     "STREAMFS_BATCH_MESSAGES must be a whole number from 1 to 1000000"),
    ([], {"STREAMFS_BATCH_MESSAGES": "2000000"},
     "STREAMFS_BATCH_MESSAGES must be a whole number from 1 to 1000000"),
    ([], {"STREAMFS_SESSION_TIMEOUT": "0.5"},
     "STREAMFS_SESSION_TIMEOUT must be a number of seconds from 6 to 1800"),
    ([], {"STREAMFS_DATA_DIR": "/proc/nope"}, "STREAMFS_DATA_DIR '/proc/nope' is not a writable"),
    ([], {"STREAMFS_INSTANCE_ID": "worker 0"},  # said by --instance-id, whose variable it is
     "STREAMFS_INSTANCE_ID: must be 1 to 249 characters, each an ASCII letter or digit"),
    (["--instance-id", "worker/0"], {},
     "Invalid value for '--instance-id': must be 1 to 249 characters, each an ASCII letter"),
])
def test_worker_setup_mistakes_exit_2_in_one_line(cli_env, args, env, needle):
    import socket

    with socket.socket() as busy:  # a port another process holds, e.g. a second worker's
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = str(busy.getsockname()[1])
        out = streamfs("worker", *[a.format(busy=port) for a in args],
                       env={**cli_env, **env}, timeout=120)
    assert out.returncode == 2, out.stderr
    assert needle.format(busy=port) in out.stderr.strip().splitlines()[-1], out.stderr
    assert "Traceback" not in out.stderr


def test_worker_on_web_port_0_serves_health_on_the_port_it_logs(cli_env):
    import re
    import urllib.error
    import urllib.request
    import uuid

    proc = subprocess.Popen([sys.executable, "-m", "streamfs.cli", "worker", "--web-port", "0",
                             "--app-id", f"app-{uuid.uuid4().hex[:8]}"], env=cli_env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        for line in proc.stdout:  # blocks until the worker writes its start line (or exits)
            started = re.search(r"started \(group .*, web 127\.0\.0\.1:(\d+)\)", line)
            if started:
                break
        else:
            pytest.fail(f"the worker exited with {proc.wait()} before it started")
        port = int(started.group(1))
        assert port != 0
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=10) as resp:
                body = json.load(resp)
        except urllib.error.HTTPError as exc:  # 503 until its partitions are assigned
            assert exc.code == 503
            body = json.load(exc)
        assert body["status"] in ("ok", "starting")
    finally:
        proc.terminate()
        proc.wait(60)


def _paced_produce(cli_env: dict, kafka_config: dict, topic: str, tmp_path, breast_cancer,
                   stream: str, rate: int, records: int) -> subprocess.Popen:
    """``streamfs produce`` of the 569 breast-cancer instances at ``rate`` a second, returned
    once ``topic`` holds ``records`` records (the 'open' and the first blocks)."""
    csv_path = tmp_path / "bc.csv"
    breast_cancer.to_csv(csv_path, index=False)
    proc = subprocess.Popen([sys.executable, "-m", "streamfs.cli", "produce", "instances",
                             str(csv_path), "--stream", stream, "-a", "ofs", "--rate", str(rate),
                             "--no-progress"], env=cli_env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while _topic_size(kafka_config, topic) < records:
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"produce: {proc.communicate()}")
    return proc


@pytest.mark.parametrize("signame,code", [("SIGINT", 130), ("SIGTERM", 143)])
def test_interrupted_produce_says_what_was_published(cli_env, kafka_config, topic_prefix,
                                                     tmp_path, breast_cancer, signame, code):
    """SIGTERM (`timeout`, a CI's cancel, systemd) ended it silently, exit 143: now it says
    what Ctrl-C says."""
    import signal

    topic = load_catalogue(topic_prefix)["instances"].name
    # 2 instances/s: the 569 would take minutes; interrupted once some are on the topic
    proc = _paced_produce(cli_env, kafka_config, topic, tmp_path, breast_cancer, "slow", 2, 2)
    try:
        proc.send_signal(getattr(signal, signame))
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == code, err
    sent = _topic_size(kafka_config, topic)
    assert err.strip().splitlines()[-1] == (
        f"interrupted: {sent} message(s) of stream 'slow' were published; it stays open "
        "without 'close': publish it again with --replace, or under another --stream")


def test_produce_interrupted_while_the_broker_is_down_stops_soon_and_counts_acknowledged(
        cli_env, kafka_config, topic_prefix, tmp_path, breast_cancer, broker_outage):
    """Ctrl-C with the broker down waited two minutes for acknowledgements that could not
    come (and a Ctrl-C lost in a librdkafka callback left the count of messages handed over,
    not acknowledged). Now it waits a few seconds, then says how many the broker acknowledged
    and how many it did not answer for; the topic holds at least the first, at most both."""
    import signal

    topic = load_catalogue(topic_prefix)["instances"].name
    proc = _paced_produce(cli_env, kafka_config, topic, tmp_path, breast_cancer, "outage", 20, 5)
    try:
        with broker_outage():
            assert proc.poll() is None
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=60)  # it waited 120 s for acknowledgements
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    last = err.strip().splitlines()[-1]
    said = re.fullmatch(r"interrupted: (\d+) message\(s\) of stream 'outage' were published"
                        r"(?: \(acknowledged by the broker\); (\d+) more were sent but not "
                        r"acknowledged \(the broker did not answer in time; it may hold some "
                        r"of them\))?; it stays open without 'close': publish it again with "
                        r"--replace, or under another --stream", last)
    assert said, last
    # it did not sit silent while the broker was away (librdkafka's lines need --verbose)
    assert "WARNING streamfs: the broker does not answer (" in err, err
    acknowledged, unanswered = int(said[1]), int(said[2] or 0)
    assert acknowledged <= _topic_size(kafka_config, topic) <= acknowledged + unanswered


def test_worker_that_cannot_create_its_topics_says_why_in_one_line(kafka_bootstrap):
    """Three copies asked of a single broker: exit 1, the broker's reason, no traceback (a
    supervisor would otherwise restart it in a loop)."""
    import uuid

    env = {**os.environ, "STREAMFS_BOOTSTRAP_SERVERS": kafka_bootstrap,
           "STREAMFS_TOPIC_PREFIX": f"rf{uuid.uuid4().hex[:8]}.", "STREAMFS_REPLICATION_FACTOR": "3"}
    out = streamfs("worker", "--web-port", "0", env=env, timeout=120)
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    # once, naming the setting and the brokers, and before any topic is made
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("Error: STREAMFS_REPLICATION_FACTOR is 3, and the cluster has ")
    assert "cannot be created with 3 replicas" in last
    from confluent_kafka.admin import AdminClient

    listed = AdminClient({"bootstrap.servers": kafka_bootstrap}).list_topics(timeout=30).topics
    assert not [t for t in listed if t.startswith(env["STREAMFS_TOPIC_PREFIX"])]
