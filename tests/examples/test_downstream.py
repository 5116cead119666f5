"""The downstream example's logic without Kafka: labels, prequential accuracy, exit."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from streamfs.codec import encode
from streamfs.examples.downstream import Downstream, DownstreamError, LabelCodes, follow

SEL, INST = "sel", "inst"


def result(version, features, final=False, names=None):
    items = []
    for k, j in enumerate(features):
        item = {"feature": j, "score": 1.0, "affiliated": []}
        if names is not None:
            item["name"] = names[k]
        items.append(item)
    return {"kind": "result", "stream": SEL, "algorithm": "saola", "version": version,
            "final": final, "selection": items}


def opened(n_features, feature_names=None):
    return {"kind": "open", "stream": INST, "seq": 0, "algorithm": "ofs", "params": {},
            "n_features": n_features, "feature_names": feature_names}


def block(X, y):
    return {"kind": "instances", "stream": INST, "X": X, "y": y}


CLOSE = {"kind": "close", "stream": INST}


def separable(n, seed=0, labels=("benign", "malignant")):
    """Feature 0 carries the class, the others are noise."""
    rng = np.random.default_rng(seed)
    k = rng.integers(0, len(labels), n)
    X = rng.normal(size=(n, 4))
    X[:, 0] += 4.0 * k
    return X, [labels[i] for i in k]


class LastLabel:
    """A stub classifier: predicts the last label it learned."""

    def partial_fit(self, X, y, classes=None):
        self.last = y[-1]
        return self

    def predict(self, X):
        return np.full(X.shape[0], self.last)


def test_prequential_accuracy_on_a_known_sequence():
    ds = Downstream(SEL, INST, make_classifier=LastLabel)
    ds.handle(opened(2))
    ds.handle(result(1, [0]))
    X = np.zeros((4, 2))
    # block 1: the first instance has no model (not counted), then one instance at a time:
    # "a" predicts "a" (right), "a" predicts "b" (wrong)
    ds.handle(block(X[:3], ["a", "a", "b"]))
    assert (ds.n_scored, ds.n_correct) == (2, 1)
    # block 2: the model has learned 3 instances: the first 3 are predicted "b" (the last
    # label learned; 2 right), then the 4th is predicted "a" (right)
    ds.handle(block(X, ["b", "b", "a", "a"]))
    assert (ds.n_scored, ds.n_correct) == (6, 4)
    assert ds.accuracy == pytest.approx(4 / 6)
    assert ds.model.trained == 7


def test_a_single_block_is_scored_prequentially():
    X, y = separable(300)
    ds = Downstream(SEL, INST)
    ds.handle(opened(4))
    ds.handle(result(1, [0, 2], final=True))
    ds.handle(block(X, np.asarray(y)))  # one block: predicted in sub-blocks 1, 1, 2, 4, ...
    assert ds.n_scored == 299 and ds.model.trained == 300
    assert ds.accuracy > 0.9


def test_text_labels_and_a_label_appearing_later():
    X, y = separable(200, seed=1)
    ds = Downstream(SEL, INST)
    ds.handle(opened(4))
    ds.handle(result(1, [0]))
    for a in range(0, 200, 50):
        ds.handle(block(X[a:a + 50], y[a:a + 50]))
    assert ds.labels.labels[:2] in (["benign", "malignant"], ["malignant", "benign"])
    X3, y3 = separable(90, seed=2, labels=("benign", "malignant", "unknown"))
    lines = ds.handle(block(sp.csr_matrix(X3), y3))  # sparse blocks too
    assert "unknown" in ds.labels.labels and ds.model.n_classes == 3
    assert ds.model.trained == 290  # rebuilt, warmed up on the 200 buffered, then the block
    assert ds.n_instances == 290 and ds.n_scored == 289
    assert ds.accuracy > 0.75 and "prequential accuracy" in lines[0]


def test_numeric_labels_and_classes_given_up_front():
    ds = Downstream(SEL, INST, classes=[-1, 1])
    ds.handle(result(1, [0]))
    ds.handle(block(np.array([[1.0], [-1.0]]), np.array([1, -1])))
    assert ds.labels.labels == [-1, 1] and ds.model.n_classes == 2
    codes = LabelCodes([0, "x"])
    assert codes.encode([1.0, 0, "x"]).tolist() == [2, 0, 1]


def test_instances_before_the_selection_are_buffered_then_learned_and_exit():
    X, y = separable(120, seed=3)
    ds = Downstream(SEL, INST)
    ds.handle(opened(4, ["radius", "f1", "f2", "area"]))
    ds.handle(block(X[:60], y[:60]))
    ds.handle(block(X[60:], y[60:]))
    assert ds.model is None and ds.n_scored == 0 and ds.history_rows == 120
    ds.handle(CLOSE)
    assert ds.closed and not ds.finished  # no final selection yet
    lines = ds.handle(result(1, [0, 3]))
    assert "warmed up on 120 buffered instances" in lines[0] and "radius, area" in lines[0]
    assert ds.model.trained == 120 and ds.n_scored == 119  # buffered ones counted once
    assert not ds.finished
    ds.handle(result(2, [0, 3], final=True, names=["radius", "area"]))
    assert ds.finished and ds.model.trained == 120  # same features: model kept
    # the same features in another order (an OFS selection by |w|) keep the model too
    lines = ds.handle(result(3, [3, 0], final=True, names=["area", "radius"]))
    assert lines == ["selection v3 (final): same 2 features, model kept"], lines
    assert ds.model.trained == 120 and ds.model.features == [0, 3]
    ds.handle(result(4, [0, 3], final=True, names=["radius", "area"]))
    # a version not newer (republished after the worker's app id changed and changed back)
    # was taken, and the model rebuilt on a stale selection
    assert ds.handle(result(1, [1])) == [
        "selection v1 of run 1 is not newer than v4 of run 1, in use: ignored"]
    s = ds.summary()
    assert s["selection_version"] == 4 and s["feature_names"] == ["radius", "area"]
    assert s["instances"] == 120 and s["trained_on"] == 120 and s["scored"] == 119
    text = ds.summary_text()
    assert "120 instances" in text and "selection v4 (final)" in text
    assert "radius, area" in text and "prequential accuracy 0." in text
    assert s["prequential_accuracy"] > 0.85
    # a new selection replays the buffer but counts nothing twice
    ds.handle(dict(result(1, [1], final=True), run=2))  # a replace: run 2
    assert ds.n_scored == 119 and ds.model.trained == 120 and ds.model.features == [1]
    # a rerun of the instance stream under the same id starts its side over
    ds.handle(opened(4))
    assert not ds.finished and ds.n_instances == 0 and ds.model.trained == 0


def test_feature_names_fall_back_to_the_open_message_then_indices():
    ds = Downstream(SEL, INST)
    ds.handle(opened(3, [None, None, "c"]))
    ds.handle({**result(1, [2, 1, 0]), "selection": [
        {"feature": 2}, {"feature": 1}, {"feature": 0, "name": "zero"}]})
    assert ds.selected_names() == ["c", "x1", "zero"]
    ds2 = Downstream(SEL, INST)
    ds2.handle(result(1, [5]))
    assert ds2.selected_names() == ["x5"]


def test_selection_beyond_the_instances_is_refused():
    ds = Downstream(SEL, INST)
    ds.handle(opened(3))
    with pytest.raises(DownstreamError, match="names feature 7, but the instances of inst have 3"):
        ds.handle(result(1, [7]))
    ds = Downstream(SEL, INST)
    ds.handle(result(1, [7]))
    with pytest.raises(DownstreamError, match="names feature 7"):
        ds.handle(block(np.zeros((2, 3)), [0, 1]))


def test_replay_buffer_is_bounded():
    ds = Downstream(SEL, INST, replay=5)
    for _ in range(3):
        ds.handle(block(np.zeros((4, 2)), [0, 1, 0, 1]))
    assert ds.history_rows == 5 and sum(len(b[1]) for b in ds.history) == 5
    ds.handle(result(1, [0]))
    assert ds.model.trained == 5 and ds.n_scored == 4


# --- the Kafka loop with a fake consumer --------------------------------------------------

class _Error:
    def code(self):
        from confluent_kafka import KafkaError

        return KafkaError._PARTITION_EOF


class _Msg:
    def __init__(self, topic, partition, value=None, eof=False, error=None):
        self._t, self._p, self._v, self._eof, self._error = topic, partition, value, eof, error

    def error(self):
        return _Error() if self._eof else self._error

    def topic(self):
        return self._t

    def partition(self):
        return self._p

    def offset(self):
        return 0

    def value(self):
        return self._v


class FakeConsumer:
    def __init__(self, messages):
        self.messages = list(messages)

    def poll(self, timeout):
        return self.messages.pop(0) if self.messages else None


def test_follow_exits_after_final_result_close_and_the_ends_of_the_topics():
    X, y = separable(40, seed=4)
    msgs = [_Msg("sel", 0, encode(result(1, [0]))),
            _Msg("inst", 0, encode(opened(4))),
            _Msg("inst", 0, encode(block(X, y))),
            _Msg("inst", 0, encode(CLOSE)),
            _Msg("inst", 0, eof=True),
            _Msg("sel", 0, encode(result(2, [0, 1], final=True))),
            _Msg("sel", 0, eof=True),
            _Msg("inst", 0, encode(block(X, y)))]  # never read: the loop has exited
    consumer = FakeConsumer(msgs)
    out = []
    ds = Downstream(SEL, INST)
    assert follow(ds, consumer, 2, echo=out.append, timeout=30) == "finished"
    assert len(consumer.messages) == 1 and ds.n_instances == 40
    assert any("closed after 40 instances" in line for line in out)
    assert ds.summary()["selection_version"] == 2


def test_follow_waits_for_the_ends_but_not_forever():
    ds = Downstream(SEL, INST)
    msgs = [_Msg("inst", 0, encode(CLOSE)), _Msg("sel", 0, encode(result(1, [], final=True)))]
    assert follow(ds, FakeConsumer(msgs), 2, echo=lambda s: None, grace=0.0) == "finished"
    ds = Downstream(SEL, INST)
    assert follow(ds, FakeConsumer([]), 1, echo=lambda s: None, timeout=0.6) == "timeout"


def test_follow_skips_results_it_cannot_use_and_counts_them():
    """A malformed result on the topic (compaction keeps it) used to stop the model with a
    TypeError or KeyError."""
    from streamfs.client import Skipped

    bad = [{**result(1, [0]), "selection": "x0,x1"}, {**result(1, [0]), "version": None},
           {k: v for k, v in result(1, [0]).items() if k != "stream"}]
    msgs = [_Msg("sel", 0, encode(m)) for m in bad]
    msgs += [_Msg("sel", 0, encode(result(2, [0], final=True))), _Msg("inst", 0, encode(CLOSE))]
    skipped = Skipped()
    ds = Downstream(SEL, INST)
    assert follow(ds, FakeConsumer(msgs), 2, echo=lambda s: None, grace=0.0,
                  skipped=skipped) == "finished"
    assert ds.summary()["selection_version"] == 2 and skipped.total == 3


def test_follow_passes_over_its_unused_group_and_stops_on_a_denied_read():
    """Assigned from set offsets, the consumer never uses its group: on a cluster with ACLs a
    group it may not use is said once (an error event), which had stopped the example."""
    from confluent_kafka import KafkaError

    from streamfs.broker import AccessDenied

    group = KafkaError(KafkaError.GROUP_AUTHORIZATION_FAILED, "Group authorization failed.")
    msgs = [_Msg("sel", 0, error=group), _Msg("inst", 0, encode(CLOSE)),
            _Msg("sel", 0, encode(result(1, [], final=True)))]
    ds = Downstream(SEL, INST)
    assert follow(ds, FakeConsumer(msgs), 2, echo=lambda s: None, grace=0.0) == "finished"
    topic = KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed")
    with pytest.raises(AccessDenied, match="Kafka denied user 'app' reading topic 'sel' .*"
                                           "READ and DESCRIBE on it"):
        follow(Downstream(SEL, INST), FakeConsumer([_Msg("sel", 0, error=topic)]), 2,
               echo=lambda s: None, timeout=30, kafka_config={"sasl.username": "app"})


def test_main_without_a_broker_is_one_line_naming_the_address():
    """The example waited 30 s in list_topics, then ended in a KafkaException traceback."""
    import os
    import subprocess
    import sys
    import time

    env = {**os.environ, "STREAMFS_BOOTSTRAP_SERVERS": "127.0.0.1:1"}
    start = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "streamfs.examples.downstream",
                          "--selection-stream", "s1", "--instance-stream", "s2"],
                         env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 69 and "Traceback" not in out.stderr, out.stderr
    assert out.stderr.startswith("Error: cannot reach Kafka at 127.0.0.1:1"), out.stderr
    assert time.monotonic() - start < 20


@pytest.mark.kafka
def test_a_topic_deleted_under_the_example_is_one_line_and_exit_1(kafka_bootstrap,
                                                                  kafka_config, topic_prefix):
    """The example polled on without a word when the selections' topic was deleted."""
    import os
    import subprocess
    import sys

    from streamfs.topics import load_catalogue
    from tests.test_client import _delete_topic, _put

    selected = load_catalogue(topic_prefix)["selected"].name
    _put(kafka_config, selected, result(1, [0]))
    env = {**os.environ, "STREAMFS_BOOTSTRAP_SERVERS": kafka_bootstrap,
           "STREAMFS_TOPIC_PREFIX": topic_prefix}
    proc = subprocess.Popen([sys.executable, "-m", "streamfs.examples.downstream",
                             "--selection-stream", SEL, "--instance-stream", INST,
                             "--timeout", "30"], env=env, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        assert proc.stdout.readline().startswith("selection v1: new model")  # it is reading
        _delete_topic(kafka_config, selected)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1 and "Traceback" not in err, err
    assert err.strip() == f"Error: topic {selected!r} was deleted while being read", err


@pytest.mark.parametrize("flag", ["-h", "--help"])
def test_help_takes_both_spellings_as_the_streamfs_commands_do(flag):
    from click.testing import CliRunner

    from streamfs.examples.downstream import main

    out = CliRunner().invoke(main, [flag])
    assert out.exit_code == 0, out.output
    assert "Train an online classifier" in out.output and "--selection-stream" in out.output


# --- a selection of other columns than the instances' is refused ---------------------------

def test_the_documented_command_follows_a_selection_of_the_same_columns():
    """The docstring's command took the selection of s1 (the README's breast-cancer feature
    stream) for the instances of s2 (a8a)."""
    import re
    from pathlib import Path

    import streamfs.examples.downstream as module

    commands = re.findall(r"--selection-stream (\S+) --instance-stream (\S+)", module.__doc__)
    assert commands
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    for selection, instances in commands:
        # the selection an instance stream computes on its own instances
        assert selection == instances, commands
        assert re.search(rf"streamfs produce instances \S+ --stream {instances}\b", readme)
    assert "must describe the same columns" in module.__doc__


def test_a_selection_naming_a_column_otherwise_than_the_instances_is_refused():
    """The selection of s1 (breast cancer) trained on s2's a8a columns with s1's names."""
    ds = Downstream(SEL, INST)
    ds.handle(opened(4, ["age", "workclass", "fnlwgt", "education"]))
    with pytest.raises(DownstreamError, match=r"selection v1 of sel names feature 3 'mean area', "
                                              r"but column 3 of the instances of inst is "
                                              r"'education'.*same columns"):
        ds.handle(result(1, [0, 3], names=["age", "mean area"]))
    assert ds.selection is None and ds.model is None  # nothing trained on it
    # read in the other order: refused at the instance stream's open
    ds = Downstream(SEL, INST)
    ds.handle(result(1, [2], names=["mean perimeter"]))
    with pytest.raises(DownstreamError, match="names feature 2 'mean perimeter', but column 2 "
                                              "of the instances of inst is 'fnlwgt'"):
        ds.handle(opened(4, ["age", "workclass", "fnlwgt", "education"]))
    # names that agree, or that either side does not give, pass
    ds = Downstream(SEL, INST)
    ds.handle(opened(4, ["age", None, "fnlwgt", "education"]))
    ds.handle(result(1, [0, 1, 3], names=["age", "x1", "education"]))
    ds.handle({**result(2, [0, 2]), "selection": [{"feature": 0, "name": "age"}, {"feature": 2}]})
    assert ds.model.features == [0, 2]


def result_of(version, features, *, final=False, n_features=None, n_features_seen=None):
    """A result as the worker writes it: an instance stream's carries its d in params, a
    feature stream's the columns seen so far in its counters."""
    message = result(version, features, final=final)
    if n_features is not None:
        message["params"] = {"n_features_to_select": 12, "n_features": n_features}
    if n_features_seen is not None:
        message["counters"] = {"rejected_messages": 0, "n_features_seen": n_features_seen}
    return message


def test_a_selection_computed_on_another_number_of_columns_is_refused():
    """The README's s1 (30 breast-cancer columns) and s2 (a8a, 123 columns, no names)."""
    ds = Downstream(SEL, INST)
    ds.handle(opened(123))
    ds.handle(result_of(1, [7], n_features_seen=10))  # a feature stream still arriving
    ds.handle(result_of(2, [7, 13], n_features_seen=20))
    with pytest.raises(DownstreamError, match="selection v3 of sel was computed on 30 features, "
                                              "but the instances of inst have 123"):
        ds.handle(result_of(3, [7, 13], final=True, n_features_seen=30))
    ds = Downstream(SEL, INST)
    ds.handle(opened(30))
    with pytest.raises(DownstreamError, match="computed on 31 features, but the instances of "
                                              "inst have 30"):
        ds.handle(result_of(1, [7], n_features_seen=31))
    # an instance stream's selection: its d, final or not
    ds = Downstream(SEL, INST)
    ds.handle(result_of(1, [7], n_features=123))
    with pytest.raises(DownstreamError, match="computed on 123 features, but the instances of "
                                              "inst have 30"):
        ds.handle(opened(30))
    # without an open read, the blocks' width
    ds = Downstream(SEL, INST)
    ds.handle(result_of(1, [1], n_features=123))
    with pytest.raises(DownstreamError, match="computed on 123 features, but the instances of "
                                              "inst have 4"):
        ds.handle(block(np.zeros((2, 4)), [0, 1]))
    # widths that agree pass
    ds = Downstream(SEL, INST)
    ds.handle(opened(30))
    ds.handle(result_of(1, [7], final=True, n_features_seen=30))
    ds.handle(result_of(2, [7, 8], final=True, n_features=30))
    assert ds.model.features == [7, 8]


# --- options --------------------------------------------------------------------------------

@pytest.mark.parametrize("args", [["--timeout", "-1"], ["--timeout", "0"], ["--timeout", "nan"],
                                  ["--max-blocks", "0"], ["--max-blocks", "-3"],
                                  ["--replay", "-5"], ["--grace", "-1"], ["--grace", "nan"]])
def test_options_out_of_their_range_are_refused(args):
    """--timeout -1 timed out at once, nan never; --max-blocks 0 exited 0 with nothing read;
    --replay -5 was taken as 0."""
    from click.testing import CliRunner

    from streamfs.examples.downstream import main

    out = CliRunner().invoke(main, ["--selection-stream", "s2", "--instance-stream", "s2",
                                    *args], env={"STREAMFS_BOOTSTRAP_SERVERS": "127.0.0.1:1"})
    assert out.exit_code == 2, out.output
    assert f"Invalid value for '{args[0]}'" in out.output and args[1] in out.output, out.output


def test_help_says_what_the_timeout_counts():
    from click.testing import CliRunner

    from streamfs.examples.downstream import main

    text = " ".join(CliRunner().invoke(main, ["--help"]).output.split())
    assert "after this many seconds of reading (> 0; exit code 1)" in text, text
    assert "training the model on what was read is not counted" in text, text


def test_the_python_api_refuses_what_the_options_refuse():
    with pytest.raises(ValueError, match="replay must be a whole number of instances from 0"):
        Downstream(SEL, INST, replay=-5)
    for bad in (-1, 0, float("nan")):
        with pytest.raises(ValueError, match="timeout must be a number of seconds above 0"):
            follow(Downstream(SEL, INST), FakeConsumer([]), 1, timeout=bad)
    with pytest.raises(ValueError, match="max_blocks must be a whole number from 1"):
        follow(Downstream(SEL, INST), FakeConsumer([]), 1, max_blocks=0)


def test_the_models_own_time_does_not_count_against_the_timeout(monkeypatch):
    """--timeout 3 on a finished stream: learning a 5,000-instance block took 3.5 s, then the
    example said "timed out after 3.0 s", exit 1, with the stream's close the next record."""
    from types import SimpleNamespace

    import streamfs.examples.downstream as module

    clock = [1000.0]
    monkeypatch.setattr(module, "time", SimpleNamespace(monotonic=lambda: clock[0]))

    class SlowModel(Downstream):
        def handle(self, message):
            if message.get("kind") == "instances":
                clock[0] += 3.5  # the model learning the block
            return super().handle(message)

    class TimedConsumer(FakeConsumer):
        def poll(self, timeout):
            clock[0] += 0.01 if self.messages else timeout  # an idle poll waits it out
            return super().poll(timeout)

    X, y = separable(40, seed=5)
    msgs = [_Msg("sel", 0, encode(result(1, [0], final=True))), _Msg("sel", 0, eof=True),
            _Msg("inst", 0, encode(opened(4))), _Msg("inst", 0, encode(block(X, y))),
            _Msg("inst", 0, encode(CLOSE)), _Msg("inst", 0, eof=True)]
    out = []
    ds = SlowModel(SEL, INST)
    assert follow(ds, TimedConsumer(msgs), 2, echo=out.append, timeout=3) == "finished", out
    assert ds.n_instances == 40 and not any("timed out" in line for line in out)
    # time spent reading still counts: nothing more arrives, and it times out
    ds = SlowModel(SEL, INST)
    start = clock[0]
    assert follow(ds, TimedConsumer([]), 2, echo=out.append, timeout=3) == "timeout"
    assert 3 < clock[0] - start <= 3.5
    assert out[-1].startswith("timed out after 3 s of reading (the model's own time not "
                              "counted) before the final result of sel and the close of inst")


def test_the_docstring_says_a_replays_accuracy_is_optimistic():
    import streamfs.examples.downstream as module

    doc = " ".join(module.__doc__.split())
    assert ("Replaying finished streams from their beginning scores instances with a selection "
            "computed from those same instances' labels, so its \"prequential accuracy\" on a "
            "replay is optimistic") in doc
