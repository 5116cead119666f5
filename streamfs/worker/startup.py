"""Starting the worker: its topics, its kernels loaded before it takes partitions, its
signals (a stop asked during start-up ends it at once), and :func:`run_worker`."""

from __future__ import annotations

import faulthandler
import gc
import logging
import os
import signal
import sys
import threading
from typing import Any, Callable, Sequence

from streamfs import __version__, broker
from streamfs.broker import AccessDenied, ClientConfigRefused
from streamfs.compile_notice import COMPILING, notice_while_compiling
from streamfs.settings import Settings
from streamfs.topics import (CatalogueError, TopicMismatch, TopicsNotCreated, changelog_specs,
                             check_catalogue, create_with_changelogs, load_catalogue,
                             wait_for_topics)
from streamfs.worker import STOP_SIGNALS, metrics
from streamfs.worker.app import Worker
from streamfs.worker.errors import InstanceFenced, RestoreHeld, StoppedWhileUnreachable
from streamfs.worker.health import Health, loop_stall_seconds, serve_http
from streamfs.worker.stepping import log_warnings

log = logging.getLogger("streamfs.worker")


#: exit code when the worker cannot go on (sysexits' EX_SOFTWARE)
EXIT_FATAL = 70


def prepare_topics(settings: Settings) -> None:
    """Create the catalogue's topics and the changelogs (idempotent) and wait for them; the
    catalogue is checked (:func:`check_catalogue`) before, by :func:`run_worker`."""
    specs = load_catalogue(settings.topic_prefix, replication_factor=settings.replication_factor)
    changelogs = changelog_specs(settings.app_id, specs["features"].partitions,
                                 settings.replication_factor, settings.max_message_bytes)
    outcome = create_with_changelogs(settings.kafka_config(), specs, changelogs)
    specs.update(changelogs)
    if made := sorted(name for name, what in outcome.items() if what == "created"):
        log.info("created topics %s", ", ".join(made))  # an operator's own are not made twice
    wait_for_topics(settings.kafka_config(), specs)


def warm_up(progress: Callable[[], None] = lambda: None) -> None:
    """Import every algorithm and run it once on a tiny stream, so that module imports and
    numba's compiled kernels are loaded before the worker takes partitions, not on the first
    message of a stream. ``progress`` is called after each run: a first start compiles for
    minutes, and liveness must not read that as a stall."""
    import numpy as np
    import scipy.sparse as sp

    from streamfs.algorithms import registry
    from streamfs.algorithms.neighbourhood_kernels import nearest_lists
    from streamfs.codec import packb, unpackb

    def read_only(a: np.ndarray) -> np.ndarray:
        a.flags.writeable = False
        return a

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 6))
    y = (X[:, 0] > 0).astype(np.int64)
    X[:, 2] = X[:, 0] + 0.1 * X[:, 2]  # relevant but redundant: the redundancy tests run
    X_sparse = unpackb(packb(sp.csc_matrix(X)))  # and the sparse decoder's compiled check
    # K-OFSD's candidate lists once it has selected features (a tiny stream selects too few)
    nearest_lists(np.zeros((80, 80)), np.empty((80, 64), np.int32))
    # numba compiles read-only arrays apart: the processor's blocks come as read-only views
    # of their messages (column-major for feature streams, row-major for instance streams),
    # blocks of earlier producers as writeable copies
    inputs = {"features": [(X, y), (read_only(np.asfortranarray(X)), read_only(y.copy())),
                           (X_sparse, y)],  # a sparse block as decoded: int64 indices
              "instances": [(X, np.where(y == 1, 1, -1)),
                            (read_only(X.copy()), read_only(np.where(y == 1, 1, -1)))]}
    for spec in registry.ALGORITHMS.values():
        for X_in, y_in in inputs[spec.kind]:
            algo = spec.build({"n_features": 6} if spec.kind == "instances" else {})
            algo.partial_fit(X_in, y_in)
            algo.to_state()
            progress()


def freeze_startup_objects() -> None:
    """Collect, then move every object alive now (the imports' and the warm-up's, a few
    hundred thousand) into the permanent generation, which the cyclic collector never scans
    again (:func:`gc.freeze`). Without it, each full collection walks them all: 0.09 s in
    the middle of a cold worker's first batches of sparse instances, longer than the batch
    itself. Cyclic garbage made later is still collected."""
    gc.collect()
    gc.freeze()


class StoppedDuringStartup(BaseException):
    """A stop signal before the worker started: nothing is in flight, so it stops at once.
    A BaseException, as KeyboardInterrupt is: no ``except Exception`` on the way takes it for a
    failure."""


#: set by the first stop signal of the start-up (see :func:`_stopped_yet`)
_STOP_ASKED = threading.Event()


def _stop_during_startup(signum: int, _frame: Any) -> None:
    for sig in STOP_SIGNALS:  # one is enough: a second would cut the shutdown
        signal.signal(sig, signal.SIG_IGN)
    log.info("%s: stopped during start-up", signal.Signals(signum).name)
    _STOP_ASKED.set()
    raise StoppedDuringStartup


def _stopped_yet() -> None:
    """:class:`StoppedDuringStartup` if a signal asked for it already. The handler's exception
    is lost where Python ignores exceptions (a ``__del__`` or weakref callback the collector
    ran when the signal came, seen in the warm-up): the worker started anyway, and with the
    signals ignored, nothing but SIGKILL stopped it. Checked between the start-up's steps."""
    if _STOP_ASKED.is_set():
        raise StoppedDuringStartup


def _start_up_step(health: Health) -> None:
    """A step of the start-up done: liveness beats (:meth:`Health.beat`), and a stop asked
    meanwhile stops the worker here (:func:`_stopped_yet`), not after every algorithm's
    kernels have compiled, minutes on a first start."""
    health.beat()
    _stopped_yet()


def begin_startup(settings: Settings, stops: Sequence[int] = ()) -> None:
    """The worker's log lines; and until :func:`run_worker` has started the worker (and stops
    it on SIGTERM, SIGINT or SIGHUP once the batch in progress is committed), each logs one
    line and raises :class:`StoppedDuringStartup`, for the caller to end as a stopped worker
    ends (exit 0). ``stops``: signals that came before (noted by the caller while the
    program loaded): the first stops the start-up here, in the same way."""
    logging.basicConfig(level=settings.log_level.upper(),
                        format="[%(asctime)s] %(levelname)s %(name)s: %(message)s", force=True)
    log_warnings()  # an algorithm's warning names the stream it is about
    for sig in STOP_SIGNALS:
        signal.signal(sig, _stop_during_startup)
    _quiet_lost_stops()
    if stops:
        _stop_during_startup(stops[0], None)


def _quiet_lost_stops() -> None:
    """A stop raised where Python ignores exceptions (see :func:`_stopped_yet`, which acts
    on it) printed "Exception ignored in: <function WeakSet...>" and a traceback on stderr
    beside the stop's one log line: not a fault, so not said. Other unraisable exceptions go
    to the hook as before."""
    previous = sys.unraisablehook

    def hook(unraisable: Any) -> None:
        if not isinstance(unraisable.exc_value, StoppedDuringStartup):
            previous(unraisable)

    sys.unraisablehook = hook


def run_worker(settings: Settings) -> None:
    """Run the worker until SIGTERM, SIGINT or SIGHUP; the batch in progress is committed
    first. One before it has started raises :class:`StoppedDuringStartup` (see
    :func:`begin_startup`)."""
    begin_startup(settings)  # again if the caller did, to cover its own checks
    _stopped_yet()
    logging.getLogger("streamfs.kafka").setLevel(logging.WARNING)  # client trouble, in the log
    broker.STOP_HINT = ""  # a service: its supervisor stops it, not a Ctrl-C
    faulthandler.register(signal.SIGUSR1)  # `kill -USR1 <pid>`: every thread's stack to stderr
    health = Health(loop_stall_seconds(settings.session_timeout))  # /health: 503 until restored
    metrics.report_health(health)
    server = serve_http(settings, health)  # first: a port in use fails at once, not after setup
    # what it runs with, before the minutes a first start may spend compiling: where the
    # probes answer (--web-port 0 too), and the settings a typo would have left at default
    log.info("streamfs %s worker %s: Kafka at %s, topics %s*, group %s, state in %s, "
             "/health and /metrics on %s:%d", __version__, os.getpid(),
             settings.bootstrap_servers, settings.topic_prefix, settings.app_id,
             settings.state_dir(), *server.server_address[:2])
    try:
        with notice_while_compiling(log.info, COMPILING.format(what="a minute or two")):
            warm_up(lambda: _start_up_step(health))
        _start_up_step(health)
        freeze_startup_objects()
        check_catalogue(settings.topic_prefix)  # CatalogueError before any client is made
        worker = Worker(settings, health)
        worker.check_group()  # a mistyped prefix is refused before its topics are made
        prepare_topics(settings)
        _start_up_step(health)

        def stop(signum: int, _frame: Any) -> None:
            log.info("%s: stopping once the batch in progress is committed",
                     signal.Signals(signum).name)
            worker.running = False

        for sig in STOP_SIGNALS:
            signal.signal(sig, stop)
        _stopped_yet()  # a signal of the start-up that came before these
        instance = f", instance {settings.instance_id}" if settings.instance_id else ""
        log.info("worker %s started (group %s%s, web %s:%d)", os.getpid(), settings.app_id,
                 instance, *server.server_address[:2])  # the port bound, also for 0 (any)
        worker.run()
    except (TopicMismatch, TopicsNotCreated, ClientConfigRefused, InstanceFenced,
            CatalogueError, AccessDenied):
        raise  # the operator's to fix, not a crash: one line and exit 1, 2 or 77 (streamfs.cli)
    except RestoreHeld as exc:  # known, and a restart is the cure: one line, no traceback
        log.critical("%s", exc)
        os._exit(EXIT_FATAL)
    except StoppedWhileUnreachable as exc:  # the stop that was asked for
        log.warning("%s", exc)
    except Exception:  # noqa: BLE001 - anything unexpected: exit so a supervisor restarts us
        if _STOP_ASKED.is_set():  # the stop's exception, taken by a library and raised as
            raise StoppedDuringStartup from None  # its own (numba, mid-compile)
        log.critical("worker failed", exc_info=True)
        os._exit(EXIT_FATAL)
    finally:
        server.shutdown()
    if settings.instance_id:
        # a static member does not leave its group: said, as a stop looks like a handover
        log.info("worker stopped; as a static member (instance %s) it keeps its partitions "
                 "until it comes back or the session timeout (%g s) ends: until then nobody "
                 "processes them", settings.instance_id, settings.session_timeout)
    else:
        log.info("worker stopped")
