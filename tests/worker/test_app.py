"""The worker's pure helpers (no broker)."""

import logging

import pytest

from streamfs.broker import LogLines


def _contact(worker):
    """Give a Worker built without its ``__init__`` (no clients) the broker contact that
    ``__init__`` makes, from what the test set on it."""
    from streamfs.settings import Settings
    from streamfs.worker.broker_contact import BrokerContact

    worker.broker = BrokerContact(getattr(worker, "settings", None) or Settings(),
                                  worker.health, getattr(worker, "roles", {}),
                                  getattr(worker, "out", {}), lambda: worker.running)
    return worker.broker


def test_a_worker_without_partitions_rejoins_only_past_the_bound_with_its_broker_answering(
        caplog):
    """A new consumer replaces the old one only when no rebalance explains the wait (the
    rejoin itself: tests/worker/test_rejoin.py), and never while no broker answers, when a
    new consumer would join no sooner. The wait is said once: a restart that waited out a
    dead member's session timeout was silent for it, and looked hung."""
    import time

    from prometheus_client import REGISTRY

    from streamfs.settings import Settings
    from streamfs.worker import app

    worker = object.__new__(app.Worker)
    worker.health, worker.rejoin_after = app.Health(), 60.0
    worker.settings, worker.wait_said_for = Settings(session_timeout=30.0), None
    worker.consumer = consumer = object()  # replaced only through _consumer(): none here
    rejoins = REGISTRY.get_sample_value("streamfs_rejoins_total")
    caplog.set_level(logging.INFO, logger="streamfs.worker")
    worker._rejoin_if_left_out()  # assigned (or not subscribed yet)
    assert "unassigned_seconds" not in worker.health.snapshot()[1]
    worker.health.unassigned_since = time.monotonic() - app.WAIT_SAID_SECONDS / 2
    worker._rejoin_if_left_out()
    assert caplog.text == ""  # a rebalance's usual second or two: nothing to say
    worker.health.unassigned_since = time.monotonic() - 30.0
    worker._rejoin_if_left_out()  # within a rebalance's time
    worker._rejoin_if_left_out()
    assert worker.health.snapshot()[1]["unassigned_seconds"] >= 30.0
    said = [r.getMessage() for r in caplog.records]
    assert said == ["waiting for the group's rebalance to assign partitions (30 s so far): it "
                    "waits for every member, and a member that stopped without leaving "
                    "(killed, or a static member) counts until its session timeout (30 s)"]
    worker.health.unassigned_since = time.monotonic() - 90.0
    worker.health.unreachable_since = time.monotonic() - 90.0
    worker._rejoin_if_left_out()  # every broker down
    assert worker.consumer is consumer
    assert REGISTRY.get_sample_value("streamfs_rejoins_total") == rejoins


def test_the_topic_check_runs_while_busy_and_never_waits_for_the_broker():
    """A worker that always has input never idles: the topic check (existence, partition
    counts, input topic ids) must run all the same, and the loop must go on stepping batches
    while the broker has yet to answer it."""
    import time
    from concurrent.futures import Future
    from types import SimpleNamespace

    from streamfs.settings import Settings
    from streamfs.topics import TopicMismatch
    from streamfs.worker import app

    worker = object.__new__(app.Worker)  # the loop alone, without clients
    worker.settings, worker.health = Settings(), app.Health()
    worker.running, worker.rewind_due, worker.in_flight = True, False, None
    worker.topic_partitions, worker.topic_ids = {"in": 8, "out": 8}, {"in": "A"}
    worker.changelog_ids = {}
    _contact(worker)
    answers = {"in": Future(), "out": Future()}
    asked, batches = [], []

    def process() -> None:
        batches.append(time.monotonic())
        if len(batches) == 50:  # the broker answers while the 50th batch is stepped
            answers["out"].set_result(SimpleNamespace(partitions=[None] * 8, topic_id="C"))
            answers["in"].set_result(SimpleNamespace(partitions=[None] * 8, topic_id="B"))
        if len(batches) > 500:  # never checked: end the loop, the test fails below
            worker.running = False

    worker._fetch = lambda: True  # input always waiting
    worker._process = process
    worker._describe = lambda names: asked.append(sorted(names)) or answers
    worker._update_lag = lambda: None
    with pytest.raises(TopicMismatch, match="'in' was deleted and re-created "
                                            r"\(topic id A when its partitions were assigned, B now\)"):
        worker._loop()
    assert asked == [["in", "out"]]  # asked once, on the first turn
    assert len(batches) == 50  # stepping went on while the answer was pending


@pytest.mark.parametrize("recreated", ["in", "in-changelog"])
def test_a_changelog_made_again_under_the_worker_stops_it(recreated):
    # only the input topics' ids were checked: a changelog deleted and made again (by
    # `streamfs topics create`, say) took the state, and the worker wrote on into the new one
    from concurrent.futures import Future
    from types import SimpleNamespace

    from streamfs.settings import Settings
    from streamfs.topics import TopicMismatch
    from streamfs.worker import app

    worker = object.__new__(app.Worker)
    worker.settings, worker.health = Settings(), app.Health()
    worker.in_flight = None
    worker._settle = lambda: None
    _contact(worker).answered = lambda: None
    worker.topic_partitions = {"in": 8, "in-changelog": 8}
    worker.topic_ids, worker.changelog_ids = {"in": "A"}, {"in-changelog": "C"}
    answers = {name: Future() for name in worker.topic_partitions}
    for name, topic_id in (("in", "A"), ("in-changelog", "C")):
        answers[name].set_result(SimpleNamespace(
            partitions=[None] * 8, topic_id=topic_id + ("2" if name == recreated else "")))
    with pytest.raises(TopicMismatch) as caught:
        worker._judge_topics(answers)
    message = str(caught.value)
    assert f"{recreated!r} was deleted and re-created" in message
    # an input topic is read again from its beginning, state kept; a changelog's streams lost
    # their state
    assert ("with the streams' state kept" in message) == (recreated == "in")
    assert ("on a changelog made again is gone" in message) == (recreated == "in-changelog")
    if recreated == "in":  # and a changelog resized: not said to be made again
        answers["in-changelog"] = Future()
        answers["in-changelog"].set_result(SimpleNamespace(partitions=[None] * 4,
                                                           topic_id="C"))
        with pytest.raises(TopicMismatch) as caught:
            worker._judge_topics(answers)
        assert "on a changelog made again is gone" not in str(caught.value)
        assert "Run `streamfs topics create`" in str(caught.value)


def _loop_only_worker(monkeypatch):
    """A Worker with only what ``_loop`` reads (no clients): the tests give it its calls."""
    from streamfs.settings import Settings
    from streamfs.worker import app

    monkeypatch.setattr(app, "STILL_SECONDS", 0.2)
    worker = object.__new__(app.Worker)
    worker.settings, worker.health = Settings(), app.Health()
    worker.running, worker.rewind_due, worker.in_flight = True, False, None
    worker.topic_partitions, worker.topic_ids, worker.topic_ids_at = {}, {}, 0.0
    worker.changelog_ids = {}
    return worker


def test_a_late_turn_that_assigned_partitions_does_not_check_the_topics_again(monkeypatch):
    """A turn made late by an assignment (the group join and the restore run inside consume)
    has just described the input topics: a second, synchronous check before its first batch
    would only add a broker round trip to a cold worker's start."""
    import time

    worker = _loop_only_worker(monkeypatch)
    turns = ["idle", "assigned", "input"]
    checks, processed = [], []

    def fetch() -> bool:
        if not turns:
            worker.running = False
            return False
        turn = turns.pop(0)
        if turn == "assigned":  # consume() ran the assignment: slow, topic ids just read
            time.sleep(0.3)
            worker.topic_ids_at = time.monotonic()
        return turn == "input"

    worker._fetch, worker._process = fetch, lambda: processed.append(len(turns))
    worker._settle, worker._update_lag = lambda: None, lambda: None
    worker._describe = lambda names: {}
    worker._check_topics = lambda: checks.append(len(turns))
    worker._loop()
    assert checks == [] and processed == [0]


def test_a_turn_after_the_process_stood_still_checks_the_topics_before_processing(monkeypatch):
    """A worker paused (SIGSTOP, a stalled VM) while its input topic is deleted, made again and
    filled fetches the new topic from the old offsets within a turn or two of waking up: the
    first turn that comes late checks the topics at once, before anything it fetches is
    processed (measured: with the timer check alone, 15 messages were dead-lettered first)."""
    import time

    from streamfs.topics import TopicMismatch

    worker = _loop_only_worker(monkeypatch)
    turns = ["idle", "stood still", "input", "input"]
    checks, processed = [], []

    def fetch() -> bool:
        if not turns:
            worker.running = False
            return False
        turn = turns.pop(0)
        if turn == "stood still":  # consume() returns late, with nothing fetched yet
            time.sleep(0.3)
        return turn == "input"

    def check_topics() -> None:
        checks.append(len(turns))
        raise TopicMismatch("changed")

    worker._fetch, worker._process = fetch, lambda: processed.append(len(turns))
    worker._settle, worker._update_lag = lambda: None, lambda: None
    worker._describe = lambda names: {}  # the timer's check: no answer to judge
    worker._check_topics = check_topics
    with pytest.raises(TopicMismatch):
        worker._loop()
    assert checks == [2] and processed == []  # checked on the late turn itself


def _sweep_only_worker(stores: dict, resume_at: dict):
    """A Worker with only what ``_sweep`` reads (no clients): ``stores`` maps (role,
    partition) to a store, ``resume_at`` (input topic, partition) to its committed offset."""
    from types import SimpleNamespace

    from streamfs.worker import app

    worker = object.__new__(app.Worker)
    worker.roles = {"feat": "features", "inst": "instances"}
    worker.partitions = {key: SimpleNamespace(store=store) for key, store in stores.items()}
    worker.resume_at = resume_at
    worker.consumer = SimpleNamespace(consumer_group_metadata=lambda: "generation 7")
    worker._begin_transaction = lambda: None
    worker._produce_changelog = lambda writes: None
    worker.changelog_end = {}
    return worker


def _saved_into(saved: list):
    """Local copies that record the writes handed to them after a commit."""
    from types import SimpleNamespace

    return SimpleNamespace(save_committed=lambda writes, ends: saved.append(writes))


def _headers() -> tuple[str, str, dict]:
    """The keys of a stream closed an hour ago and of one open, and a store holding them."""
    import time

    from streamfs.codec import packb
    from streamfs.worker.state_records import SEP, header_key

    closed, open_ = header_key("closed"), header_key("open")
    store = {closed: packb({"status": "closed", "closed_at": time.time() - 3600}),
             open_: packb({"status": "open", "closed_at": None}), f"closed{SEP}c{SEP}0": b"x"}
    return closed, open_, store


def test_a_sweep_sends_the_committed_offsets_of_the_partitions_it_changes():
    """The sweep completes its transaction on the batches' path, with the consumer's group
    metadata (what fences a stale owner) and, for each input partition whose state it
    changes, the offset last committed for it, unchanged; partitions it leaves alone send
    nothing. The store loses the key once the commit has returned."""
    closed, open_, store = _headers()
    _, _, other = _headers()
    untouched = {open_: store[open_]}
    worker = _sweep_only_worker({("features", 3): store, ("instances", 3): other,
                                 ("features", 5): untouched},
                                {("feat", 3): 42, ("inst", 3): 7, ("feat", 5): 9})
    commits, saved = [], []

    def commit(writes, next_offsets, group_metadata) -> None:
        assert closed in worker.partitions[("features", 3)].store  # not yet: it may fail
        commits.append((writes, next_offsets, group_metadata))

    worker._commit, worker.local = commit, _saved_into(saved)
    worker._sweep(60.0, 0.0)
    writes = {("features", 3): {closed: None}, ("instances", 3): {closed: None}}
    assert commits == [(writes, {("feat", 3): 42, ("inst", 3): 7}, "generation 7")]
    assert saved == [writes]
    assert closed not in store and closed not in other and open_ in store
    assert untouched == {open_: store[open_]}


def test_a_sweep_whose_commit_fails_leaves_the_store_and_its_local_copy_alone():
    """A refused or failed commit (a fenced worker: :class:`InstanceFenced`; otherwise
    :class:`Rewind`) leaves the store as the changelog is, and saves nothing locally."""
    from streamfs.settings import Settings
    from streamfs.worker import app

    for failure in (app.Rewind(), app.InstanceFenced(Settings(instance_id="w0"))):
        closed, _, store = _headers()
        before = dict(store)
        worker = _sweep_only_worker({("features", 3): store}, {("feat", 3): 42})
        saved = []

        def commit(writes, next_offsets, group_metadata, failure=failure) -> None:
            raise failure

        worker._commit, worker.local = commit, _saved_into(saved)
        with pytest.raises(type(failure)):
            worker._sweep(60.0, 0.0)
        assert store == before and saved == []


def test_a_partition_without_a_resume_offset_is_not_swept():
    """A tombstone committed without its partition's offsets would go unfenced: none is
    written (the offset is set with the partition's state, so this does not happen)."""
    _, _, store = _headers()
    before = dict(store)
    worker = _sweep_only_worker({("features", 3): store}, {})
    worker._commit = worker.local = None  # not called
    worker._sweep(60.0, 0.0)
    assert store == before


def test_a_partition_without_committed_offsets_resumes_from_where_it_is_read():
    """The sweep commits a partition's resume offset: the committed offset where there is
    one; where there is none, the start the partition is read from (its first offset), which
    is where its next owner would start too."""
    from types import SimpleNamespace

    from confluent_kafka import OFFSET_INVALID, TopicPartition

    from streamfs.settings import Settings
    from streamfs.worker import app

    worker = object.__new__(app.Worker)
    worker.settings, worker.roles = Settings(), {"feat": "features"}
    worker.partitions, worker.resume_at = {}, {}
    worker.consumer = SimpleNamespace(
        committed=lambda tps, timeout: [TopicPartition("feat", 0, 17, metadata="{}"),
                                        TopicPartition("feat", 1, OFFSET_INVALID)],
        get_watermark_offsets=lambda tp, timeout: (5, 12))
    worker.changelog = {"features": "app-features-changelog"}
    worker._topic_ids = lambda: {"feat": "A", "app-features-changelog": "C"}
    worker._restore = lambda targets: None
    worker.health = app.Health()
    _contact(worker)
    worker._restore_committed([TopicPartition("feat", 0), TopicPartition("feat", 1)])
    assert worker.resume_at == {("feat", 0): 17, ("feat", 1): 5}


def test_a_transaction_denied_while_its_records_are_flushed_stops_with_one_line():
    """An ACL revoked while the worker ran: the flush before the commit raised confluent-kafka's
    SystemError ("_delivered returned a result with an exception set", the fatal
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED as its cause) and the worker exited 70."""
    from confluent_kafka import KafkaError, KafkaException

    from streamfs.broker import AccessDenied
    from streamfs.settings import Settings
    from streamfs.worker import app

    aborted = []

    class Producer:
        def flush(self, timeout):
            try:
                raise KafkaException(KafkaError(KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                                                "Transactional Id authorization failed",
                                                fatal=True))
            except KafkaException as exc:
                raise SystemError("<function Worker._delivered> returned a result with an "
                                  "exception set") from exc

        def abort_transaction(self, timeout):
            aborted.append(timeout)

    worker = object.__new__(app.Worker)
    worker.settings, worker.producer = Settings(), Producer()
    worker.settings.app_id = "a"
    worker.roles, worker.out = {"p.features": "features"}, {"selected": "p.selected"}
    worker.producer_log = LogLines(logging.getLogger("test"))
    worker.health = app.Health()
    _contact(worker)
    with pytest.raises(AccessDenied, match="committing a transaction .*WRITE on the "
                                           "transactional ids with the prefix 'a-'"):
        worker._commit({("features", 0): {"k": b"v"}}, {("p.features", 0): 1}, None)
    assert aborted  # ended at once, not left for the broker to time out
    # a topic refused: librdkafka's log line, not the error, names it
    worker.producer_log.logger.error('ADDPARTS [rdkafka#producer-5] [thrd:main]: '
                                     'TxnCoordinator/1: Failed to add partition "p.selected" '
                                     '[1] to transaction: Broker: Topic authorization failed')
    with pytest.raises(AccessDenied, match=r"committing a transaction \(writing to topic "
                                           r"'p.selected'\)"):
        worker._txn_failed(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED))


def test_topic_ids_are_asked_again_while_the_cluster_moves():
    """The input and changelog topics' ids, read at every assignment, are asked again on the codes of a
    cluster on the move (a crashed node's handle dropped, a connection reset), as the
    committed offsets are; a missing topic is still one line naming it, at once."""
    from concurrent.futures import Future
    from types import SimpleNamespace

    from confluent_kafka import KafkaError, KafkaException

    from streamfs.settings import Settings
    from streamfs.topics import TopicMismatch
    from streamfs.worker import app

    answers: list = []

    def describe(names, timeout):
        answer, future = answers.pop(0), Future()
        if answer == "ids":
            future.set_result(SimpleNamespace(topic_id="T1"))
        else:
            future.set_exception(KafkaException(KafkaError(answer)))
        return {name: future for name in names}

    worker = object.__new__(app.Worker)
    worker.settings, worker.roles, worker.health = Settings(), {"feat": "features"}, app.Health()
    worker.changelog = {"features": "app-features-changelog"}
    worker._describe = describe
    _contact(worker)
    answers[:] = [KafkaError._TRANSPORT, KafkaError._DESTROY_BROKER, "ids"]
    assert worker._topic_ids() == {"feat": "T1", "app-features-changelog": "T1"}
    answers[:] = [KafkaError.UNKNOWN_TOPIC_OR_PART, "ids"]
    with pytest.raises(TopicMismatch, match="input topic 'feat' does not exist"):
        worker._topic_ids()
    assert answers == ["ids"]  # asked once


def test_an_assigned_partition_beyond_the_topic_s_count_is_refused_naming_the_topic():
    """Partitions added under a running worker, handed out by the group's rebalance before the
    topic check saw them: refused in one line before any restore (the worker had died
    restoring a changelog partition that does not exist, exit 70 with a traceback). The
    broker-backed run (tests/cli/test_cli_kafka.py) meets either this or the topic check,
    whichever sees the new partitions first."""
    from confluent_kafka import TopicPartition

    from streamfs.topics import TopicMismatch
    from streamfs.worker import app

    worker = object.__new__(app.Worker)
    worker.topic_partitions = {"p.features": 8, "p.instances": 8}
    within = [TopicPartition("p.features", 7), TopicPartition("p.instances", 0)]
    worker._refuse_added_partitions(within)  # nothing beyond the counts: no error
    with pytest.raises(TopicMismatch) as refused:
        worker._refuse_added_partitions(within + [TopicPartition("p.features", 9),
                                                  TopicPartition("p.features", 8)])
    said = str(refused.value)
    assert said.startswith("a topic of this worker changed while it ran: 'p.features' has more "
                           "than the catalogue's 8 partitions now. Partitions were added to "
                           "'p.features' "), said
    assert "p.instances" not in said


def _producer_worker(monkeypatch, answers):
    """A worker (no consumer, no broker) whose new producers' ``init_transactions`` give
    ``answers`` in turn: a KafkaError code raises it, ``"ok"`` returns."""
    from confluent_kafka import KafkaError, KafkaException

    from streamfs.settings import Settings
    from streamfs.worker import app

    class Producer:
        def init_transactions(self, timeout):
            answer = answers.pop(0)
            if answer != "ok":
                raise KafkaException(KafkaError(answer, "Timed out waiting for operation to "
                                                "finish, retry call to resume",
                                                retriable=answer == KafkaError._TIMED_OUT))

    monkeypatch.setattr(app, "make_client", lambda cls, conf: Producer())
    worker = object.__new__(app.Worker)
    worker.settings, worker.health, worker.running = Settings(), app.Health(), True
    worker.producer_log = LogLines(logging.getLogger("test"))
    _contact(worker)
    return worker


def test_a_new_producer_waits_for_the_broker_past_one_calls_timeout(monkeypatch, caplog):
    """A broker down longer than one ``init_transactions`` call (librdkafka: a retriable
    _TIMED_OUT) made the worker exit 70 mid-outage; it waits, and /health says why."""
    from confluent_kafka import KafkaError, KafkaException

    from streamfs.worker import app

    answers = [KafkaError._TIMED_OUT] * 3 + ["ok"]
    worker = _producer_worker(monkeypatch, answers)
    seen = []
    monkeypatch.setattr(worker.broker, "answered",
                        lambda: seen.append(worker.health.unreachable_since))
    with caplog.at_level("INFO", logger="streamfs.worker"):
        assert worker._producer() is not None and answers == []
    assert seen and seen[0] is not None  # unreachable while it waited, then answered
    assert [r.getMessage().split(" (")[0] for r in caplog.records] == [
        "the transaction coordinator does not answer", "the transaction coordinator answered: "
        "going on"]
    # anything but a timeout is not waited out
    worker = _producer_worker(monkeypatch, [KafkaError._FENCED, "ok"])
    with pytest.raises(KafkaException, match="_FENCED"):
        worker._producer()
    # a stop asked meanwhile ends the wait: the batch in progress is left uncommitted
    worker = _producer_worker(monkeypatch, [KafkaError._TIMED_OUT, "ok"])
    worker.running = False
    with pytest.raises(app.StoppedWhileUnreachable, match="read again by its partition's next"):
        worker._producer()


def test_the_idle_sweep_drops_streams_only_where_no_input_waits():
    """An open stream without input past STREAMFS_OPEN_IDLE_TIMEOUT is dropped in the sweep's
    transaction, with its dead letter, only in an input partition known to have no input
    waiting and nothing fetched past its committed offset (elsewhere the silence may be the
    worker's own: a backlog not read yet); the stores change once the commit has returned."""
    import time
    from types import SimpleNamespace

    import numpy as np

    from streamfs.codec import decode, encode, packb, unpackb
    from streamfs.producers import feature_stream_messages
    from streamfs.worker.processor import StreamProcessor
    from streamfs.worker.state_records import header_key

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(60, 8)), np.arange(60) % 2
    processors = {}
    for p in (1, 2, 3):  # 1: caught up; 2: input waits; 3: fetched past the commit
        proc = StreamProcessor("features", {})
        for m in list(feature_stream_messages(f"s{p}", X, y, "saola"))[:-1]:  # no close
            for key, value in proc.handle(f"s{p}", encode(m)).writes:
                proc.store[key] = value
        header = unpackb(proc.store[header_key(f"s{p}")])
        proc.store[header_key(f"s{p}")] = packb(dict(header, input_at=time.time() - 100))
        processors[p] = proc
    worker = _sweep_only_worker({("features", p): proc.store for p, proc in processors.items()},
                                {("feat", 1): 5, ("feat", 2): 5, ("feat", 3): 5})
    for p, proc in processors.items():
        worker.partitions[("features", p)].processor = proc
    worker.lag = SimpleNamespace(caught_up={("feat", 1), ("feat", 3)})
    worker.fetched_end = {("feat", 3): 6}
    worker.started_at = time.time()
    published, commits, saved = [], [], []

    def commit(writes, next_offsets, group_metadata) -> None:
        assert len(processors[1].store) > 1  # not yet: it may fail
        commits.append((set(writes), next_offsets))

    worker._publish = lambda plan, key: published.append(decode(plan.dead_letter))
    worker._commit, worker.local = commit, _saved_into(saved)
    worker._sweep(3600.0, 0.0)  # no idle timeout: nothing
    assert commits == [] and published == []
    worker._sweep(3600.0, 60.0)
    assert commits == [({("features", 1)}, {("feat", 1): 5})]
    assert [(d["stream"], d["run"]) for d in published] == [("s1", 1)]
    assert list(processors[1].store) == [header_key("s1")]
    assert unpackb(processors[1].store[header_key("s1")])["status"] == "closed"
    assert all(len(processors[p].store) > 1 for p in (2, 3))
