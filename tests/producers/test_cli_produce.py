"""`streamfs produce`: exit code 2 naming the fault for bad files, 1 for Kafka failures."""

from __future__ import annotations

import uuid

import numpy as np
import pytest
from click.testing import CliRunner

from streamfs.cli import main
from streamfs.topics import load_catalogue

pytestmark = pytest.mark.kafka


def _run(kafka_config, prefix, *args):
    return CliRunner().invoke(main, ["-b", kafka_config["bootstrap.servers"], "--topic-prefix",
                                     prefix, "produce", *map(str, args), "--no-progress"])


@pytest.mark.parametrize("name,body,kind,needle", [
    ("bad.svm", "1 1:1\n-1 2:x\n", "instances", "bad.svm, line 2: value in '2:x' is not a number"),
    ("bad.svm", "1 1:1\n-1 2:1 2\n", "features", "bad.svm, line 2: expected idx:value, got '2'"),
    ("bad.csv", "a,b,y\n1,2,0\n1,zz,1\n", "instances", "bad.csv, line 3, column 1 ('b'): not a number: 'zz'"),
    ("bad.csv", "a,b,y\n1,2,0\n1,2\n", "features", "bad.csv, line 3: 2 fields, expected 3"),
    ("bad.unknown", "1", "features", "unknown format '.unknown'"),
])
def test_bad_input_file_exits_2_naming_the_line(kafka_config, topic_prefix, tmp_path, name, body,
                                                 kind, needle):
    path = tmp_path / name
    path.write_text(body)
    result = _run(kafka_config, topic_prefix, kind, path, "--stream", "s", "-a", "ofs")
    assert result.exit_code == 2, result.output
    assert needle in result.output and "Traceback" not in result.output
    assert result.output.count(str(path)) == 1  # named once, not once more by the label pass
    assert "already published" not in result.output  # the first chunk is read before 'open'


def test_error_late_in_a_streamed_file_says_what_was_published(kafka_config, topic_prefix,
                                                                 tmp_path):
    path = tmp_path / "late.svm"
    good = "".join(f"{i % 2} 1:{i} 7:0.5\n" for i in range(400_000))  # > one 4 MiB chunk
    path.write_text(good + "1 3:oops\n")
    # the label pass of a binary learner reads the whole file first: nothing is published
    result = _run(kafka_config, topic_prefix, "instances", path, "--stream", "late", "-a", "ofs")
    assert result.exit_code == 2, result.output
    assert "late.svm, line 400001: value in '3:oops' is not a number" in result.output
    assert "already published" not in result.output
    # with the classes given there is no label pass: the error comes after publishing began
    result = _run(kafka_config, topic_prefix, "instances", path, "--stream", "late", "-a", "ofs",
                  "-p", "classes=[0,1]")
    assert result.exit_code == 2, result.output
    assert "late.svm, line 400001: value in '3:oops' is not a number" in result.output
    assert ("were already published; it stays open without 'close': once the file is fixed, "
            "publish it again with --replace, or under another --stream") in result.output


def test_a_late_label_error_says_the_last_column_was_taken_without_label(kafka_config,
                                                                         topic_prefix, tmp_path):
    """With the classes given there is no label pass: a label outside them late in the file
    stops the publish part way, and said nothing of the column taken as the label."""
    path = tmp_path / "late.csv"
    rows = "".join(f"{i},0.5,{i % 2}\n" for i in range(400_000))  # > one 4 MiB chunk
    path.write_text("a,b,y\n" + rows + "1,0.5,7\n")
    result = _run(kafka_config, topic_prefix, "instances", path, "--stream", "late", "-a", "ofs",
                  "-p", "classes=[0,1]")
    assert result.exit_code == 2, result.output
    assert f"Error: {path}: data row 400000 (counted from 0): label 7 not among" in result.output
    assert ("; the last column, 2 ('y'), was taken as the label because no --label was given: "
            "name the label with --label (") in result.output
    assert "were already published; it stays open without 'close'" in result.output


def test_missing_file_and_bad_groups_exit_2(kafka_config, topic_prefix, tmp_path):
    result = _run(kafka_config, topic_prefix, "features", tmp_path / "nope.csv", "--stream", "s",
                  "-a", "saola")
    assert result.exit_code == 2 and "nope.csv: no such file or dataset" in result.output
    data = tmp_path / "d.csv"
    data.write_text("1,2,3,0\n4,5,6,1\n7,8,9,0\n1,3,5,1\n")  # N > 3: Fisher z
    groups = tmp_path / "g.json"
    groups.write_text("[[0, 1]]")
    result = _run(kafka_config, topic_prefix, "features", data, "--stream", "s",
                  "-a", "group-saola", "--groups", groups)
    assert result.exit_code == 2 and "g.json: column 2 is in no group" in result.output


def test_shuffle_on_instances_is_a_usage_error(kafka_config, topic_prefix, tmp_path):
    data = tmp_path / "d.csv"
    data.write_text("1,2,0\n")
    result = _run(kafka_config, topic_prefix, "instances", data, "--stream", "s", "-a", "ofs",
                  "--shuffle-seed", 1)
    assert result.exit_code == 2 and "feature streams only" in result.output


def test_message_refused_by_the_broker_exits_1(kafka_config, topic_prefix, tmp_path,
                                               monkeypatch):
    # one 8.8 MB block: the client (16 MiB) and a worker allowing 16 MiB take it, the topic
    # (8 MiB) refuses it after the 'open' went out. The producer reads the topic's limit and
    # would refuse such a block first (below); here the limit is unreadable, as where the
    # broker denies the producer DescribeConfigs, so the broker is the one that refuses.
    from streamfs.producers import publish

    monkeypatch.setenv("STREAMFS_MAX_MESSAGE_BYTES", str(16 * 1024 * 1024))
    monkeypatch.setattr(publish, "topic_message_limit", lambda *args, **kw: None)
    big = np.ones((1000, 1101))
    big[:, -1] = np.arange(1000) % 2  # the label column: two classes
    np.save(tmp_path / "big.npy", big)
    result = _run(kafka_config, topic_prefix, "features", tmp_path / "big.npy", "--stream", "big",
                  "-a", "saola", "--block-bytes", 10_000_000)
    assert result.exit_code == 1, result.output
    assert "Kafka did not take the stream 'big'" in result.output
    assert ("(1 message(s) of stream 'big' were already published; it stays open without "
            "'close': publish it again with --replace, or under another --stream)") in result.output


def test_block_bytes_over_the_topics_limit_exits_2_before_the_open(kafka_config, topic_prefix,
                                                                   tmp_path, monkeypatch):
    monkeypatch.setenv("STREAMFS_MAX_MESSAGE_BYTES", str(16 * 1024 * 1024))  # the worker's
    big = np.ones((1000, 1101))
    big[:, -1] = np.arange(1000) % 2
    np.save(tmp_path / "big.npy", big)
    result = _run(kafka_config, topic_prefix, "features", tmp_path / "big.npy", "--stream", "big",
                  "-a", "saola", "--block-bytes", 10_000_000)
    assert result.exit_code == 2, result.output
    assert "--block-bytes must be between 1 and the record limit of 8388608 bytes" \
        in result.output
    assert "already published" not in result.output


def test_a_group_over_the_topics_limit_exits_2_before_the_open(kafka_config, topic_prefix,
                                                               tmp_path, monkeypatch):
    # the worker would take 16 MiB; the catalogue's topic takes 8 MiB, a 9.6 MB group does not
    monkeypatch.setenv("STREAMFS_MAX_MESSAGE_BYTES", str(16 * 1024 * 1024))
    X = np.ones((1000, 1201))
    X[:, -1] = np.arange(1000) % 2
    np.save(tmp_path / "wide.npy", X)
    groups = tmp_path / "g.json"
    groups.write_text(f"[{list(range(1200))}]")
    result = _run(kafka_config, topic_prefix, "features", tmp_path / "wide.npy", "--stream", "g",
                  "-a", "group-saola", "--groups", groups)
    assert result.exit_code == 2, result.output
    assert ("group 0 (1200 columns: 0, 1, 2, 3, 4, ...) needs 9614898 bytes in one message, over "
            "the record limit of 8388608 bytes") in result.output
    assert "already published" not in result.output


def test_block_bytes_over_the_record_limit_exits_2(kafka_config, topic_prefix, tmp_path):
    result = _run(kafka_config, topic_prefix, "features", tmp_path / "any.npy", "--stream", "b",
                  "-a", "saola", "--block-bytes", 20_000_000)
    assert result.exit_code == 2, result.output
    assert "--block-bytes must be between 1 and the record limit of 8388608 bytes" \
        in result.output


def test_block_bytes_below_one_column_exits_2_naming_the_smallest_that_works(
        kafka_config, topic_prefix, tmp_path):
    """Each column went in a message of its own, over the budget, without a word."""
    from tests.producers.test_publish_checks import records_on

    data = tmp_path / "d.csv"  # 10 rows: a column is 80 bytes of values, and its name
    data.write_text("x1,a_longer_name,y\n" + "".join(f"{i},{i * 2},{i % 2}\n"
                                                      for i in range(10)))
    smallest = 80 + len("a_longer_name") + 5  # the name as the blocks count it
    for given in (1, smallest - 1):
        result = _run(kafka_config, topic_prefix, "features", data, "--stream", "b", "-a",
                      "saola", "--block-bytes", given)
        assert result.exit_code == 2, result.output
        assert result.output == (f"Error: --block-bytes {given} is smaller than one column of "
                                 f"this stream ({smallest} bytes): the smallest --block-bytes "
                                 f"that works is {smallest}\n")
    topic = load_catalogue(topic_prefix)["features"].name
    assert records_on(kafka_config, topic) == 0
    result = _run(kafka_config, topic_prefix, "features", data, "--stream", "b", "-a", "saola",
                  "--block-bytes", smallest)
    assert result.exit_code == 0, result.output
    assert "published 4 messages (2 columns, 10x2)" in result.output  # one column a message


@pytest.mark.parametrize("classes", [[], ["-p", "classes=[0,1]"]])  # with and without label pass
def test_block_bytes_below_one_instance_exits_2_naming_the_widest_row(kafka_config, topic_prefix,
                                                                      tmp_path, classes):
    from tests.producers.test_publish_checks import records_on

    data = tmp_path / "d.svm"  # the widest row comes last: the whole file decides
    data.write_text("1 1:1\n0 2:1\n" * 50 + "1 1:1 2:1 3:1 4:1\n")
    widest = 4 * (8 + 4) + 8  # values and their indices, and the label
    result = _run(kafka_config, topic_prefix, "instances", data, "--stream", "i", "-a", "ofs",
                  "--block-bytes", widest - 1, *classes)
    assert result.exit_code == 2, result.output
    assert result.output == (f"Error: --block-bytes {widest - 1} is smaller than one instance "
                             f"of this stream ({widest} bytes): the smallest --block-bytes that "
                             f"works is {widest}\n")
    assert records_on(kafka_config, load_catalogue(topic_prefix)["instances"].name) == 0
    result = _run(kafka_config, topic_prefix, "instances", data, "--stream", "i", "-a", "ofs",
                  "--block-bytes", widest, *classes)
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("kind, algorithm, params, error", [
    ("features", "kofsd", [], "kofsd takes class labels, not continuous values"),
    ("instances", "ofs", [], "data rows 0..19: ofs takes class labels, not continuous values"),
    ("instances", "ofs", ["-p", "classes=[0,1]"],  # no pass over the file: the first chunk's
     "data rows 0..19: ofs takes class labels, not continuous values"),
])
def test_a_label_error_says_the_last_column_was_taken_without_label(
        kafka_config, topic_prefix, tmp_path, kind, algorithm, params, error):
    from tests.producers.test_publish_checks import records_on

    data = tmp_path / "d.csv"  # the label is the first column, a real-valued one the last
    data.write_text("y,x1,x2\n" + "".join(f"{i % 2},{i},{i / 7}\n" for i in range(20)))
    result = _run(kafka_config, topic_prefix, kind, data, "--stream", "l", "-a", algorithm,
                  *params)
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"Error: {data}: {error}"), result.output
    assert result.output.endswith("; the last column, 2 ('x2'), was taken as the label because "
                                  "no --label was given: name the label with --label\n")
    assert records_on(kafka_config, load_catalogue(topic_prefix)[kind].name) == 0
    result = _run(kafka_config, topic_prefix, kind, data, "--stream", "l", "-a", algorithm,
                  "--label", "y", *params)
    assert result.exit_code == 0, result.output


def test_saola_s_multi_class_warning_is_one_log_line_as_in_select(kafka_config, topic_prefix,
                                                                   tmp_path):
    """The algorithm warns at the stream's first block, which runs in the worker: produce ran
    the same open checks and said nothing, where select warned."""
    import os
    import subprocess
    import sys

    from sklearn.datasets import load_wine

    X, y = load_wine(return_X_y=True)  # three classes
    np.savez(tmp_path / "wine.npz", X=X, y=y)
    np.savez(tmp_path / "two.npz", X=X[y < 2], y=y[y < 2])
    env = {**os.environ, "STREAMFS_BOOTSTRAP_SERVERS": kafka_config["bootstrap.servers"],
           "STREAMFS_TOPIC_PREFIX": topic_prefix}

    def produce(name: str, *args: str) -> str:
        out = subprocess.run([sys.executable, "-m", "streamfs.cli", "produce", "features",
                              str(tmp_path / name), "--stream", name, "-a", "saola",
                              "--no-progress", *args],
                             capture_output=True, text=True, timeout=300, env=env)
        assert out.returncode == 0, out.stderr
        assert "published" in out.stdout
        # no worker here: produce says so in a line of its own, after the algorithm's advice
        return "".join(line for line in out.stderr.splitlines(keepends=True)
                       if not line.startswith("warning: no streamfs worker is consuming"))

    warning = ("WARNING streamfs: SAOLA(test='fisher_z') correlates the features with the "
               "class as a number (as the authors' implementation does): with 3 classes the "
               "selection depends on how they are coded; test='mi' treats them as categories\n")
    assert produce("wine.npz") == warning  # once, and nothing else
    assert produce("two.npz") == ""
    assert "correlates" not in produce("wine.npz", "--replace", "-p", "test=mi")


def test_topics_not_created_yet_exits_1_saying_how_to_create_them(kafka_config, tmp_path):
    data = tmp_path / "d.csv"
    data.write_text("x1,x2,y\n" + "".join(f"{i},{i * 2},{i % 2}\n" for i in range(10)))
    result = _run(kafka_config, f"t{uuid.uuid4().hex[:10]}.", "features", data, "--label", "y",
                  "-a", "saola", "--stream", "early")
    assert result.exit_code == 1, result.output
    assert "does not exist on this broker: start `streamfs worker`" in result.output
    assert "`streamfs topics create`" in result.output


def test_success_reports_counts(kafka_config, topic_prefix, tmp_path):
    data = tmp_path / "d.csv"
    data.write_text("x1,x2,y\n" + "".join(f"{i},{i * 2},{i % 2}\n" for i in range(10)))
    result = _run(kafka_config, topic_prefix, "instances", data, "--stream", "ok", "-a", "ofs")
    assert result.exit_code == 0, result.output
    topic = load_catalogue(topic_prefix)["instances"].name
    assert f"published 3 messages (10 instances, d=2) of stream 'ok' to {topic}" in result.output


def test_progress_bar_path(kafka_config, topic_prefix, tmp_path):
    data = tmp_path / "d.svm"
    data.write_text("".join(f"{i % 2} 1:{i} 3:1\n" for i in range(1000)))
    result = CliRunner().invoke(main, ["-b", kafka_config["bootstrap.servers"], "--topic-prefix",
                                       topic_prefix, "produce", "instances", str(data), "--stream",
                                       "bar", "-a", "ofs", "--progress", "--block-bytes", "2000"])
    assert result.exit_code == 0, result.output
    assert "1,000 instances" in result.output  # the bar
    assert "published 19 messages (1000 instances, d=3)" in result.output  # 62 rows of 32 B each


def test_an_id_with_feature_stream_results_is_refused_for_instances_even_with_replace(
        kafka_config, topic_prefix, tmp_path):
    from tests.producers.test_publish_checks import records_on
    from tests.test_client import _put, _result

    topics = load_catalogue(topic_prefix)
    _put(kafka_config, topics["selected"].name, _result("slow1", 13, final=True))
    data = tmp_path / "d.csv"
    data.write_text("x1,x2,y\n" + "".join(f"{i},{i * 2},{i % 2}\n" for i in range(10)))
    result = _run(kafka_config, topic_prefix, "instances", data, "--stream", "slow1", "-a", "ofs",
                  "--replace")
    assert result.exit_code == 2, result.output
    assert ("stream 'slow1' already exists as a feature stream of 'saola' (closed, run 1, "
            "version 13): an instance stream under the same id would mix its results with "
            "those, even with --replace; choose another --stream") in result.output
    assert records_on(kafka_config, topics["instances"].name) == 0


def test_ctrl_c_says_how_many_messages_the_broker_took(kafka_config, topic_prefix, tmp_path,
                                                       monkeypatch):
    """Ctrl-C lands where it will: here right after the 3rd message went to the client, before
    the CLI counted it. The count printed was of messages counted so far (2), not of those the
    broker acknowledged once the publish settled (3): a script reading it would resume wrong."""
    from streamfs.producers.kafka import StreamPublisher
    from tests.producers.test_publish_checks import records_on

    calls = []
    original = StreamPublisher.raise_failures

    def interrupted_at_the_third(self: StreamPublisher) -> None:
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        original(self)

    monkeypatch.setattr(StreamPublisher, "raise_failures", interrupted_at_the_third)
    rng = np.random.default_rng(3)
    data = np.column_stack([rng.normal(size=(200, 40)), np.arange(200) % 2])
    np.save(tmp_path / "d.npy", data)
    result = _run(kafka_config, topic_prefix, "features", tmp_path / "d.npy", "--stream", "c",
                  "-a", "saola", "--block-bytes", 1600)
    topic = load_catalogue(topic_prefix)["features"].name
    assert result.exit_code == 130, result.output
    sent = records_on(kafka_config, topic)
    assert sent == 3
    assert f"interrupted: {sent} message(s) of stream 'c' were published" in result.output


def test_a_refused_stream_id_is_said_alone_without_the_data_advice(kafka_config, topic_prefix,
                                                                   tmp_path):
    """The stream id is checked last (it asks the broker, after the file's checks): its
    refusal came after a long advice on scaling data that would never be published."""
    import os
    import subprocess
    import sys

    from tests.test_client import _put, _result

    _put(kafka_config, load_catalogue(topic_prefix)["selected"].name,
         _result("taken", 2, final=True))
    data = tmp_path / "d.csv"  # "big" outweighs the others in every unit-norm instance
    data.write_text("a,b,c,big,y\n" + "".join(f"{i % 3},{i % 5},{i % 7},{(i + 1) * 5000},{i % 2}\n"
                                              for i in range(40)))
    env = {**os.environ, "STREAMFS_BOOTSTRAP_SERVERS": kafka_config["bootstrap.servers"],
           "STREAMFS_TOPIC_PREFIX": topic_prefix}

    def produce(stream: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "streamfs.cli", "produce", "instances",
                               str(data), "--label", "y", "--stream", stream, "-a", "ofs",
                               "--replace", "--no-progress"],
                              capture_output=True, text=True, timeout=300, env=env)

    refused = produce("taken")
    assert refused.returncode == 2
    assert refused.stderr.startswith("Error: stream 'taken' already exists as a feature stream"), \
        refused.stderr
    assert "normalize" not in refused.stderr
    published = produce("fresh")  # the same data under a free id: the advice, then the publish
    assert published.returncode == 0, published.stderr
    assert published.stderr.startswith("WARNING streamfs: OFS(normalize=True) scales each "
                                       "instance to unit L2 norm"), published.stderr


def test_a_row_id_is_warned_of_in_both_kinds_of_stream_and_drop_leaves_it_out(
        kafka_config, topic_prefix, tmp_path):
    """An instance stream is read in chunks: its row ids are judged on the first one."""
    import os
    import subprocess
    import sys

    rng = np.random.default_rng(4)
    X = rng.standard_normal((300, 4))
    lines = ["PatientID,a,b,c,d,y"] + [f"{1000 + i},{','.join(map(str, row))},{i % 2}"
                                       for i, row in enumerate(X)]
    path = tmp_path / "ids.csv"
    path.write_text("\n".join(lines) + "\n")
    env = {**os.environ, "STREAMFS_BOOTSTRAP_SERVERS": kafka_config["bootstrap.servers"],
           "STREAMFS_TOPIC_PREFIX": topic_prefix}

    def produce(kind: str, algorithm: str, stream: str, *args: str) -> str:
        out = subprocess.run([sys.executable, "-m", "streamfs", "produce", kind, str(path),
                              "--stream", stream, "-a", algorithm, "--no-progress", *args],
                             capture_output=True, text=True, timeout=300, env=env)
        assert out.returncode == 0, out.stderr
        return out.stderr

    warning = (f"{path}: column 'PatientID' (feature 0) looks like a row id, not a "
               "measurement: {} distinct whole numbers, one per row")
    assert warning.format(300) in produce("features", "saola", "f")
    said = produce("instances", "ofs", "i")
    assert warning.format(300) in said  # the first chunk holds them all here
    for kind, algorithm in (("features", "saola"), ("instances", "ofs")):
        said = produce(kind, algorithm, f"{kind}-dropped", "--drop", "PatientID")
        assert "row id" not in said, said
