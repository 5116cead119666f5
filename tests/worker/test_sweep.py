"""Closed streams past their retention are dropped when the sweep is due, also on a worker
whose input never pauses. Real broker; the worker runs in this process so that the sweep's
interval can be shortened."""

from __future__ import annotations

import logging
import threading

import numpy as np
import pytest

from streamfs.producers import StreamPublisher
from tests.worker.inprocess import saola_stream, worker_thread

pytestmark = pytest.mark.kafka


class _Dropped(logging.Handler):
    """Sets ``event`` when the worker logs that it dropped closed streams."""

    def __init__(self) -> None:
        super().__init__()
        self.event = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if "closed streams past the retention" in record.getMessage():
            self.event.set()


def test_closed_streams_are_swept_while_input_keeps_coming(kafka_config, topic_prefix, tmp_path,
                                                           monkeypatch, caplog):
    from streamfs.worker import app

    monkeypatch.setattr(app, "SWEEP_SECONDS", 0.5)
    closed = saola_stream("swept", seed=1, p=5)
    busy = saola_stream("busy", seed=2, p=5)[:1]  # its open: blocks follow below, no close
    dropped = _Dropped()
    caplog.set_level(logging.INFO, logger="streamfs.worker")
    logging.getLogger("streamfs.worker").addHandler(dropped)
    rng = np.random.default_rng(0)
    stop = threading.Event()

    def trickle(topic: str) -> None:
        # a block every 20 ms: with a batch time of 5 s the worker's wait for input never
        # times out, so it is never idle
        with StreamPublisher(kafka_config, topic) as pub:
            seq = 1
            while not stop.is_set():
                pub.send_all([{"kind": "features", "stream": "busy", "seq": seq,
                               "run": busy[0]["run"], "X": rng.normal(size=(200, 1))}])
                seq += 1
                stop.wait(0.02)

    try:
        with worker_thread(kafka_config, topic_prefix, tmp_path / "data", closed + busy,
                           closed_retention=0.0, batch_ms=5_000.0) as topics:
            sender = threading.Thread(target=trickle, args=(topics["features"].name,))
            sender.start()
            try:
                assert dropped.event.wait(60), "no sweep while the input kept coming"
            finally:
                stop.set()
                sender.join(30)
    finally:
        logging.getLogger("streamfs.worker").removeHandler(dropped)
