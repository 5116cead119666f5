"""An algorithm's warning in the worker names the stream (and algorithm) it is about, on the
stepping thread and on the kernels' helper threads, once per stream."""

from __future__ import annotations

import logging
import threading
import warnings

import numpy as np
import pytest

from streamfs.algorithms.parallel import map_column_ranges
from streamfs.codec import encode
from streamfs.producers.blocks import feature_stream_messages
from streamfs.worker import stepping
from streamfs.worker.processor import StreamProcessor

MULTI_CLASS = ("SAOLA(test='fisher_z') correlates the features with the class as a number (as "
               "the authors' implementation does): with 3 classes the selection depends on how "
               "they are coded; test='mi' treats them as categories")


@pytest.fixture
def worker_warnings(caplog, monkeypatch):
    """The worker's warning hook and filter, as ``streamfs worker`` installs them at start-up
    (undone after the test, as are the warnings it remembers); its log records."""
    monkeypatch.setattr(stepping, "_seen", type(stepping._seen)())
    with warnings.catch_warnings():  # restores the hook and the filters (no threads running)
        stepping.log_warnings()
        caplog.set_level(logging.WARNING, logger="streamfs.worker")
        yield lambda: [r.getMessage() for r in caplog.records if r.name == "streamfs.worker"
                       and "dead letter" not in r.getMessage()]


def _quietly(build) -> list:
    """The messages ``build()`` makes, the producer's own advice silenced (it is not the
    worker's)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return list(build())


def _feed(processor: StreamProcessor, messages: list[dict]) -> None:
    for message in messages:
        plan = processor.handle(message["stream"], encode(message))
        assert plan.dead_letter is None
        for key, value in plan.writes:
            if value is None:
                processor.store.pop(key, None)
            else:
                processor.store[key] = value


def test_a_warning_of_a_step_names_its_stream_and_algorithm_once_per_stream(worker_warnings):
    """Two streams with the same warning: it was logged without a stream, and only for the
    first (Python shows a message once per code location)."""
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(90, 12)), np.arange(90) % 3
    processor = StreamProcessor("features", {})
    streams = {s: list(feature_stream_messages(s, X, y, "saola", block_bytes=90 * 8 * 3))
               for s in ("s1", "s2")}
    _feed(processor, streams["s1"][:3])
    _feed(processor, streams["s2"][:3])
    processor._cache.clear()  # rebuilt from the store at the next block: SAOLA warns again
    _feed(processor, streams["s1"][3:])
    _feed(processor, streams["s2"][3:])
    assert worker_warnings() == [f"stream 's1' (saola): {MULTI_CLASS}",
                                 f"stream 's2' (saola): {MULTI_CLASS}"]


def test_a_warning_on_a_kernel_helper_thread_names_the_stream(worker_warnings, monkeypatch):
    """The column-parallel kernels run on helper threads, which do not inherit the stepping
    thread's context unless given it."""
    monkeypatch.setenv("STREAMFS_KERNEL_THREADS", "2")
    both = threading.Barrier(2, timeout=60)  # two ranges, on two threads at once
    threads = []

    def column_range(lo: int, hi: int) -> None:
        threads.append(threading.current_thread().name)
        both.wait()
        warnings.warn(f"columns {lo}..{hi - 1}", UserWarning)

    with stepping.stepping("s3"):
        stepping.running("kofsd")
        map_column_ranges(column_range, 64)
    assert len(set(threads)) == 2
    assert sorted(worker_warnings()) == ["stream 's3' (kofsd): columns 0..31",
                                         "stream 's3' (kofsd): columns 32..63"]


def test_a_warning_outside_a_step_is_logged_as_it_is(worker_warnings):
    warnings.warn("not about a stream", UserWarning)
    warnings.warn("not about a stream", UserWarning)
    assert worker_warnings() == ["not about a stream"]


def test_the_scaling_advice_of_an_instance_stream_names_the_columns_its_open_named(
        worker_warnings):
    from sklearn.datasets import load_breast_cancer

    from streamfs.producers.blocks import instance_stream_messages

    data = load_breast_cancer()
    processor = StreamProcessor("instances", {})
    named = _quietly(lambda: instance_stream_messages(
        "named", data.data[:100], data.target[:100], "ofs",
        feature_names=list(data.feature_names)))
    unnamed = _quietly(lambda: instance_stream_messages(
        "unnamed", data.data[:100], data.target[:100], "ofs"))
    _feed(processor, named + unnamed)
    logged = worker_warnings()
    assert len(logged) == 2
    assert logged[0].startswith("stream 'named' (ofs): OFS(normalize=True) scales each "
                                "instance to unit L2 norm, and columns 3 ('mean area'), 23 "
                                "('worst area') reach over 1,000 times")
    assert logged[1].startswith("stream 'unnamed' (ofs): OFS(normalize=True) scales each "
                                "instance to unit L2 norm, and columns 3, 23 reach")


def test_a_partial_input_learner_gets_the_scaling_advice_from_the_worker(worker_warnings):
    """A partial-input learner reads only the attributes it observes and gives no advice on
    the data itself (the producer does); the worker, which has the whole first block, logs it
    once for a stream whatever published it."""
    from sklearn.datasets import load_breast_cancer

    from streamfs.producers.blocks import instance_stream_messages

    data = load_breast_cancer()
    processor = StreamProcessor("instances", {})
    messages = _quietly(lambda: instance_stream_messages(
        "p1", data.data, data.target, "ofs-partial", {"random_state": 0},
        feature_names=list(data.feature_names), block_bytes=100 * 31 * 8))
    scaled = (data.data - data.data.mean(0)) / data.data.std(0)
    quiet = _quietly(lambda: instance_stream_messages(
        "p2", scaled, data.target, "ofs-partial", {"random_state": 0},
        block_bytes=100 * 31 * 8))
    assert sum("X" in m for m in messages) > 2  # several blocks, one line in the log
    _feed(processor, messages + quiet)
    logged = worker_warnings()
    assert len(logged) == 1
    assert logged[0].startswith("stream 'p1' (ofs-partial): OFSPartial(normalize=False) takes "
                                "the values as they are, and columns 3 ('mean area'), 23 "
                                "('worst area') reach over 1,000 times")
