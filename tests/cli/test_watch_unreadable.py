"""`streamfs watch --until-final` and a real worker: input under a stream's key that the worker
dead-letters fails the run it came after (in the stream's input partition), not a run it came
before. Every step waits on the worker's output, never on time."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from sklearn.datasets import load_breast_cancer

from streamfs.client import OutputReader, SelectionReader
from streamfs.producers import StreamPublisher, feature_stream_messages
from streamfs.topics import load_catalogue
from tests.cli.test_first_hour import streamfs

pytestmark = pytest.mark.kafka


def _messages(stream: str) -> list[dict]:
    """A SAOLA stream of the breast-cancer data in blocks of five columns: open, 6 blocks,
    close."""
    X, y = load_breast_cancer(return_X_y=True)
    return list(feature_stream_messages(stream, X, y, "saola", {},
                                        block_bytes=X.shape[0] * 8 * 5))


def _dead_letter(kafka_config: dict, topic: str, stream: str) -> dict:
    """The first dead letter of ``stream``, once the worker has written it."""
    with OutputReader(kafka_config, topic) as reader:
        for item in reader.messages(timeout=120):
            if item is not None and item[1].get("stream") == stream:
                return item[1]
    raise AssertionError("unreachable")


def _first_result(kafka_config: dict, topic: str, stream: str) -> dict:
    with SelectionReader(kafka_config, topic) as reader:
        return next(iter(reader.updates(stream, timeout=120)))


def test_unreadable_input_before_the_open_does_not_fail_the_run(
        cli_env, kafka_config, topic_prefix, start_worker):
    topics = load_catalogue(topic_prefix)
    start_worker()
    messages = _messages("pre2")
    with StreamPublisher(kafka_config, topics["features"].name) as pub:
        pub.send_raw(b"pre2", b"\xc1garbage")  # no stream 'pre2' open: a letter without a run
    stale = _dead_letter(kafka_config, topics["dead_letter"].name, "pre2")
    assert stale["run"] is None and "undecodable" in stale["reason"]

    # started before the run has a result: the letter waits for the run's first result
    early = subprocess.Popen([sys.executable, "-m", "streamfs.cli", "watch", "pre2",
                              "--until-final", "--json", "--timeout", "240"],
                             env=cli_env, text=True, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
    try:
        with StreamPublisher(kafka_config, topics["features"].name) as pub:
            pub.send_all(messages[:-1])  # all but the close: no final yet
        first = _first_result(kafka_config, topics["selected"].name, "pre2")
        opened = first["open_input"]
        assert (opened["topic"], opened["partition"]) == (stale["topic"], stale["partition"])
        assert opened["offset"] > stale["offset"]
        # started with results there: it reads both topics to their end and waits, also for
        # an explicit run (exit 3 when its time is up), rather than exit 4
        for run in ([], ["--run", "1"]):
            waited = streamfs("watch", "pre2", "--until-final", *run, "--timeout", "5",
                              env=cli_env)
            assert waited.returncode == 3, waited.stderr
            assert "no final result for 'pre2'" in waited.stderr
            assert "rejected" not in waited.stderr
        with StreamPublisher(kafka_config, topics["features"].name) as pub:
            pub.send(messages[-1])
        stdout, stderr = early.communicate(timeout=300)
    finally:
        if early.poll() is None:
            early.kill()
            early.communicate()
    assert early.returncode == 0, stderr
    final = json.loads(stdout.splitlines()[-1])
    assert final["final"] and final["run"] == 1 and final["open_input"] == opened


@pytest.mark.parametrize("value,reason", [(b"\xc1garbage", "undecodable message"),
                                          (b"", "empty message")])
def test_input_rejected_after_the_open_fails_the_run(cli_env, kafka_config, topic_prefix,
                                                     start_worker, value, reason):
    """Undecodable input of an open stream is the run's (the stream lost it); an empty record
    is dead-lettered without a run, but read after the run's open in its partition."""
    topics = load_catalogue(topic_prefix)
    start_worker()
    messages = _messages("post")
    with StreamPublisher(kafka_config, topics["features"].name) as pub:
        pub.send_all(messages[:2])  # the open and a first block: a first result
        pub.send_raw(b"post", value)
        pub.send_all(messages[2:-1])  # not the close: the watch cannot see a final first
    letter = _dead_letter(kafka_config, topics["dead_letter"].name, "post")
    assert reason in letter["reason"] and letter["run"] == (1 if value else None)
    out = streamfs("watch", "post", "--until-final", "--timeout", "120", env=cli_env)
    assert out.returncode == 4, out.stderr
    assert f"Error: the worker rejected input of stream 'post' ({letter['topic']}" in out.stderr
    assert reason in out.stderr
