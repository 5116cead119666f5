"""The worker's start-up: the warm-up, the frozen start-up objects, stops during start-up."""

import subprocess
import sys

import pytest


def test_startup_objects_are_frozen_after_collecting_garbage():
    """In a process of its own (freezing the test runner's objects would outlive the test):
    the garbage cycles alive before are collected, everything else is frozen, and cycles
    made afterwards are still collected."""
    code = """
import gc, weakref
from streamfs.worker.startup import freeze_startup_objects, warm_up
class Node: pass
def cycle():
    a, b = Node(), Node()
    a.other, b.other = b, a
    return weakref.ref(a)
gc.disable()  # only the collections asked for below
before = cycle()
warm_up()
freeze_startup_objects()
assert before() is None, "garbage frozen instead of collected"
assert gc.get_freeze_count() > 10_000, gc.get_freeze_count()
after = cycle()
gc.collect()
assert after() is None, "a cycle made after the freeze was not collected"
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_the_warm_up_compiles_every_kernel_the_first_blocks_need():
    """In a process of its own (the test runner has compiled much already): after the warm-up,
    the first blocks of every algorithm, as the worker decodes them (dense blocks as read-only
    views, which numba compiles apart), need no kernel compiled or loaded on the way. A
    compile there takes seconds inside a step on a fresh install (2.8 s for dense SAOLA,
    5.8 s for K-OFSD, measured with an empty numba cache)."""
    code = """
import importlib, pkgutil
import numpy as np
import scipy.sparse as sp
import streamfs
from streamfs.algorithms import registry
from streamfs.bench.pipeline import imbalanced_microarray
from streamfs.codec import encode
from streamfs.producers import feature_stream_messages, instance_stream_messages
from streamfs.worker.startup import warm_up
from streamfs.worker.processor import StreamProcessor

kernels = {}
for info in pkgutil.walk_packages(streamfs.__path__, "streamfs."):
    for name, obj in vars(importlib.import_module(info.name)).items():
        if hasattr(obj, "signatures") and hasattr(obj, "py_func"):  # numba dispatchers
            kernels[f"{info.name}.{name}"] = obj
warm_up()
before = {name: len(k.signatures) for name, k in kernels.items()}
X, y = imbalanced_microarray(0, p=400)  # K-OFSD selects enough to need its candidate lists
rng = np.random.default_rng(0)
S = sp.random(180, 400, 0.3, format="csc", random_state=1)
Xi = rng.normal(size=(3000, 12))
yi = np.where(Xi[:, 0] > 0, 1, -1)
for algorithm, spec in registry.ALGORITHMS.items():
    kw = {"groups": [list(range(i, i + 20)) for i in range(0, 400, 20)]} if "group" in algorithm else {}
    if spec.kind == "features":
        streams = [feature_stream_messages("s", data, y, algorithm, {}, block_bytes=1 << 17, **kw)
                   for data in (X, S)]
    else:
        streams = [instance_stream_messages("s", data, yi, algorithm, {}, block_bytes=1 << 17)
                   for data in (Xi, sp.csr_matrix(Xi))]
    for messages in streams:
        proc = StreamProcessor(spec.kind, {})
        for message in messages:
            plan = proc.handle("s", encode(message))
            assert plan.dead_letter is None, algorithm
            proc.store.update((k, v) for k, v in plan.writes if v is not None)
new = {name: [str(s) for s in k.signatures[before[name]:]] for name, k in kernels.items()
       if len(k.signatures) > before[name]}
print(new or "ok")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stdout + out.stderr


def test_start_up_progress_keeps_the_worker_alive():
    """/live counted from the process's start: a first start compiling the numba kernels for
    longer than the stall limit read "stalled" (a liveness probe would restart it, again and
    again). Each warm-up run beats, as a turn of the loop would."""
    from streamfs.algorithms import registry
    from streamfs.worker.health import Health
    from streamfs.worker.startup import warm_up

    health = Health(stall_seconds=5.0)
    health.loop_at -= 6.0  # as long since the process started
    assert health.liveness()[0] == 503
    beats = []
    warm_up(lambda: (beats.append(1), health.beat()))
    runs = {"features": 3, "instances": 2}  # the inputs each kind is warmed up on
    assert len(beats) == sum(runs[spec.kind] for spec in registry.ALGORITHMS.values())
    assert health.liveness() == (200, {"status": "alive", "loop_seconds": 0.0})


def test_a_stop_asked_during_the_warm_up_stops_it_at_the_next_run():
    """A SIGTERM whose exception was lost mid-compile (see _stopped_yet) was seen only after
    the whole warm-up: minutes on a first start."""
    from streamfs.worker import startup
    from streamfs.worker.health import Health

    health, runs = Health(), []
    startup._STOP_ASKED.set()
    try:
        with pytest.raises(startup.StoppedDuringStartup):
            startup.warm_up(lambda: (runs.append(1), startup._start_up_step(health)))
    finally:
        startup._STOP_ASKED.clear()
    assert len(runs) == 1


def test_a_stop_lost_where_python_ignores_exceptions_is_not_printed(monkeypatch):
    """A SIGTERM of the start-up whose exception Python ignored (a ``__del__`` or weakref
    callback running when it came) printed "Exception ignored in ..." and a traceback beside
    the stop's log line; the stop itself is acted on by the next start-up step."""
    from streamfs.worker import startup

    seen = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: seen.append(type(u.exc_value)))
    startup._quiet_lost_stops()

    class Raises:
        def __init__(self, exc):
            self.exc = exc

        def __del__(self):
            raise self.exc

    Raises(startup.StoppedDuringStartup())  # collected at once: its __del__'s exception is lost
    Raises(ValueError("a real fault"))
    assert seen == [ValueError]
