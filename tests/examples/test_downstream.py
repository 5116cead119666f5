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
    ds.handle(opened(4, ["f0", "f1", "f2", "f3"]))
    ds.handle(block(X[:60], y[:60]))
    ds.handle(block(X[60:], y[60:]))
    assert ds.model is None and ds.n_scored == 0 and ds.history_rows == 120
    ds.handle(CLOSE)
    assert ds.closed and not ds.finished  # no final selection yet
    lines = ds.handle(result(1, [0, 3]))
    assert "warmed up on 120 buffered instances" in lines[0] and "f0, f3" in lines[0]
    assert ds.model.trained == 120 and ds.n_scored == 119  # buffered ones counted once
    assert not ds.finished
    ds.handle(result(2, [0, 3], final=True, names=["radius", "area"]))
    assert ds.finished and ds.model.trained == 120  # same features: model kept
    # the same features in another order (an OFS selection by |w|) keep the model too
    lines = ds.handle(result(2, [3, 0], final=True, names=["area", "radius"]))
    assert lines == ["selection v2 (final): same 2 features, model kept"], lines
    assert ds.model.trained == 120 and ds.model.features == [0, 3]
    ds.handle(result(2, [0, 3], final=True, names=["radius", "area"]))
    s = ds.summary()
    assert s["selection_version"] == 2 and s["feature_names"] == ["radius", "area"]
    assert s["instances"] == 120 and s["trained_on"] == 120 and s["scored"] == 119
    text = ds.summary_text()
    assert "120 instances" in text and "selection v2 (final)" in text
    assert "radius, area" in text and "prequential accuracy 0." in text
    assert s["prequential_accuracy"] > 0.85
    # a new selection replays the buffer but counts nothing twice
    ds.handle(result(3, [1], final=True))
    assert ds.n_scored == 119 and ds.model.trained == 120 and ds.model.features == [1]
    # a rerun of the instance stream under the same id starts its side over
    ds.handle(opened(4))
    assert not ds.finished and ds.n_instances == 0 and ds.model.trained == 0


def test_feature_names_fall_back_to_the_open_message_then_indices():
    ds = Downstream(SEL, INST)
    ds.handle(opened(3, ["a", None, "c"]))
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
